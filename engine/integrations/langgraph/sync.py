"""Bringing the wrapped store in line with an event: the writes a published plan implies.

A plan is a value, and so is the write-back computed from it (:func:`write_back`): for every
member of the barrier that is an adapter item's *latest* incarnation,

* a member that stays withdrawn or was erased → its item is deleted from the wrapped store;
* a republished successor → its item is deleted, then put again as :func:`~.values.rebuilt` from
  the successor (delete first: LangGraph's stores upsert vectors per field, so a put alone would
  keep the vector of a field the repaired value no longer has).

The addresses come from the artifacts' metadata read *before* the event (:func:`addresses`):
an erased version's metadata is nulled at publication.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...repair.artifacts import Artifact
from ...repair.plan import TransitionPlan
from ...store.api import Storage
from .values import ADDRESS_KEY

__all__ = ["Address", "Rewrite", "address_of", "addresses", "addresses_in", "write_back"]

Address = tuple[tuple[str, ...], str]


@dataclass(frozen=True)
class Rewrite:
    """One wrapped-store change: delete the item, then (when ``artifact`` is set) put its rebuilt value."""

    address: Address
    artifact: Artifact | None = None


def address_of(meta: Mapping[str, Any] | None) -> Address | None:
    """The (namespace, key) an artifact's metadata records, or None (not an adapter item, or erased)."""
    a = meta.get(ADDRESS_KEY) if meta else None
    if not isinstance(a, Mapping):
        return None
    ns, key = a.get("namespace"), a.get("key")
    if not (isinstance(ns, list) and all(isinstance(x, str) for x in ns) and isinstance(key, str)):
        return None
    return tuple(ns), key


def addresses(store: Storage, ids: Collection[str]) -> dict[str, Address]:
    """id → address of the adapter items among ``ids`` (read before an event nulls erased metadata)."""
    return addresses_in(store.artifacts_of(set(ids), content=False))


def addresses_in(arts: Mapping[str, Artifact]) -> dict[str, Address]:
    """id → address of the adapter items among ``arts``."""
    out: dict[str, Address] = {}
    for i, art in arts.items():
        a = address_of(art.meta)
        if a is not None:
            out[i] = a
    return out


def write_back(store: Storage, plan: TransitionPlan, known: Mapping[str, Address],
               latest: Callable[[Sequence[Address]], Mapping[Address, str]], skip: Collection[str] = ()) -> list[Rewrite]:
    """The wrapped-store changes a published ``plan`` implies (``skip``: ids the caller writes itself,
    e.g. a corrected root, whose new value is the put that caused the event)."""
    members = [i for i in plan.barrier if i in known and i not in skip]
    current = latest([known[i] for i in members])
    members = [i for i in members if current.get(known[i]) == i]  # older incarnations are not in the store
    republished = set(plan.republished)
    arts = store.artifacts_of([i for i in members if i in republished])
    return [Rewrite(known[i], arts.get(i) if i in republished else None) for i in members]
