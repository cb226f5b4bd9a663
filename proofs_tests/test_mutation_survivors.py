"""Tests that kill mutants which survived `make mutate` (bench/MUTATION.md lists each one).

Each test names the surviving mutant it kills; its expected values are written by hand.
"""

from __future__ import annotations

from memsteward.clearance.evaluators.table import TableEvaluator
from memsteward.clearance.game import Game, Memory, Task
from memsteward.policy.compare import compare
from memsteward.policy.model import Policy


def test_compare_reports_one_based_rule_numbers():
    """compare.py `rule + 1` → `rule / 1` survived: nothing checked the reported rule numbers."""
    validation = [{"mode": "recompute", "oracles": [{"oracle": "replay"}]}]
    old = Policy.model_validate({"kinds": {"cache": {"replayable": True}, "record": {}},
                                 "modes": [{"when": {"kind": "record"}, "mode": "remove"},
                                           {"when": {}, "mode": "recompute"}], "validation": validation})
    new = Policy.model_validate({"kinds": {"cache": {"replayable": True}, "record": {}},
                                 "modes": [{"when": {}, "mode": "remove"}], "validation": validation})
    (d,) = compare(old, new)
    assert (d.verdict, d.cell.kind, d.old.rule, d.new.rule) == ("stricter", "cache", 2, 1)
    assert d.as_dict()["old"]["rule"] == 2 and isinstance(d.as_dict()["old"]["rule"], int)


def test_cost_of_counts_only_coalitions_not_yet_evaluated():
    """game.py `wanted − seen` → `wanted ^ seen` survived: the budget check over-counted calls."""
    ids = ("a", "b", "c")
    values = {frozenset(s): 0.0 for s in ([], ["a"], ["b"], ["c"], ["a", "b"])}
    game = Game(Task("q", "r", tuple(Memory(i) for i in ids)), TableEvaluator(values), trials=2, call_budget=8)
    game.values([["a"], ["c"]])  # 2 coalitions × 2 trials = 4 calls spent
    assert game.cost_of([["b"]]) == 2  # only {b} is new: 2 trials
    assert game.cost_of([["a"], ["b"]]) == 2
    assert game.affordable([["b"], ["a", "b"]])  # 4 + 4 ≤ 8
    assert not game.affordable([["b"], ["a", "b"], []])  # 4 + 6 > 8


def test_a_remove_decision_carries_no_oracles():
    """compare.py `mode != "remove"` → `mode <= "remove"` survived: a validation rule written for
    mode remove (nothing is built, so nothing is validated) must not make two policies differ."""
    base = {"kinds": {"record": {}}, "modes": [{"when": {}, "mode": "remove"}]}
    with_rule = Policy.model_validate({**base, "validation": [{"mode": "remove", "oracles": [{"oracle": "schema"}]}]})
    assert compare(Policy.model_validate(base), with_rule) == []


def test_differences_are_immutable_values():
    """compare.py `@dataclass(frozen=True)` → `frozen=False` survived: plans and their parts are values."""
    import dataclasses

    import pytest

    validation = [{"mode": "recompute", "oracles": [{"oracle": "replay"}]}]
    old = Policy.model_validate({"kinds": {"cache": {"replayable": True}}, "modes": [{"when": {}, "mode": "recompute"}],
                                 "validation": validation})
    new = Policy.model_validate({"kinds": {"cache": {"replayable": True}}, "modes": [{"when": {}, "mode": "remove"}]})
    (d,) = compare(old, new)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.verdict = "looser"  # type: ignore[misc]


def test_exact_shapley_cost_finding_only_past_sixteen_memories(tmp_path):
    """analysis.py `if K > 20 and exact == "always"` → `if not K > 20 and …` survived: no test
    checked that the finding is absent where it does not apply (the bound is now K ≤ 16)."""
    import yaml

    from memsteward.policy.analysis import analyze
    from memsteward.policy.loader import load_policy_source

    def costs(path) -> list:
        return [f for f in analyze(load_policy_source(path)) if f.code == "cost"]

    assert costs("policies/default.yaml") == []
    for k, expected in ((16, 0), (17, 1)):
        doc = yaml.safe_load(open("policies/default.yaml").read())
        doc.setdefault("clearance", {}).update({"retrieval_budget": k, "exact": "always"})
        p = tmp_path / f"k{k}.yaml"
        p.write_text(yaml.safe_dump(doc))
        found = costs(str(p))
        assert len(found) == expected and all("2^K" in f.message for f in found), found


