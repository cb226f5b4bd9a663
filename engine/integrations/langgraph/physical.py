"""The wrapped store's files: make deleted rows unrecoverable, and scan what it holds.

``SqliteStore`` keeps a deleted row's bytes in free pages and the WAL until they are overwritten;
``PostgresStore`` keeps them in dead tuples until a vacuum. :func:`scrub` rewrites them away
(SQLite: WAL checkpoint, ``VACUUM``, checkpoint; PostgreSQL: ``VACUUM FULL`` of ``store`` and
``store_vectors``, which writes new relation files). :func:`raw_texts` and :func:`files` give what
an attestation reads: every value (read around the adapter), every vector row, and the files of
the tables. PostgreSQL's WAL segments and backups live on the server and are not covered.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from typing import Any

__all__ = ["files", "raw_items", "scrub", "vector_rows"]

PAGE = 500
MAX_ITEMS = 1_000_000


def _sqlite(inner: Any) -> sqlite3.Connection | None:
    conn = getattr(inner, "conn", None)
    return conn if isinstance(conn, sqlite3.Connection) else None


def _pg(inner: Any) -> bool:
    return type(inner).__name__ in ("PostgresStore",) and callable(getattr(inner, "_cursor", None))


def scrub(inner: Any) -> dict[str, Any]:
    """Rewrite the wrapped store's files without its deleted rows (a no-op for in-memory stores)."""
    conn = _sqlite(inner)
    if conn is not None:
        lock = getattr(inner, "lock", None)
        if lock is not None:
            with lock:
                return _scrub_sqlite(conn)
        return _scrub_sqlite(conn)
    if _pg(inner):
        with inner._cursor() as cur:
            cur.execute("VACUUM FULL store")
            cur.execute("VACUUM FULL store_vectors") if _has_vectors(cur) else None
        return {"backend": "postgresql", "vacuum": True}
    return {"backend": type(inner).__name__, "vacuum": False}


def _scrub_sqlite(conn: sqlite3.Connection) -> dict[str, Any]:
    if conn.in_transaction:
        conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return {"backend": "sqlite", "vacuum": True}


def _has_vectors(cur: Any) -> bool:
    cur.execute("SELECT to_regclass('store_vectors') IS NOT NULL AS ok")
    row = cur.fetchone()
    return bool(row["ok"] if isinstance(row, dict) else row[0])


def raw_items(inner: Any, namespace: tuple[str, ...] = ()) -> Iterator[Any]:
    """Every item the wrapped store holds under ``namespace``, read around the adapter."""
    offset = 0
    while offset < MAX_ITEMS:
        page = inner.search(namespace, limit=PAGE, offset=offset)
        yield from page
        if len(page) < PAGE:
            return
        offset += PAGE


def vector_rows(inner: Any) -> list[tuple[tuple[str, ...], str, str]]:
    """(namespace, key, field path) of every vector the wrapped store holds."""
    vectors = getattr(inner, "_vectors", None)
    if isinstance(vectors, dict):
        return [(ns, k, p) for ns, by_key in vectors.items() for k, paths in by_key.items() for p in paths]
    sql = "SELECT prefix, key, field_name FROM store_vectors"
    conn = _sqlite(inner)
    if conn is not None:
        try:
            return [(tuple(p.split(".")), k, f) for p, k, f in conn.execute(sql)]
        except sqlite3.OperationalError:  # no vector table: the store has no index
            return []
    if _pg(inner):
        with inner._cursor() as cur:
            if not _has_vectors(cur):
                return []
            cur.execute(sql)
            return [(tuple(r["prefix"].split(".")), r["key"], r["field_name"]) for r in cur.fetchall()]
    return []


def files(inner: Any) -> list[str]:
    """The files holding the wrapped store's tables: the SQLite database and its WAL, or (on a
    local PostgreSQL server whose data directory this process can read) the relation files of
    ``store`` and ``store_vectors`` and their indexes."""
    conn = _sqlite(inner)
    if conn is not None:
        path = conn.execute("PRAGMA database_list").fetchone()[2]
        return [p for p in (path, path + "-wal", path + "-journal") if path and os.path.exists(p)]
    if not _pg(inner):
        return []
    out: list[str] = []
    with inner._cursor() as cur:
        try:
            cur.execute("CHECKPOINT")  # shared buffers to the files, so a scan reads what the server holds
        except Exception:  # noqa: BLE001 - not a superuser: the files may lag the buffers
            pass
        cur.execute("SELECT current_setting('data_directory') AS d")
        base = cur.fetchone()["d"]
        cur.execute("SELECT pg_relation_filepath(c.oid) AS p FROM pg_class c JOIN pg_namespace n "
                    "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relname LIKE 'store%' "
                    "AND pg_relation_filepath(c.oid) IS NOT NULL")
        rels = [r["p"] for r in cur.fetchall()]
    for rel in rels:
        path = os.path.join(base, rel)
        out += [p for p in [path] + [f"{path}.{n}" for n in range(1, 64)] if os.path.exists(p)]
    return out
