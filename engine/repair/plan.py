"""The transition plan ρ as a frozen value (MemoRepair Algorithm 1) and its pure computation.

:func:`compute_plan` performs lines 1 and 3–6 of Algorithm 1 (cascade, modes, candidates,
executability, selection) and the execution order of line 7 without touching any store; the
barrier (line 2) and lines 7–8 are carried out by :mod:`memsteward.repair.execute`, which returns the
same plan with ``executed``, ``republished`` and ``withdrawn`` filled in.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from operator import attrgetter, lt
from typing import Any

from ..jsonio import bounded_fraction
from ..policy.model import Policy
from ..store.api import Provenance
from .artifacts import SERVABLE_STATES
from .candidates import Assignment, Candidate, assign, requirement_edges
from .closure import Selection, select
from .events import Event, event_from_dict
from .operators import OperatorRegistry, operators_for, reads_content
from .scope import Scope, generation_order, read_scope, with_untracked


@dataclass(frozen=True)
class StepResult:
    """Outcome of one selected candidate: staged version, validation reports, final status."""

    id: str
    mode: str
    status: str  # validated | failed | blocked | republished
    version: int | None = None
    reports: tuple[Mapping[str, Any], ...] = ()
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "mode": self.mode, "status": self.status, "version": self.version,
                "validation": list(self.reports), "error": self.error}


@dataclass(frozen=True)
class TransitionPlan:
    """ρ: everything decided for one event, and (after execution) what happened."""

    event: Event
    selector: str
    tradeoff: float
    budget: float | None
    cascade: tuple[str, ...]
    descendants: tuple[str, ...]
    barrier: tuple[str, ...]
    modes: Mapping[str, str]
    candidates: tuple[Candidate, ...]
    requirements: tuple[tuple[str, str], ...]
    selection: Selection
    order: tuple[str, ...]
    base_versions: Mapping[str, int]
    executed: tuple[StepResult, ...] = ()
    republished: tuple[str, ...] = ()
    withdrawn: tuple[str, ...] = ()
    roots: Mapping[str, str] = field(default_factory=dict)
    status: str = "planned"
    # members of C(F) that were not servable before the event (withdrawn or erased by an earlier
    # event): their stored content is already invalidated and is never used as repair support
    unservable: tuple[str, ...] = ()
    # servable artifacts outside the recorded C(F) whose content shares n-word runs with a root
    # (lineage content scan): id → {"root", "shared"}; they and their descendants joined C(F)
    untracked: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def candidate(self, ident: str) -> Candidate:
        for c in self.candidates:
            if c.id == ident:
                return c
        raise KeyError(ident)

    def to_json(self) -> dict[str, Any]:
        """The TransitionPlan JSON (ids are JSON strings throughout)."""
        return {
            "status": self.status,
            "event": self.event.as_dict(),
            "selector": self.selector,
            "tradeoff": self.tradeoff,
            "budget": self.budget,
            "cascade": list(self.cascade),
            "descendants": list(self.descendants),
            "barrier": list(self.barrier),
            "modes": dict(self.modes),
            "candidates": [c.as_dict() for c in self.candidates],
            "requirements": [list(e) for e in self.requirements],
            "selection": sorted(self.selection.selected),
            "selection_method": self.selection.method,
            "optimal": self.selection.optimal,
            "objective": self.selection.objective,
            "objective_exact": str(self.selection.objective_exact),
            "order": list(self.order),
            "base_versions": dict(self.base_versions),
            "executed": [s.as_dict() for s in self.executed],
            "republished": list(self.republished),
            "withdrawn": list(self.withdrawn),
            "roots": dict(self.roots),
            "unservable": list(self.unservable),
            "untracked": {i: dict(m) for i, m in self.untracked.items()},
        }

    def to_columns(self) -> dict[str, Any]:
        """:meth:`to_json` as the barrier stores it, built without an object per candidate or edge:
        ``candidates`` as :class:`~memsteward.store.planstore.Rows` (one column per field of
        :class:`Candidate`), ``requirements`` as the tuple of pairs, and ``selection`` read off the
        sorted cascade when it is (no sort). ``planstore.plan_text`` gives the same text as for
        :meth:`to_json` (tuples and lists are both JSON arrays)."""
        from ..store.planstore import Rows

        unsorted = dataclasses.replace(self.selection, selected=frozenset())
        doc = self.replace(candidates=(), requirements=(), selection=unsorted).to_json()
        names = list(Candidate._fields)
        doc["candidates"] = Rows(names, [list(map(attrgetter(n), self.candidates)) for n in names])
        doc["requirements"] = self.requirements
        chosen = self.selection.selected  # read off the cascade if strictly increasing there, and all present
        doc["selection"] = list(filter(chosen.__contains__, self.cascade))
        if len(doc["selection"]) != len(chosen) or not all(map(lt, doc["selection"], islice(doc["selection"], 1, None))):
            doc["selection"] = sorted(chosen)
        return doc

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> TransitionPlan:
        cands = tuple(Candidate(c["id"], c["kind"], c["arch"], c["mode"], c["operator"],
                                tuple(c["prerequisites"]), c["executable"], c["value"], c["cost"],
                                c.get("reason", "")) for c in doc["candidates"])
        sel = Selection(frozenset(doc["selection"]), bounded_fraction(doc["objective_exact"]),
                        doc["selection_method"], doc["optimal"])
        steps = tuple(StepResult(s["id"], s["mode"], s["status"], s["version"], tuple(s["validation"]),
                                 s["error"]) for s in doc.get("executed", []))
        return TransitionPlan(
            event=event_from_dict(doc["event"]), selector=doc["selector"], tradeoff=doc["tradeoff"],
            budget=doc["budget"], cascade=tuple(doc["cascade"]), descendants=tuple(doc["descendants"]),
            barrier=tuple(doc["barrier"]), modes=dict(doc["modes"]), candidates=cands,
            requirements=tuple(tuple(e) for e in doc["requirements"]), selection=sel,
            order=tuple(doc["order"]), base_versions=dict(doc["base_versions"]), executed=steps,
            republished=tuple(doc["republished"]), withdrawn=tuple(doc["withdrawn"]),
            roots=dict(doc.get("roots", {})), status=doc.get("status", "planned"),
            unservable=tuple(doc.get("unservable", ())), untracked=dict(doc.get("untracked", {})))

    def replace(self, **changes: Any) -> TransitionPlan:
        return dataclasses.replace(self, **changes)


def root_actions(event: Event) -> dict[str, str]:
    """What the event does to each root: deletion erases, correction and migration replace."""
    action = {"delete": "erased", "correct": "replaced", "migrate": "interface-updated"}[event.type]
    out = {r: action for r in event.roots}
    if event.type == "correct":
        for r in event.roots:
            if r not in event.replacement_ids:
                out[r] = "withdrawn"
    return out


def execution_order(candidates: tuple[Candidate, ...], selected: frozenset[str],
                    requirements: Sequence[tuple[str, str]] | None = None) -> tuple[str, ...]:
    """Topological order of E^req[S_ρ] (Algorithm 1 line 7): its generations, each in id order
    (:func:`~memsteward.repair.scope.generation_order`; ``requirements``: E^req when already
    computed from ``candidates``)."""
    edges = requirement_edges(candidates) if requirements is None else requirements
    chosen = [c.id for c in candidates if c.id in selected]  # the candidates come in id order
    if len(chosen) != len(selected):  # a selection naming what is not a candidate: order it all the same
        chosen = sorted(selected)
    return generation_order(chosen, [(j, i) for j, i in edges if i in selected and j in selected])


def compute_plan(policy: Policy, source: Provenance, event: Event, selector: str = "mincut",
                 backend: str = "networkx", operators: OperatorRegistry | None = None) -> TransitionPlan:
    """Algorithm 1 lines 1, 3–6 as a pure function of (policy, provenance, event).

    ``source`` is a store (:class:`~memsteward.store.api.Provenance`) or a
    :class:`~memsteward.repair.artifacts.Snapshot`; only C(F), its members' influence parents and
    those artifacts are read (:func:`~memsteward.repair.scope.read_scope`), so the cost grows with
    the cascade, not with the store.
    """
    operators = operators or operators_for(policy)
    with paused_gc():
        return plan_from_scope(policy, event_scope(policy, source, event, operators), event, selector, backend,
                               operators)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a plan is computed.

    Planning allocates a few objects per member of C(F) and frees nothing cyclic, but every 700
    allocations start a collection and the full ones rescan the growing heap: at |C(F)| ≈ 10^5 this
    made planning superlinear (bench/sections/repair_scale.md). Reference counting still frees
    everything; the collector runs again afterwards.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def event_scope(policy: Policy, source: Provenance, event: Event, operators: OperatorRegistry | None = None,
                ) -> Scope:
    """C(F) and its neighbourhood; on a delete or privacy correction with ``lineage.content_scan``,
    grown by the untracked derivations the content scan finds (:func:`~memsteward.repair.scope.with_untracked`).
    Content is read for the roots and where an operator's check may read it (:func:`content_needed`)."""
    needs = content_needed(policy, operators or operators_for(policy), event)
    scope = read_scope(source, event.roots, needs)
    lin = policy.lineage
    if not lin.content_scan or not (event.type == "delete" or (event.type == "correct" and event.privacy)):
        return scope
    roots_content = {r: scope.artifacts[r].content for r in event.roots if r in scope.artifacts}
    return with_untracked(source, scope, roots_content, lin.shingle_words, lin.min_shared, needs)


