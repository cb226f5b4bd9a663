"""Tests that kill mutants which survived `make mutate` (bench/MUTATION.md lists each one).

Each test names the surviving mutant it kills; its expected values are written by hand.
"""

from __future__ import annotations

import json

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


# ------------------------------------------------------------ survivors of the 0348b64 run (issue 33)


def test_strong_components_lift_low_links_to_the_parent_frame():
    """scope.py `u = work[-1][0]` → `work[-2][0]` / `work[-1][1]` survived: the low link of a
    finished vertex must go to the vertex that called it, not to another frame's vertex nor to the
    calling frame's child counter (a cycle through every vertex is one component)."""
    from memsteward.repair.scope import strong_components

    def comps(succ):
        return sorted(sorted(c) for c in strong_components(succ))

    assert comps([[1], [2], [0]]) == [[0, 1, 2]]
    assert comps([[2], [0], [1]]) == [[0, 1, 2]]  # 0→2→1→0: a frame's child counter is not its vertex
    assert comps([[1], [2], [1], []]) == [[0], [1, 2], [3]]
    assert comps([[1, 3], [2], [0], [4], [3]]) == [[0, 1, 2], [3, 4]]
    # sinks first: {3, 4} is reached from {0, 1, 2}, so it comes out before it
    assert [sorted(c) for c in strong_components([[1, 3], [2], [0], [4], [3]])] == [[3, 4], [0, 1, 2]]


def test_stratified_radius_adds_the_bias_bound_of_an_empty_stratum():
    """stratified.py `bias += (1.0 − f_lo + f_hi) / k` → `(1.0 − f_lo) % f_hi` survived: with no
    sample, the radius is exactly the bias bound (r_hi − r_lo)/K of the one middle stratum."""
    import pytest

    from memsteward.clearance.stratified import estimate

    ids = ("a", "b", "c")
    game = Game(Task("q", "r", tuple(Memory(i) for i in ids)),
                TableEvaluator({frozenset(ids): 0.9, frozenset(): 0.0}), trials=1)
    est = estimate(game, {"a": 0.1, "b": 0.2, "c": 0.3}, ())
    # f(T) = Σ d_j + h(|T|), h(3) = h(2) = 0.9 − 0.6 = 0.3, h(0) = 0, h(1) = 0.15:
    # over |T| = 1, f ∈ [0.25, 0.45]; r = v̂ − f ∈ [−0.45, 0.75]; bias = 1.2 / 3
    assert est.counts == {1: 0}
    assert est.radius == pytest.approx(0.4, abs=1e-12)


def test_fingerprints_hold_the_raw_and_the_json_escaped_text():
    """erasure.py `json.dumps(w)[1:-1]` → `[0:-1]`, `[2:-1]`, `[1:-2]`, `[1:0]` survived: the
    escaped needle is the JSON string body exactly (no quote, no character lost, never empty)."""
    from memsteward.repair.erasure import fingerprints

    assert fingerprints(["café au lait, s'il vous plaît"]) == [
        "café au lait, s'il vous plaît".encode(), b"caf\\u00e9 au lait, s'il vous pla\\u00eet"]
    assert fingerprints([{"t": 'say "hello" to everyone'}]) == [
        b'say "hello" to everyone', b'say \\"hello\\" to everyone']
    assert fingerprints(["plain ascii text here"]) == [b"plain ascii text here"]  # one needle, not two


def test_scan_finds_a_needle_split_across_two_chunks(tmp_path, monkeypatch):
    """erasure.py `overlap = max(len) − 1` → `− 2` survived: chunks must overlap by the longest
    needle less one byte, or a needle whose last byte starts the next chunk is missed."""
    from memsteward.repair import erasure

    monkeypatch.setattr(erasure, "CHUNK", 8)
    f = tmp_path / "db"
    f.write_bytes(b"xxxxxABC" + b"Dyyyyyyy")  # chunk 1 ends with ABC, chunk 2 starts with D
    got = erasure.scan([str(f)], [b"ABCD", b"zz"])
    assert got["found"] == {"db": 1} and got["bytes"] == 16
    f.write_bytes(b"xxxxxxAB" + b"CDyyyyyy")
    assert erasure.scan([str(f)], [b"ABCD"])["found"] == {"db": 1}


def test_migrate_event_supplies_the_interface_as_the_root_successor():
    """execute.py `event.type == "migrate"` → `event.type > "migrate"` survived: a migration's root
    successor is the stored root with the event's interface as content (kind, arch, meta kept)."""
    from memsteward.repair.artifacts import Artifact, Snapshot
    from memsteward.repair.events import Event
    from memsteward.repair.execute import root_successors

    snap = Snapshot({"api": Artifact("api", "record", None, 3, {"v": 1}, {"owner": "ops"})}, ())
    got = root_successors(Event("migrate", ("api",), interfaces={"api": {"v": 2}}), snap)
    assert got == {"api": Artifact("api", "record", None, 1, {"v": 2}, {"owner": "ops"})}
    assert root_successors(Event("delete", ("api",)), snap) == {}


def test_schema_maximum_is_inclusive():
    """oracles.py `value > schema["maximum"]` → `is not` was not covered: no test used "maximum"."""
    from memsteward.repair.oracles import schema_errors

    schema = {"type": "number", "minimum": 1, "maximum": 5}
    assert schema_errors(4, schema) == [] and schema_errors(5, schema) == [] and schema_errors(1.5, schema) == []
    assert schema_errors(6, schema) == ["$: above maximum"]
    assert schema_errors(0, schema) == ["$: below minimum"]


