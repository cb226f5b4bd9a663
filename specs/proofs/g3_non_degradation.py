"""G3 non-degradation of verified clearance (MeClear Thm 2, Eq. 17–22, 45–46).

Over a nested chain C_0 = ∅ ⊂ C_1 ⊂ … ⊂ C_h (|C_j| = j, Eq. 17) with symbolic values
v̂(M ∖ C_j) and recovery bits ν_j, gains ĝ(j) = v̂(M ∖ C_j) − v̂(M) (Eq. 18), admissible set
J = {0} ∪ {j ≥ 1 : ĝ(j) > 0 ∧ ν_j} (Eq. 19) and the selection rule ĵ = min argmax_{j∈J} ĝ(j)
(Eq. 20), computed the way the engine does (one left-to-right scan, strict improvement):

* ĝ(ĵ) ≥ 0, i.e. v̂(M̃) ≥ v̂(M)                                          (Eq. 21)
* ĵ > 0 ⇒ ν(M̃) = 1                                                     (Eq. 22)
* ĵ ∈ J, ĝ(ĵ) = max_J ĝ and no admissible j < ĵ attains it (minimum cardinality);
* error transfer: if |v̂(S) − v(S)| ≤ η on every evaluated S (Eq. 45) then
  g(ĵ) ≥ ĝ(ĵ) − 2η ≥ −2η, and ĝ(ĵ) > 2η ⇒ g(ĵ) > 0                       (Eq. 46)
"""

from __future__ import annotations

import z3

from .result import ProofResult, check_unsat, run

CLAIM = "ĝ(ĵ) ≥ 0; ĵ > 0 ⇒ ν = 1; ĵ = min argmax over J; Eq. 45 ⇒ Eq. 46"


def select(gains: list, recovered: list, variant: str | None = None) -> tuple[z3.ArithRef, z3.ArithRef]:
    """Symbolic Eq. 20: returns (ĵ, ĝ(ĵ)) from a left-to-right scan over j = 1..h."""
    best_j: z3.ArithRef = z3.IntVal(0)
    best_g: z3.ArithRef = z3.RealVal(0)
    for j in range(1, len(gains)):
        admissible = z3.And(gains[j] > 0, recovered[j]) if variant != "broken-no-recovery" else gains[j] > 0
        better = gains[j] > best_g if variant != "broken-ties" else gains[j] >= best_g
        take = z3.And(admissible, better)
        best_j = z3.If(take, j, best_j)
        best_g = z3.If(take, gains[j], best_g)
    return best_j, best_g


def selection_obligation(h: int, variant: str | None = None) -> z3.BoolRef:
    base = z3.Real("v_hat(M)")
    values = [base] + [z3.Real(f"v_hat(M∖C_{j})") for j in range(1, h + 1)]
    recovered = [z3.BoolVal(True)] + [z3.Bool(f"nu_{j}") for j in range(1, h + 1)]
    gains = [values[j] - base for j in range(h + 1)]
    j_hat, g_hat = select(gains, recovered, variant)
    admissible = [z3.BoolVal(True)] + [z3.And(gains[j] > 0, recovered[j]) for j in range(1, h + 1)]
    picked = lambda seq: z3.Or([z3.And(j_hat == j, seq[j]) for j in range(h + 1)])  # noqa: E731
    claims = [
        g_hat >= 0,
        z3.Implies(j_hat > 0, picked(recovered)),
        picked(admissible),
        z3.And([z3.Or(j_hat != j, g_hat == gains[j]) for j in range(h + 1)]),
        z3.And([z3.Implies(admissible[j], gains[j] <= g_hat) for j in range(h + 1)]),
        z3.And([z3.Implies(z3.And(admissible[j], gains[j] == g_hat), j_hat <= j) for j in range(h + 1)]),
    ]
    return z3.Not(z3.And(claims))


def error_transfer_obligation(h: int, variant: str | None = None) -> z3.BoolRef:
    eta = z3.Real("eta")
    v_hat = [z3.Real(f"v_hat[{j}]") for j in range(h + 1)]  # index 0: M, j: M ∖ C_j
    v_true = [z3.Real(f"v[{j}]") for j in range(h + 1)]
    recovered = [z3.BoolVal(True)] + [z3.Bool(f"nu_{j}") for j in range(1, h + 1)]
    gains_hat = [v_hat[j] - v_hat[0] for j in range(h + 1)]
    j_hat, g_hat = select(gains_hat, recovered)
    slack = 2 * eta if variant != "broken-eta" else eta
    g_true = z3.Sum([z3.If(j_hat == j, v_true[j] - v_true[0], 0) for j in range(h + 1)])
    hyp = [eta >= 0] + [z3.And(v_hat[j] - v_true[j] <= eta, v_true[j] - v_hat[j] <= eta) for j in range(h + 1)]
    claim = z3.And(g_true >= g_hat - slack, g_true >= -slack, z3.Implies(g_hat > slack, g_true > 0))
    return z3.And(*hyp, z3.Not(claim))


def prove(max_chain: int = 12, variant: str | None = None) -> ProofResult:
    def body() -> int:
        n = 0
        for h in range(0, max_chain + 1):
            check_unsat(selection_obligation(h, variant), f"selection rule, h={h}")
            check_unsat(error_transfer_obligation(h, variant), f"error transfer, h={h}")
            n += 2
        return n

    return run("G3", CLAIM, f"chains of every length h ≤ {max_chain}", body)
