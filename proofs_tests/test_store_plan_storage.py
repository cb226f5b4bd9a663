"""The stored plan (``events.plan``, memsteward.store.planstore) and the barrier's bulk rows.

* packing is exact: the packed text reads back as the plain canonical JSON does — same values and
  types (compared through canonical text, where ``1``, ``1.0`` and ``true`` differ) — for a barrier
  of hundreds of artifacts and for lists chosen to trip run-length coding (1 / 1.0 / True, 0.0 / -0.0);
* on every backend the barrier stores the plan so that ``Store.event`` gives back the same
  TransitionPlan, the SHA-256 pin of the chained barrier row verifies (``audit --check``) and the
  withdraw rows chain;
* the barrier writes no ``plan_steps`` rows: a step without one reads as pending (also from another
  process's store, which has only the stored plan), and the first recorded outcome writes the row an
  earlier release wrote at the barrier (seq = position in the order, the step's mode); pending rows of
  an earlier release are updated in place; a crash between the barrier and the first step recovers;
* a plan stored in the plain form (schema version 3 and before) still reads.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sql_dialect import sql

from bench.repair_traces import barrier_snapshot
from memsteward.errors import StoredPlanDamaged
from memsteward.policy.loader import load_policy
from memsteward.repair.attestation import check_records
from memsteward.repair.auditchain import first_broken
from memsteward.repair.events import event_from_dict
from memsteward.repair.execute import policy_document, root_successors
from memsteward.repair.plan import TransitionPlan, compute_plan
from memsteward.store import Store
from memsteward.store import audit as audit_mod
from memsteward.store.api import BarrierSpec
from memsteward.store.planstore import PACK_MIN, Rows, canonical, pack, plan_text, read_plan

ROOT = Path(__file__).resolve().parent.parent


def _plain(doc):
    """What the plain stored form reads back as."""
    return json.loads(canonical(doc))


def _same(a, b) -> bool:
    return canonical(a) == canonical(b)  # type-exact: 1, 1.0 and true are different texts


CORRECTION = {"type": "correct", "roots": ["corpus"],
              "replacements": [{"id": "corpus", "kind": "record", "content": {"text": "the corrected corpus"}}]}


def _planned(store, n: int, event_doc=None):
    snap, ev = barrier_snapshot(n)
    store.import_snapshot(snap)
    policy = load_policy(str(ROOT / "policies" / "default.yaml"))
    event = event_from_dict(event_doc or ev)
    return policy, event, compute_plan(policy, store, event)


def test_packed_plan_reads_back_exactly_and_is_packed(store_factory):
    store = store_factory()
    _, _, plan = _planned(store, 300)
    doc = plan.to_json()
    text = plan_text(doc)
    back = read_plan(text)
    assert back == _plain(doc) and _same(back, _plain(doc))
    assert TransitionPlan.from_json(back) == plan
    fields = json.loads(text)["fields"]
    # the bulky parts are packed, not copied: id runs, columns, run-length values
    assert "ids" in fields["cascade"] and "ids" in fields["barrier"] and "rows" in fields["candidates"]
    assert len(text) < len(canonical(doc)) / 3


@pytest.mark.parametrize("column", [
    [1, 1.0, True] * PACK_MIN, [1] * PACK_MIN + [1.0] * PACK_MIN + [True] * PACK_MIN,
    [0.0] * PACK_MIN + [-0.0] * PACK_MIN, [0.5] * 2 * PACK_MIN, [None, "a"] * PACK_MIN + ["a"] * 4 * PACK_MIN,
    [[1], [1.0]] * PACK_MIN, [{"a": 1}, {"a": 1.0}] * PACK_MIN, [{"a": 1}] * PACK_MIN + [{"b": 1}],
    [{"a": 1, "b": [2]}] * 3 * PACK_MIN, [[], [1, 2], ("x",)] * PACK_MIN, ["s-1", "other"] * PACK_MIN,
])
def test_packing_keeps_every_value_and_type(column):
    ids = [f"s-{k}" for k in range(3 * PACK_MIN)]
    doc = {"cascade": ids, "col": column, "rev": ids[::-1], "part": ids[2:10] + ids[20:], "map": dict.fromkeys(ids, 0.0),
           "mapped": {i: v for i, v in zip(ids, column)}}
    back = read_plan(plan_text(doc))
    assert _same(back, _plain(doc))


def test_a_cascade_with_repeated_ids_is_not_a_table():
    doc = {"cascade": ["a", "a"] * PACK_MIN, "barrier": ["a"] * PACK_MIN}
    assert pack(doc)["ids"] == [] and _same(read_plan(plan_text(doc)), _plain(doc))


def test_barrier_stores_the_plan_its_pin_verifies_and_the_rows_are_written(store_factory):
    store = store_factory()
    policy, event, plan = _planned(store, 300)
    doc = plan.to_json()
    eid = store.barrier(BarrierSpec(doc, policy_document(policy), root_successors(event, store), store.generation()))
    ev = store.event(eid)
    assert ev["plan"] == _plain(doc) and TransitionPlan.from_json(ev["plan"]) == plan
    assert check_records(store) is None  # the stored text is the one the barrier row pins
    steps = store.steps(eid)
    assert list(steps) == list(plan.order)
    assert {i: s for i, s in steps.items()} == dict.fromkeys(plan.order, ("pending", None, None))
    assert _step_rows(store, eid) == []  # pending steps have no row
    rows = store.audit_rows()
    assert [r[4] for r in rows if r[3] == "withdraw"] == list(plan.barrier)
    assert first_broken(rows, store.audit_head()) is None
    assert {i for i, (s, _) in store.states().items() if s == "withdrawn"} == set(plan.barrier)
    (unfinished_id, _, _, stored) = store.unfinished_event()
    assert unfinished_id == eid and stored == ev["plan"]


def _step_rows(store, eid):
    return [tuple(r) for r in store.conn.execute(sql(store, "SELECT seq, artifact_id, mode, status, version, report "
                                                            "FROM plan_steps WHERE event_id = ? ORDER BY seq"), (eid,))]


def _barrier_then_other_process(store_factory, n: int, legacy_rows: bool = False, event_doc=None):
    """A barrier, then a store that did not run it (``recover`` in a restarted process): the one
    the test reads the steps from, and the plan. ``legacy_rows``: a pending row per step, as a
    release before this one wrote them in the barrier's transaction."""
    store = store_factory()
    policy, event, plan = _planned(store, n, event_doc)
    eid = store.barrier(BarrierSpec(plan.to_json(), policy_document(policy), root_successors(event, store), store.generation()))
    if legacy_rows:
        with store.transaction() as c:
            c.executemany(sql(store, "INSERT INTO plan_steps(event_id, seq, artifact_id, mode, status) VALUES (?,?,?,?,?)"),
                          [(eid, k, i, plan.modes[i], "pending") for k, i in enumerate(plan.order)])
    other = store.copy_in_memory() if store.backend == "sqlite" else _reopen(store)
    store.close()  # the barrier's process is gone: its lease is free to take
    return other, eid, plan


