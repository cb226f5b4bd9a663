"""Systematic tests of ``memsteward.repair.plan`` (issue 33): the plan's JSON forms round-trip
field by field, the barrier's column form equals the JSON form, each event kind's root actions,
the execution order of any selection, which kinds planning reads content for, when the content
scan grows the scope, and every field ``plan_from_scope`` fills — values worked by hand.
"""

from __future__ import annotations

import dataclasses
import gc
import json
from fractions import Fraction

import pytest

from memsteward.policy.loader import load_policy
from memsteward.repair import plan as plans
from memsteward.repair.artifacts import Artifact, Edge, Snapshot
from memsteward.repair.candidates import Candidate
from memsteward.repair.closure import Selection
from memsteward.repair.events import Event
from memsteward.repair.operators import operators_for
from memsteward.repair.plan import StepResult, TransitionPlan


def cand(i: str, pre: tuple[str, ...] = (), mode: str = "regen") -> Candidate:
    return Candidate(i, "summary", None, mode, "op", pre, True, 1.0, 1.5, "")


def full_plan() -> TransitionPlan:
    """A plan with every field set to something other than its default."""
    ev = Event("correct", ("r1", "r2"), (Artifact("r1", "record", None, 1, {"text": "new."}),), privacy=True)
    cands = (cand("a"), cand("b", ("a",)), Candidate("c", "skill", "neural", "param", "op", (), False, 2.0, 4.0, "why"))
    return TransitionPlan(
        event=ev, selector="greedy", tradeoff=0.25, budget=3.5, cascade=("a", "b", "c", "r1", "r2"),
        descendants=("a", "b", "c"), barrier=("a", "b", "c", "r1", "r2"), modes={"a": "regen", "b": "regen", "c": "param"},
        candidates=cands, requirements=(("a", "b"),),
        selection=Selection(frozenset({"b", "a"}), Fraction(7, 3), "greedy", False), order=("a", "b"),
        base_versions={"a": 2, "b": 1, "c": 9, "r1": 3, "r2": 1},
        executed=(StepResult("a", "regen", "republished", 3, ({"oracle": "schema", "passed": True},)),
                  StepResult("b", "regen", "failed", None, ({"oracle": "grounded", "passed": False},), "bad")),
        republished=("a",), withdrawn=("b", "c", "r1", "r2"), roots={"r1": "replaced", "r2": "withdrawn"},
        status="done", unservable=("c",), untracked={"u": {"root": "r1", "shared": 4}})


def test_step_result_as_dict_names_every_field():
    s = StepResult("a", "regen", "failed", 4, ({"oracle": "x"},), "boom")
    assert s.as_dict() == {"id": "a", "mode": "regen", "status": "failed", "version": 4,
                           "validation": [{"oracle": "x"}], "error": "boom"}
    assert StepResult("b", "param", "blocked").as_dict() == {"id": "b", "mode": "param", "status": "blocked",
                                                             "version": None, "validation": [], "error": ""}


def test_to_json_writes_every_field_and_from_json_reads_it_back():
    p = full_plan()
    doc = p.to_json()
    assert doc["status"] == "done" and doc["selector"] == "greedy" and doc["tradeoff"] == 0.25 and doc["budget"] == 3.5
    assert doc["selection"] == ["a", "b"] and doc["selection_method"] == "greedy" and doc["optimal"] is False
    assert doc["objective_exact"] == "7/3" and doc["objective"] == pytest.approx(7 / 3)
    assert doc["requirements"] == [["a", "b"]] and doc["order"] == ["a", "b"]
    assert doc["candidates"][2] == {"id": "c", "kind": "skill", "arch": "neural", "mode": "param", "operator": "op",
                                    "prerequisites": [], "executable": False, "value": 2.0, "cost": 4.0, "reason": "why"}
    assert doc["executed"][1]["error"] == "bad" and doc["roots"] == {"r1": "replaced", "r2": "withdrawn"}
    assert doc["unservable"] == ["c"] and doc["untracked"] == {"u": {"root": "r1", "shared": 4}}
    back = TransitionPlan.from_json(json.loads(json.dumps(doc)))
    assert back == p
    assert back.to_json() == doc


