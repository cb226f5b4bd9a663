"""``memsteward compare`` (``compare.py``), branch by branch, with hand-worked expectations.

Written for issue 33's targeted mutation runs (bench/mutation-targeted-clearance.md): every
classification rule of the module docstring on its own and combined, every entry of the oracle
direction table raised and lowered, the settings walk, and the Z3 regions of ``compare`` at the
exact thresholds of strict and non-strict bounds (checked against the Python semantics).
"""

from __future__ import annotations

import json

import pytest

from memsteward.policy.compare import (
    ORACLE_DIRECTION,
    Decision,
    Difference,
    compare,
    decision,
    oracle_changes,
    setting_verdict,
    settings_diff,
    verdict,
)
from memsteward.policy.domain import Cell, firing_rule
from memsteward.policy.model import Policy


def settings_of(*specs: dict) -> frozenset[str]:
    return frozenset(json.dumps(s, sort_keys=True) for s in specs)


def d(mode: str, oracles=(), *specs: dict, rule: int | None = 1) -> Decision:
    return Decision(mode, frozenset(oracles), rule, settings_of(*specs))


def policy(modes: list, validation: list | None = None, kinds: dict | None = None) -> Policy:
    return Policy.model_validate({"kinds": kinds or {"record": {}, "summary": {"replayable": False}},
                                  "modes": modes, "validation": validation or []})


# ------------------------------------------------------------------ decisions


def test_describe_names_the_mode_the_sorted_oracles_and_a_missing_rule():
    assert d("regen", ["schema", "grounded"]).describe() == "regen[grounded,schema]"
    assert d("recompute").describe() == "recompute"
    assert d("remove", rule=None).describe() == "remove (no rule)"
    assert d("regen", ["schema"], rule=None).describe() == "regen[schema] (no rule)"
    assert d("remove", rule=0).describe() == "remove"  # rule numbers start at 1, but 0 is still a rule


def test_decision_of_a_gap_an_undeclared_kind_and_architecture_and_a_remove_rule():
    pol = policy([{"when": {"kind": "summary"}, "mode": "regen"}, {"when": {}, "mode": "remove"}],
                 [{"mode": "regen", "oracles": [{"oracle": "grounded", "min_support": 0.5}, {"oracle": "schema"}]},
                  {"mode": "remove", "oracles": [{"oracle": "schema"}]}],
                 kinds={"record": {}, "summary": {"replayable": False}, "skill": {"architectures": ["chain"]}})
    gap = Decision("remove", frozenset(), None)
    assert decision(pol, None, "summary", None) == gap
    assert decision(pol, 0, "cache", None) == gap  # kind not declared
    assert decision(pol, 0, "skill", "neural") == gap  # architecture not declared
    assert decision(pol, 0, "summary", "chain") == gap  # a non-skill has no architecture
    regen = decision(pol, 0, "summary", None)
    assert (regen.mode, regen.oracles, regen.rule) == ("regen", frozenset({"grounded", "schema"}), 1)
    assert {json.loads(s)["oracle"]: json.loads(s) for s in regen.settings}["grounded"] == {
        "oracle": "grounded", "min_support": 0.5}
    assert decision(pol, 1, "record", None) == Decision("remove", frozenset(), 2)  # no oracles for remove


