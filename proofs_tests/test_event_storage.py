"""What an event keeps in the ``events`` table (issue 25): a reference, not a copy.

A ``correct`` event's replacement text stayed in ``events.event`` and ``events.plan`` forever, pinned by
the audit chain, after a later delete erased the version it created. The barrier now stores each
replacement as a reference to the version it staged (id, kind, version, content digest); ``recover``
reads the content from that version.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from memsteward.cli import main
from memsteward.policy.loader import load_policy_source
from memsteward.repair.events import parse_event
from memsteward.repair.execute import barrier, recover
from memsteward.repair.plan import compute_plan
from memsteward.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
POLICY = str(ROOT / "policies" / "default.yaml")
SECRET = "The user moved to 17 Rue Oberkampf, flat 4B, door code 4471."


def _correct(root: str = "p2") -> dict:
    return {"type": "correct", "roots": [root], "replacements": [
        {"id": root, "kind": "record", "content": {"text": SECRET, "label": "home"}, "meta": {"by": "user"}}]}


def _events_text(db: str) -> str:
    con = sqlite3.connect(db)
    try:
        return json.dumps([list(r) for r in con.execute("SELECT event, plan FROM events")])
    finally:
        con.close()


def _imported(tmp_path: Path) -> str:
    db = str(tmp_path / "s.db")
    assert CliRunner().invoke(main, ["store", "import", "--store", db, str(DATA / "store.json")]).exit_code == 0
    return db


def test_replacement_text_is_not_copied_into_events(tmp_path: Path):
    db = _imported(tmp_path)
    ev = tmp_path / "correct.json"
    ev.write_text(json.dumps(_correct()))
    r = CliRunner().invoke(main, ["repair", "--policy", POLICY, "--store", db, "--event", str(ev)])
    assert r.exit_code == 0, r.output
    assert "Oberkampf" not in _events_text(db)
    store = Store.open(db)
    assert store.get("p2").content["text"] == SECRET  # the version the event created holds it
    assert CliRunner().invoke(main, ["audit", "--store", db, "--check"]).exit_code == 0


def test_recover_reads_the_replacement_from_its_staged_version(tmp_path: Path):
    db = _imported(tmp_path)
    store = Store.open(db)
    policy = load_policy_source(POLICY).policy
    plan = compute_plan(policy, store, parse_event(_correct(), store.snapshot()))
    barrier(store, policy, plan)  # a crash right after the barrier
    assert "Oberkampf" not in _events_text(db)
    store.close()
    store = Store.open(db)
    assert recover(store) is not None
    got = store.get("p2")
    assert got.state in ("servable", "republished") and got.content["text"] == SECRET and got.meta == {"by": "user"}
    assert "Oberkampf" not in _events_text(db)


MARKER = "tool_ref_4471_oberkampf"  # a tool name only the migrate event's interface holds


def _migrate() -> dict:
    doc = json.loads((DATA / "event-migrate.json").read_text())
    doc["interface"]["tools"][MARKER] = {"params": {"city": "string"}, "required": ["city"]}
    return doc


def test_migrate_interface_is_not_copied_into_events(tmp_path: Path):
    """Issue 25: a migrate event's interface κ_e was copied into ``events.event`` and ``events.plan``
    (pinned by the audit chain); it is kept as a reference to the root version its barrier staged."""
    db = _imported(tmp_path)
    ev = tmp_path / "migrate.json"
    ev.write_text(json.dumps(_migrate()))
    r = CliRunner().invoke(main, ["repair", "--policy", POLICY, "--store", db, "--event", str(ev)])
    assert r.exit_code == 0, r.output
    assert MARKER not in _events_text(db)
    store = Store.open(db)
    assert MARKER in store.get("api-weather-v1").content["tools"]  # the version the event created holds it
    stored = store.event()["event"]
    assert "interface" not in stored and stored["interface_refs"]["api-weather-v1"]["stored_version"] == 2
    assert CliRunner().invoke(main, ["audit", "--store", db, "--check"]).exit_code == 0


def test_recover_reads_the_interface_from_its_staged_version(tmp_path: Path):
    """A migrate interrupted after its barrier completes from the interface its staged root version holds."""
    db = _imported(tmp_path)
    done = _imported(tmp_path / "ref") if (tmp_path / "ref").mkdir() is None else ""
    ev = tmp_path / "migrate.json"
    ev.write_text(json.dumps(_migrate()))
    r = CliRunner().invoke(main, ["repair", "--policy", POLICY, "--store", done, "--event", str(ev)])
    assert r.exit_code == 0, r.output
    store = Store.open(db)
    policy = load_policy_source(POLICY).policy
    plan = compute_plan(policy, store, parse_event(_migrate(), store.snapshot()))
    barrier(store, policy, plan)  # a crash right after the barrier
    assert MARKER not in _events_text(db)
    store.close()
    store = Store.open(db)
    assert recover(store) is not None
    assert MARKER not in _events_text(db)
    want = {a.id: a.content for a in Store.open(done).serve()}
    assert {a.id: a.content for a in store.serve()} == want  # as an uninterrupted run


def test_references_hold_the_stores_keyed_digest(tmp_path: Path):
    """Issue 25: a reference kept the plain SHA-256 of the replacement (and interface), so a short
    replacement came back from guesses. On a sealed store it holds the store's keyed digest (HMAC
    under its index key), as tombstones and version rows do; the plain SHA-256 is nowhere in ``events``."""
    from memsteward.repair.writes import content_digest

    db = _imported(tmp_path)
    for name, doc in (("correct", _correct()), ("migrate", _migrate())):
        ev = tmp_path / f"{name}.json"
        ev.write_text(json.dumps(doc))
        r = CliRunner().invoke(main, ["repair", "--policy", POLICY, "--store", db, "--event", str(ev)])
        assert r.exit_code == 0, r.output
    store = Store.open(db)
    assert store.sealed
    replacement, interface = _correct()["replacements"][0]["content"], _migrate()["interface"]
    refs = [store.event(1)["event"]["replacements"][0], store.event(2)["event"]["interface_refs"]["api-weather-v1"]]
    for ref, content in zip(refs, (replacement, interface), strict=True):
        assert ref["sha256"] == store.digest_of(content) != content_digest(content)
        assert content_digest(content) not in _events_text(db)
    assert CliRunner().invoke(main, ["audit", "--store", db, "--check"]).exit_code == 0


def _stored_policy_chars(db: str) -> int:
    """Characters of policy text the store holds: inline in ``events`` plus the ``policies`` table."""
    con = sqlite3.connect(db)
    try:
        (inline,) = con.execute("SELECT COALESCE(SUM(LENGTH(policy)), 0) FROM events").fetchone()
        has = con.execute("SELECT 1 FROM sqlite_master WHERE name = 'policies'").fetchone()
        (table,) = con.execute("SELECT COALESCE(SUM(LENGTH(policy)), 0) FROM policies").fetchone() if has else (0,)
        return int(inline) + int(table)
    finally:
        con.close()


def test_a_policy_is_stored_once_by_digest_never_per_event(tmp_path: Path):
    """Issue 25: one rule aliased hundreds of times was expanded into ``events.policy`` with every event
    (600 MB for a 1-artifact delete before the 1 MiB cap; still the policy's size per event after it).
    The policy is stored once, under its SHA-256 (the digest the barrier's audit row pins): three
    events under it store one copy; ``audit --check`` still verifies every event's policy."""
    import yaml

    doc = yaml.safe_load(Path(POLICY).read_text())
    rule = {"when": {"kind": "summary"}, "mode": "remove", "description": "x" * 1000}
    text = yaml.safe_dump({k: v for k, v in doc.items() if k != "modes"}) + "modes:\n  - &r " + json.dumps(rule) \
        + "\n" + "  - *r\n" * 299 + "".join(f"  - {json.dumps(m)}\n" for m in doc["modes"])
    policy = tmp_path / "aliased.yaml"
    policy.write_text(text)
    db = _imported(tmp_path)
    for k, root in enumerate(("p1", "p3", "p5")):
        ev = tmp_path / f"delete-{k}.json"
        ev.write_text(json.dumps({"type": "delete", "roots": [root]}))
        r = CliRunner().invoke(main, ["repair", "--policy", str(policy), "--store", db, "--event", str(ev)])
        assert r.exit_code == 0, r.output
    one = len(json.dumps(Store.open(db).event(1)["policy"], sort_keys=True, separators=(",", ":")))
    assert one > 300_000  # the expanded aliases
    assert _stored_policy_chars(db) < one + 1000, (_stored_policy_chars(db), one)
    store = Store.open(db)
    assert [store.event(i)["policy"] for i in (1, 2, 3)] == [store.event(1)["policy"]] * 3
    assert CliRunner().invoke(main, ["audit", "--store", db, "--check"]).exit_code == 0
