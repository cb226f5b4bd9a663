"""``GovernedStore``: any LangGraph ``BaseStore`` behind memsteward's write path, read guard and events.

``GovernedStore(inner, store, policy)`` is itself a ``BaseStore`` (``batch``/``abatch`` implement
every operation, as LangGraph requires; ``index_config``, ``supports_ttl``, ``ttl_config`` and
``embeddings`` are the wrapped store's):

* ``put`` records the item first (content: the governed text of the whole value,
  :mod:`.values`; provenance: the value's ``derived_from``; the value's ``meta`` as the artifact's
  metadata), with write fencing and the re-ingest rule (:mod:`memsteward.repair.reingest`), then
  writes it to the wrapped store. A put on a key whose item has dependants is a ``correct`` event:
  the dependants are repaired against the new value.
* ``get`` / ``search`` return only items whose latest incarnation is servable (and not held for
  review); an item written around the adapter is never servable. ``list_namespaces`` passes through.
* ``delete`` is a MemoRepair delete event; the wrapped store is then brought in line
  (:mod:`.sync`): repaired values rebuilt whole, everything withdrawn or erased removed.
* :meth:`forget`, :meth:`sweep`, :meth:`approve` and :meth:`attest` are in :mod:`.forget`,
  :mod:`.ttl`, here and :mod:`.attest`.

The async methods never block the event loop: memsteward's work (the write path, the read guard,
events and their scrub) runs on a worker thread (``asyncio.to_thread``), one call at a time per
adapter (a lock: the memsteward store is one connection), and the wrapped store's own async calls
are awaited.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from langgraph.store.base import BaseStore, GetOp, Item, ListNamespacesOp, Op, PutOp, Result, SearchOp

from ...errors import InputError, WriteRefused
from ...policy.model import Policy
from ...repair.artifacts import SERVABLE_STATES, Artifact
from ...repair.closure import DEFAULT_BACKEND, preload
from ...repair.erasure import fingerprints
from ...repair.events import parse_event
from ...repair.execute import run_event
from ...repair.operators import OperatorRegistry, operators_for
from ...repair.oracles import OracleRegistry
from ...repair.plan import TransitionPlan
from ...repair.reingest import REINGEST_RULES, verdict
from ...repair.writes import content_digest
from ...store.api import Storage
from .errors import GovernedWriteRefused
from .identity import MAX_INCARNATIONS, ItemIds
from .physical import SNAPSHOT_WAIT, scrub
from .reembed import precomputed, reembedding, vectors_of
from .sync import Address, Rewrite, addresses_in, write_back
from .values import ADDRESS_KEY, ValueSpec, artifact_content, rebuilt, split_meta

__all__ = ["REVIEW_KEY", "GovernedStore"]

T = TypeVar("T")

REVIEW_KEY = "lg_review"
"""artifact meta flag of a first-hand re-ingestion held for review (``reingest: review``)."""
MAX_SOURCES = 10_000


def _declared_meta(policy: Policy) -> frozenset[str]:
    names = {m for k in policy.kinds.values() for m in k.meta}
    for w in (policy.selection.value, policy.selection.cost):
        if getattr(w, "from_meta", None):
            names.add(str(w.from_meta))
    return frozenset(names)


class GovernedStore(BaseStore):
    """A LangGraph ``BaseStore`` whose writes are recorded and fenced and whose reads are guarded.

    Parameters
    ----------
    inner : the wrapped LangGraph store (``InMemoryStore()``, ``SqliteStore(conn)``, ``PostgresStore(conn)``).
    store : the memsteward store holding provenance (``memsteward.open_store(path)``).
    policy : the policy events run under (``memsteward.load_policy(path)``).
    fields : JSON paths of the governed content (LangGraph ``index`` syntax); None: the policy's
        ``adapter.fields``, and when it names none, every string.
    provenance_field, meta_field : the value's provenance list and metadata object (None: the
        policy's ``adapter`` section, ``derived_from`` and ``meta`` by default).
    reingest : ``"allow"``, ``"refuse"`` or ``"review"`` (:mod:`memsteward.repair.reingest`); None:
        the policy's ``adapter.reingest``, else ``"allow"``.
    erase_corrected : a correction erases the superseded content (a privacy correct event).
    scrub_files : after each event, rewrite the wrapped store's files without the deleted rows.
    snapshot_wait : seconds a PostgreSQL scrub waits for older snapshots of the database to end
        (:mod:`.physical`: a snapshot older than a delete keeps its rows through ``VACUUM FULL``).
    id_key : the key of the opaque ids (:mod:`.identity`; default ``MEMSTEWARD_ID_KEY``).
    operators, oracles : repair-operator and validation-oracle registries (the policy's by default).
    write_wait : seconds a put that has to wait for a running event (``busy``) is retried before it
        is refused (None: ``MEMSTEWARD_WRITE_WAIT``, default 30); other puts go on during events.

    Examples
    --------
    >>> from langgraph.store.memory import InMemoryStore
    >>> import memsteward
    >>> gs = GovernedStore(InMemoryStore(), memsteward.open_store(),
    ...                    memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml")))
    >>> gs.put(("mem",), "n1", {"content": "Alice lives in Paris"})
    >>> gs.put(("mem",), "n2", {"content": "Alice likes tea"})
    >>> gs.put(("mem",), "s", {"content": "Alice lives in Paris. Alice likes tea", "facts": ["Paris"],
    ...                        "derived_from": [[["mem"], "n1"], [["mem"], "n2"]]})
    >>> gs.delete(("mem",), "n1")
    >>> gs.get(("mem",), "n1") is None, gs.get(("mem",), "s").value
    (True, {'content': 'Alice likes tea', 'derived_from': [[['mem'], 'n2']]})
    """

    def __init__(self, inner: BaseStore, store: Storage, policy: Policy, *, fields: Sequence[str] | None = None,
                 provenance_field: str | None = None, meta_field: str | None = None, reingest: str | None = None,
                 erase_corrected: bool = True, scrub_files: bool = True, snapshot_wait: float = SNAPSHOT_WAIT,
                 id_key: bytes | str | None = None,
                 operators: OperatorRegistry | None = None, oracles: OracleRegistry | None = None,
                 write_wait: float | None = None) -> None:
        declared = policy.adapter  # the policy's `adapter:` section; arguments given here take precedence
        reingest = reingest or declared.reingest or "allow"
        if fields is None and declared.fields:
            fields = declared.fields
        if reingest not in REINGEST_RULES:
            raise InputError(f"reingest must be one of {', '.join(REINGEST_RULES)}", file="<GovernedStore>",
                             field="reingest")
        self.inner = inner
        self.store = store
        self.policy = policy
        self.spec = ValueSpec(tuple(fields) if fields is not None else None,
                              provenance_field or declared.provenance_field, meta_field or declared.meta_field)
        self.reingest = reingest
        self.erase_corrected = erase_corrected
        self.scrub_files = scrub_files
        self.snapshot_wait = snapshot_wait
        self.fingerprints: dict[int, list[bytes]] = {}
        self.ids = ItemIds.from_env(id_key)
        self.operators = operators
        self.registry = reembedding(operators or operators_for(policy), getattr(inner, "embeddings", None))
        self.oracles = oracles
        self.write_wait = write_wait
        self._lock = threading.RLock()  # one memsteward call at a time (sync callers and worker threads)
        preload(DEFAULT_BACKEND)  # not on an event's worker thread: its import would stall the event loop
        self.declared_meta = _declared_meta(policy)
        self.last_plan: TransitionPlan | None = None
        self.last_event_id: int | None = None
        self.last_scrub: dict[str, Any] = {}
        self.clean_through: int | None = None  # files rewritten, no older snapshot held, after this event
        self.supports_ttl = inner.supports_ttl
        self.ttl_config = inner.ttl_config

    # ------------------------------------------------------------------ what LangGraph reads

    @property
    def index_config(self) -> Any:
        return getattr(self.inner, "index_config", None)

    @property
    def embeddings(self) -> Any:
        return getattr(self.inner, "embeddings", None)

    def artifact_id(self, namespace: tuple[str, ...], key: str) -> str | None:
        """The memsteward id of the item's latest incarnation (None: never recorded)."""
        found = self.latest([(tuple(namespace), key)]).get((tuple(namespace), key))
        return found[0] if found else None

    # ------------------------------------------------------------------ identity

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

    # ------------------------------------------------------------------ write path

    def _sources(self, value: Mapping[str, Any]) -> list[str]:
        field = self.spec.provenance_field
        raw = value.get(field, [])
        if not isinstance(raw, list) or len(raw) > MAX_SOURCES:
            raise InputError(f"'{field}' must be a list of at most {MAX_SOURCES} [namespace, key] pairs",
                             file="<langgraph put>", field=field)
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

    def _artifact(self, op: PutOp, inputs: list[str]) -> dict[str, Any]:
        value = dict(op.value or {})
        named = value.get("kind")  # a kind the policy declares (paper or its own), never a skill here
        kind = named if isinstance(named, str) and named in self.policy.kinds and \
            self.policy.role(named) not in (None, "skill") else ("summary" if inputs else "record")
        meta = split_meta(value.get(self.spec.meta_field), self.declared_meta)
        meta[ADDRESS_KEY] = {"namespace": list(op.namespace), "key": op.key, "ttl": op.ttl is not None}
        return {"kind": kind, "content": artifact_content(value, self.spec), "meta": meta}

    def _record(self, op: PutOp) -> str:
        """Record a put (or run the correct event it is): ``"new"`` (no item at the key),
        ``"overwrite"`` (an item existed: its old vectors must not outlive its old value) or
        ``"corrected"`` (a correct event ran: the old value is erased, so its rows are scrubbed too)."""
        inputs = self._sources(op.value or {})
        art = self._artifact(op, inputs)
        current = self.latest([(op.namespace, op.key)]).get((op.namespace, op.key))
        if self.reingest == "review" and not inputs and self.store.is_tombstoned(content_digest(art["content"])):
            art["meta"][REVIEW_KEY] = True
        if current is None:
            self._write({"id": self.ids.of(op.namespace, op.key), **art}, inputs)
            return "new"
        ident, state = current
        prev = self.store.get(ident) if state in SERVABLE_STATES else None
        if prev is None or prev.kind != art["kind"]:  # withdrawn, erased or another kind: a new incarnation
            n = self.ids.incarnation(ident) + 1
            if n > MAX_INCARNATIONS:
                raise InputError(f"item re-created more than {MAX_INCARNATIONS} times", file="<langgraph put>")
            self._write({"id": self.ids.of(op.namespace, op.key, n), **art}, inputs)
            return "overwrite"
        cascade = self.store.reach([ident])
        if cascade & set(inputs):
            raise GovernedWriteRefused(f"write refused: a source of {op.key!r} is derived from it (a provenance "
                                       "cycle)", "cycle", "<langgraph put>", self.spec.provenance_field)
        if len(cascade) > 1:
            self._correct(ident, art, inputs)
            return "corrected" if self.erase_corrected else "overwrite"
        self._write({"id": ident, **art}, inputs)
        return "overwrite"

    def _write(self, artifact: dict[str, Any], inputs: list[str]) -> None:
        try:
            self.store.record(artifact, inputs=inputs, reingest="refuse" if self.reingest == "refuse" else "allow",
                              wait=self.write_wait)
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
        dead = self.store.is_tombstoned(content_digest(art["content"]))
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

    # ------------------------------------------------------------------ events

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
        """Keep the fingerprints of what the latest event erased (for :meth:`attest`)."""
        event = self.store.event()
        if event is None:
            return
        self.last_event_id = int(event["id"])
        gone = self.store.unservable_of(list(before))
        erased = [a.content for i, a in before.items() if gone.get(i) == "erased"]
        if corrected and self.erase_corrected:
            erased += [before[r].content for r in event["event"]["roots"] if r in before]
        pieces = [p for c in erased for p in (c.split("\n") if isinstance(c, str) else [c])]
        self.fingerprints[int(event["id"])] = fingerprints(erased + pieces)

    def scrub(self) -> dict[str, Any]:
        """Rewrite the wrapped store's files without deleted rows (:func:`.physical.scrub`)."""
        out = scrub(self.inner, self.snapshot_wait) if self.scrub_files else {"vacuum": False}
        clean = out.get("backend") == "postgresql" and out.get("vacuum") and not out.get("held_by")
        self.clean_through = self.last_event_id if clean else None
        self.last_scrub = out
        return out

    def attest(self, event_id: int | None = None) -> dict[str, Any]:
        """The event's attestation, extended to the wrapped store (:func:`.attest.attest`)."""
        from .attest import attest

        with self._lock:
            return attest(self, event_id)

    def preview_forget(self, namespace_prefix: tuple[str, ...]) -> Any:
        """The dry run of :meth:`forget`: plan and digest, nothing changed (:func:`.forget.preview`)."""
        from .forget import preview

        with self._lock:
            return preview(self, tuple(namespace_prefix))

    def forget(self, namespace_prefix: tuple[str, ...], expect: str | None = None) -> dict[str, Any]:
        """One delete event over every item under the prefix (:func:`.forget.forget`)."""
        from .forget import forget

        with self._lock:
            return forget(self, tuple(namespace_prefix), expect)

    def sweep(self) -> list[str]:
        """Sweep the wrapped store's expired items and erase them here too (:func:`.ttl.sweep`)."""
        from .ttl import sweep

        with self._lock:
            return sweep(self)

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
        servable = set(self.store.servable([i for i in self._latest_ids(self._pairs(old)).values()]))
        latest = self._latest_ids(self._pairs(old))

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

    def approve(self, namespace: tuple[str, ...], key: str) -> None:
        """Release an item held for review (``reingest: review``): it becomes servable."""
        with self._lock:
            self._approve(tuple(namespace), key)

    def _approve(self, namespace: tuple[str, ...], key: str) -> None:
        current = self.latest([(namespace, key)]).get((namespace, key))
        art = self.store.get(current[0]) if current else None
        if art is None or not art.meta.get(REVIEW_KEY):
            raise InputError("no item held for review at this address", file="<langgraph approve>", field="key")
        meta = {k: v for k, v in art.meta.items() if k != REVIEW_KEY}
        inputs = [u for u, _ in self.store.parent_edges([art.id])]
        self.store.record({"id": art.id, "kind": art.kind, "content": art.content, "meta": meta}, inputs=inputs,
                          reingest="allow", wait=self.write_wait)

    # ------------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (sync): fenced writes, guarded reads, governed deletes."""
        with self._lock:
            return self._batch(ops)

    def _batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, PutOp) and op.value is None:
                self._delete(op.namespace, op.key)
                results.append(None)
            elif isinstance(op, PutOp):
                how = self._record(op)
                if how == "corrected" or (how == "overwrite" and self.index_config):
                    self.inner.batch([PutOp(op.namespace, op.key, None)])
                results.append(self.inner.batch([op])[0])
                if how == "corrected":
                    self.scrub()
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, GetOp):
                item = cast("Item | None", self.inner.batch([op])[0])
                results.append(self._get_result(op, item))
            elif isinstance(op, ListNamespacesOp):
                results.append(self.inner.batch([op])[0])
            else:
                raise TypeError(f"unknown LangGraph store operation {type(op).__name__}")
        return results

    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a worker thread, under the adapter's lock: the event loop goes on meanwhile."""
        def locked() -> T:
            with self._lock:
                return fn(*args)
        return await asyncio.to_thread(locked)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The async form of :meth:`batch`: the wrapped store's reads are awaited, memsteward's work
        (records, the read guard, events) runs off the event loop (:meth:`_off_loop`)."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, SearchOp):
                results.append(await self._asearch(op))
            elif isinstance(op, GetOp):
                item = cast("Item | None", (await self.inner.abatch([op]))[0])
                results.append(await self._off_loop(self._get_result, op, item))
            elif isinstance(op, ListNamespacesOp):
                results.append((await self.inner.abatch([op]))[0])
            elif isinstance(op, PutOp) and op.value is not None:
                how = await self._off_loop(self._record, op)
                if how == "corrected" or (how == "overwrite" and self.index_config):
                    await self.inner.abatch([PutOp(op.namespace, op.key, None)])
                results.append((await self.inner.abatch([op]))[0])
                if how == "corrected":
                    await self._off_loop(self.scrub)
            else:
                results.extend(await self._off_loop(self._batch, [op]))
        return results

    def _get_result(self, op: GetOp, item: Item | None) -> Item | None:
        from .ttl import expired_item, reconcile_missing

        if item is None or (self.supports_ttl and expired_item(self.inner, op.namespace, op.key)):
            reconcile_missing(self, [(op.namespace, op.key)])
            return None
        return item if self._visible([item]) else None

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
