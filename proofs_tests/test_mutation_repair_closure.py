"""Systematic tests of ``memsteward.repair.closure`` against independent references (issue 33:
strength that does not depend on one mutant sample).

Every function of the module is checked branch by branch, each boundary from both sides, with the
expected values from a reference written here from the definitions alone: the feasible set as the
least fixed point of "executable and every prerequisite feasible", the closures by enumerating all
subsets, the optimum by brute force over those, the Picard network arc by arc, greedy from its
docstring, and the budgeted selection of unit-cost candidates as "the β most valuable".
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsteward.repair import closure
from memsteward.repair.candidates import Candidate

WEIGHTS = st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 0.3])


def cand(i: str, pre: tuple[str, ...] = (), ex: bool = True, v: float = 1.0, c: float = 1.0) -> Candidate:
    return Candidate(i, "summary", None, "regen", "op", pre, ex, v, c)


@st.composite
def raw_families(draw, max_size: int = 8, planned: bool = False, weights=WEIGHTS) -> list[Candidate]:
    """Candidates with arbitrary prerequisites: cycles, self-loops and unknown ids left as they are
    (not marked non-executable, unlike repair_strategies.candidate_families); with ``planned``, a
    member of a cycle or a candidate with an unknown prerequisite is made non-executable, as
    planning makes them (the min cut's premise: candidates._candidates)."""
    n = draw(st.integers(0, max_size))
    ids = [f"d{k}" for k in range(n)]
    pool = ids + ["gone"]
    out = []
    for i in ids:
        pre = tuple(sorted(set(draw(st.lists(st.sampled_from(pool), max_size=3)))))
        out.append(cand(i, pre, draw(st.integers(0, 5)) != 0, draw(weights), draw(weights)))
    if planned:
        on_cycle = _on_cycle(out)
        out = [c._replace(executable=c.executable and c.id not in on_cycle and "gone" not in c.prerequisites)
               for c in out]
    return out


def _on_cycle(cands: list[Candidate]) -> set[str]:
    """Members of a directed cycle of the prerequisite graph (self-loops included), by reachability."""
    by_id = {c.id: c for c in cands}

    def reach(i: str) -> set[str]:
        seen, todo = set(), [i]
        while todo:
            for j in by_id[todo.pop()].prerequisites:
                if j in by_id and j not in seen:
                    seen.add(j)
                    todo.append(j)
        return seen
    return {c.id for c in cands if c.id in reach(c.id)}


def q(x: float) -> Fraction:
    return Fraction(repr(float(x)))


def feasible_ref(cands: list[Candidate]) -> frozenset[str]:
    """Least fixed point: start empty, add every executable candidate whose prerequisites are all
    known and already feasible, until nothing changes (a cycle never gets in)."""
    by_id = {c.id: c for c in cands}
    got: set[str] = set()
    while True:
        more = {c.id for c in cands if c.executable and all(j in by_id and j in got for j in c.prerequisites)}
        if more <= got:
            return frozenset(got)
        got |= more


def closures_ref(cands: list[Candidate], budget: float | None = None) -> list[frozenset[str]]:
    """Every subset of the feasible candidates closed under prerequisites, cost ≤ β (all subsets)."""
    feas = sorted(feasible_ref(cands))
    by_id = {c.id: c for c in cands}
    out = []
    for r in range(len(feas) + 1):
        for sub in itertools.combinations(feas, r):
            s = frozenset(sub)
            if all(set(by_id[i].prerequisites) <= s for i in s):
                if budget is None or sum((q(by_id[i].cost) for i in s), Fraction(0)) <= q(budget):
                    out.append(s)
    return out


def objective_ref(cands: list[Candidate], sel, lam: float) -> Fraction:
    return sum((q(c.value) - q(lam) * q(c.cost) for c in cands if c.id in sel), Fraction(0))


# --------------------------------------------------------------------------- exact weights


def test_exact_reads_the_shortest_decimal_and_refuses_non_finite():
    assert closure.exact(0.1) == Fraction(1, 10)
    assert closure.exact(0.3) == Fraction(3, 10)
    assert closure.exact(2) == Fraction(2)
    assert closure.exact(-1.5) == Fraction(-3, 2)
    for bad in (math.inf, -math.inf, math.nan):
        with pytest.raises(ValueError, match="non-finite"):
            closure.exact(bad)


def test_profit_is_value_minus_lambda_plus_extra_times_cost():
    c = cand("a", v=0.5, c=0.2)
    assert closure.profit(c, 0.3) == Fraction(1, 2) - Fraction(3, 10) * Fraction(1, 5)
    assert closure.profit(c, Fraction(1, 3)) == Fraction(1, 2) - Fraction(1, 3) * Fraction(1, 5)
    assert closure.profit(c, 0.3, Fraction(1, 10)) == Fraction(1, 2) - Fraction(2, 5) * Fraction(1, 5)


@given(raw_families(), st.sampled_from([0.0, 0.1, 0.3, 1.0, 2.5]), st.data())
def test_objective_and_scaling_match_the_rational_definition(cands, lam, data):
    sel = data.draw(st.sets(st.sampled_from([c.id for c in cands]))) if cands else set()
    assert closure.objective(cands, sel, lam) == objective_ref(cands, sel, lam)
    extra = data.draw(st.sampled_from([Fraction(0), Fraction(1, 7), Fraction(3, 2)]))
    ints, scale = closure._scaled(cands, lam, extra)
    exact = [q(c.value) - (q(lam) + extra) * q(c.cost) for c in cands]
    want_scale = math.lcm(1, *(p.denominator for p in exact))
    assert scale == want_scale
    assert ints == [p * want_scale for p in exact]  # integers: p · L has denominator 1
    assert all(isinstance(n, int) for n in ints)


def test_selection_reports_its_objective_as_a_float_and_a_dict():
    s = closure.Selection(frozenset({"b", "a"}), Fraction(1, 4), "m", True)
    assert s.objective == 0.25
    assert s.as_dict() == {"selected": ["a", "b"], "objective": 0.25, "method": "m", "optimal": True}


def test_a_selection_is_an_immutable_hashable_value():
    """S_ρ is part of the frozen plan ρ: no field can be rebound, and equal selections hash equal
    (usable as a key or in a set)."""
    import dataclasses

    s = closure.select([cand("a", v=2.0, c=1.0), cand("b", v=0.1, c=1.0)], 0.5)
    for f in dataclasses.fields(s):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(s, f.name, getattr(s, f.name))
    twin = closure.Selection(frozenset({"a"}), Fraction(3, 2), "mincut/networkx", True)
    assert s == twin and hash(s) == hash(twin) and len({s, twin}) == 1


# --------------------------------------------------------------------------- feasibility


def test_is_feasible_checks_each_rule_on_its_own():
    cands = [cand("a"), cand("b", ("a",)), cand("x", ex=False), cand("m", ("gone",))]
    assert closure.is_feasible(cands, set())
    assert closure.is_feasible(cands, {"a"})
    assert closure.is_feasible(cands, {"a", "b"})
    assert not closure.is_feasible(cands, {"b"})  # a prerequisite left out
    assert not closure.is_feasible(cands, {"x"})  # v = 0
    assert not closure.is_feasible(cands, {"m"})  # a prerequisite that is not a candidate
    assert not closure.is_feasible(cands, {"nobody"})  # not a candidate at all


@given(raw_families())
def test_closure_feasible_is_the_least_fixed_point(cands):
    assert closure.closure_feasible(cands) == feasible_ref(cands)


def test_closure_feasible_on_hand_graphs():
    # a chain, a cycle, a self-loop, a child of a cycle, a child of a non-executable, a diamond
    cands = [cand("a"), cand("b", ("a",)), cand("c", ("b",)),
             cand("p", ("q",)), cand("q", ("p",)), cand("r", ("p",)),
             cand("s", ("s",)), cand("u", ex=False), cand("w", ("u",)),
             cand("x", ("a", "c")), cand("y", ("x", "b"))]
    assert closure.closure_feasible(cands) == frozenset({"a", "b", "c", "x", "y"})
    assert closure.closure_feasible([]) == frozenset()


@settings(max_examples=60)
@given(raw_families(max_size=7), st.one_of(st.none(), st.sampled_from([0.0, 0.25, 1.0, 2.0, 3.5])))
def test_enumerate_closures_is_every_closed_subset_once(cands, budget):
    got = list(closure.enumerate_closures(cands, budget))
    assert len(got) == len(set(got))  # none twice
    assert set(got) == set(closures_ref(cands, budget))


def test_enumerate_closures_budget_is_inclusive():
    cands = [cand("a", c=1.0), cand("b", c=0.5), cand("c", ("a",), c=0.5)]
    assert set(closure.enumerate_closures(cands, 1.5)) == {
        frozenset(), frozenset({"a"}), frozenset({"b"}), frozenset({"a", "b"}), frozenset({"a", "c"})}
    assert set(closure.enumerate_closures(cands, 0.0)) == {frozenset()}
    assert len(list(closure.enumerate_closures(cands))) == 6  # no budget: {a,b,c} too


# --------------------------------------------------------------------------- the min cut


def test_closure_network_arcs_by_hand():
    cands = [cand("a"), cand("b", ("a", "gone")), cand("c", ex=False), cand("z")]
    ints = [3, -2, 4, 0]
    tails, heads, caps = closure.closure_network(cands, ints)
    inf = 3 + 2 + 4 + 0 + 1
    # node 0 = s, 1 = t, candidate k at k + 2; an unknown prerequisite has no arc; p = 0: no arc
    assert list(zip(tails, heads, caps)) == [(0, 2, 3), (3, 1, 2), (3, 2, inf), (0, 4, 4), (4, 1, inf)]
    assert closure.closure_network([], []) == ([], [], [])


@settings(max_examples=80)
@given(raw_families(max_size=8, planned=True), st.sampled_from([0.0, 0.1, 0.3, 0.5, 1.0, 2.0]),
       st.sampled_from(["networkx", "ortools"]))
def test_min_cut_is_the_minimal_optimal_closure_of_brute_force(cands, lam, backend):
    sel = closure.max_weight_closure(cands, lam, backend)
    options = closures_ref(cands)
    best = max(objective_ref(cands, s, lam) for s in options)
    optimal = [s for s in options if objective_ref(cands, s, lam) == best]
    assert sel.objective_exact == best
    assert sel.selected in optimal
    assert all(sel.selected <= s for s in optimal)  # the unique minimal one: within every optimum
    assert sel.method == f"mincut/{backend}" and sel.optimal is True


@given(raw_families(max_size=8, planned=True), st.sampled_from([0.0, 0.3, 1.0]),
       st.sampled_from([Fraction(1, 4), Fraction(2)]))
def test_a_lagrangian_shift_selects_at_lambda_plus_mu_and_reports_the_objective_at_lambda(cands, lam, mu):
    for backend in ("networkx", "ortools"):
        sel = closure.max_weight_closure(cands, lam, backend, mu)
        options = closures_ref(cands)
        value = {s: sum((q(c.value) - (q(lam) + mu) * q(c.cost) for c in cands if c.id in s), Fraction(0))
                 for s in options}
        best = max(value.values())
        assert value[sel.selected] == best
        assert all(sel.selected <= s for s in options if value[s] == best)
        assert sel.objective_exact == objective_ref(cands, sel.selected, lam)


@pytest.mark.parametrize("backend", closure.BACKENDS)
def test_a_rational_tradeoff_is_read_exactly_in_the_cut_and_its_objective(backend):
    """λ given as a Fraction (as profit and _scaled take it) is not rounded to a float anywhere: at
    λ = 1/3, a (value 1, cost 3) has profit exactly 0 (left out: minimal), b (value 1, cost 2.9)
    profit 1 − 29/30 = 1/30, and c (value 0.5, cost 1) needs b and brings 1/6: Σ = 1/5 exactly (read
    as the float 0.3333333333333333, b's profit would be 0.0333…34 and the sum not 1/5)."""
    lam = Fraction(1, 3)
    cands = [cand("a", v=1.0, c=3.0), cand("b", v=1.0, c=2.9), cand("c", ("b",), v=0.5, c=1.0)]
    sel = closure.max_weight_closure(cands, lam, backend)
    assert sel.selected == frozenset({"b", "c"})
    assert sel.objective_exact == Fraction(1, 30) + Fraction(1, 6) == Fraction(1, 5)
    assert closure.profit(cands[0], lam) == 0
    assert closure.max_weight_closure(cands, 1 / 3, backend).objective_exact != Fraction(1, 5)  # the float λ


def test_min_cut_on_hand_instances():
    # a valuable child pays for its negative parent; a zero-profit candidate is left out (minimal)
    cands = [cand("p", v=0.0, c=1.0), cand("k", ("p",), v=3.0, c=1.0), cand("z", v=1.0, c=1.0),
             cand("n", ex=False, v=9.0, c=0.0), cand("m", ("n",), v=9.0, c=0.0)]
    for backend in closure.BACKENDS:
        sel = closure.max_weight_closure(cands, 1.0, backend)
        assert sel.selected == frozenset({"p", "k"})
        assert sel.objective_exact == Fraction(-1) + Fraction(2)
    # the parent costs more than the child brings: neither
    cands = [cand("p", v=0.0, c=3.0), cand("k", ("p",), v=3.0, c=1.0)]
    for backend in closure.BACKENDS:
        assert closure.max_weight_closure(cands, 1.0, backend).selected == frozenset()
    assert closure.max_weight_closure([], 1.0, "ortools").selected == frozenset()


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="unknown backend 'gurobi'"):
        closure.max_weight_closure([cand("a")], 0.0, "gurobi")


