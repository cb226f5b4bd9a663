"""Verified query-scoped clearance (Eq. 14, 16–20; Theorem 2).

* :func:`harmful` — Ĥ = {m_i : ψ̂_i < −τ}                                    (Eq. 14)
* :func:`chain` — Ĥ ordered from the most negative ψ̂ (ties: context order)   (Eq. 16)
* :func:`candidates` — nested C_j = {σ(1), …, σ(j)}, C_0 = ∅                  (Eq. 17)
* :func:`gains` — ĝ(j) = v̂(M \\ C_j) − v̂(M)                                   (Eq. 18)
* :func:`admissible` — J = {0} ∪ {j ≥ 1 : ĝ(j) > 0 and ν(M \\ C_j) = 1}        (Eq. 19)
* :func:`select` — ĵ = min argmax_{j ∈ J} ĝ(j)                                 (Eq. 20)

Theorem 2 follows: ĝ(ĵ) ≥ 0 (non-degradation), ĵ > 0 ⇒ ν(M̃) = 1, and |C_ĵ| = ĵ is minimal
among maximum-gain admissible candidates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .game import Coalition, Game

EPS = 1e-12


def harmful(contribution: Mapping[str, float], harm_tolerance: float) -> frozenset[str]:
    """Ĥ = {m_i : ψ̂_i < −τ} (Eq. 14)."""
    return frozenset(i for i, psi in contribution.items() if psi < -harm_tolerance)


def chain(contribution: Mapping[str, float], harmful_set: frozenset[str],
          order: Sequence[str]) -> tuple[str, ...]:
    """σ: Ĥ sorted by increasing ψ̂ (Eq. 16); equal ψ̂ keep the context order."""
    rank = {m: k for k, m in enumerate(order)}
    return tuple(sorted(harmful_set, key=lambda i: (contribution[i], rank.get(i, len(rank)), i)))


def candidates(ordered: Sequence[str]) -> list[frozenset[str]]:
    """C_0 = ∅ ⊆ C_1 ⊆ … ⊆ C_h with |C_j| = j (Eq. 17)."""
    return [frozenset(ordered[:j]) for j in range(len(ordered) + 1)]


def gains(game: Game, ordered: Sequence[str]) -> list[float]:
    """ĝ(j) = v̂(M \\ C_j) − v̂(M) for j = 0..h (Eq. 18), one batch."""
    full = game.grand
    cleared: list[Coalition] = [full - c for c in candidates(ordered)]
    values = game.values([full, *cleared])
    return [v - values[0] for v in values[1:]]


def admissible(game: Game, ordered: Sequence[str], gain: Sequence[float]) -> list[int]:
    """J = {0} ∪ {j ≥ 1 : ĝ(j) > 0 and ν(M \\ C_j) = 1} (Eq. 19)."""
    full = game.grand
    out = [0]
    for j, c in enumerate(candidates(ordered)):
        if j >= 1 and gain[j] > EPS and game.recovered(full - c):
            out.append(j)
    return out


def select(gain: Sequence[float], admissible_set: Sequence[int]) -> int:
    """ĵ = min argmax_{j ∈ J} ĝ(j) (Eq. 20)."""
    best = max(gain[j] for j in admissible_set)
    return min(j for j in admissible_set if gain[j] >= best - EPS)


@dataclass(frozen=True)
class Selection:
    """The verified clearance of Algorithm 1 lines 6–17."""

    harmful: frozenset[str]
    chain: tuple[str, ...]
    gains: tuple[float, ...]
    admissible: tuple[int, ...]
    selected: int

    @property
    def removed(self) -> tuple[str, ...]:
        return self.chain[: self.selected]


def clearance(game: Game, contribution: Mapping[str, float], harm_tolerance: float) -> Selection:
    """Algorithm 1 lines 6–16: harmful set, chain, gains, admissible set and ĵ."""
    h = harmful(contribution, harm_tolerance)
    ordered = chain(contribution, h, game.players)
    g = gains(game, ordered)
    j_set = admissible(game, ordered, g)
    return Selection(h, ordered, tuple(g), tuple(j_set), select(g, j_set))
