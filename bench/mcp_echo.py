"""A bare MCP server with one tool, ``echo`` (its arguments back as structured content): the
reference of ``bench/mcp_roundtrip.py``. It is served by memsteward's own transports
(:mod:`memsteward.mcp.transports`), so the two servers differ only in what the tool does.

    python -m bench.mcp_echo stdio | http
"""

from __future__ import annotations

import json
import sys
from typing import Any

import mcp_types as types
from mcp.server import Server

from memsteward.mcp.transports import run_http, run_stdio

TOOL = types.Tool(name="echo", description="Return the arguments", input_schema={"type": "object"},
                  output_schema={"type": "object"})


def echo_server() -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[TOOL])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = dict(params.arguments or {})
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(args))], structured_content=args)

    return Server("echo", on_list_tools=list_tools, on_call_tool=call_tool)


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        run_http(echo_server(), "127.0.0.1", 0, None)
    else:
        run_stdio(echo_server())
