"""The store's reads: the retrieval guard, artifacts at a version, states, events.

Every read is by primary key or one indexed query; the guard (:meth:`Reads.servable`) filters a
retriever's candidate ids in one query whose cost grows with the ids asked, not with the store.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from ..repair.artifacts import ABSENT, SERVABLE_STATES, Artifact
from .audit import AuditChain
from .core import _id_list, _load, digest
from .planstore import read_plan

__all__ = ["Reads"]

_CURRENT = ("SELECT a.id, a.kind, a.arch, a.version, a.state, v.content, v.meta FROM artifacts a "
            "JOIN versions v ON v.id = a.id AND v.version = a.version ")


_SERVABLE_SQL = ", ".join(f"'{s}'" for s in sorted(SERVABLE_STATES))


# an event row with its policy document: from ``policies`` by the digest ``events.policy`` holds (schema 7),
# or inline (an event recorded before)
_EVENT_ROW = ("SELECT e.id, e.type, e.event, COALESCE(p.policy, e.policy), e.plan, e.status, e.created FROM events e "
              "LEFT JOIN policies p ON p.digest = e.policy ")


class Reads(AuditChain):
    """Reading artifacts, versions, states and events."""

    def _rows(self, where: str = "", args: Sequence[Any] = ()) -> list[Artifact]:
        return list(self._opened(self.conn.execute(_CURRENT + where + " ORDER BY a.id", args)))

    def _iter_rows(self, where: str = "", args: Sequence[Any] = ()) -> Iterator[Artifact]:
        """:meth:`_rows` as they come (:meth:`_stream`)."""
        return self._opened(self._stream(_CURRENT + where + " ORDER BY a.id", args))

    def serve(self) -> list[Artifact]:
        """Retrieval view: only servable (incl. republished) artifacts at their served version."""
        return list(self.serve_stream())

    def serve_stream(self) -> Iterator[Artifact]:
        """:meth:`serve` as the rows come (``memsteward store serve --json`` of a large store)."""
        return self._iter_rows("WHERE a.state IN (?, ?)", tuple(sorted(SERVABLE_STATES)))

    def artifacts_of(self, ids: Collection[str], content: bool = True) -> dict[str, Artifact]:
        """The current version of each of ``ids`` that exists (by primary key); with ``content``
        False the content is not read (``None``: planning reads only what checks need)."""
        q = ("SELECT a.id, a.kind, a.arch, a.version, a.state, " + ("v.content" if content else "NULL") +
             ", v.meta FROM json_each(?) j "
             "CROSS JOIN artifacts a ON a.id = j.value JOIN versions v ON v.id = a.id AND v.version = a.version")
        rows = self.conn.execute(q, (_id_list(ids),)).fetchall()
        return {a.id: a for a in self._opened(rows, shredded_as_erased=True)}  # recover after the keys went

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
        ((content, meta),) = self.vault.open([(ident, version, content, meta)])
        return Artifact(ident, kind, arch, version, _load(content), _load(meta), state)

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
        ok = {r[0] for r in self.conn.execute(
            "SELECT id FROM artifacts WHERE id IN (SELECT value FROM json_each(?)) "
            "AND state IN ('servable', 'republished')", (json.dumps(wanted),))}
        return [i for i in wanted if i in ok]

    def event(self, event_id: int | None = None) -> dict[str, Any] | None:
        """One recorded event (the latest when ``event_id`` is None) with its policy and plan."""
        sql = _EVENT_ROW
        row = (self.conn.execute(sql + "WHERE e.id = ?", (event_id,)).fetchone() if event_id is not None
               else self.conn.execute(sql + "ORDER BY e.id DESC LIMIT 1").fetchone())
        if row is None:
            return None
        i, t, ev, pol, plan, status, created = row
        return {"id": i, "type": t, "event": json.loads(ev), "policy": json.loads(pol), "plan": read_plan(plan),
                "status": status, "created": created,
                "sha256": {"event": digest(ev), "policy": digest(pol), "plan": digest(plan)}}

    def event_ids(self) -> list[int]:
        """The ids of every recorded event, in order (attestation checks each one's records)."""
        return [int(r[0]) for r in self.conn.execute("SELECT id FROM events ORDER BY id")]
