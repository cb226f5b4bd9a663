"""The offline agent (memsteward.clearance.evaluators.offline): a paraphrase worded apart from the
query supports the claim it restates, so the redundant structure forms on text (issue 13)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memsteward.clearance.evaluators.offline import offline_answer
from memsteward.clearance.game import Memory
from memsteward.clearance.lexical import content_tokens, relevance

QUERY = "Which city has Jonas moved to?"
GOLD = Memory("gold", "Jonas moved to Bergen.")
FAULT = Memory("fault", "Jonas moved to Oslo.")
PARAPHRASE = Memory("para", "He lives in Oslo.")  # shares no word with the query


def test_a_paraphrase_sharing_no_query_word_supports_its_claim():
    assert relevance(PARAPHRASE.text, QUERY) == 0
    assert offline_answer(QUERY, [GOLD, FAULT]) == "bergen"  # 1–1 tie: the first claim
    assert offline_answer(QUERY, [GOLD, FAULT, PARAPHRASE]) == "oslo"  # two memories say Oslo
    assert offline_answer(QUERY, [GOLD, PARAPHRASE]) == "bergen"  # it never makes a claim alone
    assert offline_answer(QUERY, [PARAPHRASE]) == ""


WORDS = ["jonas", "moved", "city", "oslo", "bergen", "lives", "home", "nurse", "cello", "dog"]
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(texts, max_size=5), texts, texts)
def test_a_memory_off_the_query_never_brings_its_own_answer(context, extra, query):
    """Adding a memory that shares no content word with the query yields either the old answer
    or the claim of a memory that was already there and relevant."""
    memories = [Memory(str(i), t) for i, t in enumerate(context)]
    if relevance(extra, query) > 0:
        return
    before = offline_answer(query, memories)
    after = offline_answer(query, [*memories, Memory("x", extra)])
    q = set(content_tokens(query))
    relevant_claims = {" ".join(t for t in content_tokens(m.text) if t not in q)
                       for m in memories if relevance(m.text, query) > 0}
    assert after == before or after in relevant_claims
    if not relevant_claims:
        assert after == ""
