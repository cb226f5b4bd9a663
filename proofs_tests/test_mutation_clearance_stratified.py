"""The stratified estimator (S2), function by function, against independent references.

Written for issue 33's targeted mutation runs (bench/mutation-targeted-clearance.md): not one test
per surviving mutant, but every branch and both sides of every bound of ``stratified.py``, each
value from a reference that shares no code with the module:

* exact Shapley values by brute force over all K! orders, in exact rationals;
* the surrogate's level, extremes and residual width by enumerating every coalition of a size;
* the estimator's expectation by enumerating **every** sample of a stratum (exact, not statistical):
  the mean of ψ̂ over all n-subsets of stratum s is that stratum's share of the exact ψ;
* the radius from the module docstring's formula with widths found by enumeration;
* the budget cut against the affordability of every prefix.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction
from itertools import combinations, permutations

import pytest
from clear_helpers import dyadic_table
from hypothesis import given, settings
from hypothesis import strategies as st

from memsteward.clearance.evaluators import TableEvaluator
from memsteward.clearance.game import Coalition, Evaluation, Game, Memory, Task
from memsteward.clearance.stratified import (
    Surrogate,
    allocation_order,
    draw,
    estimate,
    residual_width,
    samples_for,
    screen_surrogate,
    stratified_attribution,
    stratified_sample,
)

TOL = 1e-12


def subsets(ids, size=None) -> list[Coalition]:
    sizes = range(len(ids) + 1) if size is None else [size]
    return [frozenset(c) for r in sizes for c in combinations(ids, r)]


def brute_shapley(ids, v) -> dict[str, Fraction]:
    """ψ_i as the mean marginal over all K! orders, in exact rationals (no weights involved)."""
    total = {i: Fraction(0) for i in ids}
    orders = list(permutations(ids))
    for order in orders:
        before: frozenset[str] = frozenset()
        for i in order:
            total[i] += Fraction(v(before | {i})) - Fraction(v(before))
            before = before | {i}
    return {i: t / len(orders) for i, t in total.items()}


def game_of(ids, table, trials=1, **kw) -> Game:
    return Game(Task("q", "r", tuple(Memory(i) for i in ids)), TableEvaluator(table), trials=trials, **kw)


def loo_of(ids, table) -> dict[str, float]:
    full = frozenset(ids)
    return {i: table[full] - table[full - {i}] for i in ids}


# ------------------------------------------------------------------ the surrogate f


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_surrogate_level_is_linear_from_bottom_to_top_and_flat_on_the_last_two(k):
    f = Surrogate({f"m{j}": 0.0 for j in range(k)}, top=0.75, bottom=0.25)
    for size in range(k + 1):
        if size >= k - 1:
            want = Fraction(3, 4)
        else:
            want = Fraction(1, 4) + Fraction(1, 2) * Fraction(size, k - 1)
        assert f.level(size) == pytest.approx(float(want), abs=TOL), size
    if k >= 3:  # strictly between bottom and top in the middle
        assert 0.25 < f.level(1) < 0.75


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_surrogate_value_shapley_and_extremes_by_enumeration(k):
    ids = [f"m{j}" for j in range(k)]
    weights = {i: (-1) ** j * (j + 1) / 8 for j, i in enumerate(ids)}  # mixed signs, distinct
    f = Surrogate(weights, top=0.625, bottom=0.125)
    for c in subsets(ids):
        assert f(c) == pytest.approx(f.level(len(c)) + sum(weights[j] for j in c), abs=TOL)
    exact = brute_shapley(ids, f)
    for i in ids:
        assert f.shapley(i) == pytest.approx(float(exact[i]), abs=TOL), i
    for size in range(k + 1):
        values = [f(c) for c in subsets(ids, size)]
        lo, hi = f.extremes(size)
        assert lo == pytest.approx(min(values), abs=TOL) and hi == pytest.approx(max(values), abs=TOL), size


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_screen_surrogate_matches_the_game_on_m_the_empty_set_and_every_loo_coalition(k):
    ids = [f"m{j}" for j in range(k)]
    table = dyadic_table(ids, k)
    d = loo_of(ids, table)
    f = screen_surrogate(table[frozenset(ids)], table[frozenset()], d)
    full = frozenset(ids)
    assert f(full) == pytest.approx(table[full], abs=TOL)
    assert f(frozenset()) == pytest.approx(table[frozenset()], abs=TOL)
    for i in ids:
        assert f(full - {i}) == pytest.approx(table[full - {i}], abs=TOL), i
    assert dict(f.weight) == d and f.bottom == table[frozenset()]
    assert f.top == pytest.approx(table[full] - sum(d.values()), abs=TOL)


def reference_width(f: Surrogate, ids, size: int) -> float:
    """The width of {r·(1[i∈T]/s − 1[i∉T]/(K−s))} over r ∈ [0 − max f, 1 − min f] on |T| = s."""
    k = len(ids)
    values = [f(c) for c in subsets(ids, size)]
    r_lo, r_hi = 0.0 - max(values), 1.0 - min(values)
    ends = [r / size for r in (r_lo, r_hi)] + [-r / (k - size) for r in (r_lo, r_hi)]
    return max(ends) - min(ends)


@pytest.mark.parametrize("k", [3, 4, 5, 6])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_residual_width_of_every_middle_stratum_by_enumeration(k, seed):
    ids = [f"m{j}" for j in range(k)]
    table = dyadic_table(ids, 10 * k + seed)
    f = screen_surrogate(table[frozenset(ids)], table[frozenset()], loo_of(ids, table))
    for size in range(1, k - 1):
        assert residual_width(f, k, size) == pytest.approx(reference_width(f, ids, size), abs=TOL), size


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 6), st.data())
def test_residual_width_property(k, data):
    ids = [f"m{j}" for j in range(k)]
    w = {i: data.draw(st.integers(-64, 64)) / 64 for i in ids}
    f = Surrogate(w, top=data.draw(st.integers(-64, 128)) / 64, bottom=data.draw(st.integers(0, 64)) / 64)
    for size in range(1, k - 1):
        assert residual_width(f, k, size) == pytest.approx(reference_width(f, ids, size), abs=1e-9)


# ------------------------------------------------------------------ the allocation and the draw


def reference_order(k: int, widths: dict[int, float], total: int) -> list[int]:
    """The module docstring's rule, stated independently: while a stratum with positive width
    has no draw, the widest such (then the smallest s) comes next; after that each draw goes to
    the open stratum whose draw lowers V = Σ_s term_s the most, term_s = w²/n for a partly drawn
    stratum and 0 for an empty or a complete one (ties: wider, then smaller s)."""
    counts = {s: 0 for s in widths}

    def term(s: int, n: int) -> float:
        return widths[s] ** 2 / n if 0 < n < math.comb(k, s) else 0.0

    order = []
    for _ in range(total):
        open_ = [s for s in widths if counts[s] < math.comb(k, s)]
        if not open_:
            break
        empty = [s for s in open_ if counts[s] == 0 and widths[s] > 0]
        if empty:
            best = max(empty, key=lambda s: (widths[s], -s))
        else:
            best = max(open_, key=lambda s: (term(s, counts[s]) - term(s, counts[s] + 1), widths[s], -s))
        counts[best] += 1
        order.append(best)
    return order


@settings(max_examples=120, deadline=None)
@given(st.integers(3, 8), st.data())
def test_allocation_order_follows_the_greedy_rule(k, data):
    widths = {s: float(data.draw(st.integers(0, 6))) for s in range(1, k - 1)}
    total = data.draw(st.integers(0, 3 * 2 ** k // 2))
    order = allocation_order(k, widths, total)
    assert order == reference_order(k, widths, total)
    assert len(order) == min(total, sum(math.comb(k, s) for s in widths))
    for s in widths:
        assert order.count(s) <= math.comb(k, s)


def test_allocation_order_worked_by_hand():
    # K = 5, widths s: 1 → 1, 2 → 2, 3 → 3. First every stratum, widest first: 3, 2, 1.
    # Then gains w²/n − w²/(n+1): s=3: 9/2, s=2: 4/2, s=1: 1/2 → 3; s=3 now 9/2 − 9/3 = 1.5,
    # s=2: 2 → 2; s=3 1.5, s=2 4/2 − 4/3 = 0.667 → 3; s=3 9/3 − 9/4 = 0.75 → 3; then
    # s=3 9/4 − 9/5 = 0.45, s=2 0.667 → 2.
    assert allocation_order(5, {1: 1.0, 2: 2.0, 3: 3.0}, 8) == [3, 2, 1, 3, 2, 3, 3, 2]
    # a tie of gains goes to the wider stratum, a tie of widths to the smaller s
    assert allocation_order(4, {1: 2.0, 2: 2.0}, 2) == [1, 2]
    # completing a stratum gains its whole term: K = 3, s = 1 has 3 coalitions
    assert allocation_order(3, {1: 1.0}, 5) == [1, 1, 1]
    # a zero-width stratum is drawn only when nothing else gains
    assert allocation_order(4, {1: 0.0, 2: 1.0}, 7) == [2, 2, 2, 2, 2, 2, 1]
    assert allocation_order(5, {1: 1.0}, 0) == []


@pytest.mark.parametrize("k,s", [(4, 1), (4, 2), (6, 3), (8, 4), (9, 2)])
def test_draw_exhausts_a_stratum_with_distinct_coalitions_of_its_size(k, s):
    """Both branches (a shuffled enumeration up to 64 coalitions, rejection above: C(8, 4) = 70)."""
    ids = [f"m{j}" for j in range(k)]
    n = math.comb(k, s)
    out = draw(ids, [s] * n, seed=5)
    assert len(out) == n and set(out) == set(subsets(ids, s))
    assert draw(ids, [s] * n, seed=5) == out  # seeded
    mixed = draw(ids, [s, 1, s, 1], seed=9)
    assert [len(c) for c in mixed] == [s, 1, s, 1] and len(set(mixed)) == 4


def reference_draw(players, order, seed) -> list[Coalition]:
    """The documented algorithm, written again: a stratum of at most 64 coalitions is enumerated
    (combinations order), shuffled once and popped from the end; a larger one is drawn by
    rejection, one ``sample`` of the players at a time, until an unseen coalition comes up."""
    rng = random.Random(seed)
    pools: dict[int, list] = {}
    seen: set = set()
    out = []
    for s in order:
        if math.comb(len(players), s) <= 64:
            if s not in pools:
                pools[s] = [frozenset(c) for c in combinations(players, s)]
                rng.shuffle(pools[s])
            c = pools[s].pop()
        else:
            c = frozenset(rng.sample(list(players), s))
            while c in seen:
                c = frozenset(rng.sample(list(players), s))
        seen.add(c)
        out.append(c)
    return out


@pytest.mark.parametrize("k,s", [(64, 1), (64, 63), (65, 1), (65, 64), (8, 4), (7, 3), (6, 3)])
def test_draw_switches_to_rejection_above_64_coalitions_exactly(k, s):
    """C(64, 1) = 64: enumerated; C(65, 1) = 65: rejection; the same seeded draws as the reference."""
    ids = [f"m{j:02d}" for j in range(k)]
    for seed in (0, 3):
        order = [s] * 5 + [1, s]
        assert draw(ids, order, seed) == reference_draw(ids, order, seed), (k, s, seed)


def test_draw_is_uniform_within_a_stratum_over_seeds():
    """Every size-2 coalition of 4 players comes first equally often over 6,000 seeds (±5σ)."""
    ids = ["a", "b", "c", "d"]
    counts: dict[Coalition, int] = {}
    for seed in range(6000):
        c = draw(ids, [2], seed)[0]
        counts[c] = counts.get(c, 0) + 1
    assert len(counts) == 6
    sigma = math.sqrt(6000 * (1 / 6) * (5 / 6))
    assert all(abs(n - 1000) <= 5 * sigma for n in counts.values())


# ------------------------------------------------------------------ the estimator (S2)


@pytest.mark.parametrize("k", [3, 4, 5])
@pytest.mark.parametrize("seed", [1, 2])
def test_every_complete_middle_stratum_gives_exact_shapley_and_radius_zero(k, seed):
    ids = [f"m{j}" for j in range(k)]
    table = dyadic_table(ids, 100 * k + seed)
    game = game_of(ids, table)
    sample = [c for s in range(1, k - 1) for c in subsets(ids, s)]
    est = estimate(game, loo_of(ids, table), sample)
    exact = brute_shapley(ids, lambda c: table[c])
    for i in ids:
        assert est.contribution[i] == pytest.approx(float(exact[i]), abs=TOL), i
    assert est.radius == 0.0
    assert est.counts == {s: math.comb(k, s) for s in range(1, k - 1)}


@pytest.mark.parametrize("k", [1, 2])
def test_no_middle_stratum_below_three_players(k):
    """K ≤ 2: (S1) is exact from ∅, the singletons and M; a sample is ignored, the radius is 0."""
    ids = [f"m{j}" for j in range(k)]
    table = dyadic_table(ids, 7 + k)
    game = game_of(ids, table)
    est = estimate(game, loo_of(ids, table), [frozenset(ids[:1])])
    exact = brute_shapley(ids, lambda c: table[c])
    assert all(est.contribution[i] == pytest.approx(float(exact[i]), abs=TOL) for i in ids)
    assert est.radius == 0.0 and est.counts == {}


def reference_s2(ids, table, sample) -> dict[str, float]:
    """(S2) from its definition: ψ̂_i = ψ_i(f) + (1/K) Σ_s [Â_s^r(i) − B̂_s^r(i)], with
    Â_s^r(i) = (K/s)·mean_T r(T)1[i∈T], B̂_s^r(i) = (K/(K−s))·mean_T r(T)1[i∉T] over the
    sample's distinct coalitions of size s (1 ≤ s ≤ K − 2)."""
    k = len(ids)
    full = frozenset(ids)
    d = {i: Fraction(table[full]) - Fraction(table[full - {i}]) for i in ids}
    top, bottom = Fraction(table[full]) - sum(d.values()), Fraction(table[frozenset()])

    def f(c):
        level = top if len(c) >= k - 1 else bottom + (top - bottom) * Fraction(len(c), k - 1)
        return level + sum(d[j] for j in c)

    psi = {i: d[i] + (top - bottom) / k for i in ids}
    distinct = list(dict.fromkeys(c for c in sample if 1 <= len(c) <= k - 2))
    for s in range(1, k - 1):
        cs = [c for c in distinct if len(c) == s]
        if not cs:
            continue
        for i in ids:
            a = Fraction(k, s) * sum((Fraction(table[c]) - f(c) for c in cs if i in c), Fraction(0)) / len(cs)
            b = Fraction(k, k - s) * sum((Fraction(table[c]) - f(c) for c in cs if i not in c), Fraction(0)) / len(cs)
            psi[i] += (a - b) / k
    return {i: float(x) for i, x in psi.items()}


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 6), st.integers(0, 10_000), st.data())
def test_estimate_is_s2_for_any_sample(k, seed, data):
    ids = [f"m{j}" for j in range(k)]
    table = dyadic_table(ids, seed)
    middle = [c for s in range(1, k - 1) for c in subsets(ids, s)]
    sample = data.draw(st.lists(st.sampled_from(middle + [frozenset(), frozenset(ids)]), max_size=12))
    est = estimate(game_of(ids, table), loo_of(ids, table), sample)
    want = reference_s2(ids, table, sample)
    assert all(est.contribution[i] == pytest.approx(want[i], abs=1e-9) for i in ids)
    distinct = set(sample)
    assert est.counts == {s: sum(1 for c in distinct if len(c) == s) for s in range(1, k - 1)}


