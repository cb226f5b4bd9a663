"""Planning from indexed reads of C(F) equals the whole-store networkx reference (MemoRepair §2.1–2.4).

The engine reads C(F), its members' influence parents and those artifacts from a provenance source
(the SQLite store's edge index, or a snapshot's cached index) and orders with array code; the
reference (``memsteward.repair.reference``) builds a networkx DiGraph over the whole store and assigns
modes member by member (``reference_assign``, independent of the engine's two-pass ``assign``). On random
stores with cycles, self-loops and semantic edges, for every event type and selector, both give the
same TransitionPlan, from a snapshot and from a SQLite store.
"""

from __future__ import annotations

import contextlib
from functools import cache

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsteward.policy.loader import load_policy
from memsteward.repair.artifacts import SERVABLE_STATES, parse_store_document
from memsteward.repair.events import parse_event
from memsteward.repair.plan import compute_plan
from memsteward.repair.reference import reference_plan
from memsteward.repair.scope import generation_order, read_scope, strong_components
from memsteward.store import Store

SHAPES = [("record", None), ("summary", None), ("cache", None), ("skill", "prompt"), ("skill", "neural"),
          ("skill", "chain")]


@cache
def _policy(name: str):
    return load_policy(f"policies/{name}")


@st.composite
def stores(draw):
    """Up to 14 artifacts of every kind, arbitrary influence edges (cycles and self-loops allowed),
    semantic edges, some artifacts already withdrawn or erased."""
    from memsteward.repair import neural

    n = draw(st.integers(1, 14))
    arts = []
    for k in range(n):
        kind, arch = draw(st.sampled_from(SHAPES))
        art = {"id": f"a{k:02d}", "kind": kind, "content": {"text": "some text.", "label": "a"}, "meta": {},
               "state": draw(st.sampled_from(["servable"] * 6 + ["withdrawn", "republished", "erased"]))}
        if arch:
            art["arch"] = arch
        if kind == "cache" and draw(st.booleans()):
            art["meta"] = {"transform": "texts", "age_days": draw(st.sampled_from([0, 200]))}
        if arch == "neural" and draw(st.booleans()):
            art["content"] = neural.train([("seed text", "a")])
        if arch == "chain":
            art["content"] = {"goal": "g", "calls": [{"tool": "t", "args": {}}]}
        arts.append(art)
    ids = [a["id"] for a in arts]
    pairs = draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids)), max_size=3 * n))
    edges = [{"src": u, "dst": v, "type": "influence"} for u, v in pairs]
    edges += [{"src": u, "dst": v, "type": "semantic"}
              for u, v in draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids)), max_size=4))]
    return {"artifacts": arts, "edges": edges}


@st.composite
def scenarios(draw):
    doc = draw(stores())
    live = [a for a in doc["artifacts"] if a["state"] != "erased"]
    if not live:
        doc["artifacts"][0]["state"] = "servable"
        live = doc["artifacts"][:1]
    roots = sorted({a["id"] for a in draw(st.lists(st.sampled_from(live), min_size=1, max_size=3))})
    by_id = {a["id"]: a for a in doc["artifacts"]}
    etype = draw(st.sampled_from(["delete", "correct", "migrate"]))
    event = {"type": etype, "roots": roots}
    if etype == "correct":
        event["replacements"] = [{k: v for k, v in by_id[r].items() if k != "state"} for r in roots]
    if etype == "migrate":  # a migrate's roots are records (issue 25: never a derived artifact)
        records = [a["id"] for a in live if a["kind"] == "record"] or [live[0]["id"]]
        roots = sorted(set(draw(st.lists(st.sampled_from(records), min_size=1, max_size=3))))
        event["roots"] = roots
        if by_id[roots[0]]["kind"] != "record":
            event = {"type": "delete", "roots": roots}
        iface = {"tools": {"t": {"params": {}}}}
        if event["type"] == "migrate":
            event["interface"] = iface if len(roots) == 1 else {r: iface for r in roots}
    selector = draw(st.sampled_from(["mincut", "greedy", "repair_all", "remove_all", "no_action"]))
    policy = draw(st.sampled_from(["default.yaml", "tool-agent.yaml", "assistant.yaml"]))
    return doc, event, selector, policy


