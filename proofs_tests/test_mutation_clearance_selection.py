"""Verified clearance (``selection.py``, Eq. 14, 16–20) against a brute-force reading of each equation.

Written for issue 33's targeted mutation runs (bench/mutation-targeted-clearance.md): both sides of
every bound (ψ̂ = −τ, ĝ = 0 and ĝ = EPS, ties of ĝ within EPS), ties of the chain, and Theorem 2's
three properties as a Hypothesis property against a reference that enumerates every candidate.
"""

from __future__ import annotations

import math
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsteward.clearance.evaluators import TableEvaluator
from memsteward.clearance.game import Coalition, Game, Memory, Task
from memsteward.clearance.selection import (
    EPS,
    Selection,
    admissible,
    candidates,
    chain,
    clearance,
    gains,
    harmful,
    select,
)
from memsteward.policy.model import Recovery


def subsets(ids) -> list[Coalition]:
    return [frozenset(c) for r in range(len(ids) + 1) for c in combinations(ids, r)]


def game_of(ids, table, recovery=None) -> Game:
    return Game(Task("q", "r", tuple(Memory(i) for i in ids)), TableEvaluator(table), trials=1, recovery=recovery)


def test_harmful_is_strictly_below_minus_tau():
    psi = {"a": -0.2, "b": -0.1, "c": -0.1 - 1e-12, "d": 0.0, "e": -0.1 + 1e-12, "f": 0.3}
    assert harmful(psi, 0.1) == frozenset({"a", "c"})
    assert harmful({"a": -1e-15, "b": 0.0}, 0.0) == frozenset({"a"})
    assert harmful({}, 0.1) == frozenset()


def test_chain_orders_by_contribution_then_context_then_id():
    psi = {"a": -0.1, "b": -0.3, "c": -0.1, "d": -0.3, "x": -0.1}
    assert chain(psi, frozenset(psi), ["d", "c", "b", "a"]) == ("d", "b", "c", "a", "x")  # context order breaks ties
    assert chain(psi, frozenset({"x", "a"}), []) == ("a", "x")  # outside the order: by id
    assert chain(psi, frozenset({"a", "b"}), ["a", "b"]) == ("b", "a")
    assert chain(psi, frozenset(), ["a"]) == ()


def test_candidates_are_the_nested_prefixes_from_the_empty_set():
    assert candidates(("b", "a", "c")) == [frozenset(), frozenset("b"), frozenset("ba"), frozenset("bac")]
    assert candidates(()) == [frozenset()]


def test_gains_are_the_value_after_clearing_each_prefix_minus_v_m():
    ids = ["a", "b", "c"]
    table = {s: len(s) / 8 for s in subsets(ids)}
    table[frozenset("ac")] = 0.75
    table[frozenset("c")] = 0.5
    assert gains(game_of(ids, table), ("b", "a")) == [0.0, 0.75 - 3 / 8, 0.5 - 3 / 8]
    assert gains(game_of(ids, table), ()) == [0.0]


def test_admissible_needs_a_gain_above_eps_and_recovery():
    ids = ["a", "b", "c", "d"]
    full = frozenset(ids)
    table = {s: 0.5 for s in subsets(ids)}
    order = ("a", "b", "c", "d")
    # j = 1: gain EPS exactly (not above); j = 2: gain above EPS but not recovered; j = 3: both; j = 4: negative
    table[full - frozenset("ab")] = 0.55
    table[full - frozenset("abc")] = 0.9
    game = game_of(ids, table, Recovery(rule="threshold", threshold=0.6))
    gain = [0.0, EPS, 0.05, 0.4, -0.1]
    assert admissible(game, order, gain) == [0, 3]
    assert admissible(game, order, [0.0, 2 * EPS, 0.0, 0.0, 0.0]) == [0]  # v̂(M ∖ {a}) = 0.5: not recovered
    table[full - frozenset("a")] = 0.7
    game = game_of(ids, table, Recovery(rule="threshold", threshold=0.6))
    assert admissible(game, order, [0.0, 2 * EPS, 0.0, 0.0, 0.0]) == [0, 1]
    assert admissible(game, order, [0.0, EPS, 0.0, 0.0, 0.0]) == [0]
    assert admissible(game, (), [0.0]) == [0]


def test_select_is_the_smallest_maximiser_within_eps():
    assert select([0.0, 0.2, 0.5, 0.5], [0, 1, 2, 3]) == 2
    assert select([0.0, 0.2, 0.5 - EPS / 2, 0.5], [0, 1, 2, 3]) == 2  # within EPS of the best: a tie
    assert select([0.0, 0.2, 0.5 - 2 * EPS, 0.5], [0, 1, 2, 3]) == 3
    assert select([0.0, 0.2, 0.9, 0.5], [0, 1, 3]) == 3  # only admissible ones count
    assert select([0.0, -0.2], [0]) == 0
    assert select([0.0, EPS / 2], [0, 1]) == 0


