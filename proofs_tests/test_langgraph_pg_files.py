"""PostgresStore's files after a governed delete, on the real local server: why ``VACUUM FULL`` may
keep erased text (a snapshot older than the delete, held by any session of the database), that the
scrub waits for such snapshots to end, and that the attestation fails, naming them, when they do not.
"""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest
from conftest import pg_dsn
from langgraph_pg import postgres_store

import memsteward
from memsteward.integrations.langgraph import GovernedStore
from memsteward.integrations.langgraph.physical import files

SECRET = "Carol's locker code is 4-8-15-16-23-42."
POLICY = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))


@pytest.fixture
def pg_store():
    with postgres_store("lgf") as inner:
        yield inner


def _old_snapshot() -> psycopg.Connection:
    """Another session of the database holding a snapshot (REPEATABLE READ, one query run)."""
    conn = psycopg.connect(pg_dsn())
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    conn.execute("SELECT 1").fetchone()
    return conn


def _in_files(inner) -> bool:
    return any(SECRET.encode() in Path(p).read_bytes() for p in files(inner))


def test_an_older_snapshot_keeps_deleted_rows_and_the_attestation_names_it(pg_store):
    gs = GovernedStore(pg_store, memsteward.open_store(), POLICY, snapshot_wait=0.2)
    gs.put(("u", "carol"), "code", {"content": SECRET})
    reader = _old_snapshot()
    try:
        gs.delete(("u", "carol"), "code")
        assert gs.last_scrub["held_by"], "the session holding the older snapshot is reported"
        assert _in_files(pg_store), "VACUUM FULL kept the deleted row for the older snapshot"
        check = next(c for c in gs.attest()["checks"] if c["check"] == "wrapped-files")
        assert not check["ok"] and "older than the deletes" in check["detail"]
    finally:
        reader.close()
    gs.snapshot_wait = 30  # other sessions of the shared database may hold a snapshot for a moment too
    gs.scrub()
    assert not gs.last_scrub["held_by"] and not _in_files(pg_store)
    assert gs.attest()["ok"]


def test_the_scrub_waits_for_an_older_snapshot_to_end(pg_store):
    gs = GovernedStore(pg_store, memsteward.open_store(), POLICY, snapshot_wait=30)
    gs.put(("u", "carol"), "code", {"content": SECRET})
    reader = _old_snapshot()
    threading.Timer(0.5, reader.close).start()
    gs.delete(("u", "carol"), "code")
    assert gs.last_scrub["held_by"] == []
    assert not _in_files(pg_store)
    assert gs.attest()["ok"]
