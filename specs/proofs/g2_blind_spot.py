"""G2 redundant-harm blind spot (MeClear Thm 1, Cor. A.1, Eq. 31).

A redundant harmful group R (|R| = r ≥ 2) in a game
    v(S) = u(S ∖ R) − Δ · [S ∩ R ≠ ∅],   Δ > 0, u arbitrary                (Eq. 31)
has, for every i ∈ R, leave-one-out effect d_i = v(M) − v(M ∖ {i}) = 0 (Eq. 7) and Shapley
contribution ψ_i = −Δ / r (Eq. 3). Proved for symbolic u and Δ, every r from 2 to K.
"""

from __future__ import annotations

import z3

from .g1_efficiency import shapley_weight
from .result import ProofResult, check_unsat, run

CLAIM = "∀ i ∈ R: d_i = 0 ∧ ψ_i = −Δ/r under Eq. 31, for symbolic u and Δ > 0"


def obligation(k: int, r: int, variant: str | None = None) -> z3.BoolRef:
    group = (1 << r) - 1  # R = the first r players
    u = {mask: z3.Real(f"u[{mask:0{k}b}]") for mask in range(1 << k) if not mask & group}
    delta = z3.Real("Delta")

    def v(mask: int) -> z3.ArithRef:
        harmed = bool(mask & group) if variant != "broken-single-fault" else mask & group == group
        return u[mask & ~group] - (delta if harmed else 0)

    full = (1 << k) - 1
    claims = []
    for i in range(r):
        bit = 1 << i
        loo = v(full) - v(full & ~bit)
        psi = 0
        for mask in range(1 << k):
            if not mask & bit:
                w = shapley_weight(bin(mask).count("1"), k)
                psi = psi + z3.Q(w.numerator, w.denominator) * (v(mask | bit) - v(mask))
        claims += [loo == 0, psi == -delta / r]
    return z3.And(delta > 0, z3.Not(z3.And(claims)))


def prove(max_players: int = 6, variant: str | None = None) -> ProofResult:
    def body() -> int:
        n = 0
        for k in range(2, max_players + 1):
            for r in range(2, k + 1):
                check_unsat(obligation(k, r, variant), f"K={k}, r={r}")
                n += 1
        return n

    return run("G2", CLAIM, f"every 2 ≤ r ≤ K ≤ {max_players}", body)
