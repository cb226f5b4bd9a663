"""TTL expiry in the wrapped store becomes a delete event.

LangGraph's TTL stores (``PostgresStore``, ``SqliteStore``) drop an expired item on their sweep
(``sweep_ttl``) and hide it from reads before that. memsteward must not keep serving, or keep in
plaintext, what the wrapped store let expire, so expiry is reconciled twice:

* **on sweep** (:func:`sweep`): the addresses about to expire are read from the wrapped store's
  table first, its sweep runs, then one delete event erases every one of them that memsteward still
  holds servable, together with every item recorded with a TTL that is still servable here but that
  the wrapped store no longer holds (:func:`vanished`): the wrapped store's own sweeper
  (``sweep_ttl``, which LangGraph's ``start_ttl_sweeper`` runs on a schedule) may have removed the
  rows first, and then the table has nothing left to read;
* **on read** (:func:`reconcile_missing`): a ``get`` the wrapped store answers with nothing, for an
  item recorded with a TTL and still servable here, runs the delete event at once.

Only items put with a TTL (the artifact's address metadata says so) are reconciled; an item
deleted around the adapter is not mistaken for an expiry.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langgraph.store.base import GetOp

from ...repair.artifacts import SERVABLE_STATES
from .sync import Address
from .values import ADDRESS_KEY

if TYPE_CHECKING:
    from .store import GovernedStore

__all__ = ["due", "expired_item", "expiring", "reconcile_missing", "sweep", "vanished"]

MAX_SWEEP = 100_000
MAX_TRACKED = 1_000_000
"""Adapter items :func:`vanished` looks at per sweep (their ids and states, then the metadata of the
servable ones: no content is read)."""
CHUNK = 500


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


def due(address: Any, now: float) -> bool:
    """Whether an item's recorded address says its TTL may have run out by ``now``: recorded with a TTL,
    and past the deadline the put recorded (``expires``; an item recorded before deadlines were kept is
    due). A put is recorded before the wrapped store holds it, so an item missing there before its
    deadline is one being written (an ``aput`` between its record and its wrapped put), not expired."""
    if not isinstance(address, dict) or not address.get("ttl"):
        return False
    expires = address.get("expires")
    return not isinstance(expires, (int, float)) or isinstance(expires, bool) or expires <= now


def _expire(gs: GovernedStore, items: Sequence[Address]) -> list[str]:
    """One delete event over the servable TTL items among ``items`` whose deadline has passed
    (:func:`due`); returns its roots."""
    found = gs.latest(list(dict.fromkeys(items)))
    live = [i for i, st in found.values() if st in SERVABLE_STATES]
    arts = gs.store.artifacts_of(live, content=False)
    now = time.time()
    roots = sorted(i for i, a in arts.items() if due((a.meta or {}).get(ADDRESS_KEY), now))
    if roots:
        gs._run({"type": "delete", "roots": roots})
        gs.scrub()
    return roots


def vanished(gs: GovernedStore) -> list[Address]:
    """The addresses of the adapter items recorded with a TTL (address metadata ``ttl: True``) that
    are servable here but absent from the wrapped store: expired and already swept there.

    memsteward's store has no index of TTL items, so the adapter's ids and states are read (one
    primary-key range), then the metadata (never the content) of the servable ones, 500 at a time;
    the wrapped store is asked only about the TTL items, with one ``batch`` of ``GetOp`` per 500
    (``refresh_ttl=False``: the check does not extend a TTL)."""
    if not gs.supports_ttl:
        return []
    live = [i for i, st in gs.store.ids_with_prefix(gs.ids.prefix(()), MAX_TRACKED) if st in SERVABLE_STATES]
    tracked: list[Address] = []
    now = time.time()
    for start in range(0, len(live), CHUNK):
        for art in gs.store.artifacts_of(live[start:start + CHUNK], content=False).values():
            a = art.meta.get(ADDRESS_KEY) if art.meta else None
            if isinstance(a, dict) and due(a, now) and isinstance(a.get("key"), str) \
                    and isinstance(a.get("namespace"), list):
                tracked.append((tuple(a["namespace"]), a["key"]))
    gone: list[Address] = []
    for start in range(0, len(tracked), CHUNK):
        part = tracked[start:start + CHUNK]
        found = gs.inner.batch([GetOp(ns, k, refresh_ttl=False) for ns, k in part])
        gone.extend(a for a, it in zip(part, found) if it is None)
    return gone


def sweep(gs: GovernedStore) -> list[str]:
    """Sweep the wrapped store's expired items and erase them here too (one delete event), with the
    TTL items the wrapped store's own sweeper removed before (:func:`vanished`)."""
    items = expiring(gs.inner)
    run = getattr(gs.inner, "sweep_ttl", None)
    if callable(run):
        run()
    return _expire(gs, [*items, *vanished(gs)])


def reconcile_missing(gs: GovernedStore, items: Sequence[Address]) -> list[str]:
    """Items the wrapped store no longer returns: those recorded with a TTL are expired here too."""
    if not gs.supports_ttl:
        return []
    return _expire(gs, items)
