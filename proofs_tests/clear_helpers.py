"""Helpers for the clearance tests: explicit table games from a value function."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations

from memsteward.clearance.evaluators import TableEvaluator
from memsteward.clearance.game import Coalition, Evaluation, Game, Memory, Task
from memsteward.policy.model import ClearanceSpec


def all_subsets(ids: Sequence[str]) -> list[Coalition]:
    return [frozenset(c) for r in range(len(ids) + 1) for c in combinations(ids, r)]


def dyadic_table(ids: Sequence[str], seed: int) -> dict[Coalition, float]:
    """A value per coalition, a multiple of 1/64 (exact in binary), pseudo-random but fixed by ``seed``."""
    out = {}
    x = seed * 2654435761 % 2**32
    for c in all_subsets(ids):
        x = (1103515245 * x + 12345) % 2**31
        out[c] = (x % 65) / 64
    return out


def table_game(ids: Sequence[str], fn: Callable[[Coalition], float], trials: int = 2,
               **kwargs) -> Game:
    values = {s: fn(s) for s in all_subsets(ids)}
    task = Task("q", "r", tuple(Memory(i, f"memory {i}") for i in ids))
    return Game(task, CountingEvaluator(TableEvaluator(values)), trials=trials, **kwargs)


class CountingEvaluator:
    """Wraps an evaluator and records every coalition it is asked about."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.asked: list[Coalition] = []

    def evaluate(self, task, coalitions, trials, seed) -> list[Evaluation]:
        self.asked.extend(coalitions)
        return self.inner.evaluate(task, coalitions, trials, seed)

    def rate(self, task, memory):
        return self.inner.rate(task, memory)


def spec(**kw) -> ClearanceSpec:
    return ClearanceSpec(**kw)
