"""Budget-aware MeClear: Algorithm 1 under one hard call budget B (issue 32, beyond the paper).

The clearance is the paper's — screen (Eq. 7), ψ ranking, Ĥ (Eq. 14), the nested chain
(Eq. 16–17), gains and verification (Eq. 18–19), ĵ = min argmax (Eq. 20) — but every evaluator
call of the query (screen, estimation, verification) is paid from B, and candidates are verified
*between* estimation rounds instead of after all sampling:

1. **Screen.** v̂(M) at ``trials``; the K LOO coalitions at ``trials`` when that costs at most
   half of B, else at one trial (their d_i only rank; every decision re-reads at ``trials``).
2. **Round 0.** ψ̂⁰ = d (the Shapley value of the additive LOO surrogate); verify its chain.
   **Block search** (:mod:`memsteward.clearance.blocks`, policy ``block_search``): when no removal the
   LOO ranking offers recovers, the calls go to adaptive group testing first — halves of the ranking,
   then halves of a recovering half, each test a verification at ``trials`` — and the nested recovering
   blocks are reported as prefixes of one chain (:func:`block_round`; its other candidates unread).
3. **Rounds 1 … R.** The chosen estimator (:data:`ESTIMATORS`) spends a share of what is left
   (after a reserve for verification) through the one cache — so it reuses every coalition the
   screen and the verifications paid for — then the new chain is verified from C_1 on. Before
   each round, a LOO coalition a verification has read at ``trials`` replaces its one-trial d_i
   (:func:`refreshed`); when that changes d, its chain is verified again first (adaptive LOO).
   While no verified removal recovers, d is not the estimator's control variate
   (:func:`control_variate`), and after each estimation round the pair the held samples point at
   (:func:`best_pair`: a redundant pair masks both LOO effects) is verified as a chain of its own,
   in place of ψ̂'s chain.
4. **Stop** as soon as an admissible candidate reaches the gain ceiling 1 − v̂(M) (no candidate
   can do better, so Eq. 20's ĵ is found exactly), or when B is spent. With
   ``after_verified: refine`` the rounds go on after the ceiling until B is spent or an estimate
   buys nothing new: the ranking then rests on more samples, and a later ceiling round with a
   smaller removal replaces the first.

The plan reports the round with the best admissible gain (ties: the smallest removal, then the
latest round). Guarantees, proved in ``specs/BUDGETED_SEARCH.md``: G3's non-degradation and
recovery clauses hold on every path; ĵ is min argmax over the read candidates of the reported chain
(its verified prefix, for a chain round), and equals the paper's ĵ of that chain whenever the plan's
stop is ``verified``; the removal is the smallest of maximal gain among everything verified; no call
is made beyond B.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from ..policy.model import ClearanceSpec
from .attribution import (
    all_coalitions,
    exact_contribution,
    prefixes,
    sample_permutations,
    sampled_contribution,
    screen,
)
from .blocks import search_blocks
from .game import Coalition, Game
from .plan import ClearancePlan, frozen_map
from .selection import EPS, chain, harmful
from .shapiq_games import PREFIX, shapiq_contribution
from .stratified import estimate as estimate_s2
from .stratified import stratified_sample


def uniform_strata(size: int, k: int) -> float:
    """Stratum weight of the budgeted stratified draws: uniform over the middle strata (a pilot on
    30 synthetic cases at K = 10 and 20 found it and s(K − s) ahead of the paper path's weight s:
    a redundant pair shows only in coalitions that omit both, which the middle strata hold)."""
    return 1.0


MAX_ROUNDS = 8  # estimation rounds (each spends half of what is left, so 8 leave < 1/256 of B)
VERIFY_RESERVE = 2  # candidates each non-final round keeps calls for
MAX_SAMPLES = 10_000  # permutations / stratified draws an estimator may ask for (the budget cuts first)

# an estimator: (game with its cap, LOO effects d, seed, sample trials) → ψ̂, or None when nothing fits
Estimate = Callable[[Game, Mapping[str, float], int, int | None], dict[str, float] | None]


@contextmanager
def capped(game: Game, cap: int) -> Iterator[Game]:
    """The game with its advisory call budget lowered to ``cap`` while an estimator runs."""
    saved = game.call_budget
    game.call_budget = cap if saved is None else min(saved, cap)
    try:
        yield game
    finally:
        game.call_budget = saved


def _longest(fits: Callable[[int], bool], hi: int) -> int:
    """The largest n ≤ hi with fits(n) (fits is monotone: a longer prefix costs no less)."""
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _permutation(game: Game, effects: Mapping[str, float], seed: int, trials: int | None) -> dict[str, float] | None:
    """Eq. 11 on the longest prefix of the seeded permutation stream the cap pays for."""
    room = (game.call_budget or 0) - game.evaluator_calls
    # the stream is one seeded sequence: earlier rounds used a prefix of it (≤ the coalitions seen)
    stream = sample_permutations(game.players, max(0, min(room + game.coalitions_evaluated, MAX_SAMPLES)), seed)
    n = _longest(lambda m: game.affordable(prefixes(stream[:m]), trials), len(stream))
    return sampled_contribution(game, stream[:n], trials) if n else None


def _stratified(game: Game, effects: Mapping[str, float], seed: int, trials: int | None) -> dict[str, float] | None:
    """(S2) on the longest prefix of the seeded stratified draws the cap pays for."""
    if not game.affordable([game.grand, frozenset()]):
        return None
    room = (game.call_budget or 0) - game.evaluator_calls
    count = max(0, min(room + game.coalitions_evaluated, MAX_SAMPLES))  # earlier rounds drew a prefix
    sample, _ = stratified_sample(game, count, seed, trials, uniform_strata)
    if len(sample) == 2 ** game.n_players - game.n_players - 2:  # every middle coalition is read
        reread(game, sample)
    return estimate_s2(game, effects, sample, trials=trials, prefer_full=True).contribution


def reread(game: Game, sample: list[frozenset[str]]) -> None:
    """Once the draws hold every coalition, the calls left re-read them at the game's trials in
    draw order (each re-read is paid in full), so (S2) is Eq. 3 on ever more precise values."""
    todo = [c for c in sample if not game.holds_full(c)]
    n = _longest(lambda m: game.affordable(todo[:m]), len(todo))
    if n:
        game.values(todo[:n])


def _exact(game: Game, effects: Mapping[str, float], seed: int, trials: int | None) -> dict[str, float] | None:
    """Eq. 3 when all 2^K coalitions fit (checked on the count first: 2^K is not enumerated in vain)."""
    room = (game.call_budget or 0) - game.evaluator_calls
    if 2 ** game.n_players - game.n_players - 1 > room:  # ∅ and the middle strata are new at ≥ 1 call each
        return None
    return exact_contribution(game, trials) if game.affordable(all_coalitions(game.players), trials) else None


ESTIMATORS: dict[str, Estimate] = {
    "permutation": _permutation, "stratified": _stratified, "exact": _exact}


def estimate(name: str, game: Game, effects: Mapping[str, float], cap: int, seed: int,
             trials: int | None) -> dict[str, float] | None:
    """ψ̂ from the named estimator with the game's calls capped at ``cap`` (None: nothing fits)."""
    if name.startswith(PREFIX):
        return shapiq_contribution(game, name, max(0, cap - game.evaluator_calls), seed, trials)
    with capped(game, cap):
        return ESTIMATORS[name](game, effects, seed, trials)


