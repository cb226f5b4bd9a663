"""Test helper: a store turned back into what a release before encryption at rest (schema ≤ 5) wrote."""

from __future__ import annotations

import os

from sql_dialect import sql

from memsteward.store.sqlstore import Store


def to_plaintext(store: Store) -> None:
    """Every version's content and meta in plaintext, no ``store_keys`` table, no key store. Closes ``store``."""
    rows = store.conn.execute("SELECT id, version, content, meta FROM versions").fetchall()
    plain = store.vault.open([(i, int(v), c, m) for i, v, c, m in rows])
    for (i, v, _, _), (c, m) in zip(rows, plain):
        store.conn.execute(sql(store, "UPDATE versions SET content = ?, meta = ?, sha256 = NULL WHERE id = ? "
                                      "AND version = ? AND erased = 0"), (c, m, i, v))
    store.conn.execute("DROP TABLE store_keys")
    keys = store.vault.keys
    store.close()
    if store.backend == "sqlite":
        for p in (keys.path, keys.path + "-wal", keys.path + "-shm"):
            if os.path.exists(p):
                os.remove(p)
    else:
        import psycopg

        from memsteward.shred.pgkeys import _split
        dsn, schema, _ = _split(store.url)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f'DROP SCHEMA IF EXISTS "{schema}_keys" CASCADE')
