"""The backend layer under :class:`memsteward.repair.store.Store`: connection, schema and SQL dialect.

The store's semantics (versions, states, edges, events, plan steps, the hash-chained audit log,
erasure, write fencing) live once, in ``store.py``, written in the SQL both backends accept
(SQLite's ``?`` placeholders and ``json_each``). This module holds only what differs per backend:

* SQLite — the file/``:memory:`` connection, PRAGMAs, the schema and its column migrations,
  ``BEGIN IMMEDIATE`` (one writer at a time).
* PostgreSQL — a psycopg 3 connection (``memsteward[postgres]``) behind :class:`PgConnection`,
  which rewrites the few SQLite spellings (placeholders, ``INSERT OR IGNORE``, ``json_each``) into
  PostgreSQL's; the PostgreSQL schema (``COLLATE "C"`` text, so ids order as in SQLite; BIGINT;
  a trigger keeping ``audit`` append-only) in its own PostgreSQL schema (``?schema=`` in the URL);
  and write transactions serialised by one transaction-scoped advisory lock per store
  (``pg_advisory_xact_lock``) taken before the transaction reads anything. Every write transaction
  appends to the audit chain, so that lock is the lock on the chain's head: the chain is one total
  order, and two events' barriers and publications never interleave. Serialization failures and
  deadlocks (SQLSTATE 40001 / 40P01) are retried by :func:`retrying` with a bounded, jittered
  exponential backoff.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import logging
import os
import random
import re
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import InputError
from ..redaction import redact

__all__ = ["db_errors", "PG_SCHEMA", "SCHEMA_VERSION", "SQLITE_SCHEMA", "PgConnection", "connect_postgres",
           "is_postgres_url", "redact", "retrying", "translate"]

# Schema versions (``memsteward store migrate`` brings an older store to SCHEMA_VERSION):
#   1  every store written before versioning (SQLite: no ``memsteward_schema`` table; PostgreSQL: version 1)
#   2  ``event_lease.session``: the holder's PostgreSQL session (backend pid and start), so a lease held by
#      a dead process on another host is recognised; SQLite gains the ``memsteward_schema`` table.
#   3  ``shingles``: the lineage index (word-trigram hashes of every current content, see
#      memsteward.repair.lineage), filled by the migration from the stored contents.
#   4  ``events.plan`` may hold a plan in its packed form (memsteward.repair.planstore), which a release of
#      version 3 would misread; no table changes, and the plans stored before stay as they are (their
#      SHA-256 pins in the audit log name that text), so the migration only records the version.
#   5  ``edges_parents`` ON edges(dst, type, src) replaces ``edges_dst`` ON edges(dst): the influence parents
#      of a set of ids are read from the index alone (no table row per edge), each id's parents in src order
#      (planning at 10^6 artifacts: 0.48 → 0.29 s for the 3.3·10^5 parent edges of a 30 % migration).
# ANY change to a table or column of either schema (a new table included: `CREATE TABLE IF NOT EXISTS`
# reaches new stores only) bumps SCHEMA_VERSION and appends one step per backend to MIGRATIONS; a store
# of an older version is refused (exit 2, nothing changed) until `memsteward store migrate` ran.
SCHEMA_VERSION = 5
CORE_TABLES = frozenset({"artifacts", "versions", "edges", "events", "audit"})  # what makes a database a store

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS artifacts(
  id TEXT PRIMARY KEY, kind TEXT NOT NULL, arch TEXT, version INTEGER NOT NULL,
  state TEXT NOT NULL, staged_version INTEGER);
CREATE TABLE IF NOT EXISTS versions(
  id TEXT NOT NULL, version INTEGER NOT NULL, content TEXT, meta TEXT NOT NULL,
  event_id INTEGER, erased INTEGER NOT NULL DEFAULT 0, sha256 TEXT, PRIMARY KEY(id, version));
CREATE TABLE IF NOT EXISTS edges(
  src TEXT NOT NULL, dst TEXT NOT NULL, type TEXT NOT NULL, PRIMARY KEY(src, dst, type));
CREATE TABLE IF NOT EXISTS events(
  id INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, event TEXT NOT NULL,
  policy TEXT NOT NULL, plan TEXT NOT NULL, status TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS plan_steps(
  event_id INTEGER NOT NULL, seq INTEGER NOT NULL, artifact_id TEXT NOT NULL, mode TEXT NOT NULL,
  status TEXT NOT NULL, version INTEGER, report TEXT, PRIMARY KEY(event_id, seq));
CREATE TABLE IF NOT EXISTS audit(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, event_id INTEGER, action TEXT NOT NULL,
  artifact_id TEXT, detail TEXT, hash TEXT);
CREATE TABLE IF NOT EXISTS audit_head(
  one INTEGER PRIMARY KEY CHECK (one = 1), seq INTEGER NOT NULL, hash TEXT NOT NULL, seal TEXT);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
  BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
  BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TABLE IF NOT EXISTS tombstones(
  digest TEXT PRIMARY KEY, root TEXT NOT NULL, event_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS event_lease(
  event_id INTEGER PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
  started TEXT, acquired TEXT NOT NULL, session TEXT);
CREATE TABLE IF NOT EXISTS memsteward_schema(one INTEGER PRIMARY KEY CHECK (one = 1), version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS shingles(
  h INTEGER NOT NULL, id TEXT NOT NULL, PRIMARY KEY(h, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_parents ON edges(dst, type, src);
CREATE INDEX IF NOT EXISTS plan_steps_artifact ON plan_steps(event_id, artifact_id);
CREATE INDEX IF NOT EXISTS shingles_id ON shingles(id);
"""