def _with_reference(scenario):
    """(policy, snapshot, event, selector, the networkx reference's plan JSON) of a drawn scenario."""
    doc, event_doc, selector, policy_name = scenario
    policy = _policy(policy_name)
    snap = parse_store_document(doc, "<test>")
    event = parse_event(event_doc, snap)
    return policy, snap, event, selector, reference_plan(policy, snap, event, selector, "networkx").to_json()


@given(scenarios())
def test_indexed_plan_equals_networkx_reference(scenario):
    policy, snap, event, selector, want = _with_reference(scenario)
    assert compute_plan(policy, snap, event, selector, "networkx").to_json() == want
    store = Store()
    try:
        store.import_snapshot(snap)
        assert compute_plan(policy, store, event, selector, "ortools").to_json() == {
            **want, "selection_method": want["selection_method"].replace("networkx", "ortools")}
    finally:
        store.close()


@given(stores(), st.data())
def test_scope_reads_only_the_cascade_and_its_parents(doc, data):
    snap = parse_store_document(doc, "<test>")
    roots = data.draw(st.lists(st.sampled_from(sorted(snap.artifacts)), min_size=1, max_size=3, unique=True))
    g = nx.DiGraph()
    g.add_nodes_from(snap.artifacts)
    g.add_edges_from(snap.influence_edges())
    affected = set(roots).union(*(nx.descendants(g, r) for r in roots))
    parents = {i: tuple(sorted(g.predecessors(i))) for i in affected}
    store = Store()
    store.import_snapshot(snap)
    for source in (snap, store):
        scope = read_scope(source, roots)
        assert scope.cascade == affected
        assert dict(scope.parents) == parents
        assert set(scope.artifacts) == affected
        expected = snap.artifacts if source is snap else {i: store.get(i) for i in scope.artifacts}
        assert all(scope.artifacts[i] == expected[i] for i in scope.artifacts)
        # a parent outside C(F) is held only when not servable (else it reads servable); a member's
        # state is read off its artifact
        outside = {p for ps in parents.values() for p in ps} - affected
        assert set(scope.states) == {p for p in outside if snap.artifacts[p].state not in SERVABLE_STATES}
        assert all(scope.states[i] == snap.artifacts[i].state for i in scope.states)
        assert all((scope.states[i] in SERVABLE_STATES) == (snap.artifacts[i].state in SERVABLE_STATES)
                   for i in outside)
    store.close()


@given(st.integers(1, 16).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))))
def test_strong_components_match_networkx(graph):
    n, edges = graph
    succ: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        succ[u].append(v)
    comps = strong_components(succ)
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    assert sorted(map(sorted, comps)) == sorted(map(sorted, nx.strongly_connected_components(g)))
    position = {v: k for k, comp in enumerate(reversed(comps)) for v in comp}  # reversed = topological
    assert all(position[u] <= position[v] for u, v in edges)


@given(st.integers(1, 16).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n),
    st.permutations(range(n)), st.sampled_from(["set", "sorted", "shuffled", "repeated"]))),
    st.sampled_from(["python", "arrays", "arrays then python"]))
def test_generation_order_matches_networkx(graph, path):
    """Generations of a DAG each in id order, as networkx's, through the one-by-one Kahn, the array
    peel, or the peel handing a narrow tail to the Kahn; a cycle is refused."""
    from unittest import mock

    from memsteward.repair import scope as scope_module

    n, pairs, names, given_as = graph
    nodes = [f"x{names[k]:02d}" for k in range(n)]  # a DAG in position order, ids not in that order
    edges = [(nodes[min(u, v)], nodes[max(u, v)]) for u, v in pairs if u != v]
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    arg = {"set": set(nodes), "sorted": sorted(nodes), "shuffled": nodes, "repeated": sorted(nodes + nodes[::2])}
    patch = {"python": {}, "arrays": {"PEEL_MIN_MEMBERS": 0, "PEEL_NARROW": 0},
             "arrays then python": {"PEEL_MIN_MEMBERS": 0, "PEEL_NARROW_LEVELS": 1}}[path]
    with mock.patch.multiple(scope_module, **patch) if patch else contextlib.nullcontext():
        got = generation_order(arg[given_as], set(edges))
        assert got == tuple(v for gen in nx.topological_generations(g) for v in sorted(gen))
        if len(edges) > 0:
            u, v = edges[0]
            with pytest.raises(ValueError, match="cycle"):
                generation_order(sorted(nodes), set(edges) | {(v, u)})


@given(st.text(), st.integers(1, 2**62), st.text(), st.one_of(st.none(), st.integers(0, 2**62)), st.text(),
       st.one_of(st.none(), st.text()), st.text())
