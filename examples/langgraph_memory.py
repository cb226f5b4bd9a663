"""A LangGraph agent whose long-term memory is governed by memsteward (docs/langgraph.md).

A ``StateGraph`` writes each user's memories and a derived profile with extra fields (a ``facts``
list, a ``city``, ``meta``) into a ``GovernedStore`` over LangGraph's ``SqliteStore`` (with a vector
index) or ``PostgresStore``. Then: the user corrects a memory (a ``correct`` event repairs the
profile), one user is forgotten (``forget``: preview, then apply bound to the preview's digest), and
a memory put with a TTL expires (the wrapped store's sweep becomes a delete event). Finally
:func:`leftovers` reads the wrapped store around the adapter — every value, every vector, every file
— for any string that was deleted, corrected away or expired, and ``attest()`` must pass.

Run: ``python examples/langgraph_memory.py [sqlite|memory|postgres DSN]`` (prints the report as JSON).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.sqlite import SqliteStore

import memsteward
from memsteward.integrations.langgraph import GovernedStore
from memsteward.integrations.langgraph.physical import files, raw_items, vector_rows
from memsteward.integrations.langgraph.ttl import expiring

DIMS = 64
POLICY = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))

USERS: dict[str, dict[str, str]] = {
    "alice": {"home": "Alice lives at 12 Rue Cler in Paris.", "tea": "Alice drinks green tea every morning.",
              "work": "Alice works as a night nurse."},
    "bob": {"home": "Bob lives at 7 Via Roma in Turin.", "music": "Bob plays the cello on Sundays."},
}
CORRECTION = ("alice", "home", "Alice lives at 3 Quai Voltaire in Lyon.")
FORGOTTEN = "bob"
EPHEMERAL = ("alice", "mood", "Alice feels exhausted after the night shift.")


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic bag-of-words embedding (hashed tokens, L2-normalised): no model, no network."""
    out = []
    for text in texts:
        v = [0.0] * DIMS
        for tok in re.findall(r"\w+", text.lower()):
            v[int(hashlib.sha256(tok.encode()).hexdigest(), 16) % DIMS] += 1.0
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        out.append([x / norm for x in v])
    return out


class State(TypedDict):
    user: str
    memories: dict[str, str]


def remember(state: State) -> dict[str, Any]:
    """Graph node: write the user's memories (first-hand records)."""
    store = get_store()
    for key, text in state["memories"].items():
        store.put(("users", state["user"], "memories"), key, {"content": text, "meta": {"sensitivity": 1}})
    return {}


def build_profile(state: State) -> dict[str, Any]:
    """Graph node: a profile derived from every memory, with extra fields (facts, city, meta)."""
    store = get_store()
    ns = ("users", state["user"], "memories")
    items = sorted(store.search(ns, limit=100), key=lambda it: it.key)
    facts = [it.value["content"] for it in items]
    city = next((w for f in facts for w in ("Paris", "Lyon", "Turin") if w in f), "")
    store.put(("users", state["user"], "profile"), "main",
              {"content": " ".join(facts), "facts": facts, "city": city,
               "derived_from": [[list(ns), it.key] for it in items], "meta": {"sensitivity": 2, "source": "graph"}})
    return {}


def build_graph(store: BaseStore) -> Any:
    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("profile", build_profile)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "profile")
    graph.add_edge("profile", END)
    return graph.compile(store=store)


def deleted_strings() -> list[str]:
    """Every string that must be gone: the forgotten user's, the corrected-away and the expired."""
    gone = list(USERS[FORGOTTEN].values()) + [USERS[CORRECTION[0]][CORRECTION[1]], EPHEMERAL[2], "12 Rue Cler",
                                              "Turin", FORGOTTEN]
    return gone


