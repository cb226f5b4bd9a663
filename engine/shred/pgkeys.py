"""The key store for many hosts: tables in a separate PostgreSQL database or schema.

``postgresql://…/keys?schema=memsteward_keys`` names it (``MEMSTEWARD_KEYSTORE``); many stores share
it, each under its store id. A DEK row is wrapped under the master key, which PostgreSQL never sees.

What this server then holds, plainly: a destroyed DEK's row is deleted and its dead tuple is left to
(auto)vacuum, so until then its bytes stay in the table's pages; the server's WAL segments, WAL
archive, streaming replicas and base backups keep the wrapped DEK for as long as they are kept. All
of those hold it *wrapped*: rotating the master key (``memsteward store rotate-key``) and discarding
the old one makes every older copy useless. Keep the key database's backups apart from the data's.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Collection
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .api import KEYFILE_FORMAT, KeyStoreError, VersionRef
from .envelope import Undecryptable, Wrapper, new_dek
from .keyfile import check_header
from .master import MasterKey

_PART = 20_000
# Every statement names the key schema as {K}, filled in by psycopg's sql.Identifier (never an f-string).
_HAS_KEYFILE = "SELECT to_regclass(%s) IS NOT NULL"
_HEAD_OF = "SELECT format, store_id, kid, index_key FROM {K}.keyfile WHERE store_id = %s"
_ANY_HEAD = "SELECT format, store_id, kid, index_key FROM {K}.keyfile LIMIT 1"
_CREATE_SCHEMA = "CREATE SCHEMA IF NOT EXISTS {K}"
_CREATE_KEYFILE = ("CREATE TABLE IF NOT EXISTS {K}.keyfile(store_id TEXT PRIMARY KEY, format INTEGER NOT NULL, "
                   "kid TEXT NOT NULL, index_key BYTEA NOT NULL)")
_CREATE_DEKS = ("CREATE TABLE IF NOT EXISTS {K}.deks(store_id TEXT NOT NULL, id TEXT NOT NULL, version BIGINT NOT NULL, "
                "wrapped BYTEA NOT NULL, PRIMARY KEY (store_id, id, version))")
_INSERT_HEAD = "INSERT INTO {K}.keyfile VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING"
# new DEK rows from arrays (store id, ids, versions, wrapped keys); a ref that has one keeps it
_INSERT_DEKS = ("INSERT INTO {K}.deks(store_id, id, version, wrapped) SELECT %s, r.id, r.version, r.wrapped "
                "FROM unnest(%s::text[], %s::bigint[], %s::bytea[]) AS r(id, version, wrapped) "
                "ON CONFLICT DO NOTHING RETURNING id, version")
_GET_DEKS = ("SELECT d.id, d.version, d.wrapped FROM unnest(%s::text[], %s::bigint[]) AS r(id, version) "
             "JOIN {K}.deks d ON d.store_id = %s AND d.id = r.id AND d.version = r.version")
_DESTROY_DEKS = ("DELETE FROM {K}.deks d USING unnest(%s::text[], %s::bigint[]) AS r(id, version) "
                 "WHERE d.store_id = %s AND d.id = r.id AND d.version = r.version")
_ALL_DEKS_FOR_UPDATE = "SELECT id, version, wrapped FROM {K}.deks WHERE store_id = %s FOR UPDATE"
_REWRAP_DEK = "UPDATE {K}.deks SET wrapped = %s WHERE store_id = %s AND id = %s AND version = %s"
_SET_HEAD = "UPDATE {K}.keyfile SET kid = %s, index_key = %s WHERE store_id = %s"
_SET_INDEX_KEY = "UPDATE {K}.keyfile SET index_key = %s WHERE store_id = %s"
_COUNT_DEKS = "SELECT COUNT(*) FROM {K}.deks WHERE store_id = %s"
_POOLED_IDS = "SELECT id FROM {K}.deks WHERE store_id = %s AND version = 0"  # pooled keys' refs are (key id, 0)


def _split(url: str) -> tuple[str, str, str]:
    """(libpq DSN, schema, the URL without its password) of a key store URL."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), "memsteward_keys")
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
        raise KeyStoreError("the key store's schema must be a lower-case SQL identifier", field="schema")
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    netloc = parts.netloc.rsplit("@", 1)
    shown_netloc = (netloc[0].split(":", 1)[0] + ":***@" + netloc[1]) if len(netloc) == 2 and ":" in netloc[0] \
        else parts.netloc
    shown = urlunsplit((parts.scheme, shown_netloc, parts.path, "", ""))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment)), schema, shown


