"""Crash safety (G5 under failure), on both backends (SQLite file, PostgreSQL schema): a real child process running `repair` is SIGKILLed at a
randomised point (a CrashingStore(store, crash_at=N) kills it at its N-th store checkpoint — before,
inside or after a transaction — or the parent kills it after a random delay). Afterwards no
artifact of C(F) is servable at its invalidated version, no version is lost, and
`memsteward recover` rolls the event forward to exactly the state of an uninterrupted run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from store_import import import_document

from memsteward.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
MEMGOV = str(Path(sys.executable).parent / "memsteward")
CHILD = """
import sys
from memsteward.policy.loader import load_policy_source
from memsteward.repair.events import load_event
from memsteward.repair.execute import run_event
from memsteward.store import Store
store = Store.open(sys.argv[1])
if len(sys.argv) > 4:  # fault injection: killed at this checkpoint
    from memsteward.store.crashing import CrashingStore
    store = CrashingStore(store, crash_at=int(sys.argv[4]))
policy = load_policy_source(sys.argv[2]).policy
run_event(store, policy, load_event(sys.argv[3], store.snapshot()), "mincut", "ortools")
"""


def _checkpoints(event: str) -> int:
    """How many store checkpoints an uninterrupted run of the event passes (counted in-process on
    an in-memory copy of the demo store: the child passes the same ones)."""
    from memsteward.policy.loader import load_policy
    from memsteward.repair.events import load_event
    from memsteward.repair.execute import run_event

    store = Store.open(str(DATA / "store.json"))
    start = store.checkpoints
    run_event(store, load_policy(str(ROOT / "policies" / "default.yaml")),
              load_event(str(DATA / f"event-{event}.json"), store.snapshot()), "mincut", "ortools")
    n = store.checkpoints - start
    store.close()
    return n


def _fresh_db(store_at, name: str) -> str:
    db = store_at(name)
    return import_document(db, DATA / "store.json")


def _child(db: str, event: str, crash_at: int | None) -> subprocess.Popen:
    env = dict(os.environ)
    crash = [str(crash_at)] if crash_at else []
    return subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(ROOT / "policies" / "default.yaml"),
                             str(DATA / f"event-{event}.json"), *crash], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _final_state(db: str) -> dict:
    s = Store.open(str(db))
    out = {"artifacts": s.dump_state()["artifacts"], "versions": s.dump_state()["versions"]}
    s.close()
    return out


def _versions(s: Store) -> set[tuple[str, int]]:
    return {(i, v) for i in s.states() for v, _, _ in s.versions(i)}


def _check_after_crash(db: str, before: dict, before_versions: set) -> None:
    s = Store.open(str(db))
    try:
        assert before_versions <= _versions(s)  # no version lost
        pending = s.unfinished_event()
        if pending is None and not s.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]:
            assert s.dump_state()["artifacts"] == before["artifacts"]  # killed before the barrier
            return
        if pending is not None:
            _, _, _, plan = pending
            served = {a.id for a in s.serve()}
            assert not (set(plan["cascade"]) & served)  # the barrier holds: nothing of C(F) servable
    finally:
        s.close()


@pytest.mark.parametrize("event", ["delete", "correct", "migrate"])
def test_killed_repair_recovers_to_uninterrupted_result(store_at, event):
    ref_db = _fresh_db(store_at, "ref")
    proc = _child(ref_db, event, None)
    assert proc.wait(timeout=120) == 0, proc.stderr.read().decode()
    expected = _final_state(ref_db)
    rng = random.Random(f"crash-{event}")
    last = _checkpoints(event)  # each event type's own count, so every kill point really kills
    assert last >= 8, last
    # 1, 2: inside the barrier transaction; one while staging/validating; one inside the publication
    # transaction (its last three checkpoints: mid-publication, before and after its COMMIT)
    points = [1, 2, rng.randint(3, last - 3), rng.randint(last - 2, last - 1)]
    for n, point in enumerate(points + ["delay"]):
        db = _fresh_db(store_at, f"{event}-{n}")
        s = Store.open(str(db))
        before, before_versions = s.dump_state(), _versions(s)
        s.close()
        if point == "delay":
            proc = _child(db, event, None)
            time.sleep(rng.uniform(0.3, 1.2))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        else:
            proc = _child(db, event, point)
            rc = proc.wait(timeout=120)
            assert rc in (0, -signal.SIGKILL), proc.stderr.read().decode()
        _check_after_crash(db, before, before_versions)
        rec = subprocess.run([MEMGOV, "recover", "--store", str(db)], capture_output=True, text=True, cwd=ROOT)
        assert rec.returncode == 0, rec.stderr
        s = Store.open(str(db))
        never_started = s.unfinished_event() is None and not s.conn.execute(
            "SELECT COUNT(*) FROM events").fetchone()[0]
        s.close()
        if never_started:
            continue  # killed before the barrier committed: the event never happened
        assert _final_state(db) == expected, f"crash point {point}"
