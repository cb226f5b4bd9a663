"""The write path: the agent's writes with their provenance, fenced (:class:`~memsteward.store.api.WritePath`).

A write appends a version in one transaction; it is refused (:class:`~memsteward.errors.WriteRefused`)
when an input is under repair or erased, or when its content is a tombstoned (erased) content.
Fenced and tombstoned refusals commit one ``refuse`` audit row. While an event runs, writes go on
under the write rule of :mod:`.live`: a write that has to wait for the event's publication is
refused as ``busy`` and retried (bounded) by :meth:`Writes.record_many`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from ..errors import InputError, WriteRefused
from ..repair.artifacts import SERVABLE_STATES, Artifact
from ..repair.reingest import verdict as reingest_verdict
from ..repair.writes import Write, canonical_json, prepare
from ..shred.envelope import key_tag
from ..shred.vault import Row
from .audit import tail_of
from .connection import retrying
from .live import LiveEvent, check_write_options, ordered_after, pending_tombstones, retry_busy, tombstone_hit
from .planstore import read_fields
from .queries import ARTIFACT_COLUMNS, WRITTEN_VERSION_COLUMNS
from .repairlog import Transitions
from .transfer import FILLED

__all__ = ["Writes", "tombstone_hit"]


class Writes(Transitions):
    """Recording artifacts (single writes and batches)."""

    # the running event's barrier ids and pending tombstones, read once per event: (event id, held, dead)
    _live_cache: tuple[int, frozenset[str] | None, dict[str, str] | None] | None = None

    def record(self, artifact: Artifact | Mapping[str, Any], inputs: Sequence[str] = (),
               semantic: Sequence[str] = (), *, reingest: str = "refuse", wait: float | None = None,
               before_commit: Callable[[], None] | None = None) -> Artifact:
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
            tombstoned refusals append a ``refuse`` audit row; nothing else changes. While an
            event runs, a write of an id it holds, or of content it is erasing, is ordered after
            its publication (:mod:`.live`): retried for up to ``wait`` seconds (None:
            ``MEMSTEWARD_WRITE_WAIT``, default 30), then refused with ``reason == "busy"``.

        ``before_commit`` is called inside the transaction once every check passed and the rows are
        written, just before COMMIT (never for a refused write; again if the transaction is
        retried): an adapter starts its own durable write there, so the two commits overlap.

        Examples
        --------
        >>> from memsteward.store import open_store
        >>> s = open_store()
        >>> s.record({"id": "n1", "kind": "record", "content": "Alice likes tea"}).version
        1
        >>> s.record({"id": "sum", "kind": "summary", "content": "likes tea"}, inputs=["n1"]).version
        1
        >>> s.record({"id": "n1", "kind": "record", "content": "Alice likes coffee"}).version
        2
        """
        check_write_options(reingest, wait, self.path)
        return self.record_many([prepare(artifact, inputs, semantic, file=self.path)], reingest=reingest,
                                wait=wait, before_commit=before_commit)[0]

    def record_many(self, writes: Sequence[Write | Mapping[str, Any]], *, reingest: str = "refuse",
                    wait: float | None = None, before_commit: Callable[[], None] | None = None) -> list[Artifact]:
        """Record a batch of writes in ONE transaction: all of them, or (on any refusal) none.

        Each item is a :class:`~memsteward.repair.writes.Write` or a ``store put`` object
        (artifact fields plus ``inputs``/``semantic``). A write may name artifacts recorded earlier
        in the same batch. Fencing and errors are as in :meth:`record`.
        """
        from ..repair.writes import parse_put

        check_write_options(reingest, wait, self.path)
        batch = [w if isinstance(w, Write) else parse_put(w, self.path, f"writes[{k}].")
                 for k, w in enumerate(writes)]
        out = retry_busy(lambda: self._record_once(batch, reingest, before_commit), wait)
        self.driver.refresh_statistics(FILLED, len(batch))
        return out

    @retrying
    def _record_once(self, batch: Sequence[Write], reingest: str,
                     before_commit: Callable[[], None] | None = None) -> list[Artifact]:
        """One attempt of :meth:`record_many`: one transaction, the write's only durable commit. The
        batch is sealed before it under pooled keys (:meth:`_seal_ahead`), durable before its COMMIT (a
        refill's key commit overlaps the transaction's checks and is waited for before the COMMIT); the
        row of each version names its key (``versions.dek``), committed with it. A crash before the
        COMMIT leaves only reserved keys that sealed nothing stored, which protect nothing."""
        refused: WriteRefused | None = None
        out: list[Artifact] = []
        ahead, keys_durable = self._seal_ahead(batch)
        with self.transaction():
            try:
                out = self._apply_writes(batch, reingest, ahead)
            except WriteRefused as exc:
                if exc.reason not in ("fenced", "tombstone"):
                    raise
                refused = exc  # committed below: the refusal's audit row, nothing else
            finally:
                self._tail_hint = None
            if refused is None:
                # the keys the rows name are durable before the commit that names them (a refused write's
                # audit row names none)
                keys_durable()
                if before_commit is not None:
                    before_commit()
        if refused is not None:
            raise refused
        return out

    def _seal_ahead(self, batch: Sequence[Write]) -> tuple[dict[tuple[str, int], tuple[Row, Row]], Callable[[], None]]:
        """(id, version) → (plain row, sealed row) of the batch's versions, sealed before its
        transaction at the versions they will get unless another writer records one of its ids first,
        under pooled keys (:meth:`memsteward.shred.vault.Vault.seal_pooled`): a refill of the pool, a
        durable write of the key store's own, is then not made while the store's write lock is held.
        :meth:`_apply_writes` seals again any version that turned out otherwise; the keys of a refused
        write seal nothing that is stored. A refill's durable commit runs meanwhile
        (:meth:`memsteward.shred.vault.Vault.seal_pooled_deferred`): with the wait returned, which
        :meth:`_record_once` calls before its COMMIT."""
        top = dict(self.conn.execute(self.q.max_versions, (json.dumps(sorted({w.artifact.id for w in batch})),)).fetchall())
        rows = []
        for w in batch:
            top[w.artifact.id] = version = int(top.get(w.artifact.id) or 0) + 1
            rows.append((w.artifact.id, version, w.content_text, w.meta_text))
        sealed, durable = self.vault.seal_pooled_deferred(rows)
        return {(r[0], r[1]): (r, s) for r, s in zip(rows, sealed, strict=True)}, durable

    def _sealed(self, rows: Sequence[Row], ahead: Mapping[tuple[str, int], tuple[Row, Row]]) -> list[Row]:
        """``rows`` sealed: as :meth:`_seal_ahead` sealed them where it saw the same row, the rest now."""
        late = [r for r in rows if ahead.get((r[0], r[1]), (None,))[0] != r]
        now = dict(zip(late, self.vault.seal(late), strict=True))
        return [now[r] if r in now else ahead[(r[0], r[1])][1] for r in rows]

    def _live_parts(self, live: LiveEvent) -> tuple[int, frozenset[str] | None, dict[str, str] | None]:
        cached = self._live_cache
        if cached is None or cached[0] != live.id:
            cached = self._live_cache = (live.id, None, None)
        return cached

    def _held(self, live: LiveEvent) -> frozenset[str]:
        """The ids ``live``'s barrier withdrew (read from its stored plan once)."""
        _, held, dead = self._live_parts(live)
        if held is None:
            (plan,) = self.conn.execute(self.q.event_plan, (live.id,)).fetchone()
            held = frozenset(read_fields(plan, ("barrier",)).get("barrier", ()))
            self._live_cache = (live.id, held, dead)
        return held

    def _pending_dead(self, live: LiveEvent) -> dict[str, str]:
        """digest → root of the tombstones ``live``'s publication writes (its roots' versions from
        before the event: a correction's staged replacement is kept)."""
        _, held, dead = self._live_parts(live)
        if dead is None:
            rows = self.conn.execute(self.q.pending_dead_versions, (json.dumps(sorted(live.roots)), live.id)).fetchall()
            # opened (sealed at rest); a version whose key is gone (a publication killed after it destroyed the
            # keys, under the write lock, and before its commit) opens as None: unreadable, the write waits for the
            # publication. Plain digests: a write's own digests (``_said``) hold the plain forms too
            opened = [c for c, _ in self.vault.open([(r, int(v), c, "{}") for r, v, c in rows], shredded_as_erased=True)]
            dead = pending_tombstones(((r, None if c is None else json.loads(c)) for (r, _, _), c in zip(rows, opened)),
                                      {r for (r, _, sealed), c in zip(rows, opened) if sealed is not None and c is None})
            self._live_cache = (live.id, held, dead)
        return dead

    def _apply_writes(self, batch: Sequence[Write], reingest: str = "refuse",
                      ahead: Mapping[tuple[str, int], tuple[Row, Row]] | None = None) -> list[Artifact]:
        named = sorted({w.artifact.id for w in batch} | {i for w in batch for i in (*w.inputs, *w.semantic)})
        keyed = {w.digest: self._digest_text(w.content_text) for w in batch}  # a sealed store's tombstones are keyed
        said = [self._said(w.digest, keyed[w.digest], w.artifact.content, w.artifact.meta) for w in batch]
        # every read the checks need, in one go (PostgreSQL: one round trip with BEGIN and the write lock):
        # the unfinished event, the named ids, the batch's versions, its tombstones and the audit chain's tail
        # (the write lock is held: the tail stays the tail until this transaction appends to it)
        live_row, known_rows, top_rows, dead_rows, tail = self.driver.reads([
            (self.q.live_event, ()), (self.q.known_artifacts, (json.dumps(named),)),
            (self.q.max_versions, (json.dumps([w.artifact.id for w in batch]),)),
            (self.q.tombstones_of, (json.dumps(sorted(set().union(*said))),)), (self.q.audit_tail, ())])
        live = LiveEvent.of(int(live_row[0][0]), live_row[0][1]) if live_row else None
        known = {i: (k, a, st) for i, k, a, st in known_rows}
        top = dict(top_rows)
        dead = dict(dead_rows)
        self._tail_hint = tail_of(tail)
        before = frozenset(known)  # ids the store holds: every other id of the batch is new to it
        versions, edges, arts, out, digests = [], [], [], [], []
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
            if live is not None:
                waits = ordered_after(live, a.id, None if prev is None else prev[2], said[k], not w.inputs, reingest,
                                      partial(self._held, live), partial(self._pending_dead, live), self.path, where)
                if waits is not None:
                    raise waits
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
            digests.append(keyed[w.digest])
            arts.append((a.id, a.kind, a.arch, version))
            edges += [(i, a.id, "influence") for i in w.inputs] + [(i, a.id, "semantic") for i in w.semantic]
            manifest.update(canonical_json([a.id, version, keyed[w.digest], w.inputs]).encode("utf-8") + b"\n")
            out.append(Artifact(a.id, a.kind, a.arch, version, a.content, dict(a.meta), "servable"))
        c = self.conn
        # the pooled key a version was sealed under (named in its sealed meta) recorded with it: the assignment
        # commits with the version, in this transaction
        self.driver.bulk_insert("versions", WRITTEN_VERSION_COLUMNS,
                                [(*row, 0, d, key_tag(row[3])) for row, d
                                 in zip(self._sealed(versions, ahead or {}), digests, strict=True)])
        # an id new to the store gets one row, at its last version of the batch: a plain INSERT (one COPY
        # on PostgreSQL for a large batch); a known id's row is updated
        last = {row[0]: row for row in arts}
        fresh = [(*row, "servable") for i, row in last.items() if i not in before]
        updated = [row for i, row in last.items() if i in before]
        if fresh:  # (an empty executemany still prepares its statement)
            self.driver.bulk_insert("artifacts", ARTIFACT_COLUMNS, fresh)
        if updated:
            c.executemany(self.q.upsert_artifacts, updated)
        if edges:
            c.executemany(self.q.insert_edges, edges)
        # every version stays indexed, content and meta (issue 25): the content scan reads them all
        texts: dict[str, list[list[Any]]] = {}  # an id written twice in the batch: both versions indexed
        for a in out:
            texts.setdefault(a.id, []).append([a.content, dict(a.meta)])
        self._index(texts, fresh=last.keys() - before)
        # one chained audit row per call: a single write names itself; a batch pins its manifest
        # (SHA-256 over [id, version, content sha256, inputs] lines, in order)
        if len(batch) == 1:
            w = batch[0]
            self._audit("record", w.artifact.id, detail={"version": out[0].version, "sha256": keyed[w.digest],
                                                         "inputs": list(w.inputs), "semantic": list(w.semantic)})
        elif batch:
            self._audit("record", detail={"artifacts": len(batch), "manifest_sha256": manifest.hexdigest()})
        return out

    def _refusal_audit(self, ident: str, detail: Mapping[str, Any]) -> None:
        """Audit a refused write. The batch's own rows are not written yet, so only this row commits."""
        self._audit("refuse", ident, detail=detail)
