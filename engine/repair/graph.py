"""Cascade scope over a whole-store influence graph (MemoRepair §2.1): the networkx reference.

Plain functions over a :class:`networkx.DiGraph` whose edges are E^inf only (semantic edges
never define repair scope), in the style of :func:`networkx.descendants`. The engine plans from
:mod:`memsteward.repair.scope` (indexed reads of C(F) only); these functions are the independent
reference the tests and the bench compare it with (:mod:`memsteward.repair.reference`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable

import networkx as nx

from .scope import is_retained, retained  # noqa: F401  (re-exported for the tests)


def influence_graph(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> nx.DiGraph:
    """G restricted to E^inf: every artifact is a node, (u, v) means v was produced using u."""
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    return g


def cascade(g: nx.DiGraph, roots: Collection[str]) -> frozenset[str]:
    """C(F) = Reach(F; E^inf), including the zero-hop roots (§2.1). One multi-source BFS."""
    seen = set(roots)
    queue = deque(roots)
    while queue:
        for child in g.successors(queue.popleft()):
            if child not in seen:
                seen.add(child)
                queue.append(child)
    return frozenset(seen)


def descendants(g: nx.DiGraph, roots: Collection[str]) -> frozenset[str]:
    """D(F) = C(F) \\ F (§2.1): the artifacts that get repair candidates."""
    return cascade(g, roots) - frozenset(roots)


def cyclic_nodes(g: nx.DiGraph, within: Collection[str]) -> frozenset[str]:
    """Members of a directed cycle of ``g`` restricted to ``within`` (incl. self-loops)."""
    sub = g.subgraph(within)
    out: set[str] = set()
    for comp in nx.strongly_connected_components(sub):
        if len(comp) > 1:
            out |= comp
        else:
            (node,) = comp
            if sub.has_edge(node, node):
                out.add(node)
    return frozenset(out)


def order_and_cycles(g: nx.DiGraph, within: Collection[str]) -> tuple[list[str], frozenset[str]]:
    """One SCC pass over ``g`` restricted to ``within``: a parents-first order (cycles collapsed,
    members by id; deterministic) and the members of directed cycles (incl. self-loops)."""
    sub = nx.DiGraph()
    sub.add_nodes_from(sorted(within))
    sub.add_edges_from((u, v) for u in sub for v in g.successors(u) if v in within)
    sccs = [sorted(c) for c in nx.strongly_connected_components(sub)]
    sccs.sort()
    cond = nx.condensation(sub, scc=[set(c) for c in sccs])
    order: list[str] = []
    for comp in nx.topological_sort(cond):
        order.extend(sorted(cond.nodes[comp]["members"]))
    cyclic = {n for c in sccs if len(c) > 1 for n in c}
    cyclic |= {n for n in sub if sub.has_edge(n, n)}
    return order, frozenset(cyclic)
