"""Proposition 1 (MeClear Eq. 13): Pr[max_i |ψ̂_i − ψ_i| ≥ ε] ≤ 2K·exp(−Lε²/2).

For fixed games (including adversarial ±1-swing tables) the empirical frequency of a large
deviation over many independent permutation samples must stay under the Hoeffding bound
(plus a small binomial margin for the finite number of repetitions)."""

from __future__ import annotations

import itertools
import math
import random

from clear_helpers import table_game
from hypothesis import given, settings
from hypothesis import strategies as st

from memsteward.clearance.attribution import exact_contribution, sample_permutations, sampled_contribution

REPEATS = 300


def _table(ids, rng: random.Random, adversarial: bool) -> dict:
    table = {}
    for r in range(len(ids) + 1):
        for s in itertools.combinations(ids, r):
            table[frozenset(s)] = float(rng.randint(0, 1)) if adversarial else rng.random()
    return table


def _frequency(ids, table, permutations: int, eps: float, seed: int) -> float:
    game = table_game(ids, lambda s: table[s])
    exact = exact_contribution(game)
    hits = 0
    for rep in range(REPEATS):
        est = sampled_contribution(game, sample_permutations(ids, permutations, seed * 100_003 + rep))
        hits += max(abs(est[i] - exact[i]) for i in ids) >= eps
    return hits / REPEATS


def bound(k: int, permutations: int, eps: float) -> float:
    """2K exp(−Lε²/2) (Eq. 13)."""
    return 2 * k * math.exp(-permutations * eps * eps / 2)


@settings(max_examples=8, deadline=None)
@given(st.integers(3, 5), st.sampled_from([16, 32, 64]), st.booleans(), st.integers(0, 10_000))
def test_deviation_frequency_stays_under_hoeffding_bound(k, permutations, adversarial, seed):
    ids = [f"m{i}" for i in range(k)]
    table = _table(ids, random.Random(seed), adversarial)
    eps = math.sqrt(2 * math.log(4 * k) / permutations)  # the bound is 1/2 here: informative
    observed = _frequency(ids, table, permutations, eps, seed)
    margin = 3 * math.sqrt(0.25 / REPEATS)  # 3σ of a binomial proportion
    assert observed <= bound(k, permutations, eps) + margin


def test_bound_is_not_vacuous_for_a_wrong_estimator():
    """Sanity: a biased estimator (dropping the last position's marginal) breaks the bound."""
    ids = ["a", "b", "c", "d"]
    table = {frozenset(s): float(len(s) == 4) for r in range(5) for s in itertools.combinations(ids, r)}
    game = table_game(ids, lambda s: table[s])
    exact = exact_contribution(game)
    eps, perms, hits = 0.2, 400, 0
    for rep in range(50):
        est = sampled_contribution(game, sample_permutations(ids, perms, rep))
        biased = {i: est[i] - (0.25 if i == "a" else 0.0) for i in ids}
        hits += max(abs(biased[i] - exact[i]) for i in ids) >= eps
    assert bound(4, perms, eps) < 0.01 and hits / 50 > 0.5
