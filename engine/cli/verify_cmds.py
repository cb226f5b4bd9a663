"""`memsteward verify`: prove the guarantees G1–G6 with Z3."""

from __future__ import annotations

import sys

import click

from ..errors import EXIT_FINDINGS, InputError
from ..jsonio import read_json
from .common import emit_json, handle_errors


@click.command()
@click.option("--guarantee", "-g", "ids", multiple=True, metavar="ID",
              type=click.Choice(["G1", "G2", "G3", "G4", "G5", "G6"], case_sensitive=False),
              help="Prove only this guarantee (repeatable). Default: all.")
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False), default=None,
              help="Check a concrete TransitionPlan or ClearancePlan JSON instead of proving the catalog.")
@click.option("--store", "store_path", type=click.Path(dir_okay=False), default=None,
              help="With --plan (transition): also check the plan against this store (cascade, roots, λ, β).")
@click.option("--case", "case_path", type=click.Path(dir_okay=False), default=None,
              help="With --plan (clearance): also recompute the plan from this case and compare.")
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False), default=None,
              help="With --store/--case: the policy (default: the one the store recorded; the bundled default for --case).")
@click.option("--model-only", is_flag=True,
              help="Prove the Z3 models only; skip the code-level checks of the engine's functions.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@handle_errors
def verify(ids: tuple[str, ...], plan_path: str | None, store_path: str | None, case_path: str | None,
           policy_path: str | None, model_only: bool, as_json: bool) -> None:
    """Prove the guarantees of the spec catalog with Z3 (bounded, sizes reported).

    Each proof asserts the negation of its claim and demands `unsat`; a counterexample or a
    timeout is a failure. Then, per guarantee, the engine's own functions are run on every input
    of a bounded domain and must agree with the model (code-level check, bound shown), and a
    broken variant of that code must be refuted with a counterexample (shown), so every run
    shows the check can fail. A guarantee is proved when its model proof and its code check
    hold. With --plan, check one plan's certificate instead (closure,
    executability, optimality, barrier, publication, non-degradation, recovery) and name the
    first violated clause with its witness. With --store (a TransitionPlan) or --case (a
    ClearancePlan) the plan is also checked against its source: the cascade recomputed from the
    store's edges, the roots, λ and β from the recorded policy; or the clearance recomputed from
    the case with the policy's settings — so a self-consistent forgery is refused. Exit 0 when
    everything holds, 1 otherwise, 2 when a file cannot be read.
    """
    if plan_path is not None:
        _verify_plan(plan_path, as_json, store_path, case_path, policy_path)
        return
    if store_path or case_path:
        raise click.UsageError("--store and --case go with --plan")
    from memsteward.specs import CATALOG
    from memsteward.specs.verify import guarantee_of, verify_code
    from memsteward.specs.verify import verify as run_proofs

    by_id = {g.id: g for g in CATALOG}
    wanted = [i.upper() for i in ids] or None
    results = run_proofs(wanted)
    code = {} if model_only else verify_code(wanted)
    checks = {r.guarantee: [c for key, c in code.items() if guarantee_of(key) == r.guarantee] for r in results}
    failed = [r.guarantee for r in results if not r.proved or not all(c.proved for c in checks[r.guarantee])]
    if as_json:
        emit_json([{**r.as_dict(), "name": by_id[r.guarantee].name, "statement": by_id[r.guarantee].notation,
                    "source": by_id[r.guarantee].source, "properties": list(by_id[r.guarantee].properties),
                    "code": checks[r.guarantee][0].as_dict() if checks[r.guarantee] else None,
                    "code_checks": [c.as_dict() for c in checks[r.guarantee]]} for r in results])
    else:
        for r in results:
            g = by_id[r.guarantee]
            mark = "✓ proved " if r.guarantee not in failed else "✗ " + (r.status if not r.proved else "code")
            click.echo(f"{r.guarantee} {g.name:<26} {mark:<10} {r.seconds:6.2f}s  {g.notation}")
            click.echo(f"   model: {'proved' if r.proved else r.status}; bound: {r.bound}  "
                       f"({r.obligations} obligations; source: {g.source})")
            if r.counterexample:
                click.echo(f"   counterexample: {r.counterexample}")
            if r.failure:
                click.echo(f"   failure: {r.failure}")
            for c in checks[r.guarantee]:
                _echo_code(c)
            if not checks[r.guarantee] and not model_only:
                click.echo("   code: no code-level check for this guarantee")
        click.echo(f"{len(results) - len(failed)}/{len(results)} guarantees proved"
                   + (" (models only)" if model_only else " (models and code)")
                   + (f"; failed: {', '.join(failed)}" if failed else ""))
    if failed:
        sys.exit(EXIT_FINDINGS)


def _echo_code(c) -> None:
    click.echo(f"   code:  {'proved' if c.counterexample is None else 'refuted'} for {c.code} on {c.inputs} inputs "
               f"({c.seconds:.2f}s); bound: {c.bound}")
    if c.counterexample:
        click.echo(f"   code counterexample: {c.counterexample}")
    s = c.sensitivity
    if s:
        state = "refuted" if s["refuted"] else "NOT refuted (the check cannot fail: a failure)"
        click.echo(f"   broken variant ({s['variant']}): {state}" + (f"; counterexample: {s['counterexample']}"
                                                                     if s["counterexample"] else ""))


def _source_clauses(doc: dict, kind: str, store_path: str | None, case_path: str | None,
                    policy_path: str | None) -> list:
    from memsteward.specs.sources import check_clearance_source, check_transition_source

    from ..api import clear_context
    from ..policy.loader import load_policy
    from ..store.opening import open_store

    if store_path and kind != "transition":
        raise InputError("--store checks a TransitionPlan; this is a ClearancePlan (use --case)", file=store_path)
    if case_path and kind != "clearance":
        raise InputError("--case checks a ClearancePlan; this is a TransitionPlan (use --store)", file=case_path)
    policy = load_policy(policy_path) if policy_path else None
    if store_path:
        store = open_store(store_path)
        try:
            pol_doc = policy.model_dump(mode="json", by_alias=True) if policy else None
            return check_transition_source(doc, store, pol_doc)
        finally:
            store.close()
    if case_path:
        method = doc.get("method", "meclear")
        return check_clearance_source(doc, clear_context(case_path, policy, method).to_json())
    return []


def _verify_plan(path: str, as_json: bool, store_path: str | None = None, case_path: str | None = None,
                 policy_path: str | None = None) -> None:
    from memsteward.specs.certificates import plan_kind

    from ..api import verify_plan

    doc = read_json(path)
    try:
        kind = plan_kind(doc)
        clauses = verify_plan(doc) + _source_clauses(doc, kind, store_path, case_path, policy_path)
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
