"""The regression corpus of issue 17: every hostile input it lists, with its expected exit code.

``proofs_tests/hostile_corpus/expected.json`` maps each stored input to the command that reads it
and its exit code (and why it is there). Inputs that cannot be files in a repository — a FIFO,
``/dev/zero``, directories, ``/proc`` outputs, a corrupt database, out-of-range flags — are made
by :data:`GENERATED`. For every one: the exit code, no traceback, one error line, and — where a
store is involved — the store byte-identical afterwards and the next valid event succeeding.
FIFOs and devices run in a child process with a timeout, so a regression shows up as a failure,
not as a hung test run.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.repair.artifacts import parse_store_document
from memsteward.store import Store

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "proofs_tests" / "hostile_corpus"
EXPECTED = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
DATA = ROOT / "engine" / "data" / "repair"
POLICY = str(ROOT / "policies" / "tool-agent.yaml")
VALID_EVENT = str(DATA / "event-migrate.json")


def fingerprint(db: Path) -> tuple[str, ...]:
    """Bytes of the database and its WAL (absent ≡ empty): any committed write changes one."""
    wal = Path(str(db) + "-wal")
    return (hashlib.sha256(db.read_bytes()).hexdigest(),
            hashlib.sha256(wal.read_bytes() if wal.exists() else b"").hexdigest())


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    store = Store.open(str(path), create=True)
    store.import_snapshot(parse_store_document(json.loads((DATA / "store.json").read_text()), "store.json"))
    store.close()
    return path


def _env() -> dict[str, str | None]:
    return {"MEMSTEWARD_ALLOWED_KEY_ENVS": None, "MEMSTEWARD_ALLOWED_HTTP_HOSTS": None, "MEMSTEWARD_CONFIG": None,
            "XDG_CONFIG_HOME": "/nonexistent-memsteward-test"}


def _assert_clean(result, code: int) -> None:
    out = result.output
    assert result.exit_code == code, out
    assert "Traceback" not in out and "internal error" not in out, out


def _next_event_succeeds(db: Path) -> None:
    result = CliRunner().invoke(main, ["repair", "--policy", POLICY, "--store", str(db), "--event", VALID_EVENT,
                                       "--json"], env=_env())
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["status"] == "done"


def test_corpus_is_complete():
    on_disk = {p.name for p in CORPUS.iterdir() if p.name != "expected.json"}
    assert on_disk == set(EXPECTED), on_disk ^ set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_input(db: Path, tmp_path: Path, name: str):
    spec = EXPECTED[name]
    store = db if "{policy}" in spec["command"] else tmp_path / "fresh.db"
    args = [a.format(input=str(CORPUS / name), store=str(store), policy=POLICY) for a in spec["command"]]
    before = fingerprint(db)
    result = CliRunner().invoke(main, args, env=_env())
    _assert_clean(result, spec["exit"])
    if spec["exit"] == 2:
        assert len([ln for ln in result.output.splitlines() if ln.strip()]) == 1, result.output
    assert fingerprint(db) == before
    assert not (tmp_path / "fresh.db").exists()  # a refused import creates no store
    _next_event_succeeds(db)


def _corrupt(db: Path) -> Path:
    bad = db.with_name("corrupt.db")
    data = bytearray(db.read_bytes())
    data[4096:] = bytes((i * 7) % 256 for i in range(len(data) - 4096))
    bad.write_bytes(bytes(data))
    return bad


# name → (make the input from (db, tmp_path) → CLI args, expected exit). Child process + timeout.
GENERATED: dict[str, tuple[Callable[[Path, Path], list[str]], int]] = {
    "fifo-as-store": (lambda db, t: ["repair", "--policy", POLICY, "--store", _fifo(t), "--event", VALID_EVENT], 2),
    "fifo-as-event": (lambda db, t: ["repair", "--policy", POLICY, "--store", str(db), "--event", _fifo(t)], 2),
    "fifo-as-cohort": (lambda db, t: ["clear", "--cohort", _fifo(t)], 2),
    "fifo-as-policy": (lambda db, t: ["check", _fifo(t)], 2),
    "fifo-as-import": (lambda db, t: ["store", "import", "--store", str(db), _fifo(t)], 2),
    "dev-zero-as-cohort": (lambda db, t: ["clear", "--cohort", "/dev/zero"], 2),
    "dev-zero-as-store": (lambda db, t: ["store", "serve", "--store", "/dev/zero"], 2),
    "dev-zero-as-import": (lambda db, t: ["store", "import", "--store", str(db), "/dev/zero"], 2),
    "directory-as-store": (lambda db, t: ["repair", "--policy", POLICY, "--store", str(t), "--event", VALID_EVENT], 2),
    "directory-as-export-output": (lambda db, t: ["store", "export", "--store", str(db), "-o", str(t)], 2),
    "proc-as-export-output": (lambda db, t: ["store", "export", "--store", str(db), "-o", "/proc/version"], 2),
    "proc-as-cohort-output": (lambda db, t: ["clear", "--synthetic-cohort", "2", "--out", "/proc/version"], 2),
    "missing-output-directory": (lambda db, t: ["store", "export", "--store", str(db), "-o", str(t / "no" / "x")], 2),
    "corrupt-database": (lambda db, t: ["store", "serve", "--store", str(_corrupt(db))], 2),
    "corrupt-database-repair": (lambda db, t: ["repair", "--policy", POLICY, "--store", str(_corrupt(db)),
                                               "--event", VALID_EVENT], 2),
    "tradeoff-nan": (lambda db, t: ["repair", "--policy", POLICY, "--store", str(db), "--event", VALID_EVENT,
                                    "--tradeoff", "nan"], 2),
    "tradeoff-inf": (lambda db, t: ["repair", "--policy", POLICY, "--store", str(db), "--event", VALID_EVENT,
                                    "--tradeoff", "inf"], 2),
    "tradeoff-1e309": (lambda db, t: ["repair", "--policy", POLICY, "--store", str(db), "--event", VALID_EVENT,
                                      "--tradeoff", "1e309"], 2),
    "budget-nan": (lambda db, t: ["repair", "--policy", POLICY, "--store", str(db), "--event", VALID_EVENT,
                                  "--budget", "nan"], 2),
    "huge-decimal-flag": (lambda db, t: ["repair", "--policy", POLICY, "--store", str(db), "--event", VALID_EVENT,
                                         "--tradeoff", "1" * 5000], 2),
    "audit-event-huge-int": (lambda db, t: ["audit", "--store", str(db), "--event", "9" * 40], 2),
    # issue 25: outputs that are the store, its files or an input (exit 2, store unchanged)
    "export-onto-store": (lambda db, t: ["store", "export", "--store", str(db), "-o", str(db)], 2),
    "export-onto-wal": (lambda db, t: ["store", "export", "--store", str(db), "-o", f"{db}-wal"], 2),
    "export-onto-store-symlink": (lambda db, t: ["store", "export", "--store", str(db), "-o", _link(db, t, False)], 2),
    "export-onto-store-hardlink": (lambda db, t: ["store", "export", "--store", str(db), "-o", _link(db, t, True)], 2),
    "copy-onto-source-wal": (lambda db, t: ["store", "copy", str(db), f"{db}-wal"], 2),
    "correct-replacement-5mb": (lambda db, t: ["repair", "--policy", POLICY, "--store", str(db), "--event",
                                                _big_correct(t)], 2),
    "synthetic-k-huge": (lambda db, t: ["clear", "--synthetic-cohort", "1", "--k", str(10**9), "--out",
                                        str(t / "c.jsonl")], 2),
}


def _big_correct(tmp_path: Path) -> str:
    """Issue 25: a 5 MB correct replacement was accepted (only `store put` had the 1 MiB cap)."""
    event = json.loads((DATA / "event-correct.json").read_text())
    event["replacements"][0]["content"]["result"] = "x" * (5 << 20)
    path = tmp_path / "big-correct.json"
    path.write_text(json.dumps(event))
    return str(path)


def _link(db: Path, tmp_path: Path, hard: bool) -> str:
    path = tmp_path / ("hard.json" if hard else "soft.json")
    (os.link if hard else os.symlink)(db, path)
    return str(path)


def _fifo(tmp_path: Path) -> str:
    path = tmp_path / "fifo"
    if not path.exists():
        os.mkfifo(path)
    return str(path)


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_input(db: Path, tmp_path: Path, name: str):
    make, code = GENERATED[name]
    work = tmp_path / "work"
    work.mkdir()
    args = make(db, work)
    before = fingerprint(db)
    if "fifo" in name or "dev-zero" in name:  # could block: a child process with a timeout
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTEWARD_ALLOWED")}
        proc = subprocess.run([sys.executable, "-m", "memsteward", *args], capture_output=True, text=True,
                              timeout=120, env=env)  # a hang is a failure, not a stuck suite
        out, rc = proc.stdout + proc.stderr, proc.returncode
    else:
        result = CliRunner().invoke(main, args, env=_env())
        out, rc = result.output, result.exit_code
    assert rc == code, out
    assert "Traceback" not in out and "internal error" not in out, out
    assert fingerprint(db) == before
    _next_event_succeeds(db)


def test_read_only_store_is_bad_input(db: Path):
    """A store the user may not write (issue 17: exit 3 for a non-root user) is bad input. As root,
    the command runs as user nobody through setpriv, since root may write any file."""
    import shutil
    import stat
    import tempfile

    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: root can write a read-only file")
    work = Path(tempfile.mkdtemp(prefix="memsteward-ro-"))
    try:
        work.chmod(0o755)
        ro = work / "ro.db"
        shutil.copy(db, ro)
        ro.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        before = fingerprint(ro)
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
        for args in (["store", "serve", "--store", str(ro)],
                     ["repair", "--policy", POLICY, "--store", str(ro), "--event", VALID_EVENT]):
            env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTEWARD_")}
            proc = subprocess.run([*prefix, sys.executable, "-m", "memsteward", *args], capture_output=True,
                                  text=True, timeout=120, cwd=str(work), env={**env, "HOME": str(work)})
            out = proc.stdout + proc.stderr
            assert proc.returncode == 2 and "Traceback" not in out and str(ro) in out, out
        assert fingerprint(ro) == before
    finally:
        shutil.rmtree(work, ignore_errors=True)
