"""The planning reads (:class:`~memsteward.store.api.Provenance`) and the lineage index.

C(F) by breadth-first reach over the edge key, the influence parents of a set of ids from the
covering ``edges_parents`` index, and candidate untracked derivations through ``shingles``: the
word-trigram hashes of every current content (:mod:`memsteward.repair.lineage`), kept in the
transaction that changes a current version. Planning work grows with |C(F)|, not with the store.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from operator import itemgetter
from typing import Any

from ..repair.lineage import candidates, index_hashes
from .core import _id_list
from .queries import SHINGLE_COLUMNS
from .reads import Reads

__all__ = ["PlanningReads"]

REACH_NARROW, REACH_NARROW_LEVELS = 64, 32  # reach: after 32 levels of < 64 ids, one recursive query
_FIRST = itemgetter(0)


def _by_id(rows: Iterable[tuple[str, str | None, str]]) -> list[tuple[str, Any]]:
    """(id, [[content, meta], …]) per id, from (id, content, meta) rows ordered by id: every stored
    version's text, what the lineage index and the content scan read (issue 25)."""
    out: list[tuple[str, Any]] = []
    for ident, content, meta in rows:
        pair = [None if content is None else json.loads(content), json.loads(meta)]
        if out and out[-1][0] == ident:
            out[-1][1].append(pair)
        else:
            out.append((ident, [pair]))
    return out


class PlanningReads(Reads):
    """Provenance reads and the lineage index."""

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
                    seen.update(r[0] for r in self.conn.execute(self.q.reach_recursive, (_id_list(frontier),)))
                    break
            rows = self.conn.execute(self.q.reach_level, (_id_list(frontier),)).fetchall()
            frontier = set(map(_FIRST, rows)).difference(seen)
            seen |= frontier
        return frozenset(seen)

    def parent_edges(self, ids: Collection[str]) -> list[tuple[str, str]]:
        """Every influence edge (u, v) with v ∈ ``ids``, ordered by (v, u): read from the covering
        ``edges_parents`` index alone (dst, type, src), whose order the sort finds already in place."""
        rows: list[tuple[str, str]] = self.conn.execute(self.q.parent_edges, (_id_list(ids),)).fetchall()
        return rows

    def shingle_candidates(self, roots: Mapping[str, Any], n: int) -> list[tuple[str, Any]]:
        """(id, content) of the servable artifacts that may share an n-word run with one of ``roots``'
        contents: :func:`memsteward.repair.lineage.candidates` over the ``shingles`` index (the
        rarest trigram's posting list per window), then one read of those artifacts."""
        ids = candidates(roots, n, self._posting, self._keyed)
        if not ids:
            return []
        return self._opened_by_id(self.conn.execute(self.q.shingle_candidates, (json.dumps(sorted(ids)),)).fetchall())

    def _opened_by_id(self, rows: Iterable[tuple[str, int, str | None, str]]) -> list[tuple[str, Any]]:
        """:func:`_by_id` of (id, version, content, meta) rows, their sealed texts opened (a version whose
        key a crashed publication already destroyed reads as erased: ``recover`` re-plans over it)."""
        rows = list(rows)
        opened = self.vault.open([(i, int(v), c, m) for i, v, c, m in rows], shredded_as_erased=True)
        return _by_id((r[0], c, m) for r, (c, m) in zip(rows, opened, strict=True))

    def _posting(self, h: int, limit: int | None) -> list[str]:
        """Ids whose current content holds the trigram of hash ``h`` (at most ``limit``), by the index key."""
        if limit is None:
            return [r[0] for r in self.conn.execute(self.q.posting, (h,))]
        return [r[0] for r in self.conn.execute(self.q.posting_limited, (h, limit))]

    def _index(self, contents: Mapping[str, Any], replace: Collection[str] = (), fresh: Collection[str] = ()) -> None:
        """Write the lineage index rows (trigram hash, id) of ``contents`` (id → current content; None:
        erased), after deleting every row of the ids in ``replace`` — inside the caller's transaction,
        so the index always describes the committed current versions. Hashes only, never words.

        The rows of an id in ``replace`` or ``fresh`` (new to the store: an id has index rows only
        while it has an ``artifacts`` row) cannot be there already: they go in as a plain INSERT (one
        COPY on PostgreSQL), the others as INSERT OR IGNORE."""
        if replace:
            self.driver.write(self.q.delete_shingles, (json.dumps(sorted(replace)),))
        new = set(replace) | set(fresh)
        rows = sorted({(h, i) for i, c in contents.items() if c is not None for h in index_hashes(c, self._keyed)})
        fresh_rows, other = [r for r in rows if r[1] in new], [r for r in rows if r[1] not in new]
        for start in range(0, len(fresh_rows), 50_000):
            self.driver.bulk_insert("shingles", SHINGLE_COLUMNS, fresh_rows[start:start + 50_000])
        for start in range(0, len(other), 50_000):
            self.conn.executemany(self.q.insert_shingles, other[start:start + 50_000])

    def _reindex(self, ids: Collection[str]) -> None:
        """Re-index ``ids`` from every version they still hold (content and meta; erased ones are gone)."""
        if not ids:
            return
        rows = self.conn.execute(self.q.reindex_versions, (json.dumps(sorted(set(ids))),)).fetchall()
        self._index(dict(self._opened_by_id(rows)),
                    replace=ids)
