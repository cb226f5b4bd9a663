"""The store's connection, transactions and read snapshots (what every other part of it builds on).

A store is one SQLite database (a file or ``:memory:``) or one PostgreSQL schema, held on one
connection; each state change is one write transaction (:meth:`StoreCore.transaction`), and long
readers see one state of the store (:meth:`StoreCore.read_snapshot`). The other modules of this
package add the audit chain, the reads, the write path, the repair log, leases, erasure and copy,
as mixins of :class:`~memsteward.store.sqlstore.SqlStore`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import socket
import threading
import weakref
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from ..errors import InputError
from ..repair.auditchain import signing_key
from .connection import redact
from .driver import Driver, PgDriver, SqliteDriver
from .postgres import PgConnection
from .queries import Queries
from .sqlite import connect_sqlite, setup_sqlite

__all__ = ["ERASE_WAIT_ENV", "StoreCore", "digest"]

ERASE_WAIT_ENV = "MEMSTEWARD_ERASE_WAIT"
ERASE_WAIT_DEFAULT, ERASE_WAIT_MAX = 10.0, 600.0

_OPEN: weakref.WeakValueDictionary[str, StoreCore] = weakref.WeakValueDictionary()  # this process's open stores


def _erase_wait() -> float:
    """Seconds physical erasure waits for concurrent readers to release the WAL (bounded)."""
    raw = os.environ.get(ERASE_WAIT_ENV, "")
    try:
        value = float(raw) if raw else ERASE_WAIT_DEFAULT
    except ValueError:
        raise InputError(f"{ERASE_WAIT_ENV} must be a number of seconds, got {raw!r}", field=ERASE_WAIT_ENV) from None
    if not 0 <= value <= ERASE_WAIT_MAX:
        raise InputError(f"{ERASE_WAIT_ENV} must be between 0 and {ERASE_WAIT_MAX:g} seconds", field=ERASE_WAIT_ENV)
    return value

def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")

def digest(text: str) -> str:
    """SHA-256 of stored JSON text: audit rows pin the event, policy and plan they refer to."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()

def _dump(x: Any) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"))

_REF_DIGEST = re.compile(r'"sha256":"[0-9a-f]{64}"')

def refs_unkeyed(text: str) -> str:
    """Stored event or plan text with every reference's content digest blanked: a sealed store keys
    them under its own index key, so two stores' rows compare by everything else (``dump_state``)."""
    return _REF_DIGEST.sub('"sha256":"-"', text)

def _done() -> None:
    """The join of work that already ran."""

_decoder = json.JSONDecoder()
_decode, _scan = _decoder.decode, _decoder.scan_once  # type: ignore[attr-defined]  # the C scanner


def _id_list(ids: Collection[str]) -> str:
    """Ids as the JSON array a ``json_each`` lookup reads, sorted: probing the primary-key B-tree in
    key order touches each page once (at 10^5 ids about half the time of a set's hash order)."""
    return json.dumps(sorted(ids))

def _load(text: str | None) -> Any:
    """Stored JSON text → value (NULL and the common ``null`` without the decoder). The store writes
    compact JSON (:func:`_dump`), which the decoder's scanner reads in one call; anything else
    (whitespace, trailing text, a damaged row) goes through ``decode`` and its errors."""
    if text is None or text == "null":
        return None
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        end = -1
    return value if end == len(text) else _decode(text)


