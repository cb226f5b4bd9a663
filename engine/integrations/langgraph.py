"""A governed LangGraph store: any ``BaseStore`` behind memsteward's write and read guards.

``GovernedStore(inner, store, policy)`` is itself a LangGraph ``BaseStore`` (sync and async;
``batch``/``abatch`` implement every operation, as LangGraph requires):

* ``put`` records the item in the memsteward ``store`` first — content is ``value["content"]``
  when that is a string, else the whole value; provenance is read from ``value["derived_from"]``,
  a list of ``[namespace, key]`` pairs of items it was derived from — with write fencing (a
  withdrawn / erased source, or the content of a deleted item, raises ``WriteRefused``), then
  writes the item to the wrapped store. An item with ``derived_from`` is a ``summary``, one
  without a ``record``, unless ``value["kind"]`` names another memsteward kind.
* ``get`` / ``search`` return only items whose artifact is servable (an item written to the
  wrapped store behind the adapter's back is never servable); ``search`` keeps ``limit`` and
  ``offset`` over the servable items. ``list_namespaces`` passes through (namespaces are labels,
  not content).
* ``delete`` runs a MemoRepair delete event under the policy: the barrier hides the cascade at
  once, repaired successors are written back into the wrapped store, and the deleted item and every
  member of the cascade that stays withdrawn are removed from the wrapped store — the deleted
  content is gone from it, not only hidden.

Artifact ids are ``json.dumps([*namespace, key])``; an item re-created after it was deleted or
withdrawn gets a new incarnation ``<id>#2``, ``#3``… (memsteward never records a withdrawn or
erased id again). The async methods run memsteward's SQLite work on the event loop's thread
(it is local and short; the wrapped store's own async calls are awaited).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

try:
    from langgraph.store.base import BaseStore, GetOp, Item, ListNamespacesOp, Op, PutOp, Result, SearchOp
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("memsteward.integrations.langgraph needs LangGraph: pip install 'memsteward[langgraph]'") from exc

from ..errors import InputError
from ..policy.model import Policy
from ..repair.artifacts import SERVABLE_STATES
from ..repair.closure import DEFAULT_BACKEND
from ..repair.events import parse_event
from ..repair.execute import run_event
from ..repair.operators import OperatorRegistry
from ..repair.oracles import OracleRegistry
from ..repair.plan import TransitionPlan
from ..repair.store import Store

__all__ = ["PROVENANCE_FIELD", "TEXT_FIELD", "GovernedStore", "artifact_id", "item_address"]

PROVENANCE_FIELD = "derived_from"
"""value[PROVENANCE_FIELD] = [[namespace, key], …]: the items this one was derived from."""
TEXT_FIELD = "content"
"""value[TEXT_FIELD] (a string) is the artifact's content; otherwise the whole value is."""
MAX_INCARNATIONS = 10_000


def artifact_id(namespace: tuple[str, ...], key: str, incarnation: int = 1) -> str:
    """The memsteward id of a LangGraph item (``incarnation`` > 1 after it was re-created).

    Examples
    --------
    >>> artifact_id(("notes", "alice"), "n1")
    '["notes", "alice", "n1"]'
    >>> artifact_id(("notes",), "n1", 2)
    '["notes", "n1"]#2'
    """
    base = json.dumps([*namespace, key], ensure_ascii=False)
    return base if incarnation == 1 else f"{base}#{incarnation}"


def item_address(ident: str) -> tuple[tuple[str, ...], str] | None:
    """(namespace, key) of an adapter's artifact id, or None for an id it did not make.

    Examples
    --------
    >>> item_address(artifact_id(("notes", "alice"), "n1", 3))
    (('notes', 'alice'), 'n1')
    >>> item_address("n1") is None
    True
    """
    base = ident.rsplit("#", 1)[0] if ident.endswith("]") is False and "#" in ident else ident
    try:
        parts = json.loads(base)
    except ValueError:
        return None
    if not (isinstance(parts, list) and len(parts) >= 2 and all(isinstance(p, str) for p in parts)):
        return None
    return tuple(parts[:-1]), parts[-1]


