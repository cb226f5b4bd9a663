"""The result types of clearance, compare and the endpoint policy are immutable values.

Written for issue 33's whole-core mutation run (seed 4: ``compare.py:35`` ``frozen=True`` ->
``False`` survived 99 covering tests). These objects are shared after they are made: a Decision or
Difference is reported and compared, an Attribution / Selection / StratifiedEstimate feeds the
clearance plan and its certificate, EndpointRules is the operator's allow-list checked for every
endpoint a policy names. Assigning to a field must fail, and those whose fields are all hashable
must hash by value (equal objects, one set member).
"""

from __future__ import annotations

import copy
import dataclasses

import pytest

from memsteward.clearance.attribution import Attribution
from memsteward.clearance.selection import Selection
from memsteward.clearance.stratified import StratifiedEstimate, Surrogate
from memsteward.policy.compare import Decision, Difference
from memsteward.policy.domain import Cell
from memsteward.policy.endpoints import EndpointRules


def _values() -> dict[str, tuple[object, str, object, bool]]:
    """name -> (value, a field, another value for it, whether the value is hashable)."""
    old = Decision("regen", frozenset({"schema", "grounded"}), 1, frozenset({'{"oracle": "schema"}'}))
    new = Decision("remove", frozenset(), None)
    return {
        "Decision": (old, "mode", "remove", True),
        "Difference": (Difference("stricter", Cell("record", None, "delete", "sufficient", False), old, new),
                       "verdict", "looser", False),  # a Cell holds its metadata in a dict
        "Selection": (Selection(frozenset({"a", "b"}), ("b", "a"), (0.0, 0.25, 0.5), (0, 1, 2), 2),
                      "selected", 0, True),
        "EndpointRules": (EndpointRules(("CORP_*",), ("box.corp",), "test"), "key_envs", ("*",), True),
        "Attribution": (Attribution({"a": -0.25}, False, 4, {"a": 0.5}, "fixed"), "stop", "budget", False),
        "Surrogate": (Surrogate({"a": 0.25, "b": -0.5}, 0.75, 0.125), "top", 1.0, False),
        "StratifiedEstimate": (StratifiedEstimate({"a": 0.25}, 0.5, {1: 2}), "radius", 0.0, False),
    }


NAMES = ["Decision", "Difference", "Selection", "EndpointRules", "Attribution", "Surrogate", "StratifiedEstimate"]


@pytest.mark.parametrize("name", NAMES)
def test_a_result_value_cannot_be_changed_after_it_is_made(name):
    value, field, other, _ = _values()[name]
    before = getattr(value, field)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, other)
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(value, field)
    assert getattr(value, field) == before
    assert dataclasses.replace(value, **{field: other}) != value  # a changed copy is the way to change one


@pytest.mark.parametrize("name", NAMES)
def test_a_result_value_hashes_by_value_when_its_fields_do(name):
    value, _, _, hashable = _values()[name]
    twin = copy.deepcopy(value)
    assert twin == value and twin is not value
    if hashable:
        assert hash(twin) == hash(value) and len({value, twin}) == 1
    else:
        with pytest.raises(TypeError, match="unhashable"):
            hash(value)
