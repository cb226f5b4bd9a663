"""w_i and c_i from metadata (MemoRepair §2.3: w_i, c_i ≥ 0): ``Weight.resolver``'s ``from_meta``
override applies only to finite non-negative numbers; everything else falls back to the tables."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsteward.policy.model import Weight

W = Weight(default=2.0, by_mode={"regen": 3.0}, by_kind={"skill": 5.0}, from_meta="cost")


@pytest.mark.parametrize("meta, expected", [
    ({"cost": 0.25}, 0.25), ({"cost": 0.0}, 0.0), ({"cost": 7}, 7.0), ({"cost": 1e300}, 1e300),
    ({"cost": -0.5}, 3.0), ({"cost": -1}, 3.0), ({"cost": math.inf}, 3.0), ({"cost": -math.inf}, 3.0),
    ({"cost": math.nan}, 3.0), ({"cost": "0.5"}, 3.0), ({"cost": None}, 3.0), ({"cost": [1.0]}, 3.0),
    ({}, 3.0), (None, 3.0), ({"value": 0.5}, 3.0),
])
def test_meta_overrides_only_with_finite_non_negative_numbers(meta, expected):
    got = W.resolver("summary", "regen")(meta)
    assert got == expected and type(got) is float


def test_tables_resolve_kind_before_mode_before_default():
    assert W.resolver("skill", "regen")({}) == 5.0
    assert W.resolver("summary", "regen")({}) == 3.0
    assert W.resolver("summary", "recompute")({}) == 2.0
    assert Weight(default=4.0).resolver("skill", "regen")({"cost": 1.0}) == 4.0  # no from_meta: tables only


@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-10**6, 10**6))
def test_any_number_is_taken_exactly_when_finite_and_non_negative(v):
    got = W.resolver("summary", "regen")({"cost": v})
    usable = not isinstance(v, float) or math.isfinite(v)
    assert got == (float(v) if usable and v >= 0 else 3.0)
