"""Shared helpers of the MCP server tests: the whole flow any client runs, and server processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from mcp import Client

MEMSTEWARD = str(Path(sys.executable).with_name("memsteward"))


async def call(client: Client, name: str, args: dict[str, Any]) -> Any:
    """A tool call that must succeed; its structured result."""
    result = await client.call_tool(name, args)
    assert not result.is_error, (name, result.content[0].text if result.content else "")
    return result.structured_content


async def refused(client: Client, name: str, args: dict[str, Any]) -> str:
    """A tool call that must fail as a tool error; its message (checked for tracebacks)."""
    result = await client.call_tool(name, args)
    assert result.is_error, (name, result.structured_content)
    text = result.content[0].text
    assert "Traceback" not in text and 'File "' not in text, text
    return text


async def whole_flow(client: Client) -> dict[str, Any]:
    """The issue's flow: record memories and a derived summary; forget_preview then forget_apply;
    search no longer returns the deleted text; attest passes; the summary came back repaired."""
    a = (await call(client, "record_memory", {"content": "Alice lives in Paris"}))["id"]
    b = (await call(client, "record_memory", {"content": "Alice likes tea"}))["id"]
    s = await call(client, "record_memory", {"content": "Alice lives in Paris. Alice likes tea",
                                             "derived_from": [a, b]})
    assert s["kind"] == "summary" and s["derived_from"] == [a, b]
    preview = await call(client, "forget_preview", {"ids": [a]})
    assert sorted(preview["cascade"]) == sorted([a, s["id"]])
    assert preview["repaired"] == [s["id"]] and preview["removed"] == [a] and len(preview["digest"]) == 64
    before = await call(client, "search_memories", {"query": "paris"})
    assert {m["id"] for m in before["memories"]} == {a, s["id"]}  # the preview changed nothing
    applied = await call(client, "forget_apply", {"ids": [a], "digest": preview["digest"]})
    assert applied["repaired"] == [s["id"]] and isinstance(applied["event_id"], int)
    assert (await call(client, "search_memories", {"query": "paris"}))["memories"] == []
    served = {m["id"]: m for m in (await call(client, "search_memories", {"query": "alice"}))["memories"]}
    assert {b, s["id"]} <= set(served) and a not in served
    assert served[s["id"]]["content"] == "Alice likes tea" and served[s["id"]]["state"] == "republished"
    assert served[s["id"]]["version"] == 2
    report = await call(client, "attest", {"event_id": applied["event_id"]})
    assert report["ok"] is True and report["event"]["roots"] == [a]
    return {"a": a, "b": b, "summary": s["id"], "event_id": applied["event_id"]}


class ServerProcess:
    """``memsteward mcp --transport http --port 0`` as a child process; ``url`` once it listens."""

    def __init__(self, store: Path, tenant: str = "alice", token: str | None = None, *extra: str) -> None:
        env = {k: v for k, v in os.environ.items() if k != "MEMSTEWARD_MCP_TOKEN"}
        if token is not None:
            env["MEMSTEWARD_MCP_TOKEN"] = token
        self.proc = subprocess.Popen([MEMSTEWARD, "mcp", "--store", str(store), "--tenant", tenant,
                                      "--transport", "http", "--port", "0", *extra],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env=env, text=True)
        self.stderr: list[str] = []
        ready = threading.Event()
        self.url = ""

        def drain() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.stderr.append(line)
                if "serving http://" in line and not self.url:
                    self.url = line.split("serving ", 1)[1].strip()
                    ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(60) or not self.url:
            self.close()
            raise AssertionError("the server did not start: " + "".join(self.stderr))

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