def test_replay_oracle_names_the_failing_run():
    """oracles.py `f"replay {run + 1} failed"` → `run // 1` was not covered: no test had an
    operator raise on replay. Runs are numbered from 1."""
    from types import SimpleNamespace

    from memsteward.repair.artifacts import Artifact
    from memsteward.repair.operators import OperatorError, RepairContext, Successor
    from memsteward.repair.oracles import OracleInput, check_replay

    class FailsOnSecondCall:
        calls = 0

        def __call__(self, art, ctx):
            self.calls += 1
            if self.calls == 2:
                raise OperatorError("boom")
            return Successor({"n": 1}, {})

    art = Artifact("c", "cache", None, 1, {"n": 0}, {})
    x = OracleInput(art, Successor({"n": 1}, {}), RepairContext("delete"), FailsOnSecondCall())  # type: ignore[arg-type]
    report = check_replay(SimpleNamespace(runs=3, tolerance=0.0), x)
    assert (report.passed, report.detail) == (False, "replay 2 failed: boom")
    x = OracleInput(art, Successor({"n": 2}, {}), RepairContext("delete"), FailsOnSecondCall())  # type: ignore[arg-type]
    report = check_replay(SimpleNamespace(runs=3, tolerance=0.0), x)
    assert (report.passed, report.detail) == (False, "replay 1 differs from the staged successor")


def test_grounded_accepts_a_sentence_exactly_at_min_support():
    """oracles.py `< min_support − 1e-12` → `+ 1e-12` survived: a sentence with exactly the
    required share of supported content words is grounded (the bound is inclusive)."""
    from memsteward.repair.oracles import _words, grounding_problems

    text = "Anna likes volcanoes."
    support = ["Anna likes tea."]
    assert len(_words(text) & _words(support[0])) / len(_words(text)) == 2 / 3
    assert grounding_problems(text, support, [], [], 2 / 3) == []
    assert grounding_problems(text, support, [], [], 0.7) != []


def test_embedding_oracle_fails_without_a_reembedding_operator():
    """oracles.py `Report("embedding", False, …)` → `True` survived: a successor no ReEmbed built
    must fail the oracle, not only say why."""
    from memsteward.policy.model import EmbeddingOracle
    from memsteward.repair.artifacts import Artifact
    from memsteward.repair.operators import RegenText, RepairContext, Successor
    from memsteward.repair.oracles import OracleInput, check_embedding

    x = OracleInput(Artifact("n", "note", None, 1, "x", {}), Successor("new text.", {}), RepairContext("delete"),
                    RegenText())
    report = check_embedding(EmbeddingOracle(oracle="embedding"), x)
    assert not report.passed and "declare 'embed'" in report.detail


def test_budget_setting_verdicts():
    """compare.py `if path == "selection.budget" and (old is None or new is None)` → `if not (…)`
    was not covered: adding a cap is stricter, dropping it looser; a smaller cap is stricter,
    a larger λ is stricter."""
    from memsteward.policy.compare import setting_verdict

    assert setting_verdict("selection.budget", None, 5) == "stricter"
    assert setting_verdict("selection.budget", 5, None) == "looser"
    assert setting_verdict("selection.budget", 5, 3) == "stricter"
    assert setting_verdict("selection.budget", 3, 5) == "looser"
    assert setting_verdict("selection.tradeoff", 1.0, 2.0) == "stricter"
    assert setting_verdict("selection.tradeoff", 2.0, 1.0) == "looser"
    assert setting_verdict("support.sufficient", 1, 2) == "changed"


def test_a_non_skill_cell_has_no_architecture():
    """encoding.py `-1 if arch is None` → `1` survived: the arch of a non-skill cell must differ
    from every architecture index (else a guard on ARCHITECTURES[1] would match non-skills)."""
    import z3

    from memsteward.policy.encoding import Encoding
    from memsteward.policy.model import ARCHITECTURES

    enc = Encoding([Policy.model_validate({"kinds": {"record": {}}, "modes": [{"when": {}, "mode": "remove"}]})])
    for arch in ARCHITECTURES:
        s = z3.Solver()
        s.add(enc.is_arch(None), enc.is_arch(arch))
        assert s.check() == z3.unsat, arch


def test_prefixes_end_with_the_grand_coalition():
    """attribution.py `range(len(perm) + 1)` → `+ 0` survived: S_K = M is a prefix (`+ 2` is
    equivalent: perm[:K + 1] == perm[:K], deduplicated)."""
    from memsteward.clearance.attribution import prefixes

    assert prefixes([("a", "b"), ("b", "a")]) == [frozenset(), frozenset("a"), frozenset("ab"), frozenset("b")]


def test_an_attribution_without_stratified_samples_reports_zero():
    """attribution.py `samples: int = 0` → `1` / `-1` survived: the permutation and exact
    estimators sample no stratified coalitions, and the plan reports that count."""
    from memsteward.clearance.attribution import fixed_attribution

    ids = ("a", "b")
    values = {frozenset(s): v for s, v in (([], 0.0), (["a"], 0.5), (["b"], 0.5), (["a", "b"], 1.0))}
    game = Game(Task("q", "r", tuple(Memory(i) for i in ids)), TableEvaluator(values), trials=1)
    assert fixed_attribution(game, 2, 0, exact=True).samples == 0
    assert fixed_attribution(game, 2, 0, exact=False).samples == 0


def test_ortools_backend_is_used_when_capacities_fit_int64():
    """closure.py `if 2·Σ|ints| + 2 < INT64_SAFE` → `if not (…)` survived: both branches find the
    same cut, but a small instance must be cut by OR-Tools, not fall back to networkx."""
    from memsteward.repair.candidates import Candidate
    from memsteward.repair.closure import max_weight_closure

    cands = [Candidate("a", "cache", None, "recompute", "op", (), True, 2.0, 1.0),
             Candidate("b", "cache", None, "recompute", "op", ("a",), True, 1.0, 3.0)]
    sel = max_weight_closure(cands, 1.0, "ortools")
    assert (sel.selected, sel.method) == (frozenset({"a"}), "mincut/ortools")