def test_the_mean_over_every_sample_of_a_stratum_is_exact_shapley():
    """Unbiasedness, exactly: K = 5, strata 1, 2, 3 (5, 10, 10 coalitions). For each stratum s and
    sample size n, the mean of ψ̂ − ψ(f) over all C(C(5, s), n) samples drawn only from s is
    that stratum's share; the three shares add up to ψ − ψ(f) (brute-force Shapley)."""
    ids = ["a", "b", "c", "d", "e"]
    table = dyadic_table(ids, 4242)
    game = game_of(ids, table)
    effects = loo_of(ids, table)
    base = estimate(game, effects, ()).contribution  # ψ(f): no stratum sampled
    exact = brute_shapley(ids, lambda c: table[c])
    for n in (1, 2):
        share = {i: 0.0 for i in ids}
        for s in (1, 2, 3):
            samples = list(combinations(subsets(ids, s), n))
            for sample in samples:
                est = estimate(game, effects, list(sample)).contribution
                for i in ids:
                    share[i] += (est[i] - base[i]) / len(samples)
        for i in ids:
            assert base[i] + share[i] == pytest.approx(float(exact[i]), abs=1e-9), (n, i)


def reference_radius(ids, table, sample, confidence=0.95) -> float:
    """ε = sqrt(ln(2K/δ)/2 · Σ_{partly sampled s} w_s²/n_s) + Σ_{empty s} (r_hi − r_lo)/K."""
    k = len(ids)
    f = screen_surrogate(table[frozenset(ids)], table[frozenset()], loo_of(ids, table))
    var, bias = 0.0, 0.0
    distinct = set(sample)
    for s in range(1, k - 1):
        n = sum(1 for c in distinct if len(c) == s)
        fs = [f(c) for c in subsets(ids, s)]
        if n == 0:
            bias += ((1.0 - min(fs)) - (0.0 - max(fs))) / k
        elif n < math.comb(k, s):
            var += reference_width(f, ids, s) ** 2 / n
    return math.sqrt(math.log(2 * k / (1 - confidence)) / 2 * var) + bias


