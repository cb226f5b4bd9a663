"""The Z3 encoding of Φ_μ (``encoding.py``) against the pure-Python semantics, point by point.

Written for issue 33's targeted mutation runs (bench/mutation-targeted-clearance.md). Each formula
is evaluated on concrete cells by substituting the cell's values into it (no solver search), and
compared with :func:`memsteward.policy.domain.matches` / ``NumericCondition.holds`` / the policies'
declared ranges, at every threshold, one ulp either side and half a unit either side: a bound that
moves from ``<`` to ``<=`` changes the value at the threshold itself.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st
from test_policy_analysis import policies

from memsteward.policy.domain import Cell, enumerate_cells, firing_rule, matches
from memsteward.policy.encoding import Encoding, real, solve
from memsteward.policy.model import ARCHITECTURES, EVENTS, NumericCondition, Policy, When

OPS = ("gt", "ge", "lt", "le", "eq", "ne")


def at(enc: Encoding, formula, cell: Cell, meta_default: float = 0.0) -> bool:
    """The truth value of ``formula`` on ``cell`` (every variable replaced by the cell's value)."""
    subs = [(enc.kind, z3.IntVal(enc.kinds.index(cell.kind) if cell.kind in enc.kinds else -7)),
            (enc.arch, z3.IntVal(-1 if cell.arch is None else ARCHITECTURES.index(cell.arch))),
            (enc.event, z3.IntVal(EVENTS.index(cell.event))),
            (enc.support, z3.BoolVal(cell.support == "sufficient")),
            (enc.partitions, z3.BoolVal(cell.partitions))]
    subs += [(x, real(cell.meta.get(f, meta_default))) for f, x in enc.meta.items()]
    value = z3.simplify(z3.substitute(formula, *subs))
    assert z3.is_true(value) or z3.is_false(value), value
    return z3.is_true(value)


def policy(kinds: dict, modes: list | None = None) -> Policy:
    return Policy.model_validate({"kinds": kinds, "modes": modes or [{"when": {}, "mode": "remove"}]})


def points(t: float) -> list[float]:
    return [t - 0.5, math.nextafter(t, -math.inf), t, math.nextafter(t, math.inf), t + 0.5]


# ------------------------------------------------------------------ atoms


@pytest.mark.parametrize("x", [0.1, -2.5, 3.0, 1e-300, 2.0 ** 60 + 1, 1 / 3, 0.0])
def test_real_is_the_exact_rational_of_the_float(x):
    v = z3.simplify(real(x))
    assert Fraction(v.as_fraction().numerator, v.as_fraction().denominator) == Fraction(x)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("t", [-1.5, 0.0, 0.1, 7.0])
def test_each_bound_of_a_condition_agrees_with_holds_at_and_around_its_threshold(op, t):
    pol = policy({"cache": {"replayable": True, "meta": {"age": {}}}})
    enc = Encoding([pol])
    cond = NumericCondition(**{op: t})
    for x in points(t):
        cell = Cell("cache", None, "delete", "sufficient", False, {"age": x})
        assert at(enc, enc.condition("age", cond), cell) == cond.holds(x), (op, t, x)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(OPS), st.sampled_from([-1.0, 0.0, 0.25, 2.0, 5.0]), min_size=1, max_size=3),
       st.sampled_from([-1.0, 0.0, 0.25, 2.0, 5.0]), st.sampled_from([-0.5, -1e-9, 0.0, 1e-9, 0.5]))
def test_a_condition_with_several_bounds_is_their_conjunction(bounds, base, shift):
    pol = policy({"cache": {"replayable": True, "meta": {"age": {}}}})
    enc = Encoding([pol])
    cond = NumericCondition(**bounds)
    x = base + shift
    cell = Cell("cache", None, "delete", "sufficient", False, {"age": x})
    assert at(enc, enc.condition("age", cond), cell) == cond.holds(x)


def test_kind_and_arch_atoms():
    pol = policy({"record": {}, "skill": {"architectures": ["prompt", "chain"]}})
    enc = Encoding([pol])
    assert enc.kinds == ["record", "skill"]
    assert z3.is_false(z3.simplify(enc.is_kind("cache")))  # not declared by any policy
    assert str(z3.simplify(enc.is_kind("skill"))) == "kind == 1"
    assert str(enc.is_arch(None)) == "arch == -1"
    assert [str(enc.is_arch(a)) for a in ARCHITECTURES] == ["arch == 0", "arch == 1", "arch == 2"]
    assert enc.archs_of("skill") == ("prompt", "chain") and enc.archs_of("record") == (None,)
    assert enc.pin("skill", "chain").eq(z3.And(enc.is_kind("skill"), enc.is_arch("chain")))


# ------------------------------------------------------------------ guards and rule firing


