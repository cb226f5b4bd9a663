"""The reference memory server's knowledge graph, kept as governed artifacts.

modelcontextprotocol/servers ``src/memory`` stores entities ``{name, entityType, observations}``
and relations ``{from, to, relationType}``. Here each is an artifact of kind ``record`` in the
tenant's namespace, so the same nine tools become governed (DESIGN, "Vocabulary"):

* an **entity** is an artifact with content ``{name, entityType}``;
* each **observation** is its own artifact (content: the text) with a semantic edge (E^sem) to
  its entity, so one observation can be deleted — and what was derived from it repaired —
  without touching the others;
* a **relation** is an artifact with content ``{from, to, relationType}`` and semantic edges to
  both entities. Relations are associations, not provenance: they are E^sem, retrieval only,
  never repair scope (MemoRepair §2.1).
* Influence edges E^inf come from ``record_memory``'s ``derived_from``: a summary written from
  observations is in their cascade, so deleting an observation repairs the summary.

Ids are random (``T:e-…``, ``T:o-…``, ``T:r-…``): no name or text is ever put in an id, because
ids outlive erasure. Deletions are MemoRepair delete events: ``delete_entities`` deletes the
entity, its observations and its relations in one event. Differences from the reference server,
all on purpose: a content that was deleted is tombstoned, so re-creating it is refused (the
re-ingest rule); ``create_relations`` refuses a relation whose entities do not exist (it needs
them for the semantic edges); results list observations in recording order.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from .. import Artifact
from .limits import ToolError
from .memory import GRAPH_KEY, TenantMemory

__all__ = ["Graph", "KnowledgeGraph"]

KnowledgeGraph = dict[str, list[dict[str, Any]]]


def _strings(value: Any, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ToolError("must be a list of strings", field)
    return value


def _relation_key(r: Mapping[str, Any]) -> tuple[str, str, str]:
    return (r["from"], r["to"], r["relationType"])


class Graph:
    """The knowledge graph of one tenant: read from the guarded view, written by the write path."""

    def __init__(self, memory: TenantMemory) -> None:
        self.memory = memory

    # ------------------------------------------------------------------ reading

    def _nodes(self) -> tuple[dict[str, Artifact], list[Artifact], list[Artifact]]:
        """(entities by name, observations, relations), servable only, in recording order."""
        arts = sorted((a for a in self.memory.served() if GRAPH_KEY in a.meta),
                      key=lambda a: (a.meta.get("order", 0), a.id))
        entities = {a.content["name"]: a for a in arts if a.meta[GRAPH_KEY] == "entity"}
        observations = [a for a in arts if a.meta[GRAPH_KEY] == "observation"]
        relations = [a for a in arts if a.meta[GRAPH_KEY] == "relation"]
        return entities, observations, relations

    def read(self, names: set[str] | None = None, query: str | None = None) -> KnowledgeGraph:
        """The whole graph, the entities named in ``names``, or those matching ``query`` (a
        case-insensitive substring of name, type or an observation); relations with at least one
        endpoint among the entities returned (as the reference server does)."""
        entities, observations, relations = self._nodes()
        texts: dict[str, list[str]] = {a.id: [] for a in entities.values()}
        for o in observations:
            texts.setdefault(o.meta["entity"], []).append(o.content)
        out = [{"name": n, "entityType": a.content["entityType"], "observations": texts[a.id]}
               for n, a in entities.items()]
        if names is not None:
            out = [e for e in out if e["name"] in names]
        if query is not None:
            q = query.lower()
            out = [e for e in out if q in e["name"].lower() or q in e["entityType"].lower()
                   or any(q in o.lower() for o in e["observations"])]
        kept = {e["name"] for e in out}
        rels = [dict(r.content) for r in relations]
        if names is not None or query is not None:
            rels = [r for r in rels if r["from"] in kept or r["to"] in kept]
        return {"entities": out, "relations": rels}

    # ------------------------------------------------------------------ writing

    def _write(self, tag: str, content: Any, meta: dict[str, Any], semantic: Sequence[str]) -> dict[str, Any]:
        meta = {GRAPH_KEY: tag, **meta, "order": time.time_ns()}
        return {"id": self.memory.tenant.mint(tag[0]), "kind": "record", "content": content, "meta": meta,
                "semantic": list(semantic)}

    def create_entities(self, entities: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Record the entities whose name is new (and their observations) in one transaction."""
        known, _, _ = self._nodes()
        writes: list[dict[str, Any]] = []
        created: list[dict[str, Any]] = []
        for k, e in enumerate(entities):
            if e["name"] in known:
                continue
            entity = self._write("entity", {"name": e["name"], "entityType": e["entityType"]}, {}, [])
            known[e["name"]] = Artifact(entity["id"], "record")
            obs = list(dict.fromkeys(_strings(e["observations"], f"entities[{k}].observations")))
            writes.append(entity)
            writes.extend(self._write("observation", o, {"entity": entity["id"]}, [entity["id"]]) for o in obs)
            created.append({"name": e["name"], "entityType": e["entityType"], "observations": obs})
        if writes:
            self.memory.store.record_many(writes)
        return created

    def create_relations(self, relations: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Record the relations not already present (both entities must exist)."""
        entities, _, present = self._nodes()
        seen = {_relation_key(r.content) for r in present}
        writes, created = [], []
        for k, r in enumerate(relations):
            key = _relation_key(r)
            if key in seen:
                continue
            for end in ("from", "to"):
                if r[end] not in entities:
                    raise ToolError("entity not found", f"relations[{k}].{end}")
            seen.add(key)
            ends = [entities[r["from"]].id, entities[r["to"]].id]
            content = {"from": r["from"], "to": r["to"], "relationType": r["relationType"]}
            writes.append(self._write("relation", content, {"from": ends[0], "to": ends[1]}, list(dict.fromkeys(ends))))
            created.append(content)
        if writes:
            self.memory.store.record_many(writes)
        return created

    def add_observations(self, observations: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Add each new observation text to its (existing) entity; all in one transaction."""
        entities, present, _ = self._nodes()
        have: dict[str, set[str]] = {}
        for o in present:
            have.setdefault(o.meta["entity"], set()).add(o.content)
        writes, results = [], []
        for k, item in enumerate(observations):
            entity = entities.get(item["entityName"])
            if entity is None:
                raise ToolError("entity not found", f"observations[{k}].entityName")
            added = []
            for text in _strings(item["contents"], f"observations[{k}].contents"):
                if text not in have.setdefault(entity.id, set()):
                    have[entity.id].add(text)
                    added.append(text)
                    writes.append(self._write("observation", text, {"entity": entity.id}, [entity.id]))
            results.append({"entityName": item["entityName"], "addedObservations": added})
        if writes:
            self.memory.store.record_many(writes)
        return results

    # ------------------------------------------------------------------ deleting (delete events)

    def delete_entities(self, names: list[str]) -> int | None:
        """One delete event: the entities, their observations and every relation touching them."""
        entities, observations, relations = self._nodes()
        doomed = {entities[n].id for n in names if n in entities}
        roots = [*doomed]
        roots += [o.id for o in observations if o.meta["entity"] in doomed]
        roots += [r.id for r in relations if r.meta["from"] in doomed or r.meta["to"] in doomed]
        return self._delete(roots)

    def delete_observations(self, deletions: list[dict[str, Any]]) -> int | None:
        """One delete event over the named observations (unknown ones are ignored, as upstream)."""
        entities, observations, _ = self._nodes()
        wanted: set[tuple[str, str]] = set()
        for k, d in enumerate(deletions):
            entity = entities.get(d["entityName"])
            if entity is not None:
                wanted.update((entity.id, t) for t in _strings(d["observations"], f"deletions[{k}].observations"))
        return self._delete([o.id for o in observations if (o.meta["entity"], o.content) in wanted])

    def delete_relations(self, relations: list[dict[str, Any]]) -> int | None:
        """One delete event over the named relations (unknown ones are ignored, as upstream)."""
        _, _, present = self._nodes()
        wanted = {_relation_key(r) for r in relations}
        return self._delete([r.id for r in present if _relation_key(r.content) in wanted])

    def _delete(self, roots: list[str]) -> int | None:
        plan = self.memory.delete(roots)
        if plan is None:
            return None
        event = self.memory.store.event()
        return int(event["id"]) if event is not None else None
