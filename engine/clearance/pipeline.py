"""MeClear end to end on one game (Algorithm 1, lines 2–17).

Freeze M_t (the game) → v̂(M_t) → LOO d_i and the κ profile (Eq. 7) → ψ (exact Eq. 3 or
sampled Eq. 11, or adaptive) → ω for harmful pairs (Eq. 15) → Ĥ, chain, gains, J, ĵ
(Eq. 14, 16–20) → :class:`ClearancePlan`. Every coalition goes through the one game cache,
so LOO, attribution, interactions and verification never evaluate a coalition twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations

from ..policy.model import ClearanceSpec
from .adaptive import decision_attribution
from .attribution import (
    Attribution,
    all_coalitions,
    diagnose_pair,
    expected_distinct_coalitions,
    fixed_attribution,
    interaction,
    interaction_coalitions,
    loo,
    permutations_needed,
    screen,
    use_exact,
)
from .game import Game
from .plan import ClearancePlan, PairInteraction, frozen_map
from .selection import clearance
from .stratified import stratified_attribution


def attribute(game: Game, spec: ClearanceSpec, effects: Mapping[str, float]) -> Attribution:
    """Line 5 of Algorithm 1 under the policy: exact, fixed-L sampled (Eq. 11 or S2), or adaptive."""
    k = game.n_players
    exact = use_exact(k, spec.permutations, spec.exact, spec.exact_premium, game.trials, spec.sample_trials)
    if exact and spec.exact == "auto" and not game.affordable(all_coalitions(game.players), spec.sample_trials):
        exact = False  # auto never enumerates past the call budget
    if exact:
        return fixed_attribution(game, spec.permutations, spec.seed, True, spec.confidence, spec.sample_trials)
    if spec.adaptive.enabled:
        return decision_attribution(
            game, spec.harm_tolerance, seed=spec.seed, start=spec.permutations,
            batch=spec.adaptive.batch, max_permutations=max(spec.adaptive.max_permutations, 1),
            confidence=spec.confidence, bound=spec.adaptive.bound, trials=spec.sample_trials)
    if spec.estimator == "stratified":
        return stratified_attribution(game, effects, spec.permutations, spec.seed, spec.confidence,
                                      spec.sample_trials)
    if spec.estimator == "exact":
        return fixed_attribution(game, spec.permutations, spec.seed, True, spec.confidence, spec.sample_trials)
    if spec.estimator.startswith("shapiq:"):
        return shapiq_attribution(game, spec, effects)
    return fixed_attribution(game, spec.permutations, spec.seed, False, spec.confidence, spec.sample_trials)


def shapiq_attribution(game: Game, spec: ClearanceSpec, effects: Mapping[str, float]) -> Attribution:
    """A shapiq approximator at the cost of L permutations' expected distinct coalitions (capped by
    the call budget); ψ̂⁰ = d when not even two coalitions fit."""
    from .shapiq_games import shapiq_contribution

    per = min(spec.sample_trials or game.trials, game.trials)
    calls = round(expected_distinct_coalitions(game.n_players, spec.permutations)) * per
    if game.call_budget is not None:
        calls = min(calls, max(0, game.call_budget - game.evaluator_calls))
    psi = shapiq_contribution(game, spec.estimator, calls, spec.seed, spec.sample_trials)
    stop = "fixed" if psi is not None else "budget"
    return Attribution(psi if psi is not None else dict(effects), False, 0, {}, stop, estimator=spec.estimator)


def interactions(game: Game, spec: ClearanceSpec, att: Attribution,
                 harmful_set: frozenset[str]) -> tuple[PairInteraction, ...]:
    """ω_ij and the structural diagnosis for the pairs the policy asks for (Eq. 15)."""
    if spec.interactions == "none" or (not att.exact and not att.sample):
        return ()
    members = game.players if spec.interactions == "all" else [p for p in game.players if p in harmful_set]
    sample = None if att.exact else list(att.sample)
    out = []
    for i, j in combinations(members, 2):
        if not game.affordable(interaction_coalitions(game, i, j, sample), spec.sample_trials):
            continue  # diagnostics only (App. C): never spend beyond the call budget on ω
        omega = interaction(game, i, j, sample, spec.sample_trials)  # read like ψ was
        out.append(PairInteraction((i, j), omega, diagnose_pair(omega, spec.harm_tolerance)))
    return tuple(out)


def structures(harmful_set: frozenset[str], pairs: tuple[PairInteraction, ...]) -> dict[str, str]:
    """Per harmful memory: redundant / joint if it is in such a harmful pair, else direct."""
    out = {}
    for m in sorted(harmful_set):
        kinds = {p.structure for p in pairs if m in p.pair and set(p.pair) <= harmful_set}
        out[m] = "redundant" if "redundant" in kinds else "joint" if "joint" in kinds else "direct"
    return out


def run_meclear(game: Game, spec: ClearanceSpec) -> ClearancePlan:
    """Algorithm 1 on a frozen context: the verified, query-scoped ClearancePlan
    (``search: budgeted``: under one hard call budget, :mod:`memsteward.clearance.budgeted`)."""
    if spec.search == "budgeted":
        from .budgeted import run_budgeted

        return run_budgeted(game, spec)
    baseline = game.value(game.grand)  # line 2
    effects = loo(game)  # line 3
    profile = screen(effects, spec.screen_tolerance)  # line 4
    att = attribute(game, spec, effects)  # line 5
    sel = clearance(game, att.contribution, spec.harm_tolerance)  # lines 6-16
    pairs = interactions(game, spec, att, sel.harmful)
    removed = sel.removed
    cleared = tuple(m for m in game.players if m not in removed)  # line 17
    cleared_value = game.value(cleared)
    ranking = tuple(sorted(game.players, key=lambda i: (att.contribution[i], game.players.index(i))))
    # v̂(∅) is known whenever attribution ran (every permutation and the exact game start at ∅);
    # it is reported for the efficiency certificate, never evaluated just for it — and only for
    # estimators that satisfy G1 on the full-trial values (not targeted adaptive sampling, nor
    # permutations read at fewer trials: their Σψ̂ is v̂_t(M) − v̂_t(∅) of the t-trial game).
    partial = spec.sample_trials is not None and spec.sample_trials < game.trials
    efficient = att.estimator == "stratified" or (att.estimator in ("exact", "permutation") and not partial)
    empty_value = game.value(()) if efficient and frozenset() in game.seen else None
    return ClearancePlan(
        method="meclear", query=game.task.query, context=game.players,
        loo=frozen_map(effects), screen=frozen_map(profile),
        contribution=frozen_map(att.contribution), radius=frozen_map(att.radius),
        exact=att.exact, permutations=att.permutations, stop=att.stop,
        interaction=pairs, structure=frozen_map(structures(sel.harmful, pairs)),
        harmful=sel.chain, chain=sel.chain, gains=sel.gains, admissible=sel.admissible,
        selected=sel.selected, removed=removed, cleared_context=cleared,
        baseline_value=baseline, cleared_value=cleared_value,
        recovered=game.recovered(cleared), ranking=ranking,
        coalitions_evaluated=game.coalitions_evaluated, evaluator_calls=game.evaluator_calls,
        permutations_needed=permutations_needed(att.contribution, spec.harm_tolerance, spec.confidence),
        empty_value=empty_value, harm_tolerance=spec.harm_tolerance, estimator=att.estimator,
        samples=att.samples)


METHODS = ("meclear", "loo", "contextcite", "proxyspex", "direct")


def run_method(method: str, game: Game, spec: ClearanceSpec) -> ClearancePlan:
    """Run one clearance method on a game (all share the game's cache)."""
    from . import baselines

    runners = {"meclear": run_meclear, "loo": baselines.run_loo,
               "contextcite": baselines.run_contextcite, "proxyspex": baselines.run_proxyspex,
               "direct": baselines.run_direct}
    if method not in runners:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    return runners[method](game, spec)