def test_decision_settings_are_canonical_json_with_sorted_keys_and_their_defaults():
    """Each demanded oracle as ``json.dumps(..., sort_keys=True)`` of its full settings (written out
    here by hand), so the report lists them in that canonical order (seed-4 survivor compare.py:78)."""
    validation = [{"mode": "regen", "oracles": [
        {"oracle": "grounded", "min_support": 0.5},
        {"oracle": "schema", "schema": {"type": "object", "required": ["b", "a"]}},
        {"oracle": "replay", "runs": 3}]}]
    pol = policy([{"when": {}, "mode": "regen"}], validation)
    assert decision(pol, 0, "record", None).settings == frozenset({
        '{"min_support": 0.5, "oracle": "grounded"}',
        '{"oracle": "replay", "runs": 3, "tolerance": 0.0}',
        '{"by_kind": {}, "oracle": "schema", "schema": {"required": ["b", "a"], "type": "object"}}'})
    old = policy([{"when": {}, "mode": "remove"}])
    diffs = compare(old, pol)
    assert diffs and all(d.verdict == "looser" for d in diffs)
    assert diffs[0].as_dict()["new"]["oracle_settings"] == [  # sorted by their canonical text
        {"by_kind": {}, "oracle": "schema", "schema": {"required": ["b", "a"], "type": "object"}},
        {"min_support": 0.5, "oracle": "grounded"},
        {"oracle": "replay", "runs": 3, "tolerance": 0.0}]
    assert [list(x) for x in diffs[0].as_dict()["new"]["oracle_settings"]] == [
        ["by_kind", "oracle", "schema"], ["min_support", "oracle"], ["oracle", "runs", "tolerance"]]


# ------------------------------------------------------------------ verdicts


def test_verdict_of_equal_decisions_is_none_whatever_the_rule():
    assert verdict(d("regen", ["schema"], rule=1), d("regen", ["schema"], rule=3)) is None
    assert verdict(d("remove", rule=None), d("remove", rule=2)) is None


@pytest.mark.parametrize("old,new,want", [
    (d("regen"), d("remove"), "stricter"),
    (d("param", ["forget_reference"]), d("remove"), "stricter"),
    (d("remove"), d("recompute"), "looser"),
    (d("remove", rule=None), d("regen", ["schema"]), "looser"),
    (d("regen"), d("recompute"), "changed"),
    (d("recompute", ["replay"]), d("regen", ["replay"]), "changed"),
    (d("regen", ["schema"]), d("regen", ["schema", "grounded"]), "stricter"),
    (d("regen", []), d("regen", ["schema"]), "stricter"),
    (d("regen", ["schema", "grounded"]), d("regen", ["grounded"]), "looser"),
    (d("regen", ["schema"]), d("regen", ["grounded"]), "changed"),
    (d("regen", ["schema", "replay"]), d("regen", ["schema", "grounded"]), "changed"),
])
def test_verdict_of_mode_and_oracle_set_changes(old, new, want):
    assert verdict(old, new) == want


def g(x: float) -> dict:
    return {"oracle": "grounded", "min_support": x}


@pytest.mark.parametrize("old,new,want", [
    (d("regen", ["grounded"], g(0.5)), d("regen", ["grounded"], g(0.75)), "stricter"),
    (d("regen", ["grounded"], g(0.75)), d("regen", ["grounded"], g(0.5)), "looser"),
    # a setting and the oracle set in the same direction, and in opposite ones
    (d("regen", ["grounded"], g(0.5)), d("regen", ["grounded", "schema"], g(0.75), {"oracle": "schema"}), "stricter"),
    (d("regen", ["grounded"], g(0.75)), d("regen", ["grounded", "schema"], g(0.5), {"oracle": "schema"}), "changed"),
    (d("regen", ["grounded", "schema"], g(0.75), {"oracle": "schema"}), d("regen", ["grounded"], g(0.5)), "looser"),
    (d("regen", ["grounded", "schema"], g(0.5), {"oracle": "schema"}), d("regen", ["grounded"], g(0.75)), "changed"),
    # incomparable oracle sets are changed even when the one shared setting moves one way
    (d("regen", ["grounded", "schema"], g(0.5), {"oracle": "schema"}),
     d("regen", ["grounded", "replay"], g(0.75), {"oracle": "replay"}), "changed"),
    (d("regen", ["grounded", "schema"], g(0.75), {"oracle": "schema"}),
     d("regen", ["grounded", "replay"], g(0.5), {"oracle": "replay"}), "changed"),
    # an unordered setting (a schema) is changed on its own
    (d("regen", ["schema"], {"oracle": "schema", "schema": {"type": "object"}}),
     d("regen", ["schema"], {"oracle": "schema", "schema": {"type": "string"}}), "changed"),
    # same oracles, settings equal but listed differently is no change at all
    (d("regen", ["grounded"], g(0.5)), d("regen", ["grounded"], g(0.5)), None),
])
def test_verdict_of_oracle_setting_changes(old, new, want):
    assert verdict(old, new) == want


