"""Attribution on the cached game: LOO screening, Shapley contributions, pairwise interactions.

Every function consumes only :meth:`Game.values` (coalitions are batched and cached there):

* :func:`loo` — d_i = v̂(M) − v̂(M \\ {m_i})                                  (Eq. 7)
* :func:`screen` — local profile with κ: harm / inconclusive / benefit     (App. A.2)
* :func:`exact_contribution` — ψ_i over all 2^K coalitions                 (Eq. 3, 33)
* :func:`sampled_contribution` — ψ̂_i from L seeded permutations           (Eq. 11)
* :func:`hoeffding_radius` — uniform radius ε at L with confidence 1 − δ  (Eq. 13, 40)
* :func:`interaction` — ω_ij from P_ij(π) (exact expectation or sampled)   (Eq. 15)
* adaptive sampling that stops on the decision: :mod:`memsteward.clearance.adaptive`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

from .game import Coalition, Game

Permutation = tuple[str, ...]
Local = Literal["harm", "inconclusive", "benefit"]
PairStructure = Literal["redundant", "joint", "additive"]


# --------------------------------------------------------------------------- LOO (Eq. 7)


def loo(game: Game) -> dict[str, float]:
    """d_i = v̂(M) − v̂(M \\ {m_i}) for every memory (Eq. 7), in one batch."""
    full = game.grand
    values = game.values([full, *(full - {i} for i in game.players)])
    return {i: values[0] - values[k + 1] for k, i in enumerate(game.players)}


def screen(effects: Mapping[str, float], screen_tolerance: float) -> dict[str, Local]:
    """Local profile (App. A.2): d < −κ harm, |d| ≤ κ inconclusive, d > κ benefit."""
    out: dict[str, Local] = {}
    for i, d in effects.items():
        out[i] = "harm" if d < -screen_tolerance else "benefit" if d > screen_tolerance else "inconclusive"
    return out


# --------------------------------------------------------------------------- exact Shapley (Eq. 3)


def all_coalitions(players: Sequence[str]) -> list[Coalition]:
    """The 2^K subsets of the context."""
    return [frozenset(c) for r in range(len(players) + 1) for c in combinations(players, r)]


def shapley_weight(size: int, n_players: int) -> float:
    """|S|! (K − |S| − 1)! / K!: the chance S precedes m_i in a random order (Eq. 3)."""
    return math.factorial(size) * math.factorial(n_players - size - 1) / math.factorial(n_players)


def exact_contribution(game: Game, trials: int | None = None) -> dict[str, float]:
    """ψ_i = Σ_{S ⊆ M \\ {i}} |S|!(K−|S|−1)!/K! [v̂(S ∪ {i}) − v̂(S)]  (Eq. 3, 33)."""
    players = game.players
    subsets = all_coalitions(players)
    v = dict(zip(subsets, game.values(subsets, trials)))
    k = len(players)
    psi = {i: 0.0 for i in players}
    for s in subsets:
        w = shapley_weight(len(s), k) if len(s) < k else 0.0
        for i in players:
            if i not in s:
                psi[i] += w * (v[s | {i}] - v[s])
    return psi


# --------------------------------------------------------------------------- sampled Shapley (Eq. 11)


def sample_permutations(players: Sequence[str], count: int, seed: int) -> list[Permutation]:
    """L independent uniform permutations of the context (seeded)."""
    rng = random.Random(seed)
    out: list[Permutation] = []
    for _ in range(count):
        order = list(players)
        rng.shuffle(order)
        out.append(tuple(order))
    return out


def prefixes(permutations: Sequence[Permutation]) -> list[Coalition]:
    """Every prefix coalition S_0 = ∅, …, S_K = M of the permutations (deduplicated)."""
    seen: dict[Coalition, None] = {}
    for perm in permutations:
        for r in range(len(perm) + 1):
            seen.setdefault(frozenset(perm[:r]), None)
    return list(seen)


def marginals(game: Game, permutations: Sequence[Permutation],
              trials: int | None = None) -> dict[str, list[float]]:
    """X_i^(ℓ) = v̂(P_i(π^ℓ) ∪ {m_i}) − v̂(P_i(π^ℓ)) for every memory and permutation (App. B.2)."""
    coalitions = prefixes(permutations)
    v = dict(zip(coalitions, game.values(coalitions, trials)))
    out: dict[str, list[float]] = {i: [] for i in game.players}
    for perm in permutations:
        for r, i in enumerate(perm):
            out[i].append(v[frozenset(perm[:r + 1])] - v[frozenset(perm[:r])])
    return out


def sampled_contribution(game: Game, permutations: Sequence[Permutation],
                         trials: int | None = None) -> dict[str, float]:
    """ψ̂_i^(L) = (1/L) Σ_ℓ [v̂(P_i(π^ℓ) ∪ {m_i}) − v̂(P_i(π^ℓ))]  (Eq. 11)."""
    xs = marginals(game, permutations, trials)
    return {i: (sum(x) / len(x) if x else 0.0) for i, x in xs.items()}


def hoeffding_radius(permutations: int, n_players: int, confidence: float = 0.95) -> float:
    """ε with Pr[max_i |ψ̂_i − ψ̃_i| ≥ ε] ≤ δ = 1 − confidence (Eq. 13 solved for ε, Eq. 40).

    2K exp(−L ε² / 2) = δ  ⇒  ε = sqrt(2 ln(2K/δ) / L). Exact attribution has radius 0.
    """
    if permutations <= 0:
        return math.inf
    delta = 1.0 - confidence
    return math.sqrt(2.0 * math.log(2.0 * max(n_players, 1) / delta) / permutations)


def permutations_needed(contribution: Mapping[str, float], harm_tolerance: float,
                        confidence: float = 0.95) -> int | None:
    """Eq. 42: L ≥ (2/γ²) ln(2K/δ) with γ = min_i |ψ_i + τ| keeps Ĥ = H̃ w.p. ≥ 1 − δ.

    ``None`` when some ψ lies exactly on the threshold (γ = 0: no finite L suffices).
    """
    if not contribution:
        return 0
    gap = min(abs(psi + harm_tolerance) for psi in contribution.values())
    if gap <= 1e-12:
        return None
    return math.ceil(2.0 / gap ** 2 * math.log(2.0 * len(contribution) / (1.0 - confidence)))


def bernstein_radius(xs: Sequence[float], delta: float) -> float:
    """Empirical-Bernstein radius (Maurer & Pontil 2009) for marginals in [−1, 1], two-sided."""
    n = len(xs)
    if n < 2:
        return math.inf
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    log_term = math.log(4.0 / delta)
    return math.sqrt(2.0 * var * log_term / n) + 14.0 * log_term / (3.0 * (n - 1))


# --------------------------------------------------------------------------- choosing exact


def expected_distinct_coalitions(n_players: int, permutations: int) -> float:
    """E[#distinct coalitions] that L permutations plus the LOO screen need.

    The size-s prefix of a uniform permutation is a uniform s-subset, so L permutations hit
    C(K, s)·(1 − (1 − 1/C(K, s))^L) distinct ones in expectation; LOO needs all K of size K − 1.
    """
    k, total = n_players, 0.0
    for s in range(k + 1):
        n = math.comb(k, s)
        if s == k - 1 and k >= 1:
            total += n
        else:
            total += n * (1.0 - (1.0 - 1.0 / n) ** permutations)
    return total


def use_exact(n_players: int, permutations: int, mode: str, premium: float = 0.25,
              trials: int = 1, sample_trials: int | None = None) -> bool:
    """``exact: auto`` picks exact enumeration when its calls ≤ (1 + premium) · E[calls sampled].

    Calls, after the savings of ``sample_trials``: the K + 1 screen coalitions (M and the LOO
    ones) cost ``trials`` each either way, every other coalition ``sample_trials``. With equal
    trials this is 2^K ≤ (1 + premium) · E[distinct sampled]. Exact attribution removes the
    sampling error of Proposition 1 (radius 0); the premium is what that is worth in extra
    evaluations (K = 5, L = 16: 32 ≤ 1.25 · 28.1, so exact).
    """
    if mode == "always":
        return True
    if mode == "never":
        return False
    t = min(sample_trials or trials, trials)
    screen = (n_players + 1) * trials
    exact = screen + (2 ** n_players - n_players - 1) * t
    sampled = screen + (expected_distinct_coalitions(n_players, permutations) - n_players - 1) * t
    return exact <= (1.0 + premium) * sampled


# --------------------------------------------------------------------------- interactions (Eq. 15)


def pair_delta(v: Mapping[Coalition, float], s: Coalition, i: str, j: str) -> float:
    """Δ_ij v̂(S) = v̂(S ∪ {i, j}) − v̂(S ∪ {i}) − v̂(S ∪ {j}) + v̂(S)."""
    return v[s | {i, j}] - v[s | {i}] - v[s | {j}] + v[s]


def _pair_coalitions(s: Coalition, i: str, j: str) -> list[Coalition]:
    return [s, s | {i}, s | {j}, s | {i, j}]


def interaction_coalitions(game: Game, i: str, j: str,
                           permutations: Sequence[Permutation] | None) -> list[Coalition]:
    """The coalitions :func:`interaction` evaluates for the pair (i, j)."""
    if permutations is None:
        rest = [p for p in game.players if p not in (i, j)]
        bases = all_coalitions(rest)
    else:
        bases = list(dict.fromkeys(frozenset(p[:min(p.index(i), p.index(j))]) for p in permutations))
    return [c for s in bases for c in _pair_coalitions(s, i, j)]


def interaction(game: Game, i: str, j: str, permutations: Sequence[Permutation] | None,
                trials: int | None = None) -> float:
    """ω_ij = (1/L) Σ_ℓ Δ_ij v̂(P_ij(π^ℓ)) (Eq. 15); its exact expectation when no sample given.

    P_ij(π) is the set preceding both m_i and m_j; under a uniform permutation it equals S
    with probability 2·|S|!·(K − |S| − 1)!/K!.
    """
    if permutations is None:
        rest = [p for p in game.players if p not in (i, j)]
        k = game.n_players
        subsets = all_coalitions(rest)
        needed = [c for s in subsets for c in _pair_coalitions(s, i, j)]
        v = dict(zip(needed, game.values(needed, trials)))
        weight = lambda size: 2 * math.factorial(size) * math.factorial(k - size - 1) / math.factorial(k)  # noqa: E731
        return sum(weight(len(s)) * pair_delta(v, s, i, j) for s in subsets)
    bases = []
    for perm in permutations:
        first = min(perm.index(i), perm.index(j))
        bases.append(frozenset(perm[:first]))
    needed = [c for s in dict.fromkeys(bases) for c in _pair_coalitions(s, i, j)]
    v = dict(zip(needed, game.values(needed, trials)))
    return sum(pair_delta(v, s, i, j) for s in bases) / len(bases) if bases else 0.0


def diagnose_pair(omega: float, harm_tolerance: float) -> PairStructure:
    """Structure of a harmful pair from ω_ij (Fig. 3): ω > τ substitution (redundant: one
    masks the other), ω < −τ complementarity (joint harm), otherwise approximately additive."""
    if omega > harm_tolerance:
        return "redundant"
    if omega < -harm_tolerance:
        return "joint"
    return "additive"


# --------------------------------------------------------------------------- adaptive sampling


@dataclass(frozen=True)
class Attribution:
    """Contributions ψ with how they were obtained."""

    contribution: dict[str, float]
    exact: bool
    permutations: int  # L actually used (0 when exact)
    radius: dict[str, float]  # confidence radius per memory (0 when exact)
    stop: str  # exact | fixed | confident | decided | budget | max_permutations
    sample: tuple[Permutation, ...] = ()
    estimator: str = "permutation"  # permutation (Eq. 11) | stratified (S2) | exact
    samples: int = 0  # coalitions sampled by the stratified estimator


def fixed_attribution(game: Game, permutations: int, seed: int, exact: bool,
                      confidence: float = 0.95, trials: int | None = None) -> Attribution:
    """Algorithm 1 line 5: exact ψ (Eq. 3) or ψ̂ from L permutations (Eq. 11) with Eq. 13 radius."""
    if exact:
        psi = exact_contribution(game, trials)
        return Attribution(psi, True, 0, {i: 0.0 for i in psi}, "exact", estimator="exact")
    sample = tuple(sample_permutations(game.players, permutations, seed))
    stop = "fixed"
    while sample and not game.affordable(prefixes(sample), trials):
        sample, stop = sample[:-1], "budget"  # the call budget caps L
    psi = sampled_contribution(game, sample, trials)
    eps = hoeffding_radius(len(sample), game.n_players, confidence)
    return Attribution(psi, False, len(sample), {i: eps for i in psi}, stop, sample)
