"""The embedded key store: a SQLite file beside the store (``<store>.keys``), apart from the data.

One row per live DEK, wrapped under the master key (:class:`~.envelope.Wrapper`), plus one row naming
the format, the store it belongs to, the master key's id and the wrapped index key. The file runs
with ``secure_delete = ON`` (a deleted row's bytes and freed pages are overwritten with zeros) and in
WAL mode; :meth:`FileKeyStore.destroy` checkpoints the WAL with TRUNCATE after it commits, so neither
the file nor its WAL keeps a destroyed key. A copy of the key file taken earlier still holds it,
wrapped under the master key: back the key file up apart from the data, or rotate the master key
(:meth:`FileKeyStore.rotate`) to make every older copy useless.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Collection

from .api import KEYFILE_FORMAT, KeyStoreError, VersionRef
from .envelope import Undecryptable, Wrapper, new_dek
from .master import MasterKey

_SCHEMA = """
CREATE TABLE IF NOT EXISTS keyfile(one INTEGER PRIMARY KEY CHECK (one = 1), format INTEGER NOT NULL,
  store_id TEXT NOT NULL, kid TEXT NOT NULL, index_key BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS deks(id TEXT NOT NULL, version INTEGER NOT NULL, wrapped BLOB NOT NULL,
  PRIMARY KEY (id, version)) WITHOUT ROWID;
"""
_PART = 20_000  # refs per statement


def _insert_deks(c: sqlite3.Connection, rows: list[tuple[str, int, bytes]]) -> int:
    """Insert the new DEK rows in one committed transaction (a ref that has a key keeps it); the rows
    inserted."""
    before = c.total_changes
    c.execute("BEGIN IMMEDIATE")
    try:
        for start in range(0, len(rows), _PART):
            c.executemany("INSERT OR IGNORE INTO deks(id, version, wrapped) VALUES (?,?,?)", rows[start:start + _PART])
        made = c.total_changes - before
        c.execute("COMMIT")
    except BaseException:
        c.execute("ROLLBACK")
        raise
    return made


def check_header(fmt: int, store: str, kid: str, master: MasterKey, store_id: str | None, shown: str) -> None:
    """Refuse a key store of a newer format, of another store, or wrapped under another master key."""
    if fmt > KEYFILE_FORMAT:
        raise KeyStoreError(f"the key store has format {fmt}, written by a newer release; this release "
                            f"reads format {KEYFILE_FORMAT} (upgrade memsteward)", file=shown, field="format")
    if store_id is not None and store != store_id:
        raise KeyStoreError(f"the key store belongs to store {store!r}, not {store_id!r}", file=shown,
                            field="store_id")
    if kid != master.kid:
        raise KeyStoreError(f"wrong master key (from {master.source}): the key store was wrapped under key id "
                            f"{kid}, this key's id is {master.kid}; nothing was changed", file=shown,
                            field="master_key")


class FileKeyStore:
    """:class:`~.api.KeyStore` in a SQLite file (``:memory:`` for an in-memory store)."""

    def __init__(self, path: str, master: MasterKey, store_id: str | None = None, create: bool = False) -> None:
        if path != ":memory:" and not os.path.exists(path):
            if not create:
                raise KeyStoreError("key file not found: the store's data keys are missing (restore the key "
                                    "file, or name it with MEMSTEWARD_KEYSTORE)", file=path)
            if store_id is None:
                raise KeyStoreError("a new key file needs the store's id", file=path)
        self.path = path
        self.checkpointed = True  # whether the last destroy's WAL checkpoint completed
        try:
            self.conn = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
            self._setup(master, store_id, create)
        except sqlite3.DatabaseError as exc:
            raise KeyStoreError(f"cannot open the key file: {exc}", file=path) from None

    def _setup(self, master: MasterKey, store_id: str | None, create: bool) -> None:
        c = self.conn
        c.execute("PRAGMA secure_delete = ON")
        if self.path != ":memory:":
            c.execute("PRAGMA journal_mode = WAL")
            c.execute("PRAGMA synchronous = FULL")
        tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "keyfile" not in tables:
            if tables or not create or store_id is None:
                raise KeyStoreError("not a memsteward key file", file=self.path)
            wrapper = Wrapper(master.key, store_id)
            c.executescript("BEGIN IMMEDIATE;" + _SCHEMA)
            c.execute("INSERT INTO keyfile VALUES (1, ?, ?, ?, ?)",
                      (KEYFILE_FORMAT, store_id, master.kid, wrapper.wrap_index(new_dek())))
            c.execute("COMMIT")
        fmt, store, kid, index_blob = c.execute("SELECT format, store_id, kid, index_key FROM keyfile").fetchone()
        check_header(int(fmt), store, kid, master, store_id, self.path)
        self.store_id: str = store
        self._wrapper = Wrapper(master.key, store)
        self._index = self._wrapper.unwrap_index(index_blob)

    def index_key(self) -> bytes:
        return self._index

    def create(self, refs: Collection[VersionRef]) -> dict[VersionRef, bytes]:
        """A fresh DEK per new ref, committed (one transaction); existing refs keep theirs."""
        fresh, rows = self._wrapper.fresh(refs)
        # every ref new (the write path's case): the fresh keys; else read back the ones that existed
        return fresh if _insert_deks(self.conn, rows) == len(rows) else self.get(fresh)

    def get(self, refs: Collection[VersionRef]) -> dict[VersionRef, bytes]:
        """The live DEKs of ``refs`` (a destroyed one is absent)."""
        out: dict[VersionRef, bytes] = {}
        ordered = sorted((str(i), int(v)) for i, v in refs)
        for start in range(0, len(ordered), _PART):
            part = json.dumps(ordered[start:start + _PART])
            for i, v, blob in self.conn.execute(
                    "SELECT d.id, d.version, d.wrapped FROM json_each(?) j CROSS JOIN deks d "
                    "ON d.id = json_extract(j.value, '$[0]') AND d.version = json_extract(j.value, '$[1]')", (part,)):
                out[(i, int(v))] = self._unwrap(i, int(v), blob)
        return out

    def _unwrap(self, ident: str, version: int, blob: bytes) -> bytes:
        try:
            return self._wrapper.unwrap(ident, version, blob)
        except Undecryptable as exc:
            raise KeyStoreError(f"damaged key file: {exc}", file=self.path, field="deks") from None

    def destroy(self, refs: Collection[VersionRef]) -> int:
        """Delete the refs' DEKs (one transaction), then checkpoint the WAL (TRUNCATE)."""
        ordered = sorted({(str(i), int(v)) for i, v in refs})
        c = self.conn
        gone = 0
        c.execute("BEGIN IMMEDIATE")
        try:
            for start in range(0, len(ordered), _PART):
                cur = c.executemany("DELETE FROM deks WHERE id = ? AND version = ?", ordered[start:start + _PART])
                gone += cur.rowcount
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        self.checkpointed = self.checkpoint()
        return gone

    def checkpoint(self) -> bool:
        """WAL checkpoint (TRUNCATE): the WAL's frames go into the file and the WAL is emptied."""
        if self.path == ":memory:":
            return True
        busy, log, done = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return busy == 0 and log in (0, -1) and done in (0, -1)

    def rotate(self, new: MasterKey) -> int:
        """Rewrap every DEK and the index key under ``new`` (one transaction), then checkpoint; returns the DEK count."""
        c = self.conn
        fresh = Wrapper(new.key, self.store_id)
        c.execute("BEGIN IMMEDIATE")
        try:
            rows = c.execute("SELECT id, version, wrapped FROM deks").fetchall()
            c.executemany("UPDATE deks SET wrapped = ? WHERE id = ? AND version = ?",
                          [(fresh.wrap(i, v, self._unwrap(i, v, b)), i, v) for i, v, b in rows])
            c.execute("UPDATE keyfile SET kid = ?, index_key = ? WHERE one = 1",
                      (new.kid, fresh.wrap_index(self._index)))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        self._wrapper = fresh
        self.checkpoint()
        return len(rows)

    def adopt_index_key(self, key: bytes) -> None:
        """Take another store's index key (``store copy``: its keyed digests stay valid); only while empty."""
        if self.count():
            raise KeyStoreError("the key store already holds keys: its index key stays", file=self.path)
        self.conn.execute("UPDATE keyfile SET index_key = ? WHERE one = 1", (self._wrapper.wrap_index(key),))
        self._index = key

    def count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM deks").fetchone()[0])

    def pooled_ids(self) -> list[str]:
        """The ids of the pooled keys (refs ``(key id, 0)``) it holds."""
        return [str(r[0]) for r in self.conn.execute("SELECT id FROM deks WHERE version = 0")]

    def files(self) -> list[str]:
        """The files that hold this key store (the deep scan reads them)."""
        if self.path == ":memory:":
            return []
        return [p for p in (self.path, self.path + "-wal", self.path + "-journal") if os.path.exists(p)]

    def close(self) -> None:
        self.conn.close()