@pytest.mark.parametrize("name", ["gurobi", "scipy", "zzz", "ortools2", "ortoolz", "ortool", "networkx2", "Ortools",
                                  "ORTOOLS", " ortools", "nx", ""])
@pytest.mark.parametrize("cands", [[], [cand("a", v=2.0, c=1.0)]])
def test_only_the_two_backends_are_known_whatever_a_name_sorts_like(name, cands):
    """Names sorting before, between and after "networkx" and "ortools", prefixes and extensions of
    them, other cases: each refused, with or without candidates, directly and through select (a name
    read from a CLI flag or a config file is a fresh string: the known ones still work that way)."""
    with pytest.raises(ValueError, match="unknown backend"):
        closure.max_weight_closure(cands, 0.5, name)
    with pytest.raises(ValueError, match="unknown backend"):
        closure.select(cands, 0.5, "mincut", None, name)
    for known in closure.BACKENDS:
        fresh = "".join(list(known))  # not the interned literal
        assert closure.max_weight_closure(cands, 0.5, fresh).method == f"mincut/{known}"


def test_ortools_builds_a_large_network_from_arrays_and_agrees_with_networkx():
    # more than SMALL_CUT_ARCS arcs: the array branch; a ladder where every other pair pays
    n = 700
    cands = [cand(f"a{k:04d}", (f"a{k - 1:04d}",) if k % 2 else (), True, 0.0 if k % 2 == 0 else (3.0 if k % 4 == 1 else 0.5),
                  1.0) for k in range(n)]
    assert len(closure.closure_network(cands, closure._scaled(cands, 1.0, Fraction(0))[0])[0]) > closure.SMALL_CUT_ARCS
    want = frozenset(i for k in range(0, n, 4) for i in (f"a{k:04d}", f"a{k + 1:04d}"))
    a = closure.max_weight_closure(cands, 1.0, "ortools")
    b = closure.max_weight_closure(cands, 1.0, "networkx")
    assert a.selected == b.selected == want
    assert a.objective_exact == b.objective_exact == Fraction(n // 4)


def test_ortools_hands_capacities_beyond_int64_to_networkx():
    big = [cand("a", v=1e18, c=0.0), cand("b", ("a",), v=2e18, c=0.0), cand("c", v=-1e18, c=0.0)]
    sel = closure.max_weight_closure(big, 0.0, "ortools")
    assert sel.method == "mincut/ortools→networkx (capacities exceed int64)"
    assert sel.selected == frozenset({"a", "b"}) and sel.objective_exact == Fraction(3 * 10**18)
    small = [cand("a", v=1e3, c=0.0)]
    assert closure.max_weight_closure(small, 0.0, "ortools").method == "mincut/ortools"



def test_ortools_adds_arcs_one_by_one_up_to_the_small_network_bound_and_imports_no_numpy():
    """A network of SMALL_CUT_ARCS arcs is built arc by arc (numpy is not imported: CLI start-up), one
    more arc from arrays (numpy imported); both cuts are right. A fresh process, so that numpy's
    presence says which branch ran."""
    code = ("import sys\nfrom memsteward.repair import closure\nfrom memsteward.repair.candidates import Candidate\n"
            "def family(n):\n"
            "    return [Candidate(f'c{k:05d}', 'summary', None, 'regen', 'op', (), True, 1.0, 0.0) for k in range(n)]\n"
            "for n in (closure.SMALL_CUT_ARCS, closure.SMALL_CUT_ARCS + 1):\n"
            "    cands = family(n)\n"
            "    arcs = len(closure.closure_network(cands, closure._scaled(cands, 0.0, 0)[0])[0])\n"
            "    sel = closure.max_weight_closure(cands, 0.0, 'ortools')\n"
            "    print(arcs, sel.method, len(sel.selected), 'numpy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    n = closure.SMALL_CUT_ARCS
    assert out[:2] == [f"{n} mincut/ortools {n} False", f"{n + 1} mincut/ortools {n + 1} True"]


@pytest.mark.parametrize("cost,method", [(950.0, "mincut/ortools"),
                                         (951.0, "mincut/ortools→networkx (capacities exceed int64)")])
def test_the_int64_bound_of_the_ortools_backend_from_both_sides(cost, method):
    """2·Σ|p| + 2 < 2^62 runs on OR-Tools: Σ|p| = 2^61 − 2 (one below) does, 2^61 − 1 (2·Σ|p| + 2 =
    2^62 exactly) goes to networkx. a (2,305,843,009,213,693,000, the decimal its float is written as)
    needs b (−950 or −951): both are selected, and the backends agree."""
    cands = [cand("a", ("b",), v=2.305843009213693e18, c=0.0), cand("b", v=-cost, c=0.0)]
    assert closure._scaled(cands, 0.0, Fraction(0)) == ([2305843009213693000, -int(cost)], 1)
    assert 2 * (2305843009213693000 + int(cost)) + 2 == 2**62 - 2 * (951 - int(cost))
    sel = closure.max_weight_closure(cands, 0.0, "ortools")
    assert sel.method == method
    assert sel.selected == frozenset({"a", "b"}) and sel.objective_exact == 2305843009213693000 - int(cost)
    assert closure.max_weight_closure(cands, 0.0, "networkx").selected == sel.selected


def test_preload_imports_only_the_named_backend():
    code = ("import sys\nfrom memsteward.repair import closure\n"
            "closure.preload(sys.argv[1])\n"
            "print('networkx' in sys.modules, 'ortools.graph.python.max_flow' in sys.modules)\n")
    seen = {}
    for backend in ("ortools", "networkx", "neither"):
        out = subprocess.run([sys.executable, "-c", code, backend], capture_output=True, text=True, check=True)
        seen[backend] = out.stdout.split()
    assert seen == {"ortools": ["False", "True"], "networkx": ["True", "False"], "neither": ["False", "False"]}


# --------------------------------------------------------------------------- baselines


def greedy_ref(cands: list[Candidate], lam: float) -> frozenset[str]:
    """The docstring's greedy: by w/c descending (c = 0 first), ties by id; a feasible candidate
    joins with its unselected prerequisites (transitively) when their total profit is positive."""
    by_id = {c.id: c for c in cands}
    feas = feasible_ref(cands)
    chosen: set[str] = set()

    def key(c: Candidate):
        return (-(math.inf if c.cost == 0 else c.value / c.cost), c.id)

    for c in sorted(cands, key=key):
        if c.id in chosen or c.id not in feas:
            continue
        group, todo = {c.id}, [c.id]
        while todo:
            for j in by_id[todo.pop()].prerequisites:
                if j in by_id and j not in group:
                    group.add(j)
                    todo.append(j)
        group -= chosen
        if sum((q(by_id[i].value) - q(lam) * q(by_id[i].cost) for i in group), Fraction(0)) > 0:
            chosen |= group
    return frozenset(chosen)


@given(raw_families(max_size=9), st.sampled_from([0.0, 0.1, 0.3, 0.5, 1.0, 2.0]))
def test_greedy_follows_its_definition(cands, lam):
    sel = closure.greedy(cands, lam)
    assert sel.selected == greedy_ref(cands, lam)
    assert sel.objective_exact == objective_ref(cands, sel.selected, lam)
    assert (sel.method, sel.optimal) == ("greedy", False)


def test_greedy_on_hand_instances():
    # ratio order decides: "hi" (ratio 3) takes the shared parent first, then "lo" comes free
    cands = [cand("par", v=0.0, c=1.0), cand("hi", ("par",), v=3.0, c=1.0), cand("lo", ("par",), v=0.5, c=1.0)]
    assert closure.greedy(cands, 0.25).selected == frozenset({"par", "hi", "lo"})
    # a group of profit exactly 0 is not added; a zero-cost candidate comes first (ratio ∞)
    assert closure.greedy([cand("a", v=1.0, c=1.0)], 1.0).selected == frozenset()
    assert closure.greedy([cand("a", v=1.0, c=0.0), cand("b", ("a",), v=0.5, c=1.0)], 1.0).selected == frozenset({"a"})
    # ties by id: x and y have the same ratio 1; x comes first, its group {x, p} is worth 0.5 − 0.75 < 0
    # and is passed over; y's {y, p} (1 − 0.75) joins; x is not visited again
    cands = [cand("p", v=0.0, c=1.5), cand("y", ("p",), v=2.0, c=2.0), cand("x", ("p",), v=1.0, c=1.0)]
    assert closure.greedy(cands, 0.5).selected == frozenset({"p", "y"})

    # the ratio w/c, not w − c nor the profit w − λc, orders the visits (λ = 2): x (ratio 4, w − c 3,
    # profit 2) goes before y (ratio 13/6, w − c 3.5, profit 0.5) and pays for the shared p (profit −1):
    # {x, p} is worth 1, then y joins alone (0.5). Visited first, y's {y, p} (−0.5) would be passed over
    # for good: {x, p} only, worth 1 instead of 1.5
    cands = [cand("p", v=0.0, c=0.5), cand("x", ("p",), v=4.0, c=1.0), cand("y", ("p",), v=6.5, c=3.0)]
    got = closure.greedy(cands, 2.0)
    assert got.selected == frozenset({"p", "x", "y"}) and got.objective_exact == Fraction(3, 2)
    assert got.selected == greedy_ref(cands, 2.0)


def test_baselines_select_what_they_say():
    cands = [cand("a", v=1.0, c=2.0), cand("b", ("a",), v=5.0, c=1.0), cand("x", ex=False), cand("y", ("x",))]
    ra = closure.repair_all(cands, 1.0)
    assert ra.selected == frozenset({"a", "b"}) and ra.objective_exact == Fraction(3)
    assert (ra.method, ra.optimal) == ("repair_all", False)
    for fn, name in ((closure.remove_all, "remove_all"), (closure.no_action, "no_action")):
        s = fn(cands, 1.0)
        assert (s.selected, s.objective_exact, s.method, s.optimal) == (frozenset(), Fraction(0), name, False)


def test_select_dispatches_and_refuses_unknown_selectors():
    cands = [cand("a", v=2.0, c=1.0), cand("b", v=1.0, c=1.0)]
    assert closure.select(cands, 0.5).method == "mincut/networkx"
    assert closure.select(cands, 0.5, backend="ortools").method == "mincut/ortools"
    assert closure.select(cands, 0.5, "mincut", 1.0).selected == frozenset({"a"})  # the budget applies
    assert closure.select(cands, 0.5, "mincut", 1.0).method == "budget/enumeration"
    for name in ("greedy", "repair_all", "remove_all", "no_action"):
        s = closure.select(cands, 0.5, name, 1.0)  # the budget applies to mincut only
        assert s.method == name
    assert closure.select(cands, 0.5, "greedy", 1.0).selected == frozenset({"a", "b"})
    with pytest.raises(ValueError, match="unknown selector 'best'"):
        closure.select(cands, 0.5, "best")
    # names as a config file or a request delivers them: fresh strings, not the interned literals
    fresh = {name: "".join(list(name)) for name in closure.SELECTORS}
    assert closure.select(cands, 0.5, fresh["mincut"]).method == "mincut/networkx"
    assert closure.select(cands, 0.5, fresh["mincut"], 1.0).method == "budget/enumeration"
    for name in ("greedy", "repair_all", "remove_all", "no_action"):
        assert closure.select(cands, 0.5, fresh[name]).method == name


# --------------------------------------------------------------------------- budget β


@settings(max_examples=60)
@given(raw_families(max_size=7), st.sampled_from([0.0, 0.3, 1.0]), st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5]))
def test_brute_force_and_the_exact_budget_are_the_optimum_over_all_closures(cands, lam, beta):
    options = closures_ref(cands, beta)
    best = max(objective_ref(cands, s, lam) for s in options)
    fewest = min(len(s) for s in options if objective_ref(cands, s, lam) == best)
    for sel in (closure.brute_force(cands, lam, beta), closure.budgeted_closure(cands, lam, beta)):
        assert sel.selected in options
        assert sel.objective_exact == best and len(sel.selected) == fewest
        assert sel.optimal is True
    assert closure.budgeted_closure(cands, lam, beta).method == "budget/enumeration"
    assert closure.brute_force(cands, lam, beta).method == "enumeration"


