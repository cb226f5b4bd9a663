"""A governed LangGraph store: any ``BaseStore`` behind memsteward's write path, read guard and
events (whole values, corrections, forget-a-namespace, TTL, re-ingestion, wrapped-store attestation).

The full guide is docs/langgraph.md. The parts:

* :mod:`.store` — :class:`GovernedStore` (the ``BaseStore``), built on :mod:`.guard` (the read
  guard and shared state), :mod:`.events` (events and the wrapped-store write-back) and
  :mod:`.writes` (the write path; on PostgreSQL the wrapped put overlaps the record's COMMIT);
* :mod:`.reembed` — repair re-embeds through memsteward's re-embedding operator;
* :mod:`.values` — which parts of a value are governed content, and the value a repair writes back;
* :mod:`.identity` — opaque keyed ids, incarnations found in one index probe;
* :mod:`.sync` — the wrapped-store writes a published plan implies;
* :mod:`.forget`, :mod:`.ttl` — forget a namespace (preview/apply), TTL expiry as delete events;
* :mod:`.physical`, :mod:`.attest` — the wrapped store's files, and its attestation checks;
* :mod:`.errors` — :class:`GovernedWriteRefused`.
"""

from __future__ import annotations

try:
    import langgraph.store.base  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("memsteward.integrations.langgraph needs LangGraph: pip install 'memsteward[langgraph]'") from exc

from .errors import GovernedWriteRefused
from .identity import ItemIds
from .store import REVIEW_KEY, GovernedStore
from .values import ValueSpec, governed_texts

PROVENANCE_FIELD = "derived_from"
"""The default provenance field: value[PROVENANCE_FIELD] = [[namespace, key], …]."""
TEXT_FIELD = "content"
"""The field a repaired text successor is written back to."""

__all__ = ["PROVENANCE_FIELD", "REVIEW_KEY", "TEXT_FIELD", "GovernedStore", "GovernedWriteRefused", "ItemIds",
           "ValueSpec", "governed_texts"]