# --------------------------------------------------------------------------- screen and verification


def screen_trials(k: int, trials: int, budget: int) -> int:
    """Trials of the LOO coalitions: ``trials`` when M and the K LOO cost ≤ B/2, else one."""
    return trials if (k + 1) * trials <= budget // 2 else 1


def budgeted_loo(game: Game, trials: int) -> dict[str, float]:
    """d_i = v̂(M) − v̂_t(M ∖ {m_i}) (Eq. 7), v̂(M) at the game's trials, the LOO at ``trials``."""
    full = game.grand
    v_full = game.value(full)
    loo = game.values([full - {i} for i in game.players], trials)
    return {i: v_full - loo[k] for k, i in enumerate(game.players)}


@dataclass(frozen=True)
class Round:
    """One ψ̂, its chain, and the verified prefix of the chain (Eq. 14, 16–19)."""

    contribution: dict[str, float]
    harmful: frozenset[str]
    chain: tuple[str, ...]
    # ĝ(0), ĝ(1), …: a chain round's verified prefix ĝ(0) … ĝ(j_B); a block round's every prefix, None
    # where the candidate was not read at the game's trials
    gains: tuple[float | None, ...]
    admissible: tuple[int, ...]  # J: read candidates only
    source: str = "loo"  # which estimate ranked the chain: loo (ψ̂⁰ = d), pair, block or the estimator's name

    def gain(self, j: int) -> float:
        """ĝ(j) of a read candidate."""
        g = self.gains[j]
        if g is None:
            raise ValueError(f"ĝ({j}) of this chain was not read")
        return g

    @property
    def selected(self) -> int:
        """ĵ = min argmax_{j ∈ J} ĝ(j) over the read candidates (Eq. 20)."""
        best = max(self.gain(j) for j in self.admissible)
        return min(j for j in self.admissible if self.gain(j) >= best - EPS)

    @property
    def best_gain(self) -> float:
        return self.gain(self.selected)

    @property
    def in_order(self) -> bool:
        """Whether every candidate up to ĵ was read (a verified prefix: Eq. 20 holds on it)."""
        return all(g is not None for g in self.gains[: self.selected + 1])


