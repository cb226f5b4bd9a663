"""Stratified sample-reuse Shapley estimation with the LOO screen as a control variate.

Beyond the paper (issue 15: fewer evaluator calls per unit of accuracy). Eq. 3 regrouped by
coalition size s gives, with A_s(i) / B_s(i) the mean of v̂ over the size-s coalitions that
contain / omit m_i,

    ψ_i = (1/K) [ Σ_{s=1}^{K} A_s(i) − Σ_{s=0}^{K−1} B_s(i) ]                        (S1)

and for T uniform among the size-s coalitions, A_s(i) = E[v̂(T) 1[i ∈ T]]·K/s and
B_s(i) = E[v̂(T) 1[i ∉ T]]·K/(K−s). So **every** evaluated coalition informs **every** memory
(maximum sample reuse), not only the two memories whose marginal it closes.

Control variate: the additive surrogate f(T) = v̂(M) − Σ_{j ∉ T} d_j fitted on the LOO screen
(Eq. 7; its coalitions are already paid for, and chosen before any sampling, so f is
independent of the sample) has Shapley value ψ_i(f) = d_i. The estimator applies (S1) to the
residual r = v̂ − f:

    ψ̂_i = d_i + (1/K) [ Σ_s Â_s^r(i) − Σ_s B̂_s^r(i) ]                                 (S2)

* strata s = 0 (∅), s = K (M) and s = K − 1 (the K LOO coalitions, where r = 0) are exact;
  strata 1 … K − 2 are sampled without replacement (a fully drawn stratum is exact).
* Unbiased: E[ψ̂_i] = ψ̃_i (the Shapley value of the cached game v̂) whenever every middle
  stratum holds ≥ 1 sample; an empty stratum adds a bias of at most (r_hi,s − r_lo,s)/K,
  which the radius includes.
* Efficiency holds exactly (G1): Σ_i of the s-stratum terms is K·(mean r over the stratum)
  for both A and B, so the sum telescopes to r(M) − r(∅), and Σ_i d_i + r(M) − r(∅) =
  v̂(M) − v̂(∅).
* Radius (Hoeffding 1963, Thm 1 and Thm 4 for sampling without replacement): one sample T of
  stratum s moves ψ̂_i by c_i(T) = r(T)[1[i∈T]/s − 1[i∉T]/(K−s)]/n_s, inside an interval of
  width w_s/n_s fixed in advance (r's range over size-s coalitions follows from v̂ ∈ [0, 1]
  and f's coefficients), so with a union bound over the K memories
  ε = sqrt( ln(2K/δ)/2 · Σ_s w_s²/n_s ) plus the bias bound of empty strata.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from .attribution import Attribution, expected_distinct_coalitions
from .game import Coalition, Game


@dataclass(frozen=True)
class Surrogate:
    """The control variate f(T) = Σ_{j ∈ T} weight_j + h(|T|), exact on M, ∅ and the LOO coalitions.

    h(K) = h(K − 1) = v̂(M) − Σ_j d_j, h(0) = v̂(∅), linear in between; its Shapley value is
    ψ_i(f) = weight_i + (h(K) − h(0))/K (a function of |T| alone is split equally).
    """

    weight: Mapping[str, float]
    top: float  # h(K) = h(K − 1)
    bottom: float  # h(0)

    def level(self, size: int) -> float:
        k = len(self.weight)
        if size >= k - 1:
            return self.top
        return self.bottom + (self.top - self.bottom) * size / (k - 1)

    def __call__(self, coalition: Coalition) -> float:
        return self.level(len(coalition)) + sum(self.weight[j] for j in coalition)

    def shapley(self, i: str) -> float:
        return self.weight[i] + (self.top - self.bottom) / len(self.weight)

    def extremes(self, size: int) -> tuple[float, float]:
        """min / max of f over the coalitions of ``size`` memories."""
        ws = sorted(self.weight.values())
        lo = sum(ws[:size])
        hi = sum(ws[len(ws) - size:]) if size else 0.0
        return self.level(size) + lo, self.level(size) + hi


def screen_surrogate(full_value: float, empty_value: float, effects: Mapping[str, float]) -> Surrogate:
    """f matching v̂ on M, ∅ and M ∖ {j}: weights are the LOO effects d_j (Eq. 7)."""
    return Surrogate(dict(effects), full_value - sum(effects.values()), empty_value)


def residual_width(f: Surrogate, k: int, size: int) -> float:
    """w_s: the width of the interval holding r(T)[1[i∈T]/s − 1[i∉T]/(K−s)] for |T| = s."""
    f_lo, f_hi = f.extremes(size)
    r_lo, r_hi = -f_hi, 1.0 - f_lo  # v̂ ∈ [0, 1]
    inside = (r_lo / size, r_hi / size)
    outside = (-r_hi / (k - size), -r_lo / (k - size))
    return max(inside[1], outside[1]) - min(inside[0], outside[0])


def allocation_order(k: int, widths: Mapping[int, float], total: int) -> list[int]:
    """The stratum of each successive draw: every prefix greedily minimises Σ_s w_s²/n_s.

    Strata with no sample come first (largest weight first), so any prefix of ≥ K − 2 draws
    covers every middle stratum; a stratum stops receiving draws once it is fully enumerated.
    """
    counts = {s: 0 for s in widths}
    order: list[int] = []
    for _ in range(total):
        open_ = [s for s in widths if counts[s] < math.comb(k, s)]
        if not open_:
            break

        def gain(s: int) -> float:
            n = counts[s]
            if n == 0:
                return math.inf if widths[s] > 0 else 0.0
            if n + 1 == math.comb(k, s):  # completing a stratum removes its whole term
                return widths[s] ** 2 / n
            return widths[s] ** 2 / n - widths[s] ** 2 / (n + 1)

        best = max(open_, key=lambda s: (gain(s), widths[s], -s))
        counts[best] += 1
        order.append(best)
    return order


def draw(players: Sequence[str], order: Sequence[int], seed: int) -> list[Coalition]:
    """Coalitions for the allocation ``order``: uniform within each stratum, without replacement."""
    rng = random.Random(seed)
    seen: set[Coalition] = set()
    pools: dict[int, list[Coalition]] = {}
    out: list[Coalition] = []
    for s in order:
        if math.comb(len(players), s) <= 64:  # small stratum: a shuffled enumeration
            if s not in pools:
                pool = [frozenset(c) for c in combinations(players, s)]
                rng.shuffle(pool)
                pools[s] = pool
            c = pools[s].pop()
        else:  # large stratum: rejection keeps the draw uniform among the unseen
            while True:
                c = frozenset(rng.sample(list(players), s))
                if c not in seen:
                    break
        seen.add(c)
        out.append(c)
    return out


@dataclass(frozen=True)
class StratifiedEstimate:
    """ψ̂ of (S2) with its radius and the per-stratum sample counts."""

    contribution: dict[str, float]
    radius: float
    counts: dict[int, int]


def estimate(game: Game, effects: Mapping[str, float], sample: Sequence[Coalition],
             confidence: float = 0.95, trials: int | None = None,
             prefer_full: bool = False) -> StratifiedEstimate:
    """(S2) from the sampled middle-stratum coalitions (plus ∅, M and the LOO coalitions).

    ``prefer_full``: a sampled coalition this view already holds at the game's trials (a verified
    candidate, a re-read) enters with that value instead of its first ``trials`` scores.
    """
    players, k = game.players, game.n_players
    full = game.grand
    if k <= 2:  # no middle stratum: (S1) is exact from ∅, the singletons (= LOO) and M
        sample = ()
    v_full, v_empty = game.values([full, frozenset()])
    f = screen_surrogate(v_full, v_empty, effects)
    by_size: dict[int, list[Coalition]] = {s: [] for s in range(1, k - 1)}
    for c in dict.fromkeys(sample):
        if 1 <= len(c) <= k - 2:
            by_size[len(c)].append(c)
    drawn = [c for cs in by_size.values() for c in cs]
    full_ones = [c for c in drawn if prefer_full and game.holds_full(c)]
    values = dict(zip(drawn, game.values(drawn, trials)))
    values.update(zip(full_ones, game.values(full_ones)))
    psi = {i: f.shapley(i) for i in players}  # r = 0 on the exact strata 0, K − 1, K
    variance_term, bias = 0.0, 0.0
    for s, cs in by_size.items():
        width = residual_width(f, k, s)
        if not cs:
            f_lo, f_hi = f.extremes(s)
            bias += (1.0 - f_lo + f_hi) / k  # |A_s − B_s| ≤ r_hi − r_lo
            continue
        n = len(cs)
        for c in cs:
            r = values[c] - f(c)
            for i in players:
                psi[i] += r / (s * n) if i in c else -r / ((k - s) * n)
        if n < math.comb(k, s):
            variance_term += width ** 2 / n
    delta = 1.0 - confidence
    eps = math.sqrt(math.log(2.0 * k / delta) / 2.0 * variance_term) + bias
    return StratifiedEstimate(psi, eps, {s: len(cs) for s, cs in by_size.items()})


def samples_for(n_players: int, permutations: int) -> int:
    """Middle-stratum coalitions at the cost of L permutations: E[distinct] − (K + 2)."""
    return max(0, round(expected_distinct_coalitions(n_players, permutations)) - (n_players + 2))


def stratified_sample(game: Game, count: int, seed: int, trials: int | None = None,
                      weight: Callable[[int, int], float] | None = None) -> tuple[list[Coalition], bool]:
    """The first ``count`` draws of the seeded allocation, cut to what the call budget allows.

    ``weight(s, K)`` is the stratum weight of the allocation (default s). Returns the
    coalitions and whether the budget cut them.
    """
    k = game.n_players
    if k <= 2:
        return [], False
    # Any allocation keeps (S2) unbiased; clearance decides about removing a few memories
    # from M, so the draws favour the large strata (weight s): measured in bench meclear_calls.
    widths = {s: float(weight(s, k) if weight else s) for s in range(1, k - 1)}
    coalitions = draw(game.players, allocation_order(k, widths, count), seed)
    base = game.cost_of([game.grand, frozenset()])

    def fits(n: int) -> bool:
        return game.call_budget is None or (
            game.evaluator_calls + base + game.cost_of(coalitions[:n], trials) <= game.call_budget)

    if fits(len(coalitions)):
        return coalitions, False
    lo, hi = 0, len(coalitions)  # affordability is monotone in the prefix length
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return coalitions[:lo], True


def stratified_attribution(game: Game, effects: Mapping[str, float], permutations: int, seed: int,
                           confidence: float = 0.95, trials: int | None = None) -> Attribution:
    """Line 5 of Algorithm 1 with (S2) at the cost of L permutations (capped by the call budget).

    When the budget cannot pay even for v̂(∅), ψ falls back to the surrogate's d_i with an
    infinite radius (stop ``budget``).
    """
    if not game.affordable([game.grand, frozenset()]):
        return Attribution(dict(effects), False, 0, {i: math.inf for i in game.players}, "budget",
                           estimator="stratified")
    sample, cut = stratified_sample(game, samples_for(game.n_players, permutations), seed, trials)
    est = estimate(game, effects, sample, confidence, trials)
    return Attribution(est.contribution, False, 0, {i: est.radius for i in game.players},
                       "budget" if cut else "fixed", estimator="stratified", samples=len(sample))