# Same tables, same column order (``SELECT *`` compares across backends), PostgreSQL types.
PG_SCHEMA = """
CREATE TABLE IF NOT EXISTS memsteward_schema(one INTEGER PRIMARY KEY CHECK (one = 1), version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS artifacts(
  id TEXT COLLATE "C" PRIMARY KEY, kind TEXT COLLATE "C" NOT NULL, arch TEXT COLLATE "C", version BIGINT NOT NULL,
  state TEXT COLLATE "C" NOT NULL, staged_version BIGINT);
CREATE TABLE IF NOT EXISTS versions(
  id TEXT COLLATE "C" NOT NULL, version BIGINT NOT NULL, content TEXT, meta TEXT NOT NULL,
  event_id BIGINT, erased INTEGER NOT NULL DEFAULT 0, sha256 TEXT COLLATE "C", PRIMARY KEY(id, version));
CREATE TABLE IF NOT EXISTS edges(
  src TEXT COLLATE "C" NOT NULL, dst TEXT COLLATE "C" NOT NULL, type TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY(src, dst, type));
CREATE TABLE IF NOT EXISTS events(
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, type TEXT NOT NULL, event TEXT NOT NULL,
  policy TEXT NOT NULL, plan TEXT NOT NULL, status TEXT COLLATE "C" NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS plan_steps(
  event_id BIGINT NOT NULL, seq BIGINT NOT NULL, artifact_id TEXT COLLATE "C" NOT NULL,
  mode TEXT COLLATE "C" NOT NULL, status TEXT COLLATE "C" NOT NULL, version BIGINT, report TEXT,
  PRIMARY KEY(event_id, seq));
CREATE TABLE IF NOT EXISTS audit(
  seq BIGINT PRIMARY KEY, at TEXT NOT NULL, event_id BIGINT, action TEXT COLLATE "C" NOT NULL,
  artifact_id TEXT COLLATE "C", detail TEXT, hash TEXT);
CREATE TABLE IF NOT EXISTS audit_head(
  one INTEGER PRIMARY KEY CHECK (one = 1), seq BIGINT NOT NULL, hash TEXT NOT NULL, seal TEXT);
CREATE OR REPLACE FUNCTION memsteward_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'audit log is append-only'; END $$;
CREATE OR REPLACE TRIGGER audit_no_update BEFORE UPDATE ON audit
  FOR EACH ROW EXECUTE FUNCTION memsteward_audit_append_only();
CREATE OR REPLACE TRIGGER audit_no_delete BEFORE DELETE ON audit
  FOR EACH ROW EXECUTE FUNCTION memsteward_audit_append_only();
CREATE TABLE IF NOT EXISTS tombstones(
  digest TEXT COLLATE "C" PRIMARY KEY, root TEXT COLLATE "C" NOT NULL, event_id BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS event_lease(
  event_id BIGINT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid BIGINT NOT NULL,
  started TEXT, acquired TEXT NOT NULL, session TEXT);
CREATE TABLE IF NOT EXISTS shingles(
  h BIGINT NOT NULL, id TEXT COLLATE "C" NOT NULL, PRIMARY KEY(h, id));
CREATE INDEX IF NOT EXISTS edges_parents ON edges(dst, type, src);
CREATE INDEX IF NOT EXISTS plan_steps_artifact ON plan_steps(event_id, artifact_id);
CREATE INDEX IF NOT EXISTS shingles_id ON shingles(id);
"""
PG_TABLES = frozenset({"memsteward_schema", "artifacts", "versions", "edges", "events", "plan_steps", "audit",
                       "audit_head", "tombstones", "event_lease", "shingles"})

