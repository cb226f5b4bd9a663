"""Adaptive attribution that stops on the *decision* (beyond the paper; issue 15).

The stopping rule and its error bound are stated in ``specs/ADAPTIVE_STOPPING.md`` (Theorem D).
In short: with intervals I_i = [ψ̂_i − r_i, ψ̂_i + r_i], sampling stops as soon as the removed
set C_ĵ of Algorithm 1 (Eq. 14, 16–20) is the same for *every* contribution vector inside the
intervals — memories whose interval straddles −τ but cannot enter the chain before ĵ do not
matter — and further samples go only to the memories that can still change C_ĵ.

* Phase 1: ``start`` uniform permutations (Eq. 11): one marginal per memory each.
* Phase 2: per look, ``batch`` *targeted* marginals for each relevant memory m_i: a position p
  uniform in 0 … K − 1 and a prefix S uniform among the p-subsets of M ∖ {m_i}, then
  X = v̂(S ∪ {m_i}) − v̂(S). This is exactly the law of m_i's marginal under a uniform
  permutation (App. B.2), so each memory's samples stay i.i.d. with mean ψ̃_i and the radii of
  Eq. 13 / empirical Bernstein / CLT apply per memory. Two coalitions buy one sample of one
  memory instead of K − 1 buying one of each: it pays when few memories are relevant.
* The union bound runs over the K memories and the grid of sample sizes a memory can reach
  (start, start + batch, …, max_permutations), so stopping at any look keeps the guarantee.

Efficiency (G1) is not claimed: memories end with different sample counts.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import permutations as orders
from statistics import NormalDist

from .attribution import Attribution, bernstein_radius, marginals, prefixes, sample_permutations
from .game import Coalition, Game
from .selection import EPS

MAX_ORDERED = 6  # |R| up to which every interval-consistent order of R is checked


@dataclass(frozen=True)
class Decision:
    """Whether the removed set is settled by the intervals, and which memories can change it."""

    settled: bool
    removed: tuple[str, ...]
    relevant: frozenset[str]
    reason: str


def _chain(psi: Mapping[str, float], members: Sequence[str], order: Sequence[str]) -> list[str]:
    rank = {m: k for k, m in enumerate(order)}
    return sorted(members, key=lambda i: (psi[i], rank[i], i))


def _point_selection(game: Game, chain: Sequence[str]) -> tuple[int, float, list[float]]:
    """ĵ, max gain and the gains evaluated (Eq. 18–20), stopping at the first admissible
    candidate with the largest gain any coalition can have (later ones cannot beat it)."""
    full = game.grand
    v_full = game.value(full)
    ceiling = 1.0 - v_full
    best_j, best, gains = 0, 0.0, [0.0]
    for j in range(1, len(chain) + 1):
        c = full - frozenset(chain[:j])
        g = game.value(c) - v_full
        gains.append(g)
        if g > EPS and game.recovered(c) and g > best + EPS:
            best_j, best = j, g
            if g >= ceiling - EPS:
                break
    return best_j, best, gains


def _prefix_can_win(game: Game, prefix: frozenset[str], best: float) -> bool:
    """Whether a candidate C would be admissible with gain ≥ best − EPS (Eq. 19–20)."""
    full = game.grand
    c = full - prefix
    g = game.value(c) - game.value(full)
    return g > EPS and g >= best - EPS and game.recovered(c)


def decide(game: Game, psi: Mapping[str, float], radius: Mapping[str, float], tau: float) -> Decision:
    """The stopping rule of Theorem D (specs/ADAPTIVE_STOPPING.md) at the current intervals."""
    players = game.players
    lo = {i: psi[i] - radius[i] for i in players}
    hi = {i: psi[i] + radius[i] for i in players}
    may_in = {i for i in players if lo[i] < -tau}
    straddle = {i for i in may_in if hi[i] >= -tau}
    chain = _chain(psi, [i for i in players if psi[i] < -tau], players)
    j_hat, best, _ = _point_selection(game, chain)
    removed = tuple(chain[:j_hat])
    r_set = set(removed)

    def wider(a: str, b: str) -> set[str]:
        """An overlap of two intervals is resolved by sampling the wider one (both if equal)."""
        if radius[a] == radius[b]:
            return {a, b}
        return {a} if radius[a] > radius[b] else {b}

    def tail_unsettled(tail: Sequence[str]) -> set[str]:
        """Memories keeping the chain after R uncertain: straddlers and overlapping neighbours."""
        bad = {i for i in straddle if i not in r_set}
        certain_tail = [i for i in tail if i not in bad]
        for a, b in zip(certain_tail, certain_tail[1:]):
            if hi[a] >= lo[b]:
                bad |= wider(a, b)
        return bad

    if not removed:
        bad = tail_unsettled(chain)
        if not bad:
            return Decision(True, removed, frozenset(), "chain settled, nothing removed")
        return Decision(False, removed, frozenset(bad), "chain unsettled")

    relevant: set[str] = {i for i in removed if hi[i] >= -tau}  # (A) every removed memory is in H
    for j in may_in - r_set:  # (B) no other memory may precede a removed one in the chain
        for i in removed:
            if lo[j] <= hi[i]:
                relevant |= wider(i, j)
    # (C) no interval-consistent order of R has a proper prefix that would be selected instead
    if len(removed) > 1:
        overlaps = [(a, b) for a in removed for b in removed if a < b and hi[a] >= lo[b] and hi[b] >= lo[a]]
        if len(removed) > MAX_ORDERED:
            for a, b in overlaps:
                relevant |= wider(a, b)
        elif not relevant and overlaps:
            for order in orders(removed):
                if any(lo[order[x]] > hi[order[y]] for x in range(len(order)) for y in range(x + 1, len(order))):
                    continue  # inconsistent with the intervals
                if any(_prefix_can_win(game, frozenset(order[:j]), best) for j in range(1, len(order))):
                    for a, b in overlaps:
                        relevant |= wider(a, b)
                    break
    # (D) no later candidate can beat R: R reaches the ceiling, or the tail is settled
    ceiling = 1.0 - game.value(game.grand)
    if best < ceiling - EPS:
        relevant |= tail_unsettled([i for i in chain if i not in r_set])
    if relevant:
        return Decision(False, removed, frozenset(relevant), "removed set unsettled")
    return Decision(True, removed, frozenset(), "removed set settled")


def targeted_marginals(players: Sequence[str], target: str, count: int,
                       rng: random.Random) -> list[tuple[Coalition, Coalition]]:
    """``count`` (S, S ∪ {i}) pairs with the law of m_i's marginal under a uniform permutation."""
    others = [p for p in players if p != target]
    out = []
    for _ in range(count):
        s = frozenset(rng.sample(others, rng.randrange(len(players))))
        out.append((s, s | {target}))
    return out