def test_from_json_reads_an_early_plan_without_the_later_fields():
    doc = full_plan().to_json()
    for key in ("roots", "status", "unservable", "untracked", "executed"):
        doc.pop(key)
    for c in doc["candidates"]:
        c.pop("reason")
    back = TransitionPlan.from_json(doc)
    assert back.roots == {} and back.status == "planned" and back.unservable == () and back.untracked == {}
    assert back.executed == () and all(c.reason == "" for c in back.candidates)


def test_candidate_looks_up_by_id():
    p = full_plan()
    assert p.candidate("b").prerequisites == ("a",)
    with pytest.raises(KeyError):
        p.candidate("zz")
    assert p.replace(status="planned").status == "planned" and p.status == "done"


@pytest.mark.parametrize("selected,cascade", [
    ({"a", "b"}, ("a", "b", "c", "r1", "r2")),  # read off the cascade
    ({"b", "a"}, ("b", "a", "c", "r1", "r2")),  # the cascade out of order there: sorted
    ({"a", "zz"}, ("a", "b", "c", "r1", "r2")),  # a selected id outside the cascade: sorted
    ({"c", "a", "b"}, ("a", "b", "c", "r1", "r2")),
    (set(), ("a", "b", "c", "r1", "r2")),
    ({"r2", "a", "c"}, ("r2", "a", "b", "c", "r1")),
])
def test_to_columns_is_to_json_with_the_candidates_as_columns(selected, cascade):
    p = full_plan()
    p = p.replace(cascade=cascade, selection=dataclasses.replace(p.selection, selected=frozenset(selected)))
    cols = p.to_columns()
    doc = p.to_json()
    assert cols["selection"] == sorted(selected)
    assert [list(r) for r in cols["requirements"]] == doc["requirements"]
    as_dicts = [dict(r) for r in cols["candidates"]]
    assert [{**c, "prerequisites": list(c["prerequisites"])} for c in as_dicts] == doc["candidates"]
    rest = {k: v for k, v in cols.items() if k not in ("candidates", "requirements", "selection")}
    assert rest == {k: v for k, v in doc.items() if k not in ("candidates", "requirements", "selection")}


@pytest.mark.parametrize("event,want", [
    (Event("delete", ("a", "b")), {"a": "erased", "b": "erased"}),
    (Event("migrate", ("a",), interfaces={"a": {}}), {"a": "interface-updated"}),
    (Event("correct", ("a", "b"), (Artifact("b", "record"),)), {"a": "withdrawn", "b": "replaced"}),
    (Event("correct", ("a",), (Artifact("a", "record"),)), {"a": "replaced"}),
    (Event("correct", ("a",)), {"a": "withdrawn"}),
])
def test_root_actions_per_event_kind(event, want):
    assert plans.root_actions(event) == want


@pytest.mark.parametrize("doc,want", [
    ({"type": "delete", "roots": ["a", "b"]}, {"a": "erased", "b": "erased"}),
    ({"type": "migrate", "roots": ["a"], "interface": {}}, {"a": "interface-updated"}),
    ({"type": "correct", "roots": ["a", "b"], "replacements": [{"id": "b", "kind": "record", "content": {"text": "b2."}}]},
     {"a": "withdrawn", "b": "replaced"}),
    ({"type": "correct", "roots": ["a"], "replacements": [{"id": "a", "kind": "record", "content": {"text": "a2."}}],
      "privacy": True}, {"a": "replaced"}),
])
def test_root_actions_of_events_parsed_from_json_text(doc, want):
    """The event as it arrives (parsed from its file's JSON text: a fresh type string)."""
    from memsteward.repair.events import parse_event

    snap = Snapshot({i: Artifact(i, "record", None, 1, {"text": f"{i}."}) for i in ("a", "b")}, ())
    text = json.dumps(doc)
    assert plans.root_actions(parse_event(json.loads(text), snap, "event.json", text)) == want


