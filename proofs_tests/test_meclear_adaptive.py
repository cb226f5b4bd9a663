"""Theorem D (specs/ADAPTIVE_STOPPING.md): adaptive attribution stops on the decision.

* the rule on hand-made intervals: a tail memory straddling −τ does not hold up a settled
  removal; an interval that lets another memory precede the removed one, or a removed memory
  not certainly harmful, does — and the wider interval of an overlap is the one sampled;
* coverage on random games (Proposition 1 style): among runs that stop `decided`, the served
  context differs from the one exact Shapley of the same cache gives in at most δ of them
  (plus a binomial margin), and deliberately narrowed intervals break that bound.
"""

from __future__ import annotations

import math
import random

import pytest
from clear_helpers import all_subsets, table_game

from memsteward.clearance import adaptive
from memsteward.clearance.adaptive import decide, decision_attribution, targeted_marginals
from memsteward.clearance.attribution import exact_contribution
from memsteward.clearance.case import parse_case
from memsteward.clearance.cohort import synthetic_cohort
from memsteward.clearance.evaluators import SyntheticEvaluator, SyntheticGame
from memsteward.clearance.evaluators.synthetic import Harm
from memsteward.clearance.selection import clearance
from memsteward.policy.model import ClearanceSpec, Recovery

TAU = 0.05
IDS = ["f", "g", "n1", "n2"]


def fault_game(level: float = 1.0, **kw):
    """v(S) = level if the gold g is in S and the fault f is not, else 0."""
    return table_game(IDS, lambda s: level if "g" in s and "f" not in s else 0.0, **kw)


def intervals(**spec):
    psi = {i: spec.get(i, (0.0, 0.01))[0] for i in IDS}
    radius = {i: spec.get(i, (0.0, 0.01))[1] for i in IDS}
    return psi, radius


def test_a_tail_straddler_does_not_hold_up_a_settled_removal():
    psi, r = intervals(f=(-0.5, 0.1), g=(0.5, 0.1), n1=(-0.04, 0.05))  # n1 straddles −τ
    d = decide(fault_game(), psi, r, TAU)
    assert d.settled and d.removed == ("f",)


def test_a_memory_that_may_precede_the_removed_one_is_sampled():
    psi, r = intervals(f=(-0.5, 0.1), g=(0.5, 0.1), n1=(-0.3, 0.25))  # lo(n1) = −0.55 ≤ hi(f) = −0.4
    d = decide(fault_game(), psi, r, TAU)
    assert not d.settled and d.relevant == {"n1"}  # n1's interval is the wider one
    psi, r = intervals(f=(-0.5, 0.3), g=(0.5, 0.1), n1=(-0.3, 0.05))
    d = decide(fault_game(), psi, r, TAU)
    assert not d.settled and "f" in d.relevant  # now f's is wider (and f may not be harmful)


def test_a_removed_memory_must_be_certainly_harmful():
    psi, r = intervals(f=(-0.5, 0.5), g=(0.5, 0.1))
    d = decide(fault_game(), psi, r, TAU)
    assert not d.settled and d.relevant == {"f"}


def test_below_the_ceiling_the_tail_must_be_settled():
    """v̂(M ∖ {f}) = ½ < 1: a later candidate could still gain more, so a straddler matters."""
    game = fault_game(0.5, recovery=Recovery(rule="any_trial"))
    psi, r = intervals(f=(-0.5, 0.1), g=(0.5, 0.1), n1=(-0.04, 0.05))
    d = decide(game, psi, r, TAU)
    assert d.removed == ("f",) and not d.settled and d.relevant == {"n1"}
    psi, r = intervals(f=(-0.5, 0.1), g=(0.5, 0.1), n1=(0.0, 0.02))
    assert decide(game, psi, r, TAU).settled


def test_nothing_harmful_is_settled_when_every_interval_is_clear():
    game = table_game(IDS, lambda s: 1.0)
    psi, r = intervals()
    assert decide(game, psi, r, TAU) .settled
    psi, r = intervals(n2=(0.0, 0.2))
    d = decide(game, psi, r, TAU)
    assert not d.settled and d.relevant == {"n2"}


