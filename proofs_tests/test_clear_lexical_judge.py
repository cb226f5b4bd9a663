"""The lexical judge (Eq. 2's r_t): no answer is correct by default (issue 13 item 5).

Properties over generated answer/reference pairs, each checked against a second, independent
implementation of token F1 (lists and explicit removal instead of Counters) or a hand rule.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memsteward.clearance.lexical import STOPWORDS, judge_score, lexical_judge, token_f1

CONTENT = ["paris", "london", "trumpet", "violin", "2022", "3", "three", "may", "7", "dog"]
FUNCTION = ["the", "a", "in", "she", "did", "not", "it", "to"]
POLAR = ["yes", "no"]
PUNCT = ["", " ", ",", ".", "!", "?", "...", "--"]
WORDS = CONTENT + FUNCTION + POLAR + PUNCT
NUMBER = {"three": "3"}

texts = st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join)
nonempty = st.lists(st.sampled_from(CONTENT + FUNCTION + POLAR), min_size=1, max_size=6).map(" ".join)


def words(text: str) -> list[str]:
    out, cur = [], ""
    for ch in text.lower() + " ":
        if ch.isascii() and ch.isalnum():
            cur += ch
        elif cur:
            out.append(cur)
            cur = ""
    return out


def reference_f1(pred: list[str], ref: list[str]) -> float:
    """F1 by explicit multiset matching (a second implementation)."""
    if not pred or not ref:
        return 0.0
    left = list(ref)
    common = 0
    for t in pred:
        if t in left:
            left.remove(t)
            common += 1
    if not common:
        return 0.0
    p, r = common / len(pred), common / len(ref)
    return 2 * p * r / (p + r)


def content(text: str) -> list[str]:
    return [NUMBER.get(t, t) for t in words(text) if t not in STOPWORDS]


def test_the_quoted_failures():
    assert lexical_judge("no", "yes", 0.5) == 0.0
    assert lexical_judge("", "yes", 0.5) == 0.0
    assert lexical_judge("yes", "yes", 0.5) == 1.0
    assert lexical_judge("Yes, she did.", "yes", 0.5) == 1.0
    assert lexical_judge("No, never.", "no", 0.5) == 1.0
    assert lexical_judge("three times", "3 times", 0.5) == 1.0
    assert lexical_judge("May 7, 2022", "7 May 2022", 0.5) == 1.0
    assert lexical_judge("at all not", "not at all", 0.5) == 1.0


@given(st.lists(st.sampled_from(PUNCT), max_size=5).map(" ".join), nonempty, st.floats(0, 1))
def test_an_answer_without_words_is_never_correct(answer, reference, threshold):
    assert lexical_judge(answer, reference, threshold) == 0.0


@given(nonempty)
def test_the_reference_itself_is_correct(reference):
    assert lexical_judge(reference, reference, 1.0) == 1.0


@given(texts, texts)
def test_score_is_token_f1_on_content_references(answer, reference):
    score = judge_score(answer, reference)
    assert 0.0 <= score <= 1.0
    if content(reference):
        expect = reference_f1(content(answer), content(reference)) if words(answer) else 0.0
        assert abs(score - expect) < 1e-12


@given(texts, st.sampled_from(POLAR), st.lists(st.sampled_from(FUNCTION + PUNCT), max_size=3).map(" ".join))
def test_yes_no_references_compare_polarity(answer, side, filler):
    reference = f"{side} {filler}"
    first = next((w for w in words(answer) if w in POLAR), None)
    assert lexical_judge(answer, reference, 0.5) == (1.0 if first == side else 0.0)


@given(texts, texts)
def test_disjoint_content_scores_zero(answer, reference):
    if content(reference) and not set(content(answer)) & set(content(reference)):
        assert lexical_judge(answer, reference, 0.0) == 0.0
    assert token_f1(answer, reference) == token_f1(reference, answer)  # F1 is symmetric