def verify(game: Game, psi: Mapping[str, float], tolerance: float, limit: int | None,
           source: str = "loo") -> Round:
    """Verify C_1, C_2, … of ψ̂'s chain at the game's trials while the budget allows (at most
    ``limit`` uncached candidates; None: no limit), stopping at the gain ceiling 1 − v̂(M)."""
    h = harmful(psi, tolerance)
    order = chain(psi, h, game.players)
    full = game.grand
    v_full = game.value(full)
    ceiling = 1.0 - v_full
    gains: list[float | None] = [0.0]
    admissible, fresh = [0], 0
    for j in range(1, len(order) + 1):
        c = full - frozenset(order[:j])
        new = game.cost_of([c]) > 0
        if new and ((limit is not None and fresh >= limit) or not game.affordable([c])):
            break
        fresh += new
        g = game.value(c) - v_full
        gains.append(g)
        if g > EPS and game.recovered(c):
            admissible.append(j)
            if g >= ceiling - EPS:
                break  # no later candidate can gain more; ĵ of Eq. 20 is settled
    return Round(dict(psi), h, order, tuple(gains), tuple(admissible), source)


def at_ceiling(game: Game, r: Round) -> bool:
    return r.selected > 0 and r.best_gain >= 1.0 - game.value(game.grand) - EPS


def best_round(rounds: list[Round]) -> Round:
    """Max verified gain, then the smallest removal, then the latest round."""
    return max(reversed(rounds), key=lambda r: (round(r.best_gain, 9), -r.selected))


# --------------------------------------------------------------------------- the search


def refreshed(game: Game, effects: Mapping[str, float]) -> dict[str, float]:
    """d with every LOO coalition a verification already read at the game's trials read at them."""
    full = game.grand
    out = dict(effects)
    for i in game.players:
        if game.holds_full(full - {i}):
            out[i] = game.value(full) - game.value(full - {i})
    return out


def held_values(game: Game) -> dict[Coalition, float]:
    """v̂ of every coalition this view holds — at the game's trials where it has them, else its
    sampled read — without a call (a verification call is a coalition sample too)."""
    return {c: game.value(c) if game.holds_full(c) else game.values([c], 1)[0] for c in game.seen}


def pair_score(held: Mapping[Coalition, float], full: Coalition, a: str, b: str) -> float | None:
    """How much better the held coalitions that omit both a and b fare than those holding either:
    mean v̂ over non-empty S ∌ a, b minus mean v̂ over S ∋ a or b (S ≠ M); None without both kinds.
    A redundant pair {a, b} (Eq. 8: either sustains the failure) is the pair this separates most."""
    out = [v for c, v in held.items() if c and a not in c and b not in c]
    inn = [v for c, v in held.items() if c != full and (a in c or b in c)]
    return sum(out) / len(out) - sum(inn) / len(inn) if out and inn else None


def best_pair(game: Game, psi: Mapping[str, float]) -> tuple[str, str] | None:
    """The pair {a, b} not yet verified whose :func:`pair_score` on the held samples is largest
    (ties: the smaller ψ̂_a + ψ̂_b, then ψ̂ order); None when no pair is scored."""
    held, full = held_values(game), game.grand
    order = sorted(game.players, key=lambda i: (psi[i], game.players.index(i)))
    best: tuple[str, str] | None = None
    key = (-math.inf, -math.inf)
    for x, a in enumerate(order):
        for b in order[x + 1:]:
            if game.holds_full(full - {a, b}):
                continue
            score = pair_score(held, full, a, b)
            if score is not None and (score, -(psi[a] + psi[b])) > key:
                best, key = (a, b), (score, -(psi[a] + psi[b]))
    return best


