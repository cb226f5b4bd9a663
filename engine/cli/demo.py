"""`memgov demo`: the main job on bundled data (grows as the engine grows)."""

from __future__ import annotations

from importlib import resources

import click

from . import main
from .common import handle_errors


def bundled_policy_path(name: str = "default.yaml") -> str:
    """Path of a bundled policy (shipped inside the package as engine/data/policies)."""
    return str(resources.files("engine") / "data" / "policies" / name)


@main.command()
@handle_errors
def demo() -> None:
    """Run memgov end to end on the bundled policy and data."""
    click.echo("memgov demo")