class GovernedStore(BaseStore):
    """A LangGraph ``BaseStore`` whose writes are recorded and fenced and whose reads are guarded.

    Parameters
    ----------
    inner : the wrapped LangGraph store (e.g. ``InMemoryStore()``, ``SqliteStore(conn)``).
    store : the memsteward store holding provenance (``memsteward.open_store(path)``).
    policy : the policy delete events run under (``memsteward.load_policy(path)``).
    operators, oracles : optional repair-operator and validation-oracle registries for delete
        events (as for :func:`memsteward.repair.execute.run_event`); the policy's defaults otherwise.

    Examples
    --------
    >>> from langgraph.store.memory import InMemoryStore
    >>> import memsteward
    >>> gs = GovernedStore(InMemoryStore(), memsteward.open_store(),
    ...                    memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml")))
    >>> gs.put(("mem",), "n1", {"content": "Alice lives in Paris"})
    >>> gs.put(("mem",), "n2", {"content": "Alice likes tea"})
    >>> gs.put(("mem",), "s", {"content": "Alice lives in Paris. Alice likes tea",
    ...                        "derived_from": [[["mem"], "n1"], [["mem"], "n2"]]})
    >>> gs.delete(("mem",), "n1")
    >>> gs.get(("mem",), "n1") is None, gs.get(("mem",), "s").value["content"]
    (True, 'Alice likes tea')
    """

    def __init__(self, inner: BaseStore, store: Store, policy: Policy, *, operators: OperatorRegistry | None = None,
                 oracles: OracleRegistry | None = None) -> None:
        self.inner = inner
        self.store = store
        self.policy = policy
        self.operators = operators
        self.oracles = oracles
        self.last_plan: TransitionPlan | None = None
        self.supports_ttl = inner.supports_ttl
        self.ttl_config = inner.ttl_config

    # ------------------------------------------------------------------ identity

    def _current(self, namespace: tuple[str, ...], key: str) -> tuple[str | None, int]:
        """(latest recorded incarnation's id or None, its number)."""
        found, n = None, 0
        while n < MAX_INCARNATIONS and self.store.get(artifact_id(namespace, key, n + 1)) is not None:
            n += 1
            found = artifact_id(namespace, key, n)
        return found, n

    def _visible(self, items: list[Any]) -> list[Any]:
        ids = [self._current(tuple(it.namespace), it.key)[0] or "" for it in items]
        ok = set(self.store.servable([i for i in ids if i]))
        return [it for it, i in zip(items, ids) if i in ok]

    # ------------------------------------------------------------------ write path

    def _record(self, op: PutOp) -> None:
        value = dict(op.value or {})
        sources = value.get(PROVENANCE_FIELD, [])
        if not isinstance(sources, list):
            raise InputError(f"'{PROVENANCE_FIELD}' must be a list of [namespace, key] pairs",
                             file="<langgraph put>", field=PROVENANCE_FIELD)
        inputs = []
        for k, pair in enumerate(sources):
            if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[1], str)
                    and isinstance(pair[0], (list, tuple)) and all(isinstance(x, str) for x in pair[0])):
                raise InputError("a source is a [namespace, key] pair", file="<langgraph put>",
                                 field=f"{PROVENANCE_FIELD}[{k}]")
            src, _ = self._current(tuple(pair[0]), pair[1])
            if src is None:
                raise InputError(f"source {list(pair[0])}/{pair[1]} was never recorded", file="<langgraph put>",
                                 field=f"{PROVENANCE_FIELD}[{k}]")
            inputs.append(src)
        text = value.get(TEXT_FIELD)
        content = text if isinstance(text, str) else {k: v for k, v in value.items() if k != PROVENANCE_FIELD}
        named = value.get("kind")  # a kind the policy declares (paper or its own), never a skill here
        kind = named if isinstance(named, str) and named in self.policy.kinds and \
            self.policy.role(named) not in (None, "skill") else ("summary" if inputs else "record")
        current, n = self._current(op.namespace, op.key)
        if current is not None and self.store.get(current).state not in SERVABLE_STATES:  # type: ignore[union-attr]
            current, n = None, n + 1
        ident = current or artifact_id(op.namespace, op.key, max(n, 1))
        prev = self.store.get(ident)
        if prev is not None and prev.kind != kind:  # a kind change starts a new incarnation
            ident = artifact_id(op.namespace, op.key, n + 1)
        self.store.record({"id": ident, "kind": kind, "content": content},
                          inputs=list(dict.fromkeys(inputs)))

    def _delete_event(self, namespace: tuple[str, ...], key: str) -> list[tuple[str, PutOp]]:
        """Run the delete event; return the wrapped-store writes that bring it in line."""
        ident, _ = self._current(namespace, key)
        if ident is None or self.store.get(ident).state == "erased":  # type: ignore[union-attr]
            return [(ident or "", PutOp(namespace, key, None))]
        event = parse_event({"type": "delete", "roots": [ident]}, self.store)
        plan = run_event(self.store, self.policy, event, backend=DEFAULT_BACKEND, operators=self.operators,
                         oracles=self.oracles)
        self.last_plan = plan
        writes: list[tuple[str, PutOp]] = [(ident, PutOp(namespace, key, None))]
        republished = set(plan.republished)
        for i in plan.barrier:
            address = item_address(i)
            if i == ident or address is None or self._current(*address)[0] != i:
                continue  # the root, an artifact not written by an adapter, or an older incarnation
            art = self.store.get(i)
            back = {"content": art.content} if i in republished and art is not None else None
            writes.append((i, PutOp(address[0], address[1], back)))
        return writes

    def _write_back(self, writes: list[tuple[str, PutOp]], existing: Mapping[tuple, Any]) -> list[PutOp]:
        out = []
        for _ident, op in writes:
            if op.value is None:
                out.append(op)
                continue
            old = existing.get((op.namespace, op.key))
            value = dict(old.value) if old is not None else {}
            value[TEXT_FIELD] = op.value["content"]
            if isinstance(value.get(PROVENANCE_FIELD), list):
                value[PROVENANCE_FIELD] = [p for p in value[PROVENANCE_FIELD]
                                           if self.store.servable([self._current(tuple(p[0]), p[1])[0] or ""])]
            out.append(PutOp(op.namespace, op.key, value))
        return out

    # ------------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (sync): fenced writes, guarded reads, governed deletes."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, PutOp) and op.value is None:
                writes = self._delete_event(op.namespace, op.key)
                existing = {(w.namespace, w.key): self.inner.get(w.namespace, w.key)
                            for _, w in writes if w.value is not None}
                self.inner.batch(self._write_back(writes, existing))
                results.append(None)
            elif isinstance(op, PutOp):
                self._record(op)
                results.append(self.inner.batch([op])[0])
            elif isinstance(op, SearchOp):
                results.append(self._search(op, lambda o: self.inner.batch([o])[0]))
            elif isinstance(op, GetOp):
                item = self.inner.batch([op])[0]
                results.append(item if item is not None and self._visible([item]) else None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self.inner.batch([op])[0])
            else:
                raise TypeError(f"unknown LangGraph store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The async form of :meth:`batch` (the wrapped store's calls are awaited)."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, PutOp) and op.value is None:
                writes = self._delete_event(op.namespace, op.key)
                existing = {}
                for _, w in writes:
                    if w.value is not None:
                        existing[(w.namespace, w.key)] = (await self.inner.abatch([GetOp(w.namespace, w.key)]))[0]
                await self.inner.abatch(self._write_back(writes, existing))
                results.append(None)
            elif isinstance(op, PutOp):
                self._record(op)
                results.append((await self.inner.abatch([op]))[0])
            elif isinstance(op, SearchOp):
                results.append(await self._asearch(op))
            elif isinstance(op, GetOp):
                item = (await self.inner.abatch([op]))[0]
                results.append(item if item is not None and self._visible([item]) else None)
            elif isinstance(op, ListNamespacesOp):
                results.append((await self.inner.abatch([op]))[0])
            else:
                raise TypeError(f"unknown LangGraph store operation {type(op).__name__}")
        return results

    def _search(self, op: SearchOp, run: Any) -> list[Item]:
        """Page through the wrapped store until ``offset + limit`` servable items are found."""
        want, page, start, seen = op.offset + op.limit, max(2 * (op.offset + op.limit), 20), 0, []
        while len(seen) < want:
            batch = run(op._replace(limit=page, offset=start))
            seen += self._visible(list(batch))
            if len(batch) < page:
                break
            start += page
        return seen[op.offset:want]

    async def _asearch(self, op: SearchOp) -> list[Item]:
        want, page, start, seen = op.offset + op.limit, max(2 * (op.offset + op.limit), 20), 0, []
        while len(seen) < want:
            batch = (await self.inner.abatch([op._replace(limit=page, offset=start)]))[0]
            seen += self._visible(list(batch))
            if len(batch) < page:
                break
            start += page
        return seen[op.offset:want]
