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

from collections.abc import Callable, Mapping
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
    # a descendant in mode remove is withdrawn for good: it has no candidate (no successor is built)
    cands = {c["id"] for c in doc["candidates"]} | {i for i, m in doc.get("modes", {}).items() if m == "remove"}
    out.append(_clause("G4", "every descendant of the recomputed cascade has a candidate (or mode remove)",
                       sorted((reach | scanned) - set(roots) - cands), witness=lambda i: {"no_candidate": i}))
    if doc.get("selector") != "no_action":
        out.append(_clause("G5", "the barrier is the recomputed C(F)",
                           sorted((reach | scanned) ^ set(doc["barrier"])), witness=lambda i: {"barrier_differs_at": i}))
    event = _recorded_event(store, doc)
    recorded = None if event is None else event["policy"]
    pol = recorded if recorded is not None else policy_doc
    if event is not None:  # what the chained audit log withdrew: no member of C(F) can be dropped
        withdrawn = {r["artifact_id"] for r in store.audit_log() if r["event_id"] == event["id"]
                     and r["action"] == "withdraw"}
        out.append(_clause("G5", "the barrier is the C(F) the audit log withdrew for this event",
                           sorted(withdrawn ^ set(doc["barrier"])) if doc.get("selector") != "no_action" else [],
                           witness=lambda i: {"barrier_differs_from_audit_at": i}))
    elif pol is not None:
        missed = _rescanned(doc, store, pol, reach) - cascade
        out.append(_clause("G5", "C(F) contains every match of the content scan recomputed on the store",
                           sorted(missed), witness=lambda i: {"untracked_missing": i}))
    if pol is None:
        out.append(Clause("G4", "λ and β are the policy's", False,
                          {"reason": "no event in the store matches this plan and no --policy was given"}))
    else:
        sel = pol.get("selection", {})
        bad = [(k, doc.get(k), sel.get(k)) for k in ("tradeoff", "budget") if doc.get(k) != sel.get(k)]
        out.append(_clause("G4", "λ and β are the policy's" + (" (recorded with the event)" if recorded else ""),
                           bad, witness=lambda b: {"field": b[0], "plan": b[1], "policy": b[2]}))
    return out


def _event_key(event: Mapping[str, Any], digest: Callable[[Any], str]) -> str:
    """An event document compared by what it says: a replacement by id, kind, arch and content digest,
    a migrate interface by root and digest, whether given whole (a plan) or as the reference the store
    keeps (``stored_version``, ``interface_refs``). ``digest`` is the store's digest of a content
    (keyed in a sealed store), the one its references hold."""
    import json

    out = dict(event)
    reps = [{"id": o["id"], "kind": o["kind"], "arch": o.get("arch"),
             "sha256": o["sha256"] if "stored_version" in o else digest(o.get("content"))}
            for o in event.get("replacements", [])]
    if reps:
        out["replacements"] = reps
    if "interface" in out or "interface_refs" in out:
        roots = list(event["roots"])
        whole = out.pop("interface", None)
        given = {} if whole is None else (dict(whole) if len(roots) > 1 else {roots[0]: whole})
        digests = {r: digest(i) for r, i in given.items()}
        digests.update({r: ref["sha256"] for r, ref in (out.pop("interface_refs", None) or {}).items()})
        out["interface_sha256"] = digests
    return json.dumps(out, sort_keys=True)


def _recorded_event(store: Reader, doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """The event the store recorded that this plan describes (same event), with its policy."""
    want = _event_key(doc["event"], store.digest_of)
    for eid in reversed(store.event_ids()):
        ev = store.event(eid)
        if ev is not None and _event_key(ev["event"], store.digest_of) == want:
            return ev
    return None


def _rescanned(doc: Mapping[str, Any], store: Storage, pol: Mapping[str, Any], reach: set[str]) -> set[str]:
    """The content scan (:mod:`memsteward.repair.lineage`) recomputed on the store with the policy's
    settings, for a plan the store has not run (a dry run): the roots still hold their text."""
    from memsteward.repair.lineage import untracked

    ev = doc["event"]
    lin = pol.get("lineage", {})
    if not lin.get("content_scan", True) or not (ev["type"] == "delete" or (ev["type"] == "correct"
                                                                          and ev.get("privacy"))):
        return set()
    n, m = int(lin.get("shingle_words", 8)), int(lin.get("min_shared", 1))
    arts = store.artifacts_of(ev["roots"])
    roots = {r: a.content for r, a in arts.items() if a.state != "erased" and a.content is not None}
    if not roots:
        return set()
    found = untracked(roots, ((i, c) for i, c in store.shingle_candidates(roots, n) if i not in reach), n, m)
    return set(store.reach(list(found)))


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