def _reopen(store):
    from memsteward.store import Store

    return Store.open(store.url)


@pytest.mark.parametrize("event_doc", [None, CORRECTION], ids=["delete-fails", "correct-republishes"])
@pytest.mark.parametrize("legacy_rows", [False, True], ids=["no-rows", "legacy-pending-rows"])
def test_steps_without_rows_are_pending_and_recovery_writes_the_rows_in_order(store_factory, legacy_rows, event_doc):
    """Killed between the barrier's commit and the first step: another process reads every step as
    pending from the stored plan alone, and recovery leaves one row per step with seq = the step's
    position in the order and the step's mode (what the barrier of an earlier release wrote)."""
    from memsteward.repair.execute import recover

    other, eid, plan = _barrier_then_other_process(store_factory, 120, legacy_rows, event_doc)
    assert other._plan_steps is None  # nothing remembered from the barrier: only the stored plan
    steps = other.steps(eid)
    assert list(steps) == list(plan.order) and {s.status for s in steps.values()} == {"pending"}
    done = recover(other)
    assert done is not None and [s.id for s in done.executed] == list(plan.order)
    assert {s.status for s in done.executed} == ({"republished"} if event_doc else {"failed", "blocked"})
    rows = _step_rows(other, eid)
    assert [(seq, i, mode) for seq, i, mode, *_ in rows] == [(k, i, plan.modes[i]) for k, i in enumerate(plan.order)]
    by_id = {s.id: s for s in done.executed}
    for _, i, _, status, version, report in rows:
        assert status == ("validated" if by_id[i].status == "republished" else by_id[i].status)
        assert version == by_id[i].version and json.loads(report) == list(by_id[i].reports)
    assert {i: s.status for i, s in other.steps(eid).items()} == {i: r[3] for i, r in zip(plan.order, rows)}
    other.close()


