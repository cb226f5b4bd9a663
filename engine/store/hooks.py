"""The typed self-protocol of the store's parts: what a part calls that a part above it provides.

A store class is assembled from parts (mixins), each building on the one below it; the import and
write-path parts record audit rows and ask for the unfinished event, which the audit chain and the
repair log provide further up. A part names them by inheriting :class:`LogHooks`, so the type checker
knows their signatures, and the class that finally implements them (its place in the method
resolution order comes first) is the one that runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .api import EventRecord

__all__ = ["LogHooks"]


class LogHooks(Protocol):
    """The audit chain's writer and the repair log's unfinished event."""

    def _audit(self, action: str, artifact_id: str | None = None, event_id: int | None = None,
               detail: Mapping[str, Any] | None = None) -> None:
        """Append one chained audit row inside the caller's transaction."""
        ...

    def unfinished_event(self) -> EventRecord | None:
        """The event whose publication has not committed, if any."""
        ...
