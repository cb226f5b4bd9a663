"""The networkx reference of planning: a whole-store influence DiGraph (MemoRepair §2.1–2.4).

Not used by the engine. It is how planning worked before C(F) was read from the store's edge
index: every event built a :class:`networkx.DiGraph` over every artifact, took C(F) with
``networkx.descendants``, SCCs with ``networkx.condensation`` and the execution order with
``networkx.lexicographical_topological_sort``. The tests check that
:func:`~memsteward.repair.plan.compute_plan` returns the same plan, and the bench runs it beside the
indexed path as the reference line. Mode rules, candidates and the min cut are shared: only the
graph work differs.
"""

from __future__ import annotations

from typing import Sequence

import networkx as nx

from ..policy.model import Policy
from .artifacts import Snapshot
from .candidates import Candidate
from .events import Event
from .graph import influence_graph, order_and_cycles
from .operators import OperatorRegistry
from .plan import TransitionPlan, plan_from_scope
from .scope import Scope


def networkx_scope(snapshot: Snapshot, roots: Sequence[str]) -> tuple[Scope, nx.DiGraph]:
    """C(F) = F ∪ ⋃ descendants(r), parents by ``predecessors``, over the whole-store graph."""
    g = influence_graph(snapshot.artifacts.keys(), snapshot.influence_edges())
    affected = frozenset(roots).union(*(nx.descendants(g, r) for r in roots))
    parents = {i: tuple(sorted(g.predecessors(i))) for i in affected}
    needed = set(affected).union(*parents.values())
    return Scope(tuple(roots), affected, parents, {i: snapshot.artifacts[i] for i in affected},
                 {i: snapshot.artifacts[i].state for i in needed}), g


def networkx_execution_order(candidates: tuple[Candidate, ...], selected: frozenset[str]) -> tuple[str, ...]:
    """Topological order of E^req[S_ρ], ties by id, by networkx."""
    g = nx.DiGraph()
    g.add_nodes_from(selected)
    g.add_edges_from((j, c.id) for c in candidates if c.id in selected for j in c.prerequisites if j in selected)
    return tuple(nx.lexicographical_topological_sort(g))


def reference_plan(policy: Policy, snapshot: Snapshot, event: Event, selector: str = "mincut",
                   backend: str = "networkx", operators: OperatorRegistry | None = None) -> TransitionPlan:
    """The plan the whole-store networkx path computes (compare with ``compute_plan``)."""
    scope, g = networkx_scope(snapshot, event.roots)
    return plan_from_scope(policy, scope, event, selector, backend, operators,
                           order_and_cycles(g, scope.cascade), networkx_execution_order)
