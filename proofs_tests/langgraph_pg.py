"""A LangGraph ``PostgresStore`` in a schema of its own on the test server, dropped afterwards
(the PostgreSQL tests of the adapter share it; names are unique, so runs in parallel never collide)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
from conftest import pg_dsn
from psycopg.rows import dict_row


@contextlib.contextmanager
def postgres_store(prefix: str, **kw: Any) -> Iterator[Any]:
    """A set-up ``PostgresStore(conn, **kw)`` whose tables live in a fresh schema ``<prefix>_<random>``."""
    from langgraph.store.postgres import PostgresStore

    dsn, name = pg_dsn(), f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{name}"')
    conn = psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                           options=f"-c search_path={name}")
    try:
        inner = PostgresStore(conn, **kw)
        inner.setup()
        yield inner
    finally:
        conn.close()
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