# the expected senses, written here (parametrizing on ORACLE_DIRECTION itself would let a mutant of the
# table rename the test ids, and a mutation run would see "not found" instead of a failing assertion)
DIRECTIONS = {("grounded", "min_support"): 1, ("replay", "runs"): 1, ("replay", "tolerance"): -1,
              ("task_regression", "min_pass"): 1, ("sandbox", "allow_extra_args"): -1,
              ("forget_reference", "max_forget_score"): -1, ("forget_reference", "min_retained_utility"): 1}


@pytest.mark.parametrize("key,sign", sorted(DIRECTIONS.items()))
def test_every_directed_oracle_setting_raised_and_lowered(key, sign):
    oracle, setting = key
    lo, hi = (False, True) if setting == "allow_extra_args" else (1, 2) if setting == "runs" else (0.25, 0.5)
    low, high = d("regen", [oracle], {"oracle": oracle, setting: lo}), d("regen", [oracle], {"oracle": oracle, setting: hi})
    up, down = ("stricter", "looser") if sign > 0 else ("looser", "stricter")
    assert verdict(low, high) == up and verdict(high, low) == down
    assert oracle_changes(low, high) == [{"oracle": oracle, "setting": setting, "old": lo, "new": hi, "verdict": up}]


def test_the_direction_table_names_each_setting_with_its_sense():
    """Larger is stricter for the share or count a successor must reach, looser for a tolerance,
    a cap on the forget score, or extra arguments allowed."""
    assert ORACLE_DIRECTION == DIRECTIONS


def test_oracle_changes_compares_only_oracles_on_both_sides_setting_by_setting():
    old = d("param", ["forget_reference", "schema"],
            {"oracle": "forget_reference", "max_forget_score": 0.2, "min_retained_utility": 0.8},
            {"oracle": "schema"})
    new = d("param", ["forget_reference", "grounded"],
            {"oracle": "forget_reference", "max_forget_score": 0.1, "min_retained_utility": 0.9},
            g(0.5))
    assert oracle_changes(old, new) == [
        {"oracle": "forget_reference", "setting": "max_forget_score", "old": 0.2, "new": 0.1, "verdict": "stricter"},
        {"oracle": "forget_reference", "setting": "min_retained_utility", "old": 0.8, "new": 0.9, "verdict": "stricter"}]
    # a setting one side omits, an unknown setting, a non-number: changed
    a = d("regen", ["replay"], {"oracle": "replay", "runs": 2})
    b = d("regen", ["replay"], {"oracle": "replay", "runs": 2, "tolerance": 0.1})
    assert oracle_changes(a, b) == [{"oracle": "replay", "setting": "tolerance", "old": None, "new": 0.1,
                                     "verdict": "changed"}]
    p = d("regen", ["plugin"], {"oracle": "plugin", "plugin": "x", "level": 1})
    q = d("regen", ["plugin"], {"oracle": "plugin", "plugin": "x", "level": 2})
    assert oracle_changes(p, q)[0]["verdict"] == "changed"
    s = d("regen", ["task_regression"], {"oracle": "task_regression", "min_pass": "most"})
    t = d("regen", ["task_regression"], {"oracle": "task_regression", "min_pass": 0.5})
    assert oracle_changes(s, t)[0]["verdict"] == "changed" and oracle_changes(t, s)[0]["verdict"] == "changed"
    assert oracle_changes(a, a) == []