# Columns added after a table first shipped: (table, column, type). SQLite has no ADD COLUMN IF NOT
# EXISTS, so its version-1 step adds those a store lacks (stores from before chaining, signing, digests).
_SQLITE_LATE_COLUMNS = (("audit", "hash", "TEXT"), ("audit_head", "seal", "TEXT"), ("versions", "sha256", "TEXT"),
                        ("event_lease", "session", "TEXT"))


def _sqlite_v1_to_v2(conn: Any) -> str:
    """Tables a version-1 store may lack (it was written by any earlier release), then late columns."""
    present = {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t, _, _ in _SQLITE_LATE_COLUMNS}
    adds = [f"ALTER TABLE {t} ADD COLUMN {c} {k};" for t, c, k in _SQLITE_LATE_COLUMNS if present[t] and c not in present[t]]
    return SQLITE_SCHEMA + "\n".join(adds)


def _pg_v1_to_v2(conn: Any) -> str:
    return "ALTER TABLE event_lease ADD COLUMN IF NOT EXISTS session TEXT"


_INDEX_CONTENTS = ("SELECT a.id, v.content FROM artifacts a JOIN versions v ON v.id = a.id AND v.version = a.version "
                   "WHERE v.content IS NOT NULL")


def _index_hashes_json(content: str | None) -> str:
    from .lineage import index_hashes

    return "[]" if content is None else json.dumps(sorted(index_hashes(json.loads(content))))


def _sqlite_v2_to_v3(conn: Any) -> str:
    """The lineage index, created and filled in SQL: the trigram hashes of each current content come
    from a function registered on this connection (the same :func:`~memsteward.repair.lineage.index_hashes`
    the write path uses)."""
    conn.create_function("memsteward_index_hashes", 1, _index_hashes_json, deterministic=True)
    return ("\nCREATE TABLE IF NOT EXISTS shingles(h INTEGER NOT NULL, id TEXT NOT NULL, PRIMARY KEY(h, id)) WITHOUT ROWID;"
            "CREATE INDEX IF NOT EXISTS shingles_id ON shingles(id); DELETE FROM shingles;"
            "INSERT OR IGNORE INTO shingles(h, id) SELECT j.value, c.id FROM (" + _INDEX_CONTENTS + ") c, "
            "json_each(memsteward_index_hashes(c.content)) j;")


