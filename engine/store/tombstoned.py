"""The one tombstone test of every path that brings content into a store (issue 25).

``put`` (:mod:`.writepath`), ``store import`` (:mod:`.transfer`) and the root successors a
``correct`` or ``migrate`` event stages at its barrier (:mod:`.repairlog`) all ask the same
question: does this content (or meta) say erased text again? :func:`said_digests` is what a tombstone
can hold of a value — its exact content digest and the digests of its normalised text
(:func:`memsteward.textnorm.said_text_digests`: its object keys too) — and :func:`first_tombstoned` finds the first of a batch of
artifacts that a tombstone holds. A store answers with its own digests (``store.said_digests``: keyed
under its index key once sealed, issue 27), so no caller computes a digest itself; ``Store.tombstone_of``
is the question for one content (the LangGraph adapter's ``reingest: review``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol

from ..errors import WriteRefused
from ..repair.writes import content_digest
from ..textnorm import said_text_digests

__all__ = ["first_tombstoned", "refusal", "refuse_tombstoned_successors", "said_digests"]


def said_digests(content: Any, meta: Any) -> set[str]:
    """The digests a tombstone may hold of an artifact with this content and meta."""
    return {content_digest(content)} | said_text_digests(content, meta)


def first_tombstoned(items: Iterable[tuple[str, Any, Any]],
                     dead_of: Callable[[Collection[str]], Mapping[str, str]],
                     said: Callable[[Any, Any], set[str]] = said_digests) -> tuple[str, str, str] | None:
    """(id, digest, erased root) of the first of ``items`` ``(id, content, meta)`` whose content or meta a
    tombstone holds, else None. ``said(content, meta)`` is every digest a tombstone may hold of them (the
    store's: :func:`said_digests` of a plaintext store); ``dead_of(digests)`` returns the tombstoned ones
    among ``digests`` (digest → root), looked up once for the whole batch."""
    said_of = [(i, sorted(said(c, m))) for i, c, m in items]
    dead = dead_of(sorted({d for _, ds in said_of for d in ds})) if said_of else {}
    for ident, digests in said_of:
        hit = next((d for d in digests if d in dead), None)
        if hit is not None:
            return ident, hit, dead[hit]
    return None


def refusal(ident: str, root: str, path: str, what: str, field: str = "") -> WriteRefused:
    """The refusal of ``what`` (an import, a replacement) that brings the erased text of ``root`` back."""
    return WriteRefused(f"{what} of {ident!r} refused: its content was erased by a delete event (tombstone of "
                        f"{root!r}); deleted content is not ingested again", "tombstone", path, field)


class _Tombstones(Protocol):
    def has_tombstones(self) -> bool: ...
    def tombstones_of(self, digests: Collection[str]) -> dict[str, str]: ...
    def said_digests(self, content: Any, meta: Any) -> set[str]: ...


def refuse_tombstoned_successors(store: _Tombstones, staged: Mapping[str, Any]) -> None:
    """Raise :class:`WriteRefused` when a root successor an event stages (a ``correct`` replacement, a
    ``migrate`` interface: :class:`~memsteward.repair.artifacts.Artifact` s by root) says erased text
    again — checked inside the barrier's transaction, before anything is withdrawn."""
    if not staged or not store.has_tombstones():
        return
    hit = first_tombstoned(((r, a.content, a.meta) for r, a in sorted(staged.items())), store.tombstones_of,
                           store.said_digests)
    if hit is not None:
        raise refusal(hit[0], hit[2], "<event>", "replacement", f"replacements.{hit[0]}.content")
