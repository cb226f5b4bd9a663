"""The paper's metrics (§3) as pure functions: worked examples from the definitions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsteward.repair import metrics


def test_leak():
    assert metrics.leak_pct({"a", "b", "c", "d"}, {"a": 1, "b": 1, "c": 1, "d": 1},
                            {"a": 1, "b": 2, "x": 1}) == 25.0  # only a is served at its stale version
    assert metrics.leak_pct(set(), {}, {}) == 0.0


def test_stale_use():
    traces = [{("a", 1)}, {("a", 2), ("b", 1)}, set(), {("c", 1)}]
    assert metrics.stale_use_pct(traces, {("a", 1), ("c", 1)}) == 50.0


def test_rep_is_micro_averaged():
    # 100 Σ|R| / Σ|D⁺|, not the mean of per-event rates (which would be 75)
    assert metrics.rep_pct([(1, 1), (1, 3)]) == 50.0
    assert metrics.rep_pct([(0, 0)]) == 0.0


def test_cost_normalised_to_repair_all():
    assert metrics.normalized_cost(3.0, 4.0) == 0.75
    assert metrics.normalized_cost(0.0, 0.0) == 0.0  # E_0 empty


def test_task_score_and_delta_task():
    # A_t = {a,b,c,d}; U_t = {a,b}; L_t = {b}: s_t = 1 − (2 + ½)/4
    assert metrics.task_score({"a", "b", "c", "d"}, {"a", "b"}, {"b"}) == pytest.approx(0.375)
    assert metrics.task_score(set(), {"a"}, {"a"}) == 1.0
    assert metrics.delta_task([1.0, 0.5]) == pytest.approx(-25.0)


@given(st.sets(st.sampled_from("abcdefgh")), st.sets(st.sampled_from("abcdefgh")),
       st.sets(st.sampled_from("abcdefgh")))
def test_task_score_bounds(a, u, l):  # noqa: E741
    s = metrics.task_score(a, u, l)
    assert -0.5 <= s <= 1.0  # |U_t| + ½|L_t| ≤ 1.5 |A_t|