def _pg_v2_to_v3(conn: Any) -> str:
    """The lineage index: created, then filled from the stored contents inside the migration's transaction."""
    from .lineage import index_hashes

    conn.execute('CREATE TABLE IF NOT EXISTS shingles(h BIGINT NOT NULL, id TEXT COLLATE "C" NOT NULL, '
                 "PRIMARY KEY(h, id))")
    conn.execute("CREATE INDEX IF NOT EXISTS shingles_id ON shingles(id)")
    conn.execute("DELETE FROM shingles")
    rows = sorted({(h, i) for i, c in conn.execute(_INDEX_CONTENTS) for h in index_hashes(json.loads(c))})
    if rows:
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO shingles(h, id) VALUES (%s, %s)", rows)
    return "SELECT 1"


def _sqlite_v3_to_v4(conn: Any) -> str:
    """Nothing to change: a plain stored plan reads as it is (planstore.read_plan)."""
    return ""


def _pg_v3_to_v4(conn: Any) -> str:
    """Nothing to change: a plain stored plan reads as it is (planstore.read_plan)."""
    return "SELECT 1"


_PARENTS_INDEX = "DROP INDEX IF EXISTS edges_dst; CREATE INDEX IF NOT EXISTS edges_parents ON edges(dst, type, src);"


def _sqlite_v4_to_v5(conn: Any) -> str:
    """The covering parents index replaces the one on ``dst`` alone."""
    return _PARENTS_INDEX


def _pg_v4_to_v5(conn: Any) -> str:
    """The covering parents index replaces the one on ``dst`` alone."""
    return _PARENTS_INDEX


# MIGRATIONS[backend][v - 1](conn) is the SQL that takes a store from version v to v + 1 (it may read
# the store to decide); the store runs every pending step and the new version in ONE write transaction.
MIGRATIONS: dict[str, tuple[Callable[[Any], str], ...]] = {
    "sqlite": (_sqlite_v1_to_v2, _sqlite_v2_to_v3, _sqlite_v3_to_v4, _sqlite_v4_to_v5),
    "postgresql": (_pg_v1_to_v2, _pg_v2_to_v3, _pg_v3_to_v4, _pg_v4_to_v5),
}
assert all(len(steps) == SCHEMA_VERSION - 1 for steps in MIGRATIONS.values())


def check_version(version: int, schema: str, shown: str, migrate: bool) -> None:
    """Refuse a store of another schema version (InputError, exit 2) unless it is older and ``migrate``."""
    if version > SCHEMA_VERSION:
        raise InputError(f"{schema} is a memsteward store of schema version {version}, written by a newer "
                         f"release; this release reads version {SCHEMA_VERSION} (upgrade memsteward)",
                         file=shown, field="schema")
    if version < SCHEMA_VERSION and not migrate:
        raise InputError(f"{schema} is a memsteward store of schema version {version}; this release needs "
                         f"version {SCHEMA_VERSION}: run `memsteward store migrate --store {shown}` (nothing was changed)",
                         file=shown, field="schema")


SQLSTATE_RETRY = frozenset({"40001", "40P01"})  # serialization_failure, deadlock_detected
RETRY_ATTEMPTS, RETRY_BASE, RETRY_CAP = 6, 0.02, 1.0


def db_errors() -> tuple[type[BaseException], ...]:
    """The store errors (not a candidate's fault: ``execute.guarded`` lets them through), as an
    ``except`` clause: sqlite3's, and psycopg's once psycopg is imported (it is imported only to
    open a PostgreSQL store, so a SQLite command never pays for it; before that no psycopg error
    can be raised)."""
    psycopg = sys.modules.get("psycopg")
    return (sqlite3.Error,) if psycopg is None else (sqlite3.Error, psycopg.Error)


def __getattr__(name: str) -> Any:
    """``DB_ERRORS`` (the former constant): :func:`db_errors` at the time of the access."""
    if name == "DB_ERRORS":
        return db_errors()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

T = TypeVar("T")


