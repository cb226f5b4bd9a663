"""`memsteward mcp` (issue 30): round-trip time of a ``search_memories`` call, over stdio and over
streamable HTTP, against a bare SDK ``echo`` tool measured in the same run.

Each server is a child process (``memsteward mcp --store … --tenant bench`` and
``python -m bench.mcp_echo``, both on memsteward's transports); one SDK client per server calls the
tool sequentially: warm-up calls, then ``CALLS`` timed calls (wall time of ``call_tool``, client
side). The store holds ``SIZE`` memories of the tenant; the search matches about 1 % of them
(``search_memories`` reads the tenant's servable memories through the guard, O(store), and
returns the matches). The overhead of memsteward is the difference of medians against echo on
the same transport; the echo row is the SDK's own cost (JSON-RPC, the transport, the client).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from .common import table, write_section

ROOT = Path(__file__).resolve().parent.parent
EXE = str(Path(sys.executable).with_name("memsteward"))


def _seed(db: Path, size: int) -> None:
    import memsteward

    store = memsteward.open_store(db)
    store.record_many([{"id": f"bench:m-{k:06d}", "kind": "record",
                        "content": f"note {k}: " + ("needle " if k % 100 == 0 else "") + "the user likes tea"}
                       for k in range(size)])
    store.close()


async def _timed(client: Any, name: str, args: dict[str, Any], calls: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        await client.call_tool(name, args)
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        result = await client.call_tool(name, args)
        out.append(time.perf_counter() - start)
        assert not result.is_error
    return out


def _stdio(cmd: list[str]) -> Any:
    from mcp import Client, StdioServerParameters

    return Client(StdioServerParameters(command=cmd[0], args=cmd[1:], cwd=str(ROOT)))


def _http(cmd: list[str]) -> tuple[Any, Callable[[], None]]:
    """Start an HTTP server child (it announces its URL on stderr); a client and a stop function."""
    from mcp import Client

    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, cwd=str(ROOT))
    assert proc.stderr is not None
    url = ""
    for line in proc.stderr:  # the first lines, until the address
        if "serving http://" in line:
            url = line.split("serving ", 1)[1].strip()
            break
    if not url:
        proc.kill()
        raise RuntimeError("the server did not start")

    def stop() -> None:
        proc.terminate()
        proc.wait(30)

    return Client(url), stop


async def _measure(make: Callable[[], Any], name: str, args: dict[str, Any], calls: int, warmup: int) -> list[float]:
    async with make() as client:
        return await _timed(client, name, args, calls, warmup)


def _row(label: str, times: list[float], ref: list[float] | None) -> list[object]:
    med = statistics.median(times) * 1e3
    p90 = sorted(times)[int(0.9 * (len(times) - 1))] * 1e3
    if ref is None:
        return [label, f"{med:.2f}", f"{p90:.2f}", "—", "—"]
    base = statistics.median(ref) * 1e3
    return [label, f"{med:.2f}", f"{p90:.2f}", f"{med - base:+.2f}", f"{med / base:.2f}×"]


def run(quick: bool = False) -> None:
    sizes = [100] if quick else [100, 1000]
    calls, warmup = (50, 10) if quick else (300, 30)
    search = {"query": "needle", "limit": 20}
    rows: list[list[object]] = []
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for transport in ("stdio", "http"):
            echo_cmd = [sys.executable, "-m", "bench.mcp_echo", transport]
            measure: Callable[[list[str], str, dict[str, Any]], Awaitable[list[float]]]
            if transport == "stdio":
                async def measure(cmd: list[str], tool: str, args: dict[str, Any]) -> list[float]:
                    return await _measure(lambda: _stdio(cmd), tool, args, calls, warmup)
            else:
                async def measure(cmd: list[str], tool: str, args: dict[str, Any]) -> list[float]:
                    client, stop = _http(cmd)
                    try:
                        return await _measure(lambda: client, tool, args, calls, warmup)
                    finally:
                        stop()
            ref = anyio.run(measure, echo_cmd, "echo", search)
            rows.append(_row(f"{transport}: bare SDK `echo` (reference)", ref, None))
            for size in sizes:
                db = Path(tmp) / f"{transport}-{size}.db"
                _seed(db, size)
                cmd = [EXE, "mcp", "--store", str(db), "--tenant", "bench"]
                if transport == "http":
                    cmd += ["--transport", "http", "--port", "0"]
                got = anyio.run(measure, cmd, "search_memories", search)
                rows.append(_row(f"{transport}: `search_memories`, {size} memories ({size // 100} match)",
                                 got, ref))
    text = ("## MCP server: round trip of `search_memories` (`bench/mcp_roundtrip.py`)\n\n"
            "`memsteward mcp` (issue 30) as a child process, one SDK client calling sequentially "
            f"({calls} timed calls after {warmup} warm-ups, client-side wall time), against a bare SDK `echo` tool "
            "served by the same transport code in the same run. Overhead = median − echo's median. "
            f"Load average {load:.1f} on {os.cpu_count()} cores (shared machine).\n\n"
            + table(["server and tool", "median ms", "p90 ms", "over echo, ms", "ratio"], rows)
            + "\n\nThe echo row is what any tool costs on this SDK and transport; memsteward's own part is the "
            "guarded read of the tenant's memories (`Store.serve`, O(store)) and the JSON of the matches.\n")
    write_section("mcp_roundtrip", text)
    print(text)
