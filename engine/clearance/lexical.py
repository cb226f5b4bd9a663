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

NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty".split())}
NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100",
                     "once": "1", "twice": "2", "first": "1st", "second": "2nd", "third": "3rd"})
POLAR = {"yes": "yes", "yeah": "yes", "yep": "yes", "correct": "yes", "true": "yes",
         "no": "no", "nope": "no", "false": "no", "never": "no"}


def tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens."""
    return _TOKEN.findall(text.lower())


def content_tokens(text: str) -> list[str]:
    """Tokens without stopwords."""
    return [t for t in tokens(text) if t not in STOPWORDS]


def _f1(pred: Counter[str], ref: Counter[str]) -> float:
    common = sum((pred & ref).values())
    if common == 0:
        return 0.0
    precision = common / sum(pred.values())
    recall = common / sum(ref.values())
    return 2 * precision * recall / (precision + recall)


def _numbers(toks: list[str]) -> Counter[str]:
    """Token counts with number words read as digits (``three`` ≡ ``3``, ``second`` ≡ ``2nd``)."""
    return Counter(NUMBER_WORDS.get(t, t) for t in toks)


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD-style token F1 over content tokens, number words read as digits; 0.0 when either
    side has no content token (two contentless texts do not agree by default)."""
    return _f1(_numbers(content_tokens(prediction)), _numbers(content_tokens(reference)))


def polarity(text: str) -> str | None:
    """``yes`` / ``no`` from the first polar word of a text (None: it takes no side)."""
    for t in tokens(text):
        if t in POLAR:
            return POLAR[t]
    return None


def judge_score(answer: str, reference: str) -> float:
    """The lexical judge's agreement of ``answer`` with ``reference`` in [0, 1]:

    * a reference with content words: :func:`token_f1`;
    * a yes/no reference (no content word, a polar word): 1.0 iff the answer's first polar word
      has the same polarity, else 0.0;
    * any other reference without content words (``"not at all"``): F1 over all tokens.

    An answer without a single token scores 0.0 whatever the reference.
    """
    if not tokens(answer):
        return 0.0
    if content_tokens(reference):
        return token_f1(answer, reference)
    side = polarity(reference)
    if side is not None:
        return 1.0 if polarity(answer) == side else 0.0
    return _f1(Counter(tokens(answer)), Counter(tokens(reference)))


def relevance(text: str, query: str) -> float:
    """Share of the query's content words that occur in the text (in [0, 1])."""
    q = set(content_tokens(query))
    if not q:
        return 0.0
    return len(q & set(content_tokens(text))) / len(q)


def lexical_judge(answer: str, reference: str, threshold: float) -> float:
    """r_t(y) ∈ {0, 1} (Eq. 2): 1.0 when :func:`judge_score` ≥ ``threshold`` and > 0, else 0.0
    (so an empty answer, or one sharing nothing with the reference, is never correct)."""
    score = judge_score(answer, reference)
    return 1.0 if score > 0.0 and score >= threshold else 0.0
