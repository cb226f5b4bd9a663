"""G4 predecessor closure (MemoRepair Eq. 1–4, Theorem 1): the min-cut selector is feasible and
exactly optimal; backends agree; greedy never beats it; baselines are feasible."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st
from repair_strategies import TRADEOFFS, candidate_families

from memsteward.repair import closure
from memsteward.repair.candidates import Candidate


@given(candidate_families(), TRADEOFFS)
def test_mincut_is_feasible_and_matches_brute_force(cands, lam):
    sel = closure.max_weight_closure(cands, lam)
    assert closure.is_feasible(cands, sel.selected)  # Eq. 2–3: closed, executable only
    assert all(c.executable for c in cands if c.id in sel.selected)
    ref = closure.brute_force(cands, lam)
    assert sel.objective_exact == ref.objective_exact  # exactly optimal
    assert sel.selected == ref.selected  # the unique minimal optimal closure


@given(candidate_families(max_size=14), TRADEOFFS)
def test_networkx_and_ortools_agree(cands, lam):
    a = closure.max_weight_closure(cands, lam, "networkx")
    b = closure.max_weight_closure(cands, lam, "ortools")
    assert a.selected == b.selected and a.objective_exact == b.objective_exact


@given(candidate_families(max_size=14), TRADEOFFS)
def test_baselines_feasible_and_greedy_never_beats_mincut(cands, lam):
    best = closure.max_weight_closure(cands, lam)
    for name in ("greedy", "repair_all", "remove_all", "no_action"):
        sel = closure.select(cands, lam, name)
        assert closure.is_feasible(cands, sel.selected), name
        assert sel.objective_exact <= best.objective_exact, name


@given(candidate_families(max_size=9, allow_cycles=False), TRADEOFFS, st.sampled_from([0.0, 0.5, 1.0, 2.5, 4.0]))
def test_budget_exact_on_small_instances(cands, lam, beta):
    sel = closure.budgeted_closure(cands, lam, beta)
    cost = sum(Fraction(repr(c.cost)) for c in cands if c.id in sel.selected)
    assert closure.is_feasible(cands, sel.selected) and cost <= Fraction(repr(beta))
    ref = closure.brute_force(cands, lam, beta)
    assert sel.objective_exact == ref.objective_exact


@settings(max_examples=15)
@given(candidate_families(max_size=30, allow_cycles=False), TRADEOFFS, st.sampled_from([1.0, 3.0, 6.0]))
def test_budget_lagrangian_is_feasible(cands, lam, beta):
    old = closure.BUDGET_EXACT_LIMIT
    closure.BUDGET_EXACT_LIMIT = 0
    try:
        sel = closure.budgeted_closure(cands, lam, beta, "ortools")
    finally:
        closure.BUDGET_EXACT_LIMIT = old
    cost = sum(Fraction(repr(c.cost)) for c in cands if c.id in sel.selected)
    assert closure.is_feasible(cands, sel.selected) and cost <= Fraction(repr(beta))


def test_exact_scaling_of_decimal_weights():
    # 0.1 + 0.2 style weights: exact rationals, no float drift between backends
    cands = [Candidate(f"d{k}", "summary", None, "regen", "op", (), True, 0.1 * (k + 1), 0.3) for k in range(7)]
    for lam in (0.3, 1 / 3, 0.7):
        a = closure.max_weight_closure(cands, lam, "networkx")
        b = closure.max_weight_closure(cands, lam, "ortools")
        assert a.selected == b.selected == closure.brute_force(cands, lam).selected


def test_paper_endpoints():
    # λ = 0 recovers Repair all on positive-value candidates; λ → ∞ recovers Remove all (§3.1)
    cands = [Candidate("a", "summary", None, "regen", "op", (), True, 1.0, 1.0),
             Candidate("b", "summary", None, "regen", "op", ("a",), True, 2.0, 1.0)]
    assert closure.max_weight_closure(cands, 0.0).selected == closure.repair_all(cands, 0.0).selected
    assert closure.max_weight_closure(cands, 1e6).selected == frozenset()


@given(candidate_families(max_size=14), TRADEOFFS,
       st.sampled_from([Fraction(0), Fraction(1, 3), Fraction(5, 2**20), Fraction(7, 10)]))
def test_integer_scaling_equals_the_rational_definition(cands, lam, extra):
    """_scaled / objective use one common denominator; the reference is the per-candidate rational
    p_i = w_i − (λ + extra) c_i (Fraction of each float's repr) and the lcm of its reduced denominators."""
    exact = [Fraction(repr(float(c.value))) - (Fraction(repr(float(lam))) + extra) * Fraction(repr(float(c.cost)))
             for c in cands]
    scale = 1
    for p in exact:
        scale = scale * p.denominator // __import__("math").gcd(scale, p.denominator)
    ints, got_scale = closure._scaled(cands, lam, extra)
    assert got_scale == scale
    assert ints == [int(p * scale) for p in exact]
    chosen = {c.id for k, c in enumerate(cands) if k % 2 == 0}
    want = sum((p for c, p in zip(cands, exact) if c.id in chosen), Fraction(0)) if extra == 0 else None
    if want is not None:
        assert closure.objective(cands, chosen, lam) == want
