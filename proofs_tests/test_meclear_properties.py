"""Hypothesis properties of MeClear on arbitrary games.

G1 efficiency (Eq. 3, 34–35): Σ ψ = v(M) − v(∅), exactly and for every sampled estimate.
G3 non-degradation (Theorem 2, Eq. 19–22): v̂(M̃) ≥ v̂(M); ĵ > 0 ⇒ ν(M̃) = 1; ĵ is the
minimum-cardinality maximum-gain admissible candidate.
The game cache: no coalition is ever sent to the evaluator twice, across all methods.
"""

from __future__ import annotations

import math
from itertools import permutations as all_orders

import pytest
from clear_helpers import CountingEvaluator, all_subsets, table_game
from hypothesis import given, settings
from hypothesis import strategies as st

from memsteward.clearance.adaptive import decision_attribution
from memsteward.clearance.attribution import exact_contribution, sample_permutations, sampled_contribution
from memsteward.clearance.game import OutcomeStore
from memsteward.clearance.pipeline import METHODS, run_meclear, run_method
from memsteward.clearance.selection import candidates
from memsteward.policy.model import ClearanceSpec, Recovery

# values on the two-trial grid {0, ½, 1} make recovery and ties frequent; floats test the rest
GRID = st.sampled_from([0.0, 0.5, 1.0])
FLOAT = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def games(draw, max_k=6, values=None):
    k = draw(st.integers(1, max_k))
    ids = [f"m{i}" for i in range(1, k + 1)]
    strategy = values or draw(st.sampled_from([GRID, FLOAT]))
    table = {s: draw(strategy) for s in all_subsets(ids)}
    return ids, table


def game_of(ids, table, **kw):
    return table_game(ids, lambda s: table[s], **kw)


@given(games())
def test_exact_efficiency(g):
    ids, table = g
    psi = exact_contribution(game_of(ids, table))
    assert math.fsum(psi.values()) == pytest.approx(table[frozenset(ids)] - table[frozenset()], abs=1e-9)


@given(games(max_k=4))
def test_exact_equals_average_over_all_permutations(g):
    """Eq. 3 (subset weights) = Eq. 10 (all K! orders)."""
    ids, table = g
    game = game_of(ids, table)
    psi = exact_contribution(game)
    orders = list(all_orders(ids))
    full = sampled_contribution(game, orders)
    for i in ids:
        assert psi[i] == pytest.approx(full[i], abs=1e-9)


@given(games(), st.integers(1, 40), st.integers(0, 10_000))
def test_sampled_efficiency(g, count, seed):
    """Every sampled estimate telescopes along each permutation (Eq. 35)."""
    ids, table = g
    psi = sampled_contribution(game_of(ids, table), sample_permutations(ids, count, seed))
    assert math.fsum(psi.values()) == pytest.approx(table[frozenset(ids)] - table[frozenset()], abs=1e-9)


@given(games(), st.sampled_from(["auto", "always", "never"]), st.integers(1, 24),
       st.floats(0.0, 0.3), st.sampled_from(["all_trials", "majority", "any_trial"]))
def test_theorem2_selection(g, exact, count, harm_tolerance, rule):
    """Non-degradation, verified recovery and minimal cardinality (Theorem 2)."""
    ids, table = g
    spec = ClearanceSpec(exact=exact, permutations=count, harm_tolerance=harm_tolerance,
                         recovery=Recovery(rule=rule), retrieval_budget=len(ids))
    game = game_of(ids, table, recovery=spec.recovery)
    plan = run_meclear(game, spec)
    full = frozenset(ids)
    assert plan.cleared_value >= plan.baseline_value - 1e-12  # Eq. 21
    if plan.selected > 0:
        assert plan.recovered  # Eq. 22
    # recompute J (Eq. 19) from the table itself and check ĵ = min argmax (Eq. 20)
    cands = candidates(plan.chain)
    gain = [table[full - c] - table[full] for c in cands]
    assert list(plan.gains) == pytest.approx(gain)
    admissible = [0] + [j for j in range(1, len(cands))
                        if gain[j] > 1e-12 and spec.recovery.holds(table[full - cands[j]])]
    assert list(plan.admissible) == admissible
    best = max(gain[j] for j in admissible)
    assert plan.selected == min(j for j in admissible if gain[j] >= best - 1e-12)
    assert len(plan.removed) == plan.selected and set(plan.removed) <= set(plan.harmful)
    assert set(plan.cleared_context) == full - set(plan.removed)