def shrunk_normal_radius(xs: Sequence[float], delta: float) -> float:
    """CLT half-width z_{1−δ/2}·s̃/√n with s̃² = (Σ(x − x̄)² + 1)/n: one pseudo-observation at the
    largest variance a marginal in [−1, 1] can have, so a few equal samples (s = 0) never give
    a zero-width interval (heuristic, like any CLT interval)."""
    n = len(xs)
    if n < 2:
        return math.inf
    mean = sum(xs) / n
    var = (sum((x - mean) ** 2 for x in xs) + 1.0) / n
    return NormalDist().inv_cdf(1.0 - delta / 2.0) * math.sqrt(var / n)


def _radius(xs: Sequence[float], delta: float, bound: str) -> float:
    n = len(xs)
    if bound == "normal":
        return shrunk_normal_radius(xs, delta)
    hoeff = math.sqrt(2.0 * math.log(4.0 / delta) / n) if n else math.inf
    return min(hoeff, bernstein_radius(xs, delta / 2))


def decision_attribution(game: Game, harm_tolerance: float, *, seed: int, start: int, batch: int,
                         max_permutations: int, confidence: float = 0.95, bound: str = "bernstein",
                         trials: int | None = None) -> Attribution:
    """Sample until the removed set is settled (Theorem D), a memory's cap or the call budget."""
    k = game.n_players
    perms = sample_permutations(game.players, max(1, min(start, max_permutations)), seed)
    while perms and not game.affordable(prefixes(perms), trials):
        perms.pop()
    if not perms:
        return Attribution({i: 0.0 for i in game.players}, False, 0, {i: math.inf for i in game.players},
                           "budget", estimator="targeted")
    # every memory's sample count stays on the grid len(perms) + j·batch ≤ max_permutations
    grid = 1 + max(0, (max_permutations - len(perms)) // max(batch, 1))
    delta = (1.0 - confidence) / (k * grid)
    xs: dict[str, list[float]] = marginals(game, perms, trials)
    rng = random.Random(f"targeted|{seed}")
    stop = "max_permutations"
    while True:
        psi = {i: sum(x) / len(x) for i, x in xs.items()}
        radius = {i: _radius(x, delta, bound) for i, x in xs.items()}
        decision = decide(game, psi, radius, harm_tolerance)
        if decision.settled:
            stop = "decided"
            break
        targets = [i for i in game.players if i in decision.relevant and len(xs[i]) + batch <= max_permutations]
        if not targets:
            break
        if 2 * len(targets) >= k - 1:  # many relevant memories: whole permutations are cheaper
            new = [tuple(rng.sample(game.players, k)) for _ in range(batch)]
            if any(len(x) + batch > max_permutations for x in xs.values()) or not game.affordable(prefixes(new), trials):
                pass  # fall back to targeted sampling below
            else:
                for i, x in marginals(game, new, trials).items():
                    xs[i].extend(x)
                perms.extend(new)
                continue
        plan = {i: targeted_marginals(game.players, i, batch, rng) for i in targets}
        while targets and not game.affordable([c for i in targets for pair in plan[i] for c in pair], trials):
            targets.pop()  # the call budget: drop the last relevant memories first
        if not targets:
            stop = "budget"
            break
        wanted = [c for i in targets for pair in plan[i] for c in pair]
        values = dict(zip(wanted, game.values(wanted, trials)))
        for i in targets:
            xs[i].extend(values[with_i] - values[s] for s, with_i in plan[i])
    samples = sum(len(x) for x in xs.values()) - k * len(perms)  # targeted marginals
    return Attribution(psi, False, len(perms), radius, stop, tuple(perms), estimator="targeted",
                       samples=samples)
