"""Bad input never changes the store: unknown artifacts in events, edges to missing nodes,
duplicate ids, malformed files … each gives one clear error line naming the file (and the
line/field where possible) and exit code 2; the store is compared before and after."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.policy.loader import load_policy_source
from memsteward.repair.events import parse_event
from memsteward.repair.execute import policy_document, root_successors
from memsteward.repair.plan import compute_plan
from memsteward.store import Store
from memsteward.store.api import BarrierSpec

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
POLICY = str(ROOT / "policies" / "default.yaml")
STORE_DOC = json.loads((DATA / "store.json").read_text())


@pytest.fixture
def db(store_at) -> str:
    path = store_at("store")  # a SQLite file or a PostgreSQL schema: the suite runs on both
    store = Store.open(path, create=True)
    store.import_snapshot(Store.open(str(DATA / "store.json")).snapshot())
    store.close()
    return path


def _state(path: str) -> dict:
    s = Store.open(str(path))
    try:
        return s.dump_state()
    finally:
        s.close()


def _run(args: list[str]):
    return CliRunner().invoke(main, args)


def _assert_one_error(result, file_name: str, field: str | None = None, line: int | None = None) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith(file_name) and ": error: " in lines[0], lines[0]
    if field:
        assert f"[{field}]" in lines[0], lines[0]
    if line is not None:
        assert lines[0].startswith(f"{file_name}:{line}:"), lines[0]


BAD_EVENTS = {
    "unknown-root": ('{"type": "delete", "roots": ["nope"]}', "roots[0]", 1),
    "unknown-second-root": ('{"type": "delete",\n "roots": ["p1",\n  "ghost"]}', "roots[1]", 3),
    "malformed": ('{"type": "delete", "roots": ["p1",]}', None, 1),
    "not-an-object": ('["p1"]', None, None),
    "bad-type": ('{"type": "purge", "roots": ["p1"]}', "type", None),
    "empty-roots": ('{"type": "delete", "roots": []}', "roots", None),
    "roots-not-list": ('{"type": "delete", "roots": "p1"}', "roots", None),
    "duplicate-root": ('{"type": "delete", "roots": ["p1", "p1"]}', "roots", None),
    "unknown-field": ('{"type": "delete", "roots": ["p1"], "why": 1}', "why", None),
    "correct-without-replacements": ('{"type": "correct", "roots": ["p1"]}', "replacements", None),
    "replacement-not-root": ('{"type": "correct", "roots": ["p1"], "replacements": '
                             '[{"id": "p2", "kind": "record", "content": "x"}]}', "replacements[0].id", None),
    "replacement-bad-kind": ('{"type": "correct", "roots": ["p1"], "replacements": '
                             '[{"id": "p1", "kind": "memo", "content": "x"}]}', "replacements[0].kind", None),
    "replacement-changes-kind": ('{"type": "correct", "roots": ["p1"], "replacements": '
                                 '[{"id": "p1", "kind": "summary", "content": "x"}]}', "replacements[0].kind", None),
    "migrate-without-interface": ('{"type": "migrate", "roots": ["api-weather-v1"]}', "interface", None),
    "interface-on-delete": ('{"type": "delete", "roots": ["p1"], "interface": {}}', "interface", None),
    "multi-root-interface-keys": ('{"type": "migrate", "roots": ["api-weather-v1", "api-search-v1"], '
                                  '"interface": {"tools": {}}}', "interface", None),
}


@pytest.mark.parametrize("name", sorted(BAD_EVENTS))
def test_bad_event_leaves_store_unchanged(db: str, tmp_path: Path, name: str):
    text, field, line = BAD_EVENTS[name]
    ev = tmp_path / f"{name}.json"
    ev.write_text(text)
    before = _state(db)
    result = _run(["repair", "--policy", POLICY, "--store", str(db), "--event", str(ev), "--json"])
    _assert_one_error(result, str(ev), field, line)
    assert _state(db) == before


def test_missing_files_are_bad_input(db: str, tmp_path: Path):
    ev = tmp_path / "e.json"
    ev.write_text('{"type": "delete", "roots": ["p1"]}')
    before = _state(db)
    _assert_one_error(_run(["repair", "--policy", POLICY, "--store", str(db), "--event", str(tmp_path / "x.json")]),
                      str(tmp_path / "x.json"))
    _assert_one_error(_run(["repair", "--policy", str(tmp_path / "p.yaml"), "--store", str(db), "--event", str(ev)]),
                      str(tmp_path / "p.yaml"))
    _assert_one_error(_run(["repair", "--policy", POLICY, "--store", str(tmp_path / "none.db"), "--event", str(ev)]),
                      str(tmp_path / "none.db"))
    junk = tmp_path / "junk.db"
    junk.write_text("not a database")
    _assert_one_error(_run(["repair", "--policy", POLICY, "--store", str(junk), "--event", str(ev)]), str(junk))
    assert _state(db) == before
    assert not (tmp_path / "none.db").exists()


def _doc_with(mutate) -> str:
    doc = json.loads(json.dumps(STORE_DOC))
    mutate(doc)
    return json.dumps(doc, indent=1)


BAD_IMPORTS = {
    "duplicate-id": (lambda d: d["artifacts"].append(dict(d["artifacts"][3])), "artifacts[32].id"),
    "edge-to-missing": (lambda d: d["edges"].append({"src": "p1", "dst": "ghost", "type": "influence"}),
                        "edges[47].dst"),
    "edge-from-missing": (lambda d: d["edges"].insert(0, {"src": "ghost", "dst": "p1"}), "edges[0].src"),
    "bad-edge-type": (lambda d: d["edges"][0].update(type="causal"), "edges[0].type"),
    "bad-kind": (lambda d: d["artifacts"][0].update(kind="no-te!"), "artifacts[0].kind"),  # not an identifier
    "skill-without-arch": (lambda d: d["artifacts"][-1].update(kind="skill"), "artifacts[31].arch"),
    "extra-field": (lambda d: d["artifacts"][0].update(owner="me"), "artifacts[0].owner"),
    "meta-not-object": (lambda d: d["artifacts"][0].update(meta=[1]), "artifacts[0].meta"),
    "bad-version": (lambda d: d["artifacts"][0].update(version=0), "artifacts[0].version"),
    "missing-id": (lambda d: d["artifacts"][0].pop("id"), "artifacts[0].id"),
}


@pytest.mark.parametrize("name", sorted(BAD_IMPORTS))
def test_bad_import_leaves_store_unchanged(db: str, tmp_path: Path, name: str):
    mutate, field = BAD_IMPORTS[name]
    doc = tmp_path / f"{name}.json"
    doc.write_text(_doc_with(mutate))
    before = _state(db)
    _assert_one_error(_run(["store", "import", "--store", str(db), str(doc)]), str(doc), field)
    assert _state(db) == before
    # the same document given directly as --store is rejected the same way
    ev = tmp_path / "e.json"
    ev.write_text('{"type": "delete", "roots": ["p1"]}')
    _assert_one_error(_run(["repair", "--policy", POLICY, "--store", str(doc), "--event", str(ev)]), str(doc), field)


def test_duplicate_id_with_existing_store_and_malformed_import(db: str, tmp_path: Path):
    before = _state(db)
    again = tmp_path / "again.json"
    shutil.copy(DATA / "store.json", again)
    _assert_one_error(_run(["store", "import", "--store", str(db), str(again)]), str(again))
    bad = tmp_path / "bad.json"
    bad.write_text('{"artifacts": [\n  {"id": "x", "kind": "record"},\n  oops]}')
    _assert_one_error(_run(["store", "import", "--store", str(db), str(bad)]), str(bad), None, 3)
    assert _state(db) == before


def test_duplicate_id_line_is_reported(tmp_path: Path):
    doc = tmp_path / "dup.json"
    doc.write_text('{"artifacts": [\n {"id": "a", "kind": "record"},\n {"id": "a", "kind": "record"}\n]}')
    _assert_one_error(_run(["store", "import", "--store", str(tmp_path / "n.db"), str(doc)]), str(doc),
                      "artifacts[1].id", 3)


def test_erased_root_cannot_be_deleted_twice(db: str, tmp_path: Path):
    ev = tmp_path / "e.json"
    ev.write_text('{"type": "delete", "roots": ["p1"]}')
    assert _run(["repair", "--policy", POLICY, "--store", str(db), "--event", str(ev)]).exit_code == 0
    before = _state(db)
    _assert_one_error(_run(["repair", "--policy", POLICY, "--store", str(db), "--event", str(ev)]), str(ev), "roots[0]")
    assert _state(db) == before


def test_unfinished_event_blocks_new_events(db: str, tmp_path: Path):
    store = Store.open(str(db))
    policy = load_policy_source(POLICY).policy
    event = parse_event({"type": "delete", "roots": ["p1"]}, store.snapshot())
    plan = compute_plan(policy, store.snapshot(), event)
    store.barrier(BarrierSpec(plan.to_json(), policy_document(policy), root_successors(event, store.snapshot())))
    store.close()
    before = _state(db)
    ev = tmp_path / "e.json"
    ev.write_text('{"type": "delete", "roots": ["p3"]}')
    result = _run(["repair", "--policy", POLICY, "--store", str(db), "--event", str(ev)])
    _assert_one_error(result, str(db))
    assert "memsteward recover" in result.output
    assert _state(db) == before
    assert _run(["recover", "--store", str(db)]).exit_code == 0
    assert _run(["repair", "--policy", POLICY, "--store", str(db), "--event", str(ev)]).exit_code == 0
