"""The networkx reference of planning: a whole-store influence DiGraph (MemoRepair §2.1–2.4).

Not used by the engine. It is how planning worked before C(F) was read from the store's edge
index: every event built a :class:`networkx.DiGraph` over every artifact, took C(F) with
``networkx.descendants``, SCCs with ``networkx.condensation`` and the execution order with
``networkx.topological_generations``. The tests check that
:func:`~memsteward.repair.plan.compute_plan` returns the same plan, and the bench runs it beside the
indexed path as the reference line. Modes and candidates are computed member by member as §2.3
states them (:func:`reference_assign`, the engine's former code) rather than by the engine's
two-pass :func:`~memsteward.repair.candidates.assign`; the min cut is shared.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx

from ..policy.domain import Cell, decide
from ..policy.model import Policy
from .artifacts import SERVABLE_STATES, Artifact, Snapshot
from .candidates import Assignment, Candidate, _meta_fields, _meta_key
from .events import Event
from .graph import influence_graph, order_and_cycles
from .operators import Operator, OperatorRegistry, operators_for
from .plan import TransitionPlan, plan_from_scope
from .scope import Scope, States


def networkx_scope(snapshot: Snapshot, roots: Sequence[str]) -> tuple[Scope, nx.DiGraph]:
    """C(F) = F ∪ ⋃ descendants(r), parents by ``predecessors``, over the whole-store graph."""
    g = influence_graph(snapshot.artifacts.keys(), snapshot.influence_edges())
    affected = frozenset(roots).union(*(nx.descendants(g, r) for r in roots))
    edges = sorted(((p, i) for i in affected for p in g.predecessors(i)), key=lambda e: (e[1], e[0]))
    needed = set(affected).union(p for p, _ in edges)
    return Scope(tuple(roots), affected, edges, {i: snapshot.artifacts[i] for i in affected},
                 States({i: snapshot.artifacts[i].state for i in needed})), g


def networkx_execution_order(candidates: tuple[Candidate, ...], selected: frozenset[str],
                             requirements: object = None) -> tuple[str, ...]:
    """Topological order of E^req[S_ρ], generation by generation, each in id order, by networkx (E^req
    rebuilt from the candidates' prerequisites, whatever the engine computed: ``requirements`` is
    ignored)."""
    g = nx.DiGraph()
    g.add_nodes_from(selected)
    g.add_edges_from((j, c.id) for c in candidates if c.id in selected for j in c.prerequisites if j in selected)
    return tuple(v for generation in nx.topological_generations(g) for v in sorted(generation))


def reference_plan(policy: Policy, snapshot: Snapshot, event: Event, selector: str = "mincut",
                   backend: str = "networkx", operators: OperatorRegistry | None = None) -> TransitionPlan:
    """The plan the whole-store networkx path computes (compare with ``compute_plan``)."""
    scope, g = networkx_scope(snapshot, event.roots)
    return plan_from_scope(policy, scope, event, selector, backend, operators,
                           order_and_cycles(g, scope.cascade), networkx_execution_order, reference_assign)


def reference_assign(policy: Policy, scope: Scope, event: Event, operators: OperatorRegistry | None = None,
                     ordering: tuple[list[str], frozenset[str]] | None = None) -> Assignment:
    """Algorithm 1 lines 3–5, written member by member as §2.3 states them (the reference for
    :func:`~memsteward.repair.candidates.assign`): for each i ∈ D(F) in parents-first order, classify
    every input (in Ret(e) and servable, affected, repairable), build the cell, apply Φ_μ; then
    q_i for every i ∈ D⁺(F)."""
    operators = operators or operators_for(policy)
    affected = scope.cascade
    artifacts = scope.artifacts
    states = scope.states
    all_parents = scope.parents
    roots = frozenset(event.roots)
    desc = affected - roots
    reps = event.replacement_ids
    correct = event.type == "correct"
    sufficient = policy.support.sufficient
    assert ordering is not None
    order, cyclic = ordering
    fields: dict[str, tuple[tuple[str, float], ...]] = {}
    decided: dict[tuple, tuple[Cell, str]] = {}
    modes: dict[str, str] = {}
    cells: dict[str, Cell] = {}
    for i in order:
        if i in roots:
            continue
        art = artifacts[i]
        parents = all_parents[i]
        kept = repairable = forget = 0
        for p in parents:
            # Ret(e) membership (is_retained): outside C(F), or a correction's replacement
            if (correct and p in reps) or p not in affected:
                if p in reps or states[p] in SERVABLE_STATES:
                    kept += 1
            else:
                forget += 1
            if p in desc and modes.get(p, "remove") != "remove":
                repairable += 1
        kind = art.kind
        if kind not in fields:
            fields[kind] = _meta_fields(policy, kind)
        support = "sufficient" if sufficient(kept + repairable, len(parents)) else "insufficient"
        partitions = art.arch == "neural" and policy.role(kind) == "skill" and forget > 0 and kept > 0
        key = (kind, art.arch, support, partitions, _meta_key(fields[kind], art.meta))
        hit = decided.get(key)
        if hit is None:
            cell = Cell(kind, art.arch, event.type, support, partitions, dict(key[4]))
            hit = decided[key] = (cell, decide(policy, cell) or "remove")
        cells[i] = hit[0]
        # an erased artifact (deleted by an earlier event) is never repaired: that would resurrect it
        modes[i] = "remove" if art.state == "erased" else hit[1]
    plus = frozenset(i for i, m in modes.items() if m != "remove")
    found: dict[tuple[str, str, str | None], Operator | None] = {}
    candidates = []
    for i in sorted(plus):
        art = artifacts[i]
        key3 = (modes[i], art.kind, art.arch)
        if key3 not in found:
            found[key3] = operators.find(*key3)
        candidates.append(_reference_candidate(policy, art, modes[i], all_parents[i], desc, plus, cyclic,
                                               found[key3]))
    return Assignment(modes, tuple(candidates), cells)


def _reference_candidate(policy: Policy, art: Artifact, mode: str, parents: tuple[str, ...],
                         desc: frozenset[str], plus: frozenset[str], cyclic: frozenset[str], op: Operator | None) -> Candidate:
    prereqs = () if mode == "param" else tuple(sorted(p for p in parents if p in desc))
    reason = ""
    missing = [p for p in prereqs if p not in plus]
    if missing:
        reason = f"requires removed descendant {missing[0]}"
    elif art.id in cyclic:
        reason = "on a cycle of influence (E^req) edges"
    elif op is None:
        reason = f"no operator registered for mode {mode}"
    else:
        reason = op.check(art) or ""
    meta = art.meta
    return Candidate(
        id=art.id, kind=art.kind, arch=art.arch, mode=mode,
        operator=op.name if op is not None else "",
        prerequisites=prereqs, executable=not reason,
        value=policy.value_of(art.kind, mode, meta),  # type: ignore[arg-type]  # read only
        cost=policy.cost_of(art.kind, mode, meta),  # type: ignore[arg-type]
        reason=reason,
    )