def test_schema_max_items_is_inclusive():
    """oracles.py `len(value) > schema["maxItems"]` → `!=` was not covered: no test used "maxItems"."""
    from memsteward.repair.oracles import schema_errors

    schema = {"type": "array", "minItems": 1, "maxItems": 2}
    assert schema_errors([1], schema) == [] and schema_errors([1, 2], schema) == []
    assert schema_errors([1, 2, 3], schema) == ["$: more than 2 items"]
    assert schema_errors([], schema) == ["$: fewer than 1 items"]


def test_partitions_need_both_a_forget_and_a_reference_set():
    """candidates.py `forget > 0 and kept > 0` → `>=` survived: a neural skill has partitions only
    when it has an invalidated input (forget set) and a retained one (reference set)."""
    from memsteward.policy.loader import load_policy
    from memsteward.repair.artifacts import Artifact
    from memsteward.repair.candidates import assign
    from memsteward.repair.events import Event
    from memsteward.repair.scope import Scope, States

    policy = load_policy("policies/default.yaml")
    arts = {"r": Artifact("r", "record", None, 1, {"t": "old"}), "n": Artifact("n", "skill", "neural")}

    def partitions(event: Event, parents: list[str]) -> bool:
        scope = Scope(("r",), frozenset({"r", "n"}), [(p, "n") for p in parents], arts, States())
        return assign(policy, scope, event).cells["n"].partitions

    delete = Event("delete", ("r",))
    assert partitions(delete, ["r", "x"])  # forget {r}, reference {x}
    assert not partitions(delete, ["r"])  # no retained input: no reference set
    correct = Event("correct", ("r",), (Artifact("r", "record", None, 1, {"t": "new"}),))
    assert not partitions(correct, ["r", "x"])  # the replacement is retained: no forget set


def test_stratified_radius_of_a_partly_sampled_stratum():
    """stratified.py `ln(2K/δ)/2 · Σ w²/n` → `2K % δ` / `ln(…) % 2` survived: the Hoeffding part of
    the radius, worked by hand. K = 3, all LOO effects 0, v̂(M) = 1, v̂(∅) = 0: f = h(|T|) with
    h(1) = 0.5, so over |T| = 1 r ∈ [−0.5, 0.5] and w_1 = max(0.5, 0.25) − min(−0.5, −0.25) = 1;
    one of the three singletons sampled: ε = sqrt(ln(2·3/0.05)/2 · 1²/1)."""
    import math

    import pytest

    from memsteward.clearance.stratified import estimate

    ids = ("a", "b", "c")
    game = Game(Task("q", "r", tuple(Memory(i) for i in ids)),
                TableEvaluator({frozenset(ids): 1.0, frozenset(): 0.0, frozenset("a"): 0.5}), trials=1)
    est = estimate(game, {"a": 0.0, "b": 0.0, "c": 0.0}, [frozenset("a")])
    assert est.counts == {1: 1}
    assert est.radius == pytest.approx(math.sqrt(math.log(120.0) / 2.0), rel=1e-9)
    # stratified.py `w ** 2 / n` → `w ** 3` / `w ** 1` survived (w = 1 above): v̂(M) = 0.5 gives
    # h(1) = 0.25, r ∈ [−0.25, 0.75], w_1 = 0.75 − (−0.375) = 1.125
    game = Game(Task("q", "r", tuple(Memory(i) for i in ids)),
                TableEvaluator({frozenset(ids): 0.5, frozenset(): 0.0, frozenset("a"): 0.5}), trials=1)
    est = estimate(game, {"a": 0.0, "b": 0.0, "c": 0.0}, [frozenset("a")])
    assert est.radius == pytest.approx(math.sqrt(math.log(120.0) / 2.0 * 1.125 ** 2), rel=1e-9)


def test_replay_compares_numbers_within_the_tolerance_at_any_depth():
    """oracles.py `if number(a) and number(b)` → `if not (…)` survived: numbers are compared with
    the absolute tolerance (nested in lists and objects too), everything else exactly."""
    from memsteward.repair.oracles import _close

    assert _close(1.0, 1.05, 0.1) and not _close(1.0, 1.2, 0.1)
    assert _close({"x": [1.0, {"y": 2.0}]}, {"x": [1.04, {"y": 1.97}]}, 0.05)
    assert not _close({"x": [1.0]}, {"x": [1.0, 2.0]}, 0.05) and not _close({"x": 1}, {"z": 1}, 0.05)
    assert _close("same", "same", 0.0) and not _close("same", "other", 1.0)


def test_budget_lagrangian_searches_multipliers_past_sixty_six(monkeypatch):
    """closure.py `if hi > 2**64` → `2 ^ 64` (= 66) survived: the multiplier search must reach the λ
    that makes the budget bind (here ≈ 500–1000). a: w 1000, c 1; b: w 5000, c 10; β = 1: only {a}
    fits, and it is chosen for λ ∈ (500, 1000)."""
    from memsteward.repair import closure
    from memsteward.repair.candidates import Candidate

    cands = [Candidate("a", "cache", None, "recompute", "op", (), True, 1000.0, 1.0),
             Candidate("b", "cache", None, "recompute", "op", (), True, 5000.0, 10.0)]
    assert closure.budgeted_closure(cands, 0.0, 1.0).selected == frozenset({"a"})  # enumeration
    monkeypatch.setattr(closure, "BUDGET_EXACT_LIMIT", 0)  # force the Lagrangian path
    sel = closure.budgeted_closure(cands, 0.0, 1.0)
    assert (sel.selected, sel.method) == (frozenset({"a"}), "budget/lagrangian")