def test_audit_row_hash_is_sha256_of_the_compact_json_array(prev, seq, at, event_id, action, artifact_id, detail):
    import hashlib
    import json

    from memsteward.repair.auditchain import row_hash

    payload = json.dumps([prev, seq, at, event_id, action, artifact_id, detail], ensure_ascii=False,
                         separators=(",", ":"))
    try:
        want = hashlib.sha256(payload.encode("utf-8")).hexdigest()
    except UnicodeEncodeError:  # lone surrogates cannot be stored either way
        return
    assert row_hash(prev, seq, at, event_id, action, artifact_id, detail) == want


@given(st.integers(1, 2**40), st.text(), st.one_of(st.none(), st.integers(0, 2**62)), st.text(),
       st.lists(st.one_of(st.none(), st.text()), max_size=6), st.text())
def test_barrier_chain_equals_row_by_row_hashing(seq, at, event_id, action, ids, detail):
    """chain_same (the barrier's one-pass hashing of its withdraw rows) equals row_hash row by row."""
    import hashlib

    from memsteward.repair.auditchain import chain_same, row_hash

    prev = hashlib.sha256(repr((seq, at)).encode("utf-8", "surrogatepass")).hexdigest()
    try:
        want, last = [], prev
        for k, i in enumerate(ids):
            last = row_hash(last, seq + k, at, event_id, action, i, detail)
            want.append(last)
    except UnicodeEncodeError:  # lone surrogates cannot be stored either way
        return
    assert chain_same(prev, seq, at, event_id, action, ids, detail) == want


# ------------------------------------------------------------------ the array peel of large cascades


def _peel_everything(whole: bool = False):
    """Route even tiny cascades through :func:`peel_levels` (normally only ≥ 2048 members) and the
    array assignment: after one narrow level the rest goes to Tarjan and the ordered pass, or with
    ``whole`` every level is peeled (no level counts as narrow)."""
    from unittest import mock

    from memsteward.repair import scope as scope_module

    if whole:
        return mock.patch.multiple(scope_module, PEEL_MIN_MEMBERS=0, PEEL_NARROW=0)
    return mock.patch.multiple(scope_module, PEEL_MIN_MEMBERS=0, PEEL_NARROW_LEVELS=1)


@given(st.integers(1, 24).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))))
def test_peel_levels_are_the_topological_generations_before_any_cycle(graph):
    from unittest import mock

    from memsteward.repair import scope as scope_module
    from memsteward.repair.scope import peel_levels

    n, edges = graph
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    on_cycle = {v for c in nx.strongly_connected_components(g) if len(c) > 1 or g.has_edge(*(list(c) * 2)) for v in c}
    blocked = on_cycle.union(*(nx.descendants(g, v) for v in on_cycle))
    want = [v for gen in nx.topological_generations(g.subgraph(set(range(n)) - blocked)) for v in sorted(gen)]
    with mock.patch.object(scope_module, "PEEL_NARROW_LEVELS", n + 1):
        assert peel_levels(n, [u for u, _ in edges], [v for _, v in edges]) == want


@given(scenarios(), st.booleans())
def test_plans_through_the_array_peel_equal_the_networkx_reference(scenario, whole):
    policy, snap, event, selector, want = _with_reference(scenario)
    with _peel_everything(whole):
        assert compute_plan(policy, snap, event, selector, "networkx").to_json() == want


@given(stores(), st.data())
def test_peeled_order_is_parents_first_with_cycles_by_id(doc, data):
    from memsteward.repair.scope import order_and_cycles

    snap = parse_store_document(doc, "<test>")
    roots = data.draw(st.lists(st.sampled_from(sorted(snap.artifacts)), min_size=1, max_size=3, unique=True))
    scope = read_scope(snap, roots)
    with _peel_everything():
        order, cyclic = order_and_cycles(scope)
    g = nx.DiGraph()
    g.add_nodes_from(scope.cascade)
    g.add_edges_from((p, i) for i, ps in scope.parents.items() for p in ps if p in scope.cascade)
    comp = {v: k for k, c in enumerate(nx.strongly_connected_components(g)) for v in c}
    at = {v: k for k, v in enumerate(order)}
    assert sorted(order) == sorted(scope.cascade)
    assert all(at[u] < at[v] for u, v in g.edges if comp[u] != comp[v])
    for k in set(comp.values()):
        members = [v for v in order if comp[v] == k]
        assert members == sorted(members) and at[members[-1]] - at[members[0]] == len(members) - 1
    assert cyclic == {v for v in g if g.has_edge(v, v) or sum(comp[u] == comp[v] for u in g) > 1}


