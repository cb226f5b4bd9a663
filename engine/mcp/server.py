"""The MCP server: the tool table, the resources and the error rules on the official SDK.

Built on the SDK's low-level ``mcp.server.Server`` (we write every tool's JSON Schemas ourselves,
so they match the reference server's exactly). One call runs as: bounds check
(:func:`~memsteward.mcp.limits.check_arguments`) → JSON Schema check of the input → the handler
(synchronous: the store work of one call is never interleaved with another's on the event loop)
→ a result with both ``structuredContent`` and the same JSON as text.

Errors are tool results with ``isError`` (so the model sees them), with a message the server
wrote: a bound or schema rule and the argument's path, an engine refusal (``write refused
(reason)`` or the engine's own one-line message, escaped), or ``internal error`` for anything
unexpected — never the arguments' values, a traceback or a secret. Nothing is written when a
call fails: every write is one transaction and every event validates before its barrier.

Resources: ``memsteward://memory/{id}`` (each servable memory of the tenant, as JSON) and
``memsteward://attestation/{event_id}`` (each of the tenant's events' attestation).
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import quote, unquote

import mcp_types as types
from jsonschema import Draft202012Validator
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from .. import __version__
from ..api import attest
from ..errors import InputError, WriteRefused, printable
from .governed import Governed
from .graph import Graph
from .limits import MAX_RESULTS, ToolError, check_arguments, path_text
from .memory import TenantMemory
from .tools import TOOLS, Handlers

__all__ = ["build_server", "call"]

log = logging.getLogger("memsteward.mcp")
MEMORY_URI, ATTESTATION_URI = "memsteward://memory/", "memsteward://attestation/"
_VALIDATORS = {name: Draft202012Validator(spec.input_schema) for name, spec in TOOLS.items()}


def tool_definitions() -> list[types.Tool]:
    """Every tool as MCP lists it (input and output schema, annotations)."""
    return [types.Tool(name=t.name, title=t.title, description=t.description, input_schema=t.input_schema,
                       output_schema=t.output_schema, annotations=types.ToolAnnotations(
                           title=t.title, read_only_hint=t.read_only, destructive_hint=t.destructive,
                           idempotent_hint=t.idempotent, open_world_hint=False))
            for t in TOOLS.values()]


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def call(handlers: Handlers, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """Serve one tool call (the whole error policy of the server lives here)."""
    spec = TOOLS.get(name)
    if spec is None:
        return _error("unknown tool")
    try:
        args = check_arguments(arguments)
        problem = next(iter(sorted(_VALIDATORS[name].iter_errors(args), key=lambda e: list(e.path))), None)
        if problem is not None:
            raise ToolError(f"arguments do not match the input schema ({problem.validator} rule)",
                            path_text(tuple(problem.absolute_path)))
        out = spec.handler(handlers, args)
    except ToolError as exc:
        return _error(exc.render())
    except WriteRefused as exc:
        return _error(f"write refused ({printable(exc.reason)[:80]})")
    except InputError as exc:
        return _error(f"refused: {printable(exc.message)[:300]}" + (f" [{printable(exc.field)[:80]}]"
                                                                    if exc.field else ""))
    except Exception as exc:  # an engine fault: logged by type on the server's stderr, never sent
        log.error("tool %s failed: %s", name, type(exc).__name__)
        return _error("internal error (the server logged its type)")
    text = json.dumps(out, ensure_ascii=False, default=str)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=json.loads(text))


def _resources(handlers: Handlers) -> list[types.Resource]:
    memory = handlers.governed.memory
    out = [types.Resource(uri=MEMORY_URI + quote(a.id, safe=""), name=a.id, mime_type="application/json",
                          description=f"servable {a.kind}, version {a.version}")
           for a in memory.served()[:MAX_RESULTS]]
    out += [types.Resource(uri=f"{ATTESTATION_URI}{e}", name=f"attestation of event {e}",
                           mime_type="application/json") for e in memory.events(MAX_RESULTS)]
    return out


def _read(handlers: Handlers, uri: str) -> str:
    memory = handlers.governed.memory
    if uri.startswith(MEMORY_URI):
        ident = unquote(uri[len(MEMORY_URI):])
        if memory.tenant.owns(ident) and memory.store.servable([ident]):
            art = memory.store.get(ident)
            if art is not None:
                return json.dumps(art.as_dict(), ensure_ascii=False)
    elif uri.startswith(ATTESTATION_URI) and uri[len(ATTESTATION_URI):].isdigit() \
            and len(uri) - len(ATTESTATION_URI) <= 12:
        event_id = int(uri[len(ATTESTATION_URI):])
        if memory.event_owned(event_id) is not None:
            return json.dumps(attest(memory.store, event_id), ensure_ascii=False, default=str)
    raise MCPError(code=types.INVALID_PARAMS, message="unknown resource")


def build_server(memory: TenantMemory) -> Server[Any]:
    """The MCP server of one tenant's memory (run it with :mod:`memsteward.mcp.transports`)."""
    handlers = Handlers(Graph(memory), Governed(memory))

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_definitions())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return call(handlers, params.name, params.arguments)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=_resources(handlers))

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=MEMORY_URI + "{id}", name="memory", mime_type="application/json"),
            types.ResourceTemplate(uri_template=ATTESTATION_URI + "{event_id}", name="attestation",
                                   mime_type="application/json")])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, mime_type="application/json", text=_read(handlers, uri))])

    return Server("memsteward", version=__version__, instructions=(
        "Governed agent memory: the reference memory server's knowledge-graph tools, plus record_memory "
        "(with provenance), search_memories, forget_preview/forget_apply, correct_memory, attest, audit_log "
        "and clear_context. Deletions repair what was derived from the deleted memories."),
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_templates, on_read_resource=read_resource)
