"""The adapter's refusal, catchable as memsteward's and as LangGraph's kind of error."""

from __future__ import annotations

from ...errors import WriteRefused

__all__ = ["GovernedWriteRefused"]


class GovernedWriteRefused(WriteRefused, ValueError):
    """A put the governed store refuses: ``reason`` is ``"tombstone"`` (a derived value carries
    content a delete event erased, or a first-hand one under ``reingest: refuse``), ``"fenced"`` (it
    derives from an item that is withdrawn, under repair or deleted) or ``"unfinished-event"``.

    It is a :class:`~memsteward.errors.WriteRefused` and a ``ValueError``, the base of LangGraph's
    own store errors (``InvalidNamespaceError``), so a graph node may catch either. Nothing was
    written, to memsteward or to the wrapped store; the next valid put succeeds.
    """

    @classmethod
    def wrap(cls, exc: WriteRefused) -> GovernedWriteRefused:
        out = cls(exc.message, exc.reason, exc.file, exc.field)
        out.__cause__ = exc
        return out