class StoreCore:
    """The connection and its transactions; every method of a store runs on them."""

    on_checkpoint: Callable[[int], None] | None = None  # fault injection only (memsteward.store.crashing)

    def __init__(self, path: str = ":memory:", conn: PgConnection | None = None, migrate: bool = False) -> None:
        """A SQLite store at ``path``; or, with ``conn``, a PostgreSQL store (use :meth:`open`).
        ``migrate``: bring a store of an older schema version to this release's (else InputError)."""
        self.path = path if conn is None else redact(path)
        self.tenant: str | None = None  # the tenant this store is (memsteward.store.tenants), None: the base store
        self.url = path  # what an executor's worker process opens (may carry a password: never printed)
        self.migrated: tuple[int, int] | None = None if conn is None else conn.migrated
        self.driver: Driver
        if conn is None:
            lite = connect_sqlite(path)
            try:
                self.migrated = setup_sqlite(lite, path, migrate)
            except BaseException:
                lite.close()
                raise
            self.driver = SqliteDriver(lite, path)
        else:
            self.driver = PgDriver(conn)
        self.backend = self.driver.backend
        self.q: Queries = self.driver.queries  # every statement the store runs, in its dialect
        # one connection may serve several executor threads, one call at a time (executors.Serialized)
        self.conn: Any = self.driver.conn
        self._audit_key = signing_key()
        self.erase_wait = _erase_wait()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(6)}"
        _OPEN[self.owner] = self
        self.checkpoints = 0  # checkpoints passed since opening (the crash tests count them)
        self._reading = False  # inside read_snapshot
        # the latest event's plan steps: (event id, order, modes) as the barrier had them, or
        # (event id, {id: (seq, mode)}) once read; an event's order never changes once committed
        self._plan_steps: tuple[Any, ...] | None = None

    def close(self) -> None:
        _OPEN.pop(self.owner, None)
        self.driver.close()

    @contextmanager
    def transaction(self, lock_late: bool = False, durable: bool = True) -> Iterator[Any]:
        """One write transaction (SQLite: BEGIN IMMEDIATE; PostgreSQL: BEGIN and the store's advisory
        lock: :meth:`Driver.begin_write <memsteward.store.driver.Driver.begin_write>`), committed at the
        end, rolled back on any exception; yields the connection the statements run on.

        ``lock_late`` (PostgreSQL): the advisory lock is taken by :meth:`lock_writes`, which the
        transaction calls before it appends to the audit chain — for a transaction whose work before
        that point reads and changes only rows no other writer may change meanwhile (an event's
        publication: the ids its barrier holds), so writers go on while it does that work.

        ``durable`` False: the COMMIT does not wait for the disk, yet stays in order before every later
        commit (:meth:`Driver.begin_write <memsteward.store.driver.Driver.begin_write>`)."""
        self.driver.begin_write(lock=not lock_late, durable=durable)  # BEGIN (+ the store's write lock), before anything is read
        try:
            yield self.conn
        except BaseException:
            self.driver.rollback()
            raise
        self.checkpoint()
        self.driver.commit()
        self.checkpoint()

    def lock_writes(self) -> None:
        """The store's write lock in the open write transaction, if not held yet (SQLite's BEGIN
        IMMEDIATE holds it from the start)."""
        self.driver.lock_write()

    def checkpoint(self) -> None:
        """A point on either side of every COMMIT (and inside the longest transactions) where a crash
        test may end the process: :class:`~memsteward.store.crashing.CrashingStore` sets
        ``on_checkpoint``, which is called with the checkpoint's number (from 1, since opening)."""
        self.checkpoints += 1
        if self.on_checkpoint is not None:
            self.on_checkpoint(self.checkpoints)

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Every read until the end sees one snapshot of the store, however long the reader takes
        (an export, a copy): SQLite, a deferred read transaction (WAL: writers go on meanwhile);
        PostgreSQL, a REPEATABLE READ, READ ONLY transaction. No write may start inside it. Inside
        another, or inside a write transaction (which holds the store's write lock: no other writer
        can change what it reads), it adds nothing."""
        if self._reading or self.driver.in_transaction():
            yield
            return
        self._reading = True
        try:
            with self.driver.read_snapshot():
                yield
        finally:
            self._reading = False

    def _stream(self, sql: str, args: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        """The rows of one SELECT as the consumer asks for them, the statement started at the first:
        SQLite's cursor steps through them, PostgreSQL reads them through a server-side cursor
        (:meth:`~memsteward.store.postgres.PgConnection.stream`)."""
        yield from self.driver.stream(sql, args)

    def _concurrently(self, worth_it: bool, fn: Callable[..., None], *args: Any) -> Callable[[], None]:
        """Start ``fn(*args)`` — SQLite statements on this connection, which the calling thread leaves
        alone meanwhile — on a thread, and return the join, which re-raises what ``fn`` raised: the
        sqlite3 module lets go of the GIL while a statement runs, so SQLite writes while Python
        packs or hashes. Run at once (and a no-op join) when not ``worth_it`` (small work) or when the
        driver's statements do not run concurrently (PostgreSQL: writes wait in a queue for the next read)."""
        if not worth_it or not self.driver.concurrent_statements:
            fn(*args)
            return _done
        failed: list[BaseException] = []

        def run() -> None:
            try:
                fn(*args)
            except BaseException as exc:  # noqa: BLE001 — handed to the joining thread
                failed.append(exc)
        worker = threading.Thread(target=run, name="memsteward-barrier", daemon=True)
        worker.start()

        def join() -> None:
            interrupted: BaseException | None = None
            while worker.is_alive():  # an interrupt waits for the statement to end: the rollback needs the connection
                try:
                    worker.join()
                except BaseException as exc:  # noqa: BLE001 — KeyboardInterrupt, re-raised below
                    interrupted = exc
            if interrupted is not None:
                raise interrupted
            if failed:
                raise failed[0]
        return join
