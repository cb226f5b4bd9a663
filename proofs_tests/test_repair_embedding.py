"""Re-embedding (issue 34): a kind that declares ``embed`` gets its vector rebuilt from the repaired
text, and the ``embedding`` oracle checks the vector was computed from the republished text.

Offline with the deterministic hashed embedder, and against a real OpenAI-compatible
``/v1/embeddings`` server on 127.0.0.1 (no network); the endpoint obeys the same allow-lists as
every endpoint.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from memsteward.policy.analysis import analyze
from memsteward.policy.endpoints import EndpointRules
from memsteward.policy.loader import PolicySchemaError, PolicySource, SourceMap, parse_policy
from memsteward.policy.model import EmbeddingOracle, Policy
from memsteward.repair.artifacts import Artifact
from memsteward.repair.embedding import HashEmbedder, ReEmbed, digest
from memsteward.repair.events import parse_event
from memsteward.repair.execute import run_event
from memsteward.repair.operators import RegenText, RepairContext, Successor
from memsteward.repair.oracles import OracleInput, check_embedding
from memsteward.store import Store

STORE = {
    "artifacts": [
        {"id": "f1", "kind": "fact", "content": {"text": "Anna lives in Berlin."}},
        {"id": "f2", "kind": "fact", "content": {"text": "Anna is vegetarian."}},
        {"id": "f3", "kind": "fact", "content": {"text": "Anna is allergic to peanuts."}},
        {"id": "note", "kind": "note", "content": "Anna lives in Berlin. Anna is vegetarian. Anna is allergic to peanuts.",
         "meta": {"embedding": {"model": "offline-hash-16", "dim": 16, "text_sha256": "0" * 64, "vector": [0.0] * 16}}},
    ],
    "edges": [{"src": "f1", "dst": "note"}, {"src": "f2", "dst": "note"}, {"src": "f3", "dst": "note"}],
}


def _policy(embedder: dict | None = None) -> Policy:
    return Policy.model_validate({
        "kinds": {"fact": {"role": "root"}, "note": {"role": "text", "embed": {"field": "embedding"}}},
        "modes": [{"when": {"kind": "note", "support": "sufficient"}, "mode": "regen"}, {"when": {}, "mode": "remove"}],
        "validation": [{"mode": "regen", "oracles": [{"oracle": "grounded", "min_support": 0.5}, {"oracle": "embedding"}]}],
        "repair": {"embedder": embedder or {"type": "offline", "dim": 16}},
    })


def _store(tmp_path) -> Store:
    path = tmp_path / "store.json"
    path.write_text(json.dumps(STORE))
    return Store.open(str(path))


def _delete_f3(store: Store, policy: Policy):
    return run_event(store, policy, parse_event({"type": "delete", "roots": ["f3"]}, store.snapshot()))


def test_offline_reembedding_after_repair(tmp_path):
    store = _store(tmp_path)
    plan = _delete_f3(store, _policy())
    assert "note" in plan.republished
    note = store.get("note")
    record = note.meta["embedding"]
    assert "peanuts" not in note.content
    assert record["text_sha256"] == digest(note.content) and record["vector"] == HashEmbedder(16).embed(note.content)
    (step,) = [s for s in plan.executed if s.id == "note"]
    assert (step.reports[-1]["oracle"], step.reports[-1]["passed"]) == ("embedding", True)


def _oracle_input(meta_record: dict | None, text: str) -> OracleInput:
    art = Artifact("note", "note", None, 1, "old text", {})
    op = ReEmbed(RegenText(), HashEmbedder(16))
    succ = Successor(text, {} if meta_record is None else {"embedding": meta_record})
    return OracleInput(art, succ, RepairContext("delete"), op)


def test_the_oracle_rejects_a_vector_not_computed_from_the_republished_text():
    emb = HashEmbedder(16)
    fresh = {"model": emb.name, "dim": 16, "text_sha256": digest("new text."), "vector": emb.embed("new text.")}
    spec = EmbeddingOracle(oracle="embedding")
    assert check_embedding(spec, _oracle_input(fresh, "new text.")).passed
    stale = {**fresh, "text_sha256": digest("old text"), "vector": emb.embed("old text")}
    assert "digest differs" in check_embedding(spec, _oracle_input(stale, "new text.")).detail
    forged = {**fresh, "vector": emb.embed("old text")}  # right digest, vector of other text
    assert "another vector" in check_embedding(spec, _oracle_input(forged, "new text.")).detail
    other = {**fresh, "model": "offline-hash-8"}
    assert not check_embedding(spec, _oracle_input(other, "new text.")).passed
    assert not check_embedding(spec, _oracle_input(None, "new text.")).passed
    plain = OracleInput(Artifact("n", "note", None, 1, "x", {}), Successor("new text.", {"embedding": fresh}),
                        RepairContext("delete"), RegenText())
    assert "declare 'embed'" in check_embedding(spec, plain).detail  # nothing re-embedded it


class FakeEmbeddings(BaseHTTPRequestHandler):
    requests: list[dict] = []
    fail = False

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeEmbeddings.requests.append({"path": self.path, **body})
        if FakeEmbeddings.fail:
            self.send_response(503)
            self.end_headers()
            return
        rows = [{"object": "embedding", "index": k, "embedding": HashEmbedder(8).embed(t)}
                for k, t in enumerate(body["input"])]
        data = json.dumps({"object": "list", "data": rows, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    httpd = HTTPServer(("127.0.0.1", 0), FakeEmbeddings)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    FakeEmbeddings.requests, FakeEmbeddings.fail = [], False
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def _openai(base_url: str) -> dict:
    return {"type": "openai", "endpoint": {"base_url": base_url, "model": "fake-embed", "retries": 0, "timeout": 5}}


def test_openai_compatible_embedder(tmp_path, server):
    store = _store(tmp_path)
    plan = _delete_f3(store, _policy(_openai(server)))
    assert "note" in plan.republished
    note = store.get("note")
    assert note.meta["embedding"]["model"] == "openai:fake-embed"
    assert note.meta["embedding"]["vector"] == HashEmbedder(8).embed(note.content)
    assert FakeEmbeddings.requests[0]["path"] == "/v1/embeddings"
    assert all("peanuts" not in json.dumps(r) for r in FakeEmbeddings.requests)  # only the republished text


def test_a_failing_embeddings_endpoint_fails_the_candidate_only(tmp_path, server):
    FakeEmbeddings.fail = True
    store = _store(tmp_path)
    plan = _delete_f3(store, _policy(_openai(server)))
    assert {s.id: s.status for s in plan.executed}["note"] == "failed"
    assert {a.id for a in store.serve()} == {"f1", "f2"}


def test_the_embedder_endpoint_obeys_the_allow_lists():
    doc = _policy(_openai("http://embeddings.example.com/v1")).model_dump(mode="json", by_alias=True)
    doc["repair"]["embedder"]["endpoint"]["api_key_env"] = "AWS_SECRET_ACCESS_KEY"
    src = PolicySource(Policy.model_validate(doc), SourceMap("<p>", {}))
    errors = {(f.code, f.field) for f in analyze(src, EndpointRules()) if f.severity == "error"}
    assert ("endpoint", "repair.embedder.endpoint.base_url") in errors
    assert ("secret", "repair.embedder.endpoint.api_key_env") in errors
    with pytest.raises(PolicySchemaError, match="needs an 'endpoint'"):
        parse_policy({"kinds": {"record": {}}, "repair": {"embedder": {"type": "openai"}}}, SourceMap("<p>", {}))