def retrying(fn: Callable[..., T]) -> Callable[..., T]:
    """Re-run a whole write (one transaction) when PostgreSQL aborts it with SQLSTATE 40001/40P01.

    At most ``RETRY_ATTEMPTS`` runs; before run k+1 it sleeps uniform(0, min(CAP, BASE·2^k))
    seconds ("full jitter"), so competing writers spread out. The aborted transaction was rolled
    back whole, so re-running it is safe. Other errors, and SQLite's, pass through unchanged.
    """
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> T:
        for attempt in range(RETRY_ATTEMPTS):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                if getattr(exc, "sqlstate", None) not in SQLSTATE_RETRY or attempt == RETRY_ATTEMPTS - 1:
                    raise
                time.sleep(random.uniform(0, min(RETRY_CAP, RETRY_BASE * 2 ** attempt)))
        raise AssertionError("unreachable")
    return run


# ----------------------------------------------------------------------------- PostgreSQL

def is_postgres_url(path: str) -> bool:
    return path.startswith(("postgresql://", "postgres://"))


_KEYWORDS = frozenset({"union", "where", "cross", "join", "order", "group", "on", "and", "limit", "left", "inner"})
_JSON_EACH = re.compile(r"json_each\(\?\)(\s+(\w+))?", re.IGNORECASE)
# a JSON array parameter as rows of ``value``, in the store's collation (ids compare and order as in SQLite)
_ELEMENTS = '(SELECT x COLLATE "C" AS value FROM json_array_elements_text(?::json) AS t(x))'
_CROSS_JOIN = re.compile(r"\bCROSS\s+JOIN\b", re.IGNORECASE)
_OR_IGNORE = re.compile(r"^\s*INSERT\s+OR\s+IGNORE\s+", re.IGNORECASE)


@functools.lru_cache(maxsize=512)
def translate(sql: str) -> str:
    """Rewrite the store's SQL (SQLite spelling) for PostgreSQL.

    ``?`` → ``%s`` (a literal ``%`` → ``%%``); ``json_each(?) [alias]`` → a subquery over
    ``json_array_elements_text(%s::json)`` with one ``value`` column in collation "C"; ``INSERT OR IGNORE`` →
    ``INSERT … ON CONFLICT DO NOTHING``; ``CROSS JOIN … ON`` (SQLite's join-order hint) → ``JOIN``. SQLite-only statements (PRAGMA, ``INSERT OR REPLACE``,
    ``sqlite_master``) raise ``ValueError``: the store must not use them outside the SQLite layer.

    >>> translate("SELECT id FROM artifacts WHERE id IN (SELECT value FROM json_each(?)) AND state = ?")
    'SELECT id FROM artifacts WHERE id IN (SELECT value FROM (SELECT x COLLATE "C" AS value FROM json_array_elements_text(%s::json) AS t(x)) AS je) AND state = %s'
    >>> translate("INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?,?,?)")
    'INSERT INTO edges(src, dst, type) VALUES (%s,%s,%s) ON CONFLICT DO NOTHING'
    """
    low = sql.lower()
    if "pragma" in low or "insert or replace" in low or "sqlite_" in low or "lastrowid" in low:
        raise ValueError(f"SQLite-only statement reached the PostgreSQL backend: {sql[:80]!r}")
    out = sql.replace("%", "%%")
    ignore = bool(_OR_IGNORE.match(out))
    if ignore:
        out = _OR_IGNORE.sub("INSERT ", out, count=1)

    def each(m: re.Match[str]) -> str:
        alias = m.group(2)
        if alias and alias.lower() not in _KEYWORDS:
            return f"{_ELEMENTS} AS {alias}"
        return f"{_ELEMENTS} AS je" + (m.group(1) or "")
    out = _JSON_EACH.sub(each, out).replace("?", "%s")
    out = _CROSS_JOIN.sub("JOIN", out)  # SQLite's join-order hint; PostgreSQL's CROSS JOIN takes no ON
    return out + " ON CONFLICT DO NOTHING" if ignore else out


_WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)


COPY_MIN = 64  # rows from which a plain INSERT batch goes as one COPY (10^5 withdraw rows: one statement)
_PLAIN_INSERT = re.compile(r"^INSERT INTO (\w+)\(([\w, ]+)\) VALUES \(%s(?:, ?%s)*\)$")


