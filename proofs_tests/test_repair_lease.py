"""One writer per event: two `memsteward recover` processes after a crash publish once.

Real child processes: a repair is SIGKILLed after its barrier, then two recover processes start
while the test holds the database's write lock, so both have read the unfinished event before
either can write; the lock is released and they race. The lease (owner row taken under BEGIN
IMMEDIATE) lets exactly one complete the event; the other exits 0 naming the holder.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from memsteward.repair.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
CLI = str(Path(sys.executable).with_name("memsteward"))


def _has_open(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def _crashed_store(tmp_path: Path) -> Path:
    db = tmp_path / "m.db"
    subprocess.run([CLI, "store", "import", "--store", str(db), str(DATA / "store.json")], check=True,
                   capture_output=True, cwd=ROOT)
    env = {**os.environ, "MEMSTEWARD_CRASH_AT": "6"}  # after the barrier, while staging successors
    r = subprocess.run([CLI, "repair", "--policy", "policies/default.yaml", "--store", str(db),
                        "--event", str(DATA / "event-delete.json")], capture_output=True, cwd=ROOT, env=env)
    assert r.returncode < 0, r.stderr  # killed
    s = Store.open(str(db))
    assert s.unfinished_event() is not None
    s.close()
    return db


def test_two_concurrent_recovers_publish_once(tmp_path: Path):
    db = _crashed_store(tmp_path)
    lock = sqlite3.connect(str(db), isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # both recovers can read, neither can write yet
    procs = [subprocess.Popen([CLI, "recover", "--store", str(db), "--json"], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    deadline = time.monotonic() + 60
    while not all(_has_open(p.pid, db) for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # let both read the unfinished event and block on their first write
    lock.execute("COMMIT")
    lock.close()
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


def test_lease_of_a_killed_process_is_taken_over(tmp_path: Path):
    db = _crashed_store(tmp_path)  # the killed repair's lease is still in the store
    s = Store.open(str(db))
    (pid,) = s.conn.execute("SELECT pid FROM event_lease").fetchone()
    s.close()
    assert pid != os.getpid()
    r = subprocess.run([CLI, "recover", "--store", str(db), "--json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and json.loads(r.stdout)["recovered"] is True
