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
from typing import Any, Callable, Collection, Mapping

from ..policy.domain import Cell, decide
from ..policy.model import Policy
from .artifacts import SERVABLE_STATES, Artifact
from .events import Event
from .operators import Operator, OperatorRegistry, operators_for
from .scope import Scope, order_and_cycles


@dataclass(frozen=True)
class Candidate:
    """q_i for one non-removed descendant i ∈ D⁺(F)."""

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

    What does not depend on other members' modes is computed once per member (:func:`_static_support`:
    |inputs|, inputs retained outside C(F), whether partitions exist, the cell's static part); the pass
    in parents-first order then only counts the repairable affected inputs, Σ_{j ∈ P_i ∩ D(F)} [μ_j ≠
    remove]. Φ_μ is evaluated once per distinct cell (a cascade of 10^5 members has a few dozen),
    operators and the weight tables are looked up once per (mode, kind, arch).
    """
    operators = operators or operators_for(policy)
    order, cyclic = ordering if ordering is not None else order_and_cycles(scope)
    roots = frozenset(event.roots)
    desc = scope.cascade - roots
    static = _static_support(policy, scope, event, desc)
    sufficient = policy.support.sufficient
    modes: dict[str, str] = {}
    cells: dict[str, Cell] = {}
    decided: dict[tuple, tuple[Cell, str]] = {}
    repairable_modes = modes.get
    for i in order:
        if i in roots:
            continue
        inputs, kept, in_desc, partitions, head, erased = static[i]
        retained = kept
        for p in in_desc:
            if repairable_modes(p, "remove") != "remove":
                retained += 1
        key = (head, sufficient(retained, inputs), partitions)
        hit = decided.get(key)
        if hit is None:
            kind, arch, meta = head
            cell = Cell(kind, arch, event.type, "sufficient" if key[1] else "insufficient", partitions, dict(meta))
            hit = decided[key] = (cell, decide(policy, cell) or "remove")
        cells[i] = hit[0]
        # an erased artifact (deleted by an earlier event) is never repaired: that would resurrect it
        modes[i] = "remove" if erased else hit[1]
    return Assignment(modes, _candidates(policy, scope, modes, desc, cyclic, static, operators), cells)


def _static_support(policy: Policy, scope: Scope, event: Event, desc: frozenset[str],
                    ) -> dict[str, tuple[int, int, tuple[str, ...], bool, tuple, bool]]:
    """Per descendant i: (|inputs|, inputs retained outside C(F), P_i ∩ D(F) in id order, whether
    partitions exist, (kind, arch, numeric metadata) of its cell, erased).

    An input is in Ret(e) (:func:`~memsteward.repair.scope.is_retained`) when it lies outside C(F) or
    is a correction's replacement; it counts as retained support when it is also servable (or is a
    replacement). Partitions exist for a neural skill with a forget set (inputs in C(F) \\ X_Δ) and a
    reference set (retained inputs)."""
    affected = scope.cascade
    states = scope.states
    reps = event.replacement_ids
    correct = event.type == "correct"
    servable = SERVABLE_STATES
    fields: dict[str, tuple[tuple[str, float], ...]] = {}
    out = {}
    artifacts = scope.artifacts
    for i, parents in scope.parents.items():
        if i not in desc:
            continue
        art = artifacts[i]
        kept = forget = 0
        in_desc = []
        for p in parents:
            if p in affected:
                if correct and p in reps:
                    kept += 1
                else:
                    forget += 1
                if p in desc:
                    in_desc.append(p)
            elif p in reps or states[p] in servable:
                kept += 1
        kind = art.kind
        if kind not in fields:
            fields[kind] = _meta_fields(policy, kind)
        head = (kind, art.arch, _meta_key(fields[kind], art.meta))
        partitions = kind == "skill" and art.arch == "neural" and forget > 0 and kept > 0
        out[i] = (len(parents), kept, tuple(in_desc), partitions, head, art.state == "erased")
    return out


def _candidates(policy: Policy, scope: Scope, modes: Mapping[str, str], desc: frozenset[str],
                cyclic: frozenset[str], static: Mapping[str, tuple], operators: OperatorRegistry,
                ) -> tuple[Candidate, ...]:
    """Q_ρ: q_i for every i ∈ D⁺(F) = {i ∈ D(F) : μ_i ≠ remove}, in id order."""
    plus = frozenset(i for i, m in modes.items() if m != "remove")
    found: dict[tuple[str, str, str | None], Operator | None] = {}
    weights: dict[tuple[str, str], tuple[Callable, Callable]] = {}
    out = []
    for i in sorted(plus):
        art = scope.artifacts[i]
        mode, kind, meta = modes[i], art.kind, art.meta
        key3 = (mode, kind, art.arch)
        op = found[key3] if key3 in found else found.setdefault(key3, operators.find(*key3))
        w = weights.get(key3[:2])
        if w is None:
            w = weights[key3[:2]] = (policy.selection.value.resolver(kind, mode),
                                     policy.selection.cost.resolver(kind, mode))
        prereqs = () if mode == "param" else static[i][2]
        reason = ""
        for p in prereqs:
            if p not in plus:
                reason = f"requires removed descendant {p}"
                break
        else:
            if i in cyclic:
                reason = "on a cycle of influence (E^req) edges"
            elif op is None:
                reason = f"no operator registered for mode {mode}"
            else:
                reason = op.check(art) or ""
        out.append(Candidate(i, kind, art.arch, mode, op.name if op is not None else "", prereqs, not reason,
                             w[0](meta), w[1](meta), reason))
    return tuple(out)


def requirement_edges(candidates: Collection[Candidate]) -> list[tuple[str, str]]:
    """E^req = {(j, i) : i ∈ D⁺(F), j ∈ P̄_i} with P̄_i = P_i ∩ D⁺(F) (§2.3)."""
    plus = {c.id for c in candidates}
    return [(j, c.id) for c in candidates for j in c.prerequisites if j in plus]