def test_the_exact_budget_stops_at_its_limit_of_selectable_candidates():
    def family(n: int) -> list[Candidate]:  # n selectable, plus non-executables that do not count
        return [cand(f"c{k:02d}", v=1.0, c=1.0) for k in range(n)] + [cand(f"x{k}", ex=False) for k in range(5)]
    assert closure.budgeted_closure(family(closure.BUDGET_EXACT_LIMIT), 0.0, 3.0).method == "budget/enumeration"
    assert closure.budgeted_closure(family(closure.BUDGET_EXACT_LIMIT + 1), 0.0, 3.0).method == "budget/lagrangian"


def unit_costs(n: int) -> list[Candidate]:
    """n independent candidates of cost 1 and distinct values 1, 2, …, n (times 0.25)."""
    return [cand(f"u{k:02d}", v=0.25 * (k + 1), c=1.0) for k in range(n)]


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 3.0, 7.0, 7.5, 24.0])
@pytest.mark.parametrize("backend", closure.BACKENDS)
def test_lagrangian_budget_takes_the_beta_most_valuable_of_unit_cost_candidates(beta, backend):
    cands = unit_costs(25)
    sel = closure.budgeted_closure(cands, 0.0, beta, backend)
    k = int(beta)
    want = frozenset(c.id for c in cands[25 - k:]) if k else frozenset()
    assert sel.selected == want
    assert sel.objective_exact == objective_ref(cands, want, 0.0)
    assert (sel.method, sel.optimal) == ("budget/lagrangian", False)


