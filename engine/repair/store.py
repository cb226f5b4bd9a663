"""The SQLite store: the only way the engine reads or writes memory state.

Artifacts keep every version (``versions``), a visibility state (servable, withdrawn, staged,
republished, erased), influence/semantic ``edges``, ``events`` with their plan, ``plan_steps``
and an append-only ``audit`` log (UPDATE/DELETE on it abort). Each state change of a repair is
one transaction: the barrier (MemoRepair §2.2, Alg. 1 line 2) withdraws all of C(F) at once,
each staged successor is one commit, and publication (Alg. 1 line 8) is one commit. A process
killed at any point therefore leaves the database at a transaction boundary where nothing of
C(F) is servable unless it was published, and :meth:`Store.unfinished_event` lets
``memsteward recover`` roll the event forward.

Deletion erases the roots' content and metadata in every version at publication (the rows,
ids, kinds and version numbers stay, with an ``erase`` audit record); until then they are
withdrawn like the rest of C(F). Each erased content leaves a ``tombstones`` row (its SHA-256
digest only, never the text), so the write path refuses to ingest it again.

The write path (:meth:`Store.record`, :meth:`Store.record_many`) appends versions as the agent
creates memory, with write fencing; the retrieval guard (:meth:`Store.servable`) filters a
retriever's candidate ids in one indexed query.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import signal
import socket
import sqlite3
import threading
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import islice
from operator import itemgetter
from pathlib import Path
from typing import Any

from ..errors import EventHeld, InputError, WriteRefused
from ..textnorm import text_digests
from .artifacts import ABSENT, SERVABLE_STATES, Artifact, Edge, Snapshot, parse_store_document, read_json
from .auditchain import GENESIS, chain_same, chain_same_bytes, row_hash, seal, sealed_head_problem, signing_key
from .dialect import (
    CORE_TABLES,
    MIGRATIONS,
    SCHEMA_VERSION,
    SQLITE_SCHEMA,
    PgConnection,
    check_version,
    connect_postgres,
    db_errors,
    is_postgres_url,
    redact,
    retrying,
)
from .lineage import candidates, index_hashes
from .planstore import plan_text as stored_plan
from .planstore import read_fields, read_plan
from .reingest import verdict as reingest_verdict
from .store_api import StepRecord
from .writes import Write, canonical_json, content_digest, prepare

__all__ = ["Store", "content_digest", "digest"]

SCHEMA = SQLITE_SCHEMA  # the per-backend DDL lives in .dialect

CRASH_ENV = "MEMSTEWARD_CRASH_AT"
ERASE_WAIT_ENV = "MEMSTEWARD_ERASE_WAIT"
ERASE_WAIT_DEFAULT, ERASE_WAIT_MAX = 10.0, 600.0


def _process_start(pid: int) -> str | None:
    """The kernel's start time of a process (Linux /proc), so a reused pid is not mistaken for it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


_OPEN: weakref.WeakValueDictionary[str, Store] = weakref.WeakValueDictionary()  # this process's open stores


def _alive(owner: str, host: str, pid: int, started: str | None, session: str | None = None,
           conn: Any = None) -> bool:
    """Whether a lease holder still runs. In this very process: while its Store is open. On
    PostgreSQL: while the server still runs the holder's session (``session``: backend pid and
    start), on any host — a killed process's session ends with its TCP connection. Otherwise (SQLite,
    or a lease from before schema version 2) by pid on this host; another host is assumed alive."""
    if host == socket.gethostname() and pid == os.getpid():
        return owner in _OPEN
    if session is not None and conn is not None and hasattr(conn, "session_alive"):
        return conn.session_alive(session)
    if host != socket.gethostname():
        return True
    if pid == os.getpid():
        return owner in _OPEN
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return started is None or _process_start(pid) in (None, started)


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


_CURRENT = ("SELECT a.id, a.kind, a.arch, a.version, a.state, v.content, v.meta FROM artifacts a "
            "JOIN versions v ON v.id = a.id AND v.version = a.version ")


def _artifact(row: Sequence[Any]) -> Artifact:
    """A row of ``_CURRENT`` as the artifact at its current version."""
    i, k, ar, ver, st, c, m = row
    return Artifact(i, k, ar, ver, None if c is None else json.loads(c), json.loads(m), st)


_PENDING = StepRecord("pending", None, None)  # a step of the order without a ``plan_steps`` row
WITHDRAW_PART = 25_000  # withdraw rows per INSERT of a barrier; larger barriers write while they pack and hash


def _done() -> None:
    """The join of work that already ran."""

_decoder = json.JSONDecoder()
_decode, _scan = _decoder.decode, _decoder.scan_once


REACH_NARROW, REACH_NARROW_LEVELS = 64, 32  # Store.reach: after 32 levels of < 64 ids, one recursive query
_FIRST = itemgetter(0)
_SERVABLE_SQL = ", ".join(f"'{s}'" for s in sorted(SERVABLE_STATES))


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


def tombstone_hit(digests: set[str], dead: Mapping[str, str]) -> str | None:
    """The first (sorted) of a write's digests — exact content, normalised text of content and meta
    (:func:`memsteward.textnorm.text_digests`) — that a tombstone holds, else None. The one tombstone
    test of the write path (issue 29's ``reingest`` rule calls it through ``_apply_writes``)."""
    return next((d for d in sorted(digests) if d in dead), None)


