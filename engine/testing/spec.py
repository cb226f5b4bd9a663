"""The test-file language for a team's own policies (``*_test.yaml``, ``memsteward schema --tests``).

A test file names a policy and holds *cases*. A repair case is a small store (inline, or a path
to a SQLite store / JSON export), one event, and expectations on the TransitionPlan the real
engine computes and executes on an in-memory copy (MemoRepair Algorithm 1): the mode μ_i and the
firing rule of named descendants, the sets withdrawn / republished / removed / failed / selected,
the oracles run on each successor and the objective Repair − λ·Cost (Eq. 1). A clearance case is a
MeClear case (query, context, game) and the memories that must be cleared (Eq. 20).

A test file may also declare the policy's *invariants* (checked by ``memsteward test
--properties``): for every descendant i ∈ D(F) whose cell matches ``for`` (the same guard
language as a mode rule's ``when``), the clause must hold on the plan.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field, StringConstraints, model_validator

from ..policy.model import ORACLES, Mode, Strict, When
from ..repair.closure import SELECTORS

# every oracle the policy language knows, or an oracle plugin as ``plugin:<name>`` (its report name)
OracleName = Literal[ORACLES] | Annotated[str, StringConstraints(  # type: ignore[valid-type]
    max_length=72, pattern=r"^plugin:[A-Za-z_][A-Za-z0-9_.\-]*$")]
SelectorName = Literal[SELECTORS]  # type: ignore[valid-type]


class Partial(Strict):
    """A partial set expectation: every ``include`` id is in the set, no ``exclude`` id is."""

    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)


IdSet = Union[list[str], Partial]  # noqa: UP007 (a runtime alias pydantic reads)
"""A list is the exact set (order ignored); ``{include, exclude}`` is partial."""


class Expect(Strict):
    """What the plan must show. Omitted fields are not checked."""

    modes: dict[str, Mode] = Field(default_factory=dict, description="descendant id → mode μ_i")
    rules: dict[str, str | int] = Field(
        default_factory=dict, description="descendant id → the rule that decides it (name or 1-based index)")
    cascade: IdSet | None = Field(default=None, description="C(F), roots included")
    withdrawn: IdSet | None = Field(default=None, description="B_ρ ∖ R_ρ after publication")
    republished: IdSet | None = Field(default=None, description="R_ρ, validated successors published")
    removed: IdSet | None = Field(default=None, description="descendants whose mode is remove")
    selected: IdSet | None = Field(default=None, description="S_ρ, the selection")
    failed: IdSet | None = Field(default=None, description="selected candidates that failed validation or were blocked")
    servable: IdSet | None = Field(default=None, description="ids retrieval may serve after the event")
    oracles: dict[str, list[OracleName]] = Field(
        default_factory=dict, description="descendant id → exactly the oracles run on its successor")
    objective: float | None = Field(default=None, description="Repair − λ·Cost of S_ρ (Eq. 1), ±1e-6")
    cleared: IdSet | None = Field(default=None, description="clearance: the memories removed (C_ĵ)")
    recovered: bool | None = Field(default=None, description="clearance: ν(M̃) = 1")


class CaseSpec(Strict):
    """One declared test case: a store and an event (repair), or a clearance case."""

    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    store: str | dict[str, Any] | None = Field(
        default=None, description="inline store document, or a path (SQLite or .json) relative to the test file")
    event: str | dict[str, Any] | None = Field(default=None, description="inline event, or a path")
    clearance: str | dict[str, Any] | None = Field(
        default=None, description="a MeClear case (query, reference, context, game), inline or a path")
    selector: SelectorName = "mincut"
    successors: dict[str, Any] = Field(
        default_factory=dict, max_length=10_000,
        description="oracle inputs: descendant id → the successor content its operator returns in this case "
                    "(instead of computing one), so the validation oracles and their thresholds judge a chosen "
                    "successor (e.g. a text grounded in part of its support)")
    expect: Expect = Field(default_factory=Expect)

    @model_validator(mode="after")
    def _one_kind(self) -> CaseSpec:
        if (self.event is None) == (self.clearance is None):
            raise ValueError("a case has exactly one of 'event' (repair) or 'clearance'")
        repair_only = ("modes", "rules", "cascade", "withdrawn", "republished", "removed", "selected",
                       "failed", "servable", "oracles", "objective")
        used = [f for f in repair_only if f in self.expect.model_fields_set]
        if self.clearance is not None and used:
            raise ValueError(f"expectation '{used[0]}' applies to repair cases (with an 'event')")
        if self.clearance is not None and self.successors:
            raise ValueError("'successors' applies to repair cases (with an 'event')")
        clear_only = [f for f in ("cleared", "recovered") if f in self.expect.model_fields_set]
        if self.event is not None and clear_only:
            raise ValueError(f"expectation '{clear_only[0]}' applies to clearance cases")
        return self


class Invariant(Strict):
    """∀ i ∈ D(F) with cell(i) ⊨ ``for``: the given clauses hold (all of them)."""

    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    for_: When = Field(default_factory=When, alias="for")
    mode_in: list[Mode] | None = None
    mode_not_in: list[Mode] | None = None
    republished: bool | None = None
    servable_after: bool | None = None

    @model_validator(mode="after")
    def _has_clause(self) -> Invariant:
        if all(getattr(self, k) is None for k in ("mode_in", "mode_not_in", "republished", "servable_after")):
            raise ValueError("an invariant needs at least one of mode_in, mode_not_in, republished, servable_after")
        return self


class SuiteSpec(Strict):
    """A test file: the policy under test, shared defaults, cases and invariants."""

    version: Literal[1] = 1
    policy: str | None = Field(
        default=None, description="policy path relative to this file (default: NAME.yaml for NAME_test.yaml, "
                                  "here or in the parent folder)")
    store: str | dict[str, Any] | None = Field(default=None, description="default store of the cases")
    cases: list[CaseSpec] = Field(default_factory=list, max_length=10_000)
    invariants: list[Invariant] = Field(default_factory=list, max_length=1_000)

    @model_validator(mode="after")
    def _unique_names(self) -> SuiteSpec:
        seen: set[str] = set()
        for c in self.cases:
            if c.name in seen:
                raise ValueError(f"two cases are named {c.name!r}")
            seen.add(c.name)
        return self


def tests_schema() -> dict[str, Any]:
    """The JSON Schema of a test file (``memsteward schema --tests``)."""
    doc = SuiteSpec.model_json_schema(by_alias=True)
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    doc["title"] = "memsteward policy test file"
    return doc
