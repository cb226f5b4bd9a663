"""The ``offline`` evaluator: a deterministic text agent and the lexical judge, no network.

The agent answers with the claim supported by the most memories of the coalition, ties broken
by relevance to the query. A memory's *claim* is its content words that are not in the query;
memories whose claims overlap (token-F1 ≥ 0.5) support the same claim. This small rule shows
the paper's three behaviours on text:

* direct    — a fault more relevant than the gold memory wins the 1–1 tie;
* redundant — two paraphrased faults out-vote the gold memory, and removing one still leaves a
  more relevant fault winning the tie (LOO sees d = 0 for both: Theorem 1);
* joint     — two less relevant faults each lose to the gold memory alone, but out-vote it
  together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..game import Coalition, Evaluation, Memory, Task
from ..lexical import content_tokens, lexical_judge, relevance, token_f1
from .table import relevance_rating

CLAIM_OVERLAP = 0.5


@dataclass
class _Claim:
    text: str
    support: int
    relevance: float
    first: int


def offline_answer(query: str, memories: Sequence[Memory]) -> str:
    """The deterministic agent's answer to ``query`` from ``memories`` ("" if none bears on it).

    Claims come from the memories relevant to the query (sharing a content word with it); a
    memory that shares no word with the query still *supports* a claim it restates (claim
    overlap ≥ ``CLAIM_OVERLAP``), so a paraphrase worded apart from the question counts, but it
    never introduces a claim of its own."""
    q = set(content_tokens(query))
    claims: list[_Claim] = []
    restating: list[str] = []
    for index, m in enumerate(memories):
        rel = relevance(m.text, query)
        claim = " ".join(t for t in content_tokens(m.text) if t not in q)
        if not claim:
            continue
        if rel <= 0:
            restating.append(claim)
            continue
        match = _matching(claims, claim)
        if match is None:
            claims.append(_Claim(claim, 1, rel, index))
            continue
        match.support += 1
        if rel > match.relevance:
            match.relevance, match.text = rel, claim
    for claim in restating:
        match = _matching(claims, claim)
        if match is not None:
            match.support += 1
    if not claims:
        return ""
    best = max(claims, key=lambda c: (c.support, c.relevance, -c.first))
    return best.text


def _matching(claims: Sequence[_Claim], claim: str) -> _Claim | None:
    """The first claim ``claim`` restates (token F1 ≥ ``CLAIM_OVERLAP``), if any."""
    return next((c for c in claims if token_f1(claim, c.text) >= CLAIM_OVERLAP), None)


class OfflineEvaluator:
    """Offline agent + lexical judge; deterministic, so every trial agrees."""

    def __init__(self, lexical_threshold: float = 0.5) -> None:
        self.threshold = lexical_threshold

    def evaluate(self, task: Task, coalitions: Sequence[Coalition], trials: int,
                 seed: int) -> list[Evaluation]:
        out = []
        for c in coalitions:
            answer = offline_answer(task.query, task.memories(c))
            score = lexical_judge(answer, task.reference, self.threshold)
            out.append(Evaluation((score,) * trials, trials))
        return out

    def rate(self, task: Task, memory: Memory) -> tuple[float, int]:
        """Relevance heuristic standing in for the direct LLM rating."""
        return relevance_rating(task, memory), 1
