"""What the G5 state machine exercises in one CI run (crashes, recoveries, publications, failures).

Runs ``proofs_tests/test_specs_stateful.py::test_barrier_isolation_state_machine`` exactly as
``make test`` does (same settings, ``ci`` profile) in a child pytest, which writes the machine's
counters to a file; the section reports them, so a reader sees how often the hard paths of G5
(a crash mid-event, recovery, a rejected successor, publication) are actually taken.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .common import table, write_section

ROOT = Path(__file__).resolve().parent.parent
TEST = "proofs_tests/test_specs_stateful.py::test_barrier_isolation_state_machine[sqlite]"
LABELS = {
    "machines": "machines run (Hypothesis examples, with replays)",
    "events": "events started (delete / correct / migrate)",
    "crashes mid-event": "crashes mid-event (the process 'dies' inside run_event, store reopened)",
    "recoveries": "recoveries of an unfinished event (`recover`)",
    "restarts between events": "restarts between events (store reopened)",
    "publications": "publications (events completed)",
    "steps republished": "successors republished",
    "steps validated": "successors validated (not yet republished at teardown)",
    "steps failed": "successors failed (oracle rejected; stay withdrawn)",
    "steps blocked": "successors blocked (a prerequisite failed)",
    "events refused (bad input)": "events refused as bad input (store unchanged)",
}


def run(quick: bool = False) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stats.json"
        env = {**os.environ, "HYPOTHESIS_PROFILE": "ci", "MEMSTEWARD_G5_STATS": str(out)}
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TEST], cwd=ROOT,
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"the G5 state machine failed:\n{r.stdout[-3000:]}")
        stats = json.loads(out.read_text())
    rows = [[LABELS.get(k, k), stats[k]] for k in LABELS if k in stats]
    rows += [[k, v] for k, v in sorted(stats.items()) if k not in LABELS]
    md = ("## G5 state machine: what one CI run exercises\n\n"
          "The Hypothesis state machine of `proofs_tests/test_specs_stateful.py` (40 examples × ≤ 10 steps, "
          "as in `make test`) drives a file-backed SQLite store through events, oracle rejections, crashes "
          "mid-event, restarts and recoveries, and after every step checks G5, the erasure of every version "
          "of each deleted root, and the audit chain. Rules draw crashes in about half of the events and "
          "rejected successors in most; the test fails if a run exercises too few of them.\n\n"
          + table(["what", "count"], rows))
    write_section("g5_machine", md)
    return md