def test_no_action_plan_given_at_run_time_has_no_root_actions():
    """plan.py `selector != "no_action"` → `is not` survived (CPython interns the literal): a
    selector name built at run time must still plan no barrier and no root actions."""
    from memsteward.policy.loader import load_policy
    from memsteward.repair.events import load_event
    from memsteward.repair.plan import compute_plan
    from memsteward.store import Store

    store = Store.open("engine/data/repair/store.json")
    event = load_event("engine/data/repair/event-delete.json", store.snapshot())
    policy = load_policy("policies/default.yaml")
    assert compute_plan(policy, store, event, "mincut", "networkx").roots  # the literal plans root actions
    plan = compute_plan(policy, store, event, "".join(["no_", "action"]), "networkx")
    assert plan.roots == {} and plan.barrier == ()


def test_planning_reads_the_content_a_repair_check_needs():
    """plan.py `rule.mode != "remove"` → `>=` survived: every repairing mode counts ("param" sorts
    before "remove"), so a neural skill (param, whose check needs the model) is read with content;
    kinds whose operators check metadata only are not."""
    from memsteward.policy.loader import load_policy
    from memsteward.repair.events import Event
    from memsteward.repair.operators import operators_for
    from memsteward.repair.plan import content_needed

    policy = load_policy("policies/default.yaml")
    needs = content_needed(policy, operators_for(policy), Event("delete", ("r",)))
    assert needs("skill", "neural")
    assert not needs("record", None) and not needs("summary", None) and not needs("skill", "chain")


def test_allocation_completes_a_stratum_when_that_removes_its_whole_term():
    """stratified.py `if n + 1 == comb(K, s)` → `>` survived: the last draw of a stratum removes its
    whole term w²/n (it becomes exact), not just w²/n − w²/(n + 1). K = 4, w_1 = w_2 = 1, worked by
    hand: after 1, 2, 1, 2, 1 the 6th draw gains 1/3 in stratum 1 (its 4th and last coalition)
    against 1/2 − 1/3 = 1/6 in stratum 2."""
    from memsteward.clearance.stratified import allocation_order

    assert allocation_order(4, {1: 1.0, 2: 1.0}, 6) == [1, 2, 1, 2, 1, 1]
    assert sorted(allocation_order(4, {1: 1.0, 2: 1.0}, 20)) == [1] * 4 + [2] * 6  # stops when all are drawn


def test_stem_keeps_short_words_whole():
    """oracles.py `len(token) > len(suffix) + 3` → `is not` survived: a suffix is stripped only from
    a word at least four characters longer than it ("sing", "used", "bus" stay whole)."""
    from memsteward.repair.oracles import _stem

    assert [_stem(w) for w in ("sing", "used", "bus", "sings", "visits", "visiting")] == [
        "sing", "used", "bus", "sing", "visit", "visit"]


def test_forbidding_extra_sandbox_args_is_stricter():
    """compare.py `("sandbox", "allow_extra_args"): -1` → `-0` survived (`-2` is equivalent: only the
    sign is read): turning extra arguments off lets fewer successors pass."""
    from memsteward.policy.compare import ORACLE_DIRECTION, _direction

    sign = ORACLE_DIRECTION[("sandbox", "allow_extra_args")]
    assert _direction(sign, True, False) == "stricter" and _direction(sign, False, True) == "looser"


def test_an_unsigned_head_is_reported_at_its_row():
    """auditchain.py:165 (issue 33's survivor): with the key set, an unsigned head is reported at
    the head's row number, not at a value taken from the hash."""
    from memsteward.repair.auditchain import GENESIS, first_broken, row_hash, seal

    rows, prev = [], GENESIS
    for seq in (1, 2, 3):
        h = row_hash(prev, seq, "2026-01-01T00:00:00Z", None, "put", f"a{seq}", "{}")
        rows.append((seq, "2026-01-01T00:00:00Z", None, "put", f"a{seq}", "{}", h))
        prev = h
    key = b"k" * 32
    binding = ("0" * 32, None)
    assert first_broken(rows, head=(3, prev), head_seal=seal(key, 3, prev, binding), key=key, binding=binding) is None
    found = first_broken(rows, head=(3, prev), head_seal=None, key=key, binding=binding)
    assert found is not None and found[0] == 3 and "not signed" in found[1]


# ------------------------------------------------------------ later survivors of the 0348b64 run (issue 33)


def test_direction_of_a_setting_without_a_sign_or_a_number_is_changed():
    """compare.py `sign is None or not number(old) or not number(new)` → `and` (either `or`)
    survived: an unsigned setting, or one side not a number, is "changed", never compared."""
    from memsteward.policy.compare import _direction

    assert _direction(None, 1, 2) == "changed"  # no sign: first `or` → `and` computes (2 − 1) · None
    assert _direction(1, 1, None) == "changed" and _direction(1, None, 2) == "changed"
    assert _direction(1, 1, 2) == "stricter" and _direction(-1, 1, 2) == "looser"


def test_shingles_are_every_run_of_five_words_of_a_long_text():
    """oracles.py `len(toks) − SHINGLE + 1` → `len(toks) % SHINGLE + 1` survived (equal for 5 to 9
    words): 12 words have 8 runs of five; 3 words have none."""
    from memsteward.repair.oracles import _shingles

    words = "a b c d e f g h i j k l".split()
    assert _shingles([" ".join(words)]) == {tuple(words[i:i + 5]) for i in range(8)}
    assert _shingles(["one two three"]) == set()


