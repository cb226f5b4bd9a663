"""`memsteward repair` / `memsteward recover` on the bundled store: JSON plan fields, dry run, selectors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
POLICY = str(ROOT / "policies" / "default.yaml")
FIELDS = {"event", "cascade", "descendants", "barrier", "tradeoff", "candidates", "selection", "objective",
          "executed", "republished", "withdrawn"}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    assert CliRunner().invoke(main, ["store", "import", "--store", str(path), str(DATA / "store.json")]).exit_code == 0
    return path


def _repair(store: Path | str, event: str, *extra: str) -> dict:
    r = CliRunner().invoke(main, ["repair", "--policy", POLICY, "--store", str(store),
                                  "--event", str(DATA / f"event-{event}.json"), "--json", *extra])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def _all_ids_are_strings(plan: dict) -> None:
    for key in ("cascade", "descendants", "barrier", "selection", "republished", "withdrawn"):
        assert all(isinstance(x, str) for x in plan[key]), key
    for c in plan["candidates"]:
        assert isinstance(c["id"], str) and all(isinstance(p, str) for p in c["prerequisites"])
        assert {"id", "mode", "prerequisites", "executable", "value", "cost"} <= set(c)


@pytest.mark.parametrize("event", ["delete", "correct", "migrate"])
def test_repair_json_plan(db: Path, event: str):
    plan = _repair(db, event)
    assert FIELDS <= set(plan)
    _all_ids_are_strings(plan)
    assert plan["barrier"] == plan["cascade"]
    assert set(plan["descendants"]) == set(plan["cascade"]) - set(plan["event"]["roots"])
    assert set(plan["republished"]) <= set(plan["selection"])
    served = {a.id: a.version for a in Store.open(str(db)).serve()}
    for i in plan["cascade"]:
        assert served.get(i) != plan["base_versions"][i]  # Leak = 0


def test_dry_run_does_not_touch_the_store(db: Path):
    before = Store.open(str(db)).dump_state()
    plan = _repair(db, "delete", "--dry-run")
    assert plan["dry_run"] is True and plan["republished"]
    assert Store.open(str(db)).dump_state() == before


@pytest.mark.parametrize("selector", ["mincut", "greedy", "repair_all", "remove_all", "no_action"])
def test_selectors(selector: str):
    plan = _repair(DATA / "store.json", "correct", "--selector", selector)
    if selector in ("remove_all", "no_action"):
        assert plan["selection"] == [] and plan["republished"] == []
    if selector == "no_action":
        assert plan["barrier"] == []


def test_backends_agree_on_bundled_events():
    for event in ("delete", "correct", "migrate"):
        a = _repair(DATA / "store.json", event, "--backend", "networkx", "--dry-run")
        b = _repair(DATA / "store.json", event, "--backend", "ortools", "--dry-run")
        assert a["selection"] == b["selection"] and a["objective_exact"] == b["objective_exact"]


def test_text_output_and_recover_noop(db: Path):
    r = CliRunner().invoke(main, ["repair", "--policy", POLICY, "--store", str(db),
                                  "--event", str(DATA / "event-migrate.json")])
    assert r.exit_code == 0 and "barrier" in r.output and "republished" in r.output
    r = CliRunner().invoke(main, ["recover", "--store", str(db)])
    assert r.exit_code == 0 and "nothing to recover" in r.output


def test_run_repair_demo_shows_three_events():
    from memsteward.repair.demo import run_repair_demo

    lines: list[str] = []
    run_repair_demo(lines.append)
    text = "\n".join(lines)
    for word in ("delete", "correct", "migrate", "barrier", "republished", "Leak%"):
        assert word in text


def test_tradeoff_and_budget_overrides():
    zero = _repair(DATA / "store.json", "delete", "--tradeoff", "0", "--dry-run")
    high = _repair(DATA / "store.json", "delete", "--tradeoff", "100", "--dry-run")
    assert zero["tradeoff"] == 0.0 and high["selection"] == []
    assert set(zero["selection"]) >= {"sum-profile", "neural-prefs", "prompt-chef"}
    capped = _repair(DATA / "store.json", "delete", "--budget", "3", "--dry-run")
    cost = {c["id"]: c["cost"] for c in capped["candidates"]}
    assert capped["budget"] == 3.0 and sum(cost[i] for i in capped["selection"]) <= 3.0
    assert capped["optimal"] is True and capped["selection_method"] == "budget/enumeration"


def test_mincut_beats_greedy_on_the_bundled_shared_prerequisite():
    # cache-household (p < 0) is worth repairing only for both of its dependents together
    mc = _repair(DATA / "store.json", "delete", "--dry-run")
    gr = _repair(DATA / "store.json", "delete", "--dry-run", "--selector", "greedy")
    assert {"cache-household", "sum-visit", "sum-weekend-plans"} <= set(mc["selection"])
    assert "cache-household" not in gr["selection"]
    assert mc["objective"] > gr["objective"]