def test_a_staged_step_keeps_its_version_when_its_outcome_is_recorded(store_factory):
    store = store_factory()
    policy, event, plan = _planned(store, 40)
    eid = store.barrier(BarrierSpec(plan.to_json(), policy_document(policy), root_successors(event, store), store.generation()))
    first, second = plan.order[0], plan.order[1]
    version = store.stage(eid, first, "successor", {})
    assert store.steps(eid)[first] == ("staged", version, None) and store.steps(eid)[second].status == "pending"
    store.record_step(eid, first, "failed", [{"oracle": "x", "passed": False}])
    store.record_step(eid, second, "blocked", [])
    assert store.steps(eid)[first] == ("failed", version, [{"oracle": "x", "passed": False}])
    assert store.steps(eid)[second] == ("blocked", None, [])
    assert [r[:4] for r in _step_rows(store, eid)] == [(0, first, plan.modes[first], "failed"),
                                                      (1, second, plan.modes[second], "blocked")]


def test_publication_withdraws_what_was_staged_and_not_republished(store_factory):
    """At publication a successor left staged (its step not republished) and a failed one go back to
    withdrawn without a staged version; artifacts outside C(F) are not touched (the UPDATE reads the
    barrier's rows only)."""
    from memsteward.store.api import PublishSpec

    store = store_factory()
    policy, event, plan = _planned(store, 40)
    store.record({"id": "elsewhere", "kind": "record", "content": "not in the cascade"})
    outside = {i: s for i, s in store.states().items() if i not in set(plan.barrier)}
    eid = store.barrier(BarrierSpec(plan.to_json(), policy_document(policy), root_successors(event, store), store.generation()))
    first, second = plan.order[0], plan.order[1]
    store.stage(eid, first, "successor", {})
    store.record_step(eid, first, "failed", [])
    store.stage(eid, second, "successor", {})
    assert store.states()[second][0] == "staged" and store.staged(first) is not None
    store.publish(PublishSpec(eid, [], [], plan.to_json()))
    states = store.states()
    assert states[first][0] == states[second][0] == "withdrawn"
    assert store.staged(first) is None and store.staged(second) is None
    assert "staged" not in {s for s, _ in states.values()}
    assert {i: states[i] for i in outside} == outside and outside


def test_a_plain_stored_plan_still_reads(store_factory):
    store = store_factory()
    policy, event, plan = _planned(store, 40)
    doc = plan.to_json()
    eid = store.barrier(BarrierSpec(doc, policy_document(policy), root_successors(event, store), store.generation()))
    with store.transaction() as c:  # as a release of schema version 3 wrote it
        c.execute(sql(store, "UPDATE events SET plan = ? WHERE id = ?"), (canonical(doc), eid))
    assert store.event(eid)["plan"] == _plain(doc)
    assert TransitionPlan.from_json(store.unfinished_event()[3]) == plan


@pytest.mark.parametrize("damage", [{"fields": {"x": {"ids": [0, "a"]}}}, {"fields": {"x": {"nope": 1}}},
                                    {"fields": {"x": {"rows": ["a"]}}}, {"ids": None, "fields": {"x": {"ids": [0, 1]}}}])
def test_a_damaged_packed_plan_is_a_storage_error(damage):
    with pytest.raises(StoredPlanDamaged, match="damaged stored plan"):
        read_plan(canonical({"packed": 2, "ids": ["a"], "fields": {}, **damage}))


# ------------------------------------------------------------------ the plan handed over column by column


