"""The paper's worked cases: Theorem 1, Corollary A.1 and Table 1 (cases A–C)."""

from __future__ import annotations

import math

import pytest
from clear_helpers import table_game
from hypothesis import given
from hypothesis import strategies as st

from memsteward.clearance.attribution import (
    exact_contribution,
    expected_distinct_coalitions,
    hoeffding_radius,
    interaction,
    loo,
    sample_permutations,
    sampled_contribution,
    use_exact,
)
from memsteward.clearance.baselines import run_loo
from memsteward.clearance.pipeline import run_meclear
from memsteward.policy.model import ClearanceSpec


def redundant_game(r: int, background: int, delta: float, u: dict[frozenset, float]):
    """v(S) = u(S \\ R) − Δ·1[S ∩ R ≠ ∅] (Eq. 8 for r = 2, Eq. 31 for r > 2)."""
    group = [f"F{i}" for i in range(1, r + 1)]
    bg = [f"G{i}" for i in range(1, background + 1)]

    def v(s):
        return u[frozenset(s & set(bg))] - (delta if s & set(group) else 0.0)

    return table_game(bg + group, v), group


@st.composite
def redundant_instances(draw, min_r=2, max_r=4):
    r = draw(st.integers(min_r, max_r))
    b = draw(st.integers(0, 6 - r))
    delta = draw(st.floats(0.05, 1.0))
    from clear_helpers import all_subsets
    bg = [f"G{i}" for i in range(1, b + 1)]
    u = {s: draw(st.floats(delta, 1.0)) for s in all_subsets(bg)}
    return r, b, delta, u


def _assert_blind_spot(inst) -> tuple:
    """Every member of the redundant group R has d = 0 and ψ = −Δ/|R| (Eq. 9, Cor. A.1)."""
    r, b, delta, u = inst
    game, group = redundant_game(r, b, delta, u)
    d = loo(game)
    psi = exact_contribution(game)
    for f in group:
        assert d[f] == pytest.approx(0.0, abs=1e-12)
        assert psi[f] == pytest.approx(-delta / r, abs=1e-9)
    return game, delta


@given(redundant_instances(2, 2))
def test_theorem1_redundant_pair_blind_spot(inst):
    """Theorem 1: d_i = d_j = 0 and ψ_i = ψ_j = −Δ/2 (Eq. 9)."""
    game, delta = _assert_blind_spot(inst)
    # the pair is a substitution: ω = +Δ (Eq. 15), diagnosed as redundant
    assert interaction(game, "F1", "F2", None) == pytest.approx(delta, abs=1e-9)


@given(redundant_instances(3, 5))
def test_corollary_a1_redundant_group(inst):
    """Corollary A.1: for |R| = r > 2 every member has d = 0 and ψ = −Δ/r."""
    _assert_blind_spot(inst)


def test_theorem1_sampled_estimate_is_share_of_first_positions():
    """Eq. 11 on the redundant pair: ψ̂_i = −Δ × (share of permutations where m_i precedes m_j)."""
    u = {frozenset(): 1.0, frozenset({"G1"}): 1.0}
    game, _ = redundant_game(2, 1, 0.5, u)
    perms = sample_permutations(game.players, 16, seed=3)
    psi = sampled_contribution(game, perms)
    share = sum(p.index("F1") < p.index("F2") for p in perms) / 16
    assert psi["F1"] == pytest.approx(-0.5 * share)
    assert psi["F2"] == pytest.approx(-0.5 * (1 - share))


# --------------------------------------------------------------------------- Table 1


def table1_case(name: str):
    """Cases A–C of Table 1: frozen context G = {G1, G2, G3} + M = {F1, F2}.

    Signatures c = (v(G), v(G+F1), v(G+F2), v(G+M)): A plateau (1, .5, .5, .5), B floor
    (1, 0, 0, 0), C floor masking where removing background G3 lifts v to 0.10.
    """
    faults = {"F1", "F2"}

    def v(s):
        answer = 1.0 if "G1" in s else 0.0
        if name == "A":
            penalty = 0.5 if s & faults else 0.0
        elif name == "B":
            penalty = 1.0 if s & faults else 0.0
        else:
            penalty = (1.0 if "G3" in s else 0.9) if s & faults else 0.0
        return min(1.0, max(0.0, answer - penalty))

    return table_game(["G1", "G2", "G3", "F1", "F2"], v)


