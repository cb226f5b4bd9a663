"""The ``synthetic`` evaluator: parametric games with known harmful sets.

The probability that a trial is correct under coalition S is

    p(S) = clip( min(1, base + Σ_{b ∈ S} support_b) − Σ_h Δ_h · active_h(S), 0, 1 )

with beneficial memories (``support`` weights), neutral background (weight 0) and harms of
the paper's three structures (Appendix D.1):

* ``direct``    — active when its member is present (|M| = 1);
* ``redundant`` — active when *any* member is present (Eq. 8 / Eq. 31, Cor. A.1): each fault
  alone sustains the failure, so each masks the other's LOO effect;
* ``joint``     — active only when *all* members are present (each harmless alone).

A trial's score is Bernoulli(p(S)) drawn from a seed derived from (seed, coalition, trial),
flipped with probability ``noise``; the same coalition always gets the same outcomes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..game import Coalition, Evaluation, Memory, Task, coalition_key
from .table import relevance_rating

Structure = Literal["direct", "redundant", "joint"]
STRUCTURES: tuple[str, ...] = ("direct", "redundant", "joint")


@dataclass(frozen=True)
class Harm:
    """One harmful group of a known structure with penalty Δ (Eq. 8)."""

    structure: Structure
    members: tuple[str, ...]
    delta: float = 1.0

    def active(self, coalition: Coalition) -> float:
        """How many times the penalty applies to S."""
        present = [m in coalition for m in self.members]
        if self.structure == "redundant":
            return 1.0 if any(present) else 0.0
        if self.structure == "joint":
            return 1.0 if all(present) else 0.0
        return float(sum(present))


@dataclass(frozen=True)
class SyntheticGame:
    """Parameters of a synthetic game."""

    base: float = 0.0
    support: dict[str, float] = field(default_factory=dict)
    harms: tuple[Harm, ...] = ()
    noise: float = 0.0
    salt: str = ""  # per-case salt, so equal ids in different cases draw independent noise

    def probability(self, coalition: Coalition) -> float:
        """p(S), the expected trial score."""
        good = min(1.0, self.base + sum(w for m, w in self.support.items() if m in coalition))
        bad = sum(h.delta * h.active(coalition) for h in self.harms)
        return min(1.0, max(0.0, good - bad))

    @property
    def faults(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m for h in self.harms for m in h.members))


def _uniform(seed: int, key: str, trial: int, salt: str) -> float:
    digest = hashlib.sha256(f"{seed}|{key}|{trial}|{salt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


class SyntheticEvaluator:
    """Evaluates coalitions of a :class:`SyntheticGame` with seeded trial noise."""

    def __init__(self, game: SyntheticGame) -> None:
        self.game = game

    def evaluate(self, task: Task, coalitions: Sequence[Coalition], trials: int,
                 seed: int) -> list[Evaluation]:
        return [Evaluation(self.scores(c, trials, seed), trials) for c in coalitions]

    def scores(self, coalition: Coalition, trials: int, seed: int) -> tuple[float, ...]:
        p = self.game.probability(coalition)
        key = self.game.salt + "|" + coalition_key(coalition)
        out = []
        for t in range(trials):
            correct = _uniform(seed, key, t, "p") < p
            if self.game.noise > 0 and _uniform(seed, key, t, "noise") < self.game.noise:
                correct = not correct
            out.append(1.0 if correct else 0.0)
        return tuple(out)

    def rate(self, task: Task, memory: Memory) -> tuple[float, int]:
        return relevance_rating(task, memory), 1
