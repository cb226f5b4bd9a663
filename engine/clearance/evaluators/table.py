"""The ``table`` evaluator: an explicit game, one value (or per-trial outcomes) per coalition.

Keys are coalition keys (sorted ids joined by commas, ``""`` for ∅). v̂(S) is the stored
value, or the mean of the stored trial outcomes. A coalition the table lacks is bad input
and the error names it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...errors import InputError
from ..game import Coalition, Evaluation, Memory, Task, coalition_key
from ..lexical import relevance


class TableEvaluator:
    """Explicit game v̂ given as a table (values or per-trial 0/1 outcomes)."""

    def __init__(self, values: Mapping[Coalition, float] | None = None,
                 outcomes: Mapping[Coalition, Sequence[float]] | None = None,
                 source: str = "<case>") -> None:
        self.values = dict(values or {})
        self.outcomes = {c: tuple(float(x) for x in o) for c, o in (outcomes or {}).items()}
        self.source = source

    def evaluate(self, task: Task, coalitions: Sequence[Coalition], trials: int,
                 seed: int) -> list[Evaluation]:
        return [self._one(c, trials) for c in coalitions]

    def _one(self, coalition: Coalition, trials: int) -> Evaluation:
        if coalition in self.outcomes:
            scores = self.outcomes[coalition]
            return Evaluation(scores, len(scores))
        if coalition in self.values:
            return Evaluation((self.values[coalition],) * trials, trials)
        key = coalition_key(coalition)
        raise InputError(f"the game table has no value for coalition '{key}'",
                         file=self.source, field="game.values")

    def rate(self, task: Task, memory: Memory) -> tuple[float, int]:
        """Direct-flagging heuristic: ``meta.relevance`` or lexical relevance to the query."""
        return relevance_rating(task, memory), 1


def relevance_rating(task: Task, memory: Memory) -> float:
    """The offline stand-in for an LLM's harm rating: how query-similar the memory is."""
    r = memory.meta.get("relevance") if memory.meta else None
    if isinstance(r, (int, float)) and not isinstance(r, bool):
        return min(1.0, max(0.0, float(r)))
    return relevance(memory.text, task.query)
