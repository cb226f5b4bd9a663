"""Checking a plan against its source, not only against itself (``verify --plan --store/--case``).

A plan is self-consistent by construction when the engine writes it — and a forger can keep it
self-consistent: drop a descendant from the cascade, the barrier and the candidates together;
point ``event.roots`` elsewhere; remove helpful memories after deleting ``harm_tolerance`` and
``empty_value``. These clauses recompute what the plan claims from where it came from:

* TransitionPlan, with the store: every root exists; C(F) = Reach(F; E^inf) over the store's
  influence edges (members added by the content scan must be reachable from a listed
  ``untracked`` artifact); every descendant has a candidate; the barrier is C(F); and λ and β are
  the ones of the policy the store recorded for this event (or of ``--policy``), never the plan's.
* ClearancePlan, with the case: the plan recomputed from the case with the policy's clearance
  settings (τ, κ, K, L … from the policy, not from the plan) decides the same removal, with the
  same v̂(∅), τ and κ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .certificates import Clause, _clause

if TYPE_CHECKING:
    from memsteward.store.api import Reader, Storage


def check_transition_source(doc: Mapping[str, Any], store: Storage, policy_doc: Mapping[str, Any] | None) -> list[Clause]:
    """Clauses of a TransitionPlan against a store (:class:`memsteward.store.api.Reader`)."""
    roots = list(doc["event"]["roots"])
    states = store.states()
    out = [_clause("G6", "every root of the event exists in the store", [r for r in roots if r not in states])]
    reach = set(store.reach([r for r in roots if r in states]))
    untracked = [i for i in doc.get("untracked", {}) if i in states]
    scanned = set(store.reach(untracked)) if untracked else set()
    cascade = set(doc["cascade"])
    out.append(_clause("G5", "C(F) contains Reach(F; E^inf) recomputed from the store's edges",
                       sorted(reach - cascade), witness=lambda i: {"missing_from_cascade": i}))
    out.append(_clause("G5", "C(F) contains nothing beyond Reach(F) and the content scan's matches",
                       sorted(cascade - reach - scanned), witness=lambda i: {"not_reachable": i}))
    cands = {c["id"] for c in doc["candidates"]}
    out.append(_clause("G4", "every descendant of the recomputed cascade has a candidate",
                       sorted((reach | scanned) - set(roots) - cands), witness=lambda i: {"no_candidate": i}))
    if doc.get("selector") != "no_action":
        out.append(_clause("G5", "the barrier is the recomputed C(F)",
                           sorted((reach | scanned) ^ set(doc["barrier"])), witness=lambda i: {"barrier_differs_at": i}))
    recorded = _recorded_policy(store, doc)
    pol = recorded if recorded is not None else policy_doc
    if pol is None:
        out.append(Clause("G4", "λ and β are the policy's", False,
                          {"reason": "no event in the store matches this plan and no --policy was given"}))
    else:
        sel = pol.get("selection", {})
        bad = [(k, doc.get(k), sel.get(k)) for k in ("tradeoff", "budget") if doc.get(k) != sel.get(k)]
        out.append(_clause("G4", "λ and β are the policy's" + (" (recorded with the event)" if recorded else ""),
                           bad, witness=lambda b: {"field": b[0], "plan": b[1], "policy": b[2]}))
    return out


def _recorded_policy(store: Reader, doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """The policy the store recorded with the event this plan describes (same event document)."""
    import json

    want = json.dumps(doc["event"], sort_keys=True)
    for eid in reversed(store.event_ids()):
        ev = store.event(eid)
        if ev is not None and json.dumps(ev["event"], sort_keys=True) == want:
            return ev["policy"]
    return None


def check_clearance_source(doc: Mapping[str, Any], recomputed: Mapping[str, Any]) -> list[Clause]:
    """Clauses of a ClearancePlan against the plan recomputed from its case and policy."""
    out = []
    for key in ("harm_tolerance", "screen_tolerance", "empty_value", "baseline_value"):
        if key in recomputed:
            out.append(_clause("G3", f"{key} is the one recomputed from the case and policy",
                               [] if doc.get(key) == recomputed[key] else [(doc.get(key), recomputed[key])],
                               witness=lambda b, k=key: {"field": k, "plan": b[0], "recomputed": b[1]}))
    for key in ("removed", "selected", "harmful"):
        a, b = doc.get(key), recomputed.get(key)
        norm = (lambda x: sorted(x) if isinstance(x, (list, tuple)) else x)  # noqa: E731
        out.append(_clause("G3", f"{key} is the one recomputed from the case and policy",
                           [] if norm(a) == norm(b) else [(a, b)],
                           witness=lambda v, k=key: {"field": k, "plan": v[0], "recomputed": v[1]}))
    return out
