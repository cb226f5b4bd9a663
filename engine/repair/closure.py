"""Publication selection S_ρ (MemoRepair §2.4, Eq. 1–4, Theorem 1) and the paper's baselines.

``max_weight_closure`` solves max Σ p_i x_i with p_i = w_i − λ c_i subject to x_i ≤ v_i (Eq. 2)
and x_i ≤ x_j for j ∈ P̄_i (Eq. 3) exactly, by one s–t min cut (Picard 1976): s → i with
capacity p_i for p_i > 0, i → t with capacity −p_i for p_i < 0, and infinite edges i → j for
j ∈ P̄_i (selecting i forces its prerequisites) and i → t for v_i = 0 (never selectable).
The selection is the source side of the cut: the nodes reachable from s in the residual network,
i.e. the unique *minimal* optimal closure (zero-profit candidates are selected only when needed).

Exact integer capacities: every w_i, c_i and λ is read as the exact decimal rational of its
shortest float representation (``Fraction(repr(x))``, e.g. 0.3 → 3/10), p_i is computed in
rationals, and all p_i are multiplied by the lcm of their denominators. Both backends get these
same integers, so they agree exactly: ``networkx`` (reference; arbitrary-precision ints) and
``ortools`` (``SimpleMaxFlow``, int64; when the scaled capacities would not fit in 62 bits the
``ortools`` backend falls back to ``networkx``, reported in ``Selection.method``).

Hard budget β (Σ c_i x_i ≤ β, a precedence-constrained knapsack): exact enumeration of
predecessor-closed sets when at most ``BUDGET_EXACT_LIMIT`` candidates are selectable; otherwise a
Lagrangian search: bisection on a cost multiplier μ ≥ 0 over min cuts with p_i = w_i − (λ+μ) c_i,
returning the min-cut selection of the smallest μ found whose cost fits the budget (feasible, not
guaranteed optimal; ``Selection.optimal`` says which).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from .candidates import Candidate

SELECTORS: tuple[str, ...] = ("mincut", "greedy", "repair_all", "remove_all", "no_action")
BACKENDS: tuple[str, ...] = ("networkx", "ortools")
DEFAULT_BACKEND = "ortools"  # the min-cut the CLI, the Python API and the LangGraph adapter use unless told
BUDGET_EXACT_LIMIT = 20
INT64_SAFE = 1 << 62
SMALL_CUT_ARCS = 1024  # up to this many arcs the OR-Tools network is built arc by arc (no numpy import)


@dataclass(frozen=True)
class Selection:
    """S_ρ with its objective Repair(x) − λ·Cost(x) (exact rational and float)."""

    selected: frozenset[str]
    objective_exact: Fraction
    method: str
    optimal: bool

    @property
    def objective(self) -> float:
        return float(self.objective_exact)

    def as_dict(self) -> dict:
        return {"selected": sorted(self.selected), "objective": self.objective,
                "method": self.method, "optimal": self.optimal}


@functools.lru_cache(maxsize=1 << 16)
def exact(x: float) -> Fraction:
    """The decimal rational a float was written as (shortest repr round-trips, so this is exact)."""
    if not math.isfinite(x):
        raise ValueError(f"non-finite weight {x!r}")
    return Fraction(repr(float(x)))


def profit(c: Candidate, tradeoff: float | Fraction, extra: Fraction = Fraction(0)) -> Fraction:
    """p_i = w_i − λ c_i (exact)."""
    lam = tradeoff if isinstance(tradeoff, Fraction) else exact(tradeoff)
    return _profit(c.value, c.cost, lam + extra)


@functools.lru_cache(maxsize=1 << 16)
def _profit(value: float, cost: float, lam: Fraction) -> Fraction:
    """w − λc for one (w, c) pair (cached: a large cascade has few distinct weight pairs)."""
    return exact(value) - lam * exact(cost)


def objective(candidates: Iterable[Candidate], selected: Collection[str], tradeoff: float) -> Fraction:
    """Eq. 1: Repair(x) − λ·Cost(x) of a selection (exact)."""
    nums, den = _numerators([c for c in candidates if c.id in selected], exact(tradeoff))
    return Fraction(sum(nums), den)


def _numerators(candidates: Sequence[Candidate], lam: Fraction) -> tuple[list[int], int]:
    """p_i = w_i − λ c_i over one common denominator D: (P_1 … P_n, D) with p_i = P_i / D.

    Integer arithmetic per candidate (each distinct weight read as a rational once, :func:`_ratio`):
    D = lcm(den w_i, den λ · den c_i), P_i = num w_i · D/den w_i − num λ · num c_i · D/(den λ · den c_i).
    """
    ws = list(map(_ratio, [c.value for c in candidates]))
    cs = list(map(_ratio, [c.cost for c in candidates]))
    ln, ld = lam.numerator, lam.denominator
    den = 1
    for d in {d for _, d in ws} | {ld * d for _, d in cs}:
        den = den * d // math.gcd(den, d)
    return [wn * (den // wd) - ln * cn * (den // (ld * cd)) for (wn, wd), (cn, cd) in zip(ws, cs)], den


@functools.lru_cache(maxsize=1 << 16)
def _ratio(x: float) -> tuple[int, int]:
    """:func:`exact` as (numerator, denominator) integers (read without Fraction's properties)."""
    q = exact(x)
    return q.numerator, q.denominator


def is_feasible(candidates: Sequence[Candidate], selected: Collection[str]) -> bool:
    """Eq. 2–3: only executable candidates, closed under P̄_i; P_i must lie in D⁺(F)."""
    by_id = {c.id: c for c in candidates}
    for i in selected:
        c = by_id.get(i)
        if c is None or not c.executable:
            return False
        if any(j not in by_id or j not in selected for j in c.prerequisites):
            return False
    return True


def _scaled(candidates: Sequence[Candidate], tradeoff: float, extra: Fraction) -> tuple[list[int], int]:
    """Integer capacities p_i · L (in the candidates' order), L the lcm of the p_i's reduced
    denominators (the smallest integer scaling). With p_i = P_i / D (:func:`_numerators`), p_i reduces
    to denominator D / gcd(P_i, D), and the lcm of such divisors of D is D / gcd(D, P_1, …, P_n): no
    rational per candidate."""
    lam = (tradeoff if isinstance(tradeoff, Fraction) else exact(tradeoff)) + extra
    nums, den = _numerators(candidates, lam)
    g = math.gcd(den, *nums)
    return [n // g for n in nums], den // g


# --------------------------------------------------------------------------- min cut backends


def closure_network(candidates: Sequence[Candidate], ints: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """The Picard network of Eq. 1–4 as arc lists (tails, heads, capacities): node 0 = s, 1 = t,
    k + 2 = candidate k; s → k with p_k > 0, k → t with −p_k for p_k < 0 or ∞ when v_k = 0, and
    k → j with ∞ for j ∈ P̄_k. ∞ = Σ |p| + 1 exceeds every finite cut."""
    index = {c.id: k for k, c in enumerate(candidates, 2)}
    inf = sum(map(abs, ints)) + 1
    arcs: list[tuple[int, int, int]] = []  # (tail, head, capacity)
    for k, (c, p) in enumerate(zip(candidates, ints), 2):
        if p > 0:
            arcs.append((0, k, p))
        if not c.executable:
            arcs.append((k, 1, inf))
        elif p < 0:
            arcs.append((k, 1, -p))
        for j in c.prerequisites:
            h = index.get(j)
            if h is not None:
                arcs.append((k, h, inf))
    return [a[0] for a in arcs], [a[1] for a in arcs], [a[2] for a in arcs]


def _cut_networkx(candidates: Sequence[Candidate], ints: Sequence[int]) -> list[int]:
    """The minimal min cut's source side (candidate positions) by networkx's preflow-push."""
    import networkx as nx  # local: the reference backend only (CLI start-up imports no networkx)

    g = nx.DiGraph()
    g.add_nodes_from(range(len(candidates) + 2))
    for u, v, cap in zip(*closure_network(candidates, ints)):
        g.add_edge(u, v, capacity=cap)
    residual = nx.algorithms.flow.preflow_push(g, 0, 1)
    seen = {0}
    stack = [0]
    while stack:
        u = stack.pop()
        for v, attr in residual[u].items():
            if v not in seen and attr["capacity"] - attr["flow"] > 0:
                seen.add(v)
                stack.append(v)
    return sorted(k - 2 for k in seen if k > 1)


def _cut_ortools(candidates: Sequence[Candidate], ints: Sequence[int]) -> list[int]:
    """The minimal min cut's source side (candidate positions) by OR-Tools' ``SimpleMaxFlow``."""
    if not candidates:
        return []
    from ortools.graph.python import max_flow  # local: imported only when there is something to select

    tails, heads, caps = closure_network(candidates, ints)
    smf = max_flow.SimpleMaxFlow()
    if len(tails) <= SMALL_CUT_ARCS:  # one call per arc: a small event's cut needs no numpy (CLI start-up)
        for arc in zip(tails, heads, caps):
            smf.add_arc_with_capacity(*arc)
    else:
        import numpy as np

        smf.add_arcs_with_capacity(np.asarray(tails, dtype=np.int32), np.asarray(heads, dtype=np.int32),
                                   np.asarray(caps, dtype=np.int64))
    status = smf.solve(0, 1)
    if status != smf.OPTIMAL:
        raise RuntimeError(f"OR-Tools max flow failed with status {status}")
    return [k - 2 for k in smf.get_source_side_min_cut() if k > 1]


def preload(backend: str = DEFAULT_BACKEND) -> None:
    """Import the min-cut backend's native module now. An event's first cut imports it otherwise, and
    loading OR-Tools holds the interpreter lock for about 0.1 s, on whichever thread: the LangGraph
    adapter, whose async calls run events on a worker thread, loads it when it is built instead."""
    if backend == "ortools":
        from ortools.graph.python import max_flow  # noqa: F401
    elif backend == "networkx":
        import networkx  # noqa: F401


def max_weight_closure(candidates: Sequence[Candidate], tradeoff: float, backend: str = "networkx",
                       extra: Fraction = Fraction(0)) -> Selection:
    """Theorem 1: the exact optimum of Eq. 1–4 by a single s–t min cut (minimal optimal closure)."""
    ints, scale = _scaled(candidates, tradeoff, extra)
    method = backend
    if backend == "ortools":
        if 2 * sum(map(abs, ints)) + 2 < INT64_SAFE:
            side = _cut_ortools(candidates, ints)
        else:
            method, side = "ortools→networkx (capacities exceed int64)", _cut_networkx(candidates, ints)
    elif backend == "networkx":
        side = _cut_networkx(candidates, ints)
    else:
        raise ValueError(f"unknown backend {backend!r}")
    chosen = frozenset(candidates[k].id for k in side)
    # Eq. 1 of the cut: Σ p_i over S_ρ = Σ ints_i / scale, exact (with a Lagrangian shift, recomputed at λ)
    value = (Fraction(sum(ints[k] for k in side), scale) if extra == 0
             else objective(candidates, chosen, tradeoff))
    return Selection(chosen, value, f"mincut/{method}", True)


# --------------------------------------------------------------------------- baselines


def closure_feasible(candidates: Sequence[Candidate]) -> frozenset[str]:
    """E_0: candidates that can be selected at all (executable, prerequisites all selectable)."""
    by_id = {c.id: c for c in candidates}
    memo: dict[str, bool] = {}
    for start in sorted(by_id):
        stack = [(start, False)]
        on_path: set[str] = set()
        while stack:
            i, done = stack.pop()
            if done:
                on_path.discard(i)
                c = by_id[i]
                memo[i] = c.executable and all(j in by_id and memo.get(j, False) for j in c.prerequisites)
                continue
            if i in memo or i in on_path:
                continue
            on_path.add(i)
            stack.append((i, True))
            for j in by_id[i].prerequisites:
                if j in by_id and j not in memo and j not in on_path:
                    stack.append((j, False))
    return frozenset(i for i, ok in memo.items() if ok)


def repair_all(candidates: Sequence[Candidate], tradeoff: float) -> Selection:
    """Baseline *Repair all*: every initially executable candidate (E_0)."""
    chosen = closure_feasible(candidates)
    return Selection(chosen, objective(candidates, chosen, tradeoff), "repair_all", False)


def remove_all(candidates: Sequence[Candidate], tradeoff: float) -> Selection:
    """Baseline *Remove all*: the barrier without any repair (S = ∅)."""
    return Selection(frozenset(), Fraction(0), "remove_all", False)


def no_action(candidates: Sequence[Candidate], tradeoff: float) -> Selection:
    """Baseline *No action*: no barrier and no repair (the store is left unchanged)."""
    return Selection(frozenset(), Fraction(0), "no_action", False)


def greedy(candidates: Sequence[Candidate], tradeoff: float) -> Selection:
    """Baseline *Barrier+Greedy*: visit candidates by value-to-cost ratio w_i/c_i (ties: id);
    add a candidate together with its unselected prerequisites when the group is feasible and its
    profit Σ (w − λc) is positive. Feasible by construction, never better than the min cut."""
    by_id = {c.id: c for c in candidates}
    feasible = closure_feasible(candidates)

    def ratio(c: Candidate) -> float:
        return math.inf if c.cost == 0 else c.value / c.cost

    chosen: set[str] = set()
    for c in sorted(candidates, key=lambda c: (-ratio(c), c.id)):
        if c.id in chosen or c.id not in feasible:
            continue
        group = _ancestors(c.id, by_id) - chosen
        if sum((profit(by_id[i], tradeoff) for i in group), Fraction(0)) > 0:
            chosen |= group
    return Selection(frozenset(chosen), objective(candidates, chosen, tradeoff), "greedy", False)


def _ancestors(i: str, by_id: dict[str, Candidate]) -> set[str]:
    out = {i}
    stack = [i]
    while stack:
        for j in by_id[stack.pop()].prerequisites:
            if j in by_id and j not in out:
                out.add(j)
                stack.append(j)
    return out


# --------------------------------------------------------------------------- budget β


def enumerate_closures(candidates: Sequence[Candidate], budget: float | None = None) -> Iterable[frozenset[str]]:
    """All feasible (executable, predecessor-closed) selections, optionally with cost ≤ β."""
    feasible = closure_feasible(candidates)
    by_id = {c.id: c for c in candidates if c.id in feasible}
    order = _topo(by_id)
    cap = None if budget is None else exact(budget)

    def rec(k: int, chosen: frozenset[str], cost: Fraction) -> Iterable[frozenset[str]]:
        if k == len(order):
            yield chosen
            return
        yield from rec(k + 1, chosen, cost)
        c = by_id[order[k]]
        if all(j in chosen for j in c.prerequisites):
            new_cost = cost + exact(c.cost)
            if cap is None or new_cost <= cap:
                yield from rec(k + 1, chosen | {c.id}, new_cost)

    yield from rec(0, frozenset(), Fraction(0))


def _topo(by_id: dict[str, Candidate]) -> list[str]:
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(by_id)
    g.add_edges_from((j, c.id) for c in by_id.values() for j in c.prerequisites if j in by_id)
    return list(nx.lexicographical_topological_sort(g))


def brute_force(candidates: Sequence[Candidate], tradeoff: float, budget: float | None = None) -> Selection:
    """Reference optimum by enumeration (small instances): max objective, ties → fewest members, then
    the first enumerated (read in the enumeration's topological order, smallest id first among those
    ready: the one leaving out the earliest candidate)."""
    best: tuple[Fraction, int, list[str]] | None = None
    for sel in enumerate_closures(candidates, budget):
        val = objective(candidates, sel, tradeoff)
        key = (val, -len(sel), sorted(sel))
        if best is None or (key[0], key[1]) > (best[0], best[1]):
            best = key
    assert best is not None
    return Selection(frozenset(best[2]), best[0], "enumeration", True)


def budgeted_closure(candidates: Sequence[Candidate], tradeoff: float, budget: float,
                     backend: str = "networkx") -> Selection:
    """max Eq. 1 s.t. Eq. 2–4 and Σ c_i x_i ≤ β: exact enumeration when small, else Lagrangian."""
    if len(closure_feasible(candidates)) <= BUDGET_EXACT_LIMIT:
        sel = brute_force(candidates, tradeoff, budget)
        return Selection(sel.selected, sel.objective_exact, "budget/enumeration", True)
    cap = exact(budget)

    def cost(sel: frozenset[str]) -> Fraction:
        return sum((exact(c.cost) for c in candidates if c.id in sel), Fraction(0))

    base = max_weight_closure(candidates, tradeoff, backend)
    if cost(base.selected) <= cap:
        return Selection(base.selected, base.objective_exact, "budget/mincut (β not binding)", True)
    lo, hi = Fraction(0), Fraction(1)
    while cost(max_weight_closure(candidates, tradeoff, backend, hi).selected) > cap:
        hi *= 2
        if hi > 2**64:
            break
    best = max_weight_closure(candidates, tradeoff, backend, hi).selected
    for _ in range(40):
        mid = (lo + hi) / 2
        chosen = max_weight_closure(candidates, tradeoff, backend, mid).selected
        if cost(chosen) <= cap:
            hi, best = mid, chosen
        else:
            lo = mid
    if cost(best) > cap:
        best = frozenset()
    return Selection(best, objective(candidates, best, tradeoff), "budget/lagrangian", False)


SelectorFn = Callable[[Sequence[Candidate], float], Selection]


def select(candidates: Sequence[Candidate], tradeoff: float, selector: str = "mincut",
           budget: float | None = None, backend: str = "networkx") -> Selection:
    """Dispatch one of :data:`SELECTORS` (the budget applies to ``mincut`` only)."""
    if selector == "mincut":
        if budget is not None:
            return budgeted_closure(candidates, tradeoff, budget, backend)
        return max_weight_closure(candidates, tradeoff, backend)
    table: dict[str, SelectorFn] = {"greedy": greedy, "repair_all": repair_all,
                                    "remove_all": remove_all, "no_action": no_action}
    if selector not in table:
        raise ValueError(f"unknown selector {selector!r}")
    return table[selector](candidates, tradeoff)
