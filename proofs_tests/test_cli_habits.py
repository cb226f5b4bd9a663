"""Command-line habits a Unix user expects, each on the real executable in a child process:

* a closed stdout pipe (``memsteward store serve | head -1``) ends the command quietly with exit 0;
* ``-`` reads standard input wherever a file is read (``--event -``, ``--case -``, ``--cohort -``,
  a policy, a store document), and at most one input of a command may be ``-``;
* every command takes the store as ``--store`` (``store migrate`` keeps its old positional as a
  deprecated alias that says so);
* a progress bar is drawn only on a terminal (``clear --cohort`` into a pipe draws none);
* a refused first write (``store put --store new.db``) leaves no file behind;
* the Python API picks OR-Tools for the min-cut, as the command line does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memsteward.api import bundled_path

CLI = str(Path(sys.executable).with_name("memsteward"))
DATA = bundled_path("repair")
POLICY = str(bundled_path("policies", "default.yaml"))


def _run(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], input=stdin, capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture
def big_store(tmp_path: Path) -> str:
    """A store whose `serve` listing is far larger than a pipe's buffer (64 KiB)."""
    doc = {"artifacts": [{"id": f"note-{i:05d}", "kind": "record", "content": f"fact number {i}", "meta": {}}
                         for i in range(3000)], "edges": []}
    (tmp_path / "big.json").write_text(json.dumps(doc), encoding="utf-8")
    db = str(tmp_path / "big.db")
    assert _run("store", "import", "--store", db, str(tmp_path / "big.json")).returncode == 0
    return db


@pytest.mark.parametrize("extra", [(), ("--json",)], ids=["text", "json"])
def test_closed_stdout_pipe_exits_zero_quietly(big_store: str, extra: tuple[str, ...]) -> None:
    proc = subprocess.Popen([CLI, "store", "serve", "--store", big_store, *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()  # `| head -1`: one line read, then the reader goes away
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert err == b""


def test_event_from_stdin(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    assert _run("store", "import", "--store", db, str(DATA / "store.json")).returncode == 0
    event = (DATA / "event-delete.json").read_text(encoding="utf-8")
    r = _run("repair", "--policy", POLICY, "--store", db, "--event", "-", "--dry-run", "--json", stdin=event)
    assert r.returncode == 0, r.stderr
    from_file = _run("repair", "--policy", POLICY, "--store", db, "--event", str(DATA / "event-delete.json"),
                     "--dry-run", "--json")
    assert json.loads(r.stdout)["barrier"] == json.loads(from_file.stdout)["barrier"]
    bad = _run("repair", "--policy", POLICY, "--store", db, "--event", "-", stdin='{"type": "delete", "roots": [')
    assert bad.returncode == 2 and bad.stderr.startswith("<stdin>:1:"), bad.stderr


def test_policy_case_cohort_and_document_from_stdin(tmp_path: Path) -> None:
    policy = Path(POLICY).read_text(encoding="utf-8")
    assert _run("check", "-", stdin=policy).returncode == 0
    case = bundled_path("cases", "redundant.json").read_text(encoding="utf-8")
    r = _run("clear", "--case", "-", "--json", stdin=case)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["removed"] == ["m3", "m5"]
    cohort = "\n".join(json.dumps(json.loads(bundled_path("cases", n).read_text(encoding="utf-8")))
                       for n in ("redundant.json", "joint.json")) + "\n"
    r = _run("clear", "--cohort", "-", "--methods", "meclear", "--json", stdin=cohort)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["cases"] == 2
    db = str(tmp_path / "d.db")
    r = _run("store", "import", "--store", db, "-", stdin=(DATA / "store.json").read_text(encoding="utf-8"))
    assert r.returncode == 0, r.stderr
    two = _run("repair", "--policy", "-", "--store", db, "--event", "-", stdin=policy)
    assert two.returncode == 2 and "standard input" in two.stderr, two.stderr


def test_store_migrate_takes_store_option_and_the_old_positional(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    assert _run("store", "import", "--store", db, str(DATA / "store.json")).returncode == 0
    r = _run("store", "migrate", "--store", db, "--json")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert json.loads(r.stdout)["migrated"] is False
    old = _run("store", "migrate", db, "--json")
    assert old.returncode == 0 and "deprecated" in old.stderr
    assert json.loads(old.stdout) == json.loads(r.stdout)
    assert _run("store", "migrate").returncode == 2  # neither: a usage error


def test_no_progress_bar_into_a_pipe(tmp_path: Path) -> None:
    cohort = tmp_path / "c.jsonl"
    cohort.write_text(json.dumps(json.loads(bundled_path("cases", "redundant.json").read_text())) + "\n")
    r = _run("clear", "--cohort", str(cohort), "--methods", "meclear")
    assert r.returncode == 0, r.stderr
    assert "case/s" not in r.stderr and "%|" not in r.stderr and "\r" not in r.stderr, r.stderr
    forced = _run("clear", "--cohort", str(cohort), "--methods", "meclear", "--progress")
    assert "%|" in forced.stderr  # --progress draws it anyway


def test_refused_first_write_creates_no_file(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    doc = json.dumps({"id": "s1", "kind": "summary", "content": "x", "inputs": ["no-such-source"]})
    r = _run("store", "put", "--store", str(db), stdin=doc)
    assert r.returncode == 2, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    ok = _run("store", "put", "--store", str(db), stdin=json.dumps({"id": "n1", "kind": "record", "content": "x"}))
    assert ok.returncode == 0 and db.is_file()
    again = _run("store", "put", "--store", str(db), stdin=doc)  # an existing store stays (with its audit row)
    assert again.returncode == 2 and db.is_file()


def test_python_api_uses_ortools_like_the_cli(tmp_path: Path) -> None:
    probe = """
import sys, memsteward
store = memsteward.open_store()
store.record({"id": "n1", "kind": "record", "content": "Alice lives in Paris"})
store.record({"id": "n2", "kind": "record", "content": "Alice likes tea"})
store.record({"id": "s", "kind": "summary", "content": "Alice lives in Paris. Alice likes tea"}, inputs=["n1", "n2"])
policy = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))
memsteward.apply_event(store, policy, {"type": "delete", "roots": ["n1"]})
print(any(m.startswith("ortools") for m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
