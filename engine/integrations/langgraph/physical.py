"""The wrapped store's files: make deleted rows unrecoverable, and scan what it holds.

``SqliteStore`` keeps a deleted row's bytes in free pages and the WAL until they are overwritten;
``PostgresStore`` keeps them in dead tuples until a vacuum. :func:`scrub` rewrites them away
(SQLite: WAL checkpoint, ``VACUUM``, checkpoint; PostgreSQL: ``VACUUM FULL`` of ``store`` and
``store_vectors``, which writes new relation files, TOAST and indexes included).

PostgreSQL also keeps copies of column values in the planner statistics (``pg_statistic``, read
through ``pg_stats``: ``most_common_vals``, ``histogram_bounds``, ``most_common_elems``), written by
every ``ANALYZE`` (autovacuum runs it by itself) and untouched by ``VACUUM FULL``. :func:`scrub`
therefore runs ``ANALYZE`` on each wrapped table, so its statistics are computed from the remaining
rows only; a table left empty keeps its old statistics through ``ANALYZE`` (the server writes none from
no rows), so its rows of ``pg_statistic`` are deleted (superuser only; otherwise reported under
``statistics.stale``). Then, after the wait below, ``VACUUM FULL pg_catalog.pg_statistic`` rewrites
that catalog's heap without the dead tuples holding the old values; it needs a superuser or the
database's owner (another role's ``VACUUM`` skips it with a warning), so whether the catalog's file
was rewritten is read from its file node and reported (``statistics.catalog_rewritten``).

PostgreSQL's ``VACUUM FULL`` copies a deleted row into the new file when some snapshot taken before
the delete is still open anywhere in the database ("recently dead": another session's ``REPEATABLE
READ`` transaction, a long query, an idle-in-transaction connection, a replication slot's xmin).
Such a snapshot may still read the row, so the server keeps it, and the scan finds the erased text
in the new file. :func:`scrub` therefore first waits (at most :data:`SNAPSHOT_WAIT` seconds) until
no session of the database holds a snapshot older than the deletes, then rewrites; the backends
still holding one when the wait ends are reported (``held_by``), and the attestation names them.

:func:`raw_items` and :func:`files` give what an attestation reads: every value (read around the
adapter), every vector row, and the files of the tables. PostgreSQL's WAL segments, archive, replicas
and backups (and copies of a SQLite file) keep deleted rows in plaintext and are not read: the
attestation says so (``wrapped-wal-backups: unverified``, :mod:`.attest`).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["SNAPSHOT_WAIT", "files", "is_postgres", "raw_items", "scrub", "snapshot_holders", "statistics",
           "vector_rows"]

PAGE = 500
MAX_ITEMS = 1_000_000
SNAPSHOT_WAIT = 10.0
"""Seconds :func:`scrub` waits for older snapshots of the database to end before ``VACUUM FULL``."""


def _sqlite(inner: Any) -> sqlite3.Connection | None:
    conn = getattr(inner, "conn", None)
    return conn if isinstance(conn, sqlite3.Connection) else None


def is_postgres(inner: Any) -> bool:
    """Whether ``inner`` is LangGraph's ``PostgresStore`` (its tables on a PostgreSQL server)."""
    return type(inner).__name__ in ("PostgresStore",) and callable(getattr(inner, "_cursor", None))


_pg = is_postgres


def scrub(inner: Any, wait: float = SNAPSHOT_WAIT) -> dict[str, Any]:
    """Rewrite the wrapped store's files without its deleted rows (a no-op for in-memory stores);
    on PostgreSQL, after waiting up to ``wait`` seconds for older snapshots (module docstring)."""
    conn = _sqlite(inner)
    if conn is not None:
        lock = getattr(inner, "lock", None)
        if lock is not None:
            with lock:
                return _scrub_sqlite(conn)
        return _scrub_sqlite(conn)
    if _pg(inner):
        from psycopg import sql  # PostgresStore's driver: imported only when the store is one

        with inner._cursor() as cur:
            tables = ["store"] + (["store_vectors"] if _has_vectors(cur) else [])
            stats = _refresh_statistics(cur, tables)  # before the wait: it covers the catalog's dead tuples too
            start = time.monotonic()
            held = _await_horizon(cur, wait)
            waited = time.monotonic() - start
            for table in tables:
                cur.execute(sql.SQL("VACUUM FULL {}").format(sql.Identifier(table)))
            stats["catalog_rewritten"] = _rewrite_statistics_catalog(cur)
        return {"backend": "postgresql", "vacuum": True, "held_by": held, "waited_s": round(waited, 3),
                "statistics": stats}
    return {"backend": type(inner).__name__, "vacuum": False}


