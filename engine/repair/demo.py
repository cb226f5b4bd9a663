"""``run_repair_demo(echo)``: delete, correct and migrate events on the bundled store.

Each event runs on a fresh in-memory copy of ``engine/data/repair/store.json`` under the bundled
default policy: the barrier, the candidates and min-cut selection, execution with validation,
and what was republished; then the paper's metrics for every selector on the same candidates.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ..policy.loader import load_policy
from ..store.opening import open_store
from .closure import SELECTORS
from .events import load_event
from .execute import run_event
from .metrics import plan_metrics
from .plan import TransitionPlan

Echo = Callable[[str], None]


def _data() -> Path:
    return Path(__file__).resolve().parent.parent / "data"


def _describe(plan: TransitionPlan, echo: Echo) -> None:
    from ..cli.repair_cmds import describe_plan

    describe_plan(plan, lambda line: echo("  " + line))


def run_repair_demo(echo: Echo = print) -> None:
    """Show the three event types end to end, then a selector comparison (Leak, Rep, Cost, ΔTask)."""
    data = _data() / "repair"
    policy = load_policy(_data() / "policies" / "default.yaml")
    tasks = json.loads((data / "tasks.json").read_text())
    for name in ("delete", "correct", "migrate"):
        event_file = data / f"event-{name}.json"
        store = open_store(str(data / "store.json"))
        before = len(store.serve())
        event = load_event(str(event_file), store)
        echo(f"\n- memsteward repair --policy demo-data/policies/default.yaml --store demo-data/repair/store.json "
             f"--event demo-data/repair/{event_file.name}")
        plan = run_event(store, policy, event, "mincut", "ortools")
        _describe(plan, echo)
        echo(f"  serve: {before} → {len(store.serve())} servable artifacts; audit log has "
             f"{len(store.audit_log())} records")
        echo("  selector     Leak%  Stale%   Rep%   Cost   ΔTask   objective")
        for selector in SELECTORS:
            fresh = open_store(str(data / "store.json"))
            p = run_event(fresh, policy, event, selector, "ortools")
            served = {a.id: a.version for a in fresh.serve()}
            m = plan_metrics(p, served, tasks)
            echo(f"  {selector:<11} {m['leak']:6.1f} {m['stale_use']:7.1f} {m['rep']:6.1f} "
                 f"{m['cost']:6.2f} {m['delta_task']:7.2f}   {p.selection.objective:7.2f}")
