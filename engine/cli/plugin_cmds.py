"""`memsteward plugins`: the repair operators and validation oracles installed as plugins."""

from __future__ import annotations

import click

from ..errors import printable
from ..policy.plugins import GROUPS, installed
from .common import emit_json, handle_errors


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the plugins as a JSON list of objects.")
@handle_errors
def plugins(as_json: bool) -> None:
    """List the operators and oracles installed as plugins (entry-point groups memsteward.operators
    and memsteward.oracles), with the distribution and version that provides each.

    A policy names an operator plugin under kinds.<kind>.operators.<mode> and an oracle plugin as
    {oracle: plugin, plugin: <name>}; `memsteward check` loads each one it names. Listing does not
    import any plugin's code.
    """
    found = [p for group in GROUPS for p in sorted(installed(group).values(), key=lambda p: p.name)]
    if as_json:
        emit_json([p.as_dict() for p in found])
        return
    if not found:
        click.echo(f"no plugins installed (entry-point groups: {', '.join(GROUPS.values())})")
        return
    for p in found:
        click.echo(printable(f"{p.group:8}  {p.name}  {p.distribution} {p.version}  ({p.target})"))
