"""`memsteward audit`: the attestation of the demo store's delete event, and tamper detection."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.repair.attestation import _support_check
from memsteward.store import Store
from memsteward.store.planstore import plan_text, read_plan

DATA = Path("engine/data/repair")


@pytest.fixture()
def store(tmp_path: Path) -> str:
    db = str(tmp_path / "mem.db")
    run = CliRunner()
    assert run.invoke(main, ["store", "import", "--store", db, str(DATA / "store.json")]).exit_code == 0
    r = run.invoke(main, ["repair", "--policy", "policies/default.yaml", "--store", db,
                          "--event", str(DATA / "event-delete.json")])
    assert r.exit_code == 0, r.output
    return db


def test_attestation_of_demo_delete_event(store: str):
    r = CliRunner().invoke(main, ["audit", "--store", store, "--format", "json"])
    assert r.exit_code == 0, r.output
    a = json.loads(r.stdout)
    assert a["ok"] and {c["check"] for c in a["checks"]} >= {
        "barrier-first", "cascade-withdrawn", "support-retained", "validated", "failures-withdrawn",
        "erasure", "audit-chain"}
    assert a["event"]["type"] == "delete" and a["roots"] == [{"id": "p1", "action": "erased"}]
    assert a["erasure"][0]["content_remaining"] == []
    for s in a["republished"]:
        assert s["support"], s  # every successor names what it was built from
        assert all(x["id"] != "p1" for x in s["support"])
    md = CliRunner().invoke(main, ["audit", "--store", store])
    assert md.exit_code == 0 and "# Deletion attestation" in md.output and "built from:" in md.output


def _seq(db: str, action: str) -> int:
    """The sequence number of the first audit row with ``action`` (no row position is hard-coded)."""
    s = Store.open(db)
    try:
        return next(r["seq"] for r in s.audit_log() if r["action"] == action)
    finally:
        s.close()


def _tamper(db: str, sql: str) -> None:
    con = sqlite3.connect(db)
    con.executescript("DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;" + sql)
    con.commit()
    con.close()


def test_chain_intact_then_tampered_row_detected(store: str):
    ok = CliRunner().invoke(main, ["audit", "--store", store, "--check"])
    assert ok.exit_code == 0 and "intact" in ok.output
    seq = _seq(store, "stage")
    _tamper(store, f"UPDATE audit SET detail = '{{\"version\": 1}}' WHERE seq = {seq};")
    bad = CliRunner().invoke(main, ["audit", "--store", store, "--check", "--format", "json"])
    assert bad.exit_code == 1
    assert json.loads(bad.stdout)["first_broken"]["seq"] == seq
    full = CliRunner().invoke(main, ["audit", "--store", store, "--format", "json"])
    assert full.exit_code == 1
    chain = next(c for c in json.loads(full.stdout)["checks"] if c["check"] == "audit-chain")
    assert not chain["ok"] and f"row {seq}" in chain["detail"]


def test_deleted_audit_row_detected(store: str):
    seq = _seq(store, "withdraw")
    _tamper(store, f"DELETE FROM audit WHERE seq = {seq};")
    bad = CliRunner().invoke(main, ["audit", "--store", store, "--check"])
    assert bad.exit_code == 1 and f"row {seq + 1}" in bad.output and "deleted" in bad.output


def test_unknown_event_is_bad_input(store: str):
    r = CliRunner().invoke(main, ["audit", "--store", store, "--event", "99"])
    assert r.exit_code == 2 and "no event 99" in r.output


def test_support_from_erased_root_fails_the_check():
    plan = {"base_versions": {"r": 1, "s": 1}, "roots": {"r": "erased"}}
    event = {"roots": ["r"]}
    good = [{"id": "s", "version": 2, "support": [{"id": "x", "version": 1}]}]
    bad = [{"id": "s", "version": 2, "support": [{"id": "r", "version": 1}]}]
    stale = [{"id": "s", "version": 2, "support": [{"id": "t", "version": 1}]}]
    assert _support_check(plan, event, ["r", "s", "t"], ["s"], good)["ok"]
    assert "erased root r" in _support_check(plan, event, ["r", "s", "t"], ["s"], bad)["detail"]
    assert "invalidated member" in _support_check(plan, event, ["r", "s", "t"], ["s"], stale)["detail"]


def test_truncated_tail_is_detected(store: str):
    _tamper(store, f"DELETE FROM audit WHERE seq >= {_seq(store, 'republish')};")
    bad = CliRunner().invoke(main, ["audit", "--store", store, "--check"])
    assert bad.exit_code == 1 and "rows were removed" in bad.output


def test_removed_head_record_is_detected(store: str):
    _tamper(store, "DELETE FROM audit_head;")
    bad = CliRunner().invoke(main, ["audit", "--store", store, "--check"])
    assert bad.exit_code == 1 and "no recorded head" in bad.output


def test_rewritten_plan_outside_the_chain_is_detected(store: str):
    """Editing the unchained events table (drop an artifact from the cascade, serve it) fails."""
    con = sqlite3.connect(store)
    (plan,) = con.execute("SELECT plan FROM events WHERE id = 1").fetchone()
    doc = read_plan(plan)
    doc["cascade"].remove("sum-digest")
    doc["barrier"].remove("sum-digest")
    con.execute("UPDATE events SET plan = ? WHERE id = 1", (plan_text(doc),))
    con.execute("UPDATE artifacts SET state = 'servable' WHERE id = 'sum-digest'")
    con.commit()
    con.close()
    r = CliRunner().invoke(main, ["audit", "--store", store, "--json"])
    assert r.exit_code == 1
    failed = {c["check"] for c in json.loads(r.stdout)["checks"] if not c["ok"]}
    assert {"records-pinned", "cascade-withdrawn"} <= failed


def test_expect_head_anchors_the_log(store: str):
    head = json.loads(CliRunner().invoke(main, ["audit", "--store", store, "--json"]).stdout)["audit_head"]
    assert CliRunner().invoke(main, ["audit", "--store", store, "--check", "--expect-head", head]).exit_code == 0
    r = CliRunner().invoke(main, ["audit", "--store", store, "--check", "--expect-head", "0" * 64])
    assert r.exit_code == 1 and "expected head" in r.output