def test_targeted_samples_have_the_permutation_law():
    """P(|S| = s) = 1/K and, given s, every s-subset of M ∖ {i} equally likely (App. B.2)."""
    rng = random.Random(5)
    players = ["a", "b", "c", "d"]
    counts: dict[frozenset, int] = {}
    n = 24_000
    for s, with_i in targeted_marginals(players, "a", n, rng):
        assert with_i == s | {"a"} and "a" not in s
        counts[s] = counts.get(s, 0) + 1
    for s in all_subsets(["b", "c", "d"]):
        p = 1 / 4 / math.comb(3, len(s))
        assert abs(counts.get(s, 0) / n - p) <= 4 * math.sqrt(p * (1 - p) / n)


def _cases(k: int, n: int, seed: int):
    """Behaviourally verified synthetic games (direct / redundant / joint), as table games."""
    out = []
    for raw in synthetic_cohort(n, seed=seed, k=k, noise=0.05, trials=2):
        case = parse_case(raw)
        g = raw["game"]
        ev = SyntheticEvaluator(SyntheticGame(0.0, g["support"], tuple(
            Harm(h["structure"], tuple(h["members"]), h["delta"]) for h in g["harms"]), g["noise"], g["salt"]))
        ids = list(case.task.ids)
        table = {s: ev.evaluate(case.task, [s], 2, 0)[0].value for s in all_subsets(ids)}
        out.append((ids, table))
    return out


def _miss_rate(cases, seeds: int, confidence: float) -> tuple[float, int]:
    decided = wrong = 0
    for ids, table in cases:
        reference = table_game(ids, lambda s: table[s])  # noqa: B023
        truth = clearance(reference, exact_contribution(reference), TAU).removed
        for seed in range(seeds):
            game = table_game(ids, lambda s: table[s])  # noqa: B023
            att = decision_attribution(game, TAU, seed=seed, start=4, batch=4, max_permutations=64,
                                       confidence=confidence, bound="normal")
            if att.stop != "decided":
                continue
            decided += 1
            wrong += set(clearance(game, att.contribution, TAU).removed) != set(truth)
    return wrong / max(decided, 1), decided


@pytest.mark.parametrize("k,n,seed,confidence", [(6, 12, 3, 0.95), (7, 12, 5, 0.8)])
def test_decided_stops_are_right_at_the_stated_confidence(k, n, seed, confidence):
    cases = _cases(k, n, seed)
    rate, decided = _miss_rate(cases, 15, confidence)
    delta = 1 - confidence
    assert decided >= 50  # the rule does stop on these games
    assert rate <= delta + 3 * math.sqrt(delta * (1 - delta) / decided)


def test_coverage_check_catches_narrow_intervals(monkeypatch):
    """Intervals a tenth as wide stop early and serve a different context far more often."""
    real = adaptive._radius
    monkeypatch.setattr(adaptive, "_radius", lambda xs, delta, bound: real(xs, delta, bound) / 10)
    cases = _cases(6, 12, seed=3)
    rate, decided = _miss_rate(cases, 15, confidence=0.95)
    assert rate > 0.05 + 3 * math.sqrt(0.05 * 0.95 / max(decided, 1))


def test_pipeline_plan_reports_the_decided_stop():
    from memsteward.clearance.pipeline import run_meclear
    from memsteward.policy.model import AdaptiveSpec

    ids = ["g", "f", *(f"n{i}" for i in range(8))]
    game = table_game(ids, lambda s: 1.0 if "g" in s and "f" not in s else 0.0)
    spec = ClearanceSpec(retrieval_budget=10, exact="never", permutations=8, interactions="none",
                         adaptive=AdaptiveSpec(enabled=True, batch=8, max_permutations=64, bound="normal"))
    plan = run_meclear(game, spec)
    assert plan.stop == "decided" and plan.removed == ("f",) and plan.estimator == "targeted"
    assert plan.empty_value is None  # no efficiency claim, so the certificate skips G1
