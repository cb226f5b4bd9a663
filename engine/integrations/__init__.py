"""Adapters that put memsteward in front of the memory system an agent already uses.

The adapter protocol — what an adapter for Mem0, Graphiti, a vector database, … implements — is
four small duties, each a call into the public API (:mod:`memsteward.api`):

1. **Identity.** Map the memory system's item address to one memsteward artifact id (and back,
   e.g. through the artifact's ``meta``). An id that was withdrawn or erased is never recorded
   again, so the adapter gives a re-created item a fresh id (an *incarnation*).
2. **Write path.** On every write, call :meth:`Store.record` with the item's text as content and
   its provenance (the ids it was derived from) as ``inputs`` *before* writing to the wrapped
   system; a :class:`~memsteward.errors.WriteRefused` (fencing, tombstone) stops the write.
3. **Read path.** Filter every read (get, search, list) through :meth:`Store.servable`; an item
   memsteward does not know is not servable.
4. **Delete.** Run a delete event (:func:`memsteward.apply_event`) on the item's id, then make the
   wrapped system match the result: write each republished successor back, remove the deleted
   item and every withdrawn member of the cascade (so deleted content is gone, not only hidden).

:mod:`memsteward.integrations.langgraph` implements it for LangGraph's ``BaseStore``.
"""

from __future__ import annotations

__all__: list[str] = []
