"""shapiq's Shapley-value approximators playing memsteward's cached clearance game.

shapiq (Muschalik et al., 2024; the optional ``shapiq`` extra) maintains budgeted approximators
of the Shapley value ψ (Eq. 3) behind one ``Game`` interface: KernelSHAP (Lundberg & Lee 2017),
its unbiased variant, k-additive KernelSHAP, SVARM, permutation, Owen and stratified sampling.
:class:`CachedGame` is that interface over :meth:`memsteward.clearance.game.Game.values`, so

* every coalition shapiq asks for goes through memsteward's one cache: a coalition the LOO screen,
  another estimator or a verified candidate already paid for is free, and none is paid twice;
* shapiq's ``budget`` counts the coalitions it asks for, and each costs at most ``trials`` calls,
  so ``budget = ⌊calls / trials⌋`` never spends more than ``calls`` evaluator calls;
* the game is not normalised (shapiq sees v̂ itself, v̂(∅) included), so ψ̂ estimates the Shapley
  value of the cached game v̂, the same target as the paper's estimators.

The library was chosen because it is the maintained reference implementation of these
approximators (the same anchor STYLE.md reads); memsteward's own estimators stay the default.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import InputError
from ..policy.model import SHAPIQ_ESTIMATORS
from .game import Game

PREFIX = "shapiq:"


def approximator_name(estimator: str) -> str:
    """``shapiq:KernelSHAP`` → ``KernelSHAP`` (one of :data:`SHAPIQ_ESTIMATORS`)."""
    name = estimator.removeprefix(PREFIX)
    if not estimator.startswith(PREFIX) or name not in SHAPIQ_ESTIMATORS:
        raise ValueError(f"not a shapiq estimator: {estimator!r}")
    return name


def _shapiq() -> Any:
    try:
        return importlib.import_module("shapiq")
    except ImportError:
        raise InputError("the shapiq estimators need the optional extra: pip install 'memsteward[shapiq]'",
                         field="clearance.estimator") from None


@functools.cache
def _cached_game_class() -> type:
    """The ``shapiq.Game`` subclass, defined once per process (not once per estimation round)."""
    shapiq = _shapiq()

    class CachedGame(shapiq.Game):  # type: ignore[misc, name-defined]
        """v̂ over boolean coalition rows (column k is memory ``players[k]``)."""

        def __init__(self, game: Game, trials: int | None) -> None:
            self.clearance_game, self.trials = game, trials
            super().__init__(n_players=game.n_players, normalize=False)

        def value_function(self, coalitions: np.ndarray) -> np.ndarray:
            game = self.clearance_game
            rows = np.asarray(coalitions, dtype=bool).reshape(-1, game.n_players)
            members = [frozenset(game.players[k] for k in np.flatnonzero(row)) for row in rows]
            return np.asarray(game.values(members, self.trials), dtype=float)

    return CachedGame


def cached_game(game: Game, trials: int | None = None) -> Any:
    """A ``shapiq.Game`` whose value function reads ``game.values`` (cached, accounted)."""
    return _cached_game_class()(game, trials)


@functools.cache
def _blas() -> Any:
    """One thread-pool controller per process (building one scans the loaded libraries, ≈ 7 ms)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def shapiq_contribution(game: Game, estimator: str, calls: int, seed: int,
                        trials: int | None = None) -> dict[str, float] | None:
    """ψ̂ from one shapiq approximator spending at most ``calls`` new evaluator calls.

    Returns ``None`` when the allowance buys fewer than two coalitions (no approximator runs).
    """
    name = approximator_name(estimator)
    per = max(min(trials or game.trials, game.trials), 1)
    if calls // per < 2 or game.n_players < 2:
        return None
    return _approximate(game, name, calls // per, seed, trials)


def _approximate(game: Game, name: str, budget: int, seed: int, trials: int | None) -> dict[str, float]:
    cls = getattr(importlib.import_module("shapiq.approximator"), name)
    kwargs: dict[str, Any] = {"n": game.n_players, "random_state": seed % (2 ** 32)}
    if name == "kADDSHAP":
        kwargs["max_order"] = 2
    # one BLAS thread: the regressions are ≤ a few hundred unknowns, where a thread pool only adds
    # synchronisation (kADDSHAP at K = 20, B = 64: 0.56 → 0.07 ms of engine time per call, measured)
    with warnings.catch_warnings(), _blas().limit(limits=1, user_api="blas"):
        warnings.simplefilter("ignore", UserWarning)  # "not all budget is required due to the border-trick"
        values = cls(**kwargs).approximate(budget=budget, game=cached_game(game, trials))
    return {p: float(values[(k,)]) for k, p in enumerate(game.players)}


def fallback(effects: Mapping[str, float]) -> dict[str, float]:
    """ψ̂⁰ = d: the Shapley value of the additive LOO surrogate, when no sample fits."""
    return dict(effects)
