"""The MemoRepair benchmark traces (bench/repair_traces.py): valid, seeded, deterministic."""

from __future__ import annotations

import pytest

from bench.repair_traces import SHAPES, _unit, barrier_snapshot, drop_edges, flaky_operators, scale_snapshot
from memsteward.repair.artifacts import parse_store_document
from memsteward.repair.events import event_from_dict, parse_event
from memsteward.repair.graph import cascade, influence_graph


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_traces_are_valid_and_deterministic(shape):
    a, b, c = SHAPES[shape](seed=3, n_events=4), SHAPES[shape](seed=3, n_events=4), SHAPES[shape](seed=4, n_events=4)
    assert a.store == b.store and a.events == b.events and a.tasks == b.tasks
    assert a.store != c.store
    snap = parse_store_document(a.store, "<trace>")  # ids unique, edges between existing artifacts
    g = influence_graph(snap.artifacts.keys(), snap.influence_edges())
    for etype in ("delete", "correct", "migrate"):
        assert len(a.events[etype]) == 4
        for ev in a.events[etype]:
            event = parse_event(ev, snap)
            assert event.type == etype
            assert len(cascade(g, event.roots)) >= len(event.roots)
    assert all(set(t) <= set(snap.artifacts) for t in a.tasks)


def test_failure_injection_and_edge_drop_are_seeded():
    assert _unit("s", "op", "x") == _unit("s", "op", "x") != _unit("t", "op", "x")
    ops = flaky_operators(1.0, "salt")
    assert ops.find("recompute", "cache", None) is not None
    doc = SHAPES["tool-agent"](seed=0, n_events=1).store
    assert drop_edges(doc, 0.0, "s")["edges"] == doc["edges"]
    dropped = drop_edges(doc, 0.5, "s")["edges"]
    assert dropped == drop_edges(doc, 0.5, "s")["edges"] and len(dropped) < len(doc["edges"])


def test_scale_and_barrier_instances():
    snap, ev = scale_snapshot(1000, seed=1)
    assert 900 <= len(snap.artifacts) <= 1100
    g = influence_graph(snap.artifacts.keys(), snap.influence_edges())
    assert len(cascade(g, event_from_dict(ev).roots)) > 1
    snap, ev = barrier_snapshot(100)
    g = influence_graph(snap.artifacts.keys(), snap.influence_edges())
    assert len(cascade(g, ev["roots"])) == 101


def test_scale_batches_stream_the_same_store():
    """The streamed batches (bench repair_scale at 10^7) make up exactly the scale snapshot, and every
    edge's source was emitted no later than the batch holding the edge."""
    from bench.repair_traces import scale_batches

    snap, _ = scale_snapshot(1000, seed=1)
    seen: set[str] = set()
    arts, edges = {}, []
    for batch in scale_batches(1000, seed=1, batch=170):
        assert len(batch.artifacts) <= 170
        seen |= set(batch.artifacts)
        assert all(e.src in seen and e.dst in batch.artifacts for e in batch.edges)
        arts.update(batch.artifacts)
        edges += batch.edges
    assert arts == dict(snap.artifacts) and sorted(edges, key=repr) == sorted(snap.edges, key=repr)
