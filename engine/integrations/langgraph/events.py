"""Events of :class:`~.store.GovernedStore` and the wrapped store brought in line with them.

``_run`` runs one MemoRepair event (a delete, or the correct event an overwrite is) with the
adapter's operators (re-embedding when the wrapped store has an index: :mod:`.reembed`), then
applies the write-back its published plan implies (:mod:`.sync`: repaired values rebuilt whole,
everything withdrawn or erased removed), keeps the fingerprints of what it erased (for the
attestation) and scrubs the wrapped store's files (:mod:`.physical`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import GetOp, PutOp

from ...repair.artifacts import Artifact
from ...repair.closure import DEFAULT_BACKEND
from ...repair.events import parse_event
from ...repair.execute import run_event
from ...repair.operators import OperatorRegistry
from ...repair.plan import TransitionPlan
from .attest import erased_needles
from .guard import ReadGuard
from .physical import scrub
from .reembed import precomputed, vectors_of
from .sync import Address, Rewrite, addresses_in, write_back
from .values import rebuilt

__all__ = ["EventSync"]


class EventSync(ReadGuard):
    """Events and the wrapped-store write-back (see the module docstring)."""

    def _operators(self) -> OperatorRegistry:
        """The repair operators: the given or the policy's, re-embedding when the wrapped store has an
        index (:mod:`.reembed`)."""
        return self.registry

    def _run(self, doc: dict[str, Any], skip: Sequence[str] = ()) -> TransitionPlan:
        """Run one event and bring the wrapped store in line (sync, then scrub); returns the plan."""
        event = parse_event(doc, self.store, file="<langgraph event>")
        cascade = self.store.reach(event.roots)
        before = self.store.artifacts_of(cascade)
        plan = run_event(self.store, self.policy, event, backend=DEFAULT_BACKEND, operators=self.registry,
                         oracles=self.oracles)
        self.last_plan = plan
        self._apply(write_back(self.store, plan, addresses_in(before), self._latest_ids, skip))
        self.remember_erased(before, doc["type"] == "correct")
        self.scrub()
        return plan

    def remember_erased(self, before: Mapping[str, Artifact], corrected: bool) -> None:
        """Keep the needles of what the latest event erased (for :meth:`attest`), minus the text it
        kept (:func:`.attest.erased_needles`: the current content of every member still servable)."""
        event = self.store.event()
        if event is None:
            return
        self.last_event_id = int(event["id"])
        gone = self.store.unservable_of(list(before))
        erased = {i: a.content for i, a in before.items() if gone.get(i) == "erased"}
        if corrected and self.erase_corrected:
            erased.update({f"{r}@old": before[r].content for r in event["event"]["roots"] if r in before})
        kept = self.store.artifacts_of([i for i in before if i not in gone]) if erased else {}
        self.fingerprints[int(event["id"])] = erased_needles(erased, [a.content for a in kept.values()])

    def scrub(self) -> dict[str, Any]:
        """Rewrite the wrapped store's files without deleted rows (:func:`.physical.scrub`)."""
        out = scrub(self.inner, self.snapshot_wait) if self.scrub_files else {"vacuum": False}
        clean = out.get("backend") == "postgresql" and out.get("vacuum") and not out.get("held_by")
        self.clean_through = self.last_event_id if clean else None
        self.last_scrub = out
        return out

    def _apply(self, rewrites: Sequence[Rewrite]) -> None:
        if not rewrites:
            return
        old = {}
        rebuilt_items = [r.address for r in rewrites if r.artifact is not None]
        if rebuilt_items:
            old = {(ns, k): it for (ns, k), it in zip(rebuilt_items, self.inner.batch(
                [GetOp(ns, k, refresh_ttl=False) for ns, k in rebuilt_items]))}
        self.inner.batch([PutOp(ns, k, None) for (ns, k) in (r.address for r in rewrites)])
        puts = [self._rebuilt_op(r, old.get(r.address)) for r in rewrites if r.artifact is not None]
        if puts:
            embedder = getattr(self.registry, "embedder", None)
            known = vectors_of([r.artifact for r in rewrites if r.artifact is not None],
                               embedder.name) if embedder is not None else {}
            with precomputed(self.inner, known):  # the store indexes the operator's vectors
                self.inner.batch(puts)

    def _rebuilt_op(self, r: Rewrite, old: Any) -> PutOp:
        assert r.artifact is not None
        latest = self._latest_ids(self._pairs(old))
        servable = set(self.store.servable(list(latest.values())))

        def keep(pair: Sequence[Any]) -> bool:
            return latest.get((tuple(pair[0]), pair[1])) in servable

        value = rebuilt(old.value if old is not None else None, r.artifact.content, r.artifact.meta, self.spec, keep)
        return PutOp(r.address[0], r.address[1], value)

    def _pairs(self, item: Any) -> list[Address]:
        raw = item.value.get(self.spec.provenance_field) if item is not None else None
        if not isinstance(raw, list):
            return []
        return [(tuple(p[0]), p[1]) for p in raw if isinstance(p, (list, tuple)) and len(p) == 2]

    def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        current = self.latest([(namespace, key)]).get((namespace, key))
        if current is not None and current[1] != "erased":
            self._run({"type": "delete", "roots": [current[0]]})  # removes the item with its cascade
        else:
            self.inner.batch([PutOp(namespace, key, None)])
