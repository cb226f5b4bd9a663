"""`memsteward mcp`: the tools, schemas and flows through real MCP clients (issue 30).

The in-process tests use the SDK's own client on the server object (no transport); the stdio test
starts `memsteward mcp` as a child process; the HTTP tests live in test_mcp_http.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_helpers import MEMSTEWARD, call, refused, whole_flow

import memsteward
from memsteward.mcp.memory import TenantMemory
from memsteward.mcp.server import build_server
from memsteward.mcp.tenant import parse_tenant

REFERENCE = json.loads((Path(__file__).parent / "data" / "mcp_reference_memory_tools.json").read_text())["tools"]
SHAPE_KEYS = {"type", "properties", "items", "required", "description"}
POLICY = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))


def shape(schema: Any) -> Any:
    """A schema reduced to its shape keys (the reference copy keeps only those)."""
    if isinstance(schema, dict):
        out = {k: shape(v) if k in ("items",) else v for k, v in schema.items() if k in SHAPE_KEYS}
        if "properties" in out:
            out["properties"] = {k: shape(v) for k, v in out["properties"].items()}
        if out.get("required") == []:
            del out["required"]
        return out
    return schema


def server_on(store: Any, tenant: str = "alice") -> Any:
    return build_server(TenantMemory(store, POLICY, parse_tenant(tenant)))


def run(fn: Any, *args: Any) -> Any:
    return anyio.run(fn, *args)


async def _tools(server: Any) -> dict[str, Any]:
    async with Client(server) as client:
        return {t.name: t for t in (await client.list_tools()).tools}


def test_reference_tools_keep_the_reference_servers_names_and_schemas() -> None:
    tools = run(_tools, server_on(memsteward.open_store()))
    assert list(tools)[:9] == list(REFERENCE)
    for name, ref in REFERENCE.items():
        assert shape(tools[name].input_schema) == ref["inputSchema"], name
        assert shape(tools[name].output_schema) == ref["outputSchema"], name
        hints = tools[name].annotations.model_dump(by_alias=True, exclude_none=True)
        assert {k: hints[k] for k in ref["annotations"]} == ref["annotations"], name


def test_every_tool_has_an_output_schema_and_its_annotations() -> None:
    tools = run(_tools, server_on(memsteward.open_store()))
    assert {"record_memory", "search_memories", "forget_preview", "forget_apply", "correct_memory", "attest",
            "audit_log", "clear_context"} <= set(tools)
    for name, tool in tools.items():
        assert tool.output_schema and tool.output_schema["type"] == "object", name
        ann = tool.annotations
        assert ann is not None and ann.read_only_hint is not None, name
        if name.startswith(("forget", "delete")):
            assert ann.destructive_hint is not None and ann.idempotent_hint is not None, name
        assert ann.read_only_hint == (name in {"read_graph", "search_nodes", "open_nodes", "search_memories",
                                                "forget_preview", "attest", "audit_log", "clear_context"}), name
    assert tools["forget_apply"].annotations.destructive_hint is True
    assert tools["forget_preview"].annotations.destructive_hint is False


def test_whole_flow_through_the_in_process_sdk_client() -> None:
    store = memsteward.open_store()

    async def main() -> None:
        async with Client(server_on(store)) as client:
            ids = await whole_flow(client)
            # the structured results match each tool's declared output schema
            from jsonschema import validate

            tools = {t.name: t for t in (await client.list_tools()).tools}
            out = await call(client, "search_memories", {"query": "tea"})
            validate(out, tools["search_memories"].output_schema)
            validate(await call(client, "attest", {}), tools["attest"].output_schema)
            assert ids["summary"] in {m["id"] for m in out["memories"]}

    run(main)
    assert store.get(next(iter(store.serve())).id) is not None


def test_whole_flow_over_stdio_in_a_child_process(tmp_path: Path) -> None:
    # an MCP client passes the server only a few variables (HOME, PATH, …): the master key's is named,
    # as a user's mcpServers block does (docs/mcp.md), so the server seals under the key this test reads with
    params = StdioServerParameters(command=MEMSTEWARD, args=["mcp", "--store", str(tmp_path / "m.db"),
                                                             "--tenant", "alice"],
                                   env={k: v for k, v in os.environ.items() if k.startswith("MEMSTEWARD_")})

    async def main() -> dict[str, Any]:
        async with Client(params) as client:
            return await whole_flow(client)

    ids = run(main)
    store = memsteward.open_store(tmp_path / "m.db", create=False)  # the server's writes are durable
    assert store.get(ids["a"]).state == "erased" and store.get(ids["summary"]).content == "Alice likes tea"


def test_knowledge_graph_tools_as_governed_artifacts() -> None:
    store = memsteward.open_store()

    async def main() -> None:
        async with Client(server_on(store)) as client:
            made = await call(client, "create_entities", {"entities": [
                {"name": "Bob", "entityType": "person", "observations": ["likes jazz", "lives in Rome"]},
                {"name": "Acme", "entityType": "org", "observations": []}]})
            assert [e["name"] for e in made["entities"]] == ["Bob", "Acme"]
            again = await call(client, "create_entities", {"entities": [
                {"name": "Bob", "entityType": "person", "observations": []}]})
            assert again == {"entities": []}  # an existing name is skipped, as upstream
            await call(client, "create_relations", {"relations": [{"from": "Bob", "to": "Acme",
                                                                   "relationType": "works_at"}]})
            added = await call(client, "add_observations", {"observations": [
                {"entityName": "Bob", "contents": ["plays chess", "likes jazz"]}]})
            assert added == {"results": [{"entityName": "Bob", "addedObservations": ["plays chess"]}]}
            # a summary derived from one observation is in its cascade
            obs = (await call(client, "search_memories", {"query": "likes jazz"}))["memories"][0]["id"]
            rome = (await call(client, "search_memories", {"query": "lives in rome"}))["memories"][0]["id"]
            summary = (await call(client, "record_memory", {"content": "Bob likes jazz. Bob lives in Rome",
                                                            "derived_from": [obs, rome]}))["id"]
            done = await call(client, "delete_observations", {"deletions": [
                {"entityName": "Bob", "observations": ["likes jazz"]}]})
            assert done["success"] is True and "event" in done["message"]
            graph = await call(client, "open_nodes", {"names": ["Bob"]})
            assert graph["entities"][0]["observations"] == ["lives in Rome", "plays chess"]
            assert graph["relations"] == [{"from": "Bob", "to": "Acme", "relationType": "works_at"}]
            repaired = store.get(summary)
            assert repaired.state == "republished" and "jazz" not in repaired.content and "Rome" in repaired.content
            assert (await call(client, "search_nodes", {"query": "jazz"}))["entities"] == []
            await call(client, "delete_entities", {"entityNames": ["Acme"]})
            graph = await call(client, "read_graph", {})
            assert [e["name"] for e in graph["entities"]] == ["Bob"] and graph["relations"] == []
            gone = await call(client, "delete_relations", {"relations": [{"from": "Bob", "to": "Acme",
                                                                          "relationType": "works_at"}]})
            assert "nothing matched" in gone["message"]
            # deleted content is tombstoned: re-creating it is refused, with no text echoed
            text = await refused(client, "add_observations", {"observations": [
                {"entityName": "Bob", "contents": ["likes jazz"]}]})
            assert "refused" in text and "jazz" not in text
            assert "entity not found" in await refused(client, "create_relations", {"relations": [
                {"from": "Bob", "to": "Nobody", "relationType": "knows"}]})

    run(main)
    assert all(a.content != "likes jazz" for a in store.snapshot().artifacts.values())


def test_a_stale_preview_is_refused_and_nothing_changes() -> None:
    store = memsteward.open_store()

    async def main() -> None:
        async with Client(server_on(store)) as client:
            a = (await call(client, "record_memory", {"content": "Carol owns a red bike"}))["id"]
            preview = await call(client, "forget_preview", {"ids": [a]})
            await call(client, "record_memory", {"content": "Carol owns a red bike, she says",
                                                 "derived_from": [a]})  # the cascade grew
            state = store.dump_state()
            text = await refused(client, "forget_apply", {"ids": [a], "digest": preview["digest"]})
            assert "stale preview" in text and store.dump_state() == state
            fresh = await call(client, "forget_preview", {"ids": [a]})
            assert fresh["digest"] != preview["digest"]
            await call(client, "forget_apply", {"ids": [a], "digest": fresh["digest"]})

    run(main)


def test_correct_memory_repairs_what_was_derived() -> None:
    store = memsteward.open_store()

    async def main() -> None:
        async with Client(server_on(store)) as client:
            a = (await call(client, "record_memory", {"content": "Dan lives in Oslo"}))["id"]
            b = (await call(client, "record_memory", {"content": "Dan likes skiing"}))["id"]
            s = (await call(client, "record_memory", {"content": "Dan lives in Oslo. Dan likes skiing",
                                                      "derived_from": [a, b]}))["id"]
            out = await call(client, "correct_memory", {"id": a, "content": "Dan lives in Bergen", "privacy": True})
            assert s in out["cascade"] and isinstance(out["event_id"], int)
            assert store.get(a).content == "Dan lives in Bergen"
            assert "Oslo" not in json.dumps(store.get(s).content)
            assert (await call(client, "attest", {"event_id": out["event_id"]}))["ok"] is True

    run(main)


def test_clear_context_never_changes_the_bank() -> None:
    store = memsteward.open_store()

    async def main() -> None:
        async with Client(server_on(store)) as client:
            ids = [(await call(client, "record_memory", {"content": t}))["id"] for t in (
                "Leo's instrument: violin.", "Leo has a cat named Miso.",
                "The instrument Leo likes to play is the trumpet.",
                "Leo said the instrument he would play is a trumpet.")]
            state = store.dump_state()
            out = await call(client, "clear_context", {"query": "What instrument does Leo play?",
                                                       "reference": "violin", "memory_ids": ids})
            assert set(out["removed"]) == {ids[2], ids[3]} and out["recovered"] is True
            assert set(out["kept"]) == {ids[0], ids[1]}
            assert store.dump_state() == state  # MeClear clears one query's context, never the bank

    run(main)


def test_one_tenant_cannot_reach_anothers_memory(tmp_path: Path) -> None:
    store = memsteward.open_store(tmp_path / "shared.db")

    async def main() -> None:
        async with Client(server_on(store, "alice")) as alice, Client(server_on(store, "bob")) as bob:
            mine = (await call(alice, "record_memory", {"content": "alice secret note"}))["id"]
            await call(alice, "create_entities", {"entities": [{"name": "X", "entityType": "t",
                                                                "observations": ["alice obs"]}]})
            state = store.dump_state()
            assert (await call(bob, "search_memories", {"query": ""}))["memories"] == []
            assert (await call(bob, "read_graph", {})) == {"entities": [], "relations": []}
            for tool, args in [("forget_preview", {"ids": [mine]}),
                               ("forget_apply", {"ids": [mine], "digest": "0" * 64}),
                               ("correct_memory", {"id": mine, "content": "x"}),
                               ("record_memory", {"content": "y", "derived_from": [mine]}),
                               ("clear_context", {"query": "q", "memory_ids": [mine]}),
                               ("attest", {"event_id": 1})]:
                text = await refused(bob, tool, args)
                assert "unknown" in text and "secret" not in text, (tool, text)
            assert store.dump_state() == state
            assert (await call(bob, "audit_log", {}))["entries"] == []
            with pytest.raises(MCPError):
                await bob.read_resource("memsteward://memory/" + mine.replace(":", "%3A"))
            assert [r.name for r in (await bob.list_resources()).resources] == []
            await call(bob, "delete_entities", {"entityNames": ["X"]})  # bob's graph has no X
            assert store.dump_state() == state

    run(main)


def test_resources_list_servable_memories_and_attestations() -> None:
    store = memsteward.open_store()

    async def main() -> None:
        async with Client(server_on(store)) as client:
            ids = await whole_flow(client)
            listed = {str(r.uri) for r in (await client.list_resources()).resources}
            quoted = {k: "memsteward://memory/" + i.replace(":", "%3A") for k, i in ids.items() if isinstance(i, str)}
            assert quoted["b"] in listed and quoted["summary"] in listed and quoted["a"] not in listed
            assert f"memsteward://attestation/{ids['event_id']}" in listed
            doc = json.loads((await client.read_resource(quoted["summary"])).contents[0].text)
            assert doc["content"] == "Alice likes tea" and doc["state"] == "republished"
            att = json.loads((await client.read_resource(f"memsteward://attestation/{ids['event_id']}"))
                             .contents[0].text)
            assert att["ok"] is True
            with pytest.raises(MCPError):
                await client.read_resource(quoted["a"])  # erased: not servable, not a resource
            templates = (await client.list_resource_templates()).resource_templates
            assert {t.uri_template for t in templates} == {"memsteward://memory/{id}",
                                                            "memsteward://attestation/{event_id}"}

    run(main)


@pytest.mark.parametrize("tenant", ["", "x" * 65, "../etc", "a/b", "a;drop table", "a'b", "a%b", "a b", "-a",
                                    "a:b", "a\nb"])
def test_a_bad_tenant_is_refused_with_exit_2(tenant: str, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memsteward.cli import main

    done = CliRunner().invoke(main, ["mcp", "--store", str(tmp_path / "m.db"), "--tenant", tenant])
    assert done.exit_code == 2 and "[--tenant]" in done.output and "Traceback" not in done.output
    assert not (tmp_path / "m.db").exists()  # refused before the store is opened


def test_help_documents_every_option() -> None:
    done = subprocess.run([MEMSTEWARD, "mcp", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    for option in ("--store", "--policy", "--tenant", "--transport", "--host", "--port", "--token-env"):
        assert option in done.stdout


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_number_is_refused_before_the_store(value: float) -> None:
    from memsteward.mcp.governed import Governed
    from memsteward.mcp.graph import Graph
    from memsteward.mcp.server import call as serve_call
    from memsteward.mcp.tools import Handlers

    store = memsteward.open_store()
    memory = TenantMemory(store, POLICY, parse_tenant("alice"))
    result = serve_call(Handlers(Graph(memory), Governed(memory)), "record_memory", {"content": {"x": [value]}})
    assert result.is_error and "not finite [content.x[0]]" in result.content[0].text
    assert store.serve() == []


def test_a_stdio_line_over_the_limit_is_dropped_and_the_next_one_served(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    big = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "record_memory", "arguments": {"content": "x" * (5 << 20)}}}
    init = {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    lines = (json.dumps(big) + "\n" + json.dumps(init) + "\n").encode()
    done = subprocess.run([MEMSTEWARD, "mcp", "--store", str(db)], input=lines, capture_output=True, timeout=120)
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and [r["id"] for r in replies] == [2] and "result" in replies[0]
    assert memsteward.open_store(db, create=False).serve() == []  # the oversized call never ran


def test_whole_flow_and_tenants_on_each_backend(store_factory: Any) -> None:
    """The flow and the tenant boundary on SQLite and PostgreSQL (with MEMSTEWARD_PG_DSN)."""
    store = store_factory()

    async def main() -> None:
        async with Client(server_on(store, "alice")) as alice, Client(server_on(store, "bob")) as bob:
            ids = await whole_flow(alice)
            assert (await call(bob, "search_memories", {"query": ""}))["memories"] == []
            assert "unknown" in await refused(bob, "forget_preview", {"ids": [ids["b"]]})
            mine = (await call(bob, "record_memory", {"content": "Bob likes chess"}))["id"]
            assert [m["id"] for m in (await call(bob, "search_memories", {"query": ""}))["memories"]] == [mine]
            assert mine not in {m["id"] for m in (await call(alice, "search_memories", {"query": ""}))["memories"]}

    run(main)