def pair_first(game: Game, psi: Mapping[str, float], pair: tuple[str, str]) -> dict[str, float]:
    """ψ̂ with the pair ranked below every other memory, so the chain's C_2 is the pair; its member
    whose LOO coalition is already read at the game's trials comes first (C_1 is then free)."""
    a, b = pair
    if game.holds_full(game.grand - {b}) and not game.holds_full(game.grand - {a}):
        a, b = b, a
    floor = min(0.0, *psi.values()) - 1.0
    return {**psi, a: floor - 1.0, b: floor}


def ranked(game: Game, psi: Mapping[str, float]) -> tuple[str, ...]:
    """The memories by ψ̂ ascending (most harmful first), ties in context order."""
    return tuple(sorted(game.players, key=lambda i: (psi[i], game.players.index(i))))


def block_round(game: Game, psi: Mapping[str, float], blocks: tuple[tuple[str, ...], ...],
                tolerance: float) -> Round:
    """The block search's recovering blocks (nested, largest first) as prefixes of one chain:
    ψ′ = ψ̂ with the smallest block's members below every other memory, then the next larger block's
    other members, and so on (ψ̂ order within each). Every prefix this view holds at the game's trials
    is read — the blocks themselves, and any other the search paid for — at no call; the rest are None."""
    layers: list[str] = []
    for block in reversed(blocks):
        layers += [m for m in block if m not in layers]
    floor = min(0.0, *psi.values()) - tolerance - 1.0 - len(layers)
    lowered = {**psi, **{m: floor + n for n, m in enumerate(layers)}}
    h = harmful(lowered, tolerance)
    order = chain(lowered, h, game.players)
    full = game.grand
    v_full = game.value(full)
    gains: list[float | None] = [0.0]
    admissible = [0]
    for j in range(1, len(order) + 1):
        c = full - frozenset(order[:j])
        if not game.holds_full(c):
            gains.append(None)
            continue
        gains.append(game.value(c) - v_full)
        if game.value(c) - v_full > EPS and game.recovered(c):
            admissible.append(j)
    return Round(lowered, h, order, tuple(gains), tuple(admissible), BLOCK)


def control_variate(game: Game, rounds: list[Round], effects: Mapping[str, float]) -> dict[str, float]:
    """The LOO effects d as the estimator's control variate once some verified candidate is admissible,
    else 0 for every memory: when no removal the rounds so far verified recovers, d explained none of
    the failure (a redundant pair masks both LOO effects, Thm 1) and its one-trial noise only adds
    variance. (S2) stays unbiased either way: f is fixed before the round draws its sample."""
    if any(r.selected > 0 for r in rounds):
        return dict(effects)
    return {i: 0.0 for i in game.players}