@pytest.mark.parametrize("backend", closure.BACKENDS)
def test_a_budget_the_min_cut_meets_exactly_is_not_binding(backend):
    cands = unit_costs(25)  # λ = 0.5: the min cut takes values > 0.5, i.e. u02 … u24 (23, cost 23)
    base = closure.max_weight_closure(cands, 0.5, backend)
    assert len(base.selected) == 23
    at = closure.budgeted_closure(cands, 0.5, 23.0, backend)
    assert at.method == "budget/mincut (β not binding)" and at.optimal is True
    assert at.selected == base.selected and at.objective_exact == base.objective_exact
    below = closure.budgeted_closure(cands, 0.5, 22.0, backend)
    assert below.method == "budget/lagrangian"
    assert below.selected == base.selected - {"u02"}


@pytest.mark.parametrize("backend", closure.BACKENDS)
def test_lagrangian_budget_searches_multipliers_above_one_and_keeps_prerequisites(backend):
    # values far above 1 per unit cost: μ must double past 1 before anything is dropped
    cands = [cand(f"v{k:02d}", v=10.0 * (k + 1), c=1.0) for k in range(22)]
    cands.append(cand("kid", ("v00",), v=1000.0, c=1.0))
    sel = closure.budgeted_closure(cands, 0.0, 3.0, backend)
    # the pair (v00, kid) is worth 1010 for cost 2, then v21 (220) for the last unit
    assert sel.selected == frozenset({"v00", "kid", "v21"})
    assert closure.is_feasible(cands, sel.selected)