@settings(max_examples=8, deadline=None)
@given(policies())
def test_every_guard_and_every_firing_agree_with_the_python_semantics(pol: Policy):
    enc = Encoding([pol])
    for cell in enumerate_cells(pol):
        first = firing_rule(pol, cell)
        assert at(enc, enc.declared(pol), cell)
        for index, rule in enumerate(pol.modes):
            assert at(enc, enc.guard(rule.when, pol), cell) == matches(rule.when, cell), (index, cell)
            assert at(enc, enc.fires(pol, index), cell) == (first == index), (index, cell)
        assert at(enc, enc.uncovered(pol), cell) == (first is None), cell


def test_each_guard_field_alone():
    pol = policy({"record": {}, "cache": {"replayable": True, "meta": {"age": {"min": 0, "max": 10}}},
                  "skill": {"architectures": ["neural", "prompt"]}})
    enc = Encoding([pol])
    whens = [When(), When(kind=["cache"]), When(kind=["record", "skill"]), When(arch=["prompt"]),
             When(event=["correct", "migrate"]), When(support="sufficient"), When(support="insufficient"),
             When(partitions=True), When(partitions=False), When(meta={"age": NumericCondition(ge=3, lt=7)}),
             When(kind=["cache"], meta={"age": NumericCondition(ne=5)})]
    cells = [Cell(k, a, e, s, p, {"age": x} if k == "cache" else {})
             for k in pol.kinds for a in pol.architectures(k) for e in EVENTS
             for s in ("sufficient", "insufficient") for p in (False, True)
             for x in ([0.0, 3.0, math.nextafter(7.0, 0.0), 5.0, 7.0, 10.0] if k == "cache" else [0.0])]
    for w in whens:
        for cell in cells:
            assert at(enc, enc.guard(w, pol), cell) == matches(w, cell), (w, cell)
    # a condition on a field no kind of the policy declares never holds
    other = When(meta={"size": NumericCondition(gt=0)})
    assert z3.is_false(z3.simplify(enc.guard(other, pol)))
    # the guard is built once per rule object, again for an equal but distinct object
    w = When(kind=["cache"])
    assert enc.guard(w, pol) is enc.guard(w, pol)
    assert enc.guard(When(kind=["cache"]), pol).eq(enc.guard(w, pol))


def test_a_kind_listed_in_a_guard_but_not_declared_by_that_policy_never_matches():
    old = policy({"record": {}, "cache": {"replayable": True}})
    new = policy({"record": {}})
    enc = Encoding([old, new])
    w = When(kind=["cache"])
    cell = Cell("cache", None, "delete", "sufficient", False)
    assert at(enc, enc.guard(w, old), cell) and not at(enc, enc.guard(w, new), cell)
    assert at(enc, enc.declared(old), cell) and not at(enc, enc.declared(new), cell)


def test_a_cached_guard_is_used_only_for_the_policy_it_was_built_for():
    """The guard cache is keyed by ids. A policy freed and a copy made at its address (``model_copy``
    shares the rules, ``when`` included) must not get the old policy's formula: the entry's id
    collision is simulated by filing the old entry under the copy's id."""
    old = policy({"record": {}, "cache": {"replayable": True}})
    new = old.model_copy(update={"kinds": {"record": old.kinds["record"]}})
    enc = Encoding([old, new])
    w = When(kind=["cache"])
    cell = Cell("cache", None, "delete", "sufficient", False)
    assert at(enc, enc.guard(w, old), cell)
    enc._guards[(id(w), id(new))] = enc._guards[(id(w), id(old))]
    assert not at(enc, enc.guard(w, new), cell)


# ------------------------------------------------------------------ the domain and the declared ranges


def test_domain_takes_the_union_of_the_policies_ranges():
    a = policy({"cache": {"replayable": True, "meta": {"age": {"min": 0, "max": 10}, "size": {"min": 1}}}})
    b = policy({"cache": {"replayable": True, "meta": {"age": {"min": 5, "max": 20}, "size": {"max": 3}}},
                "profile": {"role": "text", "meta": {"score": {"min": -1, "max": 1}}}})
    enc = Encoding([a, b])

    def ok(kind, **meta):
        return at(enc, enc.domain(), Cell(kind, None, "delete", "sufficient", False, meta))

    # age: [0, 10] ∪ [5, 20] → [0, 20]
    assert ok("cache", age=0.0, size=1.0) and ok("cache", age=20.0, size=1.0)
    assert not ok("cache", age=math.nextafter(0.0, -1.0), size=1.0) and not ok("cache", age=20.5, size=1.0)
    # size: min only in a, max only in b → no bound on either side
    assert ok("cache", age=1.0, size=-100.0) and ok("cache", age=1.0, size=100.0)
    # score: one policy's range
    assert ok("profile", score=-1.0) and ok("profile", score=1.0)
    assert not ok("profile", score=-1.5) and not ok("profile", score=1.5)
    # the single-policy ranges (declared) stay each policy's own
    cell = Cell("cache", None, "delete", "sufficient", False, {"age": 15.0, "size": 2.0})
    assert not at(enc, enc.declared(a), cell) and at(enc, enc.declared(b), cell)
    cell = Cell("cache", None, "delete", "sufficient", False, {"age": 2.0, "size": 0.5})
    assert not at(enc, enc.declared(a), cell) and not at(enc, enc.declared(b), cell)
    cell = Cell("cache", None, "delete", "sufficient", False, {"age": 5.0, "size": 1.0})
    assert at(enc, enc.declared(a), cell) and at(enc, enc.declared(b), cell)
    assert enc.domain() is enc.domain()  # built once
    assert enc.declared(a) is enc.declared(a)


