"""Opening a store from a path or URL: the one place that picks a backend from a string.

``postgresql://…[?schema=name]`` (psycopg 3), a SQLite file (``sqlite:///x.db`` or a plain path),
``:memory:``, or a ``.json`` export loaded into an in-memory SQLite store. ``?tenant=name`` (or
``tenant=``) opens that tenant's own store beside it (:mod:`.tenants`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..errors import InputError
from ..repair.artifacts import parse_store_document, read_json
from .connection import is_postgres_url, redact
from .pg_connect import connect_postgres
from .sqlstore import SqlStore
from .tenants import check_tenant, list_tenants, split_tenant, sqlite_tenant_path, with_tenant

__all__ = ["list_tenants", "open_store", "store_file"]

SQLITE_MAGIC = b"SQLite format 3\x00"


def open_store(path: str = ":memory:", create: bool = False, migrate: bool = False,
               tenant: str | None = None) -> SqlStore:
    """Open a store by path or URL (see the module docstring); ``tenant`` (or ``?tenant=`` in the
    URL) opens that tenant's store instead (created like any store: with ``create``).

    A store of an older schema version is refused (InputError naming ``memsteward store migrate``)
    unless ``migrate``, which upgrades it in one transaction (``.migrated`` = (from, to)).

    Raises
    ------
    InputError
        no such store (and not ``create``), not a SQLite database or a .json export, a PostgreSQL
        URL that cannot connect, a schema version this release does not read, or a bad tenant name.
    """
    path, named = split_tenant(path)
    if tenant is not None:
        check_tenant(tenant, redact(path) if is_postgres_url(path) else path)
        if named is not None and named != tenant:
            raise InputError("the URL and the tenant argument name different tenants", file=redact(path),
                             field="tenant")
    tenant = tenant if tenant is not None else named
    if is_postgres_url(path):
        store = SqlStore(with_tenant(path, tenant),
                         conn=connect_postgres(path, create=create, migrate=migrate, tenant=tenant))
        store.tenant = tenant
        return store
    if path.startswith("sqlite:///"):
        path = path[len("sqlite:///"):] or ":memory:"
    if tenant is not None:
        store = _open_tenant_file(path, tenant, create, migrate)
        store.tenant = tenant
        return store
    if path == ":memory:":
        return SqlStore()
    p = Path(path)
    if p.suffix.lower() == ".json":
        store = SqlStore()
        doc, text = read_json(path)
        store.import_snapshot(parse_store_document(doc, path, text), file=path)
        return store
    if not p.exists() and not create:
        raise InputError("store not found (create one with `memsteward store import`)", file=path)
    if p.exists():
        with open(p, "rb") as fh:
            head = fh.read(16)
        if head and head != SQLITE_MAGIC:
            raise InputError("not a SQLite database or a .json store export", file=path)
    try:
        return SqlStore(path, migrate=migrate)
    except sqlite3.DatabaseError as exc:
        raise InputError(f"cannot open store: {exc}", file=path) from None


def store_file(path: str) -> str | None:
    """The SQLite file (or .json export) a store path names, a ``?tenant=`` resolved to the tenant's
    file; None for a PostgreSQL URL or ``:memory:``. A bad tenant name raises InputError."""
    base, tenant = split_tenant(path)
    if is_postgres_url(base):
        return None
    base = base[len("sqlite:///"):] if base.startswith("sqlite:///") else base
    if tenant is None:
        return None if base == ":memory:" else base
    return sqlite_tenant_path(base, tenant)


def _open_tenant_file(base: str, tenant: str, create: bool, migrate: bool) -> SqlStore:
    """The SQLite store of ``tenant`` beside the store file ``base`` (which need not exist)."""
    if Path(base).suffix.lower() == ".json":
        raise InputError("a .json export has no tenants: name a store file or a postgresql:// URL", file=base,
                         field="tenant")
    path = sqlite_tenant_path(base, tenant)
    if create:
        Path(path).parent.mkdir(exist_ok=True)
    return open_store(path, create=create, migrate=migrate)
