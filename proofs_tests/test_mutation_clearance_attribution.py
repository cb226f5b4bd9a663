"""Attribution (``attribution.py``), function by function, against independent references.

Written for issue 33's targeted mutation runs (bench/mutation-targeted-clearance.md): every branch
and both sides of every bound, with values that share no code with the module:

* Shapley values and interactions by brute force over all K! orders, in exact rationals (the
  module uses the |S|!(K−|S|−1)!/K! weights over subsets instead);
* the expected number of distinct coalitions by enumerating every L-tuple of orders;
* the radii and the sample size of Eq. 13 / 42 and the empirical-Bernstein radius worked by hand;
* the call-budget cut against the affordability of every prefix of the sample.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations, permutations, product

import pytest
from clear_helpers import dyadic_table
from hypothesis import given, settings
from hypothesis import strategies as st

from memsteward.clearance.attribution import (
    Attribution,
    all_coalitions,
    bernstein_radius,
    diagnose_pair,
    exact_contribution,
    expected_distinct_coalitions,
    fixed_attribution,
    hoeffding_radius,
    interaction,
    interaction_coalitions,
    loo,
    marginals,
    pair_delta,
    permutations_needed,
    prefixes,
    sample_permutations,
    sampled_contribution,
    screen,
    shapley_weight,
    use_exact,
)
from memsteward.clearance.evaluators import TableEvaluator
from memsteward.clearance.game import Coalition, Game, Memory, Task

TOL = 1e-12


def subsets(ids) -> list[Coalition]:
    return [frozenset(c) for r in range(len(ids) + 1) for c in combinations(ids, r)]


class Asking(TableEvaluator):
    def __init__(self, values) -> None:
        super().__init__(values)
        self.asked: list[Coalition] = []

    def evaluate(self, task, coalitions, trials, seed):
        self.asked.extend(coalitions)
        return super().evaluate(task, coalitions, trials, seed)


def game_of(ids, table, trials=1, **kw) -> Game:
    return Game(Task("q", "r", tuple(Memory(i) for i in ids)), Asking(table), trials=trials, **kw)


def brute_shapley(ids, v) -> dict[str, Fraction]:
    total = {i: Fraction(0) for i in ids}
    orders = list(permutations(ids))
    for order in orders:
        before: frozenset[str] = frozenset()
        for i in order:
            total[i] += Fraction(v[before | {i}]) - Fraction(v[before])
            before = before | {i}
    return {i: t / len(orders) for i, t in total.items()}


def brute_interaction(ids, v, i, j) -> Fraction:
    """E over all orders of Δ_ij v(P) with P the players before both i and j (Eq. 15)."""
    orders = list(permutations(ids))
    total = Fraction(0)
    for order in orders:
        p = frozenset(order[:min(order.index(i), order.index(j))])
        total += (Fraction(v[p | {i, j}]) - Fraction(v[p | {i}]) - Fraction(v[p | {j}]) + Fraction(v[p]))
    return total / len(orders)


# ------------------------------------------------------------------ LOO and the screen


def test_loo_is_the_drop_when_each_memory_leaves_m():
    ids = ["a", "b", "c"]
    table = dyadic_table(ids, 1)
    full = frozenset(ids)
    assert loo(game_of(ids, table)) == {i: table[full] - table[full - {i}] for i in ids}


def test_screen_bounds_are_strict_on_both_sides():
    k = 0.25
    effects = {"lo": -0.5, "at_lo": -0.25, "in_lo": -0.2, "zero": 0.0, "in_hi": 0.2, "at_hi": 0.25, "hi": 0.5}
    assert screen(effects, k) == {"lo": "harm", "at_lo": "inconclusive", "in_lo": "inconclusive",
                                  "zero": "inconclusive", "in_hi": "inconclusive", "at_hi": "inconclusive",
                                  "hi": "benefit"}
    assert screen({"x": -1e-9, "y": 1e-9, "z": 0.0}, 0.0) == {"x": "harm", "y": "benefit", "z": "inconclusive"}


# ------------------------------------------------------------------ exact Shapley


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4])
def test_all_coalitions_are_the_two_to_the_k_subsets_smallest_first(k):
    ids = [f"m{j}" for j in range(k)]
    out = all_coalitions(ids)
    assert len(out) == 2 ** k and set(out) == set(subsets(ids))
    assert [len(c) for c in out] == sorted(len(c) for c in out)


def test_shapley_weight_worked_by_hand():
    # K = 4: |S| = 0..3 → 3!/4!, 1!2!/4!, 2!1!/4!, 3!/4!
    assert [shapley_weight(s, 4) for s in range(4)] == [pytest.approx(x) for x in (1 / 4, 1 / 12, 1 / 12, 1 / 4)]
    assert shapley_weight(0, 1) == 1.0
    for k in range(1, 7):  # over all subsets of the others the weights sum to 1
        assert sum(math.comb(k - 1, s) * shapley_weight(s, k) for s in range(k)) == pytest.approx(1.0, abs=TOL)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("seed", [3, 4])
def test_exact_contribution_is_brute_force_shapley(k, seed):
    ids = [f"m{j}" for j in range(k)]
    table = dyadic_table(ids, 10 * k + seed)
    game = game_of(ids, table)
    got = exact_contribution(game)
    want = brute_shapley(ids, table)
    assert set(got) == set(ids)
    for i in ids:
        assert got[i] == pytest.approx(float(want[i]), abs=TOL), i
    assert game.coalitions_evaluated == 2 ** k


def test_exact_contribution_reads_the_requested_trials():
    ids = ["a", "b"]
    outcomes = {c: (1.0, 0.0) for c in subsets(ids)}
    outcomes[frozenset(ids)] = (1.0, 1.0)
    game = Game(Task("q", "r", tuple(Memory(i) for i in ids)), TableEvaluator(outcomes=outcomes), trials=2)
    # all trials: v(M) = 1, others 0.5 → ψ = 0.25 each; first trial only: v ≡ 1 → ψ = 0
    assert exact_contribution(game) == pytest.approx({"a": 0.25, "b": 0.25})
    assert exact_contribution(game.fork(), trials=1) == pytest.approx({"a": 0.0, "b": 0.0})


# ------------------------------------------------------------------ sampled Shapley


def test_sample_permutations_are_seeded_uniform_orders():
    ids = ["a", "b", "c"]
    out = sample_permutations(ids, 600, 7)
    assert len(out) == 600 and all(sorted(p) == ids and isinstance(p, tuple) for p in out)
    assert out == sample_permutations(ids, 600, 7) and out != sample_permutations(ids, 600, 8)
    counts = {p: out.count(p) for p in permutations(ids)}
    assert all(60 <= n <= 140 for n in counts.values())  # 100 each expected, ±4σ
    assert sample_permutations(ids, 0, 1) == []


def test_prefixes_are_every_prefix_of_every_order_once_in_first_seen_order():
    perms = [("a", "b", "c"), ("a", "c", "b"), ("a", "b", "c")]
    assert prefixes(perms) == [frozenset(), frozenset("a"), frozenset("ab"), frozenset("abc"), frozenset("ac")]
    assert prefixes([]) == []
    assert prefixes([("x",)]) == [frozenset(), frozenset("x")]


def test_marginals_per_order_add_up_to_v_m_minus_v_empty_and_match_by_hand():
    ids = ["a", "b", "c"]
    table = dyadic_table(ids, 5)
    perms = [("b", "a", "c"), ("c", "b", "a")]
    xs = marginals(game_of(ids, table), perms)
    v = lambda *m: table[frozenset(m)]  # noqa: E731
    assert xs == {"a": [v("a", "b") - v("b"), v("a", "b", "c") - v("b", "c")],
                  "b": [v("b") - v(), v("b", "c") - v("c")],
                  "c": [v("a", "b", "c") - v("a", "b"), v("c") - v()]}
    for ell in range(2):
        assert sum(xs[i][ell] for i in ids) == pytest.approx(v("a", "b", "c") - v(), abs=TOL)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_every_order_once_makes_the_sampled_estimate_exact(k):
    ids = [f"m{j}" for j in range(k)]
    table = dyadic_table(ids, 77 + k)
    got = sampled_contribution(game_of(ids, table), list(permutations(ids)))
    want = brute_shapley(ids, table)
    assert all(got[i] == pytest.approx(float(want[i]), abs=TOL) for i in ids)
    # one order: ψ̂ is that order's marginals; no order: 0
    one = sampled_contribution(game_of(ids, table), [tuple(ids)])
    assert one[ids[0]] == pytest.approx(table[frozenset(ids[:1])] - table[frozenset()], abs=TOL)
    assert sampled_contribution(game_of(ids, table), []) == {i: 0.0 for i in ids}


# ------------------------------------------------------------------ radii and sample sizes


def test_hoeffding_radius_worked_by_hand():
    # ε = sqrt(2 ln(2K/δ) / L)
    assert hoeffding_radius(10, 4) == pytest.approx(math.sqrt(2 * math.log(8 / 0.05) / 10), rel=1e-12)
    assert hoeffding_radius(1, 1, confidence=0.5) == pytest.approx(math.sqrt(2 * math.log(4.0)), rel=1e-12)
    assert hoeffding_radius(3, 0) == hoeffding_radius(3, 1)  # K = 0 counts as one memory
    assert hoeffding_radius(0, 4) == math.inf and hoeffding_radius(-1, 4) == math.inf
    assert hoeffding_radius(1, 4) > hoeffding_radius(2, 4)


def test_permutations_needed_worked_by_hand():
    assert permutations_needed({}, 0.1) == 0
    # γ = min |ψ + τ| = |−0.3 + 0.1| = 0.2, K = 2: L = ⌈2/0.04 · ln(4/0.05)⌉
    want = math.ceil(2 / 0.2 ** 2 * math.log(2 * 2 / 0.05))
    assert permutations_needed({"a": -0.3, "b": 0.5}, 0.1) == want == 220
    assert permutations_needed({"a": -0.3, "b": 0.5}, 0.1, confidence=0.5) == math.ceil(50 * math.log(8.0))
    assert permutations_needed({"a": -0.1, "b": 0.5}, 0.1) is None  # exactly on the threshold
    assert permutations_needed({"a": -0.1 + 1e-13}, 0.1) is None  # within 1e-12
    assert permutations_needed({"a": -0.1 + 1e-6}, 0.1) is not None  # just beyond it


def test_bernstein_radius_small_samples_and_a_hand_value():
    assert bernstein_radius([], 0.05) == math.inf and bernstein_radius([0.5], 0.05) == math.inf
    # xs = (0, 1): mean 0.5, sample variance 0.5; ln(4/δ) = ln 80
    log = math.log(4 / 0.05)
    assert bernstein_radius([0.0, 1.0], 0.05) == pytest.approx(math.sqrt(2 * 0.5 * log / 2) + 14 * log / 3, rel=1e-12)
    # constant xs: no variance term; n = 4: 14 ln(4/δ) / 9
    assert bernstein_radius([0.25] * 4, 0.1) == pytest.approx(14 * math.log(40.0) / 9, rel=1e-12)


def brute_distinct(k: int, count: int) -> Fraction:
    """The mean over every ``count``-tuple of orders of |prefixes ∪ LOO coalitions|."""
    ids = [f"m{j}" for j in range(k)]
    full = frozenset(ids)
    loo_set = {full - {i} for i in ids}
    orders = list(permutations(ids))
    total = 0
    tuples = 0
    for pick in product(orders, repeat=count):
        seen = set(loo_set)
        for o in pick:
            seen.update(frozenset(o[:r]) for r in range(k + 1))
        total += len(seen)
        tuples += 1
    return Fraction(total, tuples)


@pytest.mark.parametrize("k,count", [(0, 0), (0, 1), (1, 0), (1, 2), (2, 0), (2, 1), (2, 3), (3, 0), (3, 1),
                                     (3, 2), (3, 3), (4, 1), (4, 2)])
def test_expected_distinct_coalitions_by_enumerating_every_sample(k, count):
    assert expected_distinct_coalitions(k, count) == pytest.approx(float(brute_distinct(k, count)), abs=1e-9)


def test_use_exact_modes_and_the_boundary_of_auto():
    assert use_exact(30, 1, "always") and not use_exact(1, 1000, "never")
    # K = 5, L = 16: 32 ≤ 1.25 · 28.08 (exact); premium 0: 32 > 28.08 (sampled)
    assert use_exact(5, 16, "auto") and not use_exact(5, 16, "auto", premium=0.0)
    # K = 2, L = 1: every coalition is M, ∅ or a LOO one either way: exact == sampled, ≤ holds
    assert use_exact(2, 1, "auto", premium=0.0) and use_exact(1, 1, "auto", premium=0.0)
    assert not use_exact(2, 1, "auto", premium=-0.01)
    # K = 6, L = 4: E = 1 + 6(1 − (5/6)^4) + 15(1 − (14/15)^4) + 20(1 − (19/20)^4) + 15(1 − (14/15)^4) + 6 + 1
    e = 1 + 6 * (1 - (5 / 6) ** 4) + 30 * (1 - (14 / 15) ** 4) + 20 * (1 - 0.95 ** 4) + 6 + 1
    exact_calls, sampled_calls = 7 + (64 - 7), 7 + (e - 7)
    premium = exact_calls / sampled_calls - 1
    assert use_exact(6, 4, "auto", premium=premium + 1e-9) and not use_exact(6, 4, "auto", premium=premium - 1e-9)


def test_use_exact_default_premium_is_the_policys_a_quarter():
    # 2^K / E[distinct]: K = 4, L = 4: 16 / 11.84 = 1.351 (> 1.25: sampled); L = 8: 1.126 (exact);
    # K = 5, L = 8: 1.419 (sampled); K = 6, L = 16: 1.425 (sampled); K = 3, L = 2: 1.2 (exact)
    from memsteward.policy.model import ClearanceSpec

    assert ClearanceSpec().exact_premium == 0.25
    for k, count, want in [(4, 4, False), (4, 8, True), (5, 8, False), (6, 16, False), (3, 2, True)]:
        ratio = 2 ** k / expected_distinct_coalitions(k, count)
        assert (ratio <= 1.25) == want, (k, count, ratio)
        assert use_exact(k, count, "auto") == want, (k, count)
        assert use_exact(k, count, "auto") == use_exact(k, count, "auto", 0.25, 1, None)


def test_use_exact_weighs_the_screen_at_full_trials_and_the_rest_at_sample_trials():
    # K = 6, L = 4, E ≈ 27.0: screen 7 coalitions × trials, the others × min(sample_trials, trials)
    e = expected_distinct_coalitions(6, 4)

    def ratio(trials, sample_trials):
        t = min(sample_trials or trials, trials)
        return (7 * trials + 57 * t) / (7 * trials + (e - 7) * t)

    for trials, st_ in [(1, None), (4, 1), (4, 2), (4, 8), (2, None)]:
        r = ratio(trials, st_)
        assert use_exact(6, 4, "auto", premium=r - 1 + 1e-9, trials=trials, sample_trials=st_), (trials, st_)
        assert not use_exact(6, 4, "auto", premium=r - 1 - 1e-9, trials=trials, sample_trials=st_), (trials, st_)
    assert ratio(4, 1) < ratio(1, None)  # cheaper sampled coalitions make the screen weigh more


# ------------------------------------------------------------------ interactions


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_exact_interaction_is_the_expectation_over_all_orders(k):
    ids = [f"m{j}" for j in range(k)]
    table = dyadic_table(ids, 300 + k)
    for i, j in combinations(ids, 2):
        game = game_of(ids, table)
        got = interaction(game, i, j, None)
        assert got == pytest.approx(float(brute_interaction(ids, table, i, j)), abs=TOL), (i, j)
        assert set(game.evaluator.asked) == set(interaction_coalitions(game, i, j, None))
        assert interaction(game_of(ids, table), j, i, None) == pytest.approx(got, abs=TOL)  # symmetric


@pytest.mark.parametrize("k", [3, 4])
def test_sampled_interaction_over_every_order_once_is_exact(k):
    ids = [f"m{j}" for j in range(k)]
    table = dyadic_table(ids, 500 + k)
    orders = list(permutations(ids))
    game = game_of(ids, table)
    got = interaction(game, ids[0], ids[-1], orders)
    assert got == pytest.approx(float(brute_interaction(ids, table, ids[0], ids[-1])), abs=TOL)
    assert set(game.evaluator.asked) == set(interaction_coalitions(game, ids[0], ids[-1], orders))


def test_sampled_interaction_worked_by_hand_and_its_coalitions():
    ids = ["a", "b", "c"]
    table = dyadic_table(ids, 9)
    v = lambda *m: table[frozenset(m)]  # noqa: E731
    perms = [("c", "a", "b"), ("a", "c", "b"), ("b", "c", "a")]
    # P_ab: {c}, ∅, ∅ → (Δ({c}) + 2Δ(∅)) / 3
    d_c = v("a", "b", "c") - v("a", "c") - v("b", "c") + v("c")
    d_0 = v("a", "b") - v("a") - v("b") + v()
    assert interaction(game_of(ids, table), "a", "b", perms) == pytest.approx((d_c + 2 * d_0) / 3, abs=TOL)
    assert pair_delta(table, frozenset("c"), "a", "b") == pytest.approx(d_c, abs=TOL)
    assert interaction_coalitions(game_of(ids, table), "a", "b", perms) == [
        frozenset("c"), frozenset("ca"), frozenset("cb"), frozenset("cab"),
        frozenset(), frozenset("a"), frozenset("b"), frozenset("ab")]
    assert interaction(game_of(ids, table), "a", "b", []) == 0.0
    assert interaction_coalitions(game_of(ids, table), "a", "b", []) == []


def test_diagnose_pair_bounds_are_strict_on_both_sides():
    assert [diagnose_pair(w, 0.1) for w in (0.5, 0.1 + 1e-9, 0.1, 0.0, -0.1, -0.1 - 1e-9, -0.5)] == [
        "redundant", "redundant", "additive", "additive", "additive", "joint", "joint"]


# ------------------------------------------------------------------ fixed attribution


def test_fixed_attribution_exact_reports_radius_zero_and_no_sample():
    ids = ["a", "b", "c"]
    table = dyadic_table(ids, 11)
    att = fixed_attribution(game_of(ids, table), 8, 0, exact=True)
    want = brute_shapley(ids, table)
    assert att.contribution == pytest.approx({i: float(want[i]) for i in ids}, abs=TOL)
    assert (att.exact, att.permutations, att.radius, att.stop, att.sample, att.estimator, att.samples) == (
        True, 0, {i: 0.0 for i in ids}, "exact", (), "exact", 0)


def test_fixed_attribution_sampled_without_budget_uses_every_permutation():
    ids = ["a", "b", "c", "d"]
    table = dyadic_table(ids, 12)
    att = fixed_attribution(game_of(ids, table), 6, 3, exact=False, confidence=0.9)
    sample = tuple(sample_permutations(ids, 6, 3))
    assert (att.exact, att.permutations, att.stop, att.sample, att.estimator) == (False, 6, "fixed", sample, "permutation")
    assert att.contribution == pytest.approx(sampled_contribution(game_of(ids, table), sample), abs=TOL)
    assert att.radius == {i: hoeffding_radius(6, 4, 0.9) for i in ids}
    assert Attribution({}, False, 0, {}, "fixed").samples == 0


def test_fixed_attribution_keeps_the_longest_affordable_prefix_of_the_sample():
    ids = ["a", "b", "c", "d"]
    table = dyadic_table(ids, 13)
    sample = sample_permutations(ids, 6, 0)
    for budget in range(0, 18):
        game = game_of(ids, table, call_budget=budget)
        att = fixed_attribution(game, 6, 0, exact=False)
        fits = [n for n in range(7) if game_of(ids, table).cost_of(prefixes(sample[:n])) <= budget]
        n = max(fits)
        assert att.permutations == n and att.sample == tuple(sample[:n]), budget
        assert att.stop == ("fixed" if n == 6 else "budget"), budget
        assert att.radius == {i: hoeffding_radius(n, 4) for i in ids}, budget


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 5), st.integers(0, 10_000), st.integers(1, 30))
def test_sampled_attribution_is_efficient_for_any_sample(k, seed, count):
    ids = [f"m{j}" for j in range(k)]
    table = dyadic_table(ids, seed)
    att = fixed_attribution(game_of(ids, table), count, seed, exact=False)
    assert math.fsum(att.contribution.values()) == pytest.approx(table[frozenset(ids)] - table[frozenset()], abs=1e-9)