class Store:
    """A memsteward store in one SQLite database (a file path, or ``:memory:``)."""

    def __init__(self, path: str = ":memory:", conn: PgConnection | None = None, migrate: bool = False) -> None:
        """A SQLite store at ``path``; or, with ``conn``, a PostgreSQL store (use :meth:`open`).
        ``migrate``: bring a store of an older schema version to this release's (else InputError)."""
        self.backend = "sqlite" if conn is None else "postgresql"
        self.path = path if conn is None else redact(path)
        self.url = path  # what an executor's worker process opens (may carry a password: never printed)
        # one connection may serve several executor threads, one call at a time (executors.Serialized)
        self.conn: Any = (sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
                          if conn is None else conn)
        self.migrated: tuple[int, int] | None = None if conn is None else conn.migrated
        if conn is None:
            try:
                self._setup_sqlite(migrate)
            except BaseException:
                self.conn.close()
                raise
        self._audit_key = signing_key()
        self._crash_at = int(os.environ.get(CRASH_ENV, "0") or 0)
        self.erase_wait = _erase_wait()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(6)}"
        _OPEN[self.owner] = self
        self._checkpoints = 0
        self._reading = False  # inside read_snapshot
        # the latest event's plan steps: (event id, order, modes) as the barrier had them, or
        # (event id, {id: (seq, mode)}) once read; an event's order never changes once committed
        self._plan_steps: tuple[Any, ...] | None = None

    def _setup_sqlite(self, migrate: bool) -> None:
        """PRAGMAs and the schema: created in an empty database, checked (version, foreign tables)
        in an existing one — which is changed only by ``migrate`` (one transaction)."""
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed (not every build defaults to it)
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        tables.discard("sqlite_sequence")
        if tables and not CORE_TABLES <= tables:
            raise InputError(f"the database holds tables that are not a memsteward store "
                             f"({', '.join(sorted(tables)[:5])})", file=self.path)
        if tables:
            row = (self.conn.execute("SELECT version FROM memsteward_schema WHERE one = 1").fetchone()
                   if "memsteward_schema" in tables else None)
            version = 1 if row is None else int(row[0])
            check_version(version, "the database", self.path, migrate)
        if self.path != ":memory:":
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = FULL")
        if not tables:
            self.conn.executescript(f"BEGIN IMMEDIATE; {SCHEMA} INSERT OR IGNORE INTO memsteward_schema(one, version) "
                                    f"VALUES (1, {SCHEMA_VERSION}); COMMIT;")
        elif version < SCHEMA_VERSION:  # `store migrate`: every pending step and the version, in one transaction
            steps = "".join(step(self.conn) for step in MIGRATIONS["sqlite"][version - 1:])
            try:
                self.conn.executescript(f"BEGIN IMMEDIATE; {steps}; INSERT OR REPLACE INTO memsteward_schema(one, "
                                        f"version) VALUES (1, {SCHEMA_VERSION}); COMMIT;")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            self.migrated = (version, SCHEMA_VERSION)

    # ------------------------------------------------------------------ opening

    @staticmethod
    def open(path: str, create: bool = False, migrate: bool = False) -> Store:
        """Open a store by path or URL: ``postgresql://…[?schema=name]`` (psycopg 3), a SQLite file
        (``sqlite:///x.db`` or a plain path), or a ``.json`` export loaded into an in-memory store.
        A store of an older schema version is refused (InputError naming ``memsteward store migrate``)
        unless ``migrate``, which upgrades it in one transaction (``.migrated`` = (from, to))."""
        if is_postgres_url(path):
            return Store(path, conn=connect_postgres(path, create=create, migrate=migrate))
        if path.startswith("sqlite:///"):
            path = path[len("sqlite:///"):] or ":memory:"
        if path == ":memory:":
            return Store()
        p = Path(path)
        if p.suffix.lower() == ".json":
            store = Store()
            doc, text = read_json(path)
            store.import_snapshot(parse_store_document(doc, path, text), file=path)
            return store
        if not p.exists() and not create:
            raise InputError("store not found (create one with `memsteward store import`)", file=path)
        if p.exists():
            with open(p, "rb") as fh:
                head = fh.read(16)
            if head and head != b"SQLite format 3\x00":
                raise InputError("not a SQLite database or a .json store export", file=path)
        try:
            return Store(path, migrate=migrate)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"cannot open store: {exc}", file=path) from None

    def close(self) -> None:
        _OPEN.pop(self.owner, None)
        self.conn.close()

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        if self.backend == "sqlite":
            self.conn.execute("BEGIN IMMEDIATE")
        else:
            self.conn.begin_write()  # BEGIN + the store's advisory lock, before anything is read
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.checkpoint()
        self.conn.execute("COMMIT")
        self.checkpoint()

    def checkpoint(self) -> None:
        """Crash-test hook: with MEMSTEWARD_CRASH_AT=N the process SIGKILLs itself at checkpoint N."""
        self._checkpoints += 1
        if self._crash_at and self._checkpoints == self._crash_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def _audit(self, action: str, artifact_id: str | None = None, event_id: int | None = None,
               detail: Mapping[str, Any] | None = None) -> None:
        self._append_audit([(_now(), event_id, action, artifact_id, _dump(detail or {}))])

    def _append_audit(self, rows: Sequence[tuple[str, int | None, str, str | None, str]]) -> None:
        """Append (at, event_id, action, artifact_id, detail) rows, each chained to the last hash."""
        seq, prev = self._audit_tail()
        out = []
        for at, event_id, action, artifact_id, detail in rows:
            seq += 1
            prev = row_hash(prev, seq, at, event_id, action, artifact_id, detail)
            out.append((seq, at, event_id, action, artifact_id, detail, prev))
        self._write_audit(out)

    def _append_withdrawals(self, event_id: int, ids: Sequence[str], ids_text: str) -> None:
        """One chained ``withdraw`` row per id, all at one time, hashed in one pass (:func:`chain_same`).

        SQLite: the rows go in by parts of ``WITHDRAW_PART`` rows, each part's INSERT running on a
        thread while the next part is hashed (:meth:`_insert_withdrawals`); PostgreSQL: one COPY
        (:class:`~memsteward.repair.dialect.PgConnection`)."""
        seq, prev = self._audit_tail()
        at = _now()
        if self.backend != "sqlite" or not ids:
            hashes = chain_same(prev, seq + 1, at, event_id, "withdraw", ids, "{}")
            self._write_audit([(seq + 1 + k, at, event_id, "withdraw", i, "{}", h)
                               for k, (i, h) in enumerate(zip(ids, hashes))])
            return
        written = _done
        try:
            for start in range(0, len(ids), WITHDRAW_PART):
                hashes = chain_same_bytes(prev, seq + 1 + start, at, event_id, "withdraw",
                                          ids[start:start + WITHDRAW_PART], "{}")
                written()  # the previous part's rows are in
                written = self._concurrently(len(ids) > WITHDRAW_PART, self._insert_withdrawals, seq + 1, at,
                                             event_id, ids_text, start, hashes)
                prev = hashes[-1].decode("ascii")
        finally:
            written()  # never leave a statement running into the rollback
        self._write_head(seq + len(ids), prev)

    def _insert_withdrawals(self, first: int, at: str, event_id: int, ids_text: str, start: int,
                            hashes: Sequence[bytes]) -> None:
        """The withdraw rows of the ids at positions start, start + 1, … of the JSON array ``ids_text``
        (the one the UPDATE read), row k as audit row ``first + k``: one INSERT … SELECT, each row's
        hash cut out of one BLOB of the part's concatenated 64-character hashes (a BLOB's ``substr`` is
        by byte offset; a TEXT's would count characters from its start)."""
        self.conn.execute("INSERT INTO audit(seq, at, event_id, action, artifact_id, detail, hash) SELECT ? + j.key, "
                          "?, ?, 'withdraw', j.value, '{}', CAST(substr(?, 64 * (j.key - ?) + 1, 64) AS TEXT) "
                          "FROM json_each(?) j WHERE j.key >= ? AND j.key < ?",
                          (first, at, event_id, b"".join(hashes), start, ids_text, start,
                           start + len(hashes)))

    def _audit_tail(self) -> tuple[int, str]:
        last = self.conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        return (0, GENESIS) if last is None else (int(last[0]), last[1] or GENESIS)

    def _write_audit(self, out: Sequence[tuple[int, str, int | None, str, str | None, str, str]]) -> None:
        self.conn.executemany("INSERT INTO audit(seq, at, event_id, action, artifact_id, detail, hash) "
                              "VALUES (?,?,?,?,?,?,?)", out)
        if out:
            self._write_head(out[-1][0], out[-1][6])

    def _write_head(self, seq: int, head: str) -> None:
        """Record (and, with the key, seal) the chain's head in the transaction that appended it.

        A keyed writer first checks the head it extends (:func:`~.auditchain.sealed_head_problem`):
        a log rewritten and re-chained by someone without the key is refused (InputError, the write
        rolled back), never sealed over."""
        if self._audit_key is not None:
            self._check_sealed_head(seq, head)
        sealed = None if self._audit_key is None else seal(self._audit_key, seq, head)
        self.conn.execute("INSERT INTO audit_head(one, seq, hash, seal) VALUES (1, ?, ?, ?) ON CONFLICT(one) "
                          "DO UPDATE SET seq = excluded.seq, hash = excluded.hash, seal = excluded.seal",
                          (seq, head, sealed))

    def _check_sealed_head(self, seq: int, head: str) -> None:
        """Before sealing (seq, head): the previous head must carry a valid seal and be the row this
        transaction's first appended row links to (rows appended since are this transaction's own)."""
        old = self.conn.execute("SELECT seq, hash, seal FROM audit_head WHERE one = 1").fetchone()
        rows = self.conn.execute("SELECT seq, at, event_id, action, artifact_id, detail, hash FROM audit "
                                 "WHERE seq >= ? ORDER BY seq LIMIT 2", (int(old[0]) if old else 0,)).fetchall()
        problem = sealed_head_problem(self._audit_key, None if old is None else (int(old[0]), old[1], old[2]),
                                      [tuple(r) for r in rows])
        if problem is not None:
            raise InputError(f"refusing to write: {problem}; nothing was written. Run `memsteward audit --check "
                             f"--store {self.path}` and restore the store from a trusted copy", file=self.path)

    def audit_head(self) -> tuple[int, str] | None:
        """(seq, hash) of the last row, as recorded in the same transaction as the row."""
        row = self.conn.execute("SELECT seq, hash FROM audit_head WHERE one = 1").fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def audit_seal(self) -> str | None:
        """The HMAC of the audit head (None when the last writer held no key)."""
        row = self.conn.execute("SELECT seal FROM audit_head WHERE one = 1").fetchone()
        return None if row is None else row[0]

    def audit_rows(self) -> list[tuple]:
        """Raw audit rows (seq, at, event_id, action, artifact_id, detail, hash) in order."""
        return [tuple(r) for r in self.conn.execute(
            "SELECT seq, at, event_id, action, artifact_id, detail, hash FROM audit ORDER BY seq")]


    # ------------------------------------------------------------------ import / export

    @retrying
    def import_snapshot(self, snap: Snapshot, file: str = "<input>") -> None:
        """Add artifacts and edges in one transaction; clashing ids or dangling edges are errors.

        Only the ids the snapshot names are looked up, so importing a store in batches costs what
        each batch holds (an edge may name an artifact of an earlier batch)."""
        named = set(snap.artifacts).union(*((e.src, e.dst) for e in snap.edges))
        existing = {r[0] for r in self.conn.execute("SELECT id FROM artifacts WHERE id IN (SELECT value FROM "
                                                    "json_each(?))", (json.dumps(sorted(named)),))}
        clash = sorted(existing & set(snap.artifacts))
        if clash:
            raise InputError(f"duplicate artifact id {clash[0]!r} (already in the store)", file=file)
        known = existing | set(snap.artifacts)
        for k, e in enumerate(snap.edges):
            for end in (e.src, e.dst):
                if end not in known:
                    raise InputError(f"edge names a missing artifact {end!r}", file=file, field=f"edges[{k}]")
        with self.transaction() as c:
            c.executemany("INSERT INTO artifacts(id, kind, arch, version, state) VALUES (?,?,?,?,?)",
                          [(a.id, a.kind, a.arch, a.version, a.state) for a in snap.artifacts.values()])
            c.executemany("INSERT INTO versions(id, version, content, meta, erased) VALUES (?,?,?,?,?)",
                          [(a.id, a.version, _dump(a.content) if a.state != "erased" else None,
                            _dump(dict(a.meta)), int(a.state == "erased")) for a in snap.artifacts.values()])
            c.executemany("INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?,?,?)",
                          [(e.src, e.dst, e.type) for e in snap.edges])
            self._index({a.id: a.content for a in snap.artifacts.values() if a.state != "erased"})
            self._audit("import", detail={"file": file, "artifacts": len(snap.artifacts),
                                          "edges": len(snap.edges)})

    def export(self) -> dict[str, Any]:
        """The JSON exchange document of the current versions (round-trips through import)."""
        with self.read_snapshot():
            return {key: list(rows) for key, rows in self.export_stream().items()}

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Every read until the end sees one snapshot of the store, however long the reader takes
        (an export, a copy): SQLite, a deferred read transaction (WAL: writers go on meanwhile);
        PostgreSQL, a REPEATABLE READ, READ ONLY transaction. No write may start inside it. Inside
        another, or inside a write transaction (which holds the store's write lock: no other writer
        can change what it reads), it adds nothing."""
        if self._reading or self.conn.in_transaction:
            yield
            return
        self._reading = True
        try:
            if self.backend != "sqlite":
                with self.conn.read_snapshot():
                    yield
                return
            self.conn.execute("BEGIN")
            try:
                yield
            finally:
                self.conn.execute("ROLLBACK")
        finally:
            self._reading = False

    def _edges(self) -> Iterator[tuple[str, str, str]]:
        """Every edge (src, dst, type) in key order, as the rows come."""
        return self._stream("SELECT src, dst, type FROM edges ORDER BY src, dst, type")

    def export_stream(self) -> dict[str, Iterator[dict[str, Any]]]:
        """:meth:`export` with its two arrays as iterators over the store's rows, each read by one
        statement as the consumer asks (:func:`memsteward.jsonio.write_streamed` writes the same
        bytes as for :meth:`export` without holding the document). Consume it inside
        :meth:`read_snapshot`, so that artifacts and edges come from one state of the store."""
        return {"artifacts": (a.as_dict() for a in self._iter_rows()),
                "edges": ({"src": s, "dst": d, "type": t} for s, d, t in self._edges())}

    # ------------------------------------------------------------------ reading

    def _rows(self, where: str = "", args: Sequence[Any] = ()) -> list[Artifact]:
        return list(map(_artifact, self.conn.execute(_CURRENT + where + " ORDER BY a.id", args)))

    def _iter_rows(self, where: str = "", args: Sequence[Any] = ()) -> Iterator[Artifact]:
        """:meth:`_rows` as they come (:meth:`_stream`)."""
        return map(_artifact, self._stream(_CURRENT + where + " ORDER BY a.id", args))

    def _stream(self, sql: str, args: Sequence[Any] = ()) -> Iterator[tuple]:
        """The rows of one SELECT as the consumer asks for them, the statement started at the first:
        SQLite's cursor steps through them, PostgreSQL reads them through a server-side cursor
        (:meth:`~memsteward.repair.dialect.PgConnection.stream`)."""
        if self.backend == "sqlite":
            yield from self.conn.execute(sql, args)
        else:
            yield from self.conn.stream(sql, args)

    def snapshot(self) -> Snapshot:
        """The whole store in memory, artifacts and edges from one state of it (:meth:`read_snapshot`)."""
        with self.read_snapshot():
            arts = {a.id: a for a in self._iter_rows()}
            return Snapshot(arts, tuple(Edge(s, d, t) for s, d, t in self._edges()))

    def serve(self) -> list[Artifact]:
        """Retrieval view: only servable (incl. republished) artifacts at their served version."""
        return list(self.serve_stream())

    def serve_stream(self) -> Iterator[Artifact]:
        """:meth:`serve` as the rows come (``memsteward store serve --json`` of a large store)."""
        return self._iter_rows("WHERE a.state IN (?, ?)", tuple(sorted(SERVABLE_STATES)))

    # Planning reads (memsteward.repair.scope.Provenance): indexed, proportional to the cascade.

    def reach(self, roots: Collection[str]) -> frozenset[str]:
        """C(F) = Reach(F; E^inf), roots included: breadth-first, one query per level over the
        (src, dst, type) key (at 10^6 artifacts 0.20 s against 0.37 s for one recursive query,
        whose UNION keeps a temporary B-tree of every id). A long narrow tail — more than
        REACH_NARROW_LEVELS levels under REACH_NARROW ids, a chain — is finished by the recursive
        query from its frontier instead of a statement per level."""
        seen = set(roots)
        frontier = set(seen)  # the ids whose children are read next
        narrow = 0
        while frontier:
            if len(frontier) < REACH_NARROW:
                narrow += 1
                if narrow > REACH_NARROW_LEVELS:
                    seen.update(r[0] for r in self.conn.execute(
                        "WITH RECURSIVE c(id) AS (SELECT value FROM json_each(?) UNION SELECT e.dst FROM edges e "
                        "JOIN c ON e.src = c.id WHERE e.type = 'influence') SELECT id FROM c", (_id_list(frontier),)))
                    break
            rows = self.conn.execute("SELECT e.dst FROM json_each(?) j CROSS JOIN edges e ON e.src = j.value "
                                     "WHERE e.type = 'influence'", (_id_list(frontier),)).fetchall()
            frontier = set(map(_FIRST, rows)).difference(seen)
            seen |= frontier
        return frozenset(seen)

    def parent_edges(self, ids: Collection[str]) -> list[tuple[str, str]]:
        """Every influence edge (u, v) with v ∈ ``ids``, ordered by (v, u): read from the covering
        ``edges_parents`` index alone (dst, type, src), whose order the sort finds already in place."""
        return self.conn.execute(
            "SELECT e.src, e.dst FROM json_each(?) j CROSS JOIN edges e ON e.dst = j.value "
            "WHERE e.type = 'influence' ORDER BY e.dst, e.src", (_id_list(ids),)).fetchall()

    def artifacts_of(self, ids: Collection[str], content: bool = True) -> dict[str, Artifact]:
        """The current version of each of ``ids`` that exists (by primary key); with ``content``
        False the content is not read (``None``: planning reads only what checks need)."""
        q = ("SELECT a.id, a.kind, a.arch, a.version, a.state, " + ("v.content" if content else "NULL") +
             ", v.meta FROM json_each(?) j "
             "CROSS JOIN artifacts a ON a.id = j.value JOIN versions v ON v.id = a.id AND v.version = a.version")
        return {i: Artifact(i, k, ar, ver, _load(c), _load(m), st)
                for i, k, ar, ver, st, c, m in self.conn.execute(q, (_id_list(ids),)).fetchall()}

    def shingle_candidates(self, roots: Mapping[str, Any], n: int) -> list[tuple[str, Any]]:
        """(id, content) of the servable artifacts that may share an n-word run with one of ``roots``'
        contents: :func:`memsteward.repair.lineage.candidates` over the ``shingles`` index (the
        rarest trigram's posting list per window), then one read of those artifacts."""
        ids = candidates(roots, n, self._posting)
        if not ids:
            return []
        q = ("SELECT a.id, v.content FROM json_each(?) j CROSS JOIN artifacts a ON a.id = j.value "
             "JOIN versions v ON v.id = a.id AND v.version = a.version "
             "WHERE a.state IN ('servable', 'republished') AND v.content IS NOT NULL ORDER BY a.id")
        return [(i, json.loads(c)) for i, c in self.conn.execute(q, (json.dumps(sorted(ids)),))]

    def _posting(self, h: int, limit: int | None) -> list[str]:
        """Ids whose current content holds the trigram of hash ``h`` (at most ``limit``), by the index key."""
        if limit is None:
            return [r[0] for r in self.conn.execute("SELECT id FROM shingles WHERE h = ?", (h,))]
        return [r[0] for r in self.conn.execute("SELECT id FROM shingles WHERE h = ? LIMIT ?", (h, limit))]

    def _index(self, contents: Mapping[str, Any], replace: Collection[str] = ()) -> None:
        """Write the lineage index rows (trigram hash, id) of ``contents`` (id → current content; None:
        erased), after deleting every row of the ids in ``replace`` — inside the caller's transaction,
        so the index always describes the committed current versions. Hashes only, never words."""
        if replace:
            self.conn.execute("DELETE FROM shingles WHERE id IN (SELECT value FROM json_each(?))",
                              (json.dumps(sorted(replace)),))
        rows = sorted({(h, i) for i, c in contents.items() if c is not None for h in index_hashes(c)})
        for start in range(0, len(rows), 50_000):
            self.conn.executemany("INSERT INTO shingles(h, id) VALUES (?, ?)", rows[start:start + 50_000])

    def _reindex(self, ids: Collection[str]) -> None:
        """Re-index ``ids`` from their current versions as stored (republished, erased, …)."""
        if not ids:
            return
        q = ("SELECT a.id, v.content FROM json_each(?) j CROSS JOIN artifacts a ON a.id = j.value "
             "JOIN versions v ON v.id = a.id AND v.version = a.version")
        current = {i: None if c is None else json.loads(c)
                   for i, c in self.conn.execute(q, (json.dumps(sorted(set(ids))),))}
        self._index(current, replace=ids)

    def unservable_of(self, ids: Collection[str]) -> dict[str, str]:
        """The state of each of ``ids`` that is not servable (``"absent"``: no such artifact); the
        servable ones are left out. Planning asks this of the influence parents outside C(F), which
        are almost all servable: at 10^6 artifacts a row per parent cost 0.16–0.30 s, the few
        unservable ones 0.08 s."""
        return dict(self.conn.execute(
            f"SELECT j.value, coalesce(a.state, '{ABSENT}') FROM json_each(?) j LEFT JOIN artifacts a "
            f"ON a.id = j.value WHERE a.state IS NULL OR a.state NOT IN ({_SERVABLE_SQL})", (_id_list(ids),)))

    def last_with_prefix(self, prefixes: Sequence[str]) -> dict[str, tuple[str, str]]:
        """For each prefix p: (id, state) of the greatest id in [p, p + "~"), for prefixes that have one.

        One index probe per prefix (an ``ORDER BY id DESC LIMIT 1`` range over the primary key), so
        an adapter finds an item's latest incarnation in O(log n), whatever the number of incarnations
        (ids are compared bytewise: collation "C" on PostgreSQL). Meant for ASCII id schemes."""
        if not prefixes:
            return {}
        rows = self.conn.execute(
            "SELECT j.value, a.id, a.state FROM json_each(?) j JOIN artifacts a ON a.id = "
            "(SELECT x.id FROM artifacts x WHERE x.id >= j.value AND x.id < j.value || '~' "
            "ORDER BY x.id DESC LIMIT 1)", (_id_list(prefixes),)).fetchall()
        return {p: (i, st) for p, i, st in rows}

    def ids_with_prefix(self, prefix: str, limit: int) -> list[tuple[str, str]]:
        """(id, state) of the ids in [prefix, prefix + "~"), in id order, at most ``limit`` (> 0)."""
        return [(i, st) for i, st in self.conn.execute(
            "SELECT id, state FROM artifacts WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            (prefix, prefix + "~", int(limit)))]

    def get(self, ident: str) -> Artifact | None:
        rows = self._rows("WHERE a.id = ?", (ident,))
        return rows[0] if rows else None

    def version_of(self, ident: str, version: int) -> Artifact | None:
        row = self.conn.execute(
            "SELECT a.kind, a.arch, v.content, v.meta, a.state FROM artifacts a JOIN versions v "
            "ON v.id = a.id WHERE a.id = ? AND v.version = ?", (ident, version)).fetchone()
        if row is None:
            return None
        kind, arch, content, meta, state = row
        return Artifact(ident, kind, arch, version, None if content is None else json.loads(content),
                        json.loads(meta), state)

    def states(self) -> dict[str, tuple[str, int]]:
        return {i: (s, v) for i, s, v in self.conn.execute("SELECT id, state, version FROM artifacts")}

    def versions(self, ident: str) -> list[tuple[int, bool, int | None]]:
        """(version, erased, event_id) of every stored version of an artifact."""
        return [(v, bool(e), ev) for v, e, ev in self.conn.execute(
            "SELECT version, erased, event_id FROM versions WHERE id = ? ORDER BY version", (ident,))]

    def is_erased(self, ident: str, version: int) -> bool:
        row = self.conn.execute("SELECT erased FROM versions WHERE id = ? AND version = ?", (ident, version)).fetchone()
        return bool(row and row[0])

    def version_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM versions").fetchone()[0])

    def audit_log(self) -> list[dict[str, Any]]:
        return list(self.audit_log_stream())

    def audit_log_stream(self) -> Iterator[dict[str, Any]]:
        """:meth:`audit_log` as the rows come (``memsteward store log --json``)."""
        return ({"seq": s, "at": at, "event_id": ev, "action": a, "artifact_id": art, "detail": json.loads(d)}
                for s, at, ev, a, art, d in self._stream(
                    "SELECT seq, at, event_id, action, artifact_id, detail FROM audit ORDER BY seq"))

    def dump_state(self) -> dict[str, Any]:
        """Every table except the audit timestamps (for before/after comparisons in tests)."""
        out = {}
        for table in ("artifacts", "versions", "edges", "events", "plan_steps"):
            out[table] = sorted(map(tuple, self.conn.execute(f"SELECT * FROM {table}")), key=repr)
        out["audit"] = [tuple(r) for r in self.conn.execute("SELECT seq, event_id, action, artifact_id FROM audit")]
        return out

    # ------------------------------------------------------------------ write path and guard

    def is_tombstoned(self, digest: str) -> bool:
        """Whether a content digest (:func:`content_digest`) belongs to an erased root's content."""
        return self.conn.execute("SELECT 1 FROM tombstones WHERE digest = ?", (digest,)).fetchone() is not None

    def servable(self, ids: Sequence[str]) -> list[str]:
        """The retrieval guard: the ids of ``ids`` that may be served, in the given order.

        One query over the primary key (the ids travel as one JSON parameter), so its cost grows
        with ``len(ids)``, not with the store. Unknown ids are simply not servable.

        Examples
        --------
        >>> s = Store()
        >>> _ = s.record({"id": "a", "kind": "record", "content": "x"})
        >>> s.servable(["b", "a"])
        ['a']
        """
        wanted = list(ids)
        if not wanted:
            return []
        ok = {r[0] for r in self.conn.execute(
            "SELECT id FROM artifacts WHERE id IN (SELECT value FROM json_each(?)) "
            "AND state IN ('servable', 'republished')", (json.dumps(wanted),))}
        return [i for i in wanted if i in ok]

    def record(self, artifact: Artifact | Mapping[str, Any], inputs: Sequence[str] = (),
               semantic: Sequence[str] = (), *, reingest: str = "refuse") -> Artifact:
        """Append one artifact version with its provenance, in one transaction (the write path).

        ``inputs`` are the artifacts it was produced from (influence edges ``input → artifact``,
        E^inf of MemoRepair §2.1); ``semantic`` are retrieval links (E^sem, never repair scope).
        A new id starts at version 1; re-recording a servable id appends version n+1 and adds its
        inputs to the artifact's influence edges (provenance only grows: older versions were built
        from the older inputs). Returns the recorded artifact.

        Raises
        ------
        InputError
            bad input (unknown ids, non-JSON or oversized content, kind change), store unchanged.
        WriteRefused
            write fencing: an input is withdrawn, staged or erased, the id itself is not servable,
            the content is a tombstoned (erased) content that ``reingest`` refuses
            (:func:`memsteward.repair.reingest.verdict`: a derived write always, a first-hand one
            under ``refuse``, the default here), or an event is unfinished. Fenced and
            tombstoned refusals append a ``refuse`` audit row; nothing else changes.

        Examples
        --------
        >>> s = Store()
        >>> s.record({"id": "n1", "kind": "record", "content": "Alice likes tea"}).version
        1
        >>> s.record({"id": "sum", "kind": "summary", "content": "likes tea"}, inputs=["n1"]).version
        1
        >>> s.record({"id": "n1", "kind": "record", "content": "Alice likes coffee"}).version
        2
        """
        return self.record_many([prepare(artifact, inputs, semantic, file=self.path)], reingest=reingest)[0]

    @retrying
    def record_many(self, writes: Sequence[Write | Mapping[str, Any]], *, reingest: str = "refuse") -> list[Artifact]:
        """Record a batch of writes in ONE transaction: all of them, or (on any refusal) none.

        Each item is a :class:`~memsteward.repair.writes.Write` or a ``store put`` object
        (artifact fields plus ``inputs``/``semantic``). A write may name artifacts recorded earlier
        in the same batch. Fencing and errors are as in :meth:`record`.
        """
        from .writes import parse_put

        batch = [w if isinstance(w, Write) else parse_put(w, self.path, f"writes[{k}].")
                 for k, w in enumerate(writes)]
        refused: WriteRefused | None = None
        out: list[Artifact] = []
        with self.transaction():
            if self.unfinished_event() is not None:
                raise WriteRefused("the store has an unfinished event; writes wait until it is published "
                                   "(run `memsteward recover`)", "unfinished-event", self.path)
            try:
                out = self._apply_writes(batch, reingest)
            except WriteRefused as exc:
                if exc.reason in ("fenced", "tombstone"):
                    refused = exc  # committed below: the refusal's audit row, nothing else
                else:
                    raise
        if refused is not None:
            raise refused
        return out

    def _apply_writes(self, batch: Sequence[Write], reingest: str = "refuse") -> list[Artifact]:
        named = sorted({w.artifact.id for w in batch} | {i for w in batch for i in (*w.inputs, *w.semantic)})
        known = {i: (k, a, st) for i, k, a, st in self.conn.execute(
            "SELECT id, kind, arch, state FROM artifacts WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(named),))}
        top = dict(self.conn.execute("SELECT id, MAX(version) FROM versions WHERE id IN "
                                     "(SELECT value FROM json_each(?)) GROUP BY id",
                                     (json.dumps([w.artifact.id for w in batch]),)).fetchall())
        said = [{w.digest} | text_digests(w.artifact.content, w.artifact.meta) for w in batch]
        dead = dict(self.conn.execute("SELECT digest, root FROM tombstones WHERE digest IN "
                                      "(SELECT value FROM json_each(?))",
                                      (json.dumps(sorted(set().union(*said))),)).fetchall())
        versions, edges, arts, out = [], [], [], []
        existed = {w.artifact.id for w in batch if w.artifact.id in known}  # their index rows are replaced
        manifest = hashlib.sha256()
        for k, w in enumerate(batch):
            a, where = w.artifact, (f"writes[{k}]." if len(batch) > 1 else "")
            for name, ids in (("inputs", w.inputs), ("semantic", w.semantic)):
                for j, i in enumerate(ids):
                    if i not in known and i != a.id:
                        raise InputError(f"{name} names unknown artifact {i!r}", file=self.path,
                                         field=f"{where}{name}[{j}]")
            fenced = [(j, i, known[i][2]) for j, i in enumerate(w.inputs)
                      if i in known and known[i][2] not in SERVABLE_STATES]
            if fenced:
                j, i, st = fenced[0]
                self._refusal_audit(a.id, {"reason": "fenced", "inputs": {x: s for _, x, s in fenced}})
                raise WriteRefused(f"write of {a.id!r} refused: input {i!r} is {st} (under repair or deleted); "
                                   "new memory may derive only from servable artifacts", "fenced", self.path,
                                   f"{where}inputs[{j}]")
            hit = tombstone_hit(said[k], dead)
            if hit is not None and reingest_verdict(reingest, not w.inputs, True) == "refuse":
                self._refusal_audit(a.id, {"reason": "tombstone", "sha256": hit})
                raise WriteRefused(f"write of {a.id!r} refused: its content was erased by a delete event "
                                   f"(tombstone of {dead[hit]!r}); deleted content is not ingested again",
                                   "tombstone", self.path, f"{where}content")
            prev = known.get(a.id)
            if prev is not None:
                if (prev[0], prev[1]) != (a.kind, a.arch):
                    raise InputError(f"artifact {a.id!r} is a {prev[0]}{'/' + prev[1] if prev[1] else ''}; "
                                     "a new version keeps kind and arch", file=self.path, field=f"{where}kind")
                if prev[2] not in SERVABLE_STATES:
                    raise WriteRefused(f"artifact {a.id!r} is {prev[2]}; a withdrawn or erased id is not recorded "
                                       "again: record the new memory under a new id", "not-servable", self.path,
                                       f"{where}id")
            version = int(top.get(a.id) or 0) + 1
            top[a.id] = version
            known[a.id] = (a.kind, a.arch, "servable")
            versions.append((a.id, version, w.content_text, w.meta_text))
            arts.append((a.id, a.kind, a.arch, version))
            edges += [(i, a.id, "influence") for i in w.inputs] + [(i, a.id, "semantic") for i in w.semantic]
            manifest.update(canonical_json([a.id, version, w.digest, w.inputs]).encode("utf-8") + b"\n")
            out.append(Artifact(a.id, a.kind, a.arch, version, a.content, dict(a.meta), "servable"))
        c = self.conn
        c.executemany("INSERT INTO versions(id, version, content, meta) VALUES (?,?,?,?)", versions)
        c.executemany("INSERT INTO artifacts(id, kind, arch, version, state) VALUES (?,?,?,?,'servable') "
                      "ON CONFLICT(id) DO UPDATE SET version = excluded.version, state = 'servable', "
                      "staged_version = NULL", arts)
        c.executemany("INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?,?,?)", edges)
        self._index({a.id: a.content for a in out}, replace=sorted(existed))
        # one chained audit row per call: a single write names itself; a batch pins its manifest
        # (SHA-256 over [id, version, content sha256, inputs] lines, in order)
        if len(batch) == 1:
            w = batch[0]
            self._audit("record", w.artifact.id, detail={"version": out[0].version, "sha256": w.digest,
                                                         "inputs": list(w.inputs), "semantic": list(w.semantic)})
        elif batch:
            self._audit("record", detail={"artifacts": len(batch), "manifest_sha256": manifest.hexdigest()})
        return out

    def _refusal_audit(self, ident: str, detail: Mapping[str, Any]) -> None:
        """Audit a refused write. The batch's own rows are not written yet, so only this row commits."""
        self._audit("refuse", ident, detail=detail)

    # ------------------------------------------------------------------ repair transitions

    def unfinished_event(self) -> tuple[int, dict, dict, dict] | None:
        """(event id, event, policy, plan) of an event whose publication has not committed."""
        row = self.conn.execute("SELECT id, event, policy, plan FROM events WHERE status != 'done' "
                                "ORDER BY id LIMIT 1").fetchone()
        if row is None:
            return None
        return row[0], json.loads(row[1]), json.loads(row[2]), read_plan(row[3])

    def event(self, event_id: int | None = None) -> dict[str, Any] | None:
        """One recorded event (the latest when ``event_id`` is None) with its policy and plan."""
        sql = "SELECT id, type, event, policy, plan, status, created FROM events "
        row = (self.conn.execute(sql + "WHERE id = ?", (event_id,)).fetchone() if event_id is not None
               else self.conn.execute(sql + "ORDER BY id DESC LIMIT 1").fetchone())
        if row is None:
            return None
        i, t, ev, pol, plan, status, created = row
        return {"id": i, "type": t, "event": json.loads(ev), "policy": json.loads(pol), "plan": read_plan(plan),
                "status": status, "created": created,
                "sha256": {"event": digest(ev), "policy": digest(pol), "plan": digest(plan)}}

    def generation(self) -> int:
        """A counter that grows with every committed change (the last audit sequence number)."""
        (seq,) = self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM audit").fetchone()
        return int(seq)

    @retrying
    def barrier(self, plan_doc: Mapping[str, Any], policy_doc: Mapping[str, Any],
                staged_roots: Mapping[str, Artifact], generation: int | None = None) -> int:
        """B_ρ ← C(F): record the event and plan, withdraw all of C(F) and stage root
        replacements / new interfaces — in ONE transaction (§2.2, Alg. 1 line 2). The plan's steps
        are pending from here on without a row each (:meth:`steps` reads them from the stored order).

        ``generation`` is :meth:`generation` at planning time: if another process changed the
        store since, or left an event unfinished, nothing is written (InputError).
        """
        from .plan import paused_gc  # imported by every caller already (execute.py)

        with paused_gc():  # 10^5 rows of new objects, none cyclic: no collector passes over the heap
            return self._barrier(plan_doc, policy_doc, staged_roots, generation)

    def _barrier(self, plan_doc: Mapping[str, Any], policy_doc: Mapping[str, Any],
                 staged_roots: Mapping[str, Artifact], generation: int | None) -> int:
        barrier = list(plan_doc["barrier"])
        event_text, policy_text = _dump(plan_doc["event"]), _dump(policy_doc)
        ids_text = json.dumps(barrier)  # encoded once: the UPDATE and the withdraw rows read it
        with self.transaction():
            if self.unfinished_event() is not None:
                raise InputError("the store has an unfinished event; run `memsteward recover` first", file=self.path)
            if generation is not None and self.generation() != generation:
                raise InputError("the store changed while the event was being planned; run it again",
                                 file=self.path)
            # SQLite withdraws C(F) while this thread packs the plan (planstore: ~6x smaller at
            # |C(F)| = 10^5): the sqlite3 module lets go of the GIL while a statement runs
            withdrawn = self._concurrently(len(barrier) > WITHDRAW_PART, self._withdraw, ids_text)
            try:
                plan_text = stored_plan(plan_doc)
            finally:
                withdrawn()
            event_id = self._insert_event(plan_doc["event"]["type"], event_text, policy_text, plan_text)
            self._lease(event_id)
            self.checkpoint()
            for root, art in sorted(staged_roots.items()):
                self._insert_version(event_id, root, art.content, dict(art.meta))
            self._audit("barrier", event_id=event_id,
                        detail={"type": plan_doc["event"]["type"], "roots": plan_doc["event"]["roots"],
                                "event_sha256": digest(event_text), "policy_sha256": digest(policy_text),
                                "plan_sha256": digest(plan_text),
                                "withdrawn": len(barrier)})
            self._append_withdrawals(event_id, barrier, ids_text)  # one transaction, one time, one hashing pass
        self._plan_steps = (event_id, plan_doc["order"], plan_doc["modes"])  # committed: its steps' keys
        return event_id

    def _insert_event(self, kind: str, event_text: str, policy_text: str, plan_text: str) -> int:
        """The ``events`` row of a barrier; its id. Ids count 1, 2, … on both backends (a PostgreSQL
        identity would skip the ids of rolled-back barriers; the write lock makes MAX + 1 safe)."""
        (event_id,) = self.conn.execute(
            "INSERT INTO events(id, type, event, policy, plan, status, created) "
            "VALUES ((SELECT COALESCE(MAX(id), 0) + 1 FROM events),?,?,?,?,?,?) RETURNING id",
            (kind, event_text, policy_text, plan_text, "barrier", _now())).fetchone()
        return int(event_id)

    def _concurrently(self, worth_it: bool, fn: Callable[..., None], *args: Any) -> Callable[[], None]:
        """Start ``fn(*args)`` — SQLite statements on this connection, which the calling thread leaves
        alone meanwhile — on a thread, and return the join, which re-raises what ``fn`` raised: the
        sqlite3 module lets go of the GIL while a statement runs, so SQLite writes while Python
        packs or hashes. Run at once (and a no-op join) when not ``worth_it`` (small work) or on
        PostgreSQL, whose writes wait in a queue for the next read (:class:`PgConnection`) anyway."""
        if not worth_it or self.backend != "sqlite":
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

    def _withdraw(self, ids_text: str) -> None:
        """B_ρ: every id of the JSON array ``ids_text`` withdrawn (erased ones stay erased), one UPDATE."""
        self.conn.execute("UPDATE artifacts SET state = 'withdrawn', staged_version = NULL "
                          "WHERE id IN (SELECT value FROM json_each(?)) AND state != 'erased'", (ids_text,))

    def _lease(self, event_id: int) -> None:
        """Record this process as the event's one writer (inside the caller's transaction)."""
        self.conn.execute("INSERT INTO event_lease(event_id, owner, host, pid, started, acquired, session) "
                          "VALUES (?,?,?,?,?,?,?) ON CONFLICT(event_id) DO UPDATE SET owner = excluded.owner, "
                          "host = excluded.host, pid = excluded.pid, started = excluded.started, "
                          "acquired = excluded.acquired, session = excluded.session",
                          (event_id, self.owner, socket.gethostname(), os.getpid(), _process_start(os.getpid()),
                           _now(), getattr(self.conn, "session", None)))

    def take_event(self, event_id: int) -> bool:
        """Become the one writer of an unfinished event (``recover``): BEGIN IMMEDIATE serialises
        contenders; a lease held by another live process refuses with :class:`EventHeld` naming it,
        a lease of a dead process (killed mid-event) is taken over. False: the event was completed
        meanwhile (by the process that held it), so there is nothing left to do."""
        with self.transaction():
            status = self.conn.execute("SELECT status FROM events WHERE id = ?", (event_id,)).fetchone()
            if status is None or status[0] == "done":
                return False
            row = self.conn.execute("SELECT owner, host, pid, started, acquired, session FROM event_lease "
                                    "WHERE event_id = ?", (event_id,)).fetchone()
            if row is not None and row[0] != self.owner and _alive(row[0], row[1], int(row[2]), row[3], row[5],
                                                                   self.conn):
                holder = {"event": event_id, "host": row[1], "pid": int(row[2]), "since": row[4]}
                raise EventHeld(f"event {event_id} is held by process {row[2]} on {row[1]} since {row[4]}; "
                                "it completes the event", holder, file=self.path)
            self._lease(event_id)
        return True

    def act_for(self, owner: str) -> None:
        """Write as the lease holder ``owner``: an executor's worker process staging and validating
        for the coordinator that holds the event (:mod:`memsteward.repair.executors`). Once
        ``recover`` takes the event over, the lease names another owner and this store's writes
        are refused (fencing), like the coordinator's own."""
        _OPEN.pop(self.owner, None)
        self.owner = owner

    def _check_lease(self, event_id: int) -> None:
        row = self.conn.execute("SELECT owner, host, pid, acquired FROM event_lease WHERE event_id = ?",
                                (event_id,)).fetchone()
        if row is not None and row[0] != self.owner:
            raise EventHeld(f"event {event_id} was taken over by process {row[2]} on {row[1]} at {row[3]}",
                            {"event": event_id, "host": row[1], "pid": int(row[2]), "since": row[3]}, file=self.path)

    def _insert_version(self, event_id: int, ident: str, content: Any, meta: Mapping[str, Any]) -> int:
        (top,) = self.conn.execute("SELECT MAX(version) FROM versions WHERE id = ?", (ident,)).fetchone()
        version = int(top) + 1
        self.conn.execute("INSERT INTO versions(id, version, content, meta, event_id) VALUES (?,?,?,?,?)",
                          (ident, version, _dump(content), _dump(dict(meta)), event_id))
        self.conn.execute("UPDATE artifacts SET staged_version = ? WHERE id = ?", (version, ident))
        return version

    def staged(self, ident: str) -> Artifact | None:
        """The staged successor of an artifact (None if it has none)."""
        row = self.conn.execute("SELECT staged_version FROM artifacts WHERE id = ?", (ident,)).fetchone()
        if row is None or row[0] is None:
            return None
        return self.version_of(ident, int(row[0]))

    def steps(self, event_id: int) -> dict[str, StepRecord]:
        """The plan steps of an event in execution order: artifact id → (status, staged version, report).

        A step has a ``plan_steps`` row from its first recorded outcome on (staged, then validated,
        failed or blocked); a step of the stored plan's order without one is ``pending``. (Releases
        before this one wrote a pending row per step at the barrier; such rows read the same.)"""
        recorded = {i: StepRecord(st, v, None if r is None else json.loads(r)) for i, st, v, r in self.conn.execute(
            "SELECT artifact_id, status, version, report FROM plan_steps WHERE event_id = ?", (event_id,))}
        return {i: recorded.get(i, _PENDING) for i in self._step_keys(event_id)}

    def _step_keys(self, event_id: int) -> dict[str, tuple[int, str]]:
        """Each step of the event's order → (seq, mode) of its ``plan_steps`` row: its position in the
        order and its mode, from the barrier this store ran or else from the stored plan (read once)."""
        cached = self._plan_steps
        if cached is not None and cached[0] == event_id:
            if len(cached) == 2:
                return cached[1]
            order, modes = cached[1], cached[2]
        else:
            row = self.conn.execute("SELECT plan FROM events WHERE id = ?", (event_id,)).fetchone()
            if row is None:
                raise InputError(f"no event {event_id} in the store", file=self.path)
            fields = read_fields(row[0], ("order", "modes"))
            order, modes = fields["order"], fields["modes"]
        keys = {i: (k, modes[i]) for k, i in enumerate(order)}
        self._plan_steps = (event_id, keys)
        return keys

    def _record(self, event_id: int, ident: str, status: str, column: str, value: int | str) -> None:
        """Write one step's status and its ``version`` (staged) or ``report`` (an outcome), inside the
        caller's transaction: the row is inserted, or updated where one exists (the staged step's, or a
        pending row of an earlier release) — keyed by (event, seq), as the barrier once wrote it."""
        seq, mode = self._step_keys(event_id)[ident]
        self.conn.execute(
            f"INSERT INTO plan_steps(event_id, seq, artifact_id, mode, status, {column}) VALUES (?,?,?,?,?,?) "
            f"ON CONFLICT(event_id, seq) DO UPDATE SET status = excluded.status, {column} = excluded.{column}",
            (event_id, seq, ident, mode, status, value))

    @retrying
    def stage(self, event_id: int, ident: str, content: Any, meta: Mapping[str, Any],
              support: Sequence[Mapping[str, Any]] = (), forget: Sequence[Mapping[str, Any]] = ()) -> int:
        """Stage one successor z_i (a new version, not servable) in one transaction.

        ``support`` (id, version) are the inputs it was built from and ``forget`` the invalidated
        versions it must not retain; both go into the hash-chained audit row (the attestation's evidence).
        """
        with self.transaction():
            self._check_lease(event_id)
            version = self._insert_version(event_id, ident, content, meta)
            self.conn.execute("UPDATE artifacts SET state = 'staged' WHERE id = ?", (ident,))
            self._record(event_id, ident, "staged", "version", version)
            self._audit("stage", ident, event_id, {"version": version, "support": list(support),
                                                   "forget": list(forget)})
        return version

    @retrying
    def record_step(self, event_id: int, ident: str, status: str, report: Any) -> None:
        """Record validated / failed / blocked; a failed or blocked successor stays withdrawn."""
        with self.transaction():
            self._check_lease(event_id)
            self._record(event_id, ident, status, "report", _dump(report))
            if status != "validated":
                self.conn.execute("UPDATE artifacts SET state = 'withdrawn' WHERE id = ?", (ident,))
            self._audit(status, ident, event_id, {"report": report} if status != "validated" else {})

    @retrying
    def publish(self, event_id: int, republish: Sequence[str], erase: Sequence[str],
                plan_doc: Mapping[str, Any], scrub: Mapping[str, int | None] | None = None,
                tombstone: Sequence[str] = ()) -> list[Any]:
        """R_ρ: republish validated predecessor-closed successors and root updates, erase deleted
        roots, and close the event — in one transaction (Alg. 1 line 8).

        ``erase`` are deleted roots: every version is erased and the artifact's state becomes
        ``erased``. ``scrub`` maps further artifacts to the highest version to erase (None: every
        version) — the versions built from deleted content. ``tombstone`` lists the roots whose
        erased versions' content digests go into ``tombstones``. Each republish row chains the
        successor's content digest, each erase row the digests of the versions it erased.
        Returns the erased contents (for :meth:`erase_physically`'s scan; never stored).
        """
        targets: dict[str, int | None] = dict(scrub or {})
        targets.update({r: None for r in erase})
        with self.transaction() as c:
            self._check_lease(event_id)  # fencing: only the event's current writer publishes
            c.execute("DELETE FROM event_lease WHERE event_id = ?", (event_id,))
            for ident in republish:
                c.execute("UPDATE artifacts SET version = staged_version, staged_version = NULL, "
                          "state = 'republished' WHERE id = ? AND staged_version IS NOT NULL", (ident,))
                row = c.execute("SELECT v.version, v.content FROM artifacts a JOIN versions v ON v.id = a.id "
                                "AND v.version = a.version WHERE a.id = ?", (ident,)).fetchone()
                self._audit("republish", ident, event_id, {} if row is None else {
                    "version": int(row[0]), "sha256": content_digest(None if row[1] is None else json.loads(row[1]))})
            self.checkpoint()
            gone = self._erase_versions(event_id, targets, frozenset(tombstone) | frozenset(erase))
            for ident in erase:
                c.execute("UPDATE artifacts SET state = 'erased', staged_version = NULL WHERE id = ?", (ident,))
            c.execute("UPDATE artifacts SET state = 'withdrawn' WHERE state = 'staged'")
            c.execute("UPDATE artifacts SET staged_version = NULL WHERE state = 'withdrawn'")
            self._reindex(set(republish) | set(targets))  # successors' content in, erased content out
            final = stored_plan(plan_doc)
            c.execute("UPDATE events SET status = 'done', plan = ? WHERE id = ?", (final, event_id))
            self._audit("publish", event_id=event_id, detail={"republished": len(republish),
                                                               "plan_sha256": digest(final)})
        return gone

    def _erase_versions(self, event_id: int, targets: Mapping[str, int | None],
                        tombstone: frozenset[str]) -> list[Any]:
        """Null the content and metadata of the targeted versions (inside the caller's transaction),
        keeping id, version and the content's SHA-256; one chained ``erase`` row per artifact."""
        ids = sorted(targets)
        rows: list[tuple[str, int, str | None]] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            rows += self.conn.execute(
                f"SELECT id, version, content FROM versions WHERE erased = 0 AND id IN ({','.join('?' * len(chunk))}) "
                "ORDER BY id, version", chunk).fetchall()
        erased: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
        updates, stones, gone = [], [], []
        for ident, version, content in rows:
            limit = targets[ident]
            if limit is not None and version > limit:
                continue
            value = None if content is None else json.loads(content)
            sha = content_digest(value)
            if value is not None:
                gone.append(value)
            erased[ident].append({"version": int(version), "sha256": sha})
            updates.append((sha, ident, version))
            if ident in tombstone and content is not None:
                stones.append((sha, ident, event_id))
                stones += [(d, ident, event_id) for d in sorted(text_digests(value))]  # normalised (issue 25)
        self.conn.executemany("UPDATE versions SET content = NULL, meta = '{}', erased = 1, sha256 = ? "
                              "WHERE id = ? AND version = ?", updates)
        self.conn.executemany("INSERT OR IGNORE INTO tombstones(digest, root, event_id) VALUES (?,?,?)", stones)
        self._append_audit([(_now(), event_id, "erase", i, _dump({"versions": erased[i]})) for i in ids if erased[i]])
        return gone

    def erase_physically(self, event_id: int, needles: Sequence[bytes], scanned: bool = True) -> dict[str, Any]:
        """Make erased bytes unrecoverable from the files, then prove it (the erasure issue, item 2).

        WAL checkpoint (TRUNCATE), VACUUM, checkpoint (TRUNCATE) again — each waiting at most
        ``erase_wait`` seconds (SQLite's busy handler) for concurrent readers to let go of the WAL —
        then a scan of the database and WAL files for ``needles`` (:func:`memsteward.repair.erasure.
        fingerprints` of the erased content). The outcome is one chained ``physical-erasure``
        audit row (counts only). ``scanned=False`` records that the text was no longer available
        (``recover`` after a crash between publication and this step).
        """
        from .erasure import scan, store_files

        detail: dict[str, Any] = {"wait_seconds": self.erase_wait}
        if self.backend == "postgresql":
            detail.update(self._vacuum_postgres())
        elif self.path == ":memory:":
            detail.update(complete=True, file=False)
        else:
            self.conn.execute(f"PRAGMA busy_timeout = {int(self.erase_wait * 1000)}")
            try:
                first = self._checkpoint_truncate()
                try:
                    self.conn.execute("VACUUM")
                    vacuumed = True
                except sqlite3.OperationalError:
                    vacuumed = False
                last = self._checkpoint_truncate()
            finally:
                self.conn.execute("PRAGMA busy_timeout = 30000")
            result = scan(store_files(self.path), needles) if scanned else None
            detail.update(checkpoint=first and last, vacuum=vacuumed, scan=result,
                          complete=first and last and vacuumed and (result is None or not result["found"]))
        with self.transaction():
            self._audit("physical-erasure", event_id=event_id, detail=detail)
        if self.backend == "sqlite" and self.path != ":memory:":
            self.conn.execute("PRAGMA busy_timeout = 0")
            self._checkpoint_truncate()  # best effort: the row just written holds digests and counts only
            self.conn.execute("PRAGMA busy_timeout = 30000")
        return detail

    def _vacuum_postgres(self) -> dict[str, Any]:
        """PostgreSQL's physical step: ``VACUUM FULL`` rewrites ``versions``, ``tombstones`` and the
        lineage index ``shingles`` (hashes of the erased text's trigrams) into new files without the
        dead tuples that held the erased text, waiting at most
        ``erase_wait`` seconds for its lock. The server's WAL segments and base backups are not
        readable from a client, so they are not scanned (``scan`` is None, ``server_files`` says so)."""
        raw = self.conn.raw
        try:
            raw.execute(f"SET lock_timeout = {int(self.erase_wait * 1000)}")
            raw.execute("VACUUM FULL versions")
            raw.execute("VACUUM FULL tombstones")
            raw.execute("VACUUM FULL shingles")
            vacuumed = True
        except db_errors():
            vacuumed = False
        finally:
            raw.execute("SET lock_timeout = 0")
        return {"backend": "postgresql", "vacuum": vacuumed, "checkpoint": vacuumed, "scan": None,
                "server_files": "not scanned (WAL segments and backups live on the server)", "complete": vacuumed}

    def _checkpoint_truncate(self) -> bool:
        busy, log, done = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return busy == 0 and log in (0, -1) and done in (0, -1)

    def pending_physical_erasure(self) -> list[int]:
        """Events that erased versions but have no ``physical-erasure`` row (interrupted in between)."""
        return [int(r[0]) for r in self.conn.execute(
            "SELECT DISTINCT e.event_id FROM audit e WHERE e.action = 'erase' AND NOT EXISTS "
            "(SELECT 1 FROM audit p WHERE p.action = 'physical-erasure' AND p.event_id = e.event_id) ORDER BY 1")]

    def copy_in_memory(self) -> Store:
        """An in-memory copy (used by ``--dry-run``: the real store is never touched)."""
        mem = Store()
        mem.conn.executescript("DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;")
        if self.backend == "sqlite":
            self.conn.backup(mem.conn)  # the fast path: SQLite's page copy
        else:
            self.copy_into(mem)
        return mem

    TABLES = ("artifacts", "versions", "edges", "events", "plan_steps", "audit", "audit_head", "tombstones",
              "shingles")

    def row_counts(self, tables: Sequence[str] | None = None) -> dict[str, int]:
        """The number of rows of each of ``tables`` (default: every table :meth:`copy_into` copies)."""
        names = self.TABLES if tables is None else tables
        unknown = set(names) - set(self.TABLES)
        if unknown:
            raise ValueError(f"not a store table: {sorted(unknown)}")
        return {t: self.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in names}

    def copy_into(self, dst: Store, batch: int = 2000,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Copy every row of every table into the empty store ``dst`` (any backend) in one of its
        transactions, keeping ids, versions, audit sequence numbers and hashes; returns row counts.
        The caller verifies the audit chain on both sides (``memsteward store copy``).
        ``progress(done, total)`` is called after each batch (rows of every table)."""
        if dst.conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0] or \
                dst.conn.execute("SELECT COUNT(*) FROM artifacts").fetchone()[0]:
            raise InputError("the destination store is not empty", file=dst.path)
        counts: dict[str, int] = {}
        with self.read_snapshot(), dst.transaction() as c:  # every table from one state of the source
            total = sum(self.row_counts().values()) if progress is not None else 0
            for table in self.TABLES:
                counts[table] = 0
                rows = self._stream(f"SELECT * FROM {table}")  # read as written: memory stays flat
                while part := [tuple(r) for r in islice(rows, batch)]:
                    c.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(part[0]))})", part)
                    counts[table] += len(part)
                    if dst.backend == "postgresql":
                        c.flush()  # the pipelined writes go out per batch, not all at COMMIT
                    if progress is not None:
                        progress(sum(counts.values()), total)
            if dst.backend == "postgresql":  # the identity continues after the copied event ids
                c.execute("SELECT setval(pg_get_serial_sequence('events', 'id'), "
                          "(SELECT COALESCE(MAX(id), 0) + 1 FROM events), false)")
        return counts
