"""The PostgreSQL backend's connection: psycopg 3 (``memsteward[postgres]``) behind :class:`PgConnection`.

:class:`PgConnection` offers the slice of ``sqlite3.Connection`` the store uses and runs the
statements of :data:`~memsteward.store.queries.postgres.POSTGRES` as they are written; the schema
lives in its own PostgreSQL schema (``?schema=`` in the URL); write transactions are serialised by
one transaction-scoped advisory lock per store (``pg_advisory_xact_lock``) taken before the
transaction reads anything. Every write transaction appends to the audit chain, so that lock is the
lock on the chain's head: the chain is one total order, and two events' barriers and publications
never interleave. The core says which statements are writes whose result it does not read
(:meth:`PgConnection.write`, ``executemany``) and which rows are new rows of one table
(:meth:`PgConnection.bulk_insert`: COPY for a large batch); nothing here reads a statement's text
to decide how to send it. Serialization failures and deadlocks (SQLSTATE 40001 / 40P01) are retried by
:func:`~memsteward.store.connection.retrying`. Connecting, and setting up or migrating the schema, is
:func:`~memsteward.store.pg_connect.connect_postgres`.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

__all__ = ["COPY_MIN", "PgConnection", "PgCursor"]


COPY_MIN = 64  # rows from which a bulk insert goes as one COPY (10^5 withdraw rows: one statement)


class _Stmt(NamedTuple):
    """One statement of a write transaction's queue: ``many``, an executemany of ``params``;
    ``copy``, a ``COPY … FROM STDIN`` of the rows ``params``. What it is is said by whoever queues
    it (:meth:`PgConnection.write`, ``executemany``, ``bulk_insert``), never read off its text.

    >>> _Stmt('COPY "edges"("src", "dst", "type") FROM STDIN', [("a", "b", "influence")], copy=True).many
    False
    """

    sql: str
    params: Any
    many: bool = False
    copy: bool = False


def _inerror() -> Any:
    from psycopg.pq import TransactionStatus

    return TransactionStatus.INERROR


_STREAMS = itertools.count()  # server-side cursor names (PgConnection.stream)


class PgCursor:
    """A cursor's results, as the store reads them from sqlite3 (fetchone/fetchall/iteration)."""

    def __init__(self, rows: list[tuple[Any, ...]] | None) -> None:
        self._rows = rows or []
        self._at = 0

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchall(self) -> list[tuple[Any, ...]]:
        rest, self._at = self._rows[self._at:], len(self._rows)
        return rest

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
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
        self._queue: list[_Stmt] | None = None  # queued statements of the open write transaction
        self._bulk: dict[tuple[str, tuple[str, ...]], tuple[str, str]] = {}  # bulk_insert's statements
        self._streams = 0  # open server-side cursors (stream)
        self._snapshot = False  # inside read_snapshot
        self.locked = False  # the open write transaction holds the store's advisory lock
        # this connection's server session: pid and start time (lease liveness across hosts)
        pid, start = raw.execute("SELECT pid, backend_start::text FROM pg_stat_activity "
                                 "WHERE pid = pg_backend_pid()").fetchone()
        self.session = f"{pid}@{start}"
        # one 63-bit key per store (schema): the advisory lock that serialises its writers
        self.lock_key = int.from_bytes(hashlib.sha256(f"memsteward:{schema}".encode()).digest()[:8], "big") >> 1

    # Round trips. Inside a write transaction, statements whose result the store does not read (BEGIN,
    # the lock, :meth:`write`, :meth:`executemany`, :meth:`bulk_insert`) are queued, and sent in ONE
    # psycopg pipeline together with the next statement whose rows are read (:meth:`execute`) or with
    # COMMIT: a record is ~6 round trips instead of ~13. Order is kept, so every read sees the writes
    # before it; an error in a queued statement is raised at that flush, still inside the transaction,
    # which is then rolled back whole (as if raised where it was queued).

    def execute(self, sql: str, args: Sequence[Any] = ()) -> PgCursor:
        """Run one statement now (the queue first) and return its rows."""
        params = tuple(args) if args else None
        if self._queue is not None:
            return PgCursor(self._flush(_Stmt(sql, params)))
        cur = self.raw.execute(sql, params)
        return PgCursor(cur.fetchall() if cur.description is not None else None)

    def write(self, sql: str, args: Sequence[Any] = ()) -> None:
        """One statement whose result is not read: queued inside a write transaction, else run now."""
        params = tuple(args) if args else None
        if self._queue is not None:
            self._queue.append(_Stmt(sql, params))
        else:
            self.raw.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        rows = list(rows)
        if rows:
            self._put(_Stmt(sql, rows, many=True))

    def bulk_insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """New rows of ``table``: from :data:`COPY_MIN` rows one ``COPY table(columns) FROM STDIN``
        (same rows, constraints and triggers, one statement), fewer as an executemany of one INSERT
        (kept in the pipeline). The names are quoted by psycopg (``sql.Identifier``)."""
        rows = list(rows)
        if not rows:
            return
        insert, copy = self._bulk_statements(table, tuple(columns))
        self._put(_Stmt(copy, rows, copy=True) if len(rows) >= COPY_MIN else _Stmt(insert, rows, many=True))

    def _bulk_statements(self, table: str, columns: tuple[str, ...]) -> tuple[str, str]:
        """The INSERT and the COPY of :meth:`bulk_insert` for ``table(columns)``, built once per connection."""
        key = (table, columns)
        if key not in self._bulk:
            from psycopg import sql

            target = sql.SQL("{}({})").format(sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns)))
            marks = sql.SQL(", ").join(sql.Placeholder() * len(columns))
            self._bulk[key] = (sql.SQL("INSERT INTO {} VALUES ({})").format(target, marks).as_string(self.raw),
                               sql.SQL("COPY {} FROM STDIN").format(target).as_string(self.raw))
        return self._bulk[key]

    def _put(self, stmt: _Stmt) -> None:
        if self._queue is not None:
            self._queue.append(stmt)
        else:
            self._send([stmt])

    def commit(self) -> None:
        """COMMIT the open transaction (the queue goes out with it)."""
        if self._queue is None:
            self.raw.execute("COMMIT")
            return
        self._flush(_Stmt("COMMIT", None))
        self._queue = None

    def rollback(self) -> None:
        """ROLLBACK the open transaction; a queue that never went out (BEGIN still in it) is dropped."""
        queue, self._queue = self._queue, None
        if queue is None or not queue or queue[0].sql != self._BEGIN:
            self.raw.execute("ROLLBACK")

    def flush(self) -> None:
        """Send the queued writes of the open transaction now (a long copy keeps its queue short)."""
        if self._queue:
            batch, self._queue = self._queue, []
            self._send(batch)

    def execute_reads(self, reads: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple[Any, ...]]]:
        """The rows of each SELECT of ``reads``, sent with the queued writes in ONE pipeline (one round
        trip), in order: each read sees the writes and reads before it, as with :meth:`execute` one by one."""
        if self._queue is None or not self.PIPELINE or any(q.copy for q in self._queue):
            return [self.execute(sql, args).fetchall() for sql, args in reads]
        batch, self._queue = self._queue, []
        curs = [self.raw.cursor() for _ in reads]
        try:
            with self.raw.pipeline():
                with self.raw.cursor() as head:
                    for stmt in batch:
                        if stmt.many:
                            head.executemany(stmt.sql, stmt.params)
                        else:
                            head.execute(stmt.sql, stmt.params)
                for cur, (sql, args) in zip(curs, reads, strict=True):
                    cur.execute(sql, tuple(args) or None)
            return [cur.fetchall() for cur in curs]
        finally:
            for cur in curs:
                cur.close()

    def stream(self, sql: str, args: Sequence[Any] = (), size: int = 2000) -> Iterator[tuple[Any, ...]]:
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
                cur.execute(sql, tuple(args) or None)
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

    _BEGIN = "BEGIN ISOLATION LEVEL READ COMMITTED"
    PIPELINE = True  # False: one round trip per statement (the reference path of bench/store_backends.py)

    _LOCK = "SELECT pg_advisory_xact_lock(%s)"

    def begin_write(self, lock: bool = True) -> None:
        """BEGIN and the store's advisory lock, queued: they go out with the transaction's first read.
        ``lock=False``: BEGIN alone; the lock is taken by :meth:`lock_write`, before the transaction
        appends to the audit chain (:meth:`~memsteward.store.core.StoreCore.transaction` ``lock_late``)."""
        if self._streams or self._snapshot:  # the write's COMMIT would end the stream's transaction
            raise RuntimeError("a write transaction on a connection that is streaming or in a read snapshot")
        if not self.PIPELINE:
            self.raw.execute(self._BEGIN)
            self._queue = None
        else:
            self._queue = [_Stmt(self._BEGIN, None)]
        self.locked = False
        if lock:
            self.lock_write()

    _RELAX = "SET LOCAL synchronous_commit TO OFF"

    def relax_commit(self) -> None:
        """The open write transaction's COMMIT does not wait for the server's WAL flush (queued)."""
        if self._queue is None:
            self.raw.execute(self._RELAX)
        else:
            self._queue.append(_Stmt(self._RELAX, None))

    def lock_write(self) -> None:
        """The store's advisory lock in the open write transaction (queued with the next statement), once."""
        if self.locked:
            return
        self.locked = True
        if self._queue is None:
            self.raw.execute(self._LOCK, (self.lock_key,))
        else:
            self._queue.append(_Stmt(self._LOCK, (self.lock_key,)))

    def _flush(self, last: _Stmt) -> list[tuple[Any, ...]] | None:
        """Send the queue and ``last``; ``last``'s rows (None: it returns none)."""
        batch = [*(self._queue or ()), last]
        if self._queue is not None:
            self._queue = []
        try:
            return self._send(batch)
        except BaseException:
            if last.sql == "COMMIT":  # the store does not roll back a failed COMMIT: end the transaction here
                self._queue = None
                if self.raw.info.transaction_status == _inerror():
                    try:
                        self.raw.execute("ROLLBACK")
                    except Exception:  # noqa: BLE001 — the connection itself may be gone
                        pass
            raise

    def _send(self, batch: Sequence[_Stmt]) -> list[tuple[Any, ...]] | None:
        """Runs of statements in one pipeline each; each COPY between them (COPY leaves no pipeline open)."""
        rows, k = None, 0
        while k < len(batch):
            j = k
            while j < len(batch) and not batch[j].copy:
                j += 1
            if j > k:
                rows = self._pipeline(batch[k:j])
            if j < len(batch):
                with self.raw.cursor() as cur, cur.copy(batch[j].sql) as copy:
                    for row in batch[j].params:
                        copy.write_row(row)
                rows, j = None, j + 1
            k = j
        return rows

    def _pipeline(self, run: Sequence[_Stmt]) -> list[tuple[Any, ...]] | None:
        if len(run) == 1 and not run[0].many:
            cur = self.raw.execute(run[0].sql, run[0].params)
            return cur.fetchall() if cur.description is not None else None
        with self.raw.cursor() as cur:
            with self.raw.pipeline():
                for stmt in run:
                    if stmt.many:
                        cur.executemany(stmt.sql, stmt.params)
                    else:
                        cur.execute(stmt.sql, stmt.params)
            return cur.fetchall() if cur.description is not None else None

    def session_alive(self, session: str) -> bool:
        """Whether the server still runs the session ``pid@start`` (any host's client: the lease's liveness)."""
        pid, _, start = session.partition("@")
        if not pid.isdigit():
            return False
        row = self.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s AND backend_start::text = %s",
                           (int(pid), start)).fetchone()  # through the queue: inside take_event's transaction
        return row is not None

    def close(self) -> None:
        self.raw.close()
