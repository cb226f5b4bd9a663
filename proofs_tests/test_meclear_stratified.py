"""The stratified sample-reuse estimator (S2) against exact Shapley (Eq. 3) on random games.

* unbiased: over many seeds the mean of ψ̂_i matches the exact ψ_i within 4 standard errors;
* honest radius: max_i |ψ̂_i − ψ_i| ≤ ε at a frequency of at least the stated confidence;
* G1 efficiency exactly, for any sample; full enumeration gives exact Shapley with radius 0;
* the call budget caps the sample, and the LOO screen's coalitions are reused (never re-sent).
"""

from __future__ import annotations

import math
import random
import statistics

import pytest
from clear_helpers import all_subsets, table_game
from hypothesis import given, settings
from hypothesis import strategies as st

from memsteward.clearance.attribution import exact_contribution, loo
from memsteward.clearance.pipeline import run_meclear
from memsteward.clearance.stratified import (
    allocation_order,
    estimate,
    samples_for,
    stratified_attribution,
)
from memsteward.policy.model import ClearanceSpec

SEEDS = 300


def random_table(ids, rng: random.Random, kind: str) -> dict:
    """Float values, adversarial 0/1 swings, or a redundant-harm game with noise."""
    table = {}
    for s in all_subsets(ids):
        if kind == "float":
            table[s] = rng.random()
        elif kind == "swing":
            table[s] = float(rng.randint(0, 1))
        else:
            good = 1.0 if ids[0] in s else 0.3 * (ids[1] in s)
            bad = 1.0 if (ids[-1] in s or ids[-2] in s) else 0.0
            table[s] = min(1.0, max(0.0, good - bad + rng.choice([0.0, 0.0, 0.5, -0.5])))
    return table


@pytest.mark.parametrize("k,kind,perms", [(4, "float", 1), (5, "swing", 1), (6, "redundant", 2),
                                          (7, "float", 2), (7, "swing", 4)])
def test_unbiased_and_radius_covers(k, kind, perms):
    ids = [f"m{i}" for i in range(k)]
    table = random_table(ids, random.Random(k * 31 + perms), kind)
    game = table_game(ids, lambda s: table[s])
    exact = exact_contribution(game)
    effects = loo(game)
    estimates, misses = [], 0
    for seed in range(SEEDS):
        att = stratified_attribution(game, effects, perms, seed, confidence=0.5)
        estimates.append(att.contribution)
        radius = att.radius[ids[0]]
        assert all(r == radius for r in att.radius.values())
        misses += max(abs(att.contribution[i] - exact[i]) for i in ids) > radius
    assert misses / SEEDS <= 0.5 + 3 * math.sqrt(0.25 / SEEDS)
    for i in ids:
        xs = [e[i] for e in estimates]
        se = statistics.stdev(xs) / math.sqrt(SEEDS)
        assert abs(statistics.fmean(xs) - exact[i]) <= 4 * se + 1e-9, (i, statistics.fmean(xs), exact[i], se)


def test_bias_check_is_sharp():
    """The 4-SE test above detects a bias of a few hundredths: dropping one stratum's samples
    (keeping its draws out of (S2)) shifts the mean of a redundant-harm game visibly."""
    ids = [f"m{i}" for i in range(6)]
    table = random_table(ids, random.Random(7), "redundant")
    game = table_game(ids, lambda s: table[s])
    exact, effects = exact_contribution(game), loo(game)
    order = allocation_order(6, {s: float(s) for s in range(1, 5)}, 8)
    from memsteward.clearance.stratified import draw

    means = {i: 0.0 for i in ids}
    for seed in range(SEEDS):
        sample = [c for c in draw(ids, order, seed) if len(c) != 4]  # stratum 4 silently dropped
        est = estimate(game, effects, sample).contribution
        for i in ids:
            means[i] += est[i] / SEEDS
    assert max(abs(means[i] - exact[i]) for i in ids) > 0.05


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 7), st.integers(0, 40), st.integers(0, 10_000),
       st.sampled_from(["float", "swing", "redundant"]))
def test_stratified_efficiency(k, count, seed, kind):
    ids = [f"m{i}" for i in range(k)]
    table = random_table(ids, random.Random(seed), kind) if k >= 2 else {frozenset(): 0.2, frozenset(ids): 0.9}
    game = table_game(ids, lambda s: table[s])
    effects = loo(game)
    order = allocation_order(k, {s: float(s) for s in range(1, k - 1)}, count)
    from memsteward.clearance.stratified import draw

    est = estimate(game, effects, draw(ids, order, seed))
    assert math.fsum(est.contribution.values()) == pytest.approx(table[frozenset(ids)] - table[frozenset()], abs=1e-9)


@pytest.mark.parametrize("k", [2, 3, 5, 6])
def test_full_enumeration_is_exact(k):
    ids = [f"m{i}" for i in range(k)]
    table = random_table(ids, random.Random(k), "float")
    game = table_game(ids, lambda s: table[s])
    att = stratified_attribution(game, loo(game), 4096, seed=3)
    exact = exact_contribution(game)
    assert all(att.contribution[i] == pytest.approx(exact[i], abs=1e-9) for i in ids)
    assert all(r == 0.0 for r in att.radius.values())
    assert game.coalitions_evaluated == 2 ** k


def test_samples_match_the_cost_of_l_permutations():
    # K = 5: L = 16 permutations need ≈ 28.1 distinct coalitions, 7 of them M, ∅ and LOO
    assert samples_for(5, 16) == 21 and samples_for(5, 1) == 3
    assert allocation_order(5, {1: 1.0, 2: 2.0, 3: 3.0}, 30).count(3) == 10  # capped at C(5, 3)
    assert allocation_order(5, {1: 1.0, 2: 2.0, 3: 3.0}, 3) == [3, 2, 1]  # every stratum first


def test_pipeline_reuses_the_screen_and_respects_the_budget():
    ids = [f"m{i}" for i in range(5)]
    table = random_table(ids, random.Random(11), "redundant")
    game = table_game(ids, lambda s: table[s], call_budget=24)
    spec = ClearanceSpec(exact="never", estimator="stratified", permutations=64, call_budget=24)
    plan = run_meclear(game, spec)
    asked = game.evaluator.asked
    assert len(asked) == len(set(asked))  # the LOO coalitions are not sent again
    # 24 calls = 12 coalitions: M, 5 LOO, ∅ and 5 samples; verification may add the cleared context
    assert game.evaluator_calls <= 24 + 2 * len(plan.chain)
    assert plan.estimator == "stratified" and plan.stop == "budget"
    assert math.fsum(plan.contribution.values()) == pytest.approx(plan.baseline_value - plan.empty_value, abs=1e-9)
