"""Connecting to a PostgreSQL store: the URL's ``schema`` (and ``tenant``), the psycopg connection, and
the schema set up or migrated under the store's advisory lock (:func:`connect_postgres`); the
connection the store then runs on is :class:`~memsteward.store.postgres.PgConnection`.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import InputError
from .connection import redact
from .postgres import PgConnection
from .schema import PG_MIGRATIONS, PG_SCHEMA, SCHEMA_VERSION, check_version

__all__ = ["connect_postgres", "pg_tenants"]


def _schema_name(url: str) -> tuple[str, str]:
    """Split the memsteward ``schema`` parameter (default ``memsteward``) off a libpq URL.

    >>> _schema_name("postgresql://u@db.example/test?schema=notes&sslmode=disable")
    ('postgresql://u@db.example/test?sslmode=disable', 'notes')
    >>> _schema_name("postgresql://u@db.example/test")[1]
    'memsteward'
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), "memsteward")
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
        raise InputError("the schema parameter must be a lower-case SQL identifier (a-z, 0-9, _)",
                         file=redact(url), field="schema")
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment)), schema


def _connect_raw(url: str, shown: str) -> Any:
    """An autocommit psycopg connection to the libpq URL ``url`` (InputError when it cannot connect)."""
    try:
        import psycopg
    except ImportError:
        raise InputError("PostgreSQL stores need psycopg 3: pip install 'memsteward[postgres]'", file=shown) from None
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=10, application_name=f"memsteward:{os.getpid()}")
    except (psycopg.Error, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot connect to PostgreSQL: {first[:200]}", file=shown) from None


def pg_tenants(url: str) -> list[str]:
    """The tenants with a store beside the base schema of ``url`` (:mod:`.tenants`), sorted."""
    from .tenants import TENANT_SEP, is_tenant_name

    dsn, schema = _schema_name(url)
    raw = _connect_raw(dsn, redact(url))
    try:
        prefix = schema + TENANT_SEP
        rows = raw.execute("SELECT table_schema FROM information_schema.tables WHERE table_name = 'memsteward_schema' "
                           "AND starts_with(table_schema, %s)", (prefix,)).fetchall()
    finally:
        raw.close()
    names = (r[0][len(prefix):] for r in rows)
    return sorted(n for n in names if is_tenant_name(n))


def connect_postgres(url: str, create: bool = True, migrate: bool = False, tenant: str | None = None) -> PgConnection:
    """Connect, check the schema is memsteward's (or empty) and set it up, under the store's lock.
    ``tenant``: the tenant's schema beside the URL's (:func:`~memsteward.store.tenants.tenant_schema`).

    Raises InputError (exit 2) for a DSN that cannot connect, a missing driver, a schema holding
    foreign tables or a schema version this release does not know; nothing is changed then.
    """
    shown = redact(url)
    try:
        import psycopg
        from psycopg import sql
    except ImportError:
        raise InputError("PostgreSQL stores need psycopg 3: pip install 'memsteward[postgres]'", file=shown) from None
    # psycopg logs the pipeline it abandons on a lost connection ("error ignored terminating …"); the
    # store reports that loss itself, in one line: keep the library's warning off stderr.
    logging.getLogger("psycopg").addHandler(logging.NullHandler())
    dsn, schema = _schema_name(url)
    if tenant is not None:
        from .tenants import tenant_schema

        schema = tenant_schema(schema, tenant, shown)
    raw = _connect_raw(dsn, shown)
    conn = PgConnection(raw, schema)
    name = sql.Identifier(schema)  # quoted by psycopg, never by hand
    try:
        tables = {r[0] for r in raw.execute("SELECT table_name FROM information_schema.tables "
                                            "WHERE table_schema = %s", (schema,))}
        if tables and "memsteward_schema" not in tables:
            raise InputError(f"schema {schema!r} holds tables that are not a memsteward store "
                             f"({', '.join(sorted(tables)[:5])}); use another ?schema=", file=shown, field="schema")
        if not tables and not create:
            raise InputError(f"no memsteward store in schema {schema!r} (create one with `memsteward store import`)",
                             file=shown)
        if "memsteward_schema" in tables:  # an existing store: read its version, take no lock
            row = raw.execute(sql.SQL("SELECT version FROM {}.memsteward_schema WHERE one = 1").format(name)).fetchone()
            version = 1 if row is None else int(row[0])
            check_version(version, f"schema {schema!r}", shown, migrate)
            if version < SCHEMA_VERSION:  # `store migrate`: every step in one transaction, under the write lock
                raw.execute("BEGIN")
                raw.execute("SELECT pg_advisory_xact_lock(%s)", (conn.lock_key,))
                raw.execute(sql.SQL("SET LOCAL search_path TO {}").format(name))
                (version,) = raw.execute("SELECT version FROM memsteward_schema WHERE one = 1").fetchone() or (1,)
                for step in PG_MIGRATIONS[int(version) - 1:]:
                    raw.execute(step(raw))
                raw.execute("UPDATE memsteward_schema SET version = %s WHERE one = 1", (SCHEMA_VERSION,))
                raw.execute("COMMIT")
                conn.migrated = (int(version), SCHEMA_VERSION)
        else:  # a new store: the schema is created under the store's lock (concurrent creators wait)
            raw.execute("BEGIN")
            raw.execute("SELECT pg_advisory_xact_lock(%s)", (conn.lock_key,))
            raw.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
            raw.execute(sql.SQL("SET LOCAL search_path TO {}").format(name))
            raw.execute(PG_SCHEMA)
            raw.execute("INSERT INTO memsteward_schema(one, version) VALUES (1, %s) ON CONFLICT DO NOTHING",
                        (SCHEMA_VERSION,))
            raw.execute("COMMIT")
        raw.execute(sql.SQL("SET search_path TO {}").format(name))
    except BaseException:
        if not raw.closed:
            try:
                raw.execute("ROLLBACK")
            except psycopg.Error:
                pass
            raw.close()
        raise
    return conn
