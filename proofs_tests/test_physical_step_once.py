"""The physical erasure step runs under the event's lease, exactly once (issue 25), with real processes.

Two racing ``recover`` s after a crash could record "not scanned" first while the publisher's scan,
written later, found text: the attestation read the first row and passed. Now publication keeps the
event's lease until the physical step has written its row; ``recover`` leaves a live publisher's step
alone (it reports the holder), takes a dead one's over, and no second ``physical-erasure`` row is
ever written for an event.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from store_import import import_document

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
CLI = str(Path(sys.executable).with_name("memsteward"))
POLICY = str(ROOT / "policies" / "default.yaml")

PAUSED_PUBLISHER = """
import sys
from memsteward.store.erasure import Erasure
real = Erasure.erase_physically
def paused(self, *args, **kwargs):
    print("published", flush=True)
    sys.stdin.readline()
    return real(self, *args, **kwargs)
Erasure.erase_physically = paused
from memsteward.cli import main
main(["repair", "--policy", sys.argv[2], "--store", sys.argv[1], "--event", sys.argv[3]])
"""


def _store(tmp_path: Path) -> str:
    db = str(tmp_path / "m.db")
    return import_document(db, DATA / "store.json")


def _physical_rows(db: str) -> list[dict]:
    con = sqlite3.connect(db)
    try:
        return [json.loads(d) for (d,) in con.execute("SELECT detail FROM audit WHERE action = 'physical-erasure'")]
    finally:
        con.close()


def _publisher(db: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", PAUSED_PUBLISHER, db, POLICY, str(DATA / "event-delete.json")],
                         cwd=ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().strip() == "published"
    return p


def _recover(db: str) -> dict:
    r = subprocess.run([CLI, "recover", "--store", db, "--json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_racing_recover_leaves_a_live_publishers_step_alone(tmp_path: Path):
    db = _store(tmp_path)
    pub = _publisher(db)
    try:
        out = _recover(db)  # the publisher is between publication and its scan
        assert out["recovered"] is False and out.get("held_by", {}).get("pid") == pub.pid, out
        assert _physical_rows(db) == []  # no row of its own over the publisher's
        _, err = pub.communicate("go\n", timeout=300)
    finally:
        pub.kill()
    assert pub.returncode == 0, err
    rows = _physical_rows(db)
    assert len(rows) == 1 and rows[0]["keys_alive"] == 0 and rows[0]["keys_destroyed"] == rows[0]["versions"] > 0, rows
    assert _recover(db)["recovered"] is False and len(_physical_rows(db)) == 1


def test_a_dead_publishers_step_is_taken_over_once(tmp_path: Path):
    db = _store(tmp_path)
    pub = _publisher(db)
    os.kill(pub.pid, signal.SIGKILL)
    pub.wait(timeout=60)
    _recover(db)
    rows = _physical_rows(db)
    # the keys went at publication; the row checks them against the live key store, whoever writes it
    assert len(rows) == 1 and rows[0]["keys_alive"] == 0 and rows[0]["complete"], rows
    _recover(db)
    assert len(_physical_rows(db)) == 1
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM event_lease").fetchone() == (0,)
    con.close()


def test_a_scan_that_found_text_outweighs_a_not_scanned_row_of_an_older_log():
    """A log written before this fix may hold a "not scanned" row first and the scan that found text
    after it: the attestation fails on the finding, never passes on the first row."""
    from memsteward.repair.attestation import _physical_check

    erasure = [{"id": "p1", "root": True, "versions": 1, "content_remaining": []}]
    not_scanned = {"checkpoint": True, "vacuum": True, "scan": None, "complete": True}
    found = {"checkpoint": True, "vacuum": True, "complete": False,
             "scan": {"found": {"m.db": 3}, "needles": 4, "bytes": 100, "files": ["m.db"]}}
    log = [{"action": "physical-erasure", "detail": not_scanned}, {"action": "physical-erasure", "detail": found}]

    class NoKeys:  # the live key store holds no key of the erased versions
        def keys_alive(self, refs):
            return []

    check = _physical_check(NoKeys(), log, erasure)
    assert check["ok"] is False and "found on disk" in check["detail"], check


def test_the_publisher_s_step_neither_searches_the_audit_log_nor_takes_its_lease_again(tmp_path):
    """The publisher holds the event's lease from publication to the step's row: its step recognises the
    lease as its own (the owner as read back from the store, a string of its own), so it runs no search of
    the audit log for an earlier row (a scan that grows with the log) and no second lease write; the row
    and the lease's deletion commit together. Run again, the step returns that row and writes none."""
    from memsteward.policy.loader import load_policy
    from memsteward.repair.events import load_event
    from memsteward.repair.execute import run_event
    from memsteward.store import Store

    s = Store.open(import_document(str(tmp_path / "s.db"), DATA / "store.json"))
    issued: list[str] = []
    real = s.erase_physically

    def traced(event_id, refs=None):  # noqa: ANN001, ANN202 — the store's own step, its statements recorded
        s.conn.set_trace_callback(issued.append)
        try:
            return real(event_id, refs)
        finally:
            s.conn.set_trace_callback(None)
    s.erase_physically = traced  # type: ignore[method-assign]
    run_event(s, load_policy(POLICY), load_event(str(DATA / "event-delete.json"), s.snapshot()))
    assert issued, "the physical step did not run"
    assert not [q for q in issued if "action = 'physical-erasure'" in q and q.lstrip().upper().startswith("SELECT")]
    assert not [q for q in issued if "INTO event_lease" in q]
    assert any("DELETE FROM event_lease" in q for q in issued)
    rows = [json.loads(d) for (d,) in s.conn.execute("SELECT detail FROM audit WHERE action = 'physical-erasure'")]
    assert len(rows) == 1 and rows[0]["complete"] and s.conn.execute("SELECT count(*) FROM event_lease").fetchone()[0] == 0
    (event_id,) = s.conn.execute("SELECT event_id FROM audit WHERE action = 'physical-erasure'").fetchone()
    assert real(int(event_id)) == rows[0]
    assert s.conn.execute("SELECT count(*) FROM audit WHERE action = 'physical-erasure'").fetchone()[0] == 1
    s.close()
