"""Lexical text utilities shared by the offline agent, the lexical judge and retrieval."""

from __future__ import annotations

import re
from collections import Counter

STOPWORDS = frozenset("""
a an the and or but if of to in on at by for with from as into about over after before
is are was were be been being am do does did done has have had having this that these those
it its it's he she they them their his her him we us our you your i me my mine what which
who whom whose when where why how did does not no yes so than then there here also just
very can could would should will shall may might must any some all each every both either s
""".split())

_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens."""
    return _TOKEN.findall(text.lower())


def content_tokens(text: str) -> list[str]:
    """Tokens without stopwords."""
    return [t for t in tokens(text) if t not in STOPWORDS]


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD-style token F1 over content tokens (the lexical judge's score)."""
    pred, ref = Counter(content_tokens(prediction)), Counter(content_tokens(reference))
    if not pred or not ref:
        return 1.0 if not pred and not ref else 0.0
    common = sum((pred & ref).values())
    if common == 0:
        return 0.0
    precision = common / sum(pred.values())
    recall = common / sum(ref.values())
    return 2 * precision * recall / (precision + recall)


def relevance(text: str, query: str) -> float:
    """Share of the query's content words that occur in the text (in [0, 1])."""
    q = set(content_tokens(query))
    if not q:
        return 0.0
    return len(q & set(content_tokens(text))) / len(q)


def lexical_judge(answer: str, reference: str, threshold: float) -> float:
    """1.0 when token-F1(answer, reference) ≥ threshold, else 0.0 (r_t(y) ∈ {0, 1}, Eq. 2)."""
    return 1.0 if token_f1(answer, reference) >= threshold else 0.0
