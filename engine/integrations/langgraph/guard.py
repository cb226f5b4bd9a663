"""The read guard of :class:`~.store.GovernedStore`: which wrapped-store items are served.

An item is served only when its latest incarnation (:mod:`.identity`: one index probe per item)
is servable in memsteward's store and, under ``reingest: review``, not held for review. An item
written around the adapter has no record, so it is never served. ``search`` pages through the
wrapped store until ``offset + limit`` servable items are found (offsets count served items).
``list_namespaces`` lists only the namespaces that hold an item the adapter would serve (a wrapped
store may keep an emptied namespace, as ``InMemoryStore`` does: an erased user's labels are not
listed), paging the same way (offsets count listed namespaces).

The state every part of the adapter shares is declared here (:class:`ReadGuard`); the layers build
on each other: read guard → events (:mod:`.events`) → write path (:mod:`.writes`) → the
``BaseStore`` (:mod:`.store`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from langgraph.store.base import BaseStore, Item, ListNamespacesOp, SearchOp

from ...policy.model import Policy
from ...repair.artifacts import SERVABLE_STATES
from ...repair.operators import OperatorRegistry
from ...repair.oracles import OracleRegistry
from ...repair.plan import TransitionPlan
from ...shred.deepscan import Needles
from ...store.api import Storage
from .identity import ItemIds
from .sync import Address
from .values import ValueSpec

__all__ = ["REVIEW_KEY", "ReadGuard"]

T = TypeVar("T")

REVIEW_KEY = "lg_review"
"""artifact meta flag of a first-hand re-ingestion held for review (``reingest: review``)."""


class ReadGuard:
    """The adapter's shared state (set by ``GovernedStore.__init__``) and its read guard."""

    inner: BaseStore
    store: Storage
    policy: Policy
    spec: ValueSpec
    reingest: str
    erase_corrected: bool
    scrub_files: bool
    snapshot_wait: float
    fingerprints: dict[int, Needles]
    ids: ItemIds
    operators: OperatorRegistry | None
    registry: OperatorRegistry
    oracles: OracleRegistry | None
    write_wait: float | None
    declared_meta: frozenset[str]
    last_plan: TransitionPlan | None
    last_event_id: int | None
    last_preview: tuple[int, Policy, Any] | None  # (generation, policy, ForgetPreview): :mod:`.forget`
    last_scrub: dict[str, Any]
    clean_through: int | None
    _lock: threading.RLock

    def artifact_id(self, namespace: tuple[str, ...], key: str) -> str | None:
        """The memsteward id of the item's latest incarnation (None: never recorded)."""
        found = self.latest([(tuple(namespace), key)]).get((tuple(namespace), key))
        return found[0] if found else None

    def latest(self, items: Sequence[Address]) -> dict[Address, tuple[str, str]]:
        """(id, state) of each item's latest incarnation: one index probe per item."""
        bases = {self.ids.base(ns, key): (ns, key) for ns, key in items}
        return {bases[b]: hit for b, hit in self.store.last_with_prefix(list(bases)).items()}

    def _latest_ids(self, items: Sequence[Address]) -> dict[Address, str]:
        return {a: i for a, (i, _) in self.latest(items).items()}

    def _visible(self, items: Sequence[Item]) -> list[Item]:
        found = self.latest([(tuple(it.namespace), it.key) for it in items])  # (id, state) in one query
        ids = [found.get((tuple(it.namespace), it.key), ("", ""))[0] for it in items]
        ok = {i for i, st in found.values() if st in SERVABLE_STATES}
        held = self._held([i for i in ids if i in ok])
        return [it for it, i in zip(items, ids) if i in ok and i not in held]

    def _held(self, ids: Sequence[str]) -> set[str]:
        """The ids among ``ids`` held for review (only looked up under ``reingest: review``)."""
        if self.reingest != "review" or not ids:
            return set()
        return {i for i, a in self.store.artifacts_of(set(ids), content=False).items() if a.meta.get(REVIEW_KEY)}

    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a worker thread, under the adapter's lock: the event loop goes on meanwhile."""
        def locked() -> T:
            with self._lock:
                return fn(*args)
        return await asyncio.to_thread(locked)

    def _search(self, op: SearchOp) -> list[Item]:
        """Page through the wrapped store until ``offset + limit`` servable items are found."""
        want, page, start = op.offset + op.limit, op.offset + op.limit, 0
        seen: list[Item] = []
        while len(seen) < want:
            batch = cast("list[Item]", self.inner.batch([op._replace(limit=page, offset=start)])[0])
            seen += self._visible(list(batch))
            if len(batch) < page:
                break
            start += page
            page = max(2 * page, 20)  # items were hidden: read further in larger pages
        return seen[op.offset:want]

    async def _asearch(self, op: SearchOp) -> list[Item]:
        want, page, start = op.offset + op.limit, op.offset + op.limit, 0
        seen: list[Item] = []
        while len(seen) < want:
            batch = cast("list[Item]", (await self.inner.abatch([op._replace(limit=page, offset=start)]))[0])
            seen += await self._off_loop(self._visible, list(batch))
            if len(batch) < page:
                break
            start += page
            page = max(2 * page, 20)  # items were hidden: read further in larger pages
        return seen[op.offset:want]

    # ------------------------------------------------------------------ list_namespaces

    @staticmethod
    def _probe(ns: tuple[str, ...], start: int, page: int) -> SearchOp:
        return SearchOp(ns, None, page, start, None, refresh_ttl=False)

    @staticmethod
    def _exact(op: ListNamespacesOp, ns: tuple[str, ...]) -> bool:
        """Whether ``ns`` must hold an item itself (a whole namespace), not only below it (a namespace
        cut at ``max_depth``)."""
        return op.max_depth is None or len(ns) < op.max_depth

    def _holds(self, ns: tuple[str, ...], exact: bool) -> bool:
        """Whether the namespace (``exact``) or its subtree holds an item the adapter serves."""
        start, page = 0, 10
        while True:
            batch = cast("list[Item]", self.inner.batch([self._probe(ns, start, page)])[0])
            mine = [it for it in batch if not exact or tuple(it.namespace) == ns]
            if mine and self._visible(mine):
                return True
            if len(batch) < page:
                return False
            start, page = start + page, min(2 * page, 1000)

    async def _aholds(self, ns: tuple[str, ...], exact: bool) -> bool:
        start, page = 0, 10
        while True:
            batch = cast("list[Item]", (await self.inner.abatch([self._probe(ns, start, page)]))[0])
            mine = [it for it in batch if not exact or tuple(it.namespace) == ns]
            if mine and await self._off_loop(self._visible, mine):
                return True
            if len(batch) < page:
                return False
            start, page = start + page, min(2 * page, 1000)

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        """Page through the wrapped store's namespaces until ``offset + limit`` hold a served item."""
        want, page, start = op.offset + op.limit, op.offset + op.limit, 0
        seen: list[tuple[str, ...]] = []
        while len(seen) < want and page > 0:
            batch = cast("list[tuple[str, ...]]", self.inner.batch([op._replace(limit=page, offset=start)])[0])
            seen += [ns for ns in batch if self._holds(tuple(ns), self._exact(op, tuple(ns)))]
            if len(batch) < page:
                break
            start += page
            page = max(2 * page, 20)  # namespaces were left out: read further in larger pages
        return seen[op.offset:want]

    async def _anamespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        want, page, start = op.offset + op.limit, op.offset + op.limit, 0
        seen: list[tuple[str, ...]] = []
        while len(seen) < want and page > 0:
            batch = cast("list[tuple[str, ...]]", (await self.inner.abatch([op._replace(limit=page, offset=start)]))[0])
            seen += [ns for ns in batch if await self._aholds(tuple(ns), self._exact(op, tuple(ns)))]
            if len(batch) < page:
                break
            start += page
            page = max(2 * page, 20)  # namespaces were left out: read further in larger pages
        return seen[op.offset:want]