def content_needed(policy: Policy, operators: OperatorRegistry, event: Event) -> Callable[[str, str | None], bool]:
    """(kind, arch) → whether planning may need such an artifact's content: some mode rule that can
    fire for the kind, arch and event type (its ``support``, ``partitions`` and ``meta`` guards are
    not known before planning, so they are assumed to match) assigns a mode whose operator's check
    reads content (:func:`~memsteward.repair.operators.reads_content`)."""
    def modes_for(kind: str, arch: str | None) -> set[str]:
        out: set[str] = set()
        for rule in policy.modes:
            w = rule.when
            if rule.mode != "remove" and (w.kind is None or kind in w.kind) and (
                    w.arch is None or arch in w.arch) and (w.event is None or event.type in w.event):
                out.add(rule.mode)
        return out

    return reads_content(operators, modes_for)


def plan_from_scope(policy: Policy, scope: Scope, event: Event, selector: str = "mincut",
                    backend: str = "networkx", operators: OperatorRegistry | None = None,
                    ordering: tuple[list[str], frozenset[str]] | None = None,
                    order_fn: Callable[..., tuple[str, ...]] = execution_order,
                    assign_fn: Callable[..., Assignment] = assign) -> TransitionPlan:
    """Lines 3–6 and the order of line 7 over one event's :class:`Scope` (pure). ``ordering``,
    ``order_fn`` and ``assign_fn`` let :mod:`memsteward.repair.reference` substitute its own steps."""
    roots = frozenset(event.roots)
    assignment = assign_fn(policy, scope, event, operators, ordering)
    lam = policy.selection.tradeoff
    budget = policy.selection.budget
    sel = select(assignment.candidates, lam, selector, budget, backend)
    members = scope.members
    arts = list(map(scope.artifacts.__getitem__, members))
    base_versions = dict(zip(members, [a.version for a in arts]))
    unservable = [i for i, a in zip(members, arts) if a.state not in SERVABLE_STATES and i not in roots]
    descendants = tuple([i for i in members if i not in roots])
    modes = assignment.modes
    requirements = tuple(requirement_edges(assignment.candidates))
    return TransitionPlan(
        event=event, selector=selector, tradeoff=lam, budget=budget,
        cascade=tuple(members), descendants=descendants,
        barrier=() if selector == "no_action" else tuple(members),
        modes={i: modes[i] for i in descendants if i in modes}, candidates=assignment.candidates,
        requirements=requirements, selection=sel,
        order=order_fn(assignment.candidates, sel.selected, requirements),
        base_versions=base_versions,
        roots=root_actions(event) if selector != "no_action" else {},
        unservable=tuple(unservable),
        untracked={i: dict(m) for i, m in sorted(scope.untracked.items())},
    )
