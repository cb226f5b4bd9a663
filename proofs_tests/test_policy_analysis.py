"""The Z3 policy analysis agrees with brute-force enumeration of the Φ_μ domain.

Random rule lists over random kind declarations (with numeric metadata thresholds) are
analysed by Z3 and, independently, by evaluating :func:`memsteward.policy.domain.decide` on every
finite cell × representative metadata value. Totality, vacuity, shadowing and type safety must
agree exactly, and every counterexample cell Z3 reports must be a real one.
"""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given
from hypothesis import strategies as st

from memsteward.policy.analysis import analyze, gap_cells
from memsteward.policy.domain import Cell, decide, enumerate_cells, firing_rule, matches
from memsteward.policy.loader import PolicySource, SourceMap, load_policy_source
from memsteward.policy.model import ARCHITECTURES, EVENTS, Policy

THRESHOLDS = [0, 1, 2.5, 5, 10]


@st.composite
def policies(draw) -> Policy:
    kinds = {"record": {}}
    if draw(st.booleans()):
        kinds["cache"] = {"replayable": True, "meta": {"age": {"min": 0, "max": 10}}}
    if draw(st.booleans()):
        kinds["summary"] = {"replayable": draw(st.booleans())}
    if draw(st.booleans()):
        archs = draw(st.lists(st.sampled_from(ARCHITECTURES), min_size=1, max_size=3, unique=True))
        kinds["skill"] = {"architectures": archs}
    # kinds the policy declares itself, by role (issue 34): the analysis must range over them too
    if draw(st.booleans()):
        kinds["profile"] = {"role": "text", "meta": {"score": {"min": 0, "max": 10}}}
    if draw(st.integers(0, 2)) == 0:
        kinds["blob"] = {"role": "opaque"}
    if draw(st.integers(0, 2)) == 0:
        kinds["tool"] = {"role": "skill", "architectures": draw(
            st.lists(st.sampled_from(ARCHITECTURES), min_size=1, max_size=2, unique=True))}
    declared = list(kinds)
    skill_archs = sorted({a for k in ("skill", "tool") if k in kinds for a in kinds[k]["architectures"]})
    rules = []
    for _ in range(draw(st.integers(0, 6))):
        when: dict = {}
        if draw(st.booleans()):
            when["kind"] = draw(st.lists(st.sampled_from(declared), min_size=1, max_size=2, unique=True))
        if skill_archs and draw(st.integers(0, 3)) == 0:
            when["arch"] = draw(st.lists(st.sampled_from(skill_archs), min_size=1, max_size=2, unique=True))
        if draw(st.integers(0, 2)) == 0:
            when["event"] = draw(st.lists(st.sampled_from(EVENTS), min_size=1, max_size=2, unique=True))
        if draw(st.integers(0, 2)) == 0:
            when["support"] = draw(st.sampled_from(["sufficient", "insufficient"]))
        if draw(st.integers(0, 3)) == 0:
            when["partitions"] = draw(st.booleans())
        if "cache" in kinds and draw(st.integers(0, 2)) == 0 and when.get("kind") in (None, ["cache"]):
            op = draw(st.sampled_from(["gt", "ge", "lt", "le", "eq", "ne"]))
            when["meta"] = {"age": {op: draw(st.sampled_from(THRESHOLDS))}}
        elif "profile" in kinds and draw(st.integers(0, 2)) == 0 and when.get("kind") in (None, ["profile"]):
            when["meta"] = {"score": {draw(st.sampled_from(["gt", "le", "eq"])): draw(st.sampled_from(THRESHOLDS))}}
        mode = draw(st.sampled_from(["remove", "remove", "recompute", "regen", "param"]))
        rules.append({"when": when, "mode": mode})
    if draw(st.booleans()):
        rules.append({"when": {}, "mode": "remove"})
    oracles = [{"mode": m, "oracles": [{"oracle": "schema"}]}
               for m in draw(st.lists(st.sampled_from(["recompute", "regen", "param"]), unique=True))]
    if draw(st.booleans()) and skill_archs:
        oracles.append({"mode": "regen", "arch": "chain", "oracles": [{"oracle": "sandbox"}]})
    return Policy.model_validate({"kinds": kinds, "modes": rules, "validation": oracles})


def _findings(policy: Policy):
    return analyze(PolicySource(policy, SourceMap("<generated>", {})))


def _by_rule(findings, code):
    return {f.related["rule"] for f in findings if f.code == code}


