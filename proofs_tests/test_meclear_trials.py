"""Fewer trials where they cannot change a decision (``clearance.sample_trials``, issue 15).

The game reads a coalition at t < trials as the mean of its first t trial scores, charges t
calls for it, and evaluates it again in full (charged again) when a decision needs all trials;
`exact: auto` compares calls after the savings.
"""

from __future__ import annotations

import pytest

from memsteward.clearance.attribution import use_exact
from memsteward.clearance.game import Evaluation, Game, Memory, OutcomeStore, Task
from memsteward.clearance.pipeline import run_meclear
from memsteward.policy.model import ClearanceSpec

IDS = ["a", "b", "c", "d", "e", "f", "g", "h"]


class TrialEvaluator:
    """Trial t of S scores 1 when (|S| + t) is even: the first and second trials differ."""

    def __init__(self) -> None:
        self.asked: list[tuple[frozenset, int]] = []

    def evaluate(self, task, coalitions, trials, seed):
        self.asked += [(c, trials) for c in coalitions]
        return [Evaluation(tuple(float((len(c) + t) % 2 == 0) for t in range(trials)), trials) for c in coalitions]

    def rate(self, task, memory):
        return 0.0, 1


def game(store: OutcomeStore | None = None, **kw) -> Game:
    task = Task("q", "r", tuple(Memory(i) for i in IDS[:4]))
    return Game(task, TrialEvaluator(), trials=2, store=store, **kw)


def test_partial_reads_charge_fewer_calls_and_read_the_first_scores():
    g = game()
    assert g.values([{"a"}, {"a", "b"}], trials=1) == [0.0, 1.0]  # first trial only
    assert g.evaluator_calls == 2 and g.cost_of([{"a"}], trials=1) == 0
    assert g.value({"a"}) == 0.5  # a decision needs all trials: evaluated again, in full
    assert g.evaluator_calls == 4
    assert g.evaluator.asked == [(frozenset("a"), 1), (frozenset("ab"), 1), (frozenset("a"), 2)]


def test_a_full_evaluation_serves_partial_reads_at_their_stand_alone_cost():
    store = OutcomeStore()
    first = game(store)
    first.values([{"a"}])
    second = game(store)
    second.evaluator = first.evaluator
    assert second.values([{"a"}], trials=1) == [0.0] and second.evaluator_calls == 1
    assert first.evaluator.asked == [(frozenset("a"), 2)]  # nothing re-sent


def test_budget_counts_partial_costs():
    g = game(call_budget=3)
    assert g.affordable([{"a"}, {"b"}, {"c"}], trials=1) and not g.affordable([{"a"}, {"b"}])


def test_exact_auto_counts_calls_after_the_savings():
    # K = 5, L = 16: E[distinct] ≈ 28.1; screen = 6 coalitions × 2 trials either way
    # full trials: 64 vs 56.2 calls (ratio 1.139); one sample trial: 38 vs 34.1 (ratio 1.114)
    assert not use_exact(5, 16, "auto", 0.12, trials=2)
    assert use_exact(5, 16, "auto", 0.12, trials=2, sample_trials=1)
    assert use_exact(5, 16, "auto", 0.25, trials=2, sample_trials=1) == use_exact(5, 16, "auto", 0.25)


@pytest.mark.parametrize("estimator", ["permutation", "stratified"])
def test_sampled_coalitions_at_one_trial_cost_less(estimator):
    from clear_helpers import table_game

    ids = [f"m{i}" for i in range(8)]
    v = lambda s: 1.0 if "m0" in s and "m1" not in s else 0.0  # noqa: E731
    plans = {}
    for t in (None, 1):
        spec = ClearanceSpec(retrieval_budget=8, exact="never", permutations=8, interactions="none",
                             estimator=estimator, sample_trials=t)
        plans[t] = run_meclear(table_game(ids, v), spec)
    assert plans[1].removed == plans[None].removed == ("m1",)
    assert plans[1].evaluator_calls < 0.7 * plans[None].evaluator_calls
    # the screen and the verification keep both trials: M and M ∖ {m1} are read in full
    assert plans[1].baseline_value == 0.0 and plans[1].cleared_value == 1.0
