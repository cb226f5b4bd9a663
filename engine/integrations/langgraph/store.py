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
  review); an item written around the adapter is never servable. ``list_namespaces`` lists only
  namespaces that hold an item ``get`` would serve (an emptied or erased namespace is not listed).
* ``delete`` is a MemoRepair delete event; the wrapped store is then brought in line
  (:mod:`.sync`): repaired values rebuilt whole, everything withdrawn or erased removed.
* :meth:`forget`, :meth:`sweep`, :meth:`approve` and :meth:`attest` are in :mod:`.forget`,
  :mod:`.ttl`, :mod:`.writes` and :mod:`.attest`.

The parts, one concept each, build on each other: the read guard and shared state
(:mod:`.guard`), events and the wrapped-store write-back (:mod:`.events`), the write path
(:mod:`.writes`), and here the ``BaseStore`` itself (construction, ``batch``/``abatch``).

The async methods never block the event loop: memsteward's work (the write path, the read guard,
events and their scrub) runs on a worker thread (``asyncio.to_thread``), one call at a time per
adapter (a lock: the memsteward store is one connection), and the wrapped store's own async calls
are awaited.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, cast

from langgraph.store.base import BaseStore, GetOp, Item, ListNamespacesOp, Op, PutOp, Result, SearchOp

from ...errors import InputError
from ...policy.model import Policy
from ...repair.artifacts import SERVABLE_STATES
from ...repair.closure import DEFAULT_BACKEND, preload
from ...repair.operators import OperatorRegistry, operators_for
from ...repair.oracles import OracleRegistry
from ...repair.reingest import REINGEST_RULES
from ...shred.deepscan import Needles
from ...store.api import Storage
from .guard import REVIEW_KEY
from .identity import ItemIds
from .physical import SNAPSHOT_WAIT
from .reembed import reembedding
from .values import ValueSpec
from .writes import WritePath

__all__ = ["REVIEW_KEY", "GovernedStore"]

log = logging.getLogger(__name__)
T = TypeVar("T")


def _declared_meta(policy: Policy) -> frozenset[str]:
    names = {m for k in policy.kinds.values() for m in k.meta}
    for w in (policy.selection.value, policy.selection.cost):
        if getattr(w, "from_meta", None):
            names.add(str(w.from_meta))
    return frozenset(names)