@given(policies())
def test_totality_matches_brute_force(policy: Policy):
    cells = list(enumerate_cells(policy))
    brute_gaps = [c for c in cells if decide(policy, c) is None]
    found, more = gap_cells(policy, limit=10_000)
    assert bool(found) == bool(brute_gaps)
    for witness, region in found:
        assert decide(policy, witness) is None  # the counterexample is real
        # every concrete cell of the reported region (at the witness's metadata) is a gap
        for c in cells:
            if c.kind == region["kind"] and c.arch == region["arch"] and dict(c.meta) == dict(witness.meta) and all(
                region[d] == "*" or getattr(c, d) == region[d] for d in ("event", "support", "partitions")
            ):
                assert decide(policy, c) is None
    # every brute-force gap's finite part is covered by some reported region
    regions = [r for _, r in found]
    for c in brute_gaps:
        assert any(r["kind"] == c.kind and r["arch"] == c.arch and all(
            r[d] == "*" or getattr(c, d) == r[d] for d in ("event", "support", "partitions")) for r in regions), c


@given(policies())
def test_vacuous_and_shadowed_rules_match_brute_force(policy: Policy):
    cells = list(enumerate_cells(policy))
    findings = _findings(policy)
    matched = {i for i, r in enumerate(policy.modes) if any(matches(r.when, c) for c in cells)}
    fired = {firing_rule(policy, c) for c in cells} - {None}
    assert _by_rule(findings, "vacuous") == {i + 1 for i in range(len(policy.modes)) if i not in matched}
    assert _by_rule(findings, "shadowed") == {i + 1 for i in matched if i not in fired}
    for f in findings:
        if f.code == "shadowed":  # the named rules really cover the shadowed one
            i = f.related["rule"] - 1
            covering = [policy.modes[j - 1].when for j in f.related["shadowed_by"]]
            for c in cells:
                if matches(policy.modes[i].when, c):
                    assert any(matches(w, c) for w in covering)


@given(policies())
def test_type_safety_matches_brute_force(policy: Policy):
    cells = list(enumerate_cells(policy))
    findings = _findings(policy)
    bad_param, bad_recompute, bad_regen, no_oracle = set(), set(), set(), set()
    for c in cells:
        i = firing_rule(policy, c)
        if i is None:
            continue
        mode = policy.modes[i].mode
        if mode == "param" and not (policy.role(c.kind) == "skill" and c.arch == "neural"):
            bad_param.add(i + 1)
        if mode == "regen" and policy.role(c.kind) == "opaque":
            bad_regen.add(i + 1)
        if mode == "recompute" and not policy.kinds[c.kind].replayable:
            bad_recompute.add(i + 1)
        if mode != "remove" and not policy.oracles_for(mode, c.kind, c.arch):
            no_oracle.add(i + 1)
    type_rules = {f.related["rule"] for f in findings if f.code == "type"}
    assert {r for r in type_rules if policy.modes[r - 1].mode == "param"} == bad_param
    assert {r for r in type_rules if policy.modes[r - 1].mode == "recompute"} == bad_recompute
    assert {r for r in type_rules if policy.modes[r - 1].mode == "regen"} == bad_regen
    assert _by_rule(findings, "oracle") == no_oracle
    for f in findings:  # every counterexample cell is real and fires the named rule
        if f.code in {"type", "oracle"}:
            cell = Cell(**{**f.cell, "meta": f.cell["meta"]})
            assert firing_rule(policy, cell) == f.related["rule"] - 1


def test_shipped_default_has_no_findings():
    src = load_policy_source("policies/default.yaml")
    assert [f for f in analyze(src) if f.severity != "info"] == []


def test_gap_is_reported_with_a_concrete_cell():
    src = load_policy_source("proofs_tests/bad_policies/gap_in_mode_map.yaml")
    gaps = [f for f in analyze(src) if f.code == "totality"]
    assert len(gaps) == 1
    assert gaps[0].cell["kind"] == "summary" and gaps[0].cell["support"] == "insufficient"
    assert gaps[0].related["region"]["event"] == "*"


def test_numeric_gap_between_thresholds():
    """A gap that exists only for a numeric range is found, with a value inside the range."""
    policy = Policy.model_validate({
        "kinds": {"cache": {"replayable": True, "meta": {"age": {"min": 0}}}},
        "modes": [
            {"when": {"meta": {"age": {"le": 30}}}, "mode": "recompute"},
            {"when": {"meta": {"age": {"gt": 90}}}, "mode": "remove"},
        ],
        "validation": [{"mode": "recompute", "oracles": [{"oracle": "replay"}]}],
    })
    (witness, region), = gap_cells(policy)[0]
    assert 30 < witness.meta["age"] <= 90
    assert decide(policy, witness) is None


def test_brute_force_reference_is_not_vacuous():
    """The reference enumeration itself distinguishes gaps (sanity of the oracle)."""
    by_kind = defaultdict(set)
    policy = Policy.model_validate({"kinds": {"record": {}, "cache": {"replayable": True}},
                                    "modes": [{"when": {"kind": "record"}, "mode": "remove"}]})
    for c in enumerate_cells(policy):
        by_kind[c.kind].add(decide(policy, c))
    assert by_kind == {"record": {"remove"}, "cache": {None}}
