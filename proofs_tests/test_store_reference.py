"""Every store backend against an independent reference: the dict-backed ``MemoryStore`` (issue 26).

The SQL store and ``MemoryStore`` are written apart (SQL statements against dict updates); the
suite runs the same operation sequences on the memory reference and on each SQL backend (SQLite,
and PostgreSQL with ``MEMSTEWARD_PG_DSN``) and compares every row: artifacts, versions, edges,
events, plan steps, and the audit rows' sequence, event, action, artifact and detail. A backend
that differs in one row fails (``test_a_broken_backend_is_caught`` shows it once, with a SQL store
that forgets to withdraw a failed successor).

Capabilities, in the manner of LangGraph's checkpoint-conformance: the required protocols are
checked on every store; the optional ones (``key-destruction``, ``lineage-index``, ``copy``)
only where a store declares them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsteward.errors import InputError, WriteRefused
from memsteward.policy.loader import load_policy
from memsteward.repair.attestation import check_records
from memsteward.repair.auditchain import first_broken
from memsteward.repair.events import load_event, parse_event
from memsteward.repair.execute import dry_run, recover, run_event
from memsteward.store import Store
from memsteward.store.api import ADMIN, READER, REPAIR_LOG, WRITE_PATH, capabilities
from memsteward.store.memory_log import MemoryStore

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
POLICY = load_policy(str(ROOT / "policies" / "default.yaml"))


def rows(store: Any) -> dict[str, Any]:
    """What the reference and a backend must agree on: every table's rows (the event's creation
    time aside) and each audit row but its time and hash (the hash covers the time)."""
    state = store.dump_state()
    state["events"] = [row[:-1] for row in state["events"]]
    state["audit"] = [(r[0], r[2], r[3], r[4], _detail(r[3], json.loads(r[5]))) for r in store.audit_rows()]
    return state


def _detail(action: str, detail: dict[str, Any]) -> dict[str, Any]:
    """A ``physical-erasure`` row describes the backend's own files (an optional capability): only
    its verdict is compared. A content digest is compared as present or not: a sealed SQL store's are
    keyed under its own index key (crypto-shredding, docs/erasure.md), the reference's plain SHA-256;
    so are the pins of stored event and plan texts (``event_sha256``, ``plan_sha256``), which hold a
    replacement's or interface's keyed digest (the texts themselves are compared in ``dump_state``, their
    reference digests blanked, and each store's pins are checked against its texts by ``check_records``)."""
    return {"complete": detail.get("complete")} if action == "physical-erasure" else _digests_masked(detail)


_MASKED = ("sha256", "manifest_sha256", "event_sha256", "plan_sha256")


def _digests_masked(value: Any) -> Any:
    """``value`` with every ``sha256``/``manifest_sha256`` string replaced by a marker."""
    if isinstance(value, dict):
        return {k: "<digest>" if k in _MASKED and isinstance(v, str) else _digests_masked(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_digests_masked(v) for v in value]
    return value


def differences(ref: dict[str, Any], got: dict[str, Any]) -> list[str]:
    out = []
    for table in ref:
        a, b = ref[table], got[table]
        if a != b:
            extra = [r for r in b if r not in a][:2]
            missing = [r for r in a if r not in b][:2]
            out.append(f"{table}: backend has {extra}, reference has {missing}")
    return out


def _seeded(store: Any) -> Any:
    store.import_snapshot(Store.open(str(DATA / "store.json")).snapshot())
    return store


def _writes(store: Any) -> None:
    """A few writes, a batch, and the refusals that leave an audit row (fenced, tombstoned)."""
    store.record({"id": "w1", "kind": "record", "content": "Alice moved to Lyon"})
    store.record({"id": "w2", "kind": "summary", "content": "Alice, Lyon"}, inputs=["w1"])
    store.record({"id": "w1", "kind": "record", "content": "Alice moved to Lyon in May"})
    store.record_many([{"id": "b1", "kind": "record", "content": "one"},
                       {"id": "b2", "kind": "summary", "content": "one and two", "inputs": ["b1"]}])


def _scenario(store: Any, event: str) -> None:
    _seeded(store)
    _writes(store)
    run_event(store, POLICY, load_event(str(DATA / f"event-{event}.json"), store.snapshot()), "mincut", "ortools")
    run_event(store, POLICY, parse_event({"type": "delete", "roots": ["w1"]}, store.snapshot()), "mincut", "ortools")
    for write in ({"id": "w3", "kind": "summary", "content": "x", "inputs": ["w1"]},  # fenced: w1 is erased
                  {"id": "w4", "kind": "record", "content": "Alice moved to Lyon in May"}):  # tombstoned
        with pytest.raises(WriteRefused):
            store.record_many([write])


@pytest.mark.parametrize("event", ["delete", "correct", "migrate"])
def test_every_backend_holds_the_rows_of_the_reference(store_factory, event):
    ref, got = MemoryStore(), store_factory()
    for s in (ref, got):
        _scenario(s, event)
    assert differences(rows(ref), rows(got)) == []
    assert check_records(got) is None  # its own pins hold (the comparison above masks them)


def test_an_interrupted_event_recovers_to_the_reference_rows(store_factory):
    """The barrier committed, then the process 'died' (a step outcome never recorded); recover
    rolls the event forward on both."""
    ends = []
    for s in (MemoryStore(), store_factory()):
        _seeded(s)
        from memsteward.repair.execute import barrier
        from memsteward.repair.plan import compute_plan

        event = load_event(str(DATA / "event-delete.json"), s.snapshot())
        plan = compute_plan(POLICY, s, event, "mincut", "ortools")
        barrier(s, POLICY, plan, s.generation())
        assert s.unfinished_event() is not None
        recover(s)
        assert s.unfinished_event() is None
        ends.append(rows(s))
    assert differences(*ends) == []


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 5), st.lists(st.integers(0, 5), max_size=2), st.sampled_from("abc")),
                min_size=1, max_size=8),
       st.integers(0, 5))
