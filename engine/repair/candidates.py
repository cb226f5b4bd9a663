"""Mode assignment Φ_μ and repair candidates q_i = (μ_i, π_i, P_i, v_i, w_i, c_i) (§2.3).

For each descendant i ∈ D(F), in topological order of the influence graph, a
:class:`~memsteward.policy.domain.Cell` is built from the artifact and the event and the policy's
ordered mode rules assign μ_i (``memsteward.policy.domain.decide``; no matching rule ⇒ remove).
Support suffices when ``policy.support.sufficient(retained, inputs)`` where an influence input is
retained when it lies in Ret(e) or is an affected descendant that is itself repairable (μ ≠ remove).
Partitions exist for a neural skill when provenance yields a non-empty forget set (inputs
outside Ret(e)) and a non-empty reference set (inputs in Ret(e)). Inputs left withdrawn or erased
by an earlier event are not support (they are not servable in the post-event store).

P_i is the set of affected influence inputs whose repaired successors π_i consumes: parents in
D(F) — except for ``param``, which forgets affected inputs instead of consuming them (§3.1:
the operator "removes the deleted support from the skill's retained reference set").
A candidate is non-executable (v_i = 0) when P_i \\ D⁺(F) ≠ ∅, when it lies on a cycle (of E^inf
within C(F), hence of E^req), or when no registered operator can run on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, NamedTuple, Sequence

from ..policy.domain import Cell, decide
from ..policy.model import Policy
from .artifacts import SERVABLE, SERVABLE_STATES, Artifact
from .events import Event
from .operators import Operator, OperatorRegistry, operators_for
from .scope import Scope, order_and_cycles


class Candidate(NamedTuple):
    """q_i for one non-removed descendant i ∈ D⁺(F) (an immutable value: a named tuple, which a
    cascade of 10^5 builds in a quarter of a frozen dataclass's time)."""

    id: str
    kind: str
    arch: str | None
    mode: str
    operator: str
    prerequisites: tuple[str, ...]  # P_i
    executable: bool  # v_i
    value: float  # w_i
    cost: float  # c_i
    reason: str = ""  # why v_i = 0

    def as_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "arch": self.arch, "mode": self.mode,
                "operator": self.operator, "prerequisites": list(self.prerequisites),
                "executable": self.executable, "value": self.value, "cost": self.cost,
                "reason": self.reason}


_new_candidate = tuple.__new__  # Candidate from a full tuple of fields, without the named tuple's Python __new__


@dataclass(frozen=True)
class Assignment:
    """Result of lines 3–5 of Algorithm 1: modes for D(F), candidates for D⁺(F)."""

    modes: Mapping[str, str]
    candidates: tuple[Candidate, ...]
    cells: Mapping[str, Cell]


def meta_cell_values(policy: Policy, artifact: Artifact) -> dict[str, float]:
    """The numeric metadata the artifact's kind declares (declared default when absent)."""
    return dict(_meta_key(_meta_fields(policy, artifact.kind), artifact.meta))


def _meta_fields(policy: Policy, kind: str) -> tuple[tuple[str, float], ...]:
    """(name, declared default) of every numeric metadata field of ``kind`` (none for unknown kinds)."""
    spec = policy.kinds.get(kind)  # type: ignore[call-overload]
    return () if spec is None else tuple((name, mf.default) for name, mf in spec.meta.items())


def _meta_key(fields: tuple[tuple[str, float], ...], meta: Mapping[str, Any]) -> tuple[tuple[str, float], ...]:
    out = []
    for name, default in fields:
        v = meta.get(name)
        out.append((name, float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default))
    return tuple(out)


