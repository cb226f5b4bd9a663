"""`memsteward compare OLD NEW --replay STORE`: recorded events replayed under both policies.

The reference for the replay of the policy that really ran is the store itself: each recorded
plan says what was republished and withdrawn, and the replay must reproduce it (on a history
without deletions, where nothing was erased)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.store import Store

DATA = Path("engine/data/repair")
DEFAULT, ASSISTANT = "policies/default.yaml", "policies/assistant.yaml"


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def demo_store(tmp_path: Path, events: tuple[str, ...]) -> str:
    db = str(tmp_path / "mem.db")
    assert run("store", "import", "--store", db, str(DATA / "store.json")).exit_code == 0
    for name in events:
        r = run("repair", "--policy", DEFAULT, "--store", db, "--event", str(DATA / f"event-{name}.json"))
        assert r.exit_code == 0, r.output
    return db


def test_replay_reproduces_what_really_happened(tmp_path):
    db = demo_store(tmp_path, ("correct", "migrate"))
    store = Store.open(db)
    recorded = [store.event(i)["plan"] for i in (1, 2)]
    store.close()
    r = run("compare", DEFAULT, DEFAULT, "--replay", db, "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)["replay"]
    assert rep["events"] == 2 and rep["erased_at_start"] == []
    for plan, e in zip(recorded, rep["per_event"]):
        assert e["old"]["republished"] == sorted(plan["republished"])
        assert e["old"]["withdrawn"] == sorted(plan["withdrawn"])
        assert e["verdict"] is None and e["old"] == e["new"]


def test_demo_store_default_vs_assistant(tmp_path):
    db = demo_store(tmp_path, ("delete", "correct", "migrate"))
    before = Store.open(db).dump_state()
    r = run("compare", DEFAULT, ASSISTANT, "--replay", db, "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)["replay"]
    assert rep["events"] == 3 and rep["differing_events"] >= 1
    # assistant declares no caches or chains: on the correction of traj-lyon it withdraws what
    # default republished (the cache, the chain) — stricter, by hand from the two policies
    ev2 = rep["per_event"][1]
    assert ev2["event"]["type"] == "correct" and ev2["verdict"] == "stricter"
    assert {"cache-lyon", "chain-weather"} <= set(ev2["differences"]["republished"]["only_old"])
    assert rep["totals"]["republished"]["old"] > rep["totals"]["republished"]["new"]
    assert Store.open(db).dump_state() == before  # dry runs on copies: the store is untouched
    text = run("compare", DEFAULT, ASSISTANT, "--replay", db)
    assert "event 2 correct traj-lyon: stricter" in text.output and "replay totals:" in text.output


def test_a_policy_against_itself_shows_no_difference(tmp_path):
    db = demo_store(tmp_path, ("delete", "correct", "migrate"))
    # --allow-partial: the delete erased metadata some decisions read (listed, tested below)
    r = run("compare", ASSISTANT, ASSISTANT, "--replay", db, "--fail-on", "any", "--allow-partial", "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)["replay"]
    assert rep["differing_events"] == 0 and all(e["verdict"] is None for e in rep["per_event"])


def test_fail_on_looser_gates_on_the_replay(tmp_path):
    db = demo_store(tmp_path, ("correct",))
    r = run("compare", ASSISTANT, DEFAULT, "--replay", db, "--fail-on", "looser", "--json")
    assert r.exit_code == 1
    rep = json.loads(r.output)["replay"]
    assert rep["counts"]["looser"] == 1


def test_event_files_on_a_json_export():
    events = [arg for n in ("delete", "migrate") for arg in ("--events", str(DATA / f"event-{n}.json"))]
    r = run("compare", DEFAULT, ASSISTANT, "--replay", str(DATA / "store.json"), *events, "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)["replay"]
    assert [e["event"]["type"] for e in rep["per_event"]] == ["delete", "migrate"]


@pytest.mark.parametrize("args, needle", [
    (["--replay", str(DATA / "store.json")], "records no completed events"),
    (["--replay", "no-such.db"], "store not found"),
    (["--replay", str(DATA / "store.json"), "--events", str(DATA / "tasks.json")], "tasks.json"),
])
def test_bad_replay_input_is_exit_2(args, needle):
    r = run("compare", DEFAULT, ASSISTANT, *args)
    assert r.exit_code == 2 and needle in r.output and "Traceback" not in r.output


def test_decisions_on_erased_metadata_are_named_and_gate_unless_allowed(tmp_path):
    """Issue 31: a delete erases every version of cache-menu and sum-digest, metadata included, so a
    replay decides on them with defaults (age_days 0, no cost/value): such decisions are listed
    exactly (event, policy, artifact, the fields read), and `--fail-on` exits 1 unless
    `--allow-partial` (on the previous code the same command exits 0 with nothing said)."""
    db = demo_store(tmp_path, ("delete",))
    r = run("compare", DEFAULT, DEFAULT, "--replay", db, "--fail-on", "looser", "--json")
    assert r.exit_code == 1, r.output
    rep = json.loads(r.stdout)["replay"]
    partial = {(p["event"], p["policy"], p["artifact"]): p["reads"] for p in rep["partial"]}
    assert partial[(1, "old", "cache-menu")] == ["age_days", "cost", "value"]
    assert {a for _e, _p, a in partial} == {"cache-menu", "sum-digest"}
    ok = run("compare", DEFAULT, DEFAULT, "--replay", db, "--fail-on", "looser", "--allow-partial")
    assert ok.exit_code == 0, ok.output
    assert "cannot replay: event 1, old policy's decision on cache-menu reads meta age_days, cost, value" in ok.output
    assert run("compare", DEFAULT, DEFAULT, "--replay", db).exit_code == 0  # no gate, no failure