def test_replay_accepts_lists_of_the_same_length_within_the_tolerance():
    """oracles.py `len(a) == len(b) and …` → `len(a) < len(b)` survived: equal lists are close."""
    from memsteward.repair.oracles import _close

    assert _close([1.0, 2.0], [1.0, 2.01], 0.05) and _close([], [], 0.0)
    assert not _close([1.0], [1.0, 2.0], 0.05)


def test_offline_answer_is_the_sentence_sharing_most_words_with_the_query():
    """oracles.py `len(q & tokens(s))` → `len(q | tokens(s))` survived: the union picks the longest
    sentence instead of the one that answers."""
    from memsteward.repair.oracles import answer

    text = "Lyon is mild. Many other unrelated words fill this very long second sentence here."
    assert answer(text, "is lyon mild") == "Lyon is mild."


def test_a_policy_without_plugins_is_recorded_without_a_plugins_entry():
    """execute.py `if plugins:` → `if not plugins:` survived: the recorded policy document (whose
    digest the audit chain holds) gains an empty plugins list only on the mutant."""
    from memsteward.policy.loader import load_policy
    from memsteward.repair.execute import PLUGINS_KEY, policy_document

    policy = load_policy("policies/default.yaml")
    doc = policy_document(policy)
    assert PLUGINS_KEY not in doc and doc == policy.model_dump(mode="json", by_alias=True)


def test_a_migrate_event_given_at_run_time_erases_nothing():
    """execute.py `ev.type == "migrate"` → `is` survived (CPython interns the literal): an event type
    built at run time must still erase nothing (the mutant scrubs every cascade member)."""
    import dataclasses

    from memsteward.policy.loader import load_policy
    from memsteward.repair.events import load_event
    from memsteward.repair.execute import erasure_targets
    from memsteward.repair.plan import compute_plan
    from memsteward.store import Store

    store = Store.open("engine/data/repair/store.json")
    event = load_event("engine/data/repair/event-migrate.json", store.snapshot())
    plan = compute_plan(load_policy("policies/default.yaml"), store, event, "mincut", "networkx")
    assert plan.cascade
    plan = dataclasses.replace(plan, event=dataclasses.replace(event, type="".join(["mig", "rate"])))
    assert erasure_targets(plan, frozenset()) == ([], {}, [])


def test_a_correction_given_at_run_time_keeps_its_replacement_as_a_retained_input():
    """candidates.py `correct = event.type == "correct"` → `is` survived (and `is not`, killed by
    `test_partitions_need_both_a_forget_and_a_reference_set`): an event type built at run time must
    still count a correction's replacement as retained, not as a forget input."""
    from memsteward.policy.loader import load_policy
    from memsteward.repair.artifacts import Artifact
    from memsteward.repair.candidates import assign
    from memsteward.repair.events import Event
    from memsteward.repair.scope import Scope, States

    policy = load_policy("policies/default.yaml")
    arts = {"r": Artifact("r", "record", None, 1, {"t": "old"}), "n": Artifact("n", "skill", "neural")}
    scope = Scope(("r",), frozenset({"r", "n"}), [("r", "n"), ("x", "n")], arts, States())
    kind = "".join(["cor", "rect"])
    correct = Event(kind, ("r",), (Artifact("r", "record", None, 1, {"t": "new"}),))
    assert not assign(policy, scope, correct).cells["n"].partitions  # no forget set


def test_fingerprints_stop_at_the_limit_even_when_a_window_adds_two_needles():
    """erasure.py `if len(out) >= limit` → `==` survived: a leaf adds its raw and JSON-escaped
    needles together, so the count passes the limit without meeting it."""
    from memsteward.repair.erasure import fingerprints

    leaves = ["caf\u00e9 au lait, s'il vous pla\u00eet", "cr\u00e8me br\u00fbl\u00e9e pour deux personnes"]
    assert len(fingerprints(leaves)) == 4  # one window each (≤ 2·WINDOW), raw + escaped
    assert len(fingerprints(leaves, limit=1)) == 1 and len(fingerprints(leaves, limit=3)) == 3


def test_budget_lagrangian_returns_nothing_when_no_multiplier_fits_the_budget(monkeypatch):
    """closure.py `if cost(best) > cap: best = ∅` → `cost(best) is cap` survived: a candidate worth
    more than 2**64 per unit of cost is chosen at every multiplier the search reaches; it does not
    fit β, so the Lagrangian path must return the empty selection, not an over-budget one."""
    from memsteward.repair import closure
    from memsteward.repair.candidates import Candidate

    monkeypatch.setattr(closure, "BUDGET_EXACT_LIMIT", 0)
    sel = closure.budgeted_closure([Candidate("a", "cache", None, "recompute", "op", (), True, 1e30, 1.0)], 0.0, 0.5)
    assert (sel.selected, sel.method) == (frozenset(), "budget/lagrangian")


def test_budgeted_closure_enumerates_up_to_twenty_selectable_candidates():
    """closure.py `BUDGET_EXACT_LIMIT = 20` → 19 / 21 survived: exact enumeration (optimal) for at
    most 20 selectable candidates, the Lagrangian path from 21 (the module docstring's contract).
    Each candidate costs 1 and β = 1, so the enumeration visits only 21 or 22 sets."""
    from memsteward.repair import closure
    from memsteward.repair.candidates import Candidate

    def cands(n: int) -> list:
        return [Candidate(f"c{i:02d}", "cache", None, "recompute", "op", (), True, 0.5, 1.0) for i in range(n)]

    assert closure.budgeted_closure(cands(20), 1.0, 1.0).method == "budget/enumeration"
    assert closure.budgeted_closure(cands(21), 1.0, 1.0).method != "budget/enumeration"


