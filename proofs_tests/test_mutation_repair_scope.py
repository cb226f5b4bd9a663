"""Systematic tests of ``memsteward.repair.scope`` against independent references (issue 33).

Each function is checked on its own: the grouping of parents (every edge order, runs split apart),
what ``read_scope`` reads (content only where asked, the states of unservable parents outside
C(F)), the untracked growth, Ret(e) in both forms, the neighbourhood, Tarjan's components on
shapes that exercise each low-link rule, the peel's narrow-level rule at both sides of its bounds,
the child index, the generations and the de-duplication — with the expected values from
networkx, brute force or a hand computation.
"""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsteward.repair import scope as scopes
from memsteward.repair.artifacts import SERVABLE, Artifact, Edge, Snapshot
from memsteward.repair.scope import (
    ChildIndex,
    Scope,
    States,
    generation_order,
    is_retained,
    neighbourhood,
    order_and_cycles,
    order_rest,
    peel_level_arrays,
    read_scope,
    retained,
    strong_components,
    with_untracked,
)
from memsteward.store import Store


def art(i: str, kind: str = "summary", state: str = "servable", text: str | None = None) -> Artifact:
    return Artifact(i, kind, None, 1, {"text": text or f"{i} text."}, {}, state)


def snapshot(arts: list[Artifact], edges: list[tuple[str, str]], semantic: list[tuple[str, str]] = ()) -> Snapshot:
    return Snapshot({a.id: a for a in arts}, tuple(Edge(u, v) for u, v in edges)
                    + tuple(Edge(u, v, "semantic") for u, v in semantic))


# --------------------------------------------------------------------------- States, Scope


def test_states_read_servable_for_every_id_they_do_not_hold():
    s = States({"w": "withdrawn", "e": "erased"})
    assert s["w"] == "withdrawn" and s["e"] == "erased"
    assert s["anything"] == SERVABLE and s[""] == SERVABLE
    assert s.get("anything", SERVABLE) == SERVABLE and s.get("w") == "withdrawn"
    assert "anything" not in s  # reading a missing id does not store it


@given(st.integers(1, 7).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, 9), st.integers(0, n - 1)), max_size=14, unique=True),
    st.sampled_from(["ordered", "reversed", "shuffled"]), st.randoms(use_true_random=False))))
def test_scope_parents_group_the_edges_by_child_in_any_given_order(case):
    n, pairs, how, rnd = case
    members = [f"m{k}" for k in range(n)]
    edges = sorted({(f"m{u}" if u < n else f"p{u}", members[v]) for u, v in pairs}, key=lambda e: (e[1], e[0]))
    if how == "reversed":
        edges = edges[::-1]
    elif how == "shuffled":
        rnd.shuffle(edges)
    heads = [v for _, v in edges]
    if heads == sorted(heads):  # grouped by child: then Scope.edges' contract is parents ascending too
        edges.sort(key=lambda e: (e[1], e[0]))
    sc = Scope(("m0",), frozenset(members[::-1]), edges, {}, States())
    assert sc.members == members
    want = {m: tuple(sorted(u for u, v in edges if v == m)) for m in members}
    assert dict(sc.parents) == want


def test_scope_parents_of_a_child_whose_edges_are_split_into_runs():
    # a, b, a: the child "a" appears in two runs, only one inversion apart
    for edges in ([("x", "a"), ("y", "b"), ("z", "a")], [("y", "b"), ("x", "a"), ("z", "b")],
                  [("x", "b"), ("y", "a")], [("x", "c"), ("y", "a"), ("z", "b")]):
        sc = Scope((), frozenset("abc"), edges, {}, States())
        assert dict(sc.parents) == {m: tuple(sorted(u for u, v in edges if v == m)) for m in "abc"}


# --------------------------------------------------------------------------- read_scope


def _store_case():
    arts = [art("r", "record"), art("s1"), art("s2", "skill"), art("s3"), art("p_out", "record"),
            art("p_wd", "record", "withdrawn"), art("p_er", "record", "erased"), art("p_rep", "record", "republished"),
            art("far", "record")]
    edges = [("r", "s1"), ("s1", "s2"), ("p_out", "s2"), ("p_wd", "s1"), ("p_er", "s3"), ("s2", "s3"),
             ("p_rep", "s3"), ("far", "p_out")]
    return snapshot(arts, edges, semantic=[("r", "far")])