class PgKeyStore:
    """:class:`~.api.KeyStore` in PostgreSQL (psycopg 3), in its own connection and schema."""

    residue = ("the key server keeps a destroyed key's wrapped bytes in dead rows until VACUUM and in its WAL, "
               "replicas and backups, which no client can read (they open only under the master key: rotate it "
               "with `memsteward store rotate-key` and discard the old one to make them useless)")
    """What destroying a key cannot reach here, stated by the attestation (``unverified``, never ``pass``)."""

    def __init__(self, url: str, master: MasterKey, store_id: str | None = None, create: bool = False) -> None:
        dsn, self.schema, self.path = _split(url)
        try:
            import psycopg
        except ImportError:
            raise KeyStoreError("a PostgreSQL key store needs psycopg 3", file=self.path) from None
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        try:
            self.conn: Any = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
        except (psycopg.Error, ValueError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise KeyStoreError(f"cannot reach the key store: {first[:200]}", file=self.path) from None
        try:
            self._setup(master, store_id, create)
        except psycopg.Error as exc:
            self.conn.close()
            raise KeyStoreError(f"key store error: {str(exc).strip()[:200]}", file=self.path) from None

    def _q(self, statement: str) -> Any:
        """``statement`` with ``{K}`` bound to the key schema as a quoted identifier (psycopg ``sql``)."""
        from psycopg import sql

        return sql.SQL(statement).format(K=sql.Identifier(self.schema))  # type: ignore[arg-type]

    def _setup(self, master: MasterKey, store_id: str | None, create: bool) -> None:
        from psycopg import sql

        keyfile = sql.Identifier(self.schema, "keyfile").as_string(self.conn)
        row = self.conn.execute(_HAS_KEYFILE, (keyfile,)).fetchone()
        head = None
        if row[0]:
            head = self.conn.execute(self._q(_HEAD_OF), (store_id or "",)).fetchone() if store_id else \
                self.conn.execute(self._q(_ANY_HEAD)).fetchone()
        if head is None:
            if not create or store_id is None:
                raise KeyStoreError(f"the key store holds no keys of store {store_id!r}", file=self.path)
            head = self._create(master, store_id)
        fmt, store, kid, index_blob = head
        check_header(int(fmt), store, kid, master, store_id, self.path)
        self.store_id: str = store
        self._wrapper = Wrapper(master.key, store)
        self._index = self._wrapper.unwrap_index(bytes(index_blob))

    def _create(self, master: MasterKey, store_id: str) -> tuple[int, str, str, bytes]:
        blob = Wrapper(master.key, store_id).wrap_index(new_dek())
        with self.conn.transaction():
            self.conn.execute(self._q(_CREATE_SCHEMA))
            self.conn.execute(self._q(_CREATE_KEYFILE))
            self.conn.execute(self._q(_CREATE_DEKS))
            self.conn.execute(self._q(_INSERT_HEAD), (store_id, KEYFILE_FORMAT, master.kid, blob))
        return KEYFILE_FORMAT, store_id, master.kid, blob

    def index_key(self) -> bytes:
        return self._index

    def create(self, refs: Collection[VersionRef]) -> dict[VersionRef, bytes]:
        """A fresh DEK per new ref, committed; existing refs keep theirs. Each part of the refs is one
        INSERT of arrays (one round trip; all parts in one transaction); only refs whose key was there
        already are read back."""
        fresh, wrapped = self._wrapper.fresh(refs)
        made = self._insert(wrapped)
        # every ref new (the write path's case): the fresh keys; else read back the ones that existed
        if len(made) == len(fresh):
            return fresh
        return {**{r: fresh[r] for r in made}, **self.get([r for r in fresh if r not in made])}

    def stage(self, refs: Collection[VersionRef]) -> tuple[dict[VersionRef, bytes], Callable[[], None]]:
        """Fresh DEKs of new refs (the write path's pooled keys, under random ids) and the durable commit
        that stores them, to be run: the caller may seal with the keys meanwhile, and waits for the
        commit before any commit that names them (:meth:`memsteward.shred.vault.Vault.seal_pooled_deferred`).
        The commit fails if a ref had a key already."""
        fresh, wrapped = self._wrapper.fresh(refs)

        def commit() -> None:
            if len(self._insert(wrapped)) != len(fresh):
                raise KeyStoreError("a new key's id was taken already", file=self.path, field="deks")
        return fresh, commit

    def _insert(self, wrapped: list[tuple[str, int, bytes]]) -> set[VersionRef]:
        """Insert wrapped DEK rows (one INSERT of arrays per part, all parts in one transaction); the refs
        that were new."""
        made: set[VersionRef] = set()
        with self.conn.transaction() if len(wrapped) > _PART else contextlib.nullcontext():
            for start in range(0, len(wrapped), _PART):
                part = wrapped[start:start + _PART]
                made.update((i, int(v)) for i, v in self.conn.execute(self._q(_INSERT_DEKS), (
                    self.store_id, [r[0] for r in part], [r[1] for r in part], [r[2] for r in part])))
        return made

    def get(self, refs: Collection[VersionRef]) -> dict[VersionRef, bytes]:
        out: dict[VersionRef, bytes] = {}
        ordered = sorted({(str(i), int(v)) for i, v in refs})
        for start in range(0, len(ordered), _PART):
            part = ordered[start:start + _PART]
            for i, v, blob in self.conn.execute(self._q(_GET_DEKS), (
                    [i for i, _ in part], [v for _, v in part], self.store_id)):
                out[(i, int(v))] = self._unwrap(i, int(v), bytes(blob))
        return out

    def _unwrap(self, ident: str, version: int, blob: bytes) -> bytes:
        try:
            return self._wrapper.unwrap(ident, version, blob)
        except Undecryptable as exc:
            raise KeyStoreError(f"damaged key store: {exc}", file=self.path, field="deks") from None

    def destroy(self, refs: Collection[VersionRef]) -> int:
        ordered = sorted({(str(i), int(v)) for i, v in refs})
        gone = 0
        with self.conn.transaction():
            for start in range(0, len(ordered), _PART):
                part = ordered[start:start + _PART]
                cur = self.conn.execute(self._q(_DESTROY_DEKS), (
                    [i for i, _ in part], [v for _, v in part], self.store_id))
                gone += cur.rowcount
        return gone

    def rotate(self, new: MasterKey) -> int:
        fresh = Wrapper(new.key, self.store_id)
        with self.conn.transaction():
            rows = self.conn.execute(self._q(_ALL_DEKS_FOR_UPDATE),
                                     (self.store_id,)).fetchall()
            with self.conn.cursor() as cur:
                cur.executemany(self._q(_REWRAP_DEK),
                                [(fresh.wrap(i, v, self._unwrap(i, v, bytes(b))), self.store_id, i, v)
                                 for i, v, b in rows])
            self.conn.execute(self._q(_SET_HEAD),
                              (new.kid, fresh.wrap_index(self._index), self.store_id))
        self._wrapper = fresh
        return len(rows)

    def adopt_index_key(self, key: bytes) -> None:
        """Take another store's index key (``store copy``: its keyed digests stay valid); only while empty."""
        if self.count():
            raise KeyStoreError("the key store already holds keys: its index key stays", file=self.path)
        self.conn.execute(self._q(_SET_INDEX_KEY),
                          (self._wrapper.wrap_index(key), self.store_id))
        self._index = key

    def count(self) -> int:
        return int(self.conn.execute(self._q(_COUNT_DEKS),
                                     (self.store_id,)).fetchone()[0])

    def pooled_ids(self) -> list[str]:
        """The ids of the pooled keys (refs ``(key id, 0)``) it holds."""
        return [str(r[0]) for r in self.conn.execute(self._q(_POOLED_IDS), (self.store_id,))]

    def files(self) -> list[str]:
        return []  # the server's files are not readable from a client

    def close(self) -> None:
        self.conn.close()
