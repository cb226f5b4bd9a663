"""Which key store and master key a store uses (resolved once, when the store opens).

* ``MEMSTEWARD_KEYSTORE``: a ``postgresql://…[?schema=…]`` URL (:class:`~.pgkeys.PgKeyStore`, for many
  hosts) or a key file path (:class:`~.keyfile.FileKeyStore`);
* otherwise a SQLite store's key file is ``<store>.keys`` beside it, and a PostgreSQL store's keys live in
  the schema ``<schema>_keys`` of its database (name another database with ``MEMSTEWARD_KEYSTORE``);
* an in-memory store keeps its keys in memory under a random master key.

The master key comes from :func:`~.master.load_master` (``MEMSTEWARD_MASTER_KEY``,
``MEMSTEWARD_MASTER_KEY_FILE``, or the user's ``~/.config/memsteward/master.key``, made with a new store).
"""

from __future__ import annotations

import os

from .api import KeyStore
from .keyfile import FileKeyStore
from .master import default_key_file, ephemeral, load_master

KEYSTORE_ENV = "MEMSTEWARD_KEYSTORE"


def _pg_keys_url(url: str, schema: str) -> str:
    base, _, query = url.partition("?")
    rest = [kv for kv in query.split("&") if kv and not kv.startswith(("schema=", "tenant="))]  # memsteward's own
    return base + "?" + "&".join([*rest, f"schema={schema}_keys"])


def open_keys(location: str, schema: str | None, store_id: str | None, create: bool) -> KeyStore:
    """The key store of the store at ``location`` (a SQLite path, ``:memory:`` or a PostgreSQL URL whose
    store schema is ``schema``); ``create``: a new store's, made now."""
    if location == ":memory:":
        return FileKeyStore(":memory:", ephemeral(), store_id, create=True)
    master = load_master(default_key_file(), create=create)
    named = os.environ.get(KEYSTORE_ENV, "")
    if named.startswith(("postgresql://", "postgres://")) or (schema is not None and not named):
        from .pgkeys import PgKeyStore
        return PgKeyStore(named or _pg_keys_url(location, str(schema)), master, store_id, create=create)
    return FileKeyStore(named or location + ".keys", master, store_id, create=create)
