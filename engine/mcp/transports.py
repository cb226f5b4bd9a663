"""The two MCP transports: stdio, and streamable HTTP with its security rules.

HTTP rules (``memsteward mcp --transport http``):

* the server binds ``127.0.0.1`` unless told otherwise; on a loopback address the SDK's DNS
  rebinding protection checks ``Host`` and ``Origin``;
* any other address needs a bearer token, read from the environment variable named by
  ``--token-env`` (default ``MEMSTEWARD_MCP_TOKEN``) and never from the command line, where
  ``ps`` would show it; without one (or with one shorter than 16 characters) the server refuses
  to start (exit 2). When the variable is set, loopback requires the token too;
* the token is compared in constant time (``hmac.compare_digest``); a request without it gets
  401 with a fixed body — the server never says what it expected;
* request bodies are capped at :data:`~memsteward.mcp.limits.MAX_BODY_BYTES` by the SDK (413),
  and stdio lines at the same size (a longer line is read to its end and discarded unparsed; the
  server goes on with the next line).
"""

from __future__ import annotations

import hmac
import io
import ipaddress
import os
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

from ..errors import InputError
from .limits import MAX_BODY_BYTES

__all__ = ["TOKEN_ENV", "bearer_token", "is_loopback", "run_http", "run_stdio"]

TOKEN_ENV = "MEMSTEWARD_MCP_TOKEN"
MIN_TOKEN = 16
Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``localhost`` counts).

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bearer_token(host: str, env_name: str, environ: MutableMapping[str, str] | None = None) -> str | None:
    """The token HTTP requests must carry (None: loopback without a token configured).

    Raises
    ------
    InputError
        a non-loopback ``host`` without the variable set, or a token under 16 characters (the
        message names the variable, never its value).
    """
    env = os.environ if environ is None else environ
    token = env.get(env_name)
    if token is None or token == "":
        if is_loopback(host):
            return None
        raise InputError(f"binding {host} needs a bearer token in the environment variable {env_name} "
                         "(never on the command line); refusing to start", file="<command line>", field="--host")
    if len(token) < MIN_TOKEN:
        raise InputError(f"the token in {env_name} is shorter than {MIN_TOKEN} characters", file="<environment>",
                         field=env_name)
    return token


def require_bearer(app: ASGIApp, token: str) -> ASGIApp:
    """``app`` behind a bearer-token check of every HTTP request (constant-time comparison)."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Scope, receive: Callable[[], Awaitable[Any]],
                      send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                body = b'{"error": "unauthorized"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                    (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot bind {host}:{port} ({exc.strerror})", file="<command line>", field="--port") from None
    return sock


def run_http(server: Any, host: str, port: int, token: str | None) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted; the bound address is
    announced on stderr (``port`` 0 picks a free port)."""
    import uvicorn

    app = server.streamable_http_app(host=host, max_request_body_size=MAX_BODY_BYTES)
    served: ASGIApp = require_bearer(app, token) if token is not None else app
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(served, log_level="warning", lifespan="on", timeout_graceful_shutdown=2,
                            h11_max_incomplete_event_size=64 * 1024)
    print(f"memsteward mcp: serving http://{shown}:{bound}/mcp", file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[sock])


class BoundedLines:
    """stdin as text lines of at most ``limit`` bytes; a longer line is read to its end and
    replaced by an empty object, which the SDK drops as an invalid message (no reply)."""

    def __init__(self, raw: io.BufferedReader, limit: int = MAX_BODY_BYTES) -> None:
        self.raw, self.limit = raw, limit

    def readline(self) -> str:
        """The next line ('' at the end of input)."""
        line = self.raw.readline(self.limit + 1)
        if len(line) > self.limit and not line.endswith(b"\n"):
            while (rest := self.raw.readline(self.limit)) and not rest.endswith(b"\n"):
                pass
            return "{}\n"
        return line.decode("utf-8", errors="replace")


def run_stdio(server: Any) -> None:
    """Serve one client over this process's stdin/stdout until stdin closes."""
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        stdin = anyio.wrap_file(BoundedLines(sys.stdin.buffer))  # type: ignore[arg-type]
        async with stdio_server(stdin=stdin) as (read, write):  # type: ignore[arg-type]
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
