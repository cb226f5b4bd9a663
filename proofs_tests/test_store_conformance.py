"""One conformance suite for every store backend (STYLE.md §4): the typed interface
(``memsteward.store.api``) is what the engine calls, and each backend behaves as the
reference — an in-memory SQLite store given the same calls.

* every backend's store is a :class:`RepairLog` and a :class:`Reader`, with the Protocol's signatures;
* ``execute.py`` calls nothing on a store outside :class:`RepairLog` (AST scan of the module);
* the demo events run through the engine end in the same rows as on the reference, and
  ``steps()`` returns :class:`StepRecord` values matching the executed plan;
* ``parent_edges`` returns every influence edge into the ids, ordered by (v, u) — the order
  ``read_scope`` groups parents by without sorting — on every backend and the in-memory Snapshot.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import get_args

import pytest

from memsteward.policy.loader import load_policy
from memsteward.repair import execute as execute_mod
from memsteward.repair.artifacts import Artifact, Edge, Snapshot
from memsteward.repair.events import load_event
from memsteward.repair.execute import run_event
from memsteward.store import Store
from memsteward.store.api import READER, REPAIR_LOG, Reader, RepairLog, StepRecord, StepStatus

STATUSES = frozenset(get_args(StepStatus))

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"


def _params(fn) -> list[str]:
    return [p for p in inspect.signature(fn).parameters if p != "self"]


def test_every_backend_implements_the_protocols_with_their_signatures(store_factory):
    store = store_factory()
    assert isinstance(store, RepairLog) and isinstance(store, Reader)
    for proto, names in ((RepairLog, REPAIR_LOG), (Reader, READER)):
        for name in sorted(names):
            if callable(getattr(proto, name, None)):
                assert _params(getattr(type(store), name)) == _params(getattr(proto, name)), name


def test_execute_calls_only_the_repair_log():
    tree = ast.parse(Path(execute_mod.__file__).read_text())
    used = {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "store"}
    assert used and used <= REPAIR_LOG, sorted(used - REPAIR_LOG)


@pytest.mark.parametrize("event", ["delete", "correct", "migrate"])
def test_demo_events_end_as_on_the_reference(store_factory, event):
    policy = load_policy(str(ROOT / "policies" / "default.yaml"))
    seed = Store.open(str(DATA / "store.json"))
    ends = []
    for store in (store_factory(), Store()):  # the backend under test, then the reference
        store.import_snapshot(seed.snapshot())
        plan = run_event(store, policy, load_event(str(DATA / f"event-{event}.json"), store.snapshot()))
        steps = store.steps(1)
        assert all(isinstance(s, StepRecord) for s in steps.values())
        assert set(steps) == set(plan.order) and all(s.status in STATUSES for s in steps.values())
        failed = {s.id for s in plan.executed if s.status in ("failed", "blocked")}
        assert {i for i, s in steps.items() if s.status in ("failed", "blocked")} == failed
        state = store.dump_state()
        state["events"] = [row[:-1] for row in state["events"]]  # all but `created` (a time)
        ends.append(state)
    assert ends[0] == ends[1]


def test_parent_edges_are_ordered_by_child_then_parent(store_factory):
    # ids and edges inserted in an order unlike the sorted one; non-ASCII ids order by code point
    ids = ["z", "b", "é", "a", "m", "ab", "B"]
    edges = [Edge(u, v) for u, v in [("z", "a"), ("b", "a"), ("é", "a"), ("B", "a"), ("m", "ab"), ("a", "ab"),
                                      ("z", "m"), ("b", "m"), ("é", "é")]] + [Edge("b", "ab", "reference")]
    snap = Snapshot({i: Artifact(i, "record") for i in ids}, tuple(edges))
    store = store_factory()
    store.import_snapshot(snap)
    asked = ["m", "ab", "é", "a", "zz"]  # unsorted, one unknown
    expected = sorted((e.src, e.dst) for e in edges if e.type == "influence" and e.dst in asked)
    expected.sort(key=lambda e: (e[1], e[0]))
    for source in (store, snap):
        assert [tuple(e) for e in source.parent_edges(asked)] == expected
