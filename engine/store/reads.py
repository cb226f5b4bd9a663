"""The store's reads: the retrieval guard, artifacts at a version, states, events.

Every read is by primary key or one indexed query; the guard (:meth:`Reads.servable`) filters a
retriever's candidate ids in one query whose cost grows with the ids asked, not with the store.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from ..repair.artifacts import SERVABLE_STATES, Artifact
from .audit import AuditChain
from .core import _id_list, _load, digest
from .planstore import read_plan

__all__ = ["Reads"]

class Reads(AuditChain):
    """Reading artifacts, versions, states and events."""

    def _iter_rows(self, sql: str | None = None, args: Sequence[Any] = ()) -> Iterator[Artifact]:
        """Artifacts at their current version as they come (:meth:`_stream`): every one, or those of
        ``sql`` (a ``current_…`` statement of :attr:`q`)."""
        return self._opened(self._stream(self.q.current_all if sql is None else sql, args))

    def serve(self) -> list[Artifact]:
        """Retrieval view: only servable (incl. republished) artifacts at their served version."""
        return list(self.serve_stream())

    def serve_stream(self) -> Iterator[Artifact]:
        """:meth:`serve` as the rows come (``memsteward store serve --json`` of a large store)."""
        return self._iter_rows(self.q.current_servable, tuple(sorted(SERVABLE_STATES)))

    def artifacts_of(self, ids: Collection[str], content: bool = True) -> dict[str, Artifact]:
        """The current version of each of ``ids`` that exists (by primary key); with ``content``
        False the content is not read (``None``: planning reads only what checks need)."""
        q = self.q.artifacts_of if content else self.q.artifacts_of_no_content
        rows = self.conn.execute(q, (_id_list(ids),)).fetchall()
        return {a.id: a for a in self._opened(rows, shredded_as_erased=True)}  # recover after the keys went

    def unservable_of(self, ids: Collection[str]) -> dict[str, str]:
        """The state of each of ``ids`` that is not servable (``"absent"``: no such artifact); the
        servable ones are left out. Planning asks this of the influence parents outside C(F), which
        are almost all servable: at 10^6 artifacts a row per parent cost 0.16–0.30 s, the few
        unservable ones 0.08 s."""
        return dict(self.conn.execute(self.q.unservable_of, (_id_list(ids),)))

    def last_with_prefix(self, prefixes: Sequence[str]) -> dict[str, tuple[str, str]]:
        """For each prefix p: (id, state) of the greatest id in [p, p + "~"), for prefixes that have one.

        One index probe per prefix (an ``ORDER BY id DESC LIMIT 1`` range over the primary key), so
        an adapter finds an item's latest incarnation in O(log n), whatever the number of incarnations
        (ids are compared bytewise: collation "C" on PostgreSQL). Meant for ASCII id schemes."""
        if not prefixes:
            return {}
        rows = self.conn.execute(self.q.last_with_prefix, (_id_list(prefixes),)).fetchall()
        return {p: (i, st) for p, i, st in rows}

    def ids_with_prefix(self, prefix: str, limit: int) -> list[tuple[str, str]]:
        """(id, state) of the ids in [prefix, prefix + "~"), in id order, at most ``limit`` (> 0)."""
        return [(i, st) for i, st in self.conn.execute(self.q.ids_with_prefix, (prefix, prefix + "~", int(limit)))]

    def get(self, ident: str) -> Artifact | None:
        rows = list(self._opened(self.conn.execute(self.q.current_one, (ident,))))
        return rows[0] if rows else None

    def version_of(self, ident: str, version: int) -> Artifact | None:
        row = self.conn.execute(self.q.version_of, (ident, version)).fetchone()
        if row is None:
            return None
        kind, arch, content, meta, state = row
        ((content, meta),) = self.vault.open([(ident, version, content, meta)])
        return Artifact(ident, kind, arch, version, _load(content), _load(meta), state)

    def states(self) -> dict[str, tuple[str, int]]:
        return {i: (s, v) for i, s, v in self.conn.execute(self.q.states)}

    def versions(self, ident: str) -> list[tuple[int, bool, int | None]]:
        """(version, erased, event_id) of every stored version of an artifact."""
        return [(v, bool(e), ev) for v, e, ev in self.conn.execute(self.q.versions_of, (ident,))]

    def versions_held(self, ids: Collection[str]) -> dict[str, list[tuple[int, bool, bool]]]:
        """(version, erased, whether its row still holds content) of every stored version of each of
        ``ids`` that has any, in one query per 500 ids (the attestation of a 1,000-item forget)."""
        out: dict[str, list[tuple[int, bool, bool]]] = {}
        wanted = sorted(set(ids))
        for start in range(0, len(wanted), 500):
            for i, v, e, kept in self.conn.execute(self.q.versions_held, (_id_list(wanted[start:start + 500]),)):
                out.setdefault(i, []).append((int(v), bool(e), bool(kept)))
        return out

    def is_erased(self, ident: str, version: int) -> bool:
        row = self.conn.execute(self.q.is_erased, (ident, version)).fetchone()
        return bool(row and row[0])

    def version_count(self) -> int:
        return int(self.conn.execute(self.q.version_count).fetchone()[0])

    def servable(self, ids: Sequence[str]) -> list[str]:
        """The retrieval guard: the ids of ``ids`` that may be served, in the given order.

        One query over the primary key (the ids travel as one JSON parameter), so its cost grows
        with ``len(ids)``, not with the store. Unknown ids are simply not servable.

        Examples
        --------
        >>> from memsteward.store import open_store
        >>> s = open_store()
        >>> _ = s.record({"id": "a", "kind": "record", "content": "x"})
        >>> s.servable(["b", "a"])
        ['a']
        """
        wanted = list(ids)
        if not wanted:
            return []
        ok = {r[0] for r in self.conn.execute(self.q.servable, (json.dumps(wanted),))}
        return [i for i in wanted if i in ok]

    def event(self, event_id: int | None = None) -> dict[str, Any] | None:
        """One recorded event (the latest when ``event_id`` is None) with its policy and plan."""
        row = (self.conn.execute(self.q.event_by_id, (event_id,)).fetchone() if event_id is not None
               else self.conn.execute(self.q.event_latest).fetchone())
        if row is None:
            return None
        i, t, ev, pol, plan, status, created = row
        return {"id": i, "type": t, "event": json.loads(ev), "policy": json.loads(pol), "plan": read_plan(plan),
                "status": status, "created": created,
                "sha256": {"event": digest(ev), "policy": digest(pol), "plan": digest(plan)}}

    def event_ids(self) -> list[int]:
        """The ids of every recorded event, in order (attestation checks each one's records)."""
        return [int(r[0]) for r in self.conn.execute(self.q.event_ids)]
