"""Re-embedding through memsteward's operator: the vectors a wrapped store indexes for a repaired
value are the ones the repair computed from the text it republished.

When the wrapped store has a vector index (its ``embeddings``), :func:`reembedding` wraps the repair
operator of every kind with :class:`~memsteward.repair.embedding.ReEmbed`, whose embedder is the
wrapped store's own embedding function (:class:`StoreEmbedder`). Each republished successor then
carries, in ``meta[EMBED_KEY]``, the vector of its text with that text's SHA-256 (what the
``embedding`` oracle checks when the policy names it). The write-back puts the rebuilt value while
the wrapped store's embeddings answer from those records first (:func:`precomputed`): the vector
the store indexes for the repaired text is the operator's, and no second embedding call is made
for it (other indexed fields, e.g. a kept top-level field, are embedded by the store as usual).
The record never reaches the value (:func:`.values.user_meta` leaves it out).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ...repair.artifacts import Artifact
from ...repair.embedding import ReEmbed, digest, governed_text
from ...repair.operators import Operator, OperatorRegistry, RepairContext, Successor
from .values import EMBED_KEY

__all__ = ["EMBED_KEY", "StoreEmbedder", "precomputed", "reembedding", "vectors_of"]

@dataclass(frozen=True)
class StoreEmbedder:
    """memsteward's ``Embedder`` over a LangGraph store's embeddings (``embed_documents``)."""

    embeddings: Any

    @property
    def name(self) -> str:
        return f"langgraph:{type(self.embeddings).__name__}"

    def embed(self, text: str) -> list[float]:
        return [float(x) for x in self.embeddings.embed_documents([text])[0]]


@dataclass(frozen=True)
class _TextReEmbed(ReEmbed):
    """``ReEmbed`` that leaves a successor without text as it is (a value with no string has no
    vector to rebuild; the plain operator's successor is kept)."""

    def __call__(self, artifact: Artifact, ctx: RepairContext) -> Successor:
        successor = self.inner(artifact, ctx)
        if governed_text(successor.content, self.fields) is None:
            return successor
        return ReEmbed(_Fixed(successor), self.embedder, self.field, self.fields)(artifact, ctx)


@dataclass(frozen=True)
class _Fixed:
    """An operator that returns an already built successor (so ``ReEmbed`` embeds it once)."""

    successor: Successor
    name: str = "fixed"

    def check(self, artifact: Artifact) -> str | None:
        return None

    def __call__(self, artifact: Artifact, ctx: RepairContext) -> Successor:
        return self.successor


class _ReEmbedding(OperatorRegistry):
    """A registry whose every operator is wrapped to re-embed (the base registry is left as it is)."""

    def __init__(self, base: OperatorRegistry, embedder: StoreEmbedder) -> None:
        super().__init__()
        self.base = base
        self.embedder = embedder
        self._wrapped: dict[tuple[str, str, str | None], Operator] = {}

    def register(self, mode: str, op: Operator, kind: str | None = None, arch: str | None = None) -> None:
        self.base.register(mode, op, kind, arch)
        self._wrapped.clear()

    def find(self, mode: str, kind: str, arch: str | None) -> Operator | None:
        op = self.base.find(mode, kind, arch)
        if op is None or isinstance(op, ReEmbed):  # a kind whose policy declares `embed` keeps its own
            return op
        key = (mode, kind, arch)
        if key not in self._wrapped:
            self._wrapped[key] = _TextReEmbed(op, self.embedder, EMBED_KEY)
        return self._wrapped[key]


def reembedding(base: OperatorRegistry, embeddings: Any) -> OperatorRegistry:
    """``base`` with every operator re-embedding its successor with ``embeddings`` (a LangGraph
    store's); ``base`` itself when there is no index."""
    return base if embeddings is None else _ReEmbedding(base, StoreEmbedder(embeddings))


def vectors_of(successors: Sequence[Artifact], embedder_name: str) -> dict[str, list[float]]:
    """text → vector of the successors whose record was computed by ``embedder_name`` from exactly
    their text (the digest is checked: a record carried over from other text is not used)."""
    out: dict[str, list[float]] = {}
    for art in successors:
        record = art.meta.get(EMBED_KEY)
        text = art.content if isinstance(art.content, str) else None
        if (isinstance(record, Mapping) and text is not None and record.get("model") == embedder_name
                and record.get("text_sha256") == digest(text) and isinstance(record.get("vector"), list)):
            out[text] = [float(x) for x in record["vector"]]
    return out


@dataclass
class _Precomputed:
    """The wrapped store's embeddings, answering first from the operator's vectors."""

    real: Any
    known: dict[str, list[float]]
    served: list[str] = field(default_factory=list)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in texts if t not in self.known]
        got = dict(zip(missing, self.real.embed_documents(missing))) if missing else {}
        self.served += [t for t in texts if t in self.known]
        return [list(self.known[t]) if t in self.known else got[t] for t in texts]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in texts if t not in self.known]
        got = dict(zip(missing, await self.real.aembed_documents(missing))) if missing else {}
        self.served += [t for t in texts if t in self.known]
        return [list(self.known[t]) if t in self.known else got[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return list(self.real.embed_query(text))

    async def aembed_query(self, text: str) -> list[float]:
        return list(await self.real.aembed_query(text))


@contextmanager
def precomputed(inner: Any, known: Mapping[str, list[float]]) -> Iterator[None]:
    """While inside, ``inner``'s embeddings answer ``known`` texts with their vectors."""
    real = getattr(inner, "embeddings", None)
    if real is None or not known:
        yield
        return
    inner.embeddings = _Precomputed(real, dict(known))
    try:
        yield
    finally:
        inner.embeddings = real