def test_read_scope_reads_the_cascade_its_parents_and_the_unservable_ones_outside():
    snap = _store_case()
    store = Store()
    try:
        store.import_snapshot(snap)
        for source in (snap, store):
            sc = read_scope(source, ["r"])
            assert sc.roots == ("r",)
            assert sc.cascade == frozenset({"r", "s1", "s2", "s3"})
            assert sc.members == ["r", "s1", "s2", "s3"]
            assert list(sc.edges) == [("p_wd", "s1"), ("r", "s1"), ("p_out", "s2"), ("s1", "s2"),
                                      ("p_er", "s3"), ("p_rep", "s3"), ("s2", "s3")]
            assert dict(sc.states) == {"p_wd": "withdrawn", "p_er": "erased"}
            assert sc.states["p_out"] == SERVABLE and sc.states["p_rep"] == SERVABLE
            assert set(sc.artifacts) == {"r", "s1", "s2", "s3"}
            assert dict(sc.untracked) == {}
    finally:
        store.close()


def test_read_scope_reads_content_only_for_the_roots_and_the_kinds_asked_for():
    snap = _store_case()
    store = Store()
    try:
        store.import_snapshot(snap)
        asked: list[tuple[str, str | None]] = []

        def skills_only(kind: str, arch: str | None) -> bool:
            asked.append((kind, arch))
            return kind == "skill"

        sc = read_scope(store, ["r"], skills_only)
        have = {i for i, a in sc.artifacts.items() if a.content is not None}
        assert have == {"r", "s2"}  # the root, and the one member whose kind needs content
        assert sorted(asked) == [("record", None), ("skill", None), ("summary", None), ("summary", None)]
        full = read_scope(store, ["r"])
        assert all(a.content is not None for a in full.artifacts.values())
        assert all(a.version == 1 for a in sc.artifacts.values())
        nothing = read_scope(store, ["r"], lambda kind, arch: False)
        assert {i for i, a in nothing.artifacts.items() if a.content is not None} == {"r"}
    finally:
        store.close()


def test_with_untracked_joins_copies_of_a_root_and_what_derives_from_them():
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    arts = [art("r", "record", text=text), art("s1"), art("copy", "summary", text=text),
            art("kid"), art("other", "record", "withdrawn"), art("unrelated", "summary", text="nothing shared here at all")]
    snap = snapshot(arts, [("r", "s1"), ("copy", "kid"), ("other", "kid")])
    base = read_scope(snap, ["r"])
    grown = with_untracked(snap, base, {"r": snap.artifacts["r"].content}, 3, 2)
    assert grown.cascade == frozenset({"r", "s1", "copy", "kid"})
    assert set(grown.untracked) == {"copy"} and grown.untracked["copy"]["root"] == "r"
    assert grown.untracked["copy"]["shared"] >= 2
    assert list(grown.edges) == sorted({("r", "s1"), ("copy", "kid"), ("other", "kid"), ("r", "copy")},
                                       key=lambda e: (e[1], e[0]))
    assert dict(grown.states) == {"other": "withdrawn"}
    assert set(grown.artifacts) == {"r", "s1", "copy", "kid"}
    assert grown.roots == ("r",)
    # a threshold above what the copy shares: nothing joins, the scope is returned as it was
    assert with_untracked(snap, base, {"r": snap.artifacts["r"].content}, 3, 10_000) is base


def test_with_untracked_keeps_the_scopes_own_state_over_the_extras():
    text = "one two three four five six seven eight"
    arts = [art("r", "record", text=text), art("s1"), art("copy", "summary", text=text), art("p", "record", "withdrawn")]
    snap = snapshot(arts, [("r", "s1"), ("p", "s1"), ("p", "copy")])
    base = read_scope(snap, ["r"])
    base = Scope(base.roots, base.cascade, base.edges, base.artifacts, States({"p": "erased"}))
    grown = with_untracked(snap, base, {"r": text and snap.artifacts["r"].content}, 3, 1)
    assert "copy" in grown.cascade
    assert grown.states["p"] == "erased"  # the scope's own reading wins over the extra read's "withdrawn"


# --------------------------------------------------------------------------- Ret(e)