def test_lagrangian_budget_below_the_cheapest_candidate_selects_nothing():
    cands = unit_costs(21)
    for beta in (0.0, 0.99):
        sel = closure.budgeted_closure(cands, 0.0, beta)
        assert sel.selected == frozenset() and sel.objective_exact == 0


@pytest.mark.parametrize("backend", closure.BACKENDS)
def test_lagrangian_bisection_resolves_the_multiplier_to_two_to_the_minus_forty(backend):
    """β = 1 between two candidates whose values differ by 0.2 · 2^-40 around 0.5 + 2^-40: the
    multiplier interval [a, b) holds the grid point 0.5 + 2^-40 of 40 halvings of [0, 1] and no
    point of 39, so 40 halvings keep b, fewer keep nothing (worked by hand: after n halvings the
    multiplier is the smallest multiple of 2^-n at or above a)."""
    step = 2.0 ** -40
    a, b = 0.5 + 0.9 * step, 0.5 + 1.1 * step
    cands = [cand("a", v=a, c=1.0), cand("b", v=b, c=1.0)] + [cand(f"low{k:02d}", v=0.01, c=1.0) for k in range(20)]
    sel = closure.budgeted_closure(cands, 0.0, 1.0, backend)
    assert sel.method == "budget/lagrangian"
    assert sel.selected == frozenset({"b"})