@pytest.mark.parametrize("n, event_doc", [(6, None), (40, CORRECTION), (300, None)])
def test_the_columnar_plan_stores_the_same_text(store_factory, n, event_doc):
    """execute.barrier hands the barrier ``to_columns`` (no object per candidate): the stored text is
    the one ``to_json`` packs to, byte for byte, and reads back as the plan (small plans: below PACK_MIN)."""
    from memsteward.repair.events import referenced
    from memsteward.repair.execute import barrier

    store = store_factory()
    policy, _event, plan = _planned(store, n, event_doc)
    cols = plan.to_columns()
    assert plan_text(cols) == plan_text(plan.to_json())
    for other in (plan.replace(cascade=plan.cascade[::-1]), plan.replace(cascade=plan.cascade[1:] + plan.cascade[:1]),
                  plan.replace(cascade=plan.cascade[:-1])):  # selection not read off a sorted, complete cascade
        assert plan_text(other.to_columns()) == plan_text(other.to_json())
    assert canonical(list(cols["candidates"])) == canonical([c.as_dict() for c in plan.candidates])
    eid = barrier(store, policy, plan, store.generation())
    ev = store.event(eid)
    # a replacement is kept as a reference to the version the barrier staged (issue 25), the rest as packed
    refs = {r["id"]: r["stored_version"] for r in ev["plan"]["event"].get("replacements", [])}
    assert sorted(refs) == sorted(a.id for a in plan.event.replacements)
    for a in plan.event.replacements:
        assert store.version_of(a.id, refs[a.id]).content == a.content
    want = plan.to_json()
    assert ev["plan"] == _plain({**want, "event": referenced(want["event"], refs, store.digest_of)})
    assert TransitionPlan.from_json(ev["plan"]).replace(event=plan.event) == plan
    assert check_records(store) is None


def test_rows_are_the_list_of_their_objects():
    rows = Rows(["b", "a"], [[1, 2, 3], ["x", "y", "z"]])
    objs = [{"a": "x", "b": 1}, {"a": "y", "b": 2}, {"a": "z", "b": 3}]
    assert list(rows) == objs and rows[1] == objs[1] and rows[1:] == objs[1:] and len(rows) == 3
    assert rows.keys == ["a", "b"]
    big = Rows(["id", "n"], [[f"s-{k}" for k in range(3 * PACK_MIN)], [0] * 3 * PACK_MIN])
    ids = [f"s-{k}" for k in range(3 * PACK_MIN)]
    for doc in ({"cascade": ids, "c": big}, {"cascade": ids, "c": rows}, {"c": Rows(["k"], [[]])}):
        plain = {k: list(v) if isinstance(v, Rows) else v for k, v in doc.items()}
        assert pack(doc) == pack(plain) and _same(read_plan(plan_text(doc)), _plain(plain))
    for bad in ((["a", "a"], [[1], [2]]), (["a"], [[1], [2]]), (["a", "b"], [[1], [2, 3]])):
        with pytest.raises(ValueError):
            Rows(*bad)


@pytest.mark.parametrize("part", [None, 7, 1], ids=["one-part", "parts-of-7", "parts-of-1"])
def test_withdraw_rows_hash_as_documented_for_ids_that_need_escaping(store_factory, monkeypatch, part):
    """Every row of a barrier — the withdraw rows go in by parts, one INSERT over a BLOB of hashes
    each, written on a second thread while the next part is hashed (SQLite) — links as the
    documented format says (hashlib over the compact JSON, computed here), and each withdraw row
    names its artifact exactly (quotes, backslashes, non-ASCII, a line separator)."""
    import hashlib

    from memsteward.repair.artifacts import Artifact, Edge, Snapshot
    from memsteward.repair.auditchain import GENESIS
    from memsteward.repair.execute import barrier

    if part is not None:
        monkeypatch.setattr(audit_mod, "WITHDRAW_PART", part)
    store = store_factory()
    odd = ['q"uote', "back\\slash", "é-ünï", "line\u2028sep", "tab\tid", "plain"] + [f"x-{k}" for k in range(40)]
    arts = {"root": Artifact("root", "record", None, 1, "root text", {})}
    arts.update({i: Artifact(i, "cache", None, 1, f"out {k}", {"transform": "texts"}) for k, i in enumerate(odd)})
    store.import_snapshot(Snapshot(arts, tuple(Edge("root", i) for i in odd)))
    policy = load_policy(str(ROOT / "policies" / "default.yaml"))
    plan = compute_plan(policy, store, event_from_dict({"type": "delete", "roots": ["root"]}))
    barrier(store, policy, plan, store.generation())
    rows = store.audit_rows()
    prev = GENESIS
    for seq, at, event_id, action, artifact_id, detail, stored in rows:
        text = json.dumps([prev, seq, at, event_id, action, artifact_id, detail], ensure_ascii=False,
                          separators=(",", ":"))
        assert stored == hashlib.sha256(text.encode("utf-8")).hexdigest(), (seq, action)
        prev = stored
    assert [r[4] for r in rows if r[3] == "withdraw"] == list(plan.barrier) and set(odd) < set(plan.barrier)
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1)) and store.audit_head() == (rows[-1][0], rows[-1][6])
    assert {i for i, (s, _) in store.states().items() if s == "withdrawn"} == set(plan.barrier)