@pytest.mark.parametrize("etype", ["delete", "correct", "migrate"])
def test_retained_and_is_retained_agree_with_the_definition(etype):
    nodes = {"a", "b", "c", "x", "y"}
    affected = {"a", "b", "x"}
    reps = {"x", "new"}
    want = (nodes - affected) | (reps if etype == "correct" else set())
    assert retained(nodes, affected, etype, reps) == frozenset(want)
    assert retained(nodes, affected, etype) == frozenset(nodes - affected)
    for node in sorted(nodes | reps):
        assert is_retained(node, affected, etype, reps) == (node not in affected or (etype == "correct" and node in reps))
        assert is_retained(node, affected, etype) == (node not in affected)


@pytest.mark.parametrize("etype", ["delete", "correct", "migrate"])
def test_ret_e_of_an_event_read_from_json_text(etype):
    """Ret(e) with the event type as it arrives: parsed from an event file's JSON text (a fresh
    string, not the interned literal), for each event type, with the correction's replacement."""
    import json

    from memsteward.repair.events import parse_event

    snap = snapshot([art("r", "record"), art("c"), art("o")], [("r", "c")])
    doc_text = json.dumps({"type": etype, "roots": ["r"]} | (
        {"replacements": [{"id": "r", "kind": "record", "content": {"text": "new."}}]} if etype == "correct" else {})
        | ({"interface": {}} if etype == "migrate" else {}))
    event = parse_event(json.loads(doc_text), snap, "event.json", doc_text)
    assert event.type == etype
    affected = snap.reach(event.roots)
    assert affected == {"r", "c"}
    want = {"o", "r"} if etype == "correct" else {"o"}  # the correction's replacement X_Δ is retained
    assert retained(snap.artifacts, affected, event.type, event.replacement_ids) == frozenset(want)
    assert {n for n in snap.artifacts if is_retained(n, affected, event.type, event.replacement_ids)} == want


def test_neighbourhood_is_the_cascade_its_parents_and_the_edges_into_it():
    snap = _store_case()
    got = neighbourhood(snap, {"s1", "s2"})
    assert set(got.artifacts) == {"s1", "s2", "r", "p_wd", "p_out"}
    assert got.edges == (Edge("p_wd", "s1"), Edge("r", "s1"), Edge("p_out", "s2"), Edge("s1", "s2"))
    assert neighbourhood(snap, set()).edges == ()


# --------------------------------------------------------------------------- Tarjan and the orders


def _succ(n: int, edges: list[tuple[int, int]]) -> list[list[int]]:
    succ: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        succ[u].append(v)
    return succ


@pytest.mark.parametrize("n,edges", [
    (3, [(0, 1), (1, 2), (2, 0)]),  # one cycle found through the tree
    (4, [(0, 1), (1, 0), (1, 2), (2, 3), (3, 2)]),  # two cycles, the second reached from the first
    (4, [(2, 3), (3, 2), (0, 1), (1, 3)]),  # a cross edge into a finished component must not merge
    (5, [(0, 1), (1, 2), (2, 1), (0, 3), (3, 2), (3, 4), (4, 3)]),  # the stack holds an earlier open node
    (6, [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 5), (5, 3), (4, 0)]),  # a back edge to the first node
    (3, [(0, 0), (1, 1), (1, 2)]),  # self-loops
    (4, []),  # no edges
])
def test_strong_components_on_shapes_for_each_low_link_rule(n, edges):
    comps = strong_components(_succ(n, edges))
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    assert sorted(map(sorted, comps)) == sorted(map(sorted, nx.strongly_connected_components(g)))
    where = {v: k for k, comp in enumerate(comps) for v in comp}
    assert all(where[u] >= where[v] for u, v in edges)  # sinks first


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n),
    st.sets(st.integers(0, n - 1)))))
def test_order_rest_orders_what_the_peel_left_parents_first(case):
    n, edges, peeled_any = case
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    # a valid peel: a prefix of some generation order of the acyclic part, closed under parents
    before = {v for v in peeled_any if not any(nx.has_path(g, c, v) for c in g if g.has_edge(c, c))}
    peeled = sorted(v for v in before if nx.ancestors(g, v) <= before and not any(
        len(s) > 1 and (v in s or nx.ancestors(g, v) & s) for s in nx.strongly_connected_components(g)))
    order, cyclic = order_rest(n, peeled, [u for u, _ in edges], [v for _, v in edges])
    rest = set(range(n)) - set(peeled)
    assert sorted(order) == sorted(rest)
    sub = g.subgraph(rest)
    comp = {v: k for k, c in enumerate(nx.strongly_connected_components(sub)) for v in c}
    at = {v: k for k, v in enumerate(order)}
    assert all(at[u] < at[v] for u, v in sub.edges if comp[u] != comp[v])
    for k in set(comp.values()):
        mem = [v for v in order if comp[v] == k]
        assert mem == sorted(mem) and at[mem[-1]] - at[mem[0]] == len(mem) - 1
    assert sorted(cyclic) == sorted(v for v in rest if sub.has_edge(v, v) or sum(comp[u] == comp[v] for u in sub) > 1)
    if len(peeled) == n:
        assert (order, cyclic) == ([], [])