RANGED = {  # the cache kind's "age" range in each policy ({} : declared without bounds; None: not declared)
    "none": None, "open": {}, "0-10": {"min": 0, "max": 10}, "5-20": {"min": 5, "max": 20},
    "min3": {"min": 3}, "max7": {"max": 7},
}


def _ranged_policy(name: str) -> Policy:
    meta = {} if RANGED[name] is None else {"age": RANGED[name]}
    return policy({"cache": {"replayable": True, "meta": meta}, "record": {}})


@pytest.mark.parametrize("names", list(itertools.permutations(["none", "0-10", "5-20"], 3))
                         + list(itertools.permutations(["0-10", "min3", "max7"], 3))
                         + [("open", "0-10"), ("0-10", "open"), ("min3", "5-20"), ("none", "max7"), ("max7", "none")])
def test_the_domain_bounds_a_field_by_the_union_of_the_ranges_of_the_policies_that_declare_it(names):
    declaring = [RANGED[n] for n in names if RANGED[n] is not None]
    los, his = [r.get("min") for r in declaring], [r.get("max") for r in declaring]
    lo = None if None in los else min(los)  # a side stays bounded only if every declaring policy bounds it
    hi = None if None in his else max(his)
    enc = Encoding([_ranged_policy(n) for n in names])
    for x in [-50.0, *points(0.0), *points(3.0), *points(5.0), *points(7.0), *points(10.0), *points(20.0), 50.0]:
        want = (lo is None or x >= lo) and (hi is None or x <= hi)
        cell = Cell("cache", None, "delete", "sufficient", False, {"age": x})
        assert at(enc, enc.domain(), cell) == want, (names, x)
        assert at(enc, enc.domain(), Cell("record", None, "delete", "sufficient", False, {"age": x}))  # not its field


@pytest.mark.parametrize("lo,hi", [(None, None), (0.0, None), (None, 4.0), (1.0, 4.0)])
def test_one_policy_range_bounds_exactly_its_declared_sides(lo, hi):
    mf = {k: v for k, v in (("min", lo), ("max", hi)) if v is not None}
    pol = policy({"cache": {"replayable": True, "meta": {"age": mf}}})
    enc = Encoding([pol])
    for x in [*points(1.0), *points(4.0), *points(0.0), -50.0, 50.0]:
        want = (lo is None or x >= lo) and (hi is None or x <= hi)
        cell = Cell("cache", None, "delete", "sufficient", False, {"age": x})
        assert at(enc, enc.domain(), cell) == want, x
        assert at(enc, enc.declared(pol), cell) == want, x


def test_domain_bounds_the_event_and_the_architecture():
    pol = policy({"record": {}, "skill": {"architectures": ["chain"]}})
    enc = Encoding([pol])
    base = z3.And(enc.domain(), enc.pin("record", None))
    assert solve(base, enc.event == 0) is not None and solve(base, enc.event == len(EVENTS) - 1) is not None
    assert solve(base, enc.event == -1) is None and solve(base, enc.event == len(EVENTS)) is None
    assert solve(enc.domain(), enc.pin("skill", "chain")) is not None
    assert solve(enc.domain(), enc.pin("skill", "neural")) is None and solve(enc.domain(), enc.pin("skill", None)) is None
    assert solve(enc.domain(), enc.pin("record", "chain")) is None
    assert solve(enc.domain(), enc.kind == 2) is None and solve(enc.domain(), enc.kind == -1) is None



# Policies whose own domains differ in every way declared() can tell: no kind at all (a valid
# policy: ``kinds: {}``), one kind, a restricted skill, one-sided and two-sided metadata ranges.
DECLARED_POLICIES = {
    "none": ({}, [{"when": {}, "mode": "regen"}]),
    "none-event-rule": ({}, [{"when": {"event": ["delete"]}, "mode": "regen"}]),
    "record": ({"record": {}}, None),
    "skill-cache": ({"skill": {"architectures": ["prompt", "chain"]},
                     "cache": {"replayable": True, "meta": {"age": {"min": 0, "max": 10}}}}, None),
    "cache-profile": ({"cache": {"replayable": True, "meta": {"age": {"min": 5}, "size": {"max": 3}}},
                       "profile": {"role": "text"}}, None),
}