def _refresh_statistics(cur: Any, tables: list[str]) -> dict[str, Any]:
    """``ANALYZE`` each table this role may analyze (the table's or the database's owner, or a superuser:
    for another role the server skips it with a notice, so those are listed as ``skipped``); delete the statistics of a table left
    empty, which ``ANALYZE`` leaves as they were (superuser only: else listed as ``stale``)."""
    from psycopg import errors, sql

    empty, cleared, stale, analyzed, skipped = [], [], [], [], []
    for table in tables:
        name = sql.Identifier(table)
        cur.execute("SELECT pg_has_role(c.relowner, 'USAGE') OR pg_has_role(d.datdba, 'USAGE') OR r.rolsuper AS may "
                    "FROM pg_catalog.pg_class c, pg_catalog.pg_roles r, pg_catalog.pg_database d WHERE "
                    "c.oid = quote_ident(%s)::regclass AND r.rolname = current_user AND d.datname = current_database()",
                    (table,))
        row = cur.fetchone()
        if not (row["may"] if isinstance(row, dict) else row[0]):
            skipped.append(table)
            continue
        cur.execute(sql.SQL("ANALYZE {}").format(name))
        analyzed.append(table)
        cur.execute(sql.SQL("SELECT NOT EXISTS (SELECT 1 FROM {}) AS e").format(name))
        row = cur.fetchone()
        if row["e"] if isinstance(row, dict) else row[0]:
            empty.append(table)
    for table in empty:
        try:
            cur.execute("DELETE FROM pg_catalog.pg_statistic WHERE starelid = quote_ident(%s)::regclass", (table,))
            cleared.append(table)
        except errors.InsufficientPrivilege:  # not a superuser: pg_statistic is not writable
            stale.append(table)
    return {"analyzed": analyzed, "skipped": skipped, "cleared": cleared, "stale": stale}


def _rewrite_statistics_catalog(cur: Any) -> bool:
    """``VACUUM FULL pg_catalog.pg_statistic``; whether its heap was rewritten (a new file node: a role
    that is neither superuser nor the database's owner gets a warning and nothing is done)."""
    from psycopg import errors

    node = "SELECT pg_relation_filenode('pg_catalog.pg_statistic')::text AS n"
    cur.execute(node)
    row = cur.fetchone()
    before = row["n"] if isinstance(row, dict) else row[0]
    try:
        cur.execute("VACUUM FULL pg_catalog.pg_statistic")
    except errors.InsufficientPrivilege:
        return False
    cur.execute(node)
    row = cur.fetchone()
    return bool((row["n"] if isinstance(row, dict) else row[0]) != before)


def _await_horizon(cur: Any, wait: float) -> list[int]:
    """Wait until no other backend of the database holds a snapshot older than now (every delete
    this process committed is older); returns the pids still holding one when ``wait`` ran out."""
    cur.execute("SELECT pg_current_xact_id()::text AS x")  # a fresh xid, newer than every committed delete
    row = cur.fetchone()
    mark = int(row["x"] if isinstance(row, dict) else row[0])
    deadline, pause = time.monotonic() + max(0.0, wait), 0.02
    while True:
        held = snapshot_holders(cur, mark)
        if not held or time.monotonic() >= deadline:
            return held
        time.sleep(pause)
        pause = min(2 * pause, 0.5)


def snapshot_holders(cur: Any, mark: int) -> list[int]:
    """Backends of the current database (and replication slots, as pid 0) whose snapshot or
    transaction is older than the transaction id ``mark``: what keeps a row deleted before ``mark``
    "recently dead" through ``VACUUM FULL``. Autovacuum workers are left out (their lazy vacuum
    holds back no horizon)."""
    cur.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
        "AND backend_type <> 'autovacuum worker' AND ((backend_xmin IS NOT NULL AND "
        "age(backend_xmin) > age(xid(%(m)s::text::xid8))) OR (backend_xid IS NOT NULL AND "
        "age(backend_xid) > age(xid(%(m)s::text::xid8)))) "
        "UNION ALL SELECT 0 FROM pg_replication_slots WHERE (database IS NULL OR database = current_database()) "
        "AND xmin IS NOT NULL AND age(xmin) > age(xid(%(m)s::text::xid8))", {"m": str(mark)})
    return sorted(int(r["pid"] if isinstance(r, dict) else r[0]) for r in cur.fetchall())


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