def _copy_target(item: tuple[str, Any, bool]) -> str | None:
    """``COPY t(cols) FROM STDIN`` for a large executemany of a plain INSERT (every value a
    parameter, no ON CONFLICT): same rows, same constraints and triggers, one statement."""
    sql, rows, is_many = item
    if not is_many or len(rows) < COPY_MIN:
        return None
    m = _PLAIN_INSERT.match(sql)
    return None if m is None else f"COPY {m.group(1)}({m.group(2)}) FROM STDIN"


def _inerror() -> Any:
    from psycopg.pq import TransactionStatus

    return TransactionStatus.INERROR


_STREAMS = itertools.count()  # server-side cursor names (PgConnection.stream)


class PgCursor:
    """A cursor's results, as the store reads them from sqlite3 (fetchone/fetchall/iteration)."""

    def __init__(self, rows: list[tuple] | None) -> None:
        self._rows = rows or []
        self._at = 0

    def fetchone(self) -> tuple | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchall(self) -> list[tuple]:
        rest, self._at = self._rows[self._at:], len(self._rows)
        return rest

    def __iter__(self) -> Iterator[tuple]:
        while (row := self.fetchone()) is not None:
            yield row


class PgConnection:
    """The slice of ``sqlite3.Connection`` the store uses, over one psycopg 3 connection.

    The psycopg connection is in autocommit mode: outside ``BEGIN``/``COMMIT`` (issued by the
    store's ``transaction()``) every statement is its own transaction, as with sqlite3's
    ``isolation_level=None``.
    """

    def __init__(self, raw: Any, schema: str) -> None:
        self.raw = raw
        self.schema = schema
        self.migrated: tuple[int, int] | None = None  # (from, to) when this open ran `store migrate`
        self._queue: list[tuple[str, Any, bool]] | None = None  # queued statements of the open write transaction
        self._streams = 0  # open server-side cursors (stream)
        self._snapshot = False  # inside read_snapshot
        # this connection's server session: pid and start time (lease liveness across hosts)
        pid, start = raw.execute("SELECT pid, backend_start::text FROM pg_stat_activity "
                                 "WHERE pid = pg_backend_pid()").fetchone()
        self.session = f"{pid}@{start}"
        # one 63-bit key per store (schema): the advisory lock that serialises its writers
        self.lock_key = int.from_bytes(hashlib.sha256(f"memsteward:{schema}".encode()).digest()[:8], "big") >> 1

    # Round trips. Inside a write transaction, statements whose result the store does not read
    # (BEGIN, the lock, INSERT/UPDATE/DELETE without RETURNING, executemany) are queued, and sent in
    # ONE psycopg pipeline together with the next statement whose rows are needed (or with COMMIT):
    # a record is ~6 round trips instead of ~13. Order is kept, so every read sees the writes before
    # it; an error in a queued statement is raised at that flush, still inside the transaction, which
    # is then rolled back whole (as if raised where it was queued).

    def execute(self, sql: str, args: Sequence[Any] = ()) -> PgCursor:
        params = tuple(args) if args else None
        if self._queue is not None:
            head = sql.lstrip()[:8].upper()
            if head.startswith("COMMIT"):
                self._flush(("COMMIT", None, False))
                self._queue = None
                return PgCursor(None)
            if head.startswith("ROLLBACK"):
                begun = not self._queue or self._queue[0][0] != self._BEGIN
                self._queue = None
                if begun:
                    self.raw.execute("ROLLBACK")
                return PgCursor(None)
            if _WRITE.match(sql) and "returning" not in sql.lower():
                self._queue.append((translate(sql), params, False))
                return PgCursor(None)
            return PgCursor(self._flush((translate(sql), params, False)))
        cur = self.raw.execute(translate(sql), params)
        return PgCursor(cur.fetchall() if cur.description is not None else None)

    def flush(self) -> None:
        """Send the queued writes of the open transaction now (a long copy keeps its queue short)."""
        if self._queue:
            batch, self._queue = self._queue, []
            self._send(batch)

    def stream(self, sql: str, args: Sequence[Any] = (), size: int = 2000) -> Iterator[tuple]:
        """The rows of one SELECT through a server-side cursor, ``size`` rows per round trip: inside
        the open read snapshot (:meth:`read_snapshot`) or else in a read transaction of its own (one
        snapshot, however long the consumer takes). Inside a write transaction the rows come from
        :meth:`execute` (the queue goes out first). No write may start while a stream is open."""
        if self._queue is not None:
            yield from self.execute(sql, args)
            return
        self._streams += 1
        try:
            with contextlib.ExitStack() as stack:
                if not self._snapshot:
                    stack.enter_context(self.raw.transaction())
                cur = stack.enter_context(self.raw.cursor(name=f"memsteward_stream_{next(_STREAMS)}"))
                cur.execute(translate(sql), tuple(args) or None)
                while rows := cur.fetchmany(size):
                    yield from rows
        finally:
            self._streams -= 1

    @property
    def in_transaction(self) -> bool:
        """Inside a transaction (a write one, queued or not, or a read snapshot): as sqlite3's attribute."""
        from psycopg.pq import TransactionStatus

        return self._queue is not None or self.raw.info.transaction_status != TransactionStatus.IDLE

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """One REPEATABLE READ, READ ONLY transaction: every read until the end sees one snapshot."""
        self.raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        self._snapshot = True
        try:
            yield
        finally:
            self._snapshot = False
            self.raw.execute("ROLLBACK")

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        rows = list(rows)
        if not rows:
            return
        if self._queue is not None:
            self._queue.append((translate(sql), rows, True))
            return
        self._send([(translate(sql), rows, True)])

    _BEGIN = "BEGIN ISOLATION LEVEL READ COMMITTED"
    PIPELINE = True  # False: one round trip per statement (the reference path of bench/store_backends.py)

    def begin_write(self) -> None:
        """BEGIN and the store's advisory lock, queued: they go out with the transaction's first read."""
        if self._streams or self._snapshot:  # the write's COMMIT would end the stream's transaction
            raise RuntimeError("a write transaction on a connection that is streaming or in a read snapshot")
        if not self.PIPELINE:
            self.raw.execute(self._BEGIN)
            self.raw.execute("SELECT pg_advisory_xact_lock(%s)", (self.lock_key,))
            return
        self._queue = [(self._BEGIN, None, False), ("SELECT pg_advisory_xact_lock(%s)", (self.lock_key,), False)]

    def _flush(self, last: tuple[str, Any, bool]) -> list[tuple] | None:
        """Send the queue and ``last``; ``last``'s rows (None: it returns none)."""
        batch = [*(self._queue or ()), last]
        if self._queue is not None:
            self._queue = []
        try:
            return self._send(batch)
        except BaseException:
            if last[0] == "COMMIT":  # the store does not roll back a failed COMMIT: end the transaction here
                self._queue = None
                if self.raw.info.transaction_status == _inerror():
                    try:
                        self.raw.execute("ROLLBACK")
                    except Exception:  # noqa: BLE001 — the connection itself may be gone
                        pass
            raise

    def _send(self, batch: Sequence[tuple[str, Any, bool]]) -> list[tuple] | None:
        """Runs of statements in one pipeline each; a large plain INSERT batch as one COPY between them."""
        rows, k = None, 0
        while k < len(batch):
            j = k
            while j < len(batch) and _copy_target(batch[j]) is None:
                j += 1
            if j > k:
                rows = self._pipeline(batch[k:j])
            if j < len(batch):
                with self.raw.cursor() as cur, cur.copy(_copy_target(batch[j])) as copy:
                    for row in batch[j][1]:
                        copy.write_row(row)
                rows, j = None, j + 1
            k = j
        return rows

    def _pipeline(self, run: Sequence[tuple[str, Any, bool]]) -> list[tuple] | None:
        if len(run) == 1 and not run[0][2]:
            cur = self.raw.execute(run[0][0], run[0][1])
            return cur.fetchall() if cur.description is not None else None
        with self.raw.cursor() as cur:
            with self.raw.pipeline():
                for sql, params, is_many in run:
                    if is_many:
                        cur.executemany(sql, params)
                    else:
                        cur.execute(sql, params)
            return cur.fetchall() if cur.description is not None else None

    def session_alive(self, session: str) -> bool:
        """Whether the server still runs the session ``pid@start`` (any host's client: the lease's liveness)."""
        pid, _, start = session.partition("@")
        if not pid.isdigit():
            return False
        row = self.execute("SELECT 1 FROM pg_stat_activity WHERE pid = ? AND backend_start::text = ?",
                           (int(pid), start)).fetchone()  # through the queue: inside take_event's transaction
        return row is not None

    def close(self) -> None:
        self.raw.close()


