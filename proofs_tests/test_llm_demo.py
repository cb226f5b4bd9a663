"""`make demo-llm` plumbing without the model (issue 13 item 3): the demo refuses a port that
is already taken (a leftover server would otherwise be used silently), owns its server's whole
process group, and shows the server log's tail when startup fails. Real child processes."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
import yaml
from scripted_llm import ScriptedLLM

from memsteward.clearance.llm_demo import log_tail, main, port_in_use, start_server, stop_group, wait_ready
from memsteward.errors import InputError

ROOT = Path(__file__).resolve().parent.parent

# a parent that starts a grandchild in the same process group, prints its pid, then waits
FAMILY = ("import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', "
          "'import time; time.sleep(60)']); print(c.pid, flush=True); "
          "print('server starting', flush=True); time.sleep(60)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is dead
        return fh.read().split(")")[-1].split()[0] != "Z"


def test_stop_group_ends_the_server_and_its_children(tmp_path):
    log = tmp_path / "server.log"
    proc = start_server([sys.executable, "-c", FAMILY], log)
    for _ in range(200):
        if log.read_text().count("\n") >= 2:
            break
        time.sleep(0.05)
    grandchild = int(log.read_text().split()[0])
    assert _alive(grandchild) and os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
    stop_group(proc, grace=5)
    for _ in range(100):
        if not _alive(grandchild):
            break
        time.sleep(0.05)
    assert proc.poll() is not None and not _alive(grandchild)
    assert "server starting" in log_tail(log)


def test_startup_failure_shows_the_log_tail(tmp_path):
    log = tmp_path / "server.log"
    proc = start_server([sys.executable, "-c", "print('error: model file is corrupt'); raise SystemExit(3)"], log)
    with pytest.raises(InputError) as err:
        wait_ready("http://127.0.0.1:9/v1", 30, proc, log)
    text = err.value.render()
    assert "exited with code 3" in text and "model file is corrupt" in text


def test_a_taken_port_is_refused_before_anything_starts(tmp_path, capsys):
    with ScriptedLLM() as llm:
        port = int(llm.url.split(":")[2].split("/")[0])
        assert port_in_use("127.0.0.1", port)
        doc = yaml.safe_load((ROOT / "policies" / "llm-local.yaml").read_text())
        policy = tmp_path / "llm.yaml"
        policy.write_text(yaml.safe_dump(doc))
        rc = main(["--policy", str(policy), "--port", str(port), "--log", str(tmp_path / "s.log")])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port}" in err and "PORT=" in err
    assert not (tmp_path / "s.log").exists()  # no server was started
