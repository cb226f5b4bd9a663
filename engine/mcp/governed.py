"""The governed tools: what memsteward adds to an agent's memory beyond the reference server.

* ``record_memory`` — the write path with provenance: ``derived_from`` becomes influence edges
  E^inf (MemoRepair §2.1), fenced like every write (a withdrawn or erased source is refused).
* ``search_memories`` — the retrieval guard: servable artifacts only, at their served version.
* ``forget_preview`` / ``forget_apply`` — a delete event as a plan first: the preview runs the
  event on an in-memory copy (``apply_event(..., dry_run=True)``) and returns the cascade C(F),
  what is repaired (R_ρ, republished) and what is removed, and the plan digest
  ``sha256("memsteward.mcp.forget/1" ‖ canonical JSON of the plan)``. Apply recomputes the plan
  from the store as it is now and runs the event only if its digest equals the preview's: the
  event that runs is the one that was previewed, or nothing runs. (The check and the barrier
  run back to back inside one tool call; a writer in another process between the two could
  still change the store — the residual window is that one call.)
* ``correct_memory`` — a correct event (a new version of a root; its cascade repaired).
* ``attest`` / ``audit_log`` — the attestation of one event and the tenant's audit rows.
* ``clear_context`` — MeClear for one query's retrieved memories: the bank is never changed.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from ..api import attest, clear_context
from .limits import MAX_RESULTS, ToolError
from .memory import GRAPH_KEY, TenantMemory, text_of

if TYPE_CHECKING:
    from memsteward import TransitionPlan

__all__ = ["Governed", "plan_digest"]

DIGEST_DOMAIN = b"memsteward.mcp.forget/1\n"


def plan_digest(plan: TransitionPlan) -> str:
    """The digest a preview returns and apply checks: SHA-256 of the whole plan's canonical JSON."""
    body = json.dumps(plan.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(DIGEST_DOMAIN + body.encode("utf-8")).hexdigest()


def _summary(plan: TransitionPlan) -> dict[str, Any]:
    repaired = list(plan.republished)
    return {"roots": list(plan.event.roots), "cascade": list(plan.cascade), "repaired": repaired,
            "removed": [i for i in plan.barrier if i not in set(repaired)], "modes": dict(plan.modes)}


def _limit(value: Any, field: str, default: int) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_RESULTS:
        raise ToolError(f"must be an integer in 1..{MAX_RESULTS}", field)
    return value


class Governed:
    """The governed tools of one tenant (each method takes the checked arguments of one call)."""

    def __init__(self, memory: TenantMemory) -> None:
        self.memory = memory

    def record_memory(self, args: dict[str, Any]) -> dict[str, Any]:
        sources = self.memory.owned(args["derived_from"], "derived_from") if args.get("derived_from") else []
        kind = args.get("kind") or ("summary" if sources else "record")
        if kind not in self.memory.policy.kinds or self.memory.policy.role(kind) in (None, "skill"):
            raise ToolError("must be a kind the policy declares (not a skill: skills need an architecture)", "kind")
        meta = dict(args.get("meta") or {})
        if GRAPH_KEY in meta:
            raise ToolError(f"'{GRAPH_KEY}' is reserved for the knowledge-graph tools", "meta")
        ident = self.memory.tenant.mint("m")
        art = self.memory.store.record({"id": ident, "kind": kind, "content": args["content"], "meta": meta},
                                       inputs=sources)
        return {"id": art.id, "kind": art.kind, "version": art.version, "derived_from": sources}

    def search_memories(self, args: dict[str, Any]) -> dict[str, Any]:
        query = str(args.get("query", "")).lower()
        limit = _limit(args.get("limit"), "limit", 20)
        found = [a for a in self.memory.served() if query in text_of(a.content).lower()][:limit]
        return {"memories": [{"id": a.id, "kind": a.kind, "version": a.version, "content": a.content,
                              "meta": dict(a.meta), "state": a.state} for a in found]}

    def forget_preview(self, args: dict[str, Any]) -> dict[str, Any]:
        roots = self.memory.owned(args["ids"], "ids")
        plan = self.memory.run({"type": "delete", "roots": roots}, dry_run=True)
        return {"digest": plan_digest(plan), **_summary(plan)}

    def forget_apply(self, args: dict[str, Any]) -> dict[str, Any]:
        digest = args["digest"]
        roots = self.memory.owned(args["ids"], "ids")
        event = {"type": "delete", "roots": roots}
        if plan_digest(self.memory.run(event, dry_run=True)) != digest:
            raise ToolError("stale preview: the plan for these ids no longer matches the store "
                            "(it changed since forget_preview); run forget_preview again", "digest")
        plan = self.memory.run(event)
        return {"event_id": self._latest_event(), "digest": digest, **_summary(plan)}

    def correct_memory(self, args: dict[str, Any]) -> dict[str, Any]:
        (ident,) = self.memory.owned([args["id"]], "id")
        current = self.memory.store.get(ident)
        assert current is not None  # servable, checked above
        if GRAPH_KEY in current.meta:
            raise ToolError("a knowledge-graph node is changed with the graph tools", "id")
        meta = dict(args["meta"]) if isinstance(args.get("meta"), dict) else dict(current.meta)
        replacement = {"id": ident, "kind": current.kind, "content": args["content"], "meta": meta}
        if current.arch is not None:
            replacement["arch"] = current.arch
        event = {"type": "correct", "roots": [ident], "replacements": [replacement],
                 "privacy": bool(args.get("privacy", False))}
        plan = self.memory.run(event)
        return {"event_id": self._latest_event(), **_summary(plan)}

    def attest(self, args: dict[str, Any]) -> dict[str, Any]:
        event_id = args.get("event_id")
        if event_id is None:
            mine = self.memory.events(1)
            if not mine:
                raise ToolError("this tenant has no event yet", "event_id")
            event_id = mine[0]
        if not isinstance(event_id, int) or isinstance(event_id, bool) or event_id < 1 \
                or self.memory.event_owned(event_id) is None:
            raise ToolError("unknown event", "event_id")
        return attest(self.memory.store, event_id)

    def audit_log(self, args: dict[str, Any]) -> dict[str, Any]:
        limit = _limit(args.get("limit"), "limit", 100)
        after = args.get("after_seq", 0)
        if not isinstance(after, int) or isinstance(after, bool) or after < 0:
            raise ToolError("must be a non-negative integer", "after_seq")
        owns, mine = self.memory.tenant.owns, set(self.memory.events(MAX_RESULTS))
        rows = [r for r in self.memory.store.audit_log() if r["seq"] > after
                and (owns(r["artifact_id"]) if r["artifact_id"] else r["event_id"] in mine)]
        return {"entries": rows[:limit]}

    def clear_context(self, args: dict[str, Any]) -> dict[str, Any]:
        ids = self.memory.owned(args["memory_ids"], "memory_ids")
        arts = {a.id: a for a in self.memory.served() if a.id in set(ids)}
        context = [{"id": i, "text": text_of(arts[i].content)} for i in ids]
        case = {"query": args["query"], "reference": args.get("reference", ""), "context": context}
        plan = clear_context(case, self.memory.policy)
        return {"kept": list(plan.cleared_context), "removed": list(plan.removed), "recovered": plan.recovered,
                "baseline_value": plan.baseline_value, "cleared_value": plan.cleared_value,
                "method": plan.method}

    def _latest_event(self) -> int | None:
        mine = self.memory.events(1)
        return mine[0] if mine else None