def test_a_lease_taken_over_names_the_new_holder_in_its_message(tmp_path):
    """leases.py `f"… by process {row[2]} on {row[1]} at {row[3]}"` (NumberReplacer) survived: the
    fencing error's message must name the new holder's pid, host and time."""
    import pytest

    from memsteward.errors import EventHeld
    from memsteward.store import Store

    s = Store.open(str(tmp_path / "s.db"), create=True)
    try:
        s.conn.execute("INSERT INTO event_lease(event_id, owner, host, pid, started, acquired, session) "
                       "VALUES (7, 'someone-else', 'host-b', 4242, NULL, '2026-01-02T03:04:05Z', NULL)")
        with pytest.raises(EventHeld) as held:
            s._check_lease(7)
        assert str(held.value).startswith("event 7 was taken over by process 4242 on host-b at 2026-01-02T03:04:05Z")
        assert held.value.holder == {"event": 7, "host": "host-b", "pid": 4242, "since": "2026-01-02T03:04:05Z"}
    finally:
        s.close()


def test_stored_selection_is_sorted_when_the_cascade_order_is_not():
    """plan.py `islice(selection, 1, None)` → `islice(selection, 2, None)` survived: the shortcut
    that reads the selection off the cascade must check every adjacent pair, or a cascade order
    a, c, b is stored unsorted."""
    import dataclasses

    from memsteward.policy.loader import load_policy
    from memsteward.repair.events import load_event
    from memsteward.repair.plan import compute_plan
    from memsteward.store import Store

    store = Store.open("engine/data/repair/store.json")
    plan = compute_plan(load_policy("policies/default.yaml"), store,
                        load_event("engine/data/repair/event-delete.json", store.snapshot()), "mincut", "networkx")
    chosen = dataclasses.replace(plan.selection, selected=frozenset({"a", "b", "c"}))
    for cascade in (("a", "c", "b"), ("a", "b", "c"), ("c", "b", "a")):
        doc = dataclasses.replace(plan, cascade=cascade, selection=chosen).to_columns()
        assert doc["selection"] == ["a", "b", "c"], cascade


def test_estimate_ignores_sampled_coalitions_outside_the_middle_strata():
    """stratified.py `1 <= len(c) <= k − 2` → `k * 2` survived: a LOO coalition or M passed in the
    sample is not a middle-stratum draw and must be ignored (the mutant files it under a stratum
    that does not exist)."""
    from memsteward.clearance.stratified import estimate

    ids = ("a", "b", "c")
    game = Game(Task("q", "r", tuple(Memory(i) for i in ids)),
                TableEvaluator({frozenset(ids): 1.0, frozenset(): 0.0, frozenset("a"): 0.5,
                                frozenset("ab"): 0.9}), trials=1)
    effects = {"a": 0.0, "b": 0.0, "c": 0.0}
    alone = estimate(game, effects, [frozenset("a")])
    est = estimate(game, effects, [frozenset("a"), frozenset("ab"), frozenset(ids)])
    assert est.counts == {1: 1} and est.radius == alone.radius and est.contribution == alone.contribution


def test_a_metadata_range_keeps_its_upper_bound_in_the_domain():
    """encoding.py `hi = mf.max if not hi_set else …` → `if hi_set` survived: with one policy the
    first range must be taken as it is (the mutant dropped the upper bound, so out-of-range
    metadata entered the domain)."""
    import z3

    from memsteward.policy.encoding import Encoding

    enc = Encoding([Policy.model_validate({"kinds": {"record": {"meta": {"score": {"min": 0, "max": 10}}}},
                                           "modes": [{"when": {}, "mode": "remove"}]})])
    x = enc.meta["score"]
    for value, fits in ((11, False), (-1, False), (10, True), (0, True)):
        s = z3.Solver()
        s.add(enc.domain(), x == value)
        assert (s.check() == z3.sat) == fits, value


def test_a_one_sided_range_bounds_only_its_side():
    """encoding.py `[x >= lo] if lo is not None else []` (and the `hi` part) → `if not …` survived:
    a rule's metadata range with one bound keeps exactly that bound."""
    import z3

    from memsteward.policy.encoding import Encoding

    x = z3.Real("x")

    def allows(lo: float | None, hi: float | None, value: float) -> bool:
        s = z3.Solver()
        s.add(Encoding._range(lo, hi, x), x == value)
        return s.check() == z3.sat

    assert allows(1, None, 5) and not allows(1, None, 0)
    assert allows(None, 3, 0) and not allows(None, 3, 4)
    assert allows(1, 3, 2) and not allows(1, 3, 0) and not allows(1, 3, 4) and allows(None, None, -7)


def test_array_pass_decides_each_cell_as_the_one_by_one_pass():
    """candidates.py `_decide(…, bool(k & 2), bool(k & 1))` (NumberReplacer: `k & 3`, `k & 1`,
    `k & 0`, `k & 2`) and `_meta_key(f, meta) if (f := fields[kind]) else ()` → `if not …` survived:
    the array pass (patched on for a small cascade) must give every member the cell and mode of the
    one-by-one pass, across the four sufficient × partitions classes and two metadata values.
    Roots r, q, t deleted; x outside C(F). Support: at least 1 retained and half of the inputs."""
    from unittest import mock

    from memsteward.policy.loader import load_policy
    from memsteward.repair import scope as scope_module
    from memsteward.repair.artifacts import Artifact
    from memsteward.repair.candidates import assign
    from memsteward.repair.events import Event
    from memsteward.repair.scope import Scope, States

    policy = load_policy("policies/default.yaml")
    arts = {i: Artifact(i, "record", None, 1, {"t": i}) for i in ("r", "q", "t")}
    arts.update({i: Artifact(i, "skill", "neural") for i in ("n1", "n2", "n3")})
    arts["s1"] = Artifact("s1", "summary", None, 1, "s")
    arts.update({i: Artifact(i, "cache", None, 1, "c", {"age_days": age}) for i, age in (("c1", 100), ("c2", 10))})
    edges = [("r", "n1"), ("x", "n1"),  # partitions, sufficient (1 of 2)
             ("r", "n2"),  # no partitions, insufficient
             ("r", "n3"), ("q", "n3"), ("t", "n3"), ("x", "n3"),  # partitions, insufficient (1 of 4)
             ("r", "s1"), ("x", "s1"), ("r", "c1"), ("r", "c2")]
    scope = Scope(("r", "q", "t"), frozenset(arts), edges, arts, States())
    event = Event("delete", ("r", "q", "t"))
    one = assign(policy, scope, event)
    want = {"n1": ("sufficient", True), "n2": ("insufficient", False), "n3": ("insufficient", True),
            "s1": ("sufficient", False)}
    assert {i: (one.cells[i].support, one.cells[i].partitions) for i in want} == want
    assert one.cells["c1"].meta == {"age_days": 100} and one.modes["c1"] != one.modes["c2"]
    with mock.patch.multiple(scope_module, PEEL_MIN_MEMBERS=0, PEEL_NARROW=0):
        arrays = assign(policy, scope, event)
    assert arrays.cells == one.cells and arrays.modes == one.modes


