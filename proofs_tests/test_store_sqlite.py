"""The SQLite store: import/export round trip, every version kept, append-only audit log,
serve() returns servable and republished artifacts only, the barrier is one transaction."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.policy.loader import load_policy_source
from memsteward.repair.artifacts import parse_store_document
from memsteward.repair.events import parse_event
from memsteward.repair.execute import run_event
from memsteward.store import Store

pytestmark = pytest.mark.usefixtures("store_backend")  # the store suite runs on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
POLICY = str(ROOT / "policies" / "default.yaml")


def _policy():
    return load_policy_source(POLICY).policy


def test_import_export_round_trip(tmp_path: Path):
    db = tmp_path / "s.db"
    r = CliRunner().invoke(main, ["store", "import", "--store", str(db), str(DATA / "store.json")])
    assert r.exit_code == 0, r.output
    out = tmp_path / "out.json"
    assert CliRunner().invoke(main, ["store", "export", "--store", str(db), "-o", str(out)]).exit_code == 0
    exported = json.loads(out.read_text())
    original = json.loads((DATA / "store.json").read_text())
    strip = lambda a: {k: v for k, v in a.items() if k not in ("state", "version")}  # noqa: E731
    assert sorted(json.dumps(strip(a), sort_keys=True) for a in exported["artifacts"]) == \
        sorted(json.dumps({**a, "meta": a.get("meta", {})}, sort_keys=True) for a in original["artifacts"])
    assert {json.dumps(e, sort_keys=True) for e in exported["edges"]} == \
        {json.dumps(e, sort_keys=True) for e in original["edges"]}
    # the export imports again into a fresh store, identically
    db2 = tmp_path / "t.db"
    assert CliRunner().invoke(main, ["store", "import", "--store", str(db2), str(out)]).exit_code == 0
    assert Store.open(str(db2)).export() == exported


def test_serve_lists_only_servable_and_republished(tmp_path: Path):
    store = Store.open(str(DATA / "store.json"))
    event = parse_event({"type": "delete", "roots": ["p1"]}, store.snapshot())
    plan = run_event(store, _policy(), event)
    states = store.states()
    served = {a.id for a in store.serve()}
    assert served == {i for i, (s, _) in states.items() if s in ("servable", "republished")}
    assert set(plan.republished) <= served
    assert not (set(plan.withdrawn) & served)


def test_serve_json_cli(tmp_path: Path):
    r = CliRunner().invoke(main, ["store", "serve", "--store", str(DATA / "store.json"), "--json"])
    assert r.exit_code == 0
    rows = json.loads(r.output)
    assert len(rows) == 32 and all({"id", "kind", "version"} <= set(row) for row in rows)
    assert all(isinstance(row["id"], str) for row in rows)


def test_versions_kept_and_deleted_roots_erased_with_audit(tmp_path: Path):
    db = tmp_path / "s.db"
    store = Store.open(str(db), create=True)
    store.import_snapshot(Store.open(str(DATA / "store.json")).snapshot())
    policy = _policy()
    run_event(store, policy, parse_event({"type": "delete", "roots": ["p1"]}, store.snapshot()))
    run_event(store, policy, parse_event({"type": "delete", "roots": ["p2"]}, store.snapshot()))
    # neural-prefs was retrained twice: three versions kept; sum-profile lost support the 2nd time
    assert [v for v, _, _ in store.versions("neural-prefs")] == [1, 2, 3]
    assert store.get("neural-prefs").version == 3
    # every version built from a deleted root is erased (rows, version numbers and digests stay)
    assert store.version_of("sum-profile", 1).content is None
    assert [(v, e) for v, e, _ in store.versions("sum-profile")] == [(1, True), (2, True)]
    assert store.version_of("neural-prefs", 3).content is not None
    assert [e for _, e, _ in store.versions("neural-prefs")] == [True, True, False]
    assert store.states()["sum-profile"] == ("withdrawn", 2)
    for root in ("p1", "p2"):
        assert store.get(root).content is None and store.states()[root][0] == "erased"
        raw = store.conn.execute("SELECT content, meta FROM versions WHERE id = ?", (root,)).fetchall()
        assert raw == [(None, "{}")]
    actions = [(r["action"], r["artifact_id"]) for r in store.audit_log()]
    assert ("erase", "p1") in actions and ("erase", "p2") in actions
    assert ("withdraw", "sum-profile") in actions
    # nothing about the erased content survives anywhere in the database file
    store.close()
    assert b"peanuts and carries an epipen" not in _all_text(db)


def _all_text(db: Path) -> bytes:
    conn = sqlite3.connect(str(db))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.close()
    return db.read_bytes()


def test_audit_log_is_append_only():
    store = Store.open(str(DATA / "store.json"))
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        store.conn.execute("UPDATE audit SET action = 'x'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        store.conn.execute("DELETE FROM audit")


def test_barrier_is_recorded_before_any_operator_runs():
    store = Store.open(str(DATA / "store.json"))
    run_event(store, _policy(), parse_event({"type": "delete", "roots": ["p1"]}, store.snapshot()))
    log = store.audit_log()
    first_stage = next(k for k, r in enumerate(log) if r["action"] == "stage")
    barrier = next(k for k, r in enumerate(log) if r["action"] == "barrier")
    withdrawn = {r["artifact_id"] for r in log[:first_stage] if r["action"] == "withdraw"}
    assert barrier < first_stage
    assert withdrawn == {"p1", "sum-profile", "neural-prefs", "prompt-chef", "cache-menu", "sum-digest",
                         "cache-household", "sum-visit", "sum-weekend-plans"}


def test_semantic_edges_never_define_scope():
    doc = {"artifacts": [{"id": "r", "kind": "record", "content": "a."},
                         {"id": "s", "kind": "summary", "content": "b."}],
           "edges": [{"src": "r", "dst": "s", "type": "semantic"}]}
    store = Store()
    store.import_snapshot(parse_store_document(doc, "<t>"))
    plan = run_event(store, _policy(), parse_event({"type": "delete", "roots": ["r"]}, store.snapshot()))
    assert plan.cascade == ("r",) and {a.id for a in store.serve()} == {"s"}


def test_stale_plan_is_refused_when_another_process_changed_the_store(tmp_path: Path):
    from memsteward.errors import InputError
    from memsteward.repair.execute import execute
    from memsteward.repair.plan import compute_plan

    db = tmp_path / "s.db"
    a = Store.open(str(db), create=True)
    a.import_snapshot(Store.open(str(DATA / "store.json")).snapshot())
    b = Store.open(str(db))
    policy = _policy()
    gen = a.generation()
    stale = compute_plan(policy, a.snapshot(), parse_event({"type": "delete", "roots": ["p2"]}, a.snapshot()))
    run_event(b, policy, parse_event({"type": "delete", "roots": ["p1"]}, b.snapshot()))  # the other writer
    before = a.dump_state()
    with pytest.raises(InputError, match="changed while"):
        execute(a, policy, stale, generation=gen)
    assert a.dump_state() == before
