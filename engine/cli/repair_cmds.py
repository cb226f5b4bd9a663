"""`memsteward repair` and `memsteward recover` (MemoRepair Algorithm 1)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import click

from ..api import apply_event, load_policy, open_store
from ..errors import EventHeld
from ..redaction import shown_location
from ..repair.closure import BACKENDS, DEFAULT_BACKEND, SELECTORS
from ..repair.events import load_event
from ..repair.execute import policy_of_document, recover
from ..repair.executors import parse_executor
from ..repair.operators import operators_for
from ..repair.plan import TransitionPlan
from ..store.opening import open_store as open_url
from .common import (
    FiniteFloat,
    deadline_option,
    emit_json,
    executor_option,
    handle_errors,
    policy_with_deadline,
    progress_option,
    step_progress,
    terminal,
)

LIST_LIMIT = 20  # candidates and steps listed one per line; the rest are counted (--json lists them all)


def describe_plan(plan: TransitionPlan, echo: Callable[[str], None] = click.echo) -> None:
    """Human-readable summary of a transition plan (ids and reasons escaped for the terminal)."""
    raw_echo = echo
    echo = lambda line: raw_echo(terminal(line))  # noqa: E731
    ev = plan.event
    echo(f"event    {ev.type} roots={_ids(ev.roots)}")
    echo(f"cascade  C(F) = {len(plan.cascade)} artifacts, D(F) = {len(plan.descendants)} descendants")
    echo(f"barrier  withdrew {len(plan.barrier)}: {_ids(plan.barrier)}")
    removed = sorted(i for i, m in plan.modes.items() if m == "remove")
    echo(f"modes    {len(plan.candidates)} candidates, {len(removed)} removed: {_ids(removed)}")
    for c in plan.candidates[:LIST_LIMIT]:
        flag = "" if c.executable else f"  [non-executable: {c.reason}]"
        pre = f" needs {','.join(c.prerequisites)}" if c.prerequisites else ""
        echo(f"  q {c.id:<18} {c.mode:<9} w={c.value:g} c={c.cost:g}{pre}{flag}")
    _more(echo, len(plan.candidates), "candidates")
    echo(f"select   {plan.selection.method} λ={plan.tradeoff:g}: {_ids(sorted(plan.selection.selected))} "
         f"(objective {plan.selection.objective:.4g})")
    for s in plan.executed[:LIST_LIMIT]:
        why = "; ".join(f"{r['oracle']}: {r.get('detail', '')}" for r in s.reports if not r.get("passed", True))
        echo(f"  run {s.id:<16} {s.status}{'  (' + (why or s.error) + ')' if s.status != 'republished' else ''}")
    _more(echo, len(plan.executed), "steps", Counter(s.status for s in plan.executed))
    actions = sorted(plan.roots.items())
    roots = (", ".join(f"{r} {a}" for r, a in actions) if len(actions) <= LIST_LIMIT else
             f"{len(actions)} (" + ", ".join(f"{a} {k}" for a, k in sorted(Counter(a for _, a in actions).items())) + ")")
    echo(f"publish  republished {_ids(plan.republished)}; roots: {roots}")
    echo(f"         still withdrawn: {_ids(plan.withdrawn)}")


def _more(echo: Callable[[str], None], n: int, what: str, counts: Counter | None = None) -> None:
    """The line after a list cut at LIST_LIMIT: how many are not shown (and, for steps, the tally)."""
    if n > LIST_LIMIT:
        tally = "" if counts is None else " — " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        echo(f"  … {n - LIST_LIMIT} more {what} of {n}{tally} (--json lists them all)")


def _ids(ids) -> str:
    ids = list(ids)
    if not ids:
        return "-"
    shown = ", ".join(ids[:12])
    return shown + (f" … (+{len(ids) - 12})" if len(ids) > 12 else "")


@click.command()
@click.option("--policy", "policy_path", required=True, type=click.Path(), help="Policy YAML.")
@click.option("--store", "store_path", required=True, help="SQLite store, postgresql://…[?schema=NAME], or a .json export (in memory).")
@click.option("--event", "event_path", required=True, type=click.Path(), help="Event JSON file.")
@click.option("--dry-run", is_flag=True, help="Compute and simulate the plan on a copy; the store is untouched.")
@click.option("--json", "as_json", is_flag=True, help="Print the TransitionPlan as JSON.")
@click.option("--selector", type=click.Choice(SELECTORS), default="mincut", show_default=True)
@click.option("--backend", type=click.Choice(BACKENDS), default=DEFAULT_BACKEND, show_default=True,
              help="Min-cut backend (networkx is the reference).")
@click.option("--tradeoff", type=FiniteFloat(0.0, 1e12), default=None, help="Override the policy's λ.")
@click.option("--budget", type=FiniteFloat(0.0, 1e15), default=None, help="Override the policy's hard budget β.")
@deadline_option
@executor_option
@progress_option
@handle_errors
def repair(policy_path: str, store_path: str, event_path: str, dry_run: bool, as_json: bool,
           selector: str, backend: str, tradeoff: float | None, budget: float | None,
           deadline: float | None, executor: str, progress: bool | None) -> None:
    """Apply a delete / correct / migrate EVENT: barrier, repair, validate, republish.

    Exit 0 when the event was applied (failed validations — and operators that failed, e.g. a
    model endpoint that is down or answers garbage — are reported in the plan and keep their
    successors withdrawn); 2 on bad input (an unreachable Ray address included), with the store
    unchanged; 3 when a worker died mid-event (the event is unfinished: run `memsteward recover`).
    """
    runner = parse_executor(executor)
    policy = policy_with_deadline(load_policy(policy_path), deadline)
    if tradeoff is not None or budget is not None:
        sel = policy.selection.model_copy(update={
            k: v for k, v in (("tradeoff", tradeoff), ("budget", budget)) if v is not None})
        policy = policy.model_copy(update={"selection": sel})
    store = open_store(store_path, create=False)
    event = load_event(event_path, store)
    with step_progress(progress, "repair") as report:
        plan = apply_event(store, policy, event, dry_run=dry_run, selector=selector, backend=backend,
                           executor=runner, progress=report)
    if as_json:
        doc = plan.to_json()
        doc["dry_run"] = dry_run
        emit_json(doc)
    else:
        describe_plan(plan)
        if dry_run:
            click.echo("dry run: the store was not changed")
        elif store.path == ":memory:":
            click.echo(f"note: {shown_location(store_path)} is a JSON export read into memory; nothing was written "
                       "(import it with `memsteward store import` to keep changes)")


@click.command("recover")
@click.option("--store", "store_path", required=True, help="SQLite store or postgresql://…[?schema=NAME].")
@click.option("--json", "as_json", is_flag=True)
@deadline_option
@executor_option
@progress_option
@handle_errors
def recover_cmd(store_path: str, as_json: bool, deadline: float | None, executor: str,
                progress: bool | None) -> None:
    """Roll forward an event interrupted by a crash (no-op when none is pending).

    One writer per event: the process that runs an event holds a lease on it in the store. If
    another live process holds it, recover does nothing, says which process (host, pid, since
    when) and exits 0; a lease left by a killed process is taken over. The event's recorded
    policy applies; `--deadline` bounds each of its model calls; `--executor` runs the rest of its
    candidates (exit 2 for a malformed or unreachable executor, nothing changed). It also destroys
    the pooled data keys that writers which have ended left unused (docs/erasure.md, "Pooled keys").
    """
    runner = parse_executor(executor)
    store = open_url(store_path)
    operators = None
    pending = store.unfinished_event() if deadline is not None else None
    if pending is not None:
        recorded = policy_with_deadline(policy_of_document(pending[2]), deadline)
        operators = operators_for(recorded)
    try:
        with step_progress(progress, "recover") as report:
            plan = recover(store, operators, executor=runner, progress=report)
    except EventHeld as held:  # another live process is completing the event: do nothing, say who
        if as_json:
            emit_json({"recovered": False, "plan": None, "held_by": held.holder})
        else:
            click.echo(terminal(f"not recovering: {held.message}"))
        return
    if as_json:
        emit_json({"recovered": plan is not None, "plan": plan.to_json() if plan else None})
    elif plan is None:
        click.echo("nothing to recover")
    else:
        click.echo("recovered an interrupted event:")
        describe_plan(plan)