def test_a_sufficient_support_given_at_run_time_pins_the_support_dimension():
    """encoding.py `cell.support == "sufficient"` → `is` (open in the earlier run, CPython interns
    the literal): a cell whose support string is built at run time must pin support to true."""
    import z3

    from memsteward.policy.domain import Cell
    from memsteward.policy.encoding import Encoding

    enc = Encoding([Policy.model_validate({"kinds": {"record": {}}, "modes": [{"when": {}, "mode": "remove"}]})])
    pin = enc.finite_pins(Cell("record", None, "delete", "".join(["suffi", "cient"]), False))["support"]
    s = z3.Solver()
    s.add(pin, z3.Not(enc.support))
    assert s.check() == z3.unsat


def test_array_assignment_groups_edges_whose_children_repeat_apart():
    """candidates.py `if np.any(dst[1:] < dst[:-1])` → `==` survived: edges whose children come
    s3, s1, s2, s3, s1 (no two equal side by side) are not grouped by child, and must be grouped."""
    from unittest import mock

    from bench.repair_policies import load
    from memsteward.repair import scope as scope_module
    from memsteward.repair.artifacts import Artifact
    from memsteward.repair.candidates import assign
    from memsteward.repair.events import Event
    from memsteward.repair.scope import Scope, States, order_and_cycles

    policy = load("tool-agent")
    event = Event("delete", ("r",))
    arts = {"r": Artifact("r", "record"), **{s: Artifact(s, "summary") for s in ("s1", "s2", "s3")}}
    edges = [("s1", "s3"), ("r", "s1"), ("s1", "s2"), ("s2", "s3"), ("x", "s1")]  # s3, s1, s2, s3, s1
    scope = Scope(("r",), frozenset({"r", "s1", "s2", "s3"}), edges, arts, States())
    one_by_one = assign(policy, scope, event, None, order_and_cycles(scope))
    with mock.patch.multiple(scope_module, PEEL_MIN_MEMBERS=0, PEEL_NARROW=0):
        levels = assign(policy, scope, event)
    assert {c.id: c.prerequisites for c in levels.candidates} == {"s1": (), "s2": ("s1",), "s3": ("s1", "s2")}
    assert levels.candidates == one_by_one.candidates and dict(levels.modes) == dict(one_by_one.modes)


def test_schema_refuses_an_unexpected_property_when_additional_properties_is_false():
    """oracles.py `schema.get("additionalProperties") is False` → `is True` was not covered."""
    from memsteward.repair.oracles import schema_errors

    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}
    assert schema_errors({"a": 1, "b": 2}, schema) == ["$: unexpected 'b'"]
    assert schema_errors({"a": 1}, schema) == []
    assert schema_errors({"a": 1, "b": 2}, {"type": "object", "properties": {"a": {"type": "integer"}}}) == []


def test_the_surrogate_is_an_immutable_value():
    """stratified.py `@dataclass(frozen=True)` (Surrogate) → `frozen=False` survived."""
    import dataclasses

    import pytest

    from memsteward.clearance.stratified import screen_surrogate

    f = screen_surrogate(1.0, 0.0, {"a": 0.0, "b": 0.0, "c": 0.0})
    field = dataclasses.fields(f)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(f, field, None)


def test_lineage_reads_a_truncated_common_posting_list_whole():
    """lineage.py `if len(probed[rarest]) <= COMMON` → `>=` survived: when every trigram of a window
    is common, its probe (cut at COMMON + 1 ids) is not the whole list; the list must be read whole."""
    from memsteward.repair.lineage import COMMON, candidates

    everyone = [f"a{k:04d}" for k in range(COMMON + 50)]
    few = ["b1", "b2"]

    def posting(h: int, limit: int | None, ids: list = everyone) -> list:
        return ids if limit is None else ids[:limit]

    root = {"r": "the quick brown fox jumps over the lazy dog again and again"}
    assert candidates(root, 5, posting) == set(everyone)
    assert candidates(root, 5, lambda h, limit: posting(h, limit, few)) == set(few)


def test_a_holder_another_user_runs_is_alive(monkeypatch):
    """leases.py `except PermissionError: return True` → `False` was not covered: a pid that exists
    but belongs to another user (kill(pid, 0) refused) is a live holder, never taken over."""
    import os
    import socket

    from memsteward.store import leases

    def refuse(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "kill", refuse)
    assert leases._alive("someone", socket.gethostname(), os.getpid() + 1, None)


