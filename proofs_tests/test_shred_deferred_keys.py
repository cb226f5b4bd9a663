"""A write's data keys are committed to the key file on its worker while the write's checks run
(``FileKeyStore.create_deferred``): the version commits only once its key is durable, and a key made
meanwhile by another writer is the one that seals it."""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

import memsteward
from memsteward.store.api import Storage


def _locked(path: str) -> sqlite3.Connection:
    """A second connection holding the key file's write lock (the deferred commit waits behind it)."""
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("BEGIN IMMEDIATE")
    return c


def _record_in_thread(store: Storage, content: str) -> tuple[threading.Thread, threading.Event, list[Any]]:
    checked = threading.Event()  # set by before_commit: every check passed, the COMMIT is next
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(store.record({"id": "n1", "kind": "record", "content": content}, before_commit=checked.set))
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            out.append(exc)
            checked.set()

    t = threading.Thread(target=run)
    t.start()
    return t, checked, out


def test_a_version_commits_only_once_its_key_is_durable(tmp_path):
    db = str(tmp_path / "s.db")
    store = memsteward.open_store(db)
    keys = store.vault.keys  # type: ignore[attr-defined]
    lock = _locked(keys.path)
    t, checked, out = _record_in_thread(store, "Alice lives in Paris")
    try:
        assert checked.wait(30)
        t.join(1.0)  # the key cannot be committed while the lock is held: the write must still wait
        assert t.is_alive(), f"the version was committed before its key was durable: {out}"
        peek = sqlite3.connect(db)
        assert peek.execute("SELECT COUNT(*) FROM versions WHERE id = 'n1'").fetchone()[0] == 0
        peek.close()
    finally:
        lock.execute("ROLLBACK")
        lock.close()
        t.join(30)
    assert not t.is_alive() and out and out[0].version == 1, out
    store.close()
    again = memsteward.open_store(db)
    assert again.get("n1").content == "Alice lives in Paris"
    again.close()


def test_a_key_another_writer_made_meanwhile_seals_the_version(tmp_path):
    db = str(tmp_path / "s.db")
    store = memsteward.open_store(db)
    keys = store.vault.keys  # type: ignore[attr-defined]
    lock = _locked(keys.path)
    t, checked, out = _record_in_thread(store, "Bob lives in Lyon")
    try:
        assert checked.wait(30)
        _, rows = keys._wrapper.fresh([("n1", 1)])  # another writer's key for the same version
        lock.executemany("INSERT INTO deks(id, version, wrapped) VALUES (?,?,?)", rows)
        lock.execute("COMMIT")
    finally:
        if lock.in_transaction:
            lock.execute("ROLLBACK")
        lock.close()
        t.join(30)
    assert not t.is_alive() and out and out[0].version == 1, out
    store.close()
    again = memsteward.open_store(db)
    assert again.get("n1").content == "Bob lives in Lyon"  # sealed under the key the key file holds
    assert again.vault.keys.count() == 1  # type: ignore[attr-defined]
    again.close()