_RELATIONS = (
    "WITH t AS (SELECT c.oid, c.reltoastrelid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname IN ('store', 'store_vectors')), "
    "r AS (SELECT oid FROM t UNION SELECT reltoastrelid FROM t WHERE reltoastrelid <> 0), "
    "i AS (SELECT oid FROM r UNION SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM r)) "
    "SELECT pg_relation_filepath(oid) AS p FROM i WHERE pg_relation_filepath(oid) IS NOT NULL")
"""The relations of the store's tables: the tables, their TOAST tables, and every index of either."""


def files(inner: Any, checkpoint: bool = True) -> list[str]:
    """The files holding the wrapped store's tables: the SQLite database and its WAL, or (on a
    local PostgreSQL server whose data directory this process can read) the relation files of
    ``store`` and ``store_vectors``, their indexes, TOAST tables and TOAST indexes.

    ``checkpoint``: first write the server's shared buffers to the files (``CHECKPOINT``, which
    flushes the whole cluster: seconds on a busy server). Not needed right after :func:`scrub`:
    ``VACUUM FULL`` writes its new files directly, not through the buffers, and whatever is
    written after it is newer than any erasure."""
    conn = _sqlite(inner)
    if conn is not None:
        path = conn.execute("PRAGMA database_list").fetchone()[2]
        return [p for p in (path, path + "-wal", path + "-journal") if path and os.path.exists(p)]
    if not _pg(inner):
        return []
    from psycopg import errors  # PostgresStore's driver: imported only when the store is one

    out: list[str] = []
    with inner._cursor() as cur:
        if checkpoint:
            try:
                cur.execute("CHECKPOINT")  # shared buffers to the files, so a scan reads what the server holds
            except Exception:  # noqa: BLE001 - not a superuser: the files may lag the buffers
                pass
        try:
            cur.execute("SELECT current_setting('data_directory') AS d")
        except errors.InsufficientPrivilege:  # a role without pg_read_all_settings: no file this process can name
            return []
        base = cur.fetchone()["d"]
        cur.execute(_RELATIONS)
        rels = [r["p"] for r in cur.fetchall()]
    for rel in rels:
        path = os.path.join(base, rel)
        out += [p for p in [path] + [f"{path}.{n}" for n in range(1, 64)] if os.path.exists(p)]
    return out


_STATS = (
    "SELECT count(*) AS n, coalesce(string_agg(concat_ws(E'\\n', s.most_common_vals::text, s.histogram_bounds::text, "
    "s.most_common_elems::text, array_to_string(s.most_common_vals::text::text[], E'\\n'), "
    "array_to_string(s.histogram_bounds::text::text[], E'\\n'), array_to_string(s.most_common_elems::text::text[], "
    "E'\\n')), E'\\n'), '') AS t FROM pg_catalog.pg_stats s WHERE s.schemaname = current_schema() AND s.tablename IN "
    "(SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
    "AND (c.relname IN ('store', 'store_vectors') OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN "
    "(to_regclass('store'), to_regclass('store_vectors')))))")
"""The planner statistics of the store's tables (and of expression indexes on them), in one query: the
value arrays as the server prints them and, element by element, unquoted (a JSON value's own escapes
then read as in the value itself)."""


def statistics(inner: Any) -> tuple[int, bytes]:
    """(columns with statistics, their value arrays as text) of the wrapped ``PostgresStore``'s
    tables (``pg_stats``: ``most_common_vals``, ``histogram_bounds``, ``most_common_elems``)."""
    if not _pg(inner):
        return 0, b""
    with inner._cursor() as cur:
        cur.execute(_STATS)
        row = cur.fetchone()
    n, text = (row["n"], row["t"]) if isinstance(row, dict) else (row[0], row[1])
    return int(n), str(text).encode("utf-8")