def leftovers(gs: GovernedStore, gone: list[str]) -> dict[str, list[str]]:
    """Where any of ``gone`` survives in the wrapped store: values, vectors, files (read around the adapter)."""
    values = [json.dumps(it.value, ensure_ascii=False) + " " + ".".join(it.namespace) for it in raw_items(gs.inner)]
    out: dict[str, list[str]] = {"values": [g for g in gone if any(g in v for v in values)]}
    live = {(tuple(it.namespace), it.key): it.value for it in raw_items(gs.inner)}
    stale = [f"{'.'.join(ns)}/{k}/{p}" for ns, k, p in vector_rows(gs.inner)
             if (tuple(ns), k) not in live or not _field_text(live[(tuple(ns), k)], p)]
    out["vectors"] = stale + [g for g in gone if any(g in "/".join(ns) for ns, _, _ in vector_rows(gs.inner))]
    blobs = b"".join(Path(p).read_bytes() for p in files(gs.inner))
    out["files"] = [g for g in gone if g.encode("utf-8") in blobs]
    return out


def _field_text(value: dict[str, Any], path: str) -> bool:
    head, _, index = path.rpartition(".")
    if index.isdigit():
        seq = value.get(head)
        return isinstance(seq, list) and int(index) < len(seq)
    return path in value or path == "$"


def run(inner: BaseStore, wait: Callable[[], None] | None = None) -> dict[str, Any]:
    """The whole scenario on one wrapped store; returns the report (leftovers, attestations). The TTL
    step runs where the wrapped store supports TTL (SqliteStore, PostgresStore; not InMemoryStore)."""
    gs = GovernedStore(inner, memsteward.open_store(), POLICY)
    graph = build_graph(gs)
    for user, memories in USERS.items():
        graph.invoke({"user": user, "memories": memories})
    user, key, text = EPHEMERAL
    if inner.supports_ttl:
        gs.put(("users", user, "memories"), key, {"content": text}, ttl=1 / 60)  # one second
    user, key, text = CORRECTION
    gs.put(("users", user, "memories"), key, {"content": text})        # a correct event: the profile repaired
    corrected = gs.attest()
    preview = gs.preview_forget(("users", FORGOTTEN))
    forgotten = gs.forget(("users", FORGOTTEN), expect=preview.digest)
    deadline = time.monotonic() + 30
    while inner.supports_ttl and not expiring(inner) and time.monotonic() < deadline:
        (wait or (lambda: time.sleep(0.25)))()
    expired = gs.sweep() if inner.supports_ttl else []
    expiry = gs.attest() if expired else {"ok": not inner.supports_ttl, "why": "nothing expired"}
    profile = gs.get(("users", "alice", "profile"), "main")
    return {"leftovers": leftovers(gs, deleted_strings()),
            "attest": {"correct": corrected["ok"], "forget": forgotten["attestation"]["ok"], "ttl": expiry["ok"]},
            "failed_checks": [c for a in (corrected, forgotten["attestation"], expiry) for c in a.get("checks", [])
                              if not c["ok"]],
            "forget_roots": forgotten["roots"], "expired": len(expired),
            "profile": profile.value if profile is not None else None}


INDEX: dict[str, Any] = {"dims": DIMS, "embed": embed, "fields": ["content", "facts[*]", "city"]}
"""A vector index over every governed field of the example's values."""


def sqlite_store(path: str) -> SqliteStore:
    """LangGraph's SqliteStore on a file with a TTL; with the vector index when this Python's sqlite3
    can load extensions (sqlite-vec), without it otherwise."""
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    index = INDEX if hasattr(conn, "enable_load_extension") else None
    store = SqliteStore(conn, index=index, ttl={"default_ttl": None, "refresh_on_read": False})  # type: ignore[arg-type]
    store.setup()
    return store


def memory_store() -> BaseStore:
    """LangGraph's InMemoryStore with the vector index (no TTL: it has none)."""
    from langgraph.store.memory import InMemoryStore

    return InMemoryStore(index=INDEX)  # type: ignore[arg-type]


def main(argv: list[str]) -> int:
    if argv[:1] == ["postgres"]:
        from langgraph.store.postgres import PostgresStore
        from psycopg import Connection
        from psycopg.rows import dict_row

        with Connection.connect(argv[1], autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
            pg = PostgresStore(conn, ttl={"default_ttl": None, "refresh_on_read": False})  # type: ignore[arg-type]
            pg.setup()
            report = run(pg)
    elif argv[:1] == ["memory"]:
        report = run(memory_store())
    else:
        with tempfile.TemporaryDirectory() as tmp:
            report = run(sqlite_store(str(Path(tmp) / "memory.db")))
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0 if not any(report["leftovers"].values()) and all(report["attest"].values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