@pytest.mark.parametrize("k", [3, 4, 5, 6])
@pytest.mark.parametrize("confidence", [0.95, 0.5])
def test_radius_of_empty_partial_and_complete_strata(k, confidence):
    ids = [f"m{j}" for j in range(k)]
    table = dyadic_table(ids, 31 * k)
    game = game_of(ids, table)
    effects = loo_of(ids, table)
    cases = [[]]  # every middle stratum empty: bias only
    cases.append([subsets(ids, 1)[0]])  # one partly sampled, the others empty
    cases.append(subsets(ids, 1))  # stratum 1 complete (no variance), the others empty
    if k >= 4:
        cases.append(subsets(ids, 1)[:2] + subsets(ids, 2)[:3])  # both partial
        cases.append([c for s in range(1, k - 1) for c in subsets(ids, s)][:-1])  # last one short by one
    for sample in cases:
        est = estimate(game, effects, sample, confidence=confidence)
        assert est.radius == pytest.approx(reference_radius(ids, table, sample, confidence), rel=1e-12, abs=TOL)


def test_a_held_full_value_replaces_the_partial_trials_only_when_preferred():
    ids = ["a", "b", "c"]
    outcomes = {c: (1.0, 0.0) for c in subsets(ids)}  # first trial 1, second 0: v̂ = 0.5, v̂_1 = 1
    game = Game(Task("q", "r", tuple(Memory(i) for i in ids)), TableEvaluator(outcomes=outcomes), trials=2)
    effects = {i: 0.0 for i in ids}
    one = frozenset("a")
    game.values([one])  # held at the game's trials
    held = estimate(game, effects, [one], trials=1, prefer_full=True).contribution
    first = estimate(game, effects, [one], trials=1, prefer_full=False).contribution
    # f ≡ 0.5 (v̂(M) = v̂(∅) = 0.5, d = 0), ψ(f) = 0; r(a) = v(a) − 0.5 moves ψ̂_a by r/(1·1) and
    # the others by −r/(2·1): the held value (0.5) leaves ψ̂ at 0, the first trial (1.0) does not
    assert held == pytest.approx({"a": 0.0, "b": 0.0, "c": 0.0}, abs=TOL)
    assert first == pytest.approx({"a": 0.5, "b": -0.25, "c": -0.25}, abs=TOL)
    fresh = Game(Task("q", "r", tuple(Memory(i) for i in ids)), TableEvaluator(outcomes=outcomes), trials=2)
    assert estimate(fresh, effects, [one], trials=1, prefer_full=True).contribution == pytest.approx(first)
    # by default the first trials are used (prefer_full is off)
    assert estimate(game, effects, [one], trials=1).contribution == pytest.approx(first, abs=TOL)