@pytest.mark.parametrize("name, signature, loo_removes, loo_value", [
    ("A", (1.0, 0.5, 0.5, 0.5), [], 0.5),
    ("B", (1.0, 0.0, 0.0, 0.0), [], 0.0),
    ("C", (1.0, 0.0, 0.0, 0.0), ["G3"], 0.1),
])
def test_table1_cases(name, signature, loo_removes, loo_value):
    """MeClear removes exactly M and recovers; LOO returns ∅ or a background memory."""
    game = table1_case(name)
    g = frozenset({"G1", "G2", "G3"})
    assert tuple(game.values([g, g | {"F1"}, g | {"F2"}, g | {"F1", "F2"}])) == pytest.approx(signature)
    spec = ClearanceSpec()  # the paper's settings: K = 5, L = 16, κ = τ = 0.05, two trials
    plan = run_meclear(game.fork(), spec)
    assert set(plan.harmful) == {"F1", "F2"}
    assert set(plan.removed) == {"F1", "F2"} and plan.selected == 2
    assert plan.cleared_value == 1.0 and plan.recovered
    assert plan.structure == {"F1": "redundant", "F2": "redundant"}
    base = run_loo(game.fork(), spec)
    assert list(base.removed) == loo_removes
    assert base.cleared_value == pytest.approx(loo_value)
    assert not base.recovered


@pytest.mark.parametrize("name", ["A", "B", "C"])
def test_table1_cases_with_sampled_shapley(name):
    """With sampled ψ̂ (L = 16, exact: never) MeClear still clears exactly M."""
    plan = run_meclear(table1_case(name), ClearanceSpec(exact="never"))
    assert not plan.exact and plan.permutations == 16
    assert set(plan.removed) == {"F1", "F2"} and plan.recovered


def test_joint_pair_is_diagnosed_joint():
    """Each harmless alone, harmful together: ω < −τ (Eq. 15), diagnosed joint."""
    def v(s):
        return 0.0 if {"F1", "F2"} <= s else (1.0 if "G1" in s else 0.0)

    game = table_game(["G1", "G2", "F1", "F2"], v)
    # Δ_ij v(S) = −1 exactly when G1 ∈ S, which precedes both faults with probability 1/3
    assert interaction(game, "F1", "F2", None) == pytest.approx(-1.0 / 3)
    plan = run_meclear(game, ClearanceSpec())
    assert plan.structure == {"F1": "joint", "F2": "joint"}
    # one of the two suffices to recover: the minimal candidate C_1 is selected
    assert plan.selected == 1 and plan.recovered


def test_exact_auto_choice_and_expected_distinct():
    """At K = 5, L = 16 permutations visit ≈ 28 coalitions, exact needs 32: auto picks exact."""
    assert expected_distinct_coalitions(5, 16) == pytest.approx(28.1, abs=0.2)
    assert use_exact(5, 16, "auto")
    assert not use_exact(8, 16, "auto")
    assert use_exact(8, 16, "always") and not use_exact(3, 16, "never")


def test_hoeffding_radius_solves_eq13():
    """2K·exp(−L ε²/2) = δ at the reported radius (Eq. 13)."""
    eps = hoeffding_radius(16, 5, confidence=0.95)
    assert 2 * 5 * math.exp(-16 * eps ** 2 / 2) == pytest.approx(0.05)


def test_permutations_needed_eq42():
    """Eq. 42: L ≥ 2/γ² · ln(2K/δ) with γ the smallest distance of a ψ to −τ."""
    from memsteward.clearance.attribution import permutations_needed

    psi = {"a": 0.5, "b": -0.25, "c": 0.0}  # γ = 0.05 (c), K = 3
    assert permutations_needed(psi, 0.05) == math.ceil(2 / 0.05 ** 2 * math.log(6 / 0.05))
    assert permutations_needed({"a": -0.05}, 0.05) is None


def test_table_outcomes_and_recovery_rules():
    """Per-trial outcomes: v̂ is their mean; ν follows the policy's recovery rule."""
    from memsteward.clearance.case import case_game, parse_case
    from memsteward.policy.model import Recovery

    raw = {"query": "q", "reference": "r", "context": [{"id": "a"}, {"id": "f"}],
           "game": {"type": "table", "outcomes": {"": [0, 0], "a": [1, 1], "f": [0, 0], "a,f": [1, 0]}}}
    case = parse_case(raw)
    strict = case_game(case, ClearanceSpec(retrieval_budget=2))
    assert strict.value({"a", "f"}) == 0.5 and not strict.recovered({"a", "f"})
    lenient = case_game(case, ClearanceSpec(retrieval_budget=2, recovery=Recovery(rule="any_trial")))
    assert lenient.recovered({"a", "f"})
    plan = run_meclear(case_game(case, ClearanceSpec(retrieval_budget=2)), ClearanceSpec(retrieval_budget=2))
    assert plan.removed == ("f",) and plan.cleared_value == 1.0