def _schema_name(url: str) -> tuple[str, str]:
    """Split the memsteward ``schema`` parameter (default ``memsteward``) off a libpq URL."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), "memsteward")
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
        raise InputError("the schema parameter must be a lower-case SQL identifier (a-z, 0-9, _)",
                         file=redact(url), field="schema")
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment)), schema


def connect_postgres(url: str, create: bool = True, migrate: bool = False) -> PgConnection:
    """Connect, check the schema is memsteward's (or empty) and set it up, under the store's lock.

    Raises InputError (exit 2) for a DSN that cannot connect, a missing driver, a schema holding
    foreign tables or a schema version this release does not know; nothing is changed then.
    """
    shown = redact(url)
    try:
        import psycopg
    except ImportError:
        raise InputError("PostgreSQL stores need psycopg 3: pip install 'memsteward[postgres]'", file=shown) from None
    # psycopg logs the pipeline it abandons on a lost connection ("error ignored terminating …"); the
    # store reports that loss itself, in one line: keep the library's warning off stderr.
    logging.getLogger("psycopg").addHandler(logging.NullHandler())
    dsn, schema = _schema_name(url)
    try:
        raw = psycopg.connect(dsn, autocommit=True, connect_timeout=10,
                              application_name=f"memsteward:{os.getpid()}")
    except (psycopg.Error, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot connect to PostgreSQL: {first[:200]}", file=shown) from None
    conn = PgConnection(raw, schema)
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
            row = raw.execute(f'SELECT version FROM "{schema}".memsteward_schema WHERE one = 1').fetchone()
            version = 1 if row is None else int(row[0])
            check_version(version, f"schema {schema!r}", shown, migrate)
            if version < SCHEMA_VERSION:  # `store migrate`: every step in one transaction, under the write lock
                raw.execute("BEGIN")
                raw.execute("SELECT pg_advisory_xact_lock(%s)", (conn.lock_key,))
                raw.execute(f'SET LOCAL search_path TO "{schema}"')
                (version,) = raw.execute("SELECT version FROM memsteward_schema WHERE one = 1").fetchone()
                for step in MIGRATIONS["postgresql"][int(version) - 1:]:
                    raw.execute(step(raw))
                raw.execute("UPDATE memsteward_schema SET version = %s WHERE one = 1", (SCHEMA_VERSION,))
                raw.execute("COMMIT")
                conn.migrated = (int(version), SCHEMA_VERSION)
        else:  # a new store: the schema is created under the store's lock (concurrent creators wait)
            raw.execute("BEGIN")
            raw.execute("SELECT pg_advisory_xact_lock(%s)", (conn.lock_key,))
            raw.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            raw.execute(f'SET LOCAL search_path TO "{schema}"')
            raw.execute(PG_SCHEMA)
            raw.execute("INSERT INTO memsteward_schema(one, version) VALUES (1, %s) ON CONFLICT DO NOTHING",
                        (SCHEMA_VERSION,))
            raw.execute("COMMIT")
        raw.execute(f'SET search_path TO "{schema}"')
    except BaseException:
        if not raw.closed:
            try:
                raw.execute("ROLLBACK")
            except psycopg.Error:
                pass
            raw.close()
        raise
    return conn