def assign(policy: Policy, scope: Scope, event: Event, operators: OperatorRegistry | None = None,
           ordering: tuple[list[str], frozenset[str]] | None = None) -> Assignment:
    """Algorithm 1 lines 3–5 over C(F) only: modes μ_i, candidates Q_ρ, P_i, executability v_i.

    ``ordering`` is a parents-first order of C(F) and its cyclic members; by default
    :func:`~memsteward.repair.scope.order_and_cycles` (the networkx reference passes its own).

    One pass in parents-first order: for each descendant i its inputs are classified once — in
    Ret(e) (:func:`~memsteward.repair.scope.is_retained`: outside C(F), or a correction's
    replacement), counted as support when also servable (or a replacement); affected (the forget
    set); in D(F), counted as support when already repairable, Σ_{j ∈ P_i ∩ D(F)} [μ_j ≠ remove]
    (a cycle's later members are not yet decided: not support). Partitions exist for a neural
    skill with a forget set (inputs in C(F) \\ X_Δ) and a reference set (retained inputs).
    Φ_μ is evaluated once per distinct cell (a cascade of 10^5 members has a few dozen).
    """
    operators = operators or operators_for(policy)
    order, cyclic = ordering if ordering is not None else order_and_cycles(scope)
    roots = frozenset(event.roots)
    affected = scope.cascade
    artifacts, parents_of = scope.artifacts, scope.parents
    state_of = scope.states.get  # a parent outside C(F) not held is servable (States)
    reps = event.replacement_ids
    correct = event.type == "correct"
    servable = SERVABLE_STATES
    sufficient = policy.support.sufficient
    fields: dict[str, tuple[tuple[str, float], ...]] = {}
    modes: dict[str, str] = {}
    cells: dict[str, Cell] = {}
    in_desc_of: dict[str, list[str]] = {}
    decided: dict[tuple, tuple[Cell, str]] = {}
    plus: set[str] = set()  # D⁺(F) so far: the members decided repairable (μ ≠ remove)
    for i in order:
        if i in roots:
            continue
        parents = parents_of[i]
        kept = forget = repairable = 0
        in_desc = in_desc_of[i] = []
        for p in parents:
            if p in affected:
                if correct and p in reps:
                    kept += 1
                else:
                    forget += 1
                if p not in roots:  # p ∈ D(F) (a small set's probe instead of a large one's)
                    in_desc.append(p)
                    if p in plus:
                        repairable += 1
            elif p in reps or state_of(p, SERVABLE) in servable:
                kept += 1
        art = artifacts[i]
        kind, arch = art.kind, art.arch
        declared = fields.get(kind)
        if declared is None:
            declared = fields[kind] = _meta_fields(policy, kind)
        key = (kind, arch, _meta_key(declared, art.meta) if declared else (),
               sufficient(kept + repairable, len(parents)),
               kind == "skill" and arch == "neural" and forget > 0 and kept > 0)
        hit = decided.get(key)
        if hit is None:
            cell = Cell(kind, arch, event.type, "sufficient" if key[3] else "insufficient", key[4], dict(key[2]))
            hit = decided[key] = (cell, decide(policy, cell) or "remove")
        cells[i] = hit[0]
        # an erased artifact (deleted by an earlier event) is never repaired: that would resurrect it
        mode = modes[i] = "remove" if art.state == "erased" else hit[1]
        if mode != "remove":
            plus.add(i)
    return Assignment(modes, _candidates(policy, scope, modes, plus, cyclic, in_desc_of, operators), cells)


def _candidates(policy: Policy, scope: Scope, modes: Mapping[str, str], plus: Collection[str],
                cyclic: frozenset[str], in_desc_of: Mapping[str, Sequence[str]],
                operators: OperatorRegistry) -> tuple[Candidate, ...]:
    """Q_ρ: q_i for every i ∈ D⁺(F) = {i ∈ D(F) : μ_i ≠ remove} (``plus``), in id order (read off
    the sorted members). The operator and the weight functions are looked up once per (mode, kind, arch)."""
    per_key: dict[tuple[str, str, str | None], tuple[Operator | None, str, Callable, Callable]] = {}
    artifacts = scope.artifacts
    value, cost = policy.selection.value, policy.selection.cost
    out = []
    for i in filter(plus.__contains__, scope.members):
        art = artifacts[i]
        mode, kind, arch, meta = modes[i], art.kind, art.arch, art.meta
        found = per_key.get((mode, kind, arch))
        if found is None:
            op = operators.find(mode, kind, arch)
            found = per_key[(mode, kind, arch)] = (op, "" if op is None else op.name,
                                                   value.resolver(kind, mode), cost.resolver(kind, mode))
        op = found[0]
        prereqs = () if mode == "param" else tuple(in_desc_of[i])
        if not plus.issuperset(prereqs):
            reason = "requires removed descendant " + next(p for p in prereqs if p not in plus)
        elif i in cyclic:
            reason = "on a cycle of influence (E^req) edges"
        elif op is None:
            reason = f"no operator registered for mode {mode}"
        else:
            reason = op.check(art) or ""
        out.append(_new_candidate(Candidate, (i, kind, arch, mode, found[1], prereqs, not reason, found[2](meta),
                                              found[3](meta), reason)))
    return tuple(out)


def requirement_edges(candidates: Collection[Candidate]) -> list[tuple[str, str]]:
    """E^req = {(j, i) : i ∈ D⁺(F), j ∈ P̄_i} with P̄_i = P_i ∩ D⁺(F) (§2.3)."""
    plus = {c.id for c in candidates}
    return [(j, c.id) for c in candidates for j in c.prerequisites if j in plus]
