"""Erasure: deleted content nulled in every version at publication, then made unrecoverable from files.

At publication the targeted versions lose content and metadata (id, version and the content's
SHA-256 stay; a ``tombstones`` row keeps a deleted root's digest, never its text). The physical
step then rewrites the files: SQLite checkpoints the WAL, VACUUMs and scans the files for the
erased text's fingerprints; PostgreSQL runs ``VACUUM FULL`` on the tables that held it. Its outcome
is one chained ``physical-erasure`` audit row (counts only).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import EventHeld
from ..repair.auditchain import tombstone_commitment as commitment
from ..repair.writes import content_digest
from ..textnorm import text_digests
from .api import ErasureReport
from .connection import db_errors
from .core import _dump, _now
from .leases import Leases, _alive

__all__ = ["Erasure"]


class Erasure(Leases):
    """Nulling erased versions and the physical-erasure step."""

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
        pinned = self._tombstone_commitments(event_id, sorted({s[1] for s in stones}))
        self._append_audit([(_now(), event_id, "erase", i, _dump({"versions": erased[i], **pinned.get(i, {})}))
                            for i in ids if erased[i]])
        return gone

    def _tombstone_commitments(self, event_id: int, roots: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Each root's ``{"tombstones": commitment}`` over the rows this event wrote for it (a digest an
        earlier event already holds stays that event's): the ``erase`` row chains it."""
        if not roots:
            return {}
        held: dict[str, list[str]] = {r: [] for r in roots}
        for d, r in self.conn.execute("SELECT digest, root FROM tombstones WHERE event_id = ? AND root IN "
                                      "(SELECT value FROM json_each(?))", (event_id, json.dumps(list(roots)))):
            held[r].append(d)
        return {r: {"tombstones": commitment(ds)} for r, ds in held.items()}

    def erasure_state(self) -> tuple[dict[tuple[str, int], str | None], dict[tuple[str, int], list[str]]]:
        """What ``audit --check`` compares with the chained ``erase`` rows: (id, version) → content
        SHA-256 of every erased version, and (root, event id) → the tombstone digests it holds."""
        versions = {(i, int(v)): sha for i, v, sha in self._stream(
            "SELECT id, version, sha256 FROM versions WHERE erased = 1")}
        stones: dict[tuple[str, int], list[str]] = {}
        for d, r, e in self._stream("SELECT digest, root, event_id FROM tombstones"):
            stones.setdefault((r, int(e)), []).append(d)
        return versions, stones

    def erase_physically(self, event_id: int, needles: Sequence[bytes], scanned: bool = True) -> ErasureReport:
        """Make erased bytes unrecoverable from the files, then prove it (the erasure issue, item 2).

        WAL checkpoint (TRUNCATE), VACUUM, checkpoint (TRUNCATE) again — each waiting at most
        ``erase_wait`` seconds (SQLite's busy handler) for concurrent readers to let go of the WAL —
        then a scan of the database and WAL files for ``needles`` (:func:`memsteward.repair.erasure.
        fingerprints` of the erased content). The outcome is one chained ``physical-erasure``
        audit row (counts only). ``scanned=False`` records that the text was no longer available
        (``recover`` after a crash between publication and this step).
        """
        from ..repair.erasure import scan, store_files

        if not self._take_physical(event_id):
            return self._physical_row(event_id) or {}
        detail: ErasureReport = {"wait_seconds": self.erase_wait}
        if self.backend == "postgresql":
            detail.update(self._vacuum_postgres())
        elif self.path == ":memory:":
            detail.update({"complete": True, "file": False})
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
            detail.update({"checkpoint": first and last, "vacuum": vacuumed, "scan": result,
                           "complete": first and last and vacuumed and (result is None or not result["found"])})
        with self.transaction() as c:
            self._check_lease(event_id)  # fencing: a process that took the step over writes its row alone
            if self._physical_row(event_id) is not None:
                return self._physical_row(event_id) or detail
            self._audit("physical-erasure", event_id=event_id, detail=detail)
            c.execute("DELETE FROM event_lease WHERE event_id = ?", (event_id,))
        if self.backend == "sqlite" and self.path != ":memory:":
            self.conn.execute("PRAGMA busy_timeout = 0")
            self._checkpoint_truncate()  # best effort: the row just written holds digests and counts only
            self.conn.execute("PRAGMA busy_timeout = 30000")
        return detail

    def _take_physical(self, event_id: int) -> bool:
        """Hold the event's lease for its physical step (issue 25): publication kept it for the
        publisher; ``recover`` takes it over only from a dead holder (a live one raises
        :class:`~memsteward.errors.EventHeld`: it scans and writes the row itself). False: the step's
        row is written already — the step runs exactly once."""
        with self.transaction():
            if self._physical_row(event_id) is not None:
                return False
            row = self.conn.execute("SELECT owner, host, pid, started, acquired, session FROM event_lease "
                                    "WHERE event_id = ?", (event_id,)).fetchone()
            if row is not None and row[0] != self.owner and _alive(row[0], row[1], int(row[2]), row[3], row[5],
                                                                   self.conn):
                raise EventHeld(f"the physical erasure of event {event_id} is being done by process {row[2]} on "
                                f"{row[1]} (since {row[4]})", {"event": event_id, "host": row[1], "pid": int(row[2]),
                                                                "since": row[4]}, file=self.path)
            self._lease(event_id)
        return True

    def _physical_row(self, event_id: int) -> ErasureReport | None:
        row = self.conn.execute("SELECT detail FROM audit WHERE action = 'physical-erasure' AND event_id = ? "
                                "ORDER BY seq LIMIT 1", (event_id,)).fetchone()
        return None if row is None else json.loads(row[0])

    def _vacuum_postgres(self) -> ErasureReport:
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
