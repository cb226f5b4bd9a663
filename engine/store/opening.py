"""Opening a store from a path or URL: the one place that picks a backend from a string.

``postgresql://…[?schema=name]`` (psycopg 3), a SQLite file (``sqlite:///x.db`` or a plain path),
``:memory:``, or a ``.json`` export loaded into an in-memory SQLite store.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..errors import InputError
from ..repair.artifacts import parse_store_document, read_json
from .connection import is_postgres_url
from .postgres import connect_postgres
from .sqlstore import SqlStore

__all__ = ["open_store"]

SQLITE_MAGIC = b"SQLite format 3\x00"


def open_store(path: str = ":memory:", create: bool = False, migrate: bool = False) -> SqlStore:
    """Open a store by path or URL (see the module docstring).

    A store of an older schema version is refused (InputError naming ``memsteward store migrate``)
    unless ``migrate``, which upgrades it in one transaction (``.migrated`` = (from, to)).

    Raises
    ------
    InputError
        no such store (and not ``create``), not a SQLite database or a .json export, a PostgreSQL
        URL that cannot connect, or a schema version this release does not read.
    """
    if is_postgres_url(path):
        return SqlStore(path, conn=connect_postgres(path, create=create, migrate=migrate))
    if path.startswith("sqlite:///"):
        path = path[len("sqlite:///"):] or ":memory:"
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
