"""C(F), D(F) and Ret(e) exactly as MemoRepair §2.1, on random graphs, against networkx."""

from __future__ import annotations

import networkx as nx
from hypothesis import given
from hypothesis import strategies as st

from memsteward.repair.graph import cascade, cyclic_nodes, descendants, influence_graph, order_and_cycles, retained

NODES = [f"n{k}" for k in range(12)]


@st.composite
def graphs(draw):
    edges = draw(st.lists(st.tuples(st.sampled_from(NODES), st.sampled_from(NODES)), max_size=30))
    roots = draw(st.sets(st.sampled_from(NODES), min_size=1, max_size=3))
    return influence_graph(NODES, edges), roots


@given(graphs())
def test_cascade_is_reach_including_roots(gr):
    g, roots = gr
    expected = set(roots).union(*(nx.descendants(g, r) for r in roots))
    assert cascade(g, roots) == expected
    assert descendants(g, roots) == expected - set(roots)


@given(graphs(), st.sampled_from(["delete", "correct", "migrate"]), st.sets(st.sampled_from(NODES)))
def test_retained_per_event_type(gr, etype, reps):
    g, roots = gr
    c = cascade(g, roots)
    ret = retained(NODES, c, etype, reps)
    base = set(NODES) - c
    assert ret == (base | reps if etype == "correct" else base)


@given(graphs())
def test_order_is_parents_first_and_cycles_are_sccs(gr):
    g, roots = gr
    within = cascade(g, roots)
    order, cyc = order_and_cycles(g, within)
    assert sorted(order) == sorted(within)
    pos = {n: k for k, n in enumerate(order)}
    for u, v in g.subgraph(within).edges:
        if not (u in cyc and v in cyc and nx.has_path(g.subgraph(within), v, u)):
            assert pos[u] < pos[v]
    assert cyc == cyclic_nodes(g, within)
