"""The tool table: every tool's name, schemas, annotations and handler, in one place.

The first nine are the reference memory server's tools (modelcontextprotocol/servers
``src/memory/index.ts``), with the same names, input schemas and output schemas, so a client set
up for that server works unchanged; ``proofs_tests/data/mcp_reference_memory_tools.json`` holds
a copy of the reference's and a test compares them. The rest are the governed tools
(:mod:`memsteward.mcp.governed`). Every tool has an ``outputSchema`` and the MCP annotations
(``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .governed import Governed
from .graph import Graph
from .limits import MAX_RESULTS

__all__ = ["TOOLS", "ToolSpec", "Handlers"]

Schema = dict[str, Any]


def _obj(properties: Schema, required: list[str] | None = None) -> Schema:
    return {"type": "object", "properties": properties, "required": list(properties) if required is None else required}


def _str(description: str = "") -> Schema:
    return {"type": "string", "description": description} if description else {"type": "string"}


def _arr(items: Schema, description: str = "") -> Schema:
    out: Schema = {"type": "array", "items": items}
    if description:
        out["description"] = description
    return out


ENTITY = _obj({"name": _str("The name of the entity"), "entityType": _str("The type of the entity"),
               "observations": _arr(_str(), "An array of observation contents associated with the entity")})
RELATION = _obj({"from": _str("The name of the entity where the relation starts"),
                 "to": _str("The name of the entity where the relation ends"),
                 "relationType": _str("The type of the relation")})
GRAPH = _obj({"entities": _arr(ENTITY), "relations": _arr(RELATION)})
DONE = _obj({"success": {"type": "boolean"}, "message": _str()})
ANY: Schema = {}
IDS = _arr(_str(), "Memory ids (as returned by record_memory or search_memories)")
PLAN = {"roots": _arr(_str()), "cascade": _arr(_str()), "repaired": _arr(_str()), "removed": _arr(_str()),
        "modes": {"type": "object", "additionalProperties": _str()}}
MEMORY = _obj({"id": _str(), "kind": _str(), "version": {"type": "integer"}, "content": ANY,
               "meta": {"type": "object"}, "state": _str()})
EVENT_ID = {"type": ["integer", "null"]}


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its MCP definition and the handler that serves it."""

    name: str
    title: str
    description: str
    input_schema: Schema
    output_schema: Schema
    read_only: bool
    destructive: bool
    idempotent: bool
    handler: Callable[[Handlers, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Handlers:
    """What a handler reaches: the tenant's graph and governed tools."""

    graph: Graph
    governed: Governed


def _deleted(message: str) -> Callable[[int | None], dict[str, Any]]:
    def out(event_id: int | None) -> dict[str, Any]:
        tail = f" (memsteward event {event_id})" if event_id is not None else " (nothing matched)"
        return {"success": True, "message": message + tail}
    return out


_ENTITIES_DELETED = _deleted("Entities deleted successfully")
_OBSERVATIONS_DELETED = _deleted("Observations deleted successfully")
_RELATIONS_DELETED = _deleted("Relations deleted successfully")

REFERENCE = [
    ToolSpec("create_entities", "Create Entities", "Create multiple new entities in the knowledge graph",
             _obj({"entities": _arr(ENTITY)}), _obj({"entities": _arr(ENTITY)}), False, False, False,
             lambda h, a: {"entities": h.graph.create_entities(a["entities"])}),
    ToolSpec("create_relations", "Create Relations", "Create multiple new relations between entities in the "
             "knowledge graph. Relations should be in active voice",
             _obj({"relations": _arr(RELATION)}), _obj({"relations": _arr(RELATION)}), False, False, False,
             lambda h, a: {"relations": h.graph.create_relations(a["relations"])}),
    ToolSpec("add_observations", "Add Observations", "Add new observations to existing entities in the knowledge graph",
             _obj({"observations": _arr(_obj({
                 "entityName": _str("The name of the entity to add the observations to"),
                 "contents": _arr(_str(), "An array of observation contents to add")}))}),
             _obj({"results": _arr(_obj({"entityName": _str(), "addedObservations": _arr(_str())}))}),
             False, False, False, lambda h, a: {"results": h.graph.add_observations(a["observations"])}),
    ToolSpec("delete_entities", "Delete Entities", "Delete multiple entities and their associated relations from the "
             "knowledge graph (a memsteward delete event: what was derived from them is repaired)",
             _obj({"entityNames": _arr(_str(), "An array of entity names to delete")}), DONE, False, True, True,
             lambda h, a: _ENTITIES_DELETED(h.graph.delete_entities(a["entityNames"]))),
    ToolSpec("delete_observations", "Delete Observations", "Delete specific observations from entities in the "
             "knowledge graph (a memsteward delete event: what was derived from them is repaired)",
             _obj({"deletions": _arr(_obj({
                 "entityName": _str("The name of the entity containing the observations"),
                 "observations": _arr(_str(), "An array of observations to delete")}))}), DONE, False, True, True,
             lambda h, a: _OBSERVATIONS_DELETED(h.graph.delete_observations(a["deletions"]))),
    ToolSpec("delete_relations", "Delete Relations", "Delete multiple relations from the knowledge graph",
             _obj({"relations": _arr(RELATION, "An array of relations to delete")}), DONE, False, True, True,
             lambda h, a: _RELATIONS_DELETED(h.graph.delete_relations(a["relations"]))),
    ToolSpec("read_graph", "Read Graph", "Read the entire knowledge graph", _obj({}), GRAPH, True, False, True,
             lambda h, a: h.graph.read()),
    ToolSpec("search_nodes", "Search Nodes", "Search for nodes in the knowledge graph based on a query",
             _obj({"query": _str("The search query to match against entity names, types, and observation content")}),
             GRAPH, True, False, True, lambda h, a: h.graph.read(query=a["query"])),
    ToolSpec("open_nodes", "Open Nodes", "Open specific nodes in the knowledge graph by their names",
             _obj({"names": _arr(_str(), "An array of entity names to retrieve")}), GRAPH, True, False, True,
             lambda h, a: h.graph.read(names=set(a["names"]))),
]

GOVERNED = [
    ToolSpec("record_memory", "Record Memory", "Record a memory with its provenance: derived_from lists the memories "
             "it was built from (a summary of them, say), so deleting one of those repairs it",
             _obj({"content": {"description": "The memory: a string or any JSON value"},
                   "kind": {"type": "string", "maxLength": 64, "description": "A kind the server's policy "
                            "declares, not a skill: record (the default), summary (the default when derived_from "
                            "is given), cache, or a kind of your own policy"},
                   "meta": {"type": "object", "description": "Metadata the policy may read (e.g. transform)"},
                   "derived_from": IDS}, ["content"]),
             _obj({"id": _str(), "kind": _str(), "version": {"type": "integer"}, "derived_from": _arr(_str())}),
             False, False, False, lambda h, a: h.governed.record_memory(a)),
    ToolSpec("search_memories", "Search Memories", "Search the servable memories (withdrawn or erased ones are never "
             "returned): a case-insensitive substring of their text; an empty query lists them",
             _obj({"query": _str("Text to look for"),
                   "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS}}, ["query"]),
             _obj({"memories": _arr(MEMORY)}), True, False, True, lambda h, a: h.governed.search_memories(a)),
    ToolSpec("forget_preview", "Preview a Deletion", "Plan the deletion of memories without changing anything: the "
             "cascade of what was derived from them, what will be repaired and what removed, and the plan digest "
             "that forget_apply needs", _obj({"ids": IDS}),
             _obj({"digest": _str(), **PLAN}), True, False, True, lambda h, a: h.governed.forget_preview(a)),
    ToolSpec("forget_apply", "Apply a Deletion", "Delete memories exactly as previewed: refused unless the digest "
             "from forget_preview still matches the plan the store gives now",
             _obj({"ids": IDS, "digest": _str("The digest forget_preview returned")}),
             _obj({"event_id": EVENT_ID, "digest": _str(), **PLAN}), False, True, True,
             lambda h, a: h.governed.forget_apply(a)),
    ToolSpec("correct_memory", "Correct a Memory", "Replace a memory's content with a corrected version (a correct "
             "event: what was derived from it is repaired); privacy=true also erases the old content",
             _obj({"id": _str("The memory id"), "content": {"description": "The corrected content"},
                   "meta": {"type": "object"}, "privacy": {"type": "boolean"}}, ["id", "content"]),
             _obj({"event_id": EVENT_ID, **PLAN}), False, True, False, lambda h, a: h.governed.correct_memory(a)),
    ToolSpec("attest", "Attest an Event", "The attestation of one deletion or correction event (the tenant's latest "
             "when event_id is omitted): what was withdrawn, republished from which support, erased; ok when "
             "every check passes", _obj({"event_id": {"type": "integer", "minimum": 1}}, []),
             {"type": "object", "properties": {"ok": {"type": "boolean"}, "event": {"type": "object"},
                                               "checks": ANY}, "required": ["ok", "event"]},
             True, False, True, lambda h, a: h.governed.attest(a)),
    ToolSpec("audit_log", "Audit Log", "The tenant's rows of the store's append-only audit log (digests, never "
             "content)", _obj({"limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS},
                               "after_seq": {"type": "integer", "minimum": 0}}, []),
             _obj({"entries": _arr({"type": "object"})}), True, False, True, lambda h, a: h.governed.audit_log(a)),
    ToolSpec("clear_context", "Clear a Context", "MeClear for one query: which of the retrieved memories to leave "
             "out of this query's context; the memory bank is never changed",
             _obj({"query": _str("The query"), "reference": _str("The expected answer, if known"),
                   "memory_ids": IDS}, ["query", "memory_ids"]),
             _obj({"kept": _arr(_str()), "removed": _arr(_str()), "recovered": {"type": "boolean"},
                   "baseline_value": {"type": "number"}, "cleared_value": {"type": "number"}, "method": _str()}),
             True, False, True, lambda h, a: h.governed.clear_context(a)),
]

TOOLS: dict[str, ToolSpec] = {t.name: t for t in (*REFERENCE, *GOVERNED)}
