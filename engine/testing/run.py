"""Running declared cases through the real engine and comparing with their expectations.

A repair case is planned and executed by :func:`memsteward.repair.execute.run_event` on a private
in-memory store (a dry run: nothing on disk changes). What the engine did is kept as an
:class:`Observation` (plan, each descendant's cell and firing rule, oracles run, what is
servable afterwards, whether λ and β decided anything), which the comparison and coverage read.

A case's ``successors`` are oracle inputs: the candidate's operator (the policy's, so its name,
checks and prompt scaffolding stay) returns the given content instead of computing one, and the
validation oracles judge it as they would any successor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..clearance.case import case_game
from ..clearance.pipeline import run_meclear
from ..clearance.plan import ClearancePlan
from ..policy.domain import Cell, firing_rule
from ..policy.model import Policy
from ..repair.artifacts import Artifact
from ..repair.candidates import assign
from ..repair.closure import select
from ..repair.execute import run_event
from ..repair.operators import Operator, OperatorRegistry, RepairContext, Successor, operators_for
from ..repair.plan import TransitionPlan
from ..repair.scope import read_scope
from .load import LoadedCase, Suite, fresh_store
from .spec import Partial

PSEUDO_ORACLES = frozenset({"operator", "prerequisites"})  # failure reports that are not oracles
OBJECTIVE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Observation:
    """What the engine did on one repair case."""

    plan: TransitionPlan
    cells: Mapping[str, Cell]  # descendant → its Φ_μ cell
    rules: Mapping[str, int | None]  # descendant → 0-based firing rule (None: no rule, fallback remove)
    oracles: Mapping[str, tuple[str, ...]]  # executed candidate → oracles run on its successor
    servable: frozenset[str]
    tradeoff_at_stake: bool  # λ changed the selection (select at λ = 0 differs)
    budget_at_stake: bool  # β changed the selection (select without β differs)

    @property
    def removed(self) -> frozenset[str]:
        return frozenset(i for i, m in self.plan.modes.items() if m == "remove")

    @property
    def failed(self) -> frozenset[str]:
        return frozenset(s.id for s in self.plan.executed if s.status in ("failed", "blocked"))


@dataclass(frozen=True)
class Mismatch:
    """One expectation that did not hold."""

    field: str
    expected: Any
    actual: Any
    line: int
    artifact: str | None = None
    rule: dict[str, Any] | None = None  # the firing rule: index, name, mode, file, line

    def as_dict(self) -> dict[str, Any]:
        return {"field": self.field, "expected": self.expected, "actual": self.actual, "line": self.line,
                "artifact": self.artifact, "rule": self.rule}


@dataclass
class CaseResult:
    case: LoadedCase
    mismatches: list[Mismatch] = field(default_factory=list)
    observation: Observation | None = None
    clearance: ClearancePlan | None = None
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.mismatches


class _Given:
    """The policy's operator for a candidate, returning the case's given successor for its ids."""

    def __init__(self, op: Operator, given: Mapping[str, Any]) -> None:
        self.op, self.given = op, given

    def __getattr__(self, name: str) -> Any:  # name, check, checks_content, scaffold, …
        return getattr(self.op, name)

    def __call__(self, artifact: Artifact, ctx: RepairContext) -> Successor:
        if artifact.id in self.given:
            return Successor(self.given[artifact.id], {})
        return self.op(artifact, ctx)


class _GivenRegistry(OperatorRegistry):
    """The policy's operators, each wrapped by :class:`_Given` (a mode without one still has none)."""

    def __init__(self, base: OperatorRegistry, given: Mapping[str, Any]) -> None:
        super().__init__()
        self.base, self.given = base, given

    def find(self, mode: str, kind: str, arch: str | None) -> Operator | None:
        op = self.base.find(mode, kind, arch)
        return None if op is None else _Given(op, self.given)  # type: ignore[return-value]


def observe(policy: Policy, case: LoadedCase) -> Observation:
    """Plan and execute the case's event on a fresh in-memory store, and record what happened."""
    snap = case.snapshot
    assert snap is not None and case.event is not None
    store = fresh_store(snap, case.suite.file)
    given = case.spec.successors
    operators = _GivenRegistry(operators_for(policy), given) if given else None
    try:
        plan = run_event(store, policy, case.event, case.spec.selector, "networkx", operators=operators)
        servable = frozenset(a.id for a in store.serve())
    finally:
        store.close()
    return observation_of(policy, snap, case.event, plan, servable)