class GovernedStore(WritePath, BaseStore):
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
        self.fingerprints: dict[int, Needles] = {}
        self.ids = ItemIds.from_env(id_key)
        self.operators = operators
        self.registry = reembedding(operators or operators_for(policy), getattr(inner, "embeddings", None))
        self.oracles = oracles
        self.write_wait = write_wait
        self._lock = threading.RLock()  # one memsteward call at a time (sync callers and worker threads)
        preload(DEFAULT_BACKEND)  # not on an event's worker thread: its import would stall the event loop
        self.declared_meta = _declared_meta(policy)
        self.last_plan = None
        self.last_event_id: int | None = None
        self.last_preview = None
        self.last_scrub: dict[str, Any] = {}
        self.clean_through: int | None = None  # files rewritten, no older snapshot held, after this event
        self.supports_ttl = inner.supports_ttl
        self.ttl_config = inner.ttl_config
        self._ttl_stop = threading.Event()  # the running sweeper's own: a restart gets a new one
        self._ttl_sweeper: threading.Thread | None = None
        self._ttl_futures: list[concurrent.futures.Future[None]] = []
        self._ttl_lock = threading.Lock()  # start and stop one at a time (never held while sweeping)

    # ------------------------------------------------------------------ what LangGraph reads

    @property
    def embeddings(self) -> Any:
        return getattr(self.inner, "embeddings", None)

    # ------------------------------------------------------------------ forget, sweep, review, attest

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

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> concurrent.futures.Future[None]:
        """Run :meth:`sweep` every ``sweep_interval_minutes`` (else the wrapped store's
        ``ttl_config["sweep_interval_minutes"]``, else 5) on a daemon thread, as LangGraph's TTL stores
        do with their own ``sweep_ttl``: start this one, not the wrapped store's, so each expiry is a
        delete event here. Returns a future, done when the sweeper stops (:meth:`stop_ttl_sweeper`);
        cancelling it stops the sweeper. A store without TTL: a future already done."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        if not self.supports_ttl or not self.ttl_config:
            future.set_result(None)
            return future
        with self._ttl_lock:
            return self._start_sweeper(future, sweep_interval_minutes)

    def _start_sweeper(self, future: concurrent.futures.Future[None],
                       sweep_interval_minutes: float | None) -> concurrent.futures.Future[None]:
        running, stop = self._ttl_sweeper, self._ttl_stop
        if running is not None and running.is_alive() and not stop.is_set():  # one sweeper: this call joins it
            self._ttl_futures.append(future)
            future.add_done_callback(lambda f: stop.set() if f.cancelled() else None)
            return future
        # none running, or the last one told to stop (it may still finish a sweep): a new sweeper, with its
        # own stop flag and futures, so the old one's ending neither stops nor resolves this one
        stop, futures = threading.Event(), [future]
        self._ttl_stop, self._ttl_futures = stop, futures
        interval = 60 * float(sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5)

        def loop() -> None:
            try:
                while not stop.wait(interval):
                    try:
                        self.sweep()
                    except Exception:  # one failed sweep does not end the sweeper: the next one retries
                        log.exception("GovernedStore TTL sweep failed")
            finally:
                for f in list(futures):
                    if not f.done():  # a cancelled future is done already
                        f.set_result(None)

        self._ttl_sweeper = threading.Thread(target=loop, daemon=True, name="memsteward-ttl-sweeper")
        self._ttl_sweeper.start()
        future.add_done_callback(lambda f: stop.set() if f.cancelled() else None)
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper of :meth:`start_ttl_sweeper`; True when it stopped (or was not running)."""
        with self._ttl_lock:
            running = self._ttl_sweeper
            if running is None or not running.is_alive():
                return True
            self._ttl_stop.set()
        running.join(timeout)
        if running.is_alive():
            return False
        with self._ttl_lock:
            if self._ttl_sweeper is running:
                self._ttl_sweeper = None
        return True

    def approve(self, namespace: tuple[str, ...], key: str) -> None:
        """Release an item held for review (``reingest: review``): it becomes servable."""
        with self._lock:
            self._approve(tuple(namespace), key)

    # ------------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (sync): fenced writes, guarded reads, governed deletes."""
        with self._lock:
            return self._batch(ops)

    def _batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        todo, k = list(ops), 0
        while k < len(todo):
            op, k = todo[k], k + 1
            if isinstance(op, PutOp) and op.value is not None:  # a run of puts: recorded together when it can be
                run = [op]
                while k < len(todo) and isinstance(todo[k], PutOp) and cast(PutOp, todo[k]).value is not None:
                    run.append(cast(PutOp, todo[k]))
                    k += 1
                results.extend(self._put_run(run))
            elif isinstance(op, PutOp):
                self._delete(op.namespace, op.key)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, GetOp):
                item = cast("Item | None", self.inner.batch([op])[0])
                results.append(self._get_result(op, item))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._namespaces(op))
            else:
                raise TypeError(f"unknown LangGraph store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The async form of :meth:`batch`: the wrapped store's reads are awaited, memsteward's work
        (records, the read guard, events) runs off the event loop (:meth:`_off_loop`)."""
        results: list[Result] = []
        todo, k = list(ops), 0
        while k < len(todo):
            op, k = todo[k], k + 1
            if isinstance(op, PutOp) and op.value is not None:
                run = [op]  # a run of puts: recorded together when it can be, all or none, as batch() does
                while k < len(todo) and isinstance(todo[k], PutOp) and cast(PutOp, todo[k]).value is not None:
                    run.append(cast(PutOp, todo[k]))
                    k += 1
                grouped, events = await self._off_loop(self._with_last_event, self._record_run, run)
                if grouped:
                    results.extend(await self.inner.abatch(run))
                    if self.last_event_id != events:
                        await self._unwrite_unservable(run)
                else:
                    results.extend([await self._aput(p) for p in run])
            elif isinstance(op, SearchOp):
                results.append(await self._asearch(op))
            elif isinstance(op, GetOp):
                item = cast("Item | None", (await self.inner.abatch([op]))[0])
                results.append(await self._off_loop(self._get_result, op, item))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._anamespaces(op))
            else:
                results.extend(await self._off_loop(self._batch, [op]))
        return results

    async def _aput(self, op: PutOp) -> Result:
        """One put of :meth:`abatch`: recorded off the loop, then the wrapped write awaited."""
        how, events = await self._off_loop(self._with_last_event, self._record, op)
        if how == "corrected" or (how == "overwrite" and self.index_config):
            await self.inner.abatch([PutOp(op.namespace, op.key, None)])
        result = (await self.inner.abatch([op]))[0]
        if how == "corrected":
            await self._off_loop(self.scrub)
        if self.last_event_id != events:
            await self._unwrite_unservable([op])
        return result

    def _with_last_event(self, fn: Callable[..., T], *args: Any) -> tuple[T, int | None]:
        """``fn(*args)`` and the id of the last event this adapter ran, read under the same lock (a
        correct event the record ran is its own; one run after it, during the awaited write, is not)."""
        return fn(*args), self.last_event_id

    async def _unwrite_unservable(self, ops: Sequence[PutOp]) -> None:
        """After an awaited wrapped write, when this adapter ran an event meanwhile (its lock is not held
        across the await; a concurrent ``adelete`` of the key): the event may have withdrawn or erased
        what was recorded, and its write-back ran before this write landed. Such items are deleted from the
        wrapped store again, and its files scrubbed, so the write does not bring the text back."""
        addresses = [(tuple(op.namespace), op.key) for op in ops]
        found = await self._off_loop(self.latest, addresses)
        gone = [a for a in addresses if found.get(a, ("", "servable"))[1] not in SERVABLE_STATES]
        if gone:
            await self.inner.abatch([PutOp(ns, key, None) for ns, key in gone])
            await self._off_loop(self.scrub)

    def _get_result(self, op: GetOp, item: Item | None) -> Item | None:
        from .ttl import expired_item, reconcile_missing

        if item is None or (self.supports_ttl and expired_item(self.inner, op.namespace, op.key)):
            reconcile_missing(self, [(op.namespace, op.key)])
            return None
        return item if self._visible([item]) else None
