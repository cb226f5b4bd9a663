"""Re-embedding: keep a kind's vector in step with its repaired text (operator and oracle).

A kind that declares ``embed: {field: embedding}`` carries, in ``meta[field]``, the vector of its
governed text (``fields``, default the whole content). After any repair operator builds a successor
of such a kind, :class:`ReEmbed` rebuilds the vector from the successor's text with the policy's
embedder (``repair.embedder``) and records

    meta[field] = {"model": embedder name, "dim": n, "text_sha256": SHA-256(text), "vector": [v_1 … v_n]}

The ``embedding`` oracle (:func:`check_embedding`) passes iff the record is well formed, its digest
is the digest of the text being republished, and re-embedding that text gives the vector again
(cosine ≥ 1 − tolerance): the vector was computed from the republished text, not carried over from
the withdrawn version. Embedders:

* :class:`HashEmbedder` — offline and deterministic (the demo and the tests): a signed hashed bag of
  words (feature hashing, Weinberger et al. 2009) of dimension ``dim``, L2-normalised;
* :class:`EndpointEmbedder` — an OpenAI-compatible ``POST {base_url}/embeddings``, through the same
  client as every endpoint (allow-listed key variable and hosts, timeouts, bounded retries, a total
  deadline, no reply text in errors), cached by (model, text) for the life of the process.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..chat import ChatClient, EndpointError, _Retryable, is_loopback
from ..policy.model import MAX_EMBEDDING_DIM, Endpoint
from ..policy.model import Embedder as EmbedderSpec
from . import neural
from .artifacts import Artifact
from .operators import Operator, OperatorError, RepairContext, Successor


class Embedder(Protocol):
    @property
    def name(self) -> str: ...

    def embed(self, text: str) -> list[float]: ...


@dataclass(frozen=True)
class HashEmbedder:
    """x[h(t) mod dim] += s(t) for each token t (h, s from SHA-256 of t), then x / ‖x‖."""

    dim: int = 64

    @property
    def name(self) -> str:
        return f"offline-hash-{self.dim}"

    def embed(self, text: str) -> list[float]:
        x = [0.0] * self.dim
        for tok in neural.tokens(text):
            h = hashlib.sha256(tok.encode("utf-8")).digest()
            x[int.from_bytes(h[:4], "big") % self.dim] += 1.0 if h[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in x))
        return [v / norm for v in x] if norm > 0 else x


class _EmbeddingClient(ChatClient):
    ROUTE = "/embeddings"

    def _send(self, sdk: Any, payload: dict[str, Any], timeout: float) -> Any:
        raw = sdk.embeddings.with_raw_response.create(model=payload["model"], input=payload["input"],
                                                      encoding_format="float", timeout=timeout)
        return raw.http_response

    def _parse(self, data: bytes) -> str:
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            raise _Retryable("the reply is not JSON") from None
        rows = doc.get("data") if isinstance(doc, dict) else None
        vec = rows[0].get("embedding") if isinstance(rows, list) and rows and isinstance(rows[0], dict) else None
        if not (isinstance(vec, list) and 0 < len(vec) <= MAX_EMBEDDING_DIM
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in vec)):
            raise _Retryable("the reply has no embedding vector")
        return json.dumps(vec)


@dataclass
class EndpointEmbedder:
    """Vectors from an OpenAI-compatible ``/embeddings`` endpoint (the model named by the endpoint)."""

    endpoint: Endpoint
    backoff: float = 0.2
    calls: int = 0
    _cache: dict[str, list[float]] = field(default_factory=dict)
    _client: _EmbeddingClient | None = None

    @property
    def name(self) -> str:
        return f"openai:{self.endpoint.model}"

    def embed(self, text: str) -> list[float]:
        if text not in self._cache:
            try:
                reply, attempts = self._get_client()._call({"model": self.endpoint.model, "input": [text]})
            except EndpointError as exc:
                self.calls += exc.attempts
                raise OperatorError(f"embedding {exc.message}") from None
            self.calls += attempts
            self._cache[text] = [float(v) for v in json.loads(reply)]
        return list(self._cache[text])

    def _get_client(self) -> _EmbeddingClient:
        if self._client is None:
            try:
                client = _EmbeddingClient(self.endpoint, backoff=self.backoff)
            except EndpointError as exc:
                raise OperatorError(f"embedding {exc.message}") from None
            if not client.has_key and not is_loopback(self.endpoint.base_url):
                raise OperatorError(f"environment variable {self.endpoint.api_key_env} is not set")
            self._client = client
        return self._client


def embedder_for(spec: EmbedderSpec) -> Embedder:
    """The embedder a policy's ``repair.embedder`` names."""
    if spec.type == "openai" and spec.endpoint is not None:
        return EndpointEmbedder(spec.endpoint)
    return HashEmbedder(spec.dim)


# --------------------------------------------------------------------------- governed text


def at_path(content: Any, path: str) -> Any:
    """The value at a JSON path of object keys (``$``, ``$.bio``, ``$.profile.bio``), None if absent."""
    value = content
    for key in path.split(".")[1:]:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def governed_text(content: Any, fields: Sequence[str]) -> str | None:
    """The text a kind governs: its ``fields`` joined by newlines (default: the content itself when it
    is a string, else its ``text`` field); None when there is none."""
    parts = [at_path(content, p) for p in fields] if fields else [
        content if isinstance(content, str) else at_path(content, "$.text")]
    texts = [p for p in parts if isinstance(p, str) and p.strip()]
    return "\n".join(texts) if texts else None


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- operator


@dataclass(frozen=True)
class ReEmbed:
    """Run ``inner`` (the kind's repair operator), then rebuild ``meta[field]`` from the successor's text."""

    inner: Operator
    embedder: Embedder
    field: str = "embedding"
    fields: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.inner.name}+reembed"

    @property
    def checks_content(self) -> bool:
        return bool(getattr(self.inner, "checks_content", True))

    @property
    def scaffold(self) -> tuple[str, ...]:
        return tuple(getattr(self.inner, "scaffold", ()) or ())

    def check(self, artifact: Artifact) -> str | None:
        return self.inner.check(artifact)

    def __call__(self, artifact: Artifact, ctx: RepairContext) -> Successor:
        successor = self.inner(artifact, ctx)
        text = governed_text(successor.content, self.fields)
        if text is None:
            raise OperatorError("the successor has no text to embed")
        vector = self.embedder.embed(text)
        meta = dict(successor.meta)
        meta[self.field] = {"model": self.embedder.name, "dim": len(vector), "text_sha256": digest(text),
                            "vector": vector}
        return Successor(successor.content, meta)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return sum(x * y for x, y in zip(a, b)) / (na * nb)


def embedding_problem(record: Any, text: str | None, embedder: Embedder, tolerance: float) -> str | None:
    """Why ``record`` is not the vector of ``text`` under ``embedder`` (None: it is)."""
    if text is None:
        return "the successor has no text"
    if not isinstance(record, dict) or not isinstance(record.get("vector"), list):
        return "the successor carries no vector record"
    vector = record["vector"]
    if not vector or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vector):
        return "the vector is not a list of numbers"
    if record.get("text_sha256") != digest(text):
        return "the vector was not computed from the republished text (digest differs)"
    if record.get("model") != embedder.name:
        return "the vector was computed by another embedder"
    again = embedder.embed(text)
    if len(again) != len(vector):
        return f"the vector has {len(vector)} dimensions, the embedder gives {len(again)}"
    sim = cosine(vector, again)
    if sim < 1.0 - tolerance:
        return f"re-embedding the republished text gives another vector (cosine {sim:.6f})"
    return None
