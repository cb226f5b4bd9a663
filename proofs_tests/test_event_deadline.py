"""An event's total wall time is bounded by its policy (issue 25).

Each model call was bounded (``deadline`` ≤ 600 s) but an event of many candidates was not: a trickling
endpoint held the event for calls × 600 s. ``repair.event_deadline`` (seconds, default 3600, at most a
day) bounds it: a candidate not started when it has passed fails with the oracle ``deadline`` and stays
withdrawn; the event publishes (a delete's erasure included) as after any failure. No timing assert:
a deadline that has passed before the first candidate makes every candidate fail, whatever the machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from memsteward.policy.loader import load_policy_source
from memsteward.policy.model import MAX_EVENT_DEADLINE_S, RepairSpec
from memsteward.repair.artifacts import parse_store_document
from memsteward.repair.events import parse_event
from memsteward.repair.execute import run_event
from memsteward.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"


def _policy(tmp_path: Path, deadline: str):
    text = (ROOT / "policies" / "default.yaml").read_text() + f"\nrepair:\n  event_deadline: {deadline}\n"
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return load_policy_source(str(path)).policy


def _store() -> Store:
    import json

    s = Store()
    s.import_snapshot(parse_store_document(json.loads((DATA / "store.json").read_text()), "store.json"))
    return s


def test_a_passed_event_deadline_fails_the_candidates_not_started(tmp_path: Path):
    store = _store()
    plan = run_event(store, _policy(tmp_path, "1.0e-9"), parse_event({"type": "delete", "roots": ["p1"]},
                                                                     store.snapshot()))
    assert plan.executed, "the delete has candidates to repair"
    assert all(s.status == "failed" and s.reports[0]["oracle"] == "deadline" for s in plan.executed)
    states = store.states()
    assert states["p1"][0] == "erased"  # the erasure is not held back by the deadline
    assert all(states[s.id][0] == "withdrawn" for s in plan.executed)
    assert store.unfinished_event() is None


def test_the_default_deadline_lets_the_event_run(tmp_path: Path):
    store = _store()
    plan = run_event(store, _policy(tmp_path, "3600"), parse_event({"type": "delete", "roots": ["p1"]},
                                                                   store.snapshot()))
    assert any(s.status == "republished" for s in plan.executed)


@pytest.mark.parametrize("bad", [0, -1, MAX_EVENT_DEADLINE_S + 1, float("inf")])
def test_the_event_deadline_is_bounded(bad: float):
    with pytest.raises(ValidationError):
        RepairSpec(event_deadline=bad)
    assert RepairSpec().event_deadline == 3600
