"""The LOO screen's class labels (App. A.2, Algorithm 1 line 4) against a table written by hand.

An additive game v(S) = Σ_{i ∈ S} w_i has d_i = w_i exactly (Eq. 7), so each memory's label is
known without running the engine: d < −κ harm, |d| ≤ κ inconclusive, d > κ benefit. The weights
are dyadic, so every comparison at the boundary ±κ is exact in floating point.
"""

from __future__ import annotations

import itertools

import pytest

from memsteward.clearance.attribution import screen
from memsteward.clearance.baselines import run_loo
from memsteward.clearance.evaluators.table import TableEvaluator
from memsteward.clearance.game import Game, Memory, Task
from memsteward.clearance.pipeline import run_meclear
from memsteward.policy.model import ClearanceSpec

KAPPA = 0.25
WEIGHTS = {"m1": 0.5, "m2": -0.5, "m3": 0.25, "m4": -0.25, "m5": 0.0, "m6": -0.375}
# written by hand from the rule, not computed:
LABELS = {"m1": "benefit", "m2": "harm", "m3": "inconclusive", "m4": "inconclusive",
          "m5": "inconclusive", "m6": "harm"}
LOO_REMOVES = ["m2", "m6"]  # the LOO baseline removes exactly the "harm" class (d_i < −κ)


def _game() -> Game:
    ids = list(WEIGHTS)
    values = {frozenset(s): sum(WEIGHTS[i] for i in s)
              for r in range(len(ids) + 1) for s in itertools.combinations(ids, r)}
    task = Task("q", "a", tuple(Memory(i, f"memory {i}") for i in ids))
    return Game(task, TableEvaluator(values), trials=1)


@pytest.mark.parametrize("d, label", [(-0.5, "harm"), (-0.25, "inconclusive"), (-0.125, "inconclusive"),
                                      (0.0, "inconclusive"), (0.25, "inconclusive"), (0.375, "benefit"),
                                      (-0.2500001, "harm"), (0.2500001, "benefit")])
def test_screen_rule_by_hand(d: float, label: str):
    assert screen({"x": d}, KAPPA) == {"x": label}


def test_meclear_plan_reports_the_hand_labels():
    plan = run_meclear(_game(), ClearanceSpec(screen_tolerance=KAPPA, harm_tolerance=0.125))
    assert dict(plan.loo) == WEIGHTS
    assert dict(plan.screen) == LABELS


def test_loo_baseline_labels_and_removals():
    plan = run_loo(_game(), ClearanceSpec(screen_tolerance=KAPPA))
    assert dict(plan.screen) == LABELS
    assert sorted(plan.removed) == LOO_REMOVES
