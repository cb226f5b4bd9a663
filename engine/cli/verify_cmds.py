"""`memsteward verify`: prove the guarantees G1–G6 with Z3."""

from __future__ import annotations

import sys

import click

from ..errors import EXIT_FINDINGS, InputError
from ..jsonio import read_json
from . import main
from .common import emit_json, handle_errors


@main.command()
@click.option("--guarantee", "-g", "ids", multiple=True, metavar="ID",
              type=click.Choice(["G1", "G2", "G3", "G4", "G5", "G6"], case_sensitive=False),
              help="Prove only this guarantee (repeatable). Default: all.")
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False), default=None,
              help="Check a concrete TransitionPlan or ClearancePlan JSON instead of proving the catalog.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@handle_errors
def verify(ids: tuple[str, ...], plan_path: str | None, as_json: bool) -> None:
    """Prove the guarantees of the spec catalog with Z3 (bounded, sizes reported).

    Each proof asserts the negation of its claim and demands `unsat`; a counterexample or a
    timeout is a failure. With --plan, check one plan's certificate instead (closure,
    executability, optimality, barrier, publication, non-degradation, recovery) and name the
    first violated clause with its witness. Exit 0 when everything holds, 1 otherwise,
    2 when the plan file cannot be read.
    """
    if plan_path is not None:
        _verify_plan(plan_path, as_json)
        return
    from memsteward.specs import CATALOG
    from memsteward.specs.verify import verify as run_proofs

    by_id = {g.id: g for g in CATALOG}
    results = run_proofs([i.upper() for i in ids] or None)
    if as_json:
        emit_json([{**r.as_dict(), "name": by_id[r.guarantee].name, "statement": by_id[r.guarantee].notation,
                    "source": by_id[r.guarantee].source, "properties": list(by_id[r.guarantee].properties)} for r in results])
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


def _verify_plan(path: str, as_json: bool) -> None:
    from memsteward.specs.certificates import plan_kind

    from ..api import verify_plan

    doc = read_json(path)
    try:
        kind = plan_kind(doc)
        clauses = verify_plan(doc)
    except InputError as exc:
        raise InputError(exc.message, file=path) from None
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise InputError(f"not a valid plan: {exc}", file=path) from None
    failed = [c for c in clauses if not c.ok]
    if as_json:
        emit_json({"plan": path, "kind": kind, "ok": not failed,
                   "first_violation": failed[0].as_dict() if failed else None,
                   "clauses": [c.as_dict() for c in clauses]})
    else:
        click.echo(f"{path}: {kind} plan, {len(clauses)} clauses checked")
        for c in clauses:
            mark = "ok  " if c.ok else "FAIL"
            click.echo(f"  {mark} {c.guarantee} {c.name}" + (f"  ({c.note})" if c.note else ""))
        if failed:
            click.echo(f"first violated clause: {failed[0].guarantee} {failed[0].name}; witness: {failed[0].witness}")
        else:
            click.echo("all clauses hold")
    if failed:
        sys.exit(EXIT_FINDINGS)