@pytest.mark.parametrize("backend", closure.BACKENDS)
def test_lagrangian_multiplier_search_gives_up_past_two_to_the_sixty_five(backend):
    """μ doubles from 1 while the selection overspends and stops at the first μ > 2^64, i.e. 2^65,
    where the bisection's upper end is read unchecked (λ = 0, β = 0.5, worked by hand): a candidate
    worth 3.6 · 10^19 per unit of cost (< 2^65 ≈ 3.689 · 10^19) is priced out there and the 21 free
    candidates fit; one worth 3.7 · 10^19 (> 2^65) never is, so no multiplier tried fits and the
    fallback is the empty selection, although the free candidates alone would fit (feasible, not
    optimal: the docstring's Lagrangian)."""
    free = [cand(f"f{k:02d}", v=1.0, c=0.0) for k in range(21)]
    below = closure.budgeted_closure([cand("big", v=3.6e19, c=1.0), *free], 0.0, 0.5, backend)
    assert below.method == "budget/lagrangian"
    assert below.selected == frozenset(c.id for c in free) and below.objective_exact == 21
    above = closure.budgeted_closure([cand("big", v=3.7e19, c=1.0), *free], 0.0, 0.5, backend)
    assert above.method == "budget/lagrangian"
    assert above.selected == frozenset() and above.objective_exact == 0


