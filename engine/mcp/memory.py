"""The one tenant's view of a store that every MCP tool works through.

:class:`TenantMemory` binds a store, a policy and a :class:`~memsteward.mcp.tenant.Tenant`. Reads
go through the retrieval guard (``Store.serve``/``servable``: only servable artifacts, at their
served version) and keep only the tenant's ids; events go through :func:`memsteward.apply_event`
after the cascade C(F) = Reach(F; E^inf) is checked to stay inside the tenant. A tool never
reaches the store any other way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..api import apply_event
from .limits import MAX_ITEMS, ToolError
from .tenant import Tenant

if TYPE_CHECKING:  # the public names: the store's module may move (issue 26), these stay
    from memsteward import Artifact, Policy, Store, TransitionPlan

__all__ = ["GRAPH_KEY", "TenantMemory", "text_of"]

GRAPH_KEY = "mcp_graph"
"""meta[GRAPH_KEY] ∈ {entity, observation, relation} marks the knowledge-graph artifacts."""


def text_of(content: Any) -> str:
    """The searchable text of a content: itself when a string, else its canonical JSON.

    >>> text_of({"b": 1, "a": "x"})
    '{"a": "x", "b": 1}'
    """
    return content if isinstance(content, str) else json.dumps(content, sort_keys=True, ensure_ascii=False)


@dataclass
class TenantMemory:
    """A store seen by one tenant: guarded reads, tenant-checked ids, events under one policy."""

    store: Store
    policy: Policy
    tenant: Tenant

    def served(self) -> list[Artifact]:
        """The tenant's servable artifacts (O(store): the guard's whole view, filtered by prefix)."""
        prefix = self.tenant.prefix
        return [a for a in self.store.serve() if a.id.startswith(prefix)]

    def memories(self) -> list[Artifact]:
        """The tenant's servable artifacts that are not knowledge-graph nodes."""
        return [a for a in self.served() if GRAPH_KEY not in a.meta]

    def owned(self, ids: Any, field: str, *, servable: bool = True) -> list[str]:
        """``ids`` checked to be a list of the tenant's ids (servable ones when ``servable``).

        An id of another tenant is refused exactly as an unknown id is, so a caller learns
        nothing about other tenants."""
        if not isinstance(ids, list) or not ids or len(ids) > MAX_ITEMS:
            raise ToolError(f"must be a list of 1-{MAX_ITEMS} memory ids", field)
        out: list[str] = []
        for k, ident in enumerate(ids):
            if not self.tenant.owns(ident):
                raise ToolError("unknown memory id", f"{field}[{k}]")
            out.append(ident)
        if servable:
            ok = set(self.store.servable(out))
            for k, ident in enumerate(out):
                if ident not in ok:
                    raise ToolError("unknown memory id (never recorded, withdrawn or erased)", f"{field}[{k}]")
        return list(dict.fromkeys(out))

    def check_cascade(self, roots: Iterable[str]) -> None:
        """Refuse an event whose cascade C(F) would reach an artifact outside the tenant."""
        if any(not self.tenant.owns(i) for i in self.store.reach(list(roots))):
            raise ToolError("the cascade of these memories reaches another tenant's memory; refused")

    def run(self, event: Mapping[str, Any], *, dry_run: bool = False) -> TransitionPlan:
        """Run (or, with ``dry_run``, plan and simulate) an event on the tenant's roots."""
        self.check_cascade(event["roots"])
        return apply_event(self.store, self.policy, event, dry_run=dry_run)

    def delete(self, roots: Sequence[str]) -> TransitionPlan | None:
        """One delete event over ``roots`` (None when there is nothing to delete)."""
        return self.run({"type": "delete", "roots": list(roots)}) if roots else None

    def event_owned(self, event_id: int) -> dict[str, Any] | None:
        """The stored event ``event_id`` when all its roots are the tenant's, else None."""
        doc = self.store.event(event_id)
        if doc is None:
            return None
        roots = (doc.get("event") or {}).get("roots") or []
        return doc if roots and all(self.tenant.owns(r) for r in roots) else None

    def events(self, limit: int) -> list[int]:
        """The ids of the tenant's events, newest first (at most ``limit``, scanning at most
        ``limit`` × 10 events back from the latest)."""
        latest = self.store.event()
        if latest is None:
            return []
        out: list[int] = []
        ident = int(latest["id"])
        while ident > 0 and len(out) < limit and int(latest["id"]) - ident < limit * 10:
            if self.event_owned(ident) is not None:
                out.append(ident)
            ident -= 1
        return out