def test_execution_order_is_the_generations_of_the_selected_requirements():
    cands = (cand("a"), cand("b", ("a",)), cand("c", ("b",)), cand("d"), cand("e", ("a", "d")))
    assert plans.execution_order(cands, frozenset("abcde")) == ("a", "d", "b", "e", "c")
    # an unselected prerequisite's edges are dropped: c then has no selected parent
    assert plans.execution_order(cands, frozenset("acd")) == ("a", "c", "d")
    # given requirements are used as they are (here: none)
    assert plans.execution_order(cands, frozenset("abc"), ()) == ("a", "b", "c")
    # a selection naming ids that are not candidates is ordered all the same
    assert plans.execution_order(cands, frozenset({"b", "zz", "a"})) == ("a", "zz", "b")
    assert plans.execution_order((), frozenset()) == ()


def test_paused_gc_pauses_and_restores_the_collector_state():
    assert gc.isenabled()
    with plans.paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with plans.paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # it was off: left off
    finally:
        gc.enable()
    with pytest.raises(RuntimeError), plans.paused_gc():
        raise RuntimeError("inside")
    assert gc.isenabled()


def test_content_needed_follows_the_mode_rules_that_can_fire_for_kind_arch_and_event():
    policy = load_policy("policies/tool-agent.yaml")
    ops = operators_for(policy)
    needs = {etype: plans.content_needed(policy, ops, Event(etype, ("r",))) for etype in ("delete", "migrate")}
    # a chain skill is regenerated (sandbox check reads content) on every event; a record only removed
    from memsteward.repair.operators import reads_content

    for etype, fn in needs.items():
        assert fn("record", None) is False, etype
    seen: dict[tuple[str, str | None], set[str]] = {}

    def record(kind: str, arch: str | None) -> set[str]:
        out: set[str] = set()
        for rule in policy.modes:
            w = rule.when
            if rule.mode != "remove" and (w.kind is None or kind in w.kind) and (
                    w.arch is None or arch in w.arch) and (w.event is None or "migrate" in w.event):
                out.add(rule.mode)
        seen[(kind, arch)] = out
        return out

    want = reads_content(ops, record)
    for kind, arch in (("cache", None), ("summary", None), ("skill", "chain"), ("skill", "prompt"), ("record", None)):
        assert needs["migrate"](kind, arch) == want(kind, arch), (kind, arch)


def _scan_case(content_scan: bool = True):
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    arts = {"r": Artifact("r", "record", None, 1, {"text": text}),
            "s": Artifact("s", "summary", None, 1, "a summary."),
            "copy": Artifact("copy", "summary", None, 1, text)}
    policy = load_policy("policies/default.yaml")
    policy = policy.model_copy(update={"lineage": policy.lineage.model_copy(
        update={"content_scan": content_scan, "shingle_words": 3, "min_shared": 1})})
    return policy, Snapshot(arts, (Edge("r", "s"),))


@pytest.mark.parametrize("event,grows", [
    (Event("delete", ("r",)), True),
    (Event("correct", ("r",), (Artifact("r", "record", content={"text": "x."}),), privacy=True), True),
    (Event("correct", ("r",), (Artifact("r", "record", content={"text": "x."}),)), False),
    (Event("migrate", ("r",), interfaces={"r": {"tools": {}}}), False),
])
def test_event_scope_grows_by_the_content_scan_only_for_deletes_and_privacy_corrections(event, grows):
    policy, snap = _scan_case()
    scope = plans.event_scope(policy, snap, event)
    assert ("copy" in scope.cascade) is grows
    assert set(scope.untracked) == ({"copy"} if grows else set())
    off, snap = _scan_case(content_scan=False)
    assert plans.event_scope(off, snap, event).cascade == frozenset({"r", "s"})


