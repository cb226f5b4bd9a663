"""Moving a whole store: import a snapshot, export (whole or streamed), copy into another store.

Exports and copies read inside one read snapshot, so every table comes from one state of the
source; a copy keeps ids, versions, audit sequence numbers and hashes (``memsteward store copy``
verifies the chain on both sides).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..errors import InputError, WriteRefused
from ..repair.artifacts import Edge, Snapshot
from .connection import retrying
from .core import _dump
from .erasure import Erasure
from .tombstoned import first_tombstoned, refusal

if TYPE_CHECKING:
    from .memory_log import MemoryStore
    from .sqlstore import SqlStore

__all__ = ["Transfer"]


class Transfer(Erasure):
    """Import, export, snapshot, copy and counts."""

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
            refused = self._import_refusal(snap, file)
            if refused is None:
                self._insert_snapshot(c, snap, file)
        if refused is not None:
            raise refused  # after its audit row committed

    def _insert_snapshot(self, c: Any, snap: Snapshot, file: str) -> None:
        c.executemany("INSERT INTO artifacts(id, kind, arch, version, state) VALUES (?,?,?,?,?)",
                      [(a.id, a.kind, a.arch, a.version, a.state) for a in snap.artifacts.values()])
        c.executemany("INSERT INTO versions(id, version, content, meta, erased) VALUES (?,?,?,?,?)",
                      [(a.id, a.version, _dump(a.content) if a.state != "erased" else None,
                        _dump(dict(a.meta)), int(a.state == "erased")) for a in snap.artifacts.values()])
        c.executemany("INSERT OR IGNORE INTO edges(src, dst, type) VALUES (?,?,?)",
                      [(e.src, e.dst, e.type) for e in snap.edges])
        self._index({a.id: [[a.content, dict(a.meta)]] for a in snap.artifacts.values() if a.state != "erased"})
        self._audit("import", detail={"file": file, "artifacts": len(snap.artifacts),
                                      "edges": len(snap.edges)})

    def _import_refusal(self, snap: Snapshot, file: str) -> WriteRefused | None:
        """Inside the import's transaction: refused while an event is unfinished (like ``put``), or
        when an artifact says erased text again (audited, like a tombstoned ``put``)."""
        if self.unfinished_event() is not None:
            raise WriteRefused("the store has an unfinished event; imports wait until it is published "
                               "(run `memsteward recover`)", "unfinished-event", self.path)
        hit = first_tombstoned(((a.id, a.content, a.meta) for a in snap.artifacts.values() if a.state != "erased"),
                               self.tombstones_of) if self.has_tombstones() else None
        if hit is None:
            return None
        self._audit("refuse", hit[0], detail={"reason": "tombstone", "sha256": hit[1], "file": file})
        return refusal(hit[0], hit[2], file, "import")

    def unfinished_event(self) -> Any:
        """Provided by :class:`~memsteward.store.repairlog.Transitions`."""
        raise NotImplementedError

    def has_tombstones(self) -> bool:
        """Whether any content was tombstoned (a fresh store's imports skip the digests)."""
        return self.conn.execute("SELECT 1 FROM tombstones LIMIT 1").fetchone() is not None

    def tombstones_of(self, digests: Collection[str]) -> dict[str, str]:
        """The tombstoned ones among ``digests``: digest → the erased root it is of."""
        return dict(self.conn.execute("SELECT digest, root FROM tombstones WHERE digest IN "
                                      "(SELECT value FROM json_each(?))", (json.dumps(sorted(digests)),)).fetchall())

    def export(self) -> dict[str, Any]:
        """The JSON exchange document of the current versions (round-trips through import)."""
        with self.read_snapshot():
            return {key: list(rows) for key, rows in self.export_stream().items()}

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

    def snapshot(self) -> Snapshot:
        """The whole store in memory, artifacts and edges from one state of it (:meth:`read_snapshot`)."""
        with self.read_snapshot():
            arts = {a.id: a for a in self._iter_rows()}
            return Snapshot(arts, tuple(Edge(s, d, t) for s, d, t in self._edges()))

    def dump_state(self) -> dict[str, Any]:
        """Every table except the audit timestamps (for before/after comparisons in tests)."""
        out = {}
        for table in ("artifacts", "versions", "edges", "events", "plan_steps"):
            out[table] = sorted(map(tuple, self.conn.execute(f"SELECT * FROM {table}")), key=repr)
        out["audit"] = [tuple(r) for r in self.conn.execute("SELECT seq, event_id, action, artifact_id FROM audit")]
        return out

    def copy_scope(self, cascade: Collection[str]) -> MemoryStore:
        """A :class:`~memsteward.store.memory_log.MemoryStore` holding only what executing an event over
        ``cascade`` reads: C(F), the influence parents of its members, their artifacts at their current
        versions and the influence edges into C(F) (:func:`~memsteward.repair.scope.neighbourhood`).
        The dry run's copy: its cost grows with the cascade, not with the store (a whole-store copy
        grew with the store)."""
        from ..repair.scope import neighbourhood
        from .memory_log import MemoryStore

        mem = MemoryStore()
        mem.import_snapshot(neighbourhood(self, cascade), file=self.path)
        return mem

    def copy_in_memory(self) -> SqlStore:
        """An in-memory copy (used by ``--dry-run``: the real store is never touched)."""
        from .sqlstore import SqlStore

        mem = SqlStore()
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

    def copy_into(self, dst: SqlStore, batch: int = 2000,
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
