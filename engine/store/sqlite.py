"""The SQLite backend's setup: PRAGMAs, the schema of a new database, the checks and migration of an
existing one (``memsteward store migrate``: every pending step and the new version in one transaction)."""

from __future__ import annotations

import sqlite3

from ..errors import InputError
from .schema import CORE_TABLES, SCHEMA_VERSION, SQLITE_MIGRATIONS, SQLITE_SCHEMA, check_version

__all__ = ["connect_sqlite", "setup_sqlite"]


def connect_sqlite(path: str) -> sqlite3.Connection:
    """One autocommit connection (``isolation_level=None``: the store issues BEGIN and COMMIT itself),
    which several executor threads may share one call at a time (``executors.Serialized``)."""
    return sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)


def setup_sqlite(conn: sqlite3.Connection, path: str, migrate: bool) -> tuple[int, int] | None:
    """PRAGMAs and the schema: created in an empty database, checked (version, foreign tables)
    in an existing one — which is changed only by ``migrate`` (one transaction). Returns
    (from, to) when it migrated, else None."""
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed (not every build defaults to it)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    tables.discard("sqlite_sequence")
    if tables and not CORE_TABLES <= tables:
        raise InputError(f"the database holds tables that are not a memsteward store "
                         f"({', '.join(sorted(tables)[:5])})", file=path)
    version = SCHEMA_VERSION
    if tables:
        row = (conn.execute("SELECT version FROM memsteward_schema WHERE one = 1").fetchone()
               if "memsteward_schema" in tables else None)
        version = 1 if row is None else int(row[0])
        check_version(version, "the database", path, migrate)
    if path != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
    if not tables:
        conn.executescript(f"BEGIN IMMEDIATE; {SQLITE_SCHEMA} INSERT OR IGNORE INTO memsteward_schema(one, version) "
                           f"VALUES (1, {SCHEMA_VERSION}); COMMIT;")
        return None
    if version >= SCHEMA_VERSION:
        return None
    steps = "".join(step(conn) for step in SQLITE_MIGRATIONS[version - 1:])
    try:
        conn.executescript(f"BEGIN IMMEDIATE; {steps}; INSERT OR REPLACE INTO memsteward_schema(one, "
                           f"version) VALUES (1, {SCHEMA_VERSION}); COMMIT;")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return (version, SCHEMA_VERSION)
