"""Comparison methods on the same game and cache (paper §Experiments, Table 4).

Each baseline flags a set, removes it without verification, and reports its ranking:

* ``loo`` — flag d_i < −κ (Eq. 7); rank by d.
* ``contextcite`` — B random ablations (each memory kept with probability ½), a sparse linear
  surrogate v̂(S) ≈ b + Σ w_i x_i fitted by lasso (L1 weight α); flag w_i < −τ.
* ``proxyspex`` — the same B ablations, a sparse surrogate with all pairwise terms
  b + Σ w_i x_i + Σ w_ij x_i x_j; each memory's surrogate Shapley value w_i + ½ Σ_j w_ij;
  flag < −τ.
* ``direct`` — the evaluator rates each memory (an LLM judge; offline: query relevance);
  flag rating ≥ threshold.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np

from ..policy.model import ClearanceSpec
from .attribution import loo, screen
from .game import Coalition, Game
from .plan import ClearancePlan, frozen_map

# --------------------------------------------------------------------------- lasso


def lasso(x: np.ndarray, y: np.ndarray, alpha: float, iterations: int = 2000,
          tol: float = 1e-10) -> tuple[np.ndarray, float]:
    """min_w,b (1/2n)‖y − b − Xw‖² + α‖w‖₁ by cyclic coordinate descent; returns (w, b)."""
    n, p = x.shape
    if n == 0:
        return np.zeros(p), 0.0
    x_mean, y_mean = x.mean(axis=0), float(y.mean())
    xc, yc = x - x_mean, y - y_mean
    norms = (xc ** 2).sum(axis=0) / n
    w = np.zeros(p)
    residual = yc.copy()
    for _ in range(iterations):
        largest = 0.0
        for j in range(p):
            if norms[j] <= 0:
                continue
            old = w[j]
            rho = float(xc[:, j] @ residual) / n + norms[j] * old
            new = np.sign(rho) * max(abs(rho) - alpha, 0.0) / norms[j]
            if new != old:
                residual -= xc[:, j] * (new - old)
                w[j] = new
                largest = max(largest, abs(new - old))
        if largest < tol:
            break
    return w, y_mean - float(x_mean @ w)


def ablations(players: Sequence[str], count: int, seed: int) -> list[Coalition]:
    """B random ablation masks: each memory kept independently with probability ½."""
    rng = random.Random(seed)
    return [frozenset(p for p in players if rng.random() < 0.5) for _ in range(count)]


def _design(players: Sequence[str], samples: Sequence[Coalition], pairs: bool) -> np.ndarray:
    cols = [[1.0 if p in s else 0.0 for p in players] for s in samples]
    x = np.array(cols, dtype=float).reshape(len(samples), len(players))
    if pairs:
        inter = [x[:, a] * x[:, b] for a, b in combinations(range(len(players)), 2)]
        if inter:
            x = np.column_stack([x, *inter])
    return x


def contextcite_scores(game: Game, spec: ClearanceSpec) -> dict[str, float]:
    """Lasso weights w_i of the linear surrogate over B ablations."""
    samples = ablations(game.players, spec.baselines.samples, spec.seed)
    y = np.array(game.values(samples))
    w, _ = lasso(_design(game.players, samples, False), y, spec.baselines.lasso_alpha)
    return {p: float(w[k]) for k, p in enumerate(game.players)}


def proxyspex_scores(game: Game, spec: ClearanceSpec) -> dict[str, float]:
    """Surrogate Shapley values w_i + ½ Σ_j w_ij of the pairwise sparse surrogate."""
    samples = ablations(game.players, spec.baselines.samples, spec.seed)
    y = np.array(game.values(samples))
    w, _ = lasso(_design(game.players, samples, True), y, spec.baselines.lasso_alpha)
    k = len(game.players)
    psi = {p: float(w[a]) for a, p in enumerate(game.players)}
    for col, (a, b) in enumerate(combinations(range(k), 2), start=k):
        psi[game.players[a]] += float(w[col]) / 2
        psi[game.players[b]] += float(w[col]) / 2
    return psi


# --------------------------------------------------------------------------- plans


def _plan(method: str, game: Game, scores: Mapping[str, float], flagged: Sequence[str],
          ranking: Sequence[str], effects: Mapping[str, float] | None = None,
          spec: ClearanceSpec | None = None) -> ClearancePlan:
    baseline = game.value(game.grand)
    removed = tuple(flagged)
    cleared = tuple(m for m in game.players if m not in removed)
    cleared_value = game.value(cleared)
    gain = cleared_value - baseline
    profile = screen(effects, spec.screen_tolerance) if effects is not None and spec else {}
    return ClearancePlan(
        method=method, query=game.task.query, context=game.players,
        loo=frozen_map(effects or {}), screen=frozen_map(profile),
        contribution=frozen_map(scores), radius=frozen_map({}), exact=False, permutations=0,
        stop="n/a", interaction=(), structure=frozen_map({}), harmful=removed, chain=removed,
        gains=(0.0, gain) if removed else (0.0,), admissible=(), selected=len(removed),
        removed=removed, cleared_context=cleared, baseline_value=baseline,
        cleared_value=cleared_value, recovered=game.recovered(cleared), ranking=tuple(ranking),
        coalitions_evaluated=game.coalitions_evaluated, evaluator_calls=game.evaluator_calls)


def _ascending(game: Game, scores: Mapping[str, float]) -> list[str]:
    return sorted(game.players, key=lambda i: (scores[i], game.players.index(i)))


def run_loo(game: Game, spec: ClearanceSpec) -> ClearancePlan:
    """LOO baseline: remove every memory with d_i < −κ."""
    d = loo(game)
    ranking = _ascending(game, d)
    flagged = [i for i in ranking if d[i] < -spec.screen_tolerance]
    return _plan("loo", game, d, flagged, ranking, d, spec)


def run_contextcite(game: Game, spec: ClearanceSpec) -> ClearancePlan:
    """ContextCite-style baseline: remove every memory with surrogate weight w_i < −τ."""
    w = contextcite_scores(game, spec)
    ranking = _ascending(game, w)
    return _plan("contextcite", game, w, [i for i in ranking if w[i] < -spec.harm_tolerance], ranking)


def run_proxyspex(game: Game, spec: ClearanceSpec) -> ClearancePlan:
    """ProxySPEX-style baseline: remove every memory with surrogate Shapley value < −τ."""
    psi = proxyspex_scores(game, spec)
    ranking = _ascending(game, psi)
    return _plan("proxyspex", game, psi, [i for i in ranking if psi[i] < -spec.harm_tolerance], ranking)


def run_direct(game: Game, spec: ClearanceSpec) -> ClearancePlan:
    """Direct flagging: the evaluator rates each memory; remove ratings ≥ threshold."""
    rating = {i: game.rate(i) for i in game.players}
    ranking = sorted(game.players, key=lambda i: (-rating[i], game.players.index(i)))
    flagged = [i for i in ranking if rating[i] >= spec.baselines.direct_threshold]
    return _plan("direct", game, rating, flagged, ranking)
