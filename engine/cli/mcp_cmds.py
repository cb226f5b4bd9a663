"""`memsteward mcp`: serve a store's governed memory over the Model Context Protocol."""

from __future__ import annotations

import click

from ..errors import InputError
from .common import handle_errors


@click.command()
@click.option("--store", "store_path", required=True, metavar="URL",
              help="The store: a SQLite file (created when missing), postgresql://…[?schema=NAME], or :memory: "
                   "(gone when the server stops).")
@click.option("--policy", "policy_path", default=None, type=click.Path(dir_okay=False), metavar="FILE",
              help="The policy delete and correct events run under (default: the bundled default policy).")
@click.option("--tenant", default=None, metavar="NAME",
              help="The one tenant this process serves: ids are NAME:…, and no call can name another tenant's "
                   "memory. 1-64 characters of [A-Za-z0-9_-]. [default: default]")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio (the client starts this process) or streamable HTTP at http://HOST:PORT/mcp.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="HTTP only: the address to bind. Any non-loopback address needs a bearer token in the "
                   "environment (see --token-env) or the server refuses to start.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="HTTP only: the port (0 picks a free one; the address is printed on stderr).")
@click.option("--token-env", default="MEMSTEWARD_MCP_TOKEN", show_default=True, metavar="VAR",
              help="HTTP only: the environment variable holding the bearer token (at least 16 characters). "
                   "The token is never accepted on the command line. When set, every request must send "
                   "'Authorization: Bearer <token>', on loopback too.")
@handle_errors
def mcp(store_path: str, policy_path: str | None, tenant: str | None, transport: str, host: str, port: int,
        token_env: str) -> None:
    """Serve a store's governed memory to MCP clients (stdio or streamable HTTP).

    Tools: the reference memory server's nine (create_entities, create_relations, add_observations,
    delete_entities, delete_observations, delete_relations, read_graph, search_nodes, open_nodes)
    and the governed ones (record_memory, search_memories, forget_preview, forget_apply,
    correct_memory, attest, audit_log, clear_context). Resources: memsteward://memory/{id} and
    memsteward://attestation/{event_id}. See docs/mcp.md.
    """
    from ..mcp.tenant import parse_tenant

    who = parse_tenant(tenant)  # refused before anything else is imported or opened
    try:
        from ..mcp.server import build_server
        from ..mcp.transports import bearer_token, run_http, run_stdio
    except ImportError:
        raise InputError("memsteward mcp needs the MCP SDK: pip install 'memsteward[mcp]'", file="<install>") from None
    from ..api import bundled_path, load_policy, open_store
    from ..mcp.memory import TenantMemory

    token = bearer_token(host, token_env) if transport == "http" else None
    policy = load_policy(policy_path or bundled_path("policies", "default.yaml"))
    server = build_server(TenantMemory(open_store(store_path), policy, who))
    if transport == "http":
        run_http(server, host, port, token)
    else:
        run_stdio(server)
