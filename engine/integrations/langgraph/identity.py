"""Opaque, keyed artifact ids for LangGraph items, and their incarnations.

An item at ``(namespace, key)`` is recorded under

    ``"lg" + H(ns[:1]) + H(ns[:2]) + … + H(ns) + "k" + H(ns, key) + "i" + n``  (n: 6 digits)

where ``H`` is the first 16 hex digits of HMAC-SHA256 under the adapter's id key. So

* no namespace label or key is written into memsteward's ids, audit chain, plans or tombstones
  (the address itself lives in the version's metadata, nulled when the version is erased);
* every item under a namespace prefix shares the id prefix ``"lg" + H(ns[:1]) + … + H(prefix)``
  (a primary-key range: ``forget`` finds them without the labels);
* the incarnations of one item share ``base = … + "i"`` and sort by ``n`` (fixed width), so the
  latest is one index probe (:meth:`Store.last_with_prefix`): O(log n), not O(incarnations).

Without the key the ids reveal nothing; with it, a guessed label can be confirmed, which is what a
kept label must allow (the key lives apart from the store: ``MEMSTEWARD_ID_KEY`` or ``id_key=``).
"""

from __future__ import annotations

import hmac
import json
import os
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["DEFAULT_ID_KEY", "MAX_INCARNATIONS", "ItemIds"]

CACHED = 65_536
"""Addresses whose id prefixes an adapter keeps computed (an id is a pure function of key and
address, so the cache is never stale; bounded, least recently used dropped)."""
DEFAULT_ID_KEY = b"memsteward-langgraph-ids"
"""The key used when neither ``id_key`` nor ``MEMSTEWARD_ID_KEY`` is given (ids are then plain
hashes: set a secret in production)."""
MAX_INCARNATIONS = 999_999
_WIDTH = 6


@dataclass(frozen=True)
class ItemIds:
    """The id scheme under one key (see the module docstring).

    Examples
    --------
    >>> ids = ItemIds(b"k")
    >>> a = ids.of(("users", "alice"), "home", 2)
    >>> a.startswith(ids.prefix(("users",))) and a.startswith(ids.base(("users", "alice"), "home"))
    True
    >>> ids.incarnation(a)
    2
    """

    key: bytes = DEFAULT_ID_KEY

    @classmethod
    def from_env(cls, key: bytes | str | None = None) -> ItemIds:
        raw = key if key is not None else os.environ.get("MEMSTEWARD_ID_KEY")
        if raw is None or raw == "" or raw == b"":
            return cls()
        return cls(raw.encode("utf-8") if isinstance(raw, str) else bytes(raw))

    def prefix(self, namespace: tuple[str, ...]) -> str:
        """The id prefix shared by every item whose namespace starts with ``namespace``."""
        return _prefix(self.key, tuple(namespace))

    def base(self, namespace: tuple[str, ...], key: str) -> str:
        """The id prefix shared by every incarnation of one item."""
        return _base(self.key, tuple(namespace), key)

    def of(self, namespace: tuple[str, ...], key: str, incarnation: int = 1) -> str:
        if not 1 <= incarnation <= MAX_INCARNATIONS:
            raise ValueError(f"incarnation {incarnation} outside 1..{MAX_INCARNATIONS}")
        return f"{self.base(namespace, key)}{incarnation:0{_WIDTH}d}"

    @staticmethod
    def incarnation(ident: str) -> int:
        return int(ident[-_WIDTH:])


def _h(secret: bytes, parts: list[str]) -> str:
    msg = json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hmac.digest(secret, msg, "sha256").hex()[:16]


@lru_cache(maxsize=CACHED)
def _prefix(secret: bytes, namespace: tuple[str, ...]) -> str:
    if not namespace:
        return "lg"
    return _prefix(secret, namespace[:-1]) + _h(secret, list(namespace))


@lru_cache(maxsize=CACHED)
def _base(secret: bytes, namespace: tuple[str, ...], key: str) -> str:
    return f"{_prefix(secret, namespace)}k{_h(secret, [*namespace, key])}i"
