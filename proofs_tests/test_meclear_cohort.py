"""A synthetic cohort shaped like the paper's: MeClear against every baseline."""

from __future__ import annotations

import pytest

from memsteward.clearance.case import parse_case
from memsteward.clearance.cohort import PAPER_SHAPE, run_cohort, shape_counts, synthetic_cohort, verified
from memsteward.clearance.evaluators import Harm, SyntheticEvaluator, SyntheticGame
from memsteward.clearance.metrics import summary_table
from memsteward.clearance.pipeline import METHODS
from memsteward.policy.model import ClearanceSpec


@pytest.fixture(scope="module")
def rows():
    cases = [parse_case(c) for c in synthetic_cohort(60, seed=7)]
    outcomes = run_cohort(cases, ClearanceSpec())
    return {(r.method, r.group): r for r in summary_table(outcomes)}


def test_shape_follows_the_paper():
    assert shape_counts(745) == PAPER_SHAPE
    counts = shape_counts(60)
    assert sum(counts.values()) == 60 and counts["direct"] > counts["redundant"] > counts["joint"] > 0


def test_every_method_reports_metrics(rows):
    for m in METHODS:
        r = rows[(m, "all")]
        assert r.cases == 60 and 0.0 <= r.recall_at_m <= 1.0 and r.calls_per_case > 0


def test_meclear_beats_loo_on_redundant_cases(rows):
    """The paper's qualitative result (Fig. 5): LOO collapses on redundant masking."""
    me, lo = rows[("meclear", "redundant")], rows[("loo", "redundant")]
    assert me.recall_at_m >= lo.recall_at_m + 0.4
    assert me.recovery >= lo.recovery + 0.5
    assert lo.complete <= 0.2


def test_meclear_recovers_most_cases_overall(rows):
    me = rows[("meclear", "all")]
    assert me.recall_at_m >= 0.8 and me.recovery >= 0.8
    for m in ("loo", "direct"):
        assert me.recovery >= rows[(m, "all")].recovery


def test_generated_cases_are_behaviourally_verified():
    for raw in synthetic_cohort(12, seed=3):
        case = parse_case(raw)
        g = raw["game"]
        ev = SyntheticEvaluator(SyntheticGame(0.0, g["support"], tuple(
            Harm(h["structure"], tuple(h["members"]), h["delta"]) for h in g["harms"]), g["noise"], g["salt"]))
        assert verified(case.structure, ev, case.task, case.faults, 2, 0)


def test_synthetic_games_scale_to_k20():
    """K = 20 with sampling (exact: auto picks permutations) stays cheap."""
    from memsteward.clearance.case import case_game
    from memsteward.clearance.pipeline import run_meclear

    raw = synthetic_cohort(3, seed=11, k=20, shape={"redundant": 1})
    spec = ClearanceSpec(retrieval_budget=20)
    for c in raw:
        plan = run_meclear(case_game(parse_case(c), spec), spec)
        assert not plan.exact and plan.permutations == 16
        h = len(plan.harmful)
        # prefixes + LOO + chain candidates + ω coalitions of the harmful pairs (Eq. 15)
        bound = (16 * 19 + 2) + 20 + (h + 1) + 2 * 16 * h * (h - 1) // 2
        assert plan.coalitions_evaluated <= bound < 2 ** 20
        assert set(c["faults"]) <= set(plan.harmful)
