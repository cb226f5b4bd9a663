"""One writer per event: two `memsteward recover` processes after a crash publish once (both backends).

Real child processes: a repair is SIGKILLed after its barrier, then two recover processes start
while the test holds the store's write lock (SQLite: BEGIN IMMEDIATE on the file; PostgreSQL: the
store's advisory lock, held by the test's own session), so both have read the unfinished event
before either can write; the lock is released and they race. The lease (owner row taken under the
write lock) lets exactly one complete the event; the other exits 0 naming the holder.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from store_import import import_document

from memsteward.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
CLI = str(Path(sys.executable).with_name("memsteward"))


def _has_open(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def _crashed_store(store_at) -> str:
    db = store_at("m")
    import_document(db, DATA / "store.json")
    env = dict(os.environ)  # killed at checkpoint 6: after the barrier, while staging successors
    r = subprocess.run([sys.executable, "-m", "memsteward.testing.crash", "6", "repair", "--policy", "policies/default.yaml", "--store", str(db),
                        "--event", str(DATA / "event-delete.json")], capture_output=True, cwd=ROOT, env=env)
    assert r.returncode < 0, r.stderr  # killed
    s = Store.open(str(db))
    assert s.unfinished_event() is not None
    s.close()
    return db


class _WriteLock:
    """The store's write lock, held by the test: BEGIN IMMEDIATE (SQLite) or the advisory lock (PostgreSQL)."""

    def __init__(self, db: str) -> None:
        self.db = db
        if db.startswith("postgresql://"):
            s = Store.open(db)
            self.key = s.conn.lock_key
            s.close()
            import psycopg

            self.conn = psycopg.connect(db.rsplit("?schema=", 1)[0], autocommit=True)
            self.conn.execute("SELECT pg_advisory_lock(%s)", (self.key,))
        else:
            self.key, self.conn = None, sqlite3.connect(db, isolation_level=None)
            self.conn.execute("BEGIN IMMEDIATE")

    def waiting(self, procs) -> bool:
        """Whether every process is connected and (PostgreSQL) blocked on the lock."""
        if self.key is None:
            return all(_has_open(p.pid, Path(self.db)) for p in procs)
        (n,) = self.conn.execute("SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                                 "AND ((classid::bigint << 32) | objid::bigint) = %s", (self.key,)).fetchone()
        return n == len(procs)

    def release(self) -> None:
        if self.key is None:
            self.conn.execute("COMMIT")
        else:
            self.conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
        self.conn.close()


def test_two_concurrent_recovers_publish_once(store_at):
    db = _crashed_store(store_at)
    lock = _WriteLock(db)  # both recovers can read, neither can write yet
    procs = [subprocess.Popen([CLI, "recover", "--store", str(db), "--json"], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    deadline = time.monotonic() + 60
    while not lock.waiting(procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # let both read the unfinished event and block on their first write
    lock.release()
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(json.loads(out))
    assert sorted(o["recovered"] for o in outs) == [False, True]
    loser = next(o for o in outs if not o["recovered"])
    assert loser.get("held_by") is None or loser["held_by"]["pid"] in {p.pid for p in procs}
    s = Store.open(str(db))
    log = s.audit_log()
    s.close()
    assert sum(1 for r in log if r["action"] == "publish") == 1
    republished = [r["artifact_id"] for r in log if r["action"] == "republish"]
    assert len(republished) == len(set(republished))
    staged = [r["artifact_id"] for r in log if r["action"] == "stage"]
    assert len(staged) == len(set(staged))
    audit = subprocess.run([CLI, "audit", "--store", str(db), "--json"], capture_output=True, text=True, cwd=ROOT)
    assert audit.returncode == 0, [c for c in json.loads(audit.stdout)["checks"] if not c["ok"]]


def test_lease_of_a_killed_process_is_taken_over(store_at):
    db = _crashed_store(store_at)  # the killed repair's lease is still in the store
    s = Store.open(str(db))
    (pid,) = s.conn.execute("SELECT pid FROM event_lease").fetchone()
    s.close()
    assert pid != os.getpid()
    r = subprocess.run([CLI, "recover", "--store", str(db), "--json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and json.loads(r.stdout)["recovered"] is True


LATE_TAKER = """
import sys
from memsteward.store import Store
s = Store.open(sys.argv[1])
event_id = s.unfinished_event()[0]  # read before the other process published
print("ready", flush=True)
sys.stdin.readline()
print("took" if s.take_event(event_id) else "done", flush=True)
s.close()
"""


def test_an_event_another_process_published_cannot_be_taken_again(store_at):
    """Issue 33 gap: a process that saw the event unfinished, then lost the race to a recover that
    published it and exited, must not take it again (the lease row is gone with the publication and
    the publisher is dead: only the event's status says it is done). Taking it would publish twice."""
    db = _crashed_store(store_at)
    late = subprocess.Popen([sys.executable, "-c", LATE_TAKER, str(db)], cwd=ROOT, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert late.stdout.readline().strip() == "ready"
        r = subprocess.run([CLI, "recover", "--store", str(db), "--json"], capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0 and json.loads(r.stdout)["recovered"] is True, r.stderr
        out, err = late.communicate("go\n", timeout=120)
    finally:
        late.kill()
    assert late.returncode == 0, err
    assert out.strip() == "done"
    s = Store.open(str(db))
    assert s.conn.execute("SELECT COUNT(*) FROM event_lease").fetchone() == (0,)
    assert sum(1 for r in s.audit_log() if r["action"] == "publish") == 1
    s.close()


def test_a_held_event_names_its_holder(tmp_path: Path):
    """EventHeld names the live holder exactly (host, pid, since): issue 33's survivor at
    leases.py:80 (the holder's fields read from the wrong columns went unnoticed)."""
    import socket

    from memsteward.errors import EventHeld

    db = _crashed_store(lambda name: str(tmp_path / f"{name}.db"))
    a, b = Store.open(db), Store.open(db)
    try:
        event_id = a.unfinished_event()[0]
        assert a.take_event(event_id)
        (since,) = a.conn.execute("SELECT acquired FROM event_lease WHERE event_id = ?", (event_id,)).fetchone()
        try:
            b.take_event(event_id)
            raise AssertionError("a second handle took an event a live handle holds")
        except EventHeld as held:
            assert held.holder == {"event": event_id, "host": socket.gethostname(), "pid": os.getpid(),
                                   "since": since}
    finally:
        a.close()
        b.close()
