"""The ClearancePlan: the frozen result of clearing one query's context (Algorithm 1 output).

A plan is a value: computing it never touches the memory bank. It records the local profile,
the contributions, interactions, the harmful set, the nested chain with its gains, the
verified selection ĵ and the cleared context M̃_t = M_t \\ C_ĵ, with what it cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


def frozen_map(d: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only copy of a mapping."""
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class PairInteraction:
    """ω_ij of one pair (Eq. 15) and its structural diagnosis."""

    pair: tuple[str, str]
    omega: float
    structure: str  # redundant | joint | additive

    def as_dict(self) -> dict[str, Any]:
        return {"pair": list(self.pair), "omega": self.omega, "structure": self.structure}


@dataclass(frozen=True)
class ClearancePlan:
    """What a clearance method decided for one query (and what it cost)."""

    method: str
    query: str
    context: tuple[str, ...]
    loo: Mapping[str, float]
    screen: Mapping[str, str]
    contribution: Mapping[str, float]
    radius: Mapping[str, float]
    exact: bool
    permutations: int
    stop: str
    interaction: tuple[PairInteraction, ...]
    structure: Mapping[str, str]
    harmful: tuple[str, ...]
    chain: tuple[str, ...]
    gains: tuple[float | None, ...]  # ĝ(0 … |chain|); None: not read (search: budgeted)
    admissible: tuple[int, ...]
    selected: int
    removed: tuple[str, ...]
    cleared_context: tuple[str, ...]
    baseline_value: float
    cleared_value: float
    recovered: bool
    ranking: tuple[str, ...]
    coalitions_evaluated: int
    evaluator_calls: int
    permutations_needed: int | None = None  # Eq. 42 at the estimated margin γ
    notes: tuple[str, ...] = field(default=())
    empty_value: float | None = None  # v̂(∅), for the efficiency certificate Σψ = v̂(M) − v̂(∅)
    harm_tolerance: float | None = None  # τ used for H = {ψ_i < −τ} (Eq. 14)
    estimator: str = "permutation"  # exact | permutation (Eq. 11) | stratified (S2) | targeted
    samples: int = 0  # sampled coalitions (stratified) or marginal samples (targeted)

    def to_json(self) -> dict[str, Any]:
        """The plan as a JSON-ready dict (ids are strings, numbers are JSON numbers)."""
        return {
            "method": self.method,
            "query": self.query,
            "context": list(self.context),
            "loo": dict(self.loo),
            "screen": dict(self.screen),
            "contribution": dict(self.contribution),
            "radius": {k: (None if v == float("inf") else v) for k, v in self.radius.items()},
            "exact": self.exact,
            "permutations": self.permutations,
            "stop": self.stop,
            "interaction": [p.as_dict() for p in self.interaction],
            "structure": dict(self.structure),
            "harmful": list(self.harmful),
            "chain": list(self.chain),
            "gains": list(self.gains),
            "admissible": list(self.admissible),
            "selected": self.selected,
            "removed": list(self.removed),
            "cleared_context": list(self.cleared_context),
            "baseline_value": self.baseline_value,
            "cleared_value": self.cleared_value,
            "recovered": self.recovered,
            "ranking": list(self.ranking),
            "coalitions_evaluated": self.coalitions_evaluated,
            "evaluator_calls": self.evaluator_calls,
            "permutations_needed": self.permutations_needed,
            "empty_value": self.empty_value,
            "harm_tolerance": self.harm_tolerance,
            "estimator": self.estimator,
            "samples": self.samples,
            "notes": list(self.notes),
        }