def test_levels_count_repairable_parents_as_support_and_leave_cycles_to_the_ordered_pass():
    """Through the array levels (every cascade peeled): s2's only input is s1, itself repairable,
    so s2 has support (1 of 1) and is repaired; s3 lies on a cycle with s4 and is decided by the
    ordered pass after the levels. Every mode equals the one-by-one pass's and the reference's."""
    from bench.repair_policies import load
    from memsteward.repair.candidates import assign
    from memsteward.repair.scope import order_and_cycles

    policy = load("tool-agent")  # summaries: regen with sufficient support (≥ 1 retained, ≥ half)
    doc = {"artifacts": [{"id": i, "kind": k, "content": {"text": f"{i} text."}}
                         for i, k in (("r0", "record"), ("x", "record"), ("s1", "summary"), ("s2", "summary"),
                                      ("s3", "summary"), ("s4", "summary"), ("s5", "summary"))],
           "edges": [{"src": u, "dst": v} for u, v in (("r0", "s1"), ("x", "s1"), ("s1", "s2"), ("s2", "s3"),
                                                       ("s3", "s4"), ("s4", "s3"), ("r0", "s5"))]}
    snap = parse_store_document(doc, "<test>")
    event = parse_event({"type": "delete", "roots": ["r0"]}, snap)
    scope = read_scope(snap, ["r0"])
    one_by_one = assign(policy, scope, event, None, order_and_cycles(scope))
    with _peel_everything(whole=True):
        levels = assign(policy, scope, event)
    assert dict(levels.modes) == dict(one_by_one.modes)
    assert levels.modes["s1"] == levels.modes["s2"] == "regen" and levels.modes["s5"] == "remove"
    assert levels.candidates == one_by_one.candidates and levels.cells == one_by_one.cells
    assert {c.id for c in levels.candidates if c.reason.startswith("on a cycle")} == {"s3", "s4"}
    with _peel_everything():
        assert compute_plan(policy, snap, event, "mincut", "networkx").to_json() == \
            reference_plan(policy, snap, event, "mincut", "networkx").to_json()


def test_both_assignment_passes_read_a_hand_built_scope_alike():
    """A Scope built by hand (no reader): edges not grouped by child, a root without an artifact,
    are read alike by both passes; a descendant without its artifact is a KeyError on both (review
    regression)."""
    import pytest

    from bench.repair_policies import load
    from memsteward.repair.artifacts import Artifact
    from memsteward.repair.candidates import assign
    from memsteward.repair.events import Event
    from memsteward.repair.scope import Scope, States, order_and_cycles

    policy = load("tool-agent")
    event = Event("delete", ("r",))
    arts = {"r": Artifact("r", "record"), "s": Artifact("s", "summary"), "x": Artifact("x", "record")}

    def both(scope):
        one_by_one = assign(policy, scope, event, None, order_and_cycles(scope))
        with _peel_everything(whole=True):
            levels = assign(policy, scope, event)
        assert dict(levels.modes) == dict(one_by_one.modes) and levels.candidates == one_by_one.candidates
        return dict(levels.modes)

    assert both(Scope(("r",), frozenset({"r", "s"}), [("r", "s"), ("x", "s")], arts, States())) == {"s": "regen"}
    no_root = {"s": arts["s"]}
    assert both(Scope(("r",), frozenset({"r", "s"}), [("x", "s"), ("r", "s")], no_root, States())) == {"s": "regen"}
    broken = Scope(("r",), frozenset({"r", "s", "t"}), [("s", "t"), ("r", "s"), ("x", "s")], arts, States())
    with pytest.raises(KeyError, match="t"):
        assign(policy, broken, event, None, order_and_cycles(broken))
    with _peel_everything(whole=True), pytest.raises(KeyError, match="t"):
        assign(policy, broken, event)


