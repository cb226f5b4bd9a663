"""Moving a whole store: import a snapshot, export (whole or streamed), copy into another store.

Exports and copies read inside one read snapshot, so every table comes from one state of the
source; a copy keeps ids, versions, audit sequence numbers and hashes (``memsteward store copy``
verifies the chain on both sides).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InputError, WriteRefused
from ..repair.artifacts import Edge, Snapshot
from ..repair.writes import canonical_json
from ..shred.keystores import open_keys
from ..shred.overlay import OverlayKeyStore
from ..shred.vault import Vault
from ..textnorm import said_text_digests
from .connection import retrying
from .core import _dump, refs_unkeyed
from .erasure import Erasure
from .hooks import LogHooks
from .queries import ARTIFACT_COLUMNS, VERSION_COLUMNS
from .queries import TABLES as COPIED_TABLES
from .sealing import batches
from .tombstoned import first_tombstoned, refusal

if TYPE_CHECKING:
    from .memory_log import MemoryStore
    from .sqlstore import SqlStore

__all__ = ["FILLED", "Transfer"]

FILLED = ("artifacts", "versions", "edges", "shingles")  # the tables an import or a batch of records grows


class Transfer(Erasure, LogHooks):
    """Import, export, snapshot, copy and counts."""

    @retrying
    def import_snapshot(self, snap: Snapshot, file: str = "<input>") -> None:
        """Add artifacts and edges in one transaction; clashing ids or dangling edges are errors.

        Only the ids the snapshot names are looked up, so importing a store in batches costs what
        each batch holds (an edge may name an artifact of an earlier batch)."""
        named = set(snap.artifacts).union(*((e.src, e.dst) for e in snap.edges))
        existing = {r[0] for r in self.conn.execute(self.q.artifacts_named, (json.dumps(sorted(named)),))}
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
        self.driver.refresh_statistics(FILLED, len(snap.artifacts))

    def _insert_snapshot(self, c: Any, snap: Snapshot, file: str) -> None:
        self.driver.bulk_insert("artifacts", ARTIFACT_COLUMNS,
                                [(a.id, a.kind, a.arch, a.version, a.state) for a in snap.artifacts.values()])
        live = [a for a in snap.artifacts.values() if a.state != "erased"]
        sealed = self.vault.seal([(a.id, a.version, _dump(a.content), _dump(dict(a.meta))) for a in live])
        self.driver.bulk_insert("versions", VERSION_COLUMNS, [
            *((i, v, ct, m, 0, self.digest_of(a.content)) for (i, v, ct, m), a in zip(sealed, live, strict=True)),
            *((a.id, a.version, None, "{}", 1, None) for a in snap.artifacts.values() if a.state == "erased")])
        c.executemany(self.q.insert_edges, [(e.src, e.dst, e.type) for e in snap.edges])
        self._index({a.id: [[a.content, dict(a.meta)]] for a in snap.artifacts.values() if a.state != "erased"},
                    fresh=snap.artifacts.keys())  # ids new to the store (the import refuses a clash)
        self._audit("import", detail={"file": file, "artifacts": len(snap.artifacts),
                                      "edges": len(snap.edges)})

    def _import_refusal(self, snap: Snapshot, file: str) -> WriteRefused | None:
        """Inside the import's transaction: refused while an event is unfinished (like ``put``), or
        when an artifact says erased text again (audited, like a tombstoned ``put``)."""
        if self.unfinished_event() is not None:
            raise WriteRefused("the store has an unfinished event; imports wait until it is published "
                               "(run `memsteward recover`)", "unfinished-event", self.path)
        hit = first_tombstoned(((a.id, a.content, a.meta) for a in snap.artifacts.values() if a.state != "erased"),
                               self.tombstones_of, self.said_digests) if self.has_tombstones() else None
        if hit is None:
            return None
        self._audit("refuse", hit[0], detail={"reason": "tombstone", "sha256": hit[1], "file": file})
        return refusal(hit[0], hit[2], file, "import")

    def has_tombstones(self) -> bool:
        """Whether any content was tombstoned (a fresh store's imports skip the digests)."""
        return self.conn.execute(self.q.has_tombstones).fetchone() is not None

    def tombstones_of(self, digests: Collection[str]) -> dict[str, str]:
        """The tombstoned ones among ``digests``: digest → the erased root it is of."""
        return dict(self.conn.execute(self.q.tombstones_of, (json.dumps(sorted(digests)),)).fetchall())

    def said_digests(self, content: Any, meta: Any) -> set[str]:
        """Every digest a tombstone of this store may hold of ``content`` and ``meta``: of the exact content
        and of the normalised text (issue 25), keyed (a sealed store's, HMAC under its index key) and plain
        (tombstones written before it was sealed). Non-JSON content raises InputError."""
        try:
            text = canonical_json(content)
        except (TypeError, ValueError) as exc:
            raise InputError(f"content is not JSON: {exc}", file=self.path, field="content") from None
        return self._said(hashlib.sha256(text.encode("utf-8")).hexdigest(), self._digest_text(text), content, meta)

    def _said(self, plain: str, keyed: str, content: Any, meta: Any) -> set[str]:
        """:meth:`said_digests` with the exact content's digests already taken (the write path has them)."""
        return {plain, keyed} | self._tomb_digests(said_text_digests(content, meta or {}))

    def tombstone_of(self, content: Any, meta: Mapping[str, Any] | None = None) -> str | None:
        """The tombstone a write of ``content`` (with ``meta``) would hit: the digest, as this store keeps
        it (keyed in a sealed store), of the first form of it that an erased root's tombstone holds, else
        None — the test every way in applies (:mod:`.tombstoned`), so a caller (the LangGraph adapter's
        ``reingest: review``) never computes a digest itself.

        Examples
        --------
        >>> from memsteward.store import open_store
        >>> open_store().tombstone_of("Alice lives in Paris") is None
        True
        """
        hit = first_tombstoned([("", content, meta or {})], self.tombstones_of, self.said_digests)
        return None if hit is None else hit[1]

    def export(self) -> dict[str, Any]:
        """The JSON exchange document of the current versions (round-trips through import)."""
        with self.read_snapshot():
            return {key: list(rows) for key, rows in self.export_stream().items()}

    def _edges(self) -> Iterator[tuple[str, str, str]]:
        """Every edge (src, dst, type) in key order, as the rows come."""
        return self._stream(self.q.edges_all)

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
            out[table] = sorted(map(tuple, self.conn.execute(self.q.select_all[table])), key=repr)
        # versions as their plaintext (ciphertext differs run to run: fresh DEKs and nonces) and whether
        # a digest is kept (a keyed digest differs store to store: its own index key)
        opened = self.vault.open([(r[0], int(r[1]), r[2], r[3]) for r in out["versions"]])
        out["versions"] = [(*r[:2], c, m, *r[4:6], r[6] is not None)
                           for r, (c, m) in zip(out["versions"], opened, strict=True)]
        # events with their references' digests blanked (keyed under each store's own index key)
        out["events"] = [(*r[:2], refs_unkeyed(r[2]), r[3], refs_unkeyed(r[4]), *r[5:]) for r in out["events"]]
        out["audit"] = [tuple(r) for r in self.conn.execute(self.q.dump_audit)]
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
        if not self.driver.backup_into(mem.driver):  # the fast path: SQLite's page copy
            self.copy_into(mem, reseal=False)
            mem.driver.write(mem.q.set_store_keys, (self.vault.store_id, int(self.sealed)))
        mem.vault.close()  # the copy reads this store's keys and destroys none of them (OverlayKeyStore)
        if self.driver.in_memory:
            mem.vault = Vault(OverlayKeyStore(self.vault.keys))
        else:  # its own handle on the key store: the copy outlives this store's closing
            mem.vault = Vault(OverlayKeyStore(open_keys(self.url, self._schema(), self.vault.store_id, create=False),
                                              owns=True))
        mem.sealed = self.sealed
        mem._store_id, mem.tenant = self._store_id, self.tenant  # the copy's seals verify as this store's
        return mem

    def _resealed(self, dst: SqlStore, part: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """``versions`` rows (id, version, content, meta, …) opened here and sealed under ``dst``'s vault;
        an erased row (no content) is copied as it is (its ``dek`` names a key of this store's, destroyed)."""
        live = [r for r in part if r[2] is not None]
        opened = self.vault.open([(r[0], int(r[1]), r[2], r[3]) for r in live])
        sealed = iter(dst.vault.seal([(r[0], int(r[1]), c, m) for r, (c, m) in zip(live, opened, strict=True)]))
        return [(*next(sealed), *r[4:7], None) if r[2] is not None else r for r in part]  # its own key: no dek

    TABLES = COPIED_TABLES  # the tables copy_into copies, in order (memsteward.store.queries)

    def row_counts(self, tables: Sequence[str] | None = None) -> dict[str, int]:
        """The number of rows of each of ``tables`` (default: every table :meth:`copy_into` copies)."""
        names = self.TABLES if tables is None else tables
        unknown = set(names) - set(self.TABLES)
        if unknown:
            raise ValueError(f"not a store table: {sorted(unknown)}")
        return {t: self.conn.execute(self.q.count_rows[t]).fetchone()[0] for t in names}

    def copy_into(self, dst: SqlStore, batch: int = 2000,
                  progress: Callable[[int, int], None] | None = None, reseal: bool = True) -> dict[str, int]:
        """Copy every row of every table into the empty store ``dst`` (any backend) in one of its
        transactions, keeping ids, versions, audit sequence numbers and hashes; returns row counts.
        The caller verifies the audit chain on both sides (``memsteward store copy``).
        ``progress(done, total)`` is called after each batch (rows of every table).
        Sealed versions are opened here and sealed again under ``dst``'s own DEKs and store id; ``dst``
        takes this store's index key first, so every keyed digest (tombstones, lineage index, erase
        rows) means the same there. ``reseal=False`` copies the ciphertext as it is (a dry run's copy,
        which reads this store's key store)."""
        if dst.conn.execute(dst.q.count_rows["audit"]).fetchone()[0] or \
                dst.conn.execute(dst.q.count_rows["artifacts"]).fetchone()[0]:
            raise InputError("the destination store is not empty", file=dst.path)
        if reseal:
            dst.vault.keys.adopt_index_key(self.vault.keys.index_key())  # type: ignore[attr-defined]
            dst.vault = Vault(dst.vault.keys)
            dst.sealed = self.sealed
            dst.driver.write(dst.q.set_sealed, (int(self.sealed),))
        counts: dict[str, int] = {}
        with self.read_snapshot(), dst.transaction() as c:  # every table from one state of the source
            total = sum(self.row_counts().values()) if progress is not None else 0
            for table in self.TABLES:
                counts[table] = 0
                rows = self._stream(self.q.select_all[table])  # read as written: memory stays flat
                for raw in batches(rows, batch, (2, 3) if table == "versions" else ()):  # ≤ 1 MB of text
                    part = [tuple(r) for r in raw]
                    if table == "versions" and reseal:
                        part = self._resealed(dst, part)
                    c.executemany(dst.q.insert_row[table], part)
                    counts[table] += len(part)
                    dst.driver.flush()  # pipelined writes (PostgreSQL) go out per batch, not all at COMMIT
                    if progress is not None:
                        progress(sum(counts.values()), total)
            if reseal:
                dst._reseal_copied_head(self.audit_binding())
            if dst.q.restart_event_ids is not None:  # the identity continues after the copied event ids
                c.execute(dst.q.restart_event_ids)
        return counts
