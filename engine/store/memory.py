"""``MemoryStore``: the store's protocols over plain dicts — the conformance suite's independent reference.

The SQL store (:class:`~memsteward.store.sqlstore.SqlStore`) and this one are written apart and
hold the same rows: each table is a dict (or a set, a list) keyed as the SQL table's primary key,
each row the SQL row's columns in order, so :meth:`MemoryStore.dump_state` is comparable with the SQL
store's. No SQL, no connection: a write is a copy-on-write of the tables (all of it, or none, as a
transaction). ``proofs_tests/test_store_conformance.py`` runs the same operations on this store and
on every SQL backend and compares the rows.

This module holds the tables, the reads and the write path; :mod:`.memory_log` the audit chain and the
repair log (barrier, steps, publication, erasure), which :class:`MemoryStore` combines.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..errors import InputError, WriteRefused
from ..repair.artifacts import ABSENT, SERVABLE_STATES, Artifact, Edge, Snapshot
from ..repair.lineage import candidates, index_hashes
from ..repair.reingest import verdict as reingest_verdict
from ..repair.writes import Write, canonical_json, content_digest, parse_put, prepare
from ..textnorm import said_text_digests
from .core import _dump, _load, refs_unkeyed
from .hooks import LogHooks
from .live import LiveEvent, check_write_options, ordered_after, pending_tombstones, retry_busy
from .planstore import read_fields
from .tombstoned import first_tombstoned, refusal, said_digests

__all__ = ["MemoryTables", "MemoryReads"]

ArtifactRow = list[Any]  # [kind, arch, version, state, staged_version]
VersionRow = list[Any]  # [content, meta, event_id, erased, sha256]


@dataclass
class MemoryTables:
    """The store's tables, keyed by their primary keys (rows hold the other columns, in SQL order)."""

    artifacts: dict[str, ArtifactRow] = field(default_factory=dict)
    versions: dict[tuple[str, int], VersionRow] = field(default_factory=dict)
    edges: set[tuple[str, str, str]] = field(default_factory=set)
    events: dict[int, list[Any]] = field(default_factory=dict)  # [type, event, policy, plan, status, created]
    plan_steps: dict[tuple[int, int], list[Any]] = field(default_factory=dict)  # [artifact_id, mode, status, version, report]
    audit: list[tuple[int, str, int | None, str, str | None, str, str]] = field(default_factory=list)
    audit_head: tuple[int, str, str | None] | None = None
    tombstones: dict[str, tuple[str, int]] = field(default_factory=dict)
    event_lease: dict[int, tuple[str, str, int, str | None, str, str | None]] = field(default_factory=dict)
    shingles: set[tuple[int, str]] = field(default_factory=set)
    policies: dict[str, str] = field(default_factory=dict)  # SHA-256 → policy text (events hold the digest)