@settings(max_examples=30)
@given(games(max_k=5), st.integers(0, 1000))
def test_no_coalition_is_evaluated_twice(g, seed):
    """One cache per case: every method together never asks the evaluator twice."""
    ids, table = g
    game = game_of(ids, table)
    counter: CountingEvaluator = game.evaluator  # type: ignore[assignment]
    spec = ClearanceSpec(seed=seed, exact="never", retrieval_budget=len(ids))
    for method in METHODS:
        plan = run_method(method, game.fork(), spec)
        assert plan.coalitions_evaluated <= 2 ** len(ids)
    assert len(counter.asked) == len(set(counter.asked))


@settings(max_examples=30)
@given(games(max_k=6), st.integers(0, 1000), st.integers(1, 60))
def test_adaptive_respects_budget(g, seed, budget):
    """Sampling never passes the call budget (the decision check's verification coalitions
    may, like the verification of Eq. 19 always does: at most one per chain position)."""
    ids, table = g
    game = game_of(ids, table, call_budget=budget)
    att = decision_attribution(game, 0.05, seed=seed, start=4, batch=4, max_permutations=64)
    assert game.evaluator_calls <= budget + 2 * (len(ids) + 1)
    assert att.stop in ("decided", "budget", "max_permutations")
    if att.samples == 0 and att.permutations:  # whole permutations only: efficiency still holds
        total = table[frozenset(ids)] - table[frozenset()]
        assert math.fsum(att.contribution.values()) == pytest.approx(total, abs=1e-9)


@pytest.mark.parametrize("bound, harm_tolerance, most", [("bernstein", 0.2, 400), ("normal", 0.05, 64)])
def test_adaptive_stops_when_decided_on_a_clear_game(bound, harm_tolerance, most):
    """A direct fault with ψ = −½ and neutral background at K = 12: the removed set {f} is
    settled long before all 2^12 coalitions are evaluated."""
    ids = ["g", "f", *(f"n{i}" for i in range(10))]

    def v(s):
        return max(0.0, (1.0 if "g" in s else 0.0) - (1.0 if "f" in s else 0.0))

    game = table_game(ids, v)
    att = decision_attribution(game, harm_tolerance, seed=1, start=16, batch=16, max_permutations=4096,
                               bound=bound)
    assert att.stop == "decided" and att.permutations + att.samples / len(ids) <= most
    assert att.contribution["f"] < -harm_tolerance
    assert all(att.contribution[n] > -harm_tolerance for n in ids if n != "f")
    assert game.coalitions_evaluated < 2 ** len(ids) / 2


def test_plan_is_frozen():
    game = table_game(["a", "b"], lambda s: 1.0 if s == frozenset({"a"}) else 0.0)
    plan = run_meclear(game, ClearanceSpec())
    with pytest.raises(Exception):  # noqa: B017
        plan.selected = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.contribution["a"] = 0.0  # type: ignore[index]


def test_views_share_cache_but_account_separately():
    game = table_game(["a", "b", "c"], lambda s: len(s) / 3)
    a = run_method("meclear", game.fork(), ClearanceSpec())
    b = run_method("loo", game.fork(), ClearanceSpec())
    assert a.coalitions_evaluated == 8 and a.evaluator_calls == 16
    assert b.coalitions_evaluated == 4  # v(M), three LOO coalitions (the cleared one is cached)
    counter: CountingEvaluator = game.evaluator  # type: ignore[assignment]
    assert len(counter.asked) == 8
    assert isinstance(game.store, OutcomeStore)


@settings(max_examples=40)
@given(games(max_k=6), st.integers(1, 200), st.booleans(), st.integers(0, 99))
def test_call_budget_bounds_everything_but_screening_and_verification(g, budget, adaptive, seed):
    """Attribution and ω stay within call_budget; LOO (K + 1 coalitions) and the chain's
    verification (Eq. 19, h coalitions) always run, so they may add to it."""
    from memsteward.policy.model import AdaptiveSpec

    ids, table = g
    spec = ClearanceSpec(retrieval_budget=len(ids), call_budget=budget, seed=seed,
                         adaptive=AdaptiveSpec(enabled=adaptive, bound="normal", batch=4))
    plan = run_meclear(game_of(ids, table, call_budget=budget), spec)
    trials = spec.trials
    assert plan.evaluator_calls <= max(budget, (len(ids) + 1) * trials) + len(plan.chain) * trials
    assert plan.cleared_value >= plan.baseline_value
