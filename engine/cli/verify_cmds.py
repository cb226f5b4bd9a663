"""`memgov verify`: prove the guarantees G1–G5 with Z3."""

from __future__ import annotations

import sys

import click

from ..errors import EXIT_FINDINGS
from . import main
from .common import emit_json, handle_errors


@main.command()
@click.option("--guarantee", "-g", "ids", multiple=True, metavar="ID",
              type=click.Choice(["G1", "G2", "G3", "G4", "G5"], case_sensitive=False),
              help="Prove only this guarantee (repeatable). Default: all.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@handle_errors
def verify(ids: tuple[str, ...], as_json: bool) -> None:
    """Prove the guarantees of the spec catalog with Z3 (bounded, sizes reported).

    Each proof asserts the negation of its claim and demands `unsat`; a counterexample or a
    timeout is a failure. Exit 0 when every proof holds, 1 otherwise.
    """
    from specs import CATALOG
    from specs.verify import verify as run_proofs

    by_id = {g.id: g for g in CATALOG}
    results = run_proofs([i.upper() for i in ids] or None)
    if as_json:
        emit_json([{**r.as_dict(), "name": by_id[r.guarantee].name, "statement": by_id[r.guarantee].notation,
                    "source": by_id[r.guarantee].source} for r in results])
    else:
        for r in results:
            g = by_id[r.guarantee]
            mark = "✓ proved " if r.proved else "✗ " + r.status
            click.echo(f"{r.guarantee} {g.name:<26} {mark:<10} {r.seconds:6.2f}s  {g.notation}")
            click.echo(f"   bound: {r.bound}  ({r.obligations} obligations; source: {g.source})")
            if r.counterexample:
                click.echo(f"   counterexample: {r.counterexample}")
            if r.failure:
                click.echo(f"   failure: {r.failure}")
        failed = [r.guarantee for r in results if not r.proved]
        click.echo(f"{len(results) - len(failed)}/{len(results)} guarantees proved"
                   + (f"; failed: {', '.join(failed)}" if failed else ""))
    if any(not r.proved for r in results):
        sys.exit(EXIT_FINDINGS)