class MemoryReads(LogHooks):
    """The tables, transactions (copy-on-write), reads, the lineage index and the write path (the audit
    chain and the repair log: :class:`~memsteward.store.memory_log.MemoryStore`)."""

    backend = "memory"
    migrated: tuple[int, int] | None = None

    def __init__(self, path: str = ":memory:") -> None:
        self.path = path
        self.t = MemoryTables()
        self._saved: MemoryTables | None = None

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def transaction(self) -> Iterator[MemoryTables]:
        """All of the body's changes, or (on any exception) none: the tables are restored."""
        if self._saved is not None:  # nested: part of the outer transaction
            yield self.t
            return
        self._saved = copy.deepcopy(self.t)
        try:
            yield self.t
        except BaseException:
            self.t = self._saved
            raise
        finally:
            self._saved = None

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        yield

    def close(self) -> None:
        """Nothing to release (the tables go with the object)."""

    # ------------------------------------------------------------------ reads

    def _artifact(self, ident: str, version: int | None = None, content: bool = True) -> Artifact | None:
        row = self.t.artifacts.get(ident)
        if row is None:
            return None
        kind, arch, current, state, _staged = row
        ver = current if version is None else version
        vrow = self.t.versions.get((ident, ver))
        if vrow is None:
            return None
        return Artifact(ident, kind, arch, ver, _load(vrow[0]) if content else None, _load(vrow[1]), state)

    def _current(self, where: Collection[str] | None = None) -> list[Artifact]:
        ids = sorted(self.t.artifacts if where is None else where)
        return [a for a in (self._artifact(i) for i in ids) if a is not None]

    def serve(self) -> list[Artifact]:
        return [a for a in self._current() if a.state in SERVABLE_STATES]

    def serve_stream(self) -> Iterator[Artifact]:
        return iter(self.serve())

    def servable(self, ids: Sequence[str]) -> list[str]:
        return [i for i in ids if i in self.t.artifacts and self.t.artifacts[i][3] in SERVABLE_STATES]

    def get(self, ident: str) -> Artifact | None:
        return self._artifact(ident)

    def last_with_prefix(self, prefixes: Sequence[str]) -> dict[str, tuple[str, str]]:
        out = {}
        for p in prefixes:
            ids = [i for i in self.t.artifacts if p <= i < p + "~"]
            if ids:
                top = max(ids, key=lambda i: i.encode("utf-8"))
                out[p] = (top, self.t.artifacts[top][3])
        return out

    def ids_with_prefix(self, prefix: str, limit: int) -> list[tuple[str, str]]:
        ids = sorted((i for i in self.t.artifacts if prefix <= i < prefix + "~"), key=lambda i: i.encode("utf-8"))
        return [(i, self.t.artifacts[i][3]) for i in ids[:limit]]

    def version_of(self, ident: str, version: int) -> Artifact | None:
        return self._artifact(ident, version)

    def states(self) -> dict[str, tuple[str, int]]:
        return {i: (r[3], r[2]) for i, r in self.t.artifacts.items()}

    def versions(self, ident: str) -> list[tuple[int, bool, int | None]]:
        return [(v, bool(r[3]), r[2]) for (i, v), r in sorted(self.t.versions.items()) if i == ident]

    def versions_held(self, ids: Collection[str]) -> dict[str, list[tuple[int, bool, bool]]]:
        wanted = set(ids)
        out: dict[str, list[tuple[int, bool, bool]]] = {}
        for (i, v), r in sorted(self.t.versions.items()):
            if i in wanted:
                out.setdefault(i, []).append((v, bool(r[3]), r[0] is not None))
        return out

    def is_erased(self, ident: str, version: int) -> bool:
        row = self.t.versions.get((ident, version))
        return bool(row and row[3])

    def version_count(self) -> int:
        return len(self.t.versions)

    def tombstone_of(self, content: Any, meta: Mapping[str, Any] | None = None) -> str | None:
        hit = first_tombstoned([("", content, meta or {})], self.tombstones_of, self.said_digests)
        return None if hit is None else hit[1]

    def said_digests(self, content: Any, meta: Any) -> set[str]:
        """What a tombstone may hold of them (plain digests: this store keeps no keyed ones)."""
        try:
            return said_digests(content, meta or {})
        except (TypeError, ValueError) as exc:
            raise InputError(f"content is not JSON: {exc}", file=self.path, field="content") from None

    def has_tombstones(self) -> bool:
        return bool(self.t.tombstones)

    def tombstones_of(self, digests: Collection[str]) -> dict[str, str]:
        return {d: self.t.tombstones[d][0] for d in digests if d in self.t.tombstones}

    def artifacts_of(self, ids: Collection[str], content: bool = True) -> dict[str, Artifact]:
        out = {i: self._artifact(i, content=content) for i in set(ids)}
        return {i: a for i, a in out.items() if a is not None}

    def unservable_of(self, ids: Collection[str]) -> dict[str, str]:
        states = {i: self.t.artifacts[i][3] if i in self.t.artifacts else ABSENT for i in set(ids)}
        return {i: s for i, s in states.items() if s not in SERVABLE_STATES}

    # ------------------------------------------------------------------ provenance and the lineage index

    def reach(self, roots: Collection[str]) -> frozenset[str]:
        children: dict[str, list[str]] = {}
        for s, d, kind in self.t.edges:
            if kind == "influence":
                children.setdefault(s, []).append(d)
        seen, todo = set(roots), list(roots)
        while todo:
            for child in children.get(todo.pop(), ()):
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
        return frozenset(seen)

    def parent_edges(self, ids: Collection[str]) -> list[tuple[str, str]]:
        want = set(ids)
        return sorted(((s, d) for s, d, kind in self.t.edges if kind == "influence" and d in want),
                      key=lambda e: (e[1], e[0]))

    def shingle_candidates(self, roots: Mapping[str, Any], n: int) -> list[tuple[str, Any]]:
        ids = candidates(roots, n, self._posting)
        return [(i, self._versions_text(i)) for i in sorted(ids)
                if i in self.t.artifacts and self.t.artifacts[i][3] in (*SERVABLE_STATES, "withdrawn")]

    def _posting(self, h: int, limit: int | None) -> list[str]:
        ids = sorted(i for k, i in self.t.shingles if k == h)
        return ids if limit is None else ids[:limit]

    def _index(self, contents: Mapping[str, Any], replace: Collection[str] = ()) -> None:
        gone = set(replace)
        self.t.shingles = {(h, i) for h, i in self.t.shingles if i not in gone}
        self.t.shingles |= {(h, i) for i, c in contents.items() if c is not None for h in index_hashes(c)}

    def _versions_text(self, ident: str) -> list[list[Any]]:
        """[[content, meta], …] of every version ``ident`` still holds (the SQL store's ``_by_id``)."""
        return [[_load(r[0]), _load(r[1])] for (i, _v), r in sorted(self.t.versions.items()) if i == ident and not r[3]]

    def _reindex(self, ids: Collection[str]) -> None:
        self._index({i: self._versions_text(i) for i in ids}, replace=ids)

    # ------------------------------------------------------------------ import, export, state

    def import_snapshot(self, snap: Snapshot, file: str = "<input>") -> None:
        clash = sorted(set(snap.artifacts) & set(self.t.artifacts))
        if clash:
            raise InputError(f"duplicate artifact id {clash[0]!r} (already in the store)", file=file)
        known = set(self.t.artifacts) | set(snap.artifacts)
        for k, e in enumerate(snap.edges):
            for end in (e.src, e.dst):
                if end not in known:
                    raise InputError(f"edge names a missing artifact {end!r}", file=file, field=f"edges[{k}]")
        if self.unfinished_event() is not None:
            raise WriteRefused("the store has an unfinished event; imports wait until it is published "
                               "(run `memsteward recover`)", "unfinished-event", self.path)
        hit = first_tombstoned(((a.id, a.content, a.meta) for a in snap.artifacts.values() if a.state != "erased"),
                               self.tombstones_of) if self.has_tombstones() else None
        if hit is not None:
            with self.transaction():
                self._audit("refuse", hit[0], detail={"reason": "tombstone", "sha256": hit[1], "file": file})
            raise refusal(hit[0], hit[2], file, "import")
        with self.transaction() as t:
            for a in snap.artifacts.values():
                t.artifacts[a.id] = [a.kind, a.arch, a.version, a.state, None]
                erased = a.state == "erased"
                t.versions[(a.id, a.version)] = [None if erased else _dump(a.content), _dump(dict(a.meta)), None,
                                                 int(erased), None if erased else content_digest(a.content)]
            t.edges |= {(e.src, e.dst, e.type) for e in snap.edges}
            self._index({a.id: [[a.content, dict(a.meta)]] for a in snap.artifacts.values() if a.state != "erased"})
            self._audit("import", detail={"file": file, "artifacts": len(snap.artifacts), "edges": len(snap.edges)})

    def snapshot(self) -> Snapshot:
        return Snapshot({a.id: a for a in self._current()},
                        tuple(Edge(s, d, k) for s, d, k in sorted(self.t.edges)))

    def export(self) -> dict[str, Any]:
        return {"artifacts": [a.as_dict() for a in self._current()],
                "edges": [{"src": s, "dst": d, "type": k} for s, d, k in sorted(self.t.edges)]}

    def export_stream(self) -> dict[str, Iterator[dict[str, Any]]]:
        doc = self.export()
        return {"artifacts": iter(doc["artifacts"]), "edges": iter(doc["edges"])}

    def row_counts(self, tables: Sequence[str] | None = None) -> dict[str, int]:
        sizes = {"artifacts": len(self.t.artifacts), "versions": len(self.t.versions), "edges": len(self.t.edges),
                 "events": len(self.t.events), "plan_steps": len(self.t.plan_steps), "audit": len(self.t.audit),
                 "audit_head": int(self.t.audit_head is not None), "tombstones": len(self.t.tombstones),
                 "shingles": len(self.t.shingles)}
        names = list(sizes) if tables is None else list(tables)
        unknown = set(names) - set(sizes)
        if unknown:
            raise ValueError(f"not a store table: {sorted(unknown)}")
        return {n: sizes[n] for n in names}

    def dump_state(self) -> dict[str, Any]:
        """The rows of the SQL store's ``dump_state``: artifacts, versions, edges, events, plan steps
        (sorted by ``repr``) and the audit's (seq, event_id, action, artifact_id)."""
        t = self.t
        tables = {
            "artifacts": [(i, *r) for i, r in t.artifacts.items()],
            # the digest column as whether one is kept (a sealed SQL store keeps a keyed digest, its own)
            "versions": [(i, v, *r[:4], r[4] is not None) for (i, v), r in t.versions.items()],
            "edges": list(t.edges),
            "events": [(i, r[0], refs_unkeyed(r[1]), r[2], refs_unkeyed(r[3]), *r[4:]) for i, r in t.events.items()],
            "plan_steps": [(e, s, *r) for (e, s), r in t.plan_steps.items()],
        }
        out: dict[str, Any] = {k: sorted(rows, key=repr) for k, rows in tables.items()}
        out["audit"] = [(seq, ev, action, art) for seq, _at, ev, action, art, _d, _h in t.audit]
        return out

    # ------------------------------------------------------------------ the write path

    def record(self, artifact: Artifact | Mapping[str, Any], inputs: Sequence[str] = (),
               semantic: Sequence[str] = (), *, reingest: str = "refuse", wait: float | None = None,
               before_commit: Callable[[], None] | None = None) -> Artifact:
        check_write_options(reingest, wait, self.path)
        return self.record_many([prepare(artifact, inputs, semantic, file=self.path)], reingest=reingest,
                                wait=wait, before_commit=before_commit)[0]

    def record_many(self, writes: Sequence[Write | Mapping[str, Any]], *, reingest: str = "refuse",
                    wait: float | None = None, before_commit: Callable[[], None] | None = None) -> list[Artifact]:
        check_write_options(reingest, wait, self.path)
        batch = [w if isinstance(w, Write) else parse_put(w, self.path, f"writes[{k}].") for k, w in enumerate(writes)]
        return retry_busy(lambda: self._record_once(batch, reingest, before_commit), wait)

    def _live_event(self) -> LiveEvent | None:
        open_ = sorted(i for i, r in self.t.events.items() if r[4] != "done")
        return LiveEvent.of(open_[0], self.t.events[open_[0]][1]) if open_ else None

    def _held(self, live: LiveEvent) -> frozenset[str]:
        return frozenset(read_fields(self.t.events[live.id][3], ("barrier",)).get("barrier", ()))

    def _pending_dead(self, live: LiveEvent) -> dict[str, str]:
        t = self.t
        return pending_tombstones((i, _load(r[0])) for (i, v), r in sorted(t.versions.items())
                                  if i in live.roots and not r[3] and r[2] != live.id)

    def _record_once(self, batch: Sequence[Write], reingest: str,
                     before_commit: Callable[[], None] | None = None) -> list[Artifact]:
        self._refusal: tuple[str, dict[str, Any]] | None = None
        try:
            with self.transaction():
                out = self._apply_writes(batch, reingest, self._live_event())
                if before_commit is not None:
                    before_commit()
                return out
        except WriteRefused:
            if self._refusal is not None:  # fenced or tombstoned: the refusal's audit row commits, nothing else
                with self.transaction():
                    self._audit("refuse", self._refusal[0], detail=self._refusal[1])
            raise

    def _refuse(self, ident: str, detail: Mapping[str, Any], exc: WriteRefused) -> WriteRefused:
        self._refusal = (ident, dict(detail))
        return exc

    def _apply_writes(self, batch: Sequence[Write], reingest: str = "refuse",
                      live: LiveEvent | None = None) -> list[Artifact]:
        t = self.t
        known = {i: (r[0], r[1], r[3]) for i, r in t.artifacts.items()}
        out: list[Artifact] = []
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
                raise self._refuse(a.id, {"reason": "fenced", "inputs": {x: s for _, x, s in fenced}}, WriteRefused(
                    f"write of {a.id!r} refused: input {i!r} is {st} (under repair or deleted); "
                    "new memory may derive only from servable artifacts", "fenced", self.path, f"{where}inputs[{j}]"))
            said = {w.digest} | said_text_digests(a.content, a.meta)
            hit = next((d for d in sorted(said) if d in t.tombstones), None)
            if hit is not None and reingest_verdict(reingest, not w.inputs, True) == "refuse":
                raise self._refuse(a.id, {"reason": "tombstone", "sha256": hit}, WriteRefused(
                    f"write of {a.id!r} refused: its content was erased by a delete event "
                    f"(tombstone of {t.tombstones[hit][0]!r}); deleted content is not ingested again",
                    "tombstone", self.path, f"{where}content"))
            prev = known.get(a.id)
            if live is not None:
                waits = ordered_after(live, a.id, None if prev is None else prev[2], said, not w.inputs, reingest,
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
            version = max((v for (i, v) in t.versions if i == a.id), default=0) + 1
            known[a.id] = (a.kind, a.arch, "servable")
            t.versions[(a.id, version)] = [w.content_text, w.meta_text, None, 0, w.digest]
            t.artifacts[a.id] = [a.kind, a.arch, version, "servable", None]
            t.edges |= {(i, a.id, "influence") for i in w.inputs} | {(i, a.id, "semantic") for i in w.semantic}
            manifest.update(canonical_json([a.id, version, w.digest, w.inputs]).encode("utf-8") + b"\n")
            out.append(Artifact(a.id, a.kind, a.arch, version, a.content, dict(a.meta), "servable"))
        texts: dict[str, list[list[Any]]] = {}  # every version of the batch indexed, as one write at a time
        for a in out:
            texts.setdefault(a.id, []).append([a.content, dict(a.meta)])
        self._index(texts)
        if len(batch) == 1:
            w = batch[0]
            self._audit("record", w.artifact.id, detail={"version": out[0].version, "sha256": w.digest,
                                                         "inputs": list(w.inputs), "semantic": list(w.semantic)})
        elif batch:
            self._audit("record", detail={"artifacts": len(batch), "manifest_sha256": manifest.hexdigest()})
        return out
