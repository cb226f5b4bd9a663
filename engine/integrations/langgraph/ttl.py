"""TTL expiry in the wrapped store becomes a delete event.

LangGraph's TTL stores (``PostgresStore``, ``SqliteStore``) drop an expired item on their sweep
(``sweep_ttl``) and hide it from reads before that. memsteward must not keep serving, or keep in
plaintext, what the wrapped store let expire, so expiry is reconciled twice:

* **on sweep** (:func:`sweep`): the addresses about to expire are read from the wrapped store's
  table first, its sweep runs, then one delete event erases every one of them that memsteward still
  holds servable;
* **on read** (:func:`reconcile_missing`): a ``get`` the wrapped store answers with nothing, for an
  item recorded with a TTL and still servable here, runs the delete event at once.

Only items put with a TTL (the artifact's address metadata says so) are reconciled; an item
deleted around the adapter is not mistaken for an expiry.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...repair.artifacts import SERVABLE_STATES
from .sync import Address
from .values import ADDRESS_KEY

if TYPE_CHECKING:
    from .store import GovernedStore

__all__ = ["expired_item", "expiring", "reconcile_missing", "sweep"]

MAX_SWEEP = 100_000


def _text_ns(prefix: str) -> tuple[str, ...]:
    return tuple(prefix.split("."))


def expiring(inner: Any) -> list[Address]:
    """The addresses the wrapped store's table holds past their expiry (PostgresStore, SqliteStore);
    [] for a store without TTL tables."""
    sql = "SELECT prefix, key FROM store WHERE expires_at IS NOT NULL AND expires_at < {now} LIMIT {n}"
    conn = getattr(inner, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        rows = conn.execute(sql.format(now="CURRENT_TIMESTAMP", n=MAX_SWEEP)).fetchall()
        return [(_text_ns(p), k) for p, k in rows]
    cursor = getattr(inner, "_cursor", None)
    if cursor is None or not getattr(inner, "supports_ttl", False):
        return []
    with cursor() as cur:
        cur.execute(sql.format(now="NOW()", n=MAX_SWEEP))
        rows = cur.fetchall()
    return [(_text_ns(r["prefix"] if isinstance(r, dict) else r[0]), r["key"] if isinstance(r, dict) else r[1])
            for r in rows]


def expired_item(inner: Any, namespace: tuple[str, ...], key: str) -> bool:
    """Whether a SqliteStore still returns an item past its expiry (its reads do not hide expired
    rows before the sweep; PostgresStore's do, and a TTL-less store has no expiry)."""
    conn = getattr(inner, "conn", None)
    if not isinstance(conn, sqlite3.Connection) or not getattr(inner, "supports_ttl", False):
        return False
    row = conn.execute("SELECT 1 FROM store WHERE prefix = ? AND key = ? AND expires_at IS NOT NULL "
                       "AND expires_at < CURRENT_TIMESTAMP", (".".join(namespace), key)).fetchone()
    return row is not None


def _expire(gs: GovernedStore, items: Sequence[Address]) -> list[str]:
    """One delete event over the servable TTL items among ``items``; returns its roots."""
    found = gs.latest(list(dict.fromkeys(items)))
    live = [i for i, st in found.values() if st in SERVABLE_STATES]
    arts = gs.store.artifacts_of(live, content=False)
    roots = sorted(i for i, a in arts.items() if (a.meta.get(ADDRESS_KEY) or {}).get("ttl"))
    if roots:
        gs._run({"type": "delete", "roots": roots})
        gs.scrub()
    return roots


def sweep(gs: GovernedStore) -> list[str]:
    """Sweep the wrapped store's expired items and erase them here too (one delete event)."""
    items = expiring(gs.inner)
    run = getattr(gs.inner, "sweep_ttl", None)
    if callable(run):
        run()
    return _expire(gs, items)


def reconcile_missing(gs: GovernedStore, items: Sequence[Address]) -> list[str]:
    """Items the wrapped store no longer returns: those recorded with a TTL are expired here too."""
    if not gs.supports_ttl:
        return []
    return _expire(gs, items)