def test_an_oracle_listed_twice_is_one_whole_value_on_either_side():
    one = d("regen", ["schema"], {"oracle": "schema", "by_kind": {}})
    two = d("regen", ["schema"], {"oracle": "schema", "by_kind": {}}, {"oracle": "schema", "by_kind": {"x": {}}})
    for old, new in ((one, two), (two, one)):
        (change,) = oracle_changes(old, new)
        assert (change["setting"], change["verdict"]) == ("*", "changed")
        assert verdict(old, new) == "changed"


def test_difference_as_dict_and_its_oracle_changes_only_for_the_same_mode():
    cell = Cell("record", None, "delete", "sufficient", False)
    old, new = d("regen", ["grounded"], g(0.5), rule=1), d("regen", ["grounded"], g(0.75), rule=None)
    diff = Difference("stricter", cell, old, new)
    assert diff.as_dict() == {
        "verdict": "stricter", "cell": cell.as_dict(),
        "old": {"mode": "regen", "oracles": ["grounded"], "rule": 1, "oracle_settings": [g(0.5)]},
        "new": {"mode": "regen", "oracles": ["grounded"], "rule": None, "oracle_settings": [g(0.75)]},
        "oracle_changes": [{"oracle": "grounded", "setting": "min_support", "old": 0.5, "new": 0.75,
                            "verdict": "stricter"}]}
    assert Difference("changed", cell, old, d("recompute", ["grounded"], g(0.75))).oracle_changes == []


# ------------------------------------------------------------------ scalar settings


@pytest.mark.parametrize("path,old,new,want", [
    ("selection.tradeoff", 0.3, 0.5, "stricter"), ("selection.tradeoff", 0.5, 0.3, "looser"),
    ("selection.budget", 10, 5, "stricter"), ("selection.budget", 5, 10, "looser"),
    ("selection.budget", None, 5, "stricter"), ("selection.budget", 5, None, "looser"),
    ("selection.tradeoff", None, 0.5, "changed"), ("selection.tradeoff", "x", 0.5, "changed"),
    ("selection.budget", "x", 5, "changed"), ("clearance.permutations", 16, 32, "changed"),
])
def test_setting_verdicts(path, old, new, want):
    assert setting_verdict(path, old, new) == want


def test_settings_diff_walks_nested_settings_and_skips_descriptions():
    a = Policy.model_validate({"kinds": {"record": {}, "cache": {"replayable": True, "description": "old"}},
                               "modes": [{"when": {}, "mode": "remove"}],
                               "selection": {"tradeoff": 0.3}, "clearance": {"permutations": 16}})
    b = Policy.model_validate({"kinds": {"record": {}, "summary": {"replayable": False}, "cache": {
                                   "replayable": True, "description": "new"}},
                               "modes": [{"when": {}, "mode": "regen"}], "description": "other",
                               "selection": {"tradeoff": 0.6, "budget": 3}, "clearance": {"permutations": 32}})
    out = settings_diff(a, b)
    assert [r["setting"] for r in out] == sorted(r["setting"] for r in out)
    by = {r["setting"]: r for r in out}
    assert by["selection.tradeoff"] == {"setting": "selection.tradeoff", "old": 0.3, "new": 0.6, "verdict": "stricter"}
    assert by["selection.budget"]["verdict"] == "stricter"
    assert by["clearance.permutations"] == {"setting": "clearance.permutations", "old": 16, "new": 32,
                                            "verdict": "changed"}
    assert by["kinds.summary"]["old"] is None and by["kinds.summary"]["verdict"] == "changed"
    assert not any(s.endswith("description") for s in by) and not any(s.startswith("modes") for s in by)
    assert set(by) == {"selection.tradeoff", "selection.budget", "clearance.permutations", "kinds.summary"}
    assert settings_diff(a, a) == []


# ------------------------------------------------------------------ compare at exact thresholds


def reference_regions(old: Policy, new: Policy, cells: list[Cell]) -> set[tuple]:
    out = set()
    for c in cells:
        i, j = firing_rule(old, c), firing_rule(new, c)
        v = verdict(decision(old, i, c.kind, c.arch), decision(new, j, c.kind, c.arch))
        if v is not None:
            out.add((v, c.kind, c.arch, c.meta.get("age")))
    return out


