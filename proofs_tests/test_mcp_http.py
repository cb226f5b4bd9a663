"""`memsteward mcp --transport http`: the whole flow and the security rules over streamable HTTP on
127.0.0.1, against a real child process (issue 30)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_helpers import ServerProcess, call, refused, whole_flow

TOKEN = "tok-" + secrets.token_hex(16)
MARKER = "SECRET-MARKER-7f3a"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    """One server for the module (a child process starts in seconds on a loaded machine)."""
    store = tmp_path_factory.mktemp("mcp-http") / "m.db"
    server = ServerProcess(store, "alice", TOKEN)
    try:
        yield server, store
    finally:
        server.close()


def client(url: str, token: str | None = TOKEN) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)))


def store_bytes(store: Path) -> dict[str, bytes]:
    """The store's database file and its write-ahead log, byte for byte (-shm is a reader index)."""
    return {p.name: p.read_bytes() for p in (store, store.with_name(store.name + "-wal")) if p.exists()}


def test_whole_flow_over_streamable_http(served: tuple[ServerProcess, Path]) -> None:
    server, store = served
    assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")

    async def main() -> dict[str, Any]:
        async with client(server.url) as c:
            return await whole_flow(c)

    ids = anyio.run(main)
    assert ids["event_id"] >= 1


def test_a_request_without_the_token_is_refused(served: tuple[ServerProcess, Path]) -> None:
    server, store = served
    before = store_bytes(store)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "record_memory", "arguments": {"content": MARKER}}}
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": TOKEN}):
        r = httpx2.post(server.url, json=body, headers={**headers, "Accept": "application/json, text/event-stream"})
        assert r.status_code == 401 and r.json() == {"error": "unauthorized"}
        assert TOKEN not in r.text and MARKER not in r.text

    async def main() -> None:
        async with client(server.url, token=None) as c:
            await c.list_tools()

    with pytest.raises(BaseException):  # the SDK client cannot even connect without the token  # noqa: B017
        anyio.run(main)
    assert store_bytes(store) == before


def test_a_stale_digest_is_refused_over_http(served: tuple[ServerProcess, Path]) -> None:
    server, store = served

    async def main() -> None:
        async with client(server.url) as c:
            a = (await call(c, "record_memory", {"content": "Erin lives in Lyon"}))["id"]
            preview = await call(c, "forget_preview", {"ids": [a]})
            await call(c, "record_memory", {"content": "Erin lives in Lyon, near the river", "derived_from": [a]})
            before = store_bytes(store)
            text = await refused(c, "forget_apply", {"ids": [a], "digest": preview["digest"]})
            assert "stale preview" in text
            text = await refused(c, "forget_apply", {"ids": [a], "digest": "f" * 64})
            assert "stale preview" in text
            assert store_bytes(store) == before
            assert a in {m["id"] for m in (await call(c, "search_memories", {"query": "lyon"}))["memories"]}

    anyio.run(main)


def _deep(levels: int) -> Any:
    node: Any = MARKER
    for _ in range(levels):
        node = {"k": node}
    return node


HOSTILE: list[tuple[str, dict[str, Any]]] = [
    ("record_memory", {"content": MARKER * 40_000}),                            # a string over the bound
    ("record_memory", {"content": "x", "meta": _deep(40)}),                     # deep JSON
    ("record_memory", {"content": [MARKER] * 5000}),                            # a list over the bound
    ("record_memory", {"content": MARKER, "kind": "skill"}),                    # not an allowed kind
    ("record_memory", {"content": MARKER, "kind": "no-such-kind"}),             # a kind the policy lacks
    ("record_memory", {"content": MARKER, "derived_from": ["alice:m-0000000000000000"]}),  # unknown id
    ("record_memory", {"content": MARKER, "derived_from": ["bob:m-0000000000000000"]}),    # another tenant
    ("record_memory", {"content": MARKER, "meta": {"mcp_graph": "entity"}}),    # a reserved key
    ("forget_preview", {"ids": ["alice:" + MARKER * 100]}),                     # an id over the bound
    ("forget_preview", {"ids": MARKER}),                                        # not a list
    ("forget_preview", {"ids": []}),
    ("forget_apply", {"ids": ["alice:m-0000000000000000"], "digest": MARKER}),
    ("correct_memory", {"id": "alice:m-0000000000000000", "content": MARKER}),
    ("attest", {"event_id": 10**12}),
    ("attest", {"event_id": MARKER}),
    ("audit_log", {"limit": 10**9}),
    ("search_memories", {"query": "x", "limit": -1}),
    ("clear_context", {"query": MARKER, "memory_ids": ["alice:m-0000000000000000"]}),
    ("add_observations", {"observations": [{"entityName": MARKER, "contents": [MARKER]}]}),
    ("create_relations", {"relations": [{"from": MARKER, "to": MARKER, "relationType": MARKER}]}),
    ("create_entities", {"entities": [{"name": MARKER}]}),                      # missing fields
    ("no_such_tool", {"x": MARKER}),
]


def test_hostile_arguments_are_tool_errors_and_change_nothing(served: tuple[ServerProcess, Path]) -> None:
    server, store = served

    async def main() -> None:
        async with client(server.url) as c:
            await call(c, "record_memory", {"content": "Frank likes tea"})
            before = store_bytes(store)
            for name, args in HOSTILE:
                try:
                    text = await refused(c, name, args)
                except Exception as exc:  # refused at the protocol level (JSON-RPC error): also fine
                    text = str(exc)
                assert MARKER not in text and TOKEN not in text, (name, text[:200])
                assert "Traceback" not in text
            assert store_bytes(store) == before
            assert len((await call(c, "search_memories", {"query": "frank likes"}))["memories"]) == 1
            await call(c, "record_memory", {"content": "the next valid call succeeds"})

    anyio.run(main)
    assert "Traceback" not in "".join(server.stderr)


def test_a_body_over_the_limit_is_refused_with_413(served: tuple[ServerProcess, Path]) -> None:
    server, store = served
    before = store_bytes(store)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "record_memory", "arguments": {"content": "x" * (5 << 20)}}})
    r = httpx2.post(server.url, content=body, headers={"Authorization": f"Bearer {TOKEN}",
                                                       "Content-Type": "application/json",
                                                       "Accept": "application/json, text/event-stream"})
    assert r.status_code == 413 and "xxxx" not in r.text
    assert store_bytes(store) == before


@pytest.mark.parametrize("env", [{}, {"MEMSTEWARD_MCP_TOKEN": ""}, {"MEMSTEWARD_MCP_TOKEN": "short"}])
def test_a_non_loopback_address_needs_a_token_from_the_environment(env: dict[str, str], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memsteward.cli import main

    done = CliRunner().invoke(main, ["mcp", "--store", str(tmp_path / "m.db"), "--transport", "http",
                                     "--host", "0.0.0.0", "--port", "0"], env={"MEMSTEWARD_MCP_TOKEN": None, **env})
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert "MEMSTEWARD_MCP_TOKEN" in done.output and "short" not in done.output.split("MEMSTEWARD_MCP_TOKEN")[0]
    assert not (tmp_path / "m.db").exists()
    help_text = CliRunner().invoke(main, ["mcp", "--help"]).output
    assert "--token" not in help_text.replace("--token-env", "")  # no option takes the token itself
