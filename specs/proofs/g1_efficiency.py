"""G1 efficiency (MeClear Eq. 3, 34–35): Σ_i ψ_i = v(M) − v(∅).

Exact Shapley: for symbolic coalition values v(S), S ⊆ [K], with
ψ_i = Σ_{S ⊆ M∖{i}} |S|!(K−|S|−1)!/K! · (v(S ∪ {i}) − v(S))            (Eq. 3)
Sampled estimator: ψ̂_i = (1/L) Σ_ℓ [v(Pre_ℓ(i) ∪ {i}) − v(Pre_ℓ(i))]   (Eq. 11)
for L *symbolic* permutations (positions are Z3 integers, all distinct), so the claim holds for
every multiset of permutations, not only sampled ones.
"""

from __future__ import annotations

from fractions import Fraction
from math import factorial

import z3

from . import g1_stratified
from .result import ProofResult, check_unsat, run

CLAIM = ("Σ_i ψ_i = v(M) − v(∅) for exact ψ, for any L symbolic permutations and for the "
         "stratified estimate (S2) with any sampled coalitions")


def shapley_weight(size: int, k: int, variant: str | None = None) -> Fraction:
    """|S|!(K−|S|−1)!/K!  (the broken variant drops the (K−|S|−1)! factor)."""
    if variant == "broken-weights":
        return Fraction(factorial(size), factorial(k))
    return Fraction(factorial(size) * factorial(k - size - 1), factorial(k))


def exact_obligation(k: int, variant: str | None = None) -> z3.BoolRef:
    v = [z3.Real(f"v[{mask:0{k}b}]") for mask in range(1 << k)]
    total = 0
    for i in range(k):
        bit = 1 << i
        for mask in range(1 << k):
            if mask & bit:
                continue
            w = shapley_weight(bin(mask).count("1"), k, variant)
            total = total + z3.Q(w.numerator, w.denominator) * (v[mask | bit] - v[mask])
    return z3.Not(total == v[(1 << k) - 1] - v[0])


def sampled_obligation(k: int, permutations: int, variant: str | None = None) -> z3.BoolRef:
    value = z3.Function("v", z3.BitVecSort(k), z3.RealSort())
    constraints = []
    total = 0
    for ell in range(permutations):
        pos = [z3.Int(f"pos[{ell}][{i}]") for i in range(k)]
        constraints += [z3.And(p >= 0, p < k) for p in pos] + [z3.Distinct(*pos)]
        for i in range(k):
            pre = z3.BitVecVal(0, k)
            for j in range(k):
                if j != i:
                    before = pos[j] < pos[i] if variant != "broken-prefix" else pos[j] <= pos[i] - 2
                    pre = pre | z3.If(before, z3.BitVecVal(1 << j, k), z3.BitVecVal(0, k))
            total = total + (value(pre | z3.BitVecVal(1 << i, k)) - value(pre))
    claim = total / permutations == value(z3.BitVecVal((1 << k) - 1, k)) - value(z3.BitVecVal(0, k))
    return z3.And(*constraints, z3.Not(claim))


def averaging_obligation(permutations: int) -> z3.BoolRef:
    """If every permutation's marginals telescope to v(M) − v(∅), so does their L-average."""
    full, empty = z3.Reals("v_M v_empty")
    sums = [z3.Real(f"s[{ell}]") for ell in range(permutations)]
    hyp = [s_ == full - empty for s_ in sums]
    return z3.And(*hyp, z3.Not(z3.Sum(sums) / permutations == full - empty))


def prove(max_players: int = 6, max_permutations: int = 16, variant: str | None = None) -> ProofResult:
    """Exact ψ for K ≤ max_players; one symbolic permutation for K ≤ max_players (so every
    permutation); L ≤ 2 symbolic permutations jointly for K ≤ 4; averaging over L ≤ max_permutations."""

    def body() -> int:
        n = 0
        for k in range(1, max_players + 1):
            check_unsat(exact_obligation(k, variant), f"exact Shapley, K={k}")
            check_unsat(sampled_obligation(k, 1, variant), f"one symbolic permutation, K={k}")
            n += 2
        for k in range(1, min(max_players, 4) + 1):
            check_unsat(sampled_obligation(k, 2, variant), f"two symbolic permutations, K={k}")
            n += 1
        for ell in range(1, max_permutations + 1):
            check_unsat(averaging_obligation(ell), f"average of L={ell} permutations")
            n += 1
        for where, negated in g1_stratified.obligations(max_players + 2, min(max_players, 3),
                                                         "broken-weight" if variant == "broken-weights" else None):
            check_unsat(negated, where)
            n += 1
        return n

    bound = (f"exact K≤{max_players}; any permutation K≤{max_players}; "
             f"any multiset of L≤{max_permutations} permutations; stratified (S2) per sample K≤{max_players + 2}, "
             f"jointly K≤{min(max_players, 3)}")
    return run("G1", CLAIM, bound, body)