@pytest.mark.parametrize("op", ["gt", "ge", "lt", "le", "eq", "ne"])
def test_compare_finds_a_difference_that_lives_only_at_a_threshold(op):
    """Old: one rule `age <op> 5 → regen`, else remove; new: the complementary strictness at the
    same threshold (`ge` for `gt`, …), so the policies differ at age = 5 exactly, or nowhere else."""
    flip = {"gt": "ge", "ge": "gt", "lt": "le", "le": "lt", "eq": "ge", "ne": "gt"}[op]
    kinds = {"record": {}, "cache": {"replayable": True, "meta": {"age": {"min": 0, "max": 10}}}}
    old = policy([{"when": {"kind": "cache", "meta": {"age": {op: 5}}}, "mode": "recompute"},
                  {"when": {}, "mode": "remove"}], kinds=kinds)
    new = policy([{"when": {"kind": "cache", "meta": {"age": {flip: 5}}}, "mode": "recompute"},
                  {"when": {}, "mode": "remove"}], kinds=kinds)
    found = compare(old, new)
    cells = [Cell("cache", None, e, s, p, {"age": x}) for e in ("delete", "correct", "migrate")
             for s in ("sufficient", "insufficient") for p in (False, True)
             for x in (0.0, 4.5, 5.0, 5.5, 10.0)]
    want = reference_regions(old, new, cells)
    assert {(f.verdict, f.cell.kind, f.cell.arch) for f in found} == {(v, k, a) for v, k, a, _ in want}
    for f in found:  # every example cell really differs, as the Python semantics decide it
        i, j = firing_rule(old, f.cell), firing_rule(new, f.cell)
        assert verdict(decision(old, i, f.cell.kind, f.cell.arch), decision(new, j, f.cell.kind, f.cell.arch)) == f.verdict
    if op in ("gt", "ge", "lt", "le"):  # the two differ at the threshold only
        assert [f.cell.meta["age"] for f in found] == [5.0]


def test_compare_orders_stricter_then_looser_then_changed_and_skips_empty_pins():
    kinds = {"record": {}, "summary": {"replayable": False}, "skill": {"architectures": ["prompt", "chain"]}}
    old = policy([{"when": {"kind": "summary"}, "mode": "regen"}, {"when": {"kind": "skill"}, "mode": "regen"},
                  {"when": {}, "mode": "remove"}], kinds=kinds)
    new = policy([{"when": {"kind": "record"}, "mode": "recompute"},
                  {"when": {"kind": "skill", "arch": "chain"}, "mode": "param"},
                  {"when": {}, "mode": "remove"}],
                 kinds={"record": {"replayable": True}, "summary": {"replayable": False},
                        "skill": {"architectures": ["prompt", "chain"]}})
    found = compare(old, new)
    assert [(f.verdict, f.cell.kind, f.cell.arch, f.old.rule, f.new.rule) for f in found] == [
        ("stricter", "skill", "prompt", 2, 3), ("stricter", "summary", None, 1, 3),
        ("looser", "record", None, 3, 1), ("changed", "skill", "chain", 2, 2)]
    assert compare(old, old) == []


def test_compare_orders_the_architectures_of_one_kind_by_name_not_by_declaration():
    """Within one verdict and kind, differences come by architecture name (then event): a skill
    declared with ``[prompt, neural, chain]`` is reported chain, neural, prompt."""
    kinds = {"record": {}, "skill": {"architectures": ["prompt", "neural", "chain"]}}
    old = policy([{"when": {"kind": "skill"}, "mode": "regen"}, {"when": {}, "mode": "remove"}], kinds=kinds)
    new = policy([{"when": {}, "mode": "remove"}], kinds=kinds)
    found = compare(old, new)
    assert [(f.verdict, f.cell.kind, f.cell.arch) for f in found] == [
        ("stricter", "skill", "chain"), ("stricter", "skill", "neural"), ("stricter", "skill", "prompt")]
