"""The event's neighbourhood C(F) ∪ pa(C(F)), read from a provenance source (MemoRepair §2.1).

Planning reads only what the event touches: C(F) = Reach(F; E^inf) (roots included), the
influence parents of every member (support checks and P_i), and those artifacts. A
:class:`Provenance` source answers these questions from an index — the SQLite store through its
edge indexes (one query per level of C(F)), an in-memory :class:`~memsteward.repair.artifacts.Snapshot`
through a child/parent index built once per snapshot — so the work grows with |C(F)| and its
in-edges, not with the store. :func:`order_and_cycles` peels large cascades level by level in
numpy (:func:`peel_levels`) and leaves the rest to an iterative Tarjan; the execution order is
Kahn by generations (:func:`generation_order`). The whole-store networkx graph of
:mod:`memsteward.repair.graph` remains only as the reference the tests and the bench compare with.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import groupby, islice
from operator import gt, itemgetter
from typing import Any

from ..store.api import Provenance
from .artifacts import SERVABLE, Artifact, Edge, Snapshot

_TAIL, _HEAD = itemgetter(0), itemgetter(1)
EDGE_ORDER = itemgetter(1, 0)  # the order of Scope.edges: by child, then parent


class States(dict):
    """id → visibility state of the influence parents outside C(F) that are not servable; any other
    id reads ``"servable"``. Planning asks it only of parents outside C(F) (a member's state is on
    its artifact), and reads them as the few that are not servable
    (:meth:`Provenance.unservable_of`), not one row each."""

    __slots__ = ()

    def __missing__(self, key: str) -> str:
        return SERVABLE


@dataclass(frozen=True)
class Scope:
    """C(F) with the influence parents of its members and what planning reads of them."""

    roots: tuple[str, ...]
    cascade: frozenset[str]
    edges: Sequence[tuple[str, str]]  # every influence edge (u, v) with v ∈ C(F), ordered by (v, u)
    # every member of C(F) at its current version; read with ``needs_content``, the content only of
    # the roots and of members some operator's check may read it for (others: None)
    artifacts: Mapping[str, Artifact]
    states: States  # the state of every influence parent outside C(F) (see States)
    untracked: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # content-scan matches

    @cached_property
    def members(self) -> list[str]:
        """C(F) in id order (sorted once per scope: the order, the plan and its columns all use it)."""
        return sorted(self.cascade)

    @cached_property
    def parents(self) -> Mapping[str, tuple[str, ...]]:
        """i ∈ C(F) → its influence parents, ascending (grouped from :attr:`edges` when first read:
        the array assignment of a large cascade reads the edges as they are)."""
        edges = self.edges
        if any(map(gt, map(_HEAD, edges), map(_HEAD, islice(edges, 1, None)))):
            edges = sorted(edges, key=EDGE_ORDER)
        parents: dict[str, tuple[str, ...]] = dict.fromkeys(self.members, ())
        for v, group in groupby(edges, _HEAD):
            parents[v] = tuple(map(_TAIL, group))
        return parents


def read_scope(source: Provenance, roots: Sequence[str],
               needs_content: Callable[[str, str | None], bool] | None = None) -> Scope:
    """C(F), pa(C(F)), the members' artifacts and the parents that are not servable, in four indexed
    reads (§2.1).
    Ids are passed in sorted order (the store probes its B-trees in key order).

    ``needs_content(kind, arch)`` (:func:`~memsteward.repair.operators.reads_content`) limits the
    content read to the roots and the members it holds for: a mode decision reads kind, arch,
    metadata and states only, so a cascade of large contents costs no more to plan than a small one.
    None reads every member's content."""
    affected = source.reach(roots)
    members = sorted(affected)
    edges = list(source.parent_edges(members))  # ordered by (v, u): one run per member, parents ascending
    outside = set(map(_TAIL, edges)).difference(affected)
    if needs_content is None:
        artifacts = source.artifacts_of(members)
    else:
        artifacts = dict(source.artifacts_of(members, content=False))
        wanted = set(roots)
        wanted.update(i for i, a in artifacts.items() if needs_content(a.kind, a.arch))
        artifacts.update(source.artifacts_of(sorted(wanted)))
    scope = Scope(tuple(roots), affected, edges, artifacts, States(source.unservable_of(outside)))
    vars(scope)["members"] = members  # Scope.members, already sorted here
    return scope


def with_untracked(source: Provenance, scope: Scope, roots_content: Mapping[str, Any], shingle_words: int,
                   min_shared: int, needs_content: Callable[[str, str | None], bool] | None = None) -> Scope:
    """The scope grown by untracked derivations (:mod:`memsteward.repair.lineage`): every servable
    artifact outside C(F) sharing n-word runs with a root joins as the root's child (a virtual
    influence edge), with everything reachable from it."""
    from .lineage import untracked

    found = untracked(roots_content, ((i, c) for i, c in source.shingle_candidates(roots_content, shingle_words)
                                      if i not in scope.cascade), shingle_words, min_shared)
    if not found:
        return scope
    extra = read_scope(source, sorted(found), needs_content)
    edges = set(scope.edges).union(extra.edges, ((m["root"], i) for i, m in found.items()))
    states = States({**extra.states, **scope.states})
    return replace(scope, cascade=scope.cascade | extra.cascade, edges=sorted(edges, key=EDGE_ORDER),
                   artifacts={**extra.artifacts, **scope.artifacts}, states=states, untracked=found)


