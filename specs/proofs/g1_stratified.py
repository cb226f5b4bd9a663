"""G1 efficiency for the stratified sample-reuse estimator (S2) of memsteward.clearance.stratified.

For symbolic coalition values v(S) (an uninterpreted function of a K-bit mask) and *symbolic*
sampled coalitions (n_s masks per middle stratum s = 1 … K − 2, each constrained only to have
s members; repeats allowed), with LOO effects d_j = v(M) − v(M ∖ {j}) and the surrogate
f(T) = Σ_{j ∈ T} d_j + h(|T|), h(K) = h(K − 1) = v(M) − Σ d, h(0) = v(∅), linear between:

    ψ̂_i = d_i + (h(K) − h(0))/K + Σ_s (1/n_s) Σ_{T} r(T) [1[i ∈ T]/s − 1[i ∉ T]/(K − s)],
    r = v − f,

the claim Σ_i ψ̂_i = v(M) − v(∅) holds for every value function and every sample. An empty
stratum (n_s = 0) drops out of the sum, so it is covered by the smaller K's allocations too.
"""

from __future__ import annotations

from fractions import Fraction

import z3

CLAIM = "Σ_i ψ̂_i = v(M) − v(∅) for the stratified estimate (S2), any values and any sampled coalitions"


def _bit(mask: z3.BitVecRef, j: int) -> z3.ArithRef:
    return z3.If(z3.Extract(j, j, mask) == z3.BitVecVal(1, 1), z3.RealVal(1), z3.RealVal(0))


def obligation(k: int, per_stratum: int, variant: str | None = None) -> z3.BoolRef:
    """The negated claim for K players and ``per_stratum`` symbolic samples in each middle stratum.

    ``broken-weight`` scales the omitted-memory term by 1/(K − s + 1) instead of 1/(K − s).
    """
    v = z3.Function("v", z3.BitVecSort(k), z3.RealSort())
    full, empty = z3.BitVecVal((1 << k) - 1, k), z3.BitVecVal(0, k)
    d = [v(full) - v(z3.BitVecVal(((1 << k) - 1) & ~(1 << j), k)) for j in range(k)]
    top, bottom = v(full) - sum(d), v(empty)

    def level(size: int) -> z3.ArithRef:
        if size >= k - 1:
            return top
        return bottom + (top - bottom) * z3.Q(size, k - 1)

    psi = [d[i] + (top - bottom) / k for i in range(k)]
    constraints = []
    for s in range(1, k - 1):
        for t in range(per_stratum):
            mask = z3.BitVec(f"T[{s}][{t}]", k)
            bits = [_bit(mask, j) for j in range(k)]
            constraints.append(sum(bits) == s)
            f = level(s) + sum(bits[j] * d[j] for j in range(k))
            r = v(mask) - f
            out_w = Fraction(1, k - s + (1 if variant == "broken-weight" else 0))
            for i in range(k):
                inside = r * z3.Q(1, s * per_stratum)
                outside = r * z3.Q(out_w.numerator, out_w.denominator * per_stratum)
                psi[i] = psi[i] + z3.If(bits[i] == 1, inside, -outside)
    claim = sum(psi) == v(full) - v(empty)
    return z3.And(*constraints, z3.Not(claim))


def sample_obligation(k: int, size: int, variant: str | None = None) -> z3.BoolRef:
    """One sampled coalition T (|T| = s, symbolic) with any residual r adds 0 to Σ_i ψ̂_i."""
    mask = z3.BitVec("T", k)
    r = z3.Real("r")
    bits = [_bit(mask, j) for j in range(k)]
    out_w = Fraction(1, k - size + (1 if variant == "broken-weight" else 0))
    total = sum(z3.If(b == 1, r / size, -r * z3.Q(out_w.numerator, out_w.denominator)) for b in bits)
    return z3.And(sum(bits) == size, z3.Not(total == 0))


def surrogate_obligation(k: int) -> z3.BoolRef:
    """Σ_i ψ_i(f) = Σ_i [d_i + (h(K) − h(0))/K] = v(M) − v(∅) for any values of M, ∅ and M ∖ {j}."""
    full, empty = z3.Reals("v_M v_empty")
    loo = [z3.Real(f"v_M-{j}") for j in range(k)]
    d = [full - x for x in loo]
    top = full - sum(d)
    return z3.Not(sum(di + (top - empty) / k for di in d) == full - empty)


def obligations(max_players: int, joint_players: int, variant: str | None = None) -> list[tuple[str, z3.BoolRef]]:
    """Per-sample zero sums and the surrogate's efficiency for K ≤ max_players (so, by
    linearity, any multiset of samples), plus the whole estimator jointly for K ≤ joint_players."""
    out = []
    for k in range(1, max_players + 1):
        out.append((f"stratified surrogate, K={k}", surrogate_obligation(k)))
        out += [(f"stratified sample |T|={s}, K={k}", sample_obligation(k, s, variant)) for s in range(1, k - 1)]
    out += [(f"stratified estimate jointly, K={k}", obligation(k, 1, variant)) for k in range(1, joint_players + 1)]
    return out
