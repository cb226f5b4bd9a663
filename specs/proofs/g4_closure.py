"""G4 predecessor closure and optimality of the min-cut selector (MemoRepair Eq. 1–4, Thm 1).

Eq. 1–4: maximise Σ_i (w_i − λ c_i) x_i  s.t.  x_i ≤ v_i,  x_i ≤ x_j ∀ j ∈ P̄_i,  x ∈ {0,1}^n.

Two obligations:

1. *The reduction, symbolically* (every n ≤ bound, every prerequisite relation, every weight):
   in Picard's network (s → i with capacity p_i⁺, i → t with capacity p_i⁻, i → j with capacity
   ∞ for j ∈ P̄_i, i → t with ∞ when v_i = 0), the cut of a source side X has capacity
   cap(X) = Σ p⁺ − Σ_{i∈X} p_i when X is feasible for Eq. 2–3, and cap(X) ≥ ∞ otherwise. Hence a
   minimum cut is a maximum-objective feasible selection.
2. *The selector, on generated instances* up to a reported size: the selection it returns is
   feasible and no feasible selection has a larger objective (Z3, exact rationals).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from fractions import Fraction

import z3

from .result import ProofResult, Refuted, check_unsat, run

CLAIM = "min-cut selection is closed, executable and optimal for Repair − λ·Cost (Eq. 1–4)"

Instance = tuple[list[Fraction], list[bool], list[list[int]]]  # p_i, v_i, P̄_i
Selector = Callable[[Sequence[Fraction], Sequence[bool], Sequence[Sequence[int]]], set[int]]


def reduction_obligation(n: int, variant: str | None = None) -> z3.BoolRef:
    """cap(X) + obj(X) = Σ p⁺ for feasible X; cap(X) ≥ BIG for infeasible X (BIG > Σ|p|)."""
    p = [z3.Real(f"p[{i}]") for i in range(n)]
    executable = [z3.Bool(f"v[{i}]") for i in range(n)]
    prereq = {(i, j): z3.Bool(f"P[{i}][{j}]") for i in range(n) for j in range(n) if i != j}
    x = [z3.Bool(f"x[{i}]") for i in range(n)]
    big = z3.Real("BIG")
    pos = [z3.If(pi > 0, pi, 0) for pi in p]
    neg = [z3.If(pi < 0, -pi, 0) for pi in p]
    cap = z3.Sum([z3.If(x[i], neg[i], pos[i]) for i in range(n)])
    inf_edges = []
    for (i, j), edge in prereq.items():
        if variant != "broken-no-closure-edges":
            inf_edges.append(z3.If(z3.And(edge, x[i], z3.Not(x[j])), big, 0))
    inf_edges += [z3.If(z3.And(z3.Not(executable[i]), x[i]), big, 0) for i in range(n)]
    cap = cap + z3.Sum(inf_edges) if inf_edges else cap
    feasible = z3.And([z3.Implies(x[i], executable[i]) for i in range(n)] +
                      [z3.Implies(z3.And(edge, x[i]), x[j]) for (i, j), edge in prereq.items()])
    objective = z3.Sum([z3.If(x[i], p[i], 0) for i in range(n)])
    hyp = big > z3.Sum([pos[i] + neg[i] for i in range(n)])
    claim = z3.If(feasible, cap + objective == z3.Sum(pos), cap >= big)
    return z3.And(hyp, z3.Not(claim))


def random_instance(n: int, seed: int) -> Instance:
    """A random layered DAG of prerequisites with rational weights p_i = w_i − λ c_i."""
    rng = random.Random(seed)
    tradeoff = Fraction(3, 10)
    weights = [Fraction(rng.randint(0, 20), 4) - tradeoff * Fraction(rng.randint(0, 40), 4) for _ in range(n)]
    executable = [rng.random() > 0.1 for _ in range(n)]
    prereqs = [sorted(rng.sample(range(i), min(i, rng.randint(0, 3)))) for i in range(n)]
    return weights, executable, prereqs


def picard_networkx(weights: Sequence[Fraction], executable: Sequence[bool], prereqs: Sequence[Sequence[int]]) -> set[int]:
    """Reference selector: Theorem 1's network, solved by networkx's minimum_cut."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(["s", "t"])
    for i, p in enumerate(weights):
        if p > 0:
            g.add_edge("s", i, capacity=p)
        if not executable[i]:
            g.add_edge(i, "t")  # no capacity attribute = infinite: i can never be selected
        elif p < 0:
            g.add_edge(i, "t", capacity=-p)
        for j in prereqs[i]:
            g.add_edge(i, j)
    _, (source_side, _) = nx.minimum_cut(g, "s", "t")
    return {i for i in source_side if i != "s"}


def instance_obligation(inst: Instance, selection: set[int]) -> tuple[list[str], z3.BoolRef]:
    """Violations of Eq. 2–3 by ``selection`` (as text), and 'a feasible x beats it' for Z3."""
    weights, executable, prereqs = inst
    problems = [f"x[{i}] selected but not executable" for i in selection if not executable[i]]
    problems += [f"x[{i}] selected without prerequisite {j}" for i in selection for j in prereqs[i] if j not in selection]
    x = [z3.Bool(f"x[{i}]") for i in range(len(weights))]
    q = lambda f: z3.Q(f.numerator, f.denominator)  # noqa: E731
    best = sum((weights[i] for i in selection), Fraction(0))
    feasible = [z3.Implies(x[i], z3.BoolVal(bool(executable[i]))) for i in range(len(x))]
    feasible += [z3.Implies(x[i], x[j]) for i in range(len(x)) for j in prereqs[i]]
    better = z3.Sum([z3.If(x[i], q(w), 0) for i, w in enumerate(weights)] or [z3.RealVal(0)]) > q(best)
    return problems, z3.And(*feasible, better)


def prove(max_symbolic: int = 6, sizes: Sequence[int] = (8, 64, 256), seeds: int = 2,
          selector: Selector | None = None, variant: str | None = None) -> ProofResult:
    select = selector or picard_networkx

    def body() -> int:
        n = 0
        for size in range(1, max_symbolic + 1):
            check_unsat(reduction_obligation(size, variant), f"reduction, n={size}")
            n += 1
        for size in sizes:
            for seed in range(seeds):
                inst = random_instance(size, seed)
                chosen = select(*inst)
                problems, beats = instance_obligation(inst, chosen)
                if problems:
                    raise Refuted(f"instance n={size} seed={seed}", {"violation": problems[0]})
                check_unsat(beats, f"optimality, n={size} seed={seed}", timeout_ms=60_000)
                n += 1
        return n

    bound = f"reduction for every instance with n≤{max_symbolic}; selector on generated instances n≤{max(sizes, default=0)}"
    return run("G4", CLAIM, bound, body)
