"""GovernedStore over a real PostgresStore: the wrapped put starts inside memsteward's record
transaction, after every check and before its COMMIT, so the two durable commits overlap; a refused
write never reaches the wrapped store; a record whose COMMIT fails leaves no wrapped item behind."""

from __future__ import annotations

import sqlite3

import pytest
from langgraph_pg import postgres_store

import memsteward
from memsteward.integrations.langgraph import GovernedStore, GovernedWriteRefused, writes

POLICY = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))
NS = ("users", "dana")


@pytest.fixture
def gs(tmp_path):
    with postgres_store("lgw") as inner:
        yield GovernedStore(inner, memsteward.open_store(tmp_path / "prov.db"), POLICY)


def _spy(gs, monkeypatch) -> list[tuple[str, bool]]:
    """(key, memsteward's record transaction open?) of every wrapped put, taken when the put is
    started (the worker thread may run it after the COMMIT: what matters is that it started before)."""
    seen: list[tuple[str, bool]] = []
    real = writes.Overlap.start

    def start(self):
        seen.extend((op.key, gs.store.conn.in_transaction) for op in self.ops)
        real(self)

    monkeypatch.setattr(writes.Overlap, "start", start)
    return seen


def _puts(gs, monkeypatch) -> list[str]:
    """Keys of every put the wrapped store receives."""
    keys: list[str] = []
    real = gs.inner.batch

    def batch(ops):
        ops = list(ops)
        keys.extend(op.key for op in ops if getattr(op, "value", None) is not None)
        return real(ops)

    monkeypatch.setattr(gs.inner, "batch", batch)
    return keys


def test_the_wrapped_put_runs_inside_the_record_transaction(gs, monkeypatch):
    seen, keys = _spy(gs, monkeypatch), _puts(gs, monkeypatch)
    gs.put(NS, "a", {"content": "Dana keeps bees on the roof."})
    gs.put(NS, "a", {"content": "Dana keeps bees in the garden."})  # an overwrite without dependants
    assert seen == [("a", True), ("a", True)], "started before COMMIT: the two commits overlap"
    assert keys == ["a", "a"], "each put written once"
    assert gs.get(NS, "a").value == {"content": "Dana keeps bees in the garden."}
    assert gs.store.get(gs.artifact_id(NS, "a")).content == "Dana keeps bees in the garden."


def test_a_refused_put_never_reaches_the_wrapped_store(gs, monkeypatch):
    gs.put(NS, "a", {"content": "Dana's door code is 1-9-8-4 and never changes."})
    gs.put(NS, "b", {"content": "Dana likes jazz."})
    gs.delete(NS, "a")
    seen, keys = _spy(gs, monkeypatch), _puts(gs, monkeypatch)
    with pytest.raises(GovernedWriteRefused):  # a derived value saying erased content again
        gs.put(NS, "s", {"content": "Dana's door code is 1-9-8-4 and never changes.",
                         "derived_from": [[list(NS), "b"]]})
    assert seen == [] and keys == [] and gs.inner.get(NS, "s") is None


class _FailingCommit:
    """memsteward's SQLite connection whose COMMIT fails (rolled back, as a failed commit is)."""

    def __init__(self, conn) -> None:
        self.conn = conn

    def execute(self, sql, *args):
        if sql.strip().upper() == "COMMIT":
            self.conn.execute("ROLLBACK")
            raise sqlite3.OperationalError("disk I/O error (injected at COMMIT)")
        return self.conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.conn, name)


def test_a_failed_commit_leaves_no_wrapped_item(gs, monkeypatch):
    seen, keys = _spy(gs, monkeypatch), _puts(gs, monkeypatch)
    real = gs.store.conn
    gs.store.conn = gs.store.driver.conn = _FailingCommit(real)  # the store's COMMIT goes through its driver
    try:
        with pytest.raises(sqlite3.OperationalError):
            gs.put(NS, "x", {"content": "Dana's new phone number is 555-0199."})
    finally:
        gs.store.conn = gs.store.driver.conn = real
    assert seen == [("x", True)] and keys[:1] == ["x"], "the wrapped put had started and ran"
    assert gs.inner.get(NS, "x") is None and gs.artifact_id(NS, "x") is None