def test_no_action_selector_given_at_run_time_changes_nothing():
    """execute.py `selector == "no_action"` → `is` survived (CPython interns the literal): a
    selector name built at run time (as from a config file) must still be recognised."""
    from memsteward.policy.loader import load_policy
    from memsteward.repair.events import load_event
    from memsteward.repair.execute import run_event
    from memsteward.store import Store

    store = Store.open("engine/data/repair/store.json")
    before = store.dump_state()
    selector = "".join(["no_", "action"])  # equal to, but not the same object as, the literal
    plan = run_event(store, load_policy("policies/default.yaml"),
                     load_event("engine/data/repair/event-delete.json", store.snapshot()), selector, "networkx")
    assert plan.status == "done" and plan.republished == () and plan.withdrawn == ()
    assert store.dump_state() == before and store.event() is None


def test_migrated_chain_calls_the_new_interface():
    """execute.py `if iface is None and p in available …` → `if not (…)` survived: the migrate
    demo's repaired chain was never compared with its expected calls (written by hand here)."""
    from memsteward.policy.loader import load_policy
    from memsteward.repair.events import load_event
    from memsteward.repair.execute import run_event
    from memsteward.store import Store

    store = Store.open("engine/data/repair/store.json")
    plan = run_event(store, load_policy("policies/default.yaml"),
                     load_event("engine/data/repair/event-migrate.json", store.snapshot()), "mincut", "networkx")
    assert "chain-weather" in plan.republished
    assert store.get("chain-weather").content["calls"] == [
        {"tool": "get_forecast", "args": {"city": "Lyon", "days": 3}},
        {"tool": "get_forecast", "args": {"city": "Paris", "days": 2}}]


def test_migrating_one_api_keeps_the_other_apis_tools_in_a_chain():
    """execute.py `if iface is None and p in available …` → `if not iface is None and …` survived:
    a chain calling two APIs, one migrated, must keep the untouched API's tools (its interface
    comes from the stored parent, not from the event)."""
    from memsteward.policy.loader import load_policy
    from memsteward.repair.artifacts import parse_store_document
    from memsteward.repair.events import parse_event
    from memsteward.repair.execute import run_event
    from memsteward.store import Store

    tools = lambda name, arg: {name: {"params": {arg: "string"}, "required": [arg]}}  # noqa: E731
    store = Store()
    store.import_snapshot(parse_store_document({"artifacts": [
        {"id": "api-w", "kind": "record", "content": {"name": "w", "version": 1, "tools": tools("forecast", "location")}},
        {"id": "api-s", "kind": "record", "content": {"name": "s", "version": 1, "tools": tools("web_search", "q")}},
        {"id": "chain", "kind": "skill", "arch": "chain", "content": {"goal": "g", "calls": [
            {"tool": "forecast", "args": {"location": "Lyon"}}, {"tool": "web_search", "args": {"q": "museum"}}]}}],
        "edges": [{"src": "api-w", "dst": "chain", "type": "influence"},
                  {"src": "api-s", "dst": "chain", "type": "influence"}]}, "<test>"))
    event = {"type": "migrate", "roots": ["api-w"], "interface": {
        "name": "w", "version": 2, "tools": tools("get_forecast", "city"), "renames": {"forecast": "get_forecast"},
        "arg_renames": {"get_forecast": {"location": "city"}}}}
    plan = run_event(store, load_policy("policies/default.yaml"), parse_event(event, store.snapshot()),
                     "mincut", "networkx")
    assert plan.republished == ("chain",)
    assert store.get("chain").content["calls"] == [{"tool": "get_forecast", "args": {"city": "Lyon"}},
                                                   {"tool": "web_search", "args": {"q": "museum"}}]