def search(game: Game, spec: ClearanceSpec, effects: Mapping[str, float]) -> tuple[list[Round], str]:
    """Rounds 0 … R of the budgeted search (the game's call_budget is B); returns them and the stop.

    Each round after the first estimates with half of the calls left after a reserve for
    verifying :data:`VERIFY_RESERVE` candidates (all of them once the rest is that small), then
    verifies; the rounds end when an estimate buys nothing new, and a last pass verifies the
    best round's chain with whatever is left. With ``after_verified: refine`` a round that reaches
    the ceiling does not end the search: later rounds refine ψ̂ and verify their own chains, and
    :func:`best_round` keeps a ceiling round (the latest one of the smallest removal).
    """
    tol = spec.harm_tolerance
    refine = spec.after_verified == "refine"
    rounds = [verify(game, effects, tol, VERIFY_RESERVE)]
    if at_ceiling(game, rounds[0]) and not refine:
        return rounds, "verified"
    budget = game.call_budget or 0
    reserve = VERIFY_RESERVE * game.trials
    for n in range(MAX_ROUNDS):
        fresh = refreshed(game, effects)  # verification calls as samples: d_i re-read at full trials
        if fresh != effects:  # the LOO ranking changed: verify its chain again (adaptive LOO)
            effects = fresh
            rounds.append(verify(game, effects, tol, VERIFY_RESERVE))
            if at_ceiling(game, rounds[-1]) and not refine:
                return rounds, "verified"
        if n == 0 and spec.block_search and not any(r.selected > 0 for r in rounds):
            # no removal the LOO ranking offers recovers: group-test blocks before estimating
            found = search_blocks(game, ranked(game, effects)).found
            if found:
                rounds.append(block_round(game, effects, found, tol))
                if at_ceiling(game, rounds[-1]) and not refine:
                    return rounds, "verified"
        left = budget - game.evaluator_calls - reserve
        if left <= 0:
            break
        spent = game.evaluator_calls
        half = spent + (left if left <= 2 * reserve else left // 2)
        control = control_variate(game, rounds, effects)
        psi = estimate(spec.estimator, game, control, half, spec.seed, spec.sample_trials or 1)
        if psi is None and half < spent + left:  # half buys nothing (exact, a whole permutation): all of it
            psi = estimate(spec.estimator, game, control, spent + left, spec.seed, spec.sample_trials or 1)
        if psi is None or game.evaluator_calls == spent:
            break
        pair = None if any(r.selected > 0 for r in rounds) else best_pair(game, psi)
        if pair is None:  # a removal recovers already (or no pair is scored): verify ψ̂'s chain
            rounds.append(verify(game, psi, tol, VERIFY_RESERVE, spec.estimator))
        else:  # none recovers yet: verify the pair the held samples point at, early
            rounds.append(verify(game, pair_first(game, psi, pair), tol, VERIFY_RESERVE, "pair"))
        if at_ceiling(game, rounds[-1]) and not refine:
            return rounds, "verified"
    if any(at_ceiling(game, r) for r in rounds):  # refine: the best round already reached the ceiling
        return rounds, "verified"
    last = best_round(rounds)
    rounds.append(verify(game, last.contribution, tol, None, last.source))  # the rest of B on the best chain
    return rounds, "verified" if at_ceiling(game, rounds[-1]) else "budget"


BLOCK = "block"
SOURCES = {"loo": "the LOO effects d (round 0)",
           "pair": "a pair verified early (the held samples' pair score, no removal recovering before)",
           BLOCK: "the block search (recovering blocks of the LOO ranking, shrunk side by side)"}


def stop_label(game: Game, r: Round, stop: str) -> str:
    """``verified`` when the reported removal reached the ceiling with every smaller candidate of its
    chain read (Eq. 20 on that chain, Theorem E (e)); ``block`` when it reached the ceiling from the
    block search, some smaller candidates unread; else ``budget``."""
    if stop != "verified" or not at_ceiling(game, r):
        return "budget"
    return "verified" if r.in_order else BLOCK


def run_budgeted(game: Game, spec: ClearanceSpec) -> ClearancePlan:
    """Algorithm 1 under the hard budget ``spec.call_budget`` (see the module doc)."""
    budget = spec.call_budget or 0
    game.call_budget = budget
    effects = budgeted_loo(game, screen_trials(game.n_players, game.trials, budget))
    rounds, stop = search(game, spec, effects)
    r = best_round(rounds)
    stop = stop_label(game, r, stop)
    removed = r.chain[: r.selected]
    cleared = tuple(m for m in game.players if m not in removed)
    ranking = tuple(sorted(game.players, key=lambda i: (r.contribution[i], game.players.index(i))))
    return ClearancePlan(
        method="meclear", query=game.task.query, context=game.players,
        loo=frozen_map(effects), screen=frozen_map(screen(effects, spec.screen_tolerance)),
        contribution=frozen_map(r.contribution), radius=frozen_map({}), exact=r.source == "exact",
        permutations=0, stop=stop, interaction=(), structure=frozen_map({}),
        harmful=r.chain, chain=r.chain, gains=r.gains + (None,) * (len(r.chain) + 1 - len(r.gains)), admissible=r.admissible, selected=r.selected,
        removed=removed, cleared_context=cleared, baseline_value=game.value(game.grand),
        cleared_value=game.value(cleared), recovered=game.recovered(cleared), ranking=ranking,
        coalitions_evaluated=game.coalitions_evaluated, evaluator_calls=game.evaluator_calls,
        harm_tolerance=spec.harm_tolerance, estimator=r.source,
        notes=(f"budgeted search: {len(rounds)} round(s), B = {budget} calls; the chain is ranked by "
               f"{SOURCES.get(r.source, spec.estimator)}",))