def topo_ref(cands: list[Candidate]) -> list[str]:
    """The feasible candidates in topological order, the smallest id first among those ready."""
    import heapq

    feas = feasible_ref(cands)
    pre = {c.id: {j for j in c.prerequisites if j in feas} for c in cands if c.id in feas}
    ready = [i for i, p in pre.items() if not p]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        i = heapq.heappop(ready)
        out.append(i)
        for k, p in pre.items():
            if i in p:
                p.discard(i)
                if not p and k not in out:
                    heapq.heappush(ready, k)
    return out


@settings(max_examples=80)
@given(raw_families(max_size=7), st.sampled_from([0.0, 0.5, 1.0]), st.sampled_from([None, 1.0, 2.0]))
def test_brute_force_breaks_ties_by_leaving_out_the_earliest_candidate(cands, lam, beta):
    """Among optimal closures of fewest members, the one whose membership, read in topological
    order (smallest id first among those ready), is lexicographically smallest with "out" before
    "in": the enumeration's first (its docstring)."""
    order = topo_ref(cands)
    options = closures_ref(cands, beta)
    best = max(objective_ref(cands, s, lam) for s in options)
    fewest = min(len(s) for s in options if objective_ref(cands, s, lam) == best)
    tied = [s for s in options if objective_ref(cands, s, lam) == best and len(s) == fewest]
    want = min(tied, key=lambda s: [i in s for i in order])
    assert closure.brute_force(cands, lam, beta).selected == want