def test_an_edge_given_twice_in_a_snapshot_counts_once_as_in_a_store():
    """A hand-built Snapshot may repeat an edge; a store keys edges by (src, dst, type). s's inputs
    are r (deleted) and x: support 1 of 2 suffices, so s is repaired — from the snapshot and from the
    store alike, with or without a content-scan hit, and as the reference plans it (review
    regression: the repeated edge made it 1 of 3 on the snapshot, and the scan's merge changed that)."""
    from bench.repair_policies import load
    from memsteward.repair.artifacts import Artifact, Edge, Snapshot

    policy = load("tool-agent")
    for copy in (False, True):
        arts = {"r": Artifact("r", "record", content={"text": "alice moved to the blue house by the old mill road"}),
                "x": Artifact("x", "record", content={"text": "unrelated"}),
                "s": Artifact("s", "summary", content="a summary of both")}
        if copy:  # an untracked copy of the root's text: the content scan adds it to C(F)
            arts["u"] = Artifact("u", "record", content={"text": "alice moved to the blue house by the old mill road"})
        snap = Snapshot(arts, (Edge("r", "s"), Edge("r", "s"), Edge("x", "s")))
        event = parse_event({"type": "delete", "roots": ["r"]}, snap)
        store = Store()
        store.import_snapshot(Snapshot(arts, (Edge("r", "s"), Edge("x", "s"))))
        plans = [compute_plan(policy, source, event, "mincut", "networkx").to_json() for source in (snap, store)]
        assert plans[0] == plans[1]
        assert [c["id"] for c in plans[0]["candidates"]] == ["s"] and bool(plans[0]["untracked"]) == copy
        if not copy:  # the reference has no content scan
            assert plans[0] == reference_plan(policy, snap, event, "mincut", "networkx").to_json()
        store.close()


def test_an_artifacts_default_metadata_is_shared_and_refuses_changes():
    """Artifact is a named tuple whose default ``meta`` is one shared mapping: a change through one
    artifact must not reach every other (review regression); it still pickles and encodes as {}."""
    import json
    import pickle

    import pytest

    from memsteward.repair.artifacts import Artifact

    a, b = Artifact("a", "record"), Artifact("b", "cache")
    for change in (lambda m: m.__setitem__("x", 1), lambda m: m.update(x=1), lambda m: m.setdefault("x", 1)):
        with pytest.raises(TypeError, match="read-only"):
            change(a.meta)
    assert b.meta == {} and json.dumps(a.meta) == "{}" and pickle.loads(pickle.dumps(a)) == a
    own = Artifact("c", "cache", meta={"calls": 3})
    own.meta["calls"] = 4  # an artifact's own metadata is its own
    assert Artifact("d", "cache").meta == {}


def test_large_cascade_with_cycles_plans_as_the_reference_at_the_real_thresholds():
    """≈ 2,800 members (above PEEL_MIN_MEMBERS, so the array peel runs unpatched), 400 random influence
    edges inside C(F) (cycles, self-loops) and 300 members already withdrawn, erased or republished:
    every event type plans exactly as the networkx reference."""
    import random

    from bench.repair_policies import load
    from bench.repair_traces import scale_snapshot
    from memsteward.repair.artifacts import Artifact, Edge, Snapshot
    from memsteward.repair.scope import PEEL_MIN_MEMBERS

    policy = load("tool-agent")
    snap, ev = scale_snapshot(20_000, seed=3, event_share=0.3)
    rng = random.Random(3)
    ids = sorted(snap.artifacts)
    cascade = sorted(snap.reach(ev["roots"]))
    assert len(cascade) >= PEEL_MIN_MEMBERS
    extra = tuple(Edge(rng.choice(cascade), rng.choice(cascade)) for _ in range(400))
    arts = dict(snap.artifacts)
    for i in rng.sample([x for x in ids if not x.startswith("api-")], 300):
        a = arts[i]
        arts[i] = Artifact(a.id, a.kind, a.arch, a.version, a.content, a.meta,
                           rng.choice(["withdrawn", "erased", "republished"]))
    snap = Snapshot(arts, tuple(dict.fromkeys(snap.edges + extra)))
    for etype in ("migrate", "delete", "correct"):
        doc = {"type": etype, "roots": ev["roots"]}
        if etype == "migrate":
            doc["interface"] = ev["interface"]
        if etype == "correct":
            doc["replacements"] = [{"id": r, "kind": "record", "content": {"text": "new"}} for r in ev["roots"]]
        event = parse_event(doc, snap)
        want = reference_plan(policy, snap, event, "mincut", "ortools").to_json()
        assert any(c["reason"].startswith("on a cycle") for c in want["candidates"])
        assert compute_plan(policy, snap, event, "mincut", "ortools").to_json() == want