@pytest.mark.parametrize("best", [1.0, 0.75, 0.5, 0.1, 3 * EPS, 1e-9])
def test_select_counts_a_gain_exactly_eps_below_the_best_as_a_tie_and_one_ulp_lower_not(best):
    at = best - EPS  # the float the bound is computed as: inside, it is a tie (>=)
    below, above = math.nextafter(at, -math.inf), math.nextafter(at, math.inf)
    for tie, want_tie in ((at, True), (above, True), (below, False)):
        gain = [0.0, tie, best]
        assert select(gain, [0, 1, 2]) == (1 if want_tie else 2), (best, tie)
        assert select([0.0, best, tie], [0, 1, 2]) == 1  # the maximiser comes first: it is the least
        assert select(gain, [0, 2]) == 2 and select(gain, [0, 1]) == 1  # only admissible ones count
    # the bound is EPS below the best, not below 0: with best = 0 nothing above -EPS is excluded
    assert select([0.0, -EPS], [0, 1]) == 0 and select([-EPS, 0.0], [0, 1]) == 0


def test_clearance_selects_the_shorter_prefix_when_its_gain_is_exactly_eps_below():
    ids = ["a", "b", "c"]
    full = frozenset(ids)
    table = {s: 0.0 for s in subsets(ids)}  # v̂(M) = 0: each gain is the table value itself
    table[full - {"a"}] = 0.75 - EPS
    table[full - {"a", "b"}] = 0.75
    game = game_of(ids, table, Recovery(rule="threshold", threshold=0.5))
    sel = clearance(game, {"a": -0.3, "b": -0.2, "c": 0.1}, 0.1)
    assert sel.chain == ("a", "b") and sel.gains == (0.0, 0.75 - EPS, 0.75) and sel.admissible == (0, 1, 2)
    assert sel.selected == 1 and sel.removed == ("a",)
    table[full - {"a"}] = math.nextafter(0.75 - EPS, 0.0)  # one ulp further: no longer a tie
    assert clearance(game_of(ids, table, Recovery(rule="threshold", threshold=0.5)),
                     {"a": -0.3, "b": -0.2, "c": 0.1}, 0.1).selected == 2


def test_selection_removes_the_selected_prefix_of_the_chain():
    s = Selection(frozenset("abc"), ("b", "a", "c"), (0.0, 0.1, 0.3, 0.2), (0, 1, 2, 3), 2)
    assert s.removed == ("b", "a")
    assert Selection(frozenset(), (), (0.0,), (0,), 0).removed == ()


def reference_clearance(ids, table, psi, tau, threshold):
    """Every step from its equation: H, σ, C_j, ĝ(j), J, ĵ, by enumeration."""
    h = {i for i in ids if psi[i] < -tau}
    sigma = sorted(h, key=lambda i: (psi[i], ids.index(i)))
    full = frozenset(ids)
    g = [table[full - frozenset(sigma[:j])] - table[full] for j in range(len(sigma) + 1)]
    admissible_set = [0] + [j for j in range(1, len(sigma) + 1)
                            if g[j] > EPS and table[full - frozenset(sigma[:j])] >= threshold - 1e-9]
    best = max(g[j] for j in admissible_set)
    j_hat = min(j for j in admissible_set if g[j] >= best - EPS)
    return tuple(sigma), g, admissible_set, j_hat


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 5), st.data())
def test_clearance_is_the_equations_and_satisfies_theorem_2(k, data):
    ids = [f"m{j}" for j in range(k)]
    table = {s: data.draw(st.integers(0, 8)) / 8 for s in subsets(ids)}
    psi = {i: data.draw(st.integers(-4, 2)) / 8 for i in ids}
    tau = data.draw(st.sampled_from([0.0, 0.125, 0.25]))
    threshold = data.draw(st.sampled_from([0.5, 0.75, 1.0]))
    game = game_of(ids, table, Recovery(rule="threshold", threshold=threshold))
    sel = clearance(game, psi, tau)
    sigma, g, j_set, j_hat = reference_clearance(ids, table, psi, tau, threshold)
    assert sel.harmful == frozenset(sigma) and sel.chain == sigma
    assert list(sel.gains) == pytest.approx(g, abs=1e-12)
    assert list(sel.admissible) == j_set and sel.selected == j_hat
    # Theorem 2: non-degradation, recovery when something is removed, minimality
    assert sel.gains[sel.selected] >= 0
    full = frozenset(ids)
    if sel.selected:
        assert table[full - frozenset(sel.removed)] >= threshold - 1e-9
    assert all(sel.gains[j] < sel.gains[sel.selected] - EPS for j in sel.admissible if j < sel.selected)
