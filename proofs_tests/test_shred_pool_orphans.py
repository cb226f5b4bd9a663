"""Orphaned pooled keys are collected, and only they: a pooled key that no version names and whose
holder process has ended (killed with its pool, or a refused write's key left by a process that
exited) is destroyed by ``collect_pool_keys`` (which ``recover`` runs); a live process's pool, the
keys stored versions name and this process's own keys are kept. Real child processes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import memsteward
from memsteward.repair.execute import recover
from memsteward.store.sqlstore import Store

ROOT = Path(__file__).resolve().parent.parent

WRITER = """
import os, sys, time
import memsteward
from memsteward.errors import InputError
store = memsteward.open_store(sys.argv[1])
store.record({"id": sys.argv[2], "kind": "record", "content": "memory of " + sys.argv[2]})
if sys.argv[3] == "refused-then-exit":  # a refused write takes a key that seals nothing stored
    try:
        store.record({"id": "x" + sys.argv[2], "kind": "summary", "content": "derived"}, inputs=["ghost"])
    except InputError:
        pass
    store.close()  # the unused pool is destroyed; the refused write's key is not in it any more
    sys.exit(0)
print("READY", flush=True)
time.sleep(600)  # holds its pool until killed
"""


def _pooled_by_pid(keyfile: str) -> dict[int, set[str]]:
    c = sqlite3.connect(keyfile)
    try:
        ids = [str(r[0]) for r in c.execute("SELECT id FROM deks WHERE version = 0")]
    finally:
        c.close()
    out: dict[int, set[str]] = {}
    for k in ids:
        out.setdefault(int(k.split(".")[1], 16), set()).add(k)
    return out


def _named(db: str) -> set[str]:
    c = sqlite3.connect(db)
    try:
        return {str(r[0]) for r in c.execute("SELECT dek FROM versions WHERE dek IS NOT NULL")}
    finally:
        c.close()


def _holding(db: str, ident: str) -> subprocess.Popen[str]:
    child = subprocess.Popen([sys.executable, "-c", WRITER, db, ident, "hold"], stdout=subprocess.PIPE, text=True,
                             cwd=ROOT)
    assert child.stdout is not None and child.stdout.readline().strip() == "READY"
    return child


def _kill(child: subprocess.Popen[str]) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait(30)


def test_orphaned_pool_keys_are_collected_and_only_they(tmp_path):
    db = str(tmp_path / "s.db")
    keyfile = db + ".keys"
    store = memsteward.open_store(db)
    store.record({"id": "p1", "kind": "record", "content": "memory of p1"})  # this process's pool
    crashed, alive = _holding(db, "a1"), _holding(db, "b1")
    try:
        _kill(crashed)  # killed with its pool: 7 reserved keys that sealed nothing
        exited = subprocess.run([sys.executable, "-c", WRITER, db, "c1", "refused-then-exit"], cwd=ROOT,
                                capture_output=True, text=True, timeout=120)
        assert exited.returncode == 0, exited.stderr
        before, named = _pooled_by_pid(keyfile), _named(db)
        assert before[crashed.pid] - named and before[exited_pid(before, crashed, alive)] - named  # orphans exist
        assert len(before[alive.pid] - named) > 0  # the live writer's unused pool

        gone = store.collect_pool_keys()

        after = _pooled_by_pid(keyfile)
        assert after[alive.pid] == before[alive.pid], "a live process's pool is kept"
        assert after[os.getpid()] == before[os.getpid()], "this process's keys are kept"
        for pid in (crashed.pid, exited_pid(before, crashed, alive)):
            assert after.get(pid, set()) == before[pid] & named, "a dead holder's keys: only the named ones stay"
        assert gone == sum(len(before[p] - named) for p in before if p not in (alive.pid, os.getpid()))
        reader = Store.open(db)
        for ident in ("p1", "a1", "b1", "c1"):
            assert reader.get(ident).content == f"memory of {ident}"  # every stored version keeps its key
        reader.close()

        _kill(alive)  # its pool is orphaned now: `recover` collects it
        assert recover(store) is None  # nothing else to recover
        final = _pooled_by_pid(keyfile)
        assert final.get(alive.pid, set()) == before[alive.pid] & named
        assert store.get("b1").content == "memory of b1"
        assert store.collect_pool_keys() == 0  # nothing left to collect
    finally:
        for child in (crashed, alive):
            if child.poll() is None:
                _kill(child)
        store.close()


def exited_pid(before: dict[int, set[str]], *others: subprocess.Popen[str]) -> int:
    """The pid of the child that exited after a refused write: the one holder not otherwise known."""
    (pid,) = set(before) - {os.getpid(), *(c.pid for c in others)}
    return pid


def test_a_killed_writers_pool_is_collected_on_postgresql(pg_url):
    """The PostgreSQL key store lists its pooled keys, and the store finds the named ones, the same way."""
    store = Store.open(pg_url, create=True)
    try:
        crashed = _holding(pg_url, "a1")
        _kill(crashed)
        pooled = set(store.vault.keys.pooled_ids())  # type: ignore[attr-defined]
        mine = {k for k in pooled if int(k.split(".")[1], 16) == crashed.pid}
        (used,) = store.key_refs([("a1", 1)]).values()
        assert used[0] in mine and len(mine) > 1
        assert store.collect_pool_keys() == len(mine) - 1
        assert set(store.vault.keys.pooled_ids()) == (pooled - mine) | {used[0]}  # type: ignore[attr-defined]
        assert store.get("a1").content == "memory of a1"
    finally:
        store.close()