def test_random_writes_and_a_delete_match_the_reference(store_factory_once, writes, root):
    """Random provenance graphs written one artifact at a time, then a delete of one of them."""
    ref, got = MemoryStore(), store_factory_once()  # the factory makes a fresh store per call
    for s in (ref, got):
        made: list[str] = []
        for k, (slot, inputs, text) in enumerate(writes):
            ident = f"n{slot}"
            ins = sorted({f"n{i}" for i in inputs if f"n{i}" in made and f"n{i}" != ident})
            try:
                s.record({"id": ident, "kind": "record" if not ins else "summary", "content": f"{text} {k}"},
                         inputs=ins)
            except Exception as exc:  # noqa: BLE001 — both must refuse alike; the rows say the rest
                s.record({"id": f"r{k}", "kind": "record", "content": type(exc).__name__ + f" {k}"})
            made.append(ident)
        target = f"n{root}"
        if target in made:
            run_event(s, POLICY, parse_event({"type": "delete", "roots": [target]}, s.snapshot()), "mincut", "ortools")
    assert differences(rows(ref), rows(got)) == []


@pytest.fixture
def store_factory_once(store_factory):
    """``store_factory`` for a Hypothesis test: each example gets a fresh store of the backend."""
    return store_factory


def test_the_dry_run_matches_on_the_reference(store_factory):
    got = _seeded(store_factory())
    ref = _seeded(MemoryStore())
    event = load_event(str(DATA / "event-delete.json"), ref.snapshot())
    assert dry_run(ref, POLICY, event).to_json() == dry_run(got, POLICY, event).to_json()


def test_a_broken_backend_is_caught(tmp_path):
    """The comparison fails when one row differs: a SQL store that leaves a failed successor staged
    (it forgets the withdrawal of ``record_step``) is told apart from the reference."""

    class Forgetful(Store):
        def record_step(self, event_id, ident, status, report):  # type: ignore[override]
            super().record_step(event_id, ident, "validated" if status != "validated" else status, report)

    ref, broken = MemoryStore(), Forgetful(str(tmp_path / "broken.db"))
    for s in (ref, broken):
        _scenario(s, "migrate")
    found = differences(rows(ref), rows(broken))
    assert found and any(f.startswith(("artifacts", "plan_steps", "audit")) for f in found), found
    broken.close()


# ------------------------------------------------------------------ capabilities

REQUIRED = (REPAIR_LOG, READER, WRITE_PATH)


@pytest.mark.parametrize("make", ["memory", "sqlite"])
def test_required_capabilities_are_there(make, tmp_path):
    store = MemoryStore() if make == "memory" else Store(str(tmp_path / "c.db"))
    for names in REQUIRED:
        missing = sorted(n for n in names if not hasattr(store, n))
        assert missing == [], missing
    assert {"key-destruction", "lineage-index", "copy"} >= capabilities(store)


def test_optional_capabilities_are_declared_per_backend(store_factory):
    sql = store_factory()
    assert capabilities(MemoryStore()) == {"lineage-index", "copy"}
    assert capabilities(sql) == {"lineage-index", "copy", "key-destruction"}  # sealed: every new store is
    assert set(ADMIN) <= set(dir(sql))
    sql.sealed = False  # a store not yet through `store migrate --encrypt`: no key destruction to claim
    assert capabilities(sql) == {"lineage-index", "copy"}


def test_key_destruction_when_declared(store_factory):
    """Where declared: after a delete the keys of all erased versions are destroyed (checked against the
    live key store) and no stored row holds their plaintext."""
    store = _seeded(store_factory())
    if "key-destruction" not in capabilities(store):
        pytest.skip("no key-destruction capability")
    marker = "Qx9 HERON-KETTLE 5521 was said once"
    store.record({"id": "secret", "kind": "record", "content": marker})
    store.record({"id": "echo", "kind": "summary", "content": f"{marker}, and more"}, inputs=["secret"])
    run_event(store, load_policy("policies/default.yaml"), parse_event({"type": "delete", "roots": ["secret"]},
                                                                         store.snapshot()))
    erased = [(i, v) for i in ("secret", "echo") for v, gone, _ in store.versions(i) if gone]
    assert len(erased) == 2 and store.keys_alive(erased) == []
    raw = json.dumps([list(r) for r in store.conn.execute("SELECT * FROM versions")])
    assert marker not in raw


def test_memory_copy_keeps_every_row_and_refuses_a_store_that_is_not_empty():
    """The memory store's ``copy``: into another memory store, every row as it was (the audit chain too)."""
    src, dst = _seeded(MemoryStore()), MemoryStore()
    counts = src.copy_into(dst)
    assert rows(dst) == rows(src) and counts == src.row_counts() and counts["audit"] > 0
    assert first_broken(dst.audit_rows(), dst.audit_head()) is None
    with pytest.raises(InputError, match="not empty"):
        src.copy_into(dst)


def test_copy_when_declared(store_factory):
    src = _seeded(store_factory())
    if "copy" not in capabilities(src):
        pytest.skip("no copy capability")
    dst = Store()
    src.copy_into(dst)
    assert rows(dst) == rows(src)