def reference_declared(p: Policy, cell: Cell) -> bool:
    """In ``p``'s own domain: a declared kind, one of its architectures, every declared range."""
    spec = p.kinds.get(cell.kind)
    if spec is None:
        return False
    archs = (tuple(spec.architectures) or ARCHITECTURES) if p.role(cell.kind) == "skill" else (None,)
    if cell.arch not in archs:
        return False
    for f, mf in spec.meta.items():
        x = cell.meta.get(f, 0.0)
        if (mf.min is not None and x < mf.min) or (mf.max is not None and x > mf.max):
            return False
    return True


@pytest.mark.parametrize("a,b", list(itertools.combinations_with_replacement(sorted(DECLARED_POLICIES), 2)))
def test_declared_fires_and_uncovered_on_every_cell_of_both_policies(a, b):
    pa, pb = (policy(*DECLARED_POLICIES[n]) for n in (a, b))
    enc = Encoding([pa, pb])
    kinds = [*enc.kinds, "summary"]  # "summary": declared by neither
    # both sides of every range bound (age ∈ [0, 10] in one policy, ≥ 5 in the other; size ≤ 3)
    ranged = list(itertools.product([-0.5, 0.0, math.nextafter(5.0, 0.0), 5.0, 10.0, math.nextafter(10.0, 20.0)],
                                    [3.0, 3.5]))
    for p in (pa, pb):
        for kind, arch, event in itertools.product(kinds, (None, *ARCHITECTURES), ("delete", "correct")):
            for age, size in ranged if kind == "cache" else [(0.0, 0.0)]:
                cell = Cell(kind, arch, event, "sufficient", False, {"age": age, "size": size})
                want = reference_declared(p, cell)
                assert at(enc, enc.declared(p), cell) == want, (p.kinds, cell)
                first = firing_rule(p, cell) if want else None
                for index in range(len(p.modes)):
                    assert at(enc, enc.fires(p, index), cell) == (first == index), (p.kinds, index, cell)
                assert at(enc, enc.uncovered(p), cell) == (want and first is None), (p.kinds, cell)


def test_a_policy_without_kinds_declares_nothing_and_no_rule_of_it_fires():
    none = policy(*DECLARED_POLICIES["none"])
    other = policy({"record": {}})
    enc = Encoding([none, other])
    assert z3.is_false(z3.simplify(enc.declared(none)))
    assert solve(enc.domain(), enc.fires(none, 0)) is None and solve(enc.domain(), enc.uncovered(none)) is None
    assert solve(enc.domain(), enc.declared(other)) is not None

# ------------------------------------------------------------------ models back to cells


def test_cells_decode_every_finite_dimension_and_exact_metadata():
    pol = policy({"record": {}, "cache": {"replayable": True, "meta": {"age": {"min": 0, "max": 10}}},
                  "skill": {"architectures": ["neural", "prompt", "chain"]}})
    enc = Encoding([pol])
    for kind in pol.kinds:
        for arch in pol.architectures(kind):
            for event in EVENTS:
                for support in ("sufficient", "insufficient"):
                    for part in (False, True):
                        want = Cell(kind, arch, event, support, part, {"age": 2.5} if kind == "cache" else {})
                        pins = enc.finite_pins(want)
                        assert set(pins) == {"kind", "arch", "event", "support", "partitions"}
                        extra = [enc.meta["age"] == real(2.5)] if kind == "cache" else []
                        model = solve(enc.domain(), *pins.values(), *extra)
                        assert model is not None and enc.cell(model) == want
    model = solve(enc.domain(), enc.pin("cache", None), enc.meta["age"] == z3.RealVal("1/3"))
    assert enc.cell(model).meta == {"age": 1 / 3}


def test_solve_returns_none_when_unsat_and_a_model_when_sat():
    x = z3.Int("x")
    assert solve(x > 1, x < 2) is None
    m = solve(x > 1, x < 3)
    assert m is not None and m.eval(x).as_long() == 2
    assert solve() is not None


def test_solve_raises_when_z3_answers_unknown():
    # x³ + y³ + z³ = 33 has integer solutions, but the smallest has 16-digit numbers (Booker, 2019):
    # Z3 finds none and cannot refute it, so its answer at any short timeout is unknown
    a, b, c = z3.Ints("a b c")
    with pytest.raises(TimeoutError, match=r"Z3 returned unknown \(timeout\)"):
        solve(a * a * a + b * b * b + c * c * c == 33, timeout_ms=50)
