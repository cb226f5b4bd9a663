"""Strict event inputs (issue 25, item 7).

* every write path shares the 1 MiB cap: a 5 MB correct replacement was accepted (only `store put`
  checked the cap); a store document artifact over the cap is refused too;
* `migrate` refuses rename cycles, a root that is not a tool interface (a summary), and renames or
  `arg_renames` of tools that are in neither interface.

Each is refused with exit 2 naming the field, the store unchanged, and the next event succeeds.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.repair.artifacts import parse_store_document
from memsteward.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
POLICY = str(ROOT / "policies" / "tool-agent.yaml")
MIGRATE = json.loads((DATA / "event-migrate.json").read_text())
CORRECT = json.loads((DATA / "event-correct.json").read_text())


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    store = Store.open(str(path), create=True)
    store.import_snapshot(parse_store_document(json.loads((DATA / "store.json").read_text()), "store.json"))
    store.close()
    return path


def _digest(db: Path) -> str:
    wal = Path(f"{db}-wal")
    return hashlib.sha256(db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")).hexdigest()


def _refused(db: Path, tmp_path: Path, event: dict, field: str) -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    before = _digest(db)
    result = CliRunner().invoke(main, ["repair", "--policy", POLICY, "--store", str(db), "--event", str(path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and f"[{field}" in result.output, result.output
    assert _digest(db) == before
    ok = CliRunner().invoke(main, ["repair", "--policy", POLICY, "--store", str(db), "--event",
                                   str(DATA / "event-migrate.json")])
    assert ok.exit_code == 0, ok.output
    return result.output


def test_a_5mb_replacement_is_refused(db: Path, tmp_path: Path):
    event = copy.deepcopy(CORRECT)
    event["replacements"][0]["content"]["result"] = "x" * (5 << 20)
    out = _refused(db, tmp_path, event, "replacements[0].content")
    assert "1048576-byte limit" in out


def test_an_oversized_artifact_in_a_store_document_is_refused(tmp_path: Path):
    doc = {"artifacts": [{"id": "big", "kind": "record", "content": {"text": "y" * (1 << 20)}}], "edges": []}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    result = CliRunner().invoke(main, ["store", "import", "--store", str(tmp_path / "new.db"), str(path)])
    assert result.exit_code == 2 and "byte limit" in result.output, result.output
    assert not (tmp_path / "new.db").exists()


@pytest.mark.parametrize("name, change, field", [
    ("rename-cycle", lambda e: e["interface"].update(renames={"forecast": "get_forecast", "get_forecast": "forecast"}),
     "interface.renames"),
    ("self-rename", lambda e: e["interface"].update(renames={"forecast": "forecast"}), "interface.renames"),
    ("arg-rename-cycle", lambda e: e["interface"]["arg_renames"].update(get_forecast={"location": "city", "city": "location"}),
     "interface.arg_renames.get_forecast"),
    ("unknown-renamed-tool", lambda e: e["interface"].update(renames={"no_such_tool": "get_forecast"}),
     "interface.renames.no_such_tool"),
    ("rename-to-missing-tool", lambda e: e["interface"].update(renames={"forecast": "nowhere"}),
     "interface.renames.forecast"),
    ("arg-renames-unknown-tool", lambda e: e["interface"].update(arg_renames={"ghost": {"a": "b"}}),
     "interface.arg_renames.ghost"),
    ("summary-root", lambda e: e.update(roots=["sum-trips"]), "interface"),
])
def test_migrate_refuses(db: Path, tmp_path: Path, name: str, change, field: str):
    event = copy.deepcopy(MIGRATE)
    change(event)
    _refused(db, tmp_path, event, field)