def test_order_and_cycles_by_hand():
    edges = [("a", "b"), ("b", "c"), ("c", "b"), ("c", "d"), ("d", "d"), ("x", "a"), ("e", "e")]
    sc = Scope(("a",), frozenset("abcde"), sorted(edges, key=lambda e: (e[1], e[0])), {}, States())
    order, cyclic = order_and_cycles(sc)
    assert order.index("a") < order.index("b") < order.index("c") < order.index("d")
    assert order.index("b") + 1 == order.index("c")
    assert sorted(order) == list("abcde")
    assert cyclic == frozenset("bcde")


# --------------------------------------------------------------------------- the array peel


def _layers(width: int, depth: int) -> tuple[int, list[int], list[int]]:
    """depth layers of ``width`` nodes, every node of a layer the child of every node of the last."""
    src, dst = [], []
    for d in range(1, depth):
        for a in range(width):
            for b in range(width):
                src.append((d - 1) * width + a)
                dst.append(d * width + b)
    return width * depth, src, dst


def test_peel_stops_after_the_allowed_number_of_narrow_levels_and_not_before():
    limit, narrow = scopes.PEEL_NARROW_LEVELS, scopes.PEEL_NARROW
    n, src, dst = _layers(narrow - 1, limit + 5)  # every level narrow: stops after `limit` of them
    levels = peel_level_arrays(n, src, dst)
    assert len(levels) == limit
    assert [lv.tolist() for lv in levels[:2]] == [list(range(narrow - 1)), list(range(narrow - 1, 2 * (narrow - 1)))]
    n, src, dst = _layers(narrow - 1, limit)  # exactly `limit` narrow levels: all peeled
    assert len(peel_level_arrays(n, src, dst)) == limit
    n, src, dst = _layers(narrow, limit + 5)  # levels `narrow` wide are not narrow: all peeled
    assert len(peel_level_arrays(n, src, dst)) == limit + 5


def test_peel_levels_stop_at_a_cycle_and_read_duplicate_edges_as_counts():
    # 0 → 1 twice, 1 → 2, 2 → 3 → 2 (cycle), 0 → 4
    levels = peel_level_arrays(5, [0, 0, 1, 2, 3, 0], [1, 1, 2, 3, 2, 4])
    assert [lv.tolist() for lv in levels] == [[0], [1, 4]]
    assert peel_level_arrays(0, [], []) == []
    assert [lv.tolist() for lv in peel_level_arrays(3, [], [])] == [[0, 1, 2]]


@given(st.integers(1, 15).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n),
    st.lists(st.integers(0, n - 1), max_size=2 * n))))
def test_child_index_gathers_the_children_of_many_nodes(case):
    n, edges, nodes = case
    idx = ChildIndex(n, [u for u, _ in edges], [v for _, v in edges])
    got = idx.of(np.asarray(nodes, dtype=np.int64)).tolist()
    want = [v for u in nodes for v in [d for s, d in edges if s == u]]  # by node, each node's edges in given order
    assert got == want
    assert idx.start.tolist() == [sum(1 for s, _ in edges if s < k) for k in range(n + 1)]


# --------------------------------------------------------------------------- generations


@settings(max_examples=80)
@given(st.integers(0, 12).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0))), max_size=3 * n),
    st.sets(st.integers(0, max(n - 1, 0))))))