@pytest.mark.parametrize("doc,grows", [
    ({"type": "delete", "roots": ["r"]}, True),
    ({"type": "correct", "roots": ["r"], "replacements": [{"id": "r", "kind": "record", "content": {"text": "x."}}],
      "privacy": True}, True),
    ({"type": "correct", "roots": ["r"], "replacements": [{"id": "r", "kind": "record", "content": {"text": "x."}}]},
     False),
    ({"type": "migrate", "roots": ["r"], "interface": {"tools": {}}}, False),
])
def test_event_scope_of_events_parsed_from_json_text(doc, grows):
    """As the CLI reads an event: parsed from JSON text (fresh strings), the content scan grows the
    scope for a delete and a privacy correction only."""
    from memsteward.repair.events import parse_event

    policy, snap = _scan_case()
    text = json.dumps(doc)
    event = parse_event(json.loads(text), snap, "event.json", text)
    scope = plans.event_scope(policy, snap, event)
    assert set(scope.untracked) == ({"copy"} if grows else set())
    assert scope.cascade == (frozenset({"r", "s", "copy"}) if grows else frozenset({"r", "s"}))


def test_compute_plan_uses_the_operators_it_is_given_and_the_policys_by_default():
    """A registry passed to compute_plan is the one planning reads (a cache with no recompute operator
    is not executable, and says why); without one, the policy's operators (the cache is)."""
    from memsteward.repair.operators import OperatorRegistry

    policy = load_policy("policies/default.yaml")
    arts = {"r": Artifact("r", "record", None, 1, {"text": "r."}), "k": Artifact("k", "record", None, 1, {"text": "k."}),
            "c": Artifact("c", "cache", None, 1, {"o": 1}, {"transform": "texts", "age_days": 1}),
            "s": Artifact("s", "summary", None, 1, "s.")}
    snap = Snapshot(arts, (Edge("r", "c"), Edge("k", "c"), Edge("r", "s"), Edge("k", "s")))
    event = Event("delete", ("r",))
    full = operators_for(policy)
    only_regen = OperatorRegistry()
    only_regen.register("regen", full.find("regen", "summary", None), kind="summary")
    given = plans.compute_plan(policy, snap, event, operators=only_regen)
    by = {c.id: c for c in given.candidates}
    assert given.modes == {"c": "recompute", "s": "regen"}
    assert by["c"].reason == "no operator registered for mode recompute" and not by["c"].executable
    assert by["s"].executable and given.selection.selected == frozenset({"s"})
    default = plans.compute_plan(policy, snap, event)
    assert all(c.executable for c in default.candidates) and default.selection.selected == frozenset({"c", "s"})


def test_plan_from_scope_fills_every_field():
    policy = load_policy("policies/default.yaml")
    arts = {"r": Artifact("r", "record", None, 3, {"text": "tea in paris."}),
            "s": Artifact("s", "summary", None, 2, "tea."),
            "w": Artifact("w", "summary", None, 5, "old.", state="withdrawn"),
            "e": Artifact("e", "summary", None, 1, "gone.", state="erased"),
            "k": Artifact("k", "record", None, 1, {"text": "kept."})}
    snap = Snapshot(arts, (Edge("r", "s"), Edge("k", "s"), Edge("r", "w"), Edge("k", "w"), Edge("r", "e")))
    event = Event("delete", ("r",))
    scope = plans.event_scope(policy, snap, event)
    p = plans.plan_from_scope(policy, scope, event)
    assert p.cascade == ("e", "r", "s", "w") and p.descendants == ("e", "s", "w") and p.barrier == p.cascade
    assert p.base_versions == {"e": 1, "r": 3, "s": 2, "w": 5}
    assert p.unservable == ("e", "w")
    assert p.roots == {"r": "erased"} and p.tradeoff == 0.3 and p.budget is None and p.selector == "mincut"
    assert set(p.modes) == {"e", "s", "w"} and p.modes["e"] == "remove"
    assert p.status == "planned" and p.executed == () and p.untracked == {}
    none = plans.plan_from_scope(policy, scope, event, "no_action")
    assert none.barrier == () and none.roots == {} and none.cascade == p.cascade
    # the selector as a caller of the Python API may pass it (read from a config: a fresh string)
    fresh = plans.plan_from_scope(policy, scope, event, "".join(["no_", "action"]))
    assert fresh.barrier == () and fresh.roots == {} and fresh.selection.method == "no_action"
    for name in ("mincut", "greedy", "repair_all", "remove_all"):
        other = plans.plan_from_scope(policy, scope, event, "".join(list(name)))
        assert other.barrier == p.cascade and other.roots == {"r": "erased"} and other.selector == name