def observation_of(policy: Policy, snap, event, plan: TransitionPlan, servable: frozenset[str]) -> Observation:
    """The cells, firing rules, oracles and λ/β stakes behind an executed plan."""
    cells = dict(assign(policy, read_scope(snap, event.roots), event).cells)
    rules = {i: firing_rule(policy, c) for i, c in cells.items()}
    oracles = {s.id: tuple(r["oracle"] for r in s.reports if r.get("oracle") not in PSEUDO_ORACLES)
               for s in plan.executed}
    lam_stake = beta_stake = False
    if plan.selector == "mincut" and plan.candidates:
        base = select(plan.candidates, plan.tradeoff, "mincut", None, "networkx").selected
        lam_stake = select(plan.candidates, 0.0, "mincut", None, "networkx").selected != base
        beta_stake = plan.budget is not None and plan.selection.selected != base
    return Observation(plan, cells, rules, oracles, servable, lam_stake, beta_stake)


def rule_info(suite: Suite, index: int | None) -> dict[str, Any]:
    """The firing rule as shown in failures: 1-based index, name, mode, file and line."""
    if index is None:
        return {"index": None, "name": "(no rule: fallback remove)", "mode": "remove", "file": suite.policy.file,
                "line": suite.policy.source.where(("modes",))[0]}
    rule = suite.policy.policy.modes[index]
    return {"index": index + 1, "name": rule.name or f"rule {index + 1}", "mode": rule.mode,
            "file": suite.policy.file, "line": suite.policy.source.where(("modes", index))[0]}


def _set_check(expected: list[str] | Partial, actual: frozenset[str]) -> tuple[bool, Any, list[str]]:
    if isinstance(expected, Partial):
        ok = set(expected.include) <= actual and not (set(expected.exclude) & actual)
        return ok, expected.model_dump(), sorted(actual)
    return set(expected) == actual, sorted(set(expected)), sorted(actual)


def run_case(case: LoadedCase) -> CaseResult:
    """Run one case and compare every expectation it declares."""
    if case.clearance is not None:
        return _run_clearance(case)
    suite, exp = case.suite, case.spec.expect
    policy = suite.policy.policy
    obs = observe(policy, case)
    plan = obs.plan
    result = CaseResult(case, observation=obs)

    def line(*loc: Any) -> int:
        return suite.source.where(("cases", case.index, "expect", *loc))[0]

    def miss(fld: str, expected: Any, actual: Any, ln: int, artifact: str | None = None) -> None:
        rule = rule_info(suite, obs.rules.get(artifact)) if artifact in obs.rules else None
        result.mismatches.append(Mismatch(fld, expected, actual, ln, artifact, rule))

    for ident, mode in exp.modes.items():
        got = plan.modes.get(ident, "(not a descendant)")
        if got != mode:
            miss(f"modes.{ident}", mode, got, line("modes", ident), ident)
    for ident, ref in exp.rules.items():
        if ident not in obs.rules:
            miss(f"rules.{ident}", ref, "(not a descendant)", line("rules", ident))
            continue
        idx = obs.rules[ident]
        if idx is None or ref not in (idx + 1, policy.modes[idx].name):
            miss(f"rules.{ident}", ref, rule_info(suite, idx)["name"], line("rules", ident), ident)
    sets = {
        "cascade": frozenset(plan.cascade), "withdrawn": frozenset(plan.withdrawn),
        "republished": frozenset(plan.republished), "removed": obs.removed,
        "selected": frozenset(plan.selection.selected), "failed": obs.failed, "servable": obs.servable,
    }
    for name, actual in sets.items():
        expected = getattr(exp, name)
        if expected is None:
            continue
        ok, want, got = _set_check(expected, actual)
        if not ok:
            diff = (set(want) ^ set(got)) if isinstance(want, list) else set()
            culprit = next((i for i in sorted(diff) if i in obs.rules), None)
            miss(name, want, got, line(name), culprit)
    for ident, names in exp.oracles.items():
        got = sorted(obs.oracles.get(ident, ()))
        if sorted(set(names)) != sorted(set(got)):
            miss(f"oracles.{ident}", sorted(set(names)), got, line("oracles", ident), ident)
    if exp.objective is not None:
        got_obj = plan.selection.objective
        if not math.isclose(got_obj, exp.objective, rel_tol=0, abs_tol=OBJECTIVE_TOLERANCE):
            miss("objective", exp.objective, got_obj, line("objective"))
    return result


def _run_clearance(case: LoadedCase) -> CaseResult:
    spec = case.suite.policy.policy.clearance
    cl = case.clearance
    assert cl is not None
    plan = run_meclear(case_game(cl, spec), spec)
    result = CaseResult(case, clearance=plan)
    exp = case.spec.expect

    def line(name: str) -> int:
        return case.suite.source.where(("cases", case.index, "expect", name))[0]

    if exp.cleared is not None:
        ok, want, got = _set_check(exp.cleared, frozenset(plan.removed))
        if not ok:
            result.mismatches.append(Mismatch("cleared", want, got, line("cleared")))
    if exp.recovered is not None and exp.recovered != plan.recovered:
        result.mismatches.append(Mismatch("recovered", exp.recovered, plan.recovered, line("recovered")))
    return result
