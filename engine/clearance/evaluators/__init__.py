"""Evaluators (agent + judge) behind one interface: table, synthetic, offline, openai."""

from __future__ import annotations

from ...archive import Archive
from ...policy.model import Evaluator as EvaluatorSpec
from ..game import Evaluator
from .offline import OfflineEvaluator, offline_answer
from .synthetic import STRUCTURES, Harm, SyntheticEvaluator, SyntheticGame
from .table import TableEvaluator


def from_policy(spec: EvaluatorSpec, archive: Archive | None = None) -> Evaluator:
    """The evaluator a policy's ``clearance.evaluator`` block declares (offline or openai); an
    ``archive`` serves and keeps the openai evaluator's replies (the offline one makes no calls)."""
    if spec.type == "openai":
        from .openai_eval import OpenAIEvaluator

        assert spec.endpoint is not None  # the policy model enforces it
        return OpenAIEvaluator(spec.endpoint, judge=spec.judge, lexical_threshold=spec.lexical_threshold,
                               archive=archive)
    return OfflineEvaluator(spec.lexical_threshold)


__all__ = ["STRUCTURES", "Harm", "OfflineEvaluator", "SyntheticEvaluator", "SyntheticGame",
           "TableEvaluator", "from_policy", "offline_answer"]