@pytest.mark.parametrize("failing", ["_withdraw", "_insert_withdrawals", "chain_same_bytes"])
def test_a_failure_beside_the_second_thread_rolls_the_barrier_back(store_factory, monkeypatch, failing):
    """The UPDATE and the withdraw rows' INSERTs run on a second thread (SQLite, large barriers): an
    error there — or in the hashing of the next part while a part's INSERT runs — is raised by the
    barrier, whose one transaction then leaves the store as it was."""
    import threading

    from memsteward.repair.execute import barrier

    monkeypatch.setattr(audit_mod, "WITHDRAW_PART", 16)
    store = store_factory()
    if store.backend != "sqlite" and failing != "_withdraw":
        pytest.skip("PostgreSQL writes the withdraw rows as one COPY, hashed in one call")
    policy, _event, plan = _planned(store, 100)
    before = store.dump_state(), store.audit_rows(), store.audit_head()
    owner = audit_mod if failing == "chain_same_bytes" else Store
    real = getattr(owner, failing)
    threads = []

    def broken(*args):
        threads.append(threading.current_thread().name)
        if len(threads) == 2 or failing == "_withdraw":
            raise RuntimeError("disk on fire")
        return real(*args)
    monkeypatch.setattr(owner, failing, broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        barrier(store, policy, plan, store.generation())
    assert (store.dump_state(), store.audit_rows(), store.audit_head()) == before
    assert store.unfinished_event() is None
    if store.backend == "sqlite" and failing != "chain_same_bytes":
        assert set(threads) == {"memsteward-barrier"}  # the write did run on the second thread
    assert all(t.name != "memsteward-barrier" for t in threading.enumerate())  # nothing left running


def _id_runs_reference(col, index):
    """The runs as first written: every index looked up, runs by index − position (groupby)."""
    from itertools import count, groupby
    from operator import sub

    try:
        idx = list(map(index.__getitem__, col))
    except (KeyError, TypeError):
        return None
    limit, out, at = len(col) // 4 + 1, [], 0
    for _, run in groupby(map(sub, idx, count())):
        n = len(list(run))
        out += (idx[at], n)
        at += n
        if len(out) > 2 * limit:
            return None
    return out


def test_id_runs_equal_the_reference():
    import random

    from memsteward.store.planstore import _id_runs

    rng = random.Random(7)
    table = [f"t{k}" for k in range(300)]
    index = {t: k for k, t in enumerate(table)}
    cases = [table, table[5:], table[:-1], table[::-1], table[:100] + table[150:], [table[-1]], table[-3:] + table[:3],
             table[:50] + ["not-an-id"] + table[50:], table[:50] + [["unhashable"]], table[:200] + table[100:]]
    for _ in range(300):
        cuts = sorted(rng.sample(range(301), rng.randint(1, 8)))
        parts = [table[a:b] for a, b in zip([0] + cuts, cuts + [300]) if rng.random() < 0.7]
        rng.shuffle(parts)
        cases.append([i for p in parts for i in p])
    for col in cases:
        if col:
            assert _id_runs(col, index, table) == _id_runs_reference(col, index), col[:5]