@pytest.mark.parametrize("k", [4, 5])
def test_estimate_default_confidence_is_95_percent(k):
    ids = [f"m{j}" for j in range(k)]
    table = dyadic_table(ids, 7 * k)
    effects = loo_of(ids, table)
    sample = subsets(ids, 1)[:2] + subsets(ids, 2)[:1]  # partly sampled strata: a variance term
    want = reference_radius(ids, table, sample, 0.95)
    assert want > reference_radius(ids, table, sample, 0.5)  # the confidence counts here
    assert estimate(game_of(ids, table), effects, sample).radius == pytest.approx(want, rel=1e-12, abs=TOL)


# ------------------------------------------------------------------ samples_for, the budget cut, attribution


def test_samples_for_is_expected_distinct_less_the_exact_strata():
    # K = 5, L = 16: E = 1 + 5(1 − 0.8^16) + 10(1 − 0.9^16)·2 + 5 + 1 = 28.08 → 28 − 7 = 21
    e = 1 + 5 * (1 - 0.8 ** 16) + 20 * (1 - 0.9 ** 16) + 5 + 1
    assert samples_for(5, 16) == round(e) - 7 == 21
    # K = 3, L = 1: E = 1 + 3·(1/3) + 3 + 1 = 6 → 6 − 5 = 1
    assert samples_for(3, 1) == 1
    assert samples_for(3, 0) == 0  # E = 3 (the LOO ones only) → never negative
    assert samples_for(1, 0) == 0 and samples_for(2, 100) == 0


