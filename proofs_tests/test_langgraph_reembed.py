"""The LangGraph adapter re-embeds a repaired value through memsteward's re-embedding operator
(issue 34): on LangGraph's InMemoryStore with a vector index and a deterministic local embedding
function, the repaired successor carries the vector of its republished text (ReEmbed's record, with
the text's digest), and the vector the wrapped store indexes for that text is exactly that one,
with no second embedding call for it."""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

from langgraph.store.memory import InMemoryStore

import memsteward
from memsteward.integrations.langgraph import GovernedStore
from memsteward.integrations.langgraph.reembed import EMBED_KEY
from memsteward.repair.embedding import digest

POLICY = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))
NS = ("users", "alice")
DIMS = 32
CALLS: list[str] = []


def embed(texts: list[str]) -> list[list[float]]:
    """Hashed bag of words, L2-normalised: deterministic, no model, no network; counts its calls."""
    out = []
    for text in texts:
        CALLS.append(text)
        v = [0.0] * DIMS
        for tok in re.findall(r"\w+", text.lower()):
            v[int(hashlib.sha256(tok.encode()).hexdigest(), 16) % DIMS] += 1.0
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        out.append([x / norm for x in v])
    return out


def _setup() -> GovernedStore:
    inner = InMemoryStore(index={"dims": DIMS, "embed": embed, "fields": ["content"]})
    gs = GovernedStore(inner, memsteward.open_store(), POLICY)
    gs.put(NS, "home", {"content": "Alice lives at 12 Rue Cler in Paris."})
    gs.put(NS, "tea", {"content": "Alice drinks green tea every morning."})
    gs.put(NS, "profile", {"content": "Alice lives at 12 Rue Cler in Paris. Alice drinks green tea every morning.",
                           "derived_from": [[list(NS), "home"], [list(NS), "tea"]]})
    return gs


def test_a_repaired_value_is_indexed_with_the_operators_vector_of_the_served_text():
    gs = _setup()
    CALLS.clear()
    gs.delete(NS, "home")
    served = gs.get(NS, "profile").value
    text = served["content"]
    assert "Rue Cler" not in text and "green tea" in text
    record = gs.store.get(gs.artifact_id(NS, "profile")).meta[EMBED_KEY]  # ReEmbed's record, validated by digest
    assert record["text_sha256"] == digest(text) and record["model"].startswith("langgraph:")
    assert record["vector"] == embed([text])[0]
    indexed = gs.inner._vectors[NS]["profile"]["content"]
    assert list(indexed) == record["vector"], "the wrapped store indexes the operator's vector"
    assert CALLS.count(text) == 2, "one embedding by the operator (plus this test's); none by the write-back"
    assert EMBED_KEY not in served and "meta" not in served, "the record never reaches the value"
    hits = gs.search(NS, query="Rue Cler Paris", limit=5)
    assert [h.key for h in hits if h.key == "profile"] and all("Rue Cler" not in str(h.value) for h in hits)


def test_a_correction_reembeds_the_repaired_dependant():
    gs = _setup()
    gs.put(NS, "home", {"content": "Alice lives at 3 Quai Voltaire in Lyon."})  # a correct event
    text = gs.get(NS, "profile").value["content"]
    assert "Rue Cler" not in text
    record = gs.store.get(gs.artifact_id(NS, "profile")).meta[EMBED_KEY]
    assert record["text_sha256"] == digest(text)
    assert list(gs.inner._vectors[NS]["profile"]["content"]) == record["vector"] == embed([text])[0]


def test_without_an_index_nothing_is_embedded():
    gs = GovernedStore(InMemoryStore(), memsteward.open_store(), POLICY)
    gs.put(NS, "a", {"content": "Alice lives in Paris."})
    gs.put(NS, "b", {"content": "Alice likes tea."})
    gs.put(NS, "s", {"content": "Alice lives in Paris. Alice likes tea.", "derived_from": [[list(NS), "a"], [list(NS), "b"]]})
    gs.delete(NS, "a")
    assert EMBED_KEY not in gs.store.get(gs.artifact_id(NS, "s")).meta


def test_the_embedding_oracle_checks_the_adapters_vector(tmp_path):
    """A policy whose summary regeneration is validated by the ``embedding`` oracle: through the
    adapter the oracle checks the store-embedder's vector against the republished text, and passes."""
    text = Path(memsteward.bundled_path("policies", "default.yaml")).read_text()
    anchor = "  - mode: regen\n    kind: summary\n    oracles:\n"
    assert anchor in text
    path = tmp_path / "policy.yaml"
    path.write_text(text.replace(anchor, anchor + "      - oracle: embedding\n"))
    inner = InMemoryStore(index={"dims": DIMS, "embed": embed, "fields": ["content"]})
    gs = GovernedStore(inner, memsteward.open_store(), memsteward.load_policy(path))
    gs.put(NS, "home", {"content": "Alice lives at 12 Rue Cler in Paris."})
    gs.put(NS, "tea", {"content": "Alice drinks green tea every morning."})
    gs.put(NS, "profile", {"content": "Alice lives at 12 Rue Cler in Paris. Alice drinks green tea every morning.",
                           "derived_from": [[list(NS), "home"], [list(NS), "tea"]]})
    gs.delete(NS, "home")
    (step,) = [s for s in gs.last_plan.executed if s.id == gs.artifact_id(NS, "profile")]
    assert ("embedding", True) in [(r["oracle"], r["passed"]) for r in step.reports]
    assert "Rue Cler" not in gs.get(NS, "profile").value["content"]
