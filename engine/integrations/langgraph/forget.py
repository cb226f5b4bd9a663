"""Forget a namespace: one delete event over every item under a namespace prefix.

``preview(gs, prefix)`` plans it without changing anything and returns the plan with its digest
(SHA-256 of the plan's canonical JSON). ``forget(gs, prefix, expect=digest)`` plans again, refuses
when the digest differs (the store changed since the preview: preview again), executes the plan,
brings the wrapped store in line (every item under the prefix removed, including items written
around the adapter; dependants elsewhere repaired or removed), scrubs the wrapped store's files and
returns the plan, its digest and the attestation (:mod:`.attest`).

A preview is kept by the adapter with the store's generation (the last audit sequence number: every
committed change of the store appends an audit row) read before it was planned. When ``forget`` finds
the store at that generation, under the same policy and prefix, nothing has changed since the
preview, so its plan is the plan computed now and is executed as it is, without planning it again;
otherwise the plan is computed again and its digest compared.

The roots are found by id prefix (:mod:`.identity`): every incarnation under the prefix that is not
erased yet, servable or withdrawn, so an older withdrawn incarnation's content is erased too. The
erased versions' metadata, which held the namespace labels, is nulled at publication; the ids that
remain in the audit chain are keyed hashes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import InputError
from ...repair.closure import DEFAULT_BACKEND
from ...repair.events import parse_event
from ...repair.execute import execute
from ...repair.plan import TransitionPlan, compute_plan
from ...repair.writes import content_digest
from .physical import raw_items
from .sync import addresses_in, write_back

if TYPE_CHECKING:
    from .store import GovernedStore

__all__ = ["ForgetPreview", "forget", "preview"]

MAX_FORGET = 100_000
"""Limit on the artifacts one forget may erase (a larger namespace: forget its sub-namespaces)."""


@dataclass(frozen=True)
class ForgetPreview:
    """A planned forget: nothing has changed yet."""

    prefix: tuple[str, ...]
    roots: tuple[str, ...]
    plan: TransitionPlan | None
    digest: str

    def as_dict(self) -> dict[str, Any]:
        return {"roots": len(self.roots), "digest": self.digest,
                "plan": self.plan.to_json() if self.plan is not None else None}


def _roots(gs: GovernedStore, prefix: tuple[str, ...]) -> list[str]:
    if not prefix or not all(isinstance(p, str) and p for p in prefix):
        raise InputError("a namespace prefix is a non-empty tuple of non-empty labels", file="<forget>",
                         field="namespace_prefix")
    found = gs.store.ids_with_prefix(gs.ids.prefix(tuple(prefix)), MAX_FORGET + 1)
    if len(found) > MAX_FORGET:
        raise InputError(f"more than {MAX_FORGET} artifacts under this prefix: forget its sub-namespaces",
                         file="<forget>", field="namespace_prefix")
    return [i for i, state in found if state != "erased"]


def _plan(gs: GovernedStore, prefix: tuple[str, ...]) -> ForgetPreview:
    roots = _roots(gs, prefix)
    if not roots:
        return ForgetPreview(tuple(prefix), (), None, content_digest({"roots": []}))
    event = parse_event({"type": "delete", "roots": roots}, gs.store, file="<forget>")
    plan = compute_plan(gs.policy, gs.store, event, "mincut", DEFAULT_BACKEND, gs._operators())
    return ForgetPreview(tuple(prefix), tuple(roots), plan, content_digest(plan.to_json()))


def preview(gs: GovernedStore, prefix: tuple[str, ...]) -> ForgetPreview:
    """The dry run: the plan and its digest; the store and the wrapped store are untouched."""
    generation = gs.store.generation()
    planned = _plan(gs, prefix)
    gs.last_preview = (generation, gs.policy, planned)
    return planned


def _current(gs: GovernedStore, prefix: tuple[str, ...], generation: int) -> ForgetPreview:
    """The plan of a forget now: the kept preview's when the store is still at its generation
    (nothing committed since), under the same policy and prefix; else planned again."""
    kept, gs.last_preview = gs.last_preview, None
    if kept is not None and kept[0] == generation and kept[1] is gs.policy and kept[2].prefix == tuple(prefix):
        return kept[2]
    return _plan(gs, prefix)


def forget(gs: GovernedStore, prefix: tuple[str, ...], expect: str | None = None) -> dict[str, Any]:
    """Apply a forget (see the module docstring); ``expect`` is the preview's digest.

    Raises
    ------
    InputError
        ``expect`` differs from the digest of the plan computed now (nothing changed), the prefix
        is malformed, or it holds more than :data:`MAX_FORGET` artifacts.
    """
    generation = gs.store.generation()
    planned = _current(gs, prefix, generation)
    if expect is not None and expect != planned.digest:
        raise InputError("the store changed since the preview (plan digest differs): preview again",
                         file="<forget>", field="expect")
    event_id = None
    if planned.plan is not None:
        before = gs.store.artifacts_of(planned.plan.cascade)
        plan = execute(gs.store, gs.policy, planned.plan, gs._operators(), gs.oracles, generation)
        gs.last_plan = plan
        gs._apply(write_back(gs.store, plan, addresses_in(before), gs._latest_ids))
        gs.remember_erased(before, corrected=False)
        event = gs.store.event()
        event_id = event["id"] if event else None
    from langgraph.store.base import PutOp

    leftovers = [(tuple(it.namespace), it.key) for it in raw_items(gs.inner, tuple(prefix))]
    for start in range(0, len(leftovers), 500):
        gs.inner.batch([PutOp(ns, k, None) for ns, k in leftovers[start:start + 500]])
    gs.scrub()
    attestation = gs.attest(event_id) if event_id is not None else {"ok": True, "event_id": None}
    return {"roots": len(planned.roots), "digest": planned.digest, "event_id": event_id,
            "plan": gs.last_plan.to_json() if planned.plan is not None and gs.last_plan else None,
            "attestation": attestation}