@pytest.mark.parametrize("k", [1, 2])
def test_stratified_sample_is_empty_below_three_players(k):
    ids = [f"m{j}" for j in range(k)]
    game = game_of(ids, dyadic_table(ids, 3), call_budget=0)
    assert stratified_sample(game, 10, 0) == ([], False)


def test_stratified_sample_takes_the_longest_prefix_the_budget_pays():
    ids = ["a", "b", "c", "d", "e"]
    table = dyadic_table(ids, 17)
    order = allocation_order(5, {s: float(s) for s in (1, 2, 3)}, 12)
    whole = draw(ids, order, 4)
    free, cut = stratified_sample(game_of(ids, table), 12, 4)
    assert (free, cut) == (whole, False)
    for budget in range(0, 16):
        game = game_of(ids, table, call_budget=budget)
        game.values([frozenset(ids)])  # one call already spent by this view
        got, was_cut = stratified_sample(game, 12, 4)
        base = game.cost_of([game.grand, frozenset()])
        fitting = [n for n in range(len(whole) + 1)
                   if game.evaluator_calls + base + game.cost_of(whole[:n]) <= budget]
        want = max(fitting) if fitting else 0
        assert got == whole[:want], budget
        assert was_cut == (want < len(whole)), budget


def test_stratified_sample_counts_partial_trials_and_a_custom_weight():
    ids = ["a", "b", "c", "d", "e"]
    table = dyadic_table(ids, 23)
    weight = lambda s, k: float(k - s)  # noqa: E731  favour the small strata
    got, cut = stratified_sample(game_of(ids, table, trials=4), 3, 1, trials=1, weight=weight)
    assert [len(c) for c in got] == allocation_order(5, {1: 4.0, 2: 3.0, 3: 2.0}, 3) == [1, 2, 3]
    assert not cut
    # at 1 of 4 trials, 3 coalitions cost 3 calls: M and ∅ (8) + 3 = 11 fits exactly, 10 does not
    assert stratified_sample(game_of(ids, table, trials=4, call_budget=11), 3, 1, trials=1, weight=weight)[1] is False
    short, cut = stratified_sample(game_of(ids, table, trials=4, call_budget=10), 3, 1, trials=1, weight=weight)
    assert cut and len(short) == 2


