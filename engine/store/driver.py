"""The :class:`Driver` protocol: what the SQL core needs of a backend beyond running its statements.

The core (:mod:`.core` and the mixins over it) is written once against this protocol; each backend
implements it once (:class:`SqliteDriver`, :class:`PgDriver`) and brings its statements
(:attr:`Driver.queries`). Nothing in the core asks which backend it runs on: the write lock, the
read snapshot, streaming, statements on a thread, lease liveness, the physical-erasure step and the
files a byte scan reads are all asked of the driver.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from .postgres import PgConnection
from .queries import Queries
from .queries.postgres import POSTGRES
from .queries.sqlite import SQLITE

__all__ = ["ANALYZE_MIN_ROWS", "BUSY_TIMEOUT_MS", "Driver", "PgDriver", "SqliteDriver"]

BUSY_TIMEOUT_MS = 30_000  # SQLite: how long a statement waits for a lock held by another connection
# PostgreSQL: a write of at least this many artifacts that is also more than a tenth of a table (autovacuum's
# analyze_scale_factor) ANALYZEs the table at once, not at autovacuum's next round (up to a minute later)
ANALYZE_MIN_ROWS = 10_000


class Driver(Protocol):
    """One backend under the SQL core: its connection, its statements and the steps that differ."""

    backend: str
    """``"sqlite"`` or ``"postgresql"`` (reported, never branched on by the core)."""
    queries: Queries
    conn: Any
    """What the core runs statements on: ``execute``/``executemany`` with the dialect's placeholders."""
    in_memory: bool
    """Reachable by this process only (SQLite ``:memory:``): no other process can open it."""
    schema: str | None
    """The PostgreSQL schema the store lives in (its key store is found beside it); None on SQLite."""
    session: str | None
    """This connection's server session (``pid@start``), recorded in a lease; None without a server."""
    concurrent_statements: bool
    """Whether a statement may run on a thread while this one packs or hashes (SQLite releases the GIL)."""

    def write(self, sql: str, args: Sequence[Any] = ()) -> None:
        """Run one statement whose result is not read (INSERT/UPDATE/DELETE): inside a write transaction
        the backend may hold it back until the next read or COMMIT, in order."""

    def bulk_insert(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Insert ``rows`` (values in the order of ``columns``) as new rows of ``table``, in the open write
        transaction: no row may exist yet (a clash is an error, as a plain INSERT's), every constraint
        and trigger applies. The backend picks how (SQLite: executemany; PostgreSQL: COPY)."""

    def begin_write(self, lock: bool = True, durable: bool = True) -> None:
        """Open a write transaction; with ``lock``, holding the store's write lock before anything is read.
        ``durable`` False: its COMMIT returns without waiting for the disk (SQLite ``synchronous = NORMAL``,
        PostgreSQL ``synchronous_commit = off``). It is still ordered: the log is one sequence, so the next
        durable commit makes it durable too, and a power loss in between leaves the store as a crash
        before it would (what ``recover`` rolls forward). Only for a transaction no one is told of before
        a durable one follows (an event's steps, between its durable barrier and its publication)."""

    def lock_write(self) -> None:
        """The store's write lock in the open write transaction, if not held yet."""

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def in_transaction(self) -> bool: ...

    def read_snapshot(self) -> contextlib.AbstractContextManager[None]:
        """A read-only transaction: every read until its end sees one state of the store."""

    def stream(self, sql: str, args: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        """The rows of one SELECT as the consumer asks for them."""

    def flush(self) -> None:
        """Send the open transaction's queued writes now (a long copy keeps its queue short)."""

    def reads(self, reads: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple[Any, ...]]]:
        """The rows of each SELECT of ``reads``, run in order (PostgreSQL: in one round trip with the
        queued writes); each sees what the ones before it wrote or read."""

    def session_alive(self, session: str) -> bool | None:
        """Whether the server still runs ``session`` (a lease holder's); None: this backend cannot tell."""

    def truncate_log(self, wait: float) -> bool | None:
        """The physical-erasure step: empty the write-ahead log into the database, waiting at most ``wait``
        seconds for readers; whether it was emptied, None when the backend keeps no such log here."""

    def reclaim(self, tables: Sequence[str]) -> None:
        """Rewrite the store's files without the pages freed from ``tables`` (``store migrate --encrypt``)."""

    def refresh_statistics(self, tables: Sequence[str], added: int) -> None:
        """After a committed write that added ``added`` rows to ``tables``: bring the planner's statistics
        of those tables up to date if the write changed them much (a bulk import)."""

    def files(self) -> list[str]:
        """The store's files this process can read (the byte scan of ``audit --deep``)."""

    def locator_url(self, url: str) -> str | None:
        """What another process opens this store with; None when no other process can."""

    def backup_into(self, dst: Driver) -> bool:
        """Copy the whole database into the empty ``dst`` page by page; False: not on this backend."""

    def close(self) -> None: ...


def _quoted(name: str) -> str:
    """A SQLite identifier in double quotes (an embedded quote doubled)."""
    return '"' + name.replace('"', '""') + '"'


@functools.lru_cache(maxsize=64)
def _sqlite_insert(table: str, columns: tuple[str, ...]) -> str:
    """``INSERT INTO "t"("a", "b") VALUES (?,?)``: :meth:`SqliteDriver.bulk_insert`'s statement.

    >>> _sqlite_insert("edges", ("src", "dst"))
    'INSERT INTO "edges"("src", "dst") VALUES (?,?)'
    """
    return f"INSERT INTO {_quoted(table)}({', '.join(map(_quoted, columns))}) VALUES ({','.join('?' * len(columns))})"


class SqliteDriver:
    """A SQLite database (a file or ``:memory:``) on one autocommit ``sqlite3`` connection."""

    backend = "sqlite"
    queries = SQLITE
    schema: str | None = None
    session: str | None = None
    concurrent_statements = True

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self.conn = conn
        self.path = path
        self.in_memory = path == ":memory:"

    def write(self, sql: str, args: Sequence[Any] = ()) -> None:
        self.conn.execute(sql, args)

    def bulk_insert(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """One executemany of a plain INSERT (SQLite's fastest path: one prepared statement, no round trips)."""
        self.conn.executemany(_sqlite_insert(table, tuple(columns)), rows)

    _relaxed = False  # the open transaction commits with synchronous = NORMAL

    def begin_write(self, lock: bool = True, durable: bool = True) -> None:
        if not durable and not self.in_memory:  # WAL: the commit appends its frames, the next sync covers them
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self._relaxed = True
        try:
            self.conn.execute("BEGIN IMMEDIATE")  # the database's write lock, taken before the first read
        except BaseException:
            self._restore()
            raise

    def _restore(self) -> None:
        if self._relaxed:
            self._relaxed = False
            self.conn.execute("PRAGMA synchronous = FULL")

    def lock_write(self) -> None:
        """Held since BEGIN IMMEDIATE."""

    def commit(self) -> None:
        try:
            self.conn.execute("COMMIT")
        finally:
            if not self.conn.in_transaction:
                self._restore()

    def rollback(self) -> None:
        try:
            self.conn.execute("ROLLBACK")
        finally:
            self._restore()

    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """A deferred read transaction (WAL: writers go on meanwhile)."""
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("ROLLBACK")

    def stream(self, sql: str, args: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        yield from self.conn.execute(sql, args)

    def flush(self) -> None:
        """Nothing is queued: each statement ran when it was issued."""

    def reads(self, reads: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple[Any, ...]]]:
        return [self.conn.execute(sql, args).fetchall() for sql, args in reads]

    def session_alive(self, session: str) -> bool | None:
        return None

    def truncate_log(self, wait: float) -> bool | None:
        """``PRAGMA wal_checkpoint(TRUNCATE)`` (``secure_delete`` has zeroed the nulled pages) with a
        busy timeout of ``wait`` seconds; None for ``:memory:``, which has no log."""
        if self.in_memory:
            return None
        self.conn.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")  # an int: PRAGMA takes no parameter
        try:
            busy, log, done = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return bool(busy == 0 and log in (0, -1) and done in (0, -1))

    def reclaim(self, tables: Sequence[str]) -> None:
        """VACUUM (the whole file: SQLite cannot rewrite one table) and an emptied WAL."""
        if self.in_memory:
            return
        self.conn.execute("VACUUM")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def refresh_statistics(self, tables: Sequence[str], added: int) -> None:
        """Nothing: without ``sqlite_stat1`` SQLite's planner takes the indexes the statements name."""

    def files(self) -> list[str]:
        if self.in_memory:
            return []
        return [p for p in (self.path, self.path + "-wal", self.path + "-journal") if os.path.exists(p)]

    def locator_url(self, url: str) -> str | None:
        return None if self.in_memory else os.path.abspath(self.path)

    def backup_into(self, dst: Driver) -> bool:
        if not isinstance(dst, SqliteDriver):
            return False
        self.conn.backup(dst.conn)  # SQLite's page copy
        return True

    def close(self) -> None:
        self.conn.close()


class PgDriver:
    """A PostgreSQL schema on one :class:`~memsteward.store.postgres.PgConnection` (psycopg 3)."""

    backend = "postgresql"
    queries = POSTGRES
    in_memory = False
    concurrent_statements = False  # writes wait in the connection's queue for the next read anyway

    def __init__(self, conn: PgConnection) -> None:
        self.conn = conn
        self.schema: str | None = conn.schema
        self.session: str | None = conn.session

    def write(self, sql: str, args: Sequence[Any] = ()) -> None:
        self.conn.write(sql, args)  # queued until the transaction's next read or COMMIT

    def bulk_insert(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """One ``COPY table(columns) FROM STDIN`` from :data:`~memsteward.store.postgres.COPY_MIN` rows (fewer:
        an executemany of one INSERT, kept in the pipeline), names quoted by psycopg's ``sql.Identifier``."""
        self.conn.bulk_insert(table, columns, list(rows))

    def begin_write(self, lock: bool = True, durable: bool = True) -> None:
        self.conn.begin_write(lock=lock)  # BEGIN and (lock) the store's advisory lock, queued until the first read
        if not durable:
            self.conn.relax_commit()

    def lock_write(self) -> None:
        self.conn.lock_write()

    def commit(self) -> None:
        self.conn.commit()

    def rollback(self) -> None:
        self.conn.rollback()

    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def read_snapshot(self) -> contextlib.AbstractContextManager[None]:
        return self.conn.read_snapshot()

    def stream(self, sql: str, args: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        return self.conn.stream(sql, args)

    def flush(self) -> None:
        self.conn.flush()

    def reads(self, reads: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple[Any, ...]]]:
        return self.conn.execute_reads(reads)

    def session_alive(self, session: str) -> bool | None:
        return self.conn.session_alive(session)

    def truncate_log(self, wait: float) -> bool | None:
        """None: the server's WAL is the server's (what it keeps of erased versions is ciphertext whose key is gone)."""
        return None

    def reclaim(self, tables: Sequence[str]) -> None:
        """``VACUUM FULL`` of each table (outside any transaction), its name quoted by psycopg."""
        from psycopg import sql

        for table in tables:
            self.conn.raw.execute(sql.SQL("VACUUM FULL {}").format(sql.Identifier(table)))

    def refresh_statistics(self, tables: Sequence[str], added: int) -> None:
        """``ANALYZE`` each of ``tables`` that has no statistics yet or fewer than ten times ``added`` rows
        by them, when ``added`` >= :data:`ANALYZE_MIN_ROWS` (a sample of 30,000 rows per table, tens of ms;
        it takes no lock a reader or writer waits for). A table just filled has none, and autovacuum
        comes up to a minute later; the id-list statements use their index without statistics
        (:data:`~memsteward.store.queries.postgres._ANY`), the rest of the planner's choices need them."""
        if added < ANALYZE_MIN_ROWS or self.conn.in_transaction:
            return
        from psycopg import sql

        stale = [t for t, n in self.conn.raw.execute(
            "SELECT relname, reltuples FROM pg_class WHERE relnamespace = %s::regnamespace AND relname = ANY(%s)",
            (self.schema, list(tables))) if n < 0 or added * 10 > n]
        for table in sorted(stale):
            self.conn.raw.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))

    def files(self) -> list[str]:
        return []  # the server's files are not this process's to read

    def locator_url(self, url: str) -> str | None:
        return url

    def backup_into(self, dst: Driver) -> bool:
        return False

    def close(self) -> None:
        self.conn.close()