def retained(nodes: Collection[str], affected: Collection[str], event_type: str,
             replacements: Collection[str] = ()) -> frozenset[str]:
    """Ret(e) (§2.1): V \\ C(F) for delete and migrate, (V \\ C(F)) ∪ X_Δ for correct.

    ``replacements`` are the ids of the fresh artifacts X_Δ materialised by a correction.
    """
    base = frozenset(nodes) - frozenset(affected)
    return base | frozenset(replacements) if event_type == "correct" else base


def is_retained(node: str, affected: Collection[str], event_type: str,
                replacements: Collection[str] = ()) -> bool:
    """Membership in Ret(e) without materialising V \\ C(F) (for large stores)."""
    if event_type == "correct" and node in replacements:
        return True
    return node not in affected


def neighbourhood(source: Provenance, cascade: Collection[str]) -> Snapshot:
    """The part of a store an event's execution reads: C(F), the influence parents of its members
    and the influence edges into C(F), as a :class:`Snapshot` (checks, root successors, contexts)."""
    edges = list(source.parent_edges(cascade))
    ids = set(cascade).union(u for u, _ in edges)
    return Snapshot(dict(source.artifacts_of(ids)), tuple(Edge(u, v) for u, v in edges))


def strong_components(succ: Sequence[Sequence[int]]) -> list[list[int]]:
    """Strongly connected components of a graph on 0..n−1 (iterative Tarjan, O(V + E)).

    Components come out sinks first: each is emitted after every component it reaches, so the
    reversed list is a topological order of the condensation.
    """
    n = len(succ)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for start in range(n):
        if index[start] != -1:
            continue
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack[start] = True
        work = [(start, 0)]
        while work:
            v, k = work[-1]
            children = succ[v]
            if k < len(children):
                work[-1] = (v, k + 1)
                w = children[k]
                if index[w] == -1:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


PEEL_MIN_MEMBERS = 2048  # below this many members of C(F), Tarjan alone (no numpy import: CLI start-up)
PEEL_NARROW = 8  # a level with fewer members is narrow: peeling it costs more than Tarjan would
PEEL_NARROW_LEVELS = 256  # after this many narrow levels (a long chain) the rest goes to Tarjan


def order_and_cycles(scope: Scope) -> tuple[list[str], frozenset[str]]:
    """A parents-first order of C(F) over E^inf[C(F)] (cycles collapsed, each cycle's members by
    id) and the members of directed cycles, self-loops included.

    Large cascades are first peeled level by level with arrays (Kahn: the members whose parents in
    C(F) are all ordered, :func:`peel_levels`); what the peel leaves — the members on or after a
    cycle, or a long narrow tail — goes through one pass of :func:`strong_components`
    (:func:`order_rest`). Any parents-first order gives the same modes (a member's mode reads only
    its parents' modes), so the two orders need not agree with the networkx reference's, only be
    parents-first with each cycle's members in id order.
    """
    ids = scope.members
    pos = {i: k for k, i in enumerate(ids)}
    src: list[int] = []
    dst: list[int] = []
    for u, v in scope.edges:
        j = pos.get(u)
        if j is not None:
            src.append(j)
            dst.append(pos[v])
    peeled: list[int] = peel_levels(len(ids), src, dst) if len(ids) >= PEEL_MIN_MEMBERS else []
    rest, cyclic = order_rest(len(ids), peeled, src, dst)
    return [ids[k] for k in peeled + rest], frozenset(ids[k] for k in cyclic)


def order_rest(n: int, peeled: Collection[int], src: Sequence[int], dst: Sequence[int]) -> tuple[list[int], list[int]]:
    """The nodes of 0..n−1 not in ``peeled`` in a parents-first order over the edges src[e] → dst[e]
    (strongly connected components in topological order, each component's nodes ascending — the
    ids' order, as positions in :attr:`Scope.members`), and the nodes on directed cycles."""
    if len(peeled) == n:
        return [], []
    done = set(peeled)
    rest = [k for k in range(n) if k not in done]
    local = {k: r for r, k in enumerate(rest)}
    succ: list[list[int]] = [[] for _ in rest]
    for j, k in zip(src, dst):
        if k in local and j in local:
            succ[local[j]].append(local[k])
    order: list[int] = []
    cyclic: list[int] = []
    for comp in reversed(strong_components(succ)):
        if len(comp) == 1:
            r = comp[0]
            order.append(rest[r])
            if r in succ[r]:
                cyclic.append(rest[r])
            continue
        members = sorted(rest[r] for r in comp)
        order.extend(members)
        cyclic.extend(members)
    return order, cyclic


