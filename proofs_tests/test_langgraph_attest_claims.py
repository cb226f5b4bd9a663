"""What the adapter's attestation claims about the wrapped store, and no more than it checked.

LangGraph's stores keep values in plaintext, so a deleted row lives on in PostgreSQL's WAL, archive,
replicas and backups, or in any copy of a SqliteStore file: the attestation reads none of those and
says ``unverified`` for them, never ``pass``. A file check that could read no file (a remote server)
is ``unverified`` too. The file scan reads each file once (the ``audit --deep`` matcher), with no
budget on the needles: a long erased text left in a file is found whichever window survived.
"""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore
from langgraph_pg import postgres_store

import memsteward
from memsteward.integrations.langgraph import GovernedStore
from memsteward.integrations.langgraph import attest as attest_mod

POLICY = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))
SECRET = "Dana's passport number is X1234567, issued in Lisbon in 2019."


def _checks(report: dict) -> dict[str, dict]:
    return {c["check"]: c for c in report["checks"]}


def _deleted(gs: GovernedStore) -> dict:
    gs.put(("u", "dana"), "passport", {"content": SECRET})
    gs.put(("u", "dana"), "tea", {"content": "Dana drinks mint tea."})
    gs.delete(("u", "dana"), "passport")
    return gs.attest()


@pytest.fixture
def pg_inner():
    with postgres_store("lga") as inner:
        yield inner


def test_postgres_wal_and_backups_are_unverified_never_pass(pg_inner):
    report = _deleted(GovernedStore(pg_inner, memsteward.open_store(), POLICY, snapshot_wait=30))
    checks = _checks(report)
    residue = checks["wrapped-wal-backups"]
    assert residue["status"] == "unverified" and residue["ok"]
    for what in ("WAL", "archive", "replicas", "base backups", "pg_dump", "plaintext"):
        assert what in residue["detail"]
    assert "wrapped-wal-backups" in report["unverified"] and report["ok"]
    assert checks["wrapped-files"]["status"] == "pass"  # the relation files were read (local server)


def test_postgres_files_unread_is_unverified_not_pass(pg_inner, monkeypatch):
    """A server whose data directory this process cannot read (simulated: no file path comes back)."""
    monkeypatch.setattr(attest_mod, "files", lambda inner, checkpoint=True: [])
    report = _deleted(GovernedStore(pg_inner, memsteward.open_store(), POLICY, snapshot_wait=30))
    check = _checks(report)["wrapped-files"]
    assert check["status"] == "unverified" and "not scanned" in check["detail"]
    assert {"wrapped-files", "wrapped-wal-backups"} <= set(report["unverified"])


def test_sqlite_copies_are_unverified_and_in_memory_has_no_file_claim(tmp_path):
    conn = sqlite3.connect(tmp_path / "lg.db", check_same_thread=False, isolation_level=None)
    inner = SqliteStore(conn)
    inner.setup()
    checks = _checks(_deleted(GovernedStore(inner, memsteward.open_store(), POLICY)))
    assert checks["wrapped-files"]["status"] == "pass" and "file(s) scanned" in checks["wrapped-files"]["detail"]
    assert checks["wrapped-wal-backups"]["status"] == "unverified"
    assert "copies of the SQLite file" in checks["wrapped-wal-backups"]["detail"]
    conn.close()

    checks = _checks(_deleted(GovernedStore(InMemoryStore(), memsteward.open_store(), POLICY)))
    assert "wrapped-wal-backups" not in checks
    assert checks["wrapped-files"]["detail"] == "in-memory store: no file holds its values"


def test_the_one_pass_scan_has_no_needle_budget(tmp_path):
    """A copy of the END of a long erased text, left in the wrapped store (written around the
    adapter), is found in the values and in the file: every window of the erased text is a needle
    (the old scan searched at most 512, the longest values' first windows, and missed it)."""
    long_text = " ".join(f"trip {hashlib.sha256(str(k).encode()).hexdigest()[:24]}" for k in range(600))
    conn = sqlite3.connect(tmp_path / "lg.db", check_same_thread=False, isolation_level=None)
    inner = SqliteStore(conn)
    inner.setup()
    gs = GovernedStore(inner, memsteward.open_store(), POLICY)
    gs.put(("u", "dana"), "trips", {"content": long_text})
    gs.delete(("u", "dana"), "trips")
    assert gs.attest()["ok"]
    inner.put(("u", "copy"), "tail", {"note": long_text[-120:]})  # a leaked copy, around the adapter
    checks = _checks(gs.attest())
    assert checks["wrapped-values"]["status"] == "fail" and checks["wrapped-files"]["status"] == "fail"
    conn.close()