def test_kahn_levels_of_what_is_not_done(case):
    n, edges, done = case
    if n == 0:
        assert scopes._kahn_levels(0, set(), [], []) == []
        return
    done = {d for d in done if d < n}
    dag = [(min(u, v), max(u, v)) for u, v in edges if u != v]
    got = scopes._kahn_levels(n, done, [u for u, _ in dag], [v for _, v in dag])
    g = nx.DiGraph()
    g.add_nodes_from(set(range(n)) - done)
    g.add_edges_from((u, v) for u, v in dag if u not in done and v not in done)
    assert got == [v for gen in nx.topological_generations(g) for v in sorted(gen)]
    cyc = dag + [(v, u) for u, v in dag[:1]]  # one back edge: its cycle and what follows are left out
    got = scopes._kahn_levels(n, done, [u for u, _ in cyc], [v for _, v in cyc])
    g.add_edges_from((u, v) for u, v in cyc if u not in done and v not in done)
    blocked = {v for c in nx.strongly_connected_components(g) if len(c) > 1 for v in c}
    blocked |= set().union(*(nx.descendants(g, v) for v in blocked)) if blocked else set()
    keep = g.subgraph(set(g) - blocked)
    assert got == [v for gen in nx.topological_generations(keep) for v in sorted(gen)]


def test_generation_order_by_hand_and_a_self_loop_is_a_cycle():
    assert generation_order(["b", "a", "c", "a"], [("a", "c"), ("b", "c")]) == ("a", "b", "c")
    assert generation_order({"z", "y"}, []) == ("y", "z")
    assert generation_order([], []) == ()
    assert generation_order(["a", "b", "c", "d"], [("a", "b"), ("b", "c"), ("a", "d")]) == ("a", "b", "d", "c")
    with pytest.raises(ValueError, match="cycle"):
        generation_order(["a", "b"], [("a", "a")])
    with pytest.raises(ValueError, match="cycle"):
        generation_order(["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "b")])


def _wide_dag(n: int) -> tuple[list[str], list[tuple[str, str]]]:
    """n ids in 4 wide generations (k → k + n//4 and k → k + n//4 + 1 within range), a 2-cycle-free DAG."""
    ids = [f"m{k:05d}" for k in range(n)]
    step = n // 4
    edges = [(ids[k], ids[j]) for k in range(n) for j in (k + step, k + step + 1) if j < n]
    return ids, edges


@pytest.mark.parametrize("n,peels", [(scopes.PEEL_MIN_MEMBERS - 1, False), (scopes.PEEL_MIN_MEMBERS, True),
                                     (scopes.PEEL_MIN_MEMBERS + 1, True)])
def test_the_array_peel_runs_from_peel_min_members(n, peels):
    """order_and_cycles and generation_order peel in arrays from PEEL_MIN_MEMBERS nodes on (a spy on
    peel_levels), Tarjan / Kahn alone below; the result is networkx's either way."""
    from unittest import mock

    ids, edges = _wide_dag(n)
    g = nx.DiGraph()
    g.add_nodes_from(ids)
    g.add_edges_from(edges)
    generations = tuple(v for gen in nx.topological_generations(g) for v in sorted(gen))
    sc = Scope((ids[0],), frozenset(ids), sorted(edges, key=lambda e: (e[1], e[0])), {}, States())
    with mock.patch.object(scopes, "peel_levels", wraps=scopes.peel_levels) as spy:
        order, cyclic = order_and_cycles(sc)
    assert spy.called is peels
    pos = {v: k for k, v in enumerate(order)}
    assert sorted(order) == ids and cyclic == frozenset() and all(pos[u] < pos[v] for u, v in edges)
    with mock.patch.object(scopes, "peel_levels", wraps=scopes.peel_levels) as spy:
        assert generation_order(ids, edges) == generations
    assert spy.called is peels


@given(st.lists(st.text(alphabet="abc", max_size=3), max_size=12))
def test_unique_sorted_is_sorted_set(nodes):
    assert scopes._unique_sorted(list(nodes)) == sorted(set(nodes))
    assert scopes._unique_sorted(sorted(nodes)) == sorted(set(nodes))


def test_generation_order_of_a_long_chain_through_the_peel_and_the_kahn_tail():
    n = scopes.PEEL_MIN_MEMBERS + 300  # peeled in arrays until the chain's narrow levels run out
    ids = [f"n{k:05d}" for k in range(n)]
    edges = [(ids[k], ids[k + 1]) for k in range(n - 1)]
    wide = [f"w{k:05d}" for k in range(8)]  # a wide first level
    rnd = random.Random(3)
    order = generation_order(ids + wide, rnd.sample(edges, len(edges)))
    assert order == tuple(sorted([ids[0]] + wide)) + tuple(ids[1:])
