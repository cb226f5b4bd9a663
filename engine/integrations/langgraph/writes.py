"""The write path of :class:`~.store.GovernedStore`: a put is recorded (fenced, re-ingestion
rule) before the wrapped store holds it, and an overwrite of an item with dependants is a
``correct`` event.

Consecutive puts of one ``batch()`` call that are first-hand writes of distinct keys, each new or
an overwrite without dependants, are recorded in one transaction (all or none) and written to the
wrapped store in one batch (:meth:`WritePath._put_run`).

On PostgreSQL the wrapped store's put is started from inside memsteward's record transaction, once
every check has passed and just before its COMMIT (:class:`Overlap`), so the two durable commits
overlap instead of following each other. A refused write never starts it. If the record fails
after it started (its COMMIT failed), the wrapped item is deleted again once its put is done: an
unrecorded value is never left behind. Corrections, and overwrites on an indexed store (whose old
vectors are deleted first), stay in sequence.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from langgraph.store.base import BaseStore, PutOp, Result

from ...errors import InputError, WriteRefused
from ...repair.artifacts import SERVABLE_STATES
from ...repair.reingest import verdict
from ...textnorm import said_keys
from .errors import GovernedWriteRefused
from .events import EventSync
from .guard import REVIEW_KEY
from .identity import MAX_INCARNATIONS
from .physical import is_postgres
from .sync import Address
from .values import ADDRESS_KEY, artifact_content, split_meta

__all__ = ["MAX_SOURCES", "Overlap", "WritePath"]

MAX_SOURCES = 10_000


class Overlap:
    """The wrapped store's puts of ``ops``, started on a worker thread by :meth:`start` (called by
    the record transaction just before its COMMIT; at most once)."""

    def __init__(self, pool: ThreadPoolExecutor, inner: BaseStore, ops: list[PutOp]) -> None:
        self.pool, self.inner, self.ops = pool, inner, ops
        self.future: Future[list[Result]] | None = None

    def start(self) -> None:
        if self.future is None:
            self.future = self.pool.submit(self.inner.batch, self.ops)

    def results(self) -> list[Result]:
        assert self.future is not None
        return self.future.result()

    def undo(self) -> None:
        """The record failed after the puts started: wait for them, then delete the items (fail closed)."""
        assert self.future is not None
        try:
            self.future.result()
        finally:
            self.inner.batch([PutOp(op.namespace, op.key, None) for op in self.ops])


class WritePath(EventSync):
    """Recording puts (see the module docstring)."""

    _pool: ThreadPoolExecutor | None = None

    def _overlap(self, ops: list[PutOp]) -> Overlap | None:
        """An :class:`Overlap` of ``ops`` on PostgreSQL (a second durable commit to hide), else None."""
        if not is_postgres(self.inner):
            return None
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memsteward-langgraph-put")
        return Overlap(self._pool, self.inner, ops)

    def _put(self, op: PutOp) -> Result:
        """Record ``op``, then write it to the wrapped store (overlapped on PostgreSQL)."""
        overlap = self._overlap([op])
        try:
            how = self._record(op, overlap.start if overlap is not None else None)
        except BaseException:
            if overlap is not None and overlap.future is not None:
                overlap.undo()
            raise
        if overlap is not None and overlap.future is not None:
            return overlap.results()[0]
        if how == "corrected" or (how == "overwrite" and self.index_config):
            self.inner.batch([PutOp(op.namespace, op.key, None)])
        result = self.inner.batch([op])[0]
        if how == "corrected":
            self.scrub()
        return result

    def _put_run(self, ops: list[PutOp]) -> list[Result]:
        """Consecutive puts of one ``batch()``: when they are first-hand puts of distinct keys, each
        new or an overwrite without dependants (:meth:`_grouped`), they are recorded in ONE
        transaction (all or none) and written in one wrapped batch; otherwise one by one."""
        writes = self._grouped(ops) if len(ops) > 1 else None
        if writes is None:
            return [self._put(op) for op in ops]
        overlap = self._overlap(ops)
        try:
            self._record_writes(writes, overlap.start if overlap is not None else None)
        except BaseException:
            if overlap is not None and overlap.future is not None:
                overlap.undo()
            raise
        if overlap is not None and overlap.future is not None:
            return overlap.results()
        return self.inner.batch(ops)

    def _record_writes(self, writes: list[dict[str, Any]], before_commit: Callable[[], None] | None = None) -> None:
        """Record the artifacts of a run of puts (:meth:`_grouped`) in one transaction."""
        try:
            self.store.record_many(writes, reingest="refuse" if self.reingest == "refuse" else "allow",
                                   wait=self.write_wait, before_commit=before_commit)
        except WriteRefused as exc:
            raise GovernedWriteRefused.wrap(exc) from None

    def _record_run(self, ops: list[PutOp]) -> bool:
        """``abatch``'s half of :meth:`_put_run`: record a run of puts in one transaction when it can be
        (True; the caller then awaits their wrapped write), else False (they are put one by one)."""
        writes = self._grouped(ops) if len(ops) > 1 else None
        if writes is None:
            return False
        self._record_writes(writes)
        return True

    def _grouped(self, ops: list[PutOp]) -> list[dict[str, Any]] | None:
        """The artifacts of a run of puts that can be recorded together (None: put them one by one)."""
        addresses = [(tuple(op.namespace), op.key) for op in ops]
        if self.reingest == "review" or len(set(addresses)) != len(ops) or \
                any((op.value or {}).get(self.spec.provenance_field) for op in ops):
            return None
        current = self.latest(addresses)
        if current and self.index_config:  # an overwrite on an indexed store deletes the old vectors first
            return None
        live = [i for i, st in current.values() if st in SERVABLE_STATES]
        if live and self.store.reach(live) - set(live):  # an item with dependants: its put is a correct event
            return None
        prev = self.store.artifacts_of(live, content=False) if live else {}
        out: list[dict[str, Any]] = []
        for op, at in zip(ops, addresses):
            art = self._artifact(op, [])
            hit = current.get(at)
            if hit is None:
                ident = self.ids.of(at[0], at[1])
            elif hit[0] in prev and prev[hit[0]].kind == art["kind"]:
                ident = hit[0]
            else:  # withdrawn, erased or another kind: a new incarnation
                n = self.ids.incarnation(hit[0]) + 1
                if n > MAX_INCARNATIONS:
                    return None
                ident = self.ids.of(at[0], at[1], n)
            out.append({"id": ident, **art})
        return out

    @property
    def index_config(self) -> Any:
        return getattr(self.inner, "index_config", None)

    def _sources(self, value: Mapping[str, Any]) -> list[str]:
        field = self.spec.provenance_field
        raw = value.get(field, [])
        if not isinstance(raw, list) or len(raw) > MAX_SOURCES:
            raise InputError(f"'{field}' must be a list of at most {MAX_SOURCES} [namespace, key] pairs",
                             file="<langgraph put>", field=field)
        if not raw:  # a first-hand write: no sources to look up
            return []
        pairs: list[Address] = []
        for k, pair in enumerate(raw):
            if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[1], str)
                    and isinstance(pair[0], (list, tuple)) and all(isinstance(x, str) for x in pair[0])):
                raise InputError("a source is a [namespace, key] pair", file="<langgraph put>", field=f"{field}[{k}]")
            pairs.append((tuple(pair[0]), pair[1]))
        found = self._latest_ids(pairs)
        for k, a in enumerate(pairs):
            if a not in found:
                raise InputError(f"source {k} of '{field}' was never recorded", file="<langgraph put>",
                                 field=f"{field}[{k}]")
        return list(dict.fromkeys(found[a] for a in pairs))

    def _keys_erased(self, op: PutOp) -> bool:
        """Whether an object key of the put's value says content a delete event erased (the governed text
        is the value's strings; its keys that can say one, :func:`memsteward.textnorm.said_keys`, are
        checked here: one tombstone lookup, only when it has any)."""
        body = {k: v for k, v in (op.value or {}).items() if k not in (self.spec.provenance_field, self.spec.meta_field)}
        keys = said_keys(body)
        return bool(keys) and self.store.tombstone_of(dict.fromkeys(sorted(keys))) is not None

    def _artifact(self, op: PutOp, inputs: list[str]) -> dict[str, Any]:
        rule = "refuse" if self.reingest == "refuse" else "allow"
        if verdict(rule, not inputs, True) == "refuse" and self._keys_erased(op):
            raise GovernedWriteRefused("write refused: a key of its value says content a delete event erased",
                                       "tombstone", "<langgraph put>", "value")
        value = dict(op.value or {})
        named = value.get("kind")  # a kind the policy declares (paper or its own), never a skill here
        kind = named if isinstance(named, str) and named in self.policy.kinds and \
            self.policy.role(named) not in (None, "skill") else ("summary" if inputs else "record")
        meta = split_meta(value.get(self.spec.meta_field), self.declared_meta)
        meta[ADDRESS_KEY] = {"namespace": list(op.namespace), "key": op.key, "ttl": op.ttl is not None}
        if op.ttl is not None:  # the earliest the wrapped store may let it expire (its TTL is in minutes)
            meta[ADDRESS_KEY]["expires"] = round(time.time() + 60 * float(op.ttl), 3)
        return {"kind": kind, "content": artifact_content(value, self.spec), "meta": meta}

    def _record(self, op: PutOp, before_commit: Callable[[], None] | None = None) -> str:
        """Record a put (or run the correct event it is): ``"new"`` (no item at the key),
        ``"overwrite"`` (an item existed: its old vectors must not outlive its old value) or
        ``"corrected"`` (a correct event ran: the old value is erased, so its rows are scrubbed too).
        ``before_commit`` (the wrapped put, :class:`Overlap`) is passed to the record of a new item,
        and of an overwrite when the wrapped store has no index."""
        plain = before_commit if not self.index_config else None
        inputs = self._sources(op.value or {})
        art = self._artifact(op, inputs)
        current = self.latest([(op.namespace, op.key)]).get((op.namespace, op.key))
        if self.reingest == "review" and not inputs and (self.store.tombstone_of(art["content"], art["meta"]) is not None
                                                         or self._keys_erased(op)):
            art["meta"][REVIEW_KEY] = True
        if current is None:
            self._write({"id": self.ids.of(op.namespace, op.key), **art}, inputs, before_commit)
            return "new"
        ident, state = current
        prev = self.store.get(ident) if state in SERVABLE_STATES else None
        if prev is None or prev.kind != art["kind"]:  # withdrawn, erased or another kind: a new incarnation
            n = self.ids.incarnation(ident) + 1
            if n > MAX_INCARNATIONS:
                raise InputError(f"item re-created more than {MAX_INCARNATIONS} times", file="<langgraph put>")
            self._write({"id": self.ids.of(op.namespace, op.key, n), **art}, inputs, plain)
            return "overwrite"
        cascade = self.store.reach([ident])
        if cascade & set(inputs):
            raise GovernedWriteRefused(f"write refused: a source of {op.key!r} is derived from it (a provenance "
                                       "cycle)", "cycle", "<langgraph put>", self.spec.provenance_field)
        if len(cascade) > 1:
            self._correct(ident, art, inputs)
            return "corrected" if self.erase_corrected else "overwrite"
        self._write({"id": ident, **art}, inputs, plain)
        return "overwrite"

    def _write(self, artifact: dict[str, Any], inputs: list[str],
               before_commit: Callable[[], None] | None = None) -> None:
        try:
            self.store.record(artifact, inputs=inputs, reingest="refuse" if self.reingest == "refuse" else "allow",
                              wait=self.write_wait, before_commit=before_commit)
        except WriteRefused as exc:
            raise GovernedWriteRefused.wrap(exc) from None

    def _correct(self, ident: str, art: dict[str, Any], inputs: list[str]) -> None:
        """The overwrite of an item with dependants: a correct event, the dependants repaired. New
        sources are fenced first and recorded after (provenance only grows: an edge from an old
        source stays, so deleting it still repairs this item, which is safe). The correct event's
        record keeps the replacement's text (a known gap: docs/langgraph.md, Limits)."""
        fenced = [i for i in inputs if i not in set(self.store.servable(inputs))]
        if fenced:
            raise GovernedWriteRefused(f"write refused: a source of {art['meta'][ADDRESS_KEY]['key']!r} is not "
                                       "servable (under repair or deleted)", "fenced", "<langgraph put>",
                                       self.spec.provenance_field)
        dead = self.store.tombstone_of(art["content"], art["meta"]) is not None
        if verdict("refuse" if self.reingest == "refuse" else "allow", not inputs, dead) == "refuse":
            raise GovernedWriteRefused("write refused: its content was erased by a delete event", "tombstone",
                                       "<langgraph put>", "content")
        # the event record keeps its replacement: without the address (labels live only in version
        # metadata, which erasure nulls); the version recorded right after carries the address
        bare = {**art, "meta": {k: v for k, v in art["meta"].items() if k != ADDRESS_KEY}}
        doc: dict[str, Any] = {"type": "correct", "roots": [ident], "replacements": [{"id": ident, **bare}]}
        if self.erase_corrected:
            doc["privacy"] = True
        self._run(doc, skip=(ident,))
        self._write({"id": ident, **art}, inputs)

    def _approve(self, namespace: tuple[str, ...], key: str) -> None:
        current = self.latest([(namespace, key)]).get((namespace, key))
        art = self.store.get(current[0]) if current else None
        if art is None or not art.meta.get(REVIEW_KEY):
            raise InputError("no item held for review at this address", file="<langgraph approve>", field="key")
        meta = {k: v for k, v in art.meta.items() if k != REVIEW_KEY}
        inputs = [u for u, _ in self.store.parent_edges([art.id])]
        self.store.record({"id": art.id, "kind": art.kind, "content": art.content, "meta": meta}, inputs=inputs,
                          reingest="allow", wait=self.write_wait)
