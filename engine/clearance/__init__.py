"""MeClear: query-scoped clearance of harmful memories (the MeClear paper, Algorithm 1).

Pipeline: freeze the context M_t → the cached game v̂ (:mod:`.game`) → LOO screening with κ
and Shapley attribution ψ (:mod:`.attribution`) → harmful set, nested chain, verified
selection ĵ (:mod:`.selection`) → a :class:`~.plan.ClearancePlan`. The memory bank is never
modified.
"""

from .game import Coalition, Evaluation, Game, Memory, OutcomeStore, Task, coalition_key

__all__ = ["Coalition", "Evaluation", "Game", "Memory", "OutcomeStore", "Task", "coalition_key"]