def test_stratified_attribution_reports_its_sample_and_stop():
    ids = ["a", "b", "c", "d", "e"]
    table = dyadic_table(ids, 29)
    effects = loo_of(ids, table)
    att = stratified_attribution(game_of(ids, table), effects, 16, seed=2)
    assert (att.exact, att.permutations, att.stop, att.estimator, att.samples) == (False, 0, "fixed", "stratified", 21)
    sample = draw(ids, allocation_order(5, {1: 1.0, 2: 2.0, 3: 3.0}, 21), 2)
    est = estimate(game_of(ids, table), effects, sample)
    assert att.contribution == pytest.approx(est.contribution, abs=TOL)
    assert att.radius == {i: est.radius for i in ids}
    # a budget that pays M, ∅ and 3 samples (1 trial each): stop "budget", 3 samples
    game = game_of(ids, table, call_budget=5)
    cut = stratified_attribution(game, effects, 16, seed=2)
    assert (cut.stop, cut.samples) == ("budget", 3)
    # a budget that cannot pay for v̂(∅): the screen's d_i, an infinite radius
    broke = game_of(ids, table, call_budget=1)
    out = stratified_attribution(broke, effects, 16, seed=2)
    assert out.contribution == effects and out.radius == {i: math.inf for i in ids}
    assert (out.stop, out.estimator, out.samples, out.exact, out.permutations) == ("budget", "stratified", 0, False, 0)
    # exactly enough for M and ∅: affordable, and no sample fits
    edge = stratified_attribution(game_of(ids, table, call_budget=2), effects, 16, seed=2)
    assert (edge.stop, edge.samples) == ("budget", 0) and all(math.isfinite(r) for r in edge.radius.values())


def test_evaluation_value_is_the_mean_of_the_trials():
    assert Evaluation((1.0, 0.0, 0.5), 3).value == 0.5 and Evaluation((), 0).value == 0.0
