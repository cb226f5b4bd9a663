"""Outputs never clobber inputs (issue 25, item 1).

`store export --store mem.db -o mem.db` used to leave mem.db at 0 bytes (exit 2), and exporting
onto the store's -wal exited 0 with the WAL gone. Now every output path that resolves — by name,
through a symlink or as a hard link — to the store, a file beside it (-wal, -shm, -journal, a key
file), a key file named in the environment or an input of the same command is refused with exit 2
before anything is opened: the store is byte-identical and the next event succeeds.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.repair.artifacts import parse_store_document
from memsteward.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
POLICY = str(ROOT / "policies" / "tool-agent.yaml")


def _digest(paths: list[Path]) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else "-" for p in paths]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "mem.db"
    store = Store.open(str(path), create=True)
    store.import_snapshot(parse_store_document(json.loads((DATA / "store.json").read_text()), "store.json"))
    store.close()
    return path


def _files(db: Path) -> list[Path]:
    return [db, Path(f"{db}-wal"), Path(f"{db}-shm")]


def _refused(args: list[str], db: Path, env: dict[str, str] | None = None) -> str:
    before = _digest(_files(db))
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 2, result.output
    assert "refusing to write over" in result.output and "Traceback" not in result.output
    assert _digest(_files(db)) == before
    ok = CliRunner().invoke(main, ["repair", "--policy", POLICY, "--store", str(db), "--event",
                                   str(DATA / "event-migrate.json"), "--json"])
    assert ok.exit_code == 0, ok.output
    return result.output


@pytest.mark.parametrize("target", ["store", "wal", "shm", "journal", "symlink", "hardlink", "relative"])
def test_export_never_overwrites_the_store_or_its_files(db: Path, tmp_path: Path, target: str, monkeypatch):
    out = {"store": str(db), "wal": f"{db}-wal", "shm": f"{db}-shm", "journal": f"{db}-journal",
           "symlink": str(tmp_path / "link.json"), "hardlink": str(tmp_path / "hard.json"),
           "relative": "./mem.db"}[target]
    if target == "symlink":
        os.symlink(db, out)
    if target == "hardlink":
        os.link(db, out)
    monkeypatch.chdir(tmp_path)
    _refused(["store", "export", "--store", str(db), "-o", out], db)


def test_an_absent_wal_is_refused_too(db: Path):
    """Even when no -wal exists now, writing one would hand SQLite a foreign WAL."""
    assert not Path(f"{db}-wal").exists()
    _refused(["store", "export", "--store", str(db), "-o", f"{db}-wal"], db)


def test_a_key_file_named_in_the_environment_is_refused(db: Path, tmp_path: Path):
    key = tmp_path / "master.key"
    key.write_bytes(b"k" * 32)
    _refused(["store", "export", "--store", str(db), "-o", str(key)], db, env={"MEMSTEWARD_MASTER_KEY_FILE": str(key)})
    assert key.read_bytes() == b"k" * 32


def test_copy_never_creates_a_store_over_the_source_files(db: Path):
    _refused(["store", "copy", str(db), f"{db}-wal"], db)
    _refused(["store", "copy", str(db), str(db)], db)


def test_junit_never_overwrites_the_test_file(tmp_path: Path, db: Path):
    src = ROOT / "policies" / "tests" / "tool-agent_test.yaml"
    case = tmp_path / "copy_test.yaml"
    case.write_text(src.read_text().replace("../tool-agent.yaml", str(ROOT / "policies" / "tool-agent.yaml")))
    before = case.read_bytes()
    result = CliRunner().invoke(main, ["test", str(case), "--junit", str(case)])
    assert result.exit_code == 2 and "refusing to write over" in result.output, result.output
    assert case.read_bytes() == before


def test_an_unrelated_output_is_written_beside_and_renamed(db: Path, tmp_path: Path):
    out = tmp_path / "export.json"
    result = CliRunner().invoke(main, ["store", "export", "--store", str(db), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["artifacts"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".memsteward-")] == []