def test_artifacts_read_together_never_share_a_metadata_mapping():
    """Operators are pluggable and receive these artifacts: one mutating its artifact's metadata must
    not change another's (equal stored metadata is decoded once per artifact)."""
    doc = {"artifacts": [{"id": f"c{k}", "kind": "cache", "content": "x", "meta": {"transform": "texts"}}
                         for k in range(3)], "edges": []}
    store = Store()
    try:
        store.import_snapshot(parse_store_document(doc, "<test>"))
        arts = store.artifacts_of(["c0", "c1", "c2"])
        arts["c0"].meta["transform"] = "changed"  # type: ignore[index]
        assert arts["c1"].meta == {"transform": "texts"} and arts["c2"].meta == {"transform": "texts"}
    finally:
        store.close()


@given(st.integers(2, 40).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=2 * n),
    st.lists(st.integers(0, n - 1), min_size=1, max_size=3), st.integers(0, 3), st.integers(1, 4))))
def test_store_reach_by_levels_and_by_the_recursive_query_matches_networkx(case):
    """Store.reach walks level by level and finishes a narrow tail with one recursive query: with the
    switch after 0 … 3 narrow levels and a narrow bound of 1 … 4 ids, both paths and their seam give
    networkx's descendants (cycles, self-loops, semantic edges and roots without an artifact included)."""
    import memsteward.store.planning as store_mod

    n, pairs, roots, levels, width = case
    # a chain through every id (a long narrow tail) plus the drawn edges; every third edge a semantic one
    edges = [(k, k + 1, "influence") for k in range(n - 1)]
    edges += [(u, v, "influence" if k % 3 else "semantic") for k, (u, v) in enumerate(pairs)]
    edges = list(dict.fromkeys(edges))
    doc = {"artifacts": [{"id": f"a{k:02d}", "kind": "record"} for k in range(n)],
           "edges": [{"src": f"a{u:02d}", "dst": f"a{v:02d}", "type": t} for u, v, t in edges]}
    g = nx.DiGraph()
    g.add_edges_from((f"a{u:02d}", f"a{v:02d}") for u, v, t in edges if t == "influence")
    ids = sorted({f"a{r:02d}" for r in roots} | {"ghost"})
    expected = set(ids).union(*(nx.descendants(g, i) for i in ids if i in g))
    store = Store()
    store.import_snapshot(parse_store_document(doc, "<test>"))
    saved = store_mod.REACH_NARROW, store_mod.REACH_NARROW_LEVELS
    try:
        store_mod.REACH_NARROW, store_mod.REACH_NARROW_LEVELS = width, levels
        assert store.reach(ids) == expected
        store_mod.REACH_NARROW, store_mod.REACH_NARROW_LEVELS = saved
        assert store.reach(ids) == expected  # the defaults: levels, then the recursive query past 32 narrow ones
    finally:
        store_mod.REACH_NARROW, store_mod.REACH_NARROW_LEVELS = saved
    store.close()


def test_array_assignment_groups_edges_given_in_descending_child_order():
    """candidates.py `if np.any(dst[1:] < dst[:-1])` → `>` survived (issue 33): edges listed child
    by child but in descending order (no ascending pair) must still be grouped, or the array pass
    slices each member's descendant parents out of the wrong range (prerequisites P_i)."""
    from bench.repair_policies import load
    from memsteward.repair.artifacts import Artifact
    from memsteward.repair.candidates import assign
    from memsteward.repair.events import Event
    from memsteward.repair.scope import Scope, States, order_and_cycles

    policy = load("tool-agent")
    event = Event("delete", ("r",))
    arts = {"r": Artifact("r", "record"), **{s: Artifact(s, "summary") for s in ("s1", "s2", "s3")}}
    edges = [("s2", "s3"), ("s1", "s2"), ("r", "s1"), ("x", "s1")]  # children s3, s2, s1, s1
    scope = Scope(("r",), frozenset({"r", "s1", "s2", "s3"}), edges, arts, States())
    one_by_one = assign(policy, scope, event, None, order_and_cycles(scope))
    with _peel_everything(whole=True):
        levels = assign(policy, scope, event)
    assert {c.id: c.prerequisites for c in levels.candidates} == {"s1": (), "s2": ("s1",), "s3": ("s2",)}
    assert levels.candidates == one_by_one.candidates and dict(levels.modes) == dict(one_by_one.modes)