def test_ortools_takes_capacities_up_to_the_int64_bound_exactly():
    """closure.py `2·Σ|ints| + 2 < INT64_SAFE` → `2·Σ / 2`, `2·Σ % 2`, `1·Σ + 2`, `3·Σ + 2`,
    `2·Σ + 1` survived (no test came near 2**62). The weight 2**61 is read as its shortest decimal,
    2**61 + 48; with λ = 1 the capacities are p_a = 2**61 + 48 − c_a and p_b = 1 (gcd 1, so not
    rescaled): Σ = 2**61 + 1 and 2**61 − 1 fall back to networkx, Σ = 2**61 − 2 (2·Σ + 2 = 2**62 − 2)
    is cut by OR-Tools."""
    from memsteward.repair.candidates import Candidate
    from memsteward.repair.closure import max_weight_closure

    def method(cost_a: float) -> str:
        cands = [Candidate("a", "cache", None, "recompute", "op", (), True, 2.0 ** 61, cost_a),
                 Candidate("b", "cache", None, "recompute", "op", (), True, 1.0, 0.0)]
        sel = max_weight_closure(cands, 1.0, "ortools")
        assert sel.selected == frozenset({"a", "b"})
        return sel.method

    assert "exceed int64" in method(48.0)  # Σ = 2**61 + 1
    assert method(51.0) == "mincut/ortools"  # Σ = 2**61 − 2
    assert "exceed int64" in method(50.0)  # Σ = 2**61 − 1: 2·Σ + 2 = 2**62, not below it


def test_a_delete_on_a_file_store_leaves_its_wal_truncated(tmp_path):
    """store/erasure.py `self.path != ":memory:"` → `>=` survived: an absolute path ("/…" sorts
    before ":") skipped the checkpoints of the physical erasure step, so the WAL still held the
    event's pages (and, before the row, no `checkpoint` in the report)."""
    import os

    from memsteward.policy.loader import load_policy
    from memsteward.repair.artifacts import parse_store_document
    from memsteward.repair.events import parse_event
    from memsteward.repair.execute import run_event
    from memsteward.store import Store

    db = str(tmp_path / "s.db")
    assert os.path.isabs(db)
    store = Store.open(db, create=True)
    try:
        store.import_snapshot(parse_store_document({
            "artifacts": [{"id": "r", "kind": "record", "content": {"text": "The user is allergic to peanuts."}},
                          {"id": "keep", "kind": "record", "content": {"text": "The user lives in Berlin."}},
                          {"id": "s", "kind": "summary", "content": "Allergy and home."}],
            "edges": [{"src": "r", "dst": "s", "type": "influence"},
                      {"src": "keep", "dst": "s", "type": "influence"}]}, "<test>"))
        run_event(store, load_policy("policies/default.yaml"),
                  parse_event({"type": "delete", "roots": ["r"]}, store.snapshot()), "mincut", "networkx")
        (detail,) = [json.loads(d) for (d,) in store.conn.execute(
            "SELECT detail FROM audit WHERE action = 'physical-erasure'")]
        assert detail["checkpoint"] is True
        assert os.path.getsize(db + "-wal") == 0
    finally:
        store.close()


def test_residual_width_divides_the_upper_residual_by_the_stratum_size():
    """stratified.py `inside = (r_lo / size, r_hi / size)` → `r_hi % size` (open since the earlier
    run: equal at |T| = 1 there). f ≡ 0 (v̂(M) = v̂(∅) = 0, all LOO effects 0), so r ∈ [0, 1]:
    inside = (0, 1/s), outside = (−1/(K − s), 0). K = 4, s = 2: w = 1/2 + 1/2 = 1 (the mutant: 1 % 2
    = 1, w = 1.5). K = 5, s = 3: w = 1/3 + 1/2 = 5/6."""
    import pytest

    from memsteward.clearance.stratified import residual_width, screen_surrogate

    def width(k: int, s: int) -> float:
        return residual_width(screen_surrogate(0.0, 0.0, {f"m{j}": 0.0 for j in range(k)}), k, s)

    assert width(4, 2) == pytest.approx(1.0) and width(5, 3) == pytest.approx(5 / 6)


def test_the_call_budget_drops_only_the_permutations_it_cannot_pay():
    """attribution.py `sample[:-1]` (the call budget caps L) → `[:-2]` / `[:0]` (open since the
    earlier run): with a budget that pays exactly the prefixes of the first L − 1 permutations,
    L − 1 are kept, not fewer."""
    from memsteward.clearance.attribution import all_coalitions, fixed_attribution, prefixes, sample_permutations

    ids = ("a", "b", "c", "d")
    values = {c: len(c) / 4 for c in all_coalitions(ids)}
    task = Task("q", "r", tuple(Memory(i) for i in ids))
    sample = sample_permutations(ids, 6, 0)
    probe = Game(task, TableEvaluator(values), trials=1)
    need, full = probe.cost_of(prefixes(sample[:-1])), probe.cost_of(prefixes(sample))
    assert probe.cost_of(prefixes(sample[:-2])) < need < full  # each permutation brings new coalitions
    att = fixed_attribution(Game(task, TableEvaluator(values), trials=1, call_budget=need), 6, 0, False)
    assert (att.permutations, att.stop, att.sample) == (5, "budget", tuple(sample[:-1]))


def test_scan_counts_every_byte_it_read(tmp_path):
    """repair/erasure.py (issue 33's survivor `total = 0` → `-1`): the scan reports the bytes it read."""
    from memsteward.repair.erasure import scan

    a, b = tmp_path / "a.db", tmp_path / "a.db-wal"
    a.write_bytes(b"x" * 1000 + b"needle")
    b.write_bytes(b"y" * 37)
    out = scan([str(a), str(b)], [b"needle"])
    assert out["bytes"] == 1043 and out["found"] == {"a.db": 1}
