"""A SQLite delete waits only on the syncs crash safety needs (issue 27: ≤ 50 ms for a ≤ 20-artifact cascade).

A delete of a 12-artifact cascade (a root, a chain of 5 summaries that are regenerated, 6 caches) waited on
26 fsync/fdatasync calls: a durable commit for the barrier, for each step's key, staging and outcome, and
the publication's. The steps' commits are now ordered but not synced on their own (the publication's sync
covers them: the WAL is one sequence; lost, `recover` runs them again), the steps' keys are made in one
durable key-file commit right after the barrier, and the physical-erasure row is synced by the checkpoint
that follows it. The barrier keeps its sync: the publication destroys keys in the key file before its own commit,
so the event must be on disk first, or a power cut could keep the keys' destruction and lose the event.

Counted for real: the delete runs in a child process under ``strace -f -y`` (every fsync/fdatasync with the
file it syncs), between two marker ``openat`` calls. In order: the store's (the barrier), the key file's (the
steps' keys, the keys' destruction, its checkpoint), the store's (the publication, its checkpoints): the
event is durable before a key goes, and the keys are gone durably before the publication is. That a kill -9
at any point still recovers to the uninterrupted state is the crash suite's (test_repair_crash,
test_shred_erasure).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import os, random, sys
sys.path.insert(0, sys.argv[2])
from bench.shred_scale import _cascade, _fill
from memsteward.policy.loader import load_policy
from memsteward.repair.events import parse_event
from memsteward.repair.execute import run_event
from memsteward.store.sqlstore import Store

def mark(name):
    try:
        os.open(os.path.join(sys.argv[1], name), os.O_RDONLY)
    except FileNotFoundError:
        pass

store = Store.open(os.path.join(sys.argv[1], "s.db"), create=True)
rng = random.Random(1)
_fill(store, rng, 0, 2000)
policy = load_policy(os.path.join(sys.argv[2], "policies", "default.yaml"))
for e in range(2):  # the first delete warms up (a new WAL file's directory sync); the second is counted
    root = _cascade(store, rng, str(e))
    event = parse_event({"type": "delete", "roots": [root]}, store)
    mark(f"MARK-begin-{e}")
    run_event(store, policy, event, "mincut", "networkx")
    mark(f"MARK-end-{e}")
store.close()
"""

_SYNC = re.compile(r"^\d+\s+(fsync|fdatasync)\(\d+<([^>]*)>")


def _syncs(tmp_path: Path) -> list[str]:
    """The files synced, in order, during the second delete (the basename of each fsync/fdatasync's file)."""
    trace = tmp_path / "trace.txt"
    r = subprocess.run(["strace", "-f", "-y", "-qq", "-e", "trace=fsync,fdatasync,openat", "-o", str(trace),
                        sys.executable, "-c", CHILD, str(tmp_path), str(ROOT)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out: list[str] = []
    inside = False
    for line in trace.read_text().splitlines():
        if "MARK-begin-1" in line:
            inside = True
        elif "MARK-end-1" in line:
            inside = False
        elif inside and (m := _SYNC.match(line)):
            out.append(Path(m.group(2)).name)
    return out


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed: the syncs cannot be counted")
def test_a_delete_syncs_the_event_before_destroying_keys_and_the_store_at_publication(tmp_path):
    synced = _syncs(tmp_path)
    key = [k for k, f in enumerate(synced) if f.startswith("s.db.keys")]
    store = [k for k, f in enumerate(synced) if not f.startswith("s.db.keys")]
    # the steps' keys (1 commit), the keys' destruction (1 commit) and the key file's WAL checkpoint; the
    # first of them restarts the key file's WAL after the previous delete's TRUNCATE checkpoint (one more
    # sync, its header): the writes in between took pooled keys and did not touch the key file
    assert 3 <= len(key) <= 5, synced
    # the barrier's commit; then the publication's, then the two WAL checkpoints (store WAL and database each)
    assert len(store) <= 8, synced
    assert len(synced) <= 13, synced  # was 26
    barrier = min(store)
    assert barrier < min(key), f"a key-file sync before the barrier (C(F) withdrawn later than it could be): {synced}"
    assert barrier < max(key), f"the event is not durable before the keys' destruction: {synced}"
    published = [k for k in store if k > max(key)]
    assert published, f"no store sync after the keys' destruction (the publication): {synced}"
    assert not [k for k in store if barrier < k < max(key)], \
        f"a store sync between the barrier and the keys' destruction (a step synced on its own): {synced}"