def peel_levels(n: int, src: Sequence[int], dst: Sequence[int]) -> list[int]:
    """The nodes :func:`peel_level_arrays` peels, level by level."""
    import numpy as np

    levels = peel_level_arrays(n, src, dst)
    return np.concatenate(levels).tolist() if levels else []


def peel_level_arrays(n: int, src: Sequence[int], dst: Sequence[int]) -> list[Any]:
    """Kahn's algorithm by levels on the graph 0..n−1 with edges src[e] → dst[e], in numpy: level 0
    is the nodes without in-edges, level t+1 the nodes whose last in-edge comes from level t (each
    level an ascending array). Stops when nothing is left to peel — the rest lies on or after a
    cycle — or after PEEL_NARROW_LEVELS levels narrower than PEEL_NARROW (a long chain is cheaper
    in :func:`strong_components`)."""
    import numpy as np

    heads: Any = np.asarray(dst, dtype=np.int64)
    indegree = np.bincount(heads, minlength=n)
    children = ChildIndex(n, src, heads)
    frontier = np.flatnonzero(indegree == 0)
    levels = []
    narrow = 0
    while frontier.size:
        if frontier.size < PEEL_NARROW:
            narrow += 1
            if narrow > PEEL_NARROW_LEVELS:
                break
        levels.append(frontier)
        reached = children.of(frontier)
        if not reached.size:
            break
        reached, hits = np.unique(reached, return_counts=True)
        indegree[reached] -= hits
        frontier = reached[indegree[reached] == 0]
    return levels


class ChildIndex:
    """The children of each node of 0..n−1 over edges src[e] → dst[e], as one array grouped by
    parent (compressed sparse rows), so the children of many nodes are gathered at once."""

    def __init__(self, n: int, src: Sequence[int], dst: Sequence[int]) -> None:
        import numpy as np

        tails = np.asarray(src, dtype=np.int64)
        self.children = np.asarray(dst, dtype=np.int64)[np.argsort(tails, kind="stable")]
        self.start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(tails, minlength=n), out=self.start[1:])

    def of(self, nodes: Any) -> Any:
        """The children of every node of ``nodes`` (an int array), one entry per edge."""
        import numpy as np

        lo, counts = self.start[nodes], self.start[nodes + 1] - self.start[nodes]
        offsets = np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))
        return self.children[offsets]


def generation_order(nodes: Collection[str], edges: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """The topological generations of a DAG, each in id order: generation 0 is the nodes without
    in-edges, generation t+1 the nodes whose last in-edge comes from generation t (Kahn by levels;
    ``networkx.topological_generations`` with each generation sorted). Each generation's members
    depend only on earlier ones, so a generation can run at once. ValueError on a cycle.

    Large graphs are peeled in arrays (:func:`peel_level_arrays`) while the generations are wide;
    a narrow tail (a chain) is finished one node at a time (``nodes`` given as a list in id order
    are ranked without a full sort)."""
    ids = _unique_sorted(nodes) if isinstance(nodes, list) else sorted(set(nodes))
    rank = {n: k for k, n in enumerate(ids)}
    pairs = list(edges)
    tails, heads = zip(*pairs) if pairs else ((), ())
    src, dst = list(map(rank.__getitem__, tails)), list(map(rank.__getitem__, heads))
    peeled: list[int] = peel_levels(len(ids), src, dst) if len(ids) >= PEEL_MIN_MEMBERS else []
    order = peeled + _kahn_levels(len(ids), peeled, src, dst) if len(peeled) < len(ids) else peeled
    if len(order) != len(ids):
        raise ValueError("the requirement graph has a cycle")
    return tuple(map(ids.__getitem__, order))


def _kahn_levels(n: int, done: Collection[int], src: Sequence[int], dst: Sequence[int]) -> list[int]:
    """The generations of the nodes of 0..n−1 not in ``done`` (whose in-edges from ``done`` are
    satisfied), each ascending; the nodes on or after a cycle are left out."""
    skip = set(done)
    indegree = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for u, v in zip(src, dst):
        if u not in skip and v not in skip:
            succ[u].append(v)
            indegree[v] += 1
    level = [k for k in range(n) if indegree[k] == 0 and k not in skip]
    out: list[int] = []
    while level:
        out.extend(level)
        following = []
        for u in level:
            for v in succ[u]:
                indegree[v] -= 1
                if indegree[v] == 0:
                    following.append(v)
        level = sorted(following)
    return out


def _unique_sorted(nodes: list[str]) -> list[str]:
    """``sorted(set(nodes))``, linear when ``nodes`` is already in order (timsort finds one run)."""
    ordered = sorted(nodes)
    return [n for k, n in enumerate(ordered) if k == 0 or n != ordered[k - 1]]