@st.composite
def tied_families(draw) -> list[Candidate]:
    """Unit costs and values 1 or 2 (prerequisites as raw_families'): under a budget, many closures tie."""
    fam = draw(raw_families(max_size=7))
    return [c._replace(value=draw(st.sampled_from([1.0, 2.0])), cost=1.0) for c in fam]


@settings(max_examples=80)
@given(tied_families(), st.sampled_from([1.0, 2.0, 3.0]))
def test_brute_force_breaks_ties_on_tie_prone_families(cands, beta):
    order = topo_ref(cands)
    options = closures_ref(cands, beta)
    best = max(objective_ref(cands, s, 0.0) for s in options)
    fewest = min(len(s) for s in options if objective_ref(cands, s, 0.0) == best)
    tied = [s for s in options if objective_ref(cands, s, 0.0) == best and len(s) == fewest]
    assert closure.brute_force(cands, 0.0, beta).selected == min(tied, key=lambda s: [i in s for i in order])


def test_brute_force_ties_by_hand():
    # {a} and {b} are worth the same: the first enumerated leaves a (the earlier id) out
    cands = [cand("a", v=1.0, c=1.0), cand("b", v=1.0, c=1.0)]
    assert closure.brute_force(cands, 0.0, 1.0).selected == frozenset({"b"})
    assert closure.budgeted_closure(cands, 0.0, 1.0).selected == frozenset({"b"})
    # a zero-profit candidate is left out (fewest members), whatever its id
    cands = [cand("a", v=1.0, c=1.0), cand("z", v=0.0, c=0.0)]
    assert closure.brute_force(cands, 0.0).selected == frozenset({"a"})
