"""The adapter's refusal, catchable as memsteward's and as LangGraph's kind of error."""

from __future__ import annotations

from ...errors import WriteRefused

__all__ = ["GovernedWriteRefused"]


class GovernedWriteRefused(WriteRefused, ValueError):
    """A put the governed store refuses: ``reason`` is ``"tombstone"`` (a derived value carries
    content a delete event erased, or a first-hand one under ``reingest: refuse``), ``"fenced"`` (it
    derives from an item that is withdrawn, under repair or deleted) or ``"busy"`` (the put had to wait
    for a running event's publication and its ``write_wait`` ran out; ``retry_after`` says when to
    try again).

    It is a :class:`~memsteward.errors.WriteRefused` and a ``ValueError``, the base of LangGraph's
    own store errors (``InvalidNamespaceError``), so a graph node may catch either. Nothing was
    written, to memsteward or to the wrapped store; the next valid put succeeds.
    """

    @classmethod
    def wrap(cls, exc: WriteRefused) -> GovernedWriteRefused:
        out = cls(exc.message, exc.reason, exc.file, exc.field, exc.retry_after)
        out.__cause__ = exc
        return out
