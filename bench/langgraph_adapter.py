"""The LangGraph adapter (issue 29): per-operation overhead of ``GovernedStore`` over LangGraph's
``PostgresStore`` for put / get / search, measured against the bare store in the same run, and the
time of ``forget`` of one user's namespace holding 1,000 items and 200 derived summaries.

The wrapped store is a ``PostgresStore`` on a fresh schema of ``MEMSTEWARD_PG_DSN`` (default: the
local test server); memsteward's provenance store is a SQLite file (the adapter's usual setup). Bare
and governed operations alternate in rounds, so machine noise hits both alike; each row is the median
per operation. No vector index (the server has no pgvector).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langgraph.store.base import PutOp

from .common import table, write_section

BATCH = 20
DSN = os.environ.get("MEMSTEWARD_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


@contextmanager
def _pg_store() -> Iterator[Any]:
    import psycopg
    from langgraph.store.postgres import PostgresStore
    from psycopg.rows import dict_row

    name = f"bench_lg_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(DSN, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{name}"')
    conn = psycopg.connect(DSN, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                           options=f"-c search_path={name}")
    try:
        store = PostgresStore(conn)
        store.setup()
        yield store
    finally:
        conn.close()
        with psycopg.connect(DSN, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _governed(inner: Any, db: Path) -> Any:
    import memsteward
    from memsteward.integrations.langgraph import GovernedStore

    policy = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))
    return GovernedStore(inner, memsteward.open_store(db), policy)


def _timed(fn: Callable[[int], None], k: int) -> float:
    t = time.perf_counter()
    fn(k)
    return time.perf_counter() - t


def _ops(s: Any, ns: tuple[str, ...], n: int) -> list[tuple[str, Callable[[int], None], int]]:
    def put(k: int) -> None:
        s.put(ns, f"k{k}", {"content": f"memory {k}: the user likes tea and lives in town {k % 17}"})

    def get(k: int) -> None:
        s.get(ns, f"k{k}")

    def search(k: int) -> None:
        s.search(ns, limit=10, offset=k % 20)

    def put_batch(k: int) -> None:  # BATCH puts in one batch() call (k: the call's number)
        s.batch([PutOp(ns, f"b{k}-{j}", {"content": f"memory {k}.{j}: the user likes tea in town {j % 17}"})
                 for j in range(BATCH)])

    return [("put", put, n), ("get", get, n), ("search", search, n // 4), (f"put ×{BATCH} in one batch()", put_batch,
                                                                            n // BATCH)]


def _overhead(n: int, rounds: int) -> list[list[object]]:
    """Bare and governed operations interleaved one by one (which goes first alternates), so a
    load swing on the shared machine hits both alike; the ratio is of the two medians (per
    operation: a batch() call's time is divided by its puts), with its range over the rounds."""
    names = [w for w, _, _ in _ops(None, (), n)]
    times: dict[str, dict[str, list[list[float]]]] = {w: {"bare": [], "governed": []} for w in names}
    with tempfile.TemporaryDirectory() as tmp, _pg_store() as inner:
        gs = _governed(inner, Path(tmp) / "prov.db")
        for r in range(rounds):
            pairs = [("bare", _ops(inner, ("bench", "bare", f"r{r}"), n)),
                     ("governed", _ops(gs, ("bench", "governed", f"r{r}"), n))]
            for step, what in enumerate(names):
                per = BATCH if "batch" in what else 1
                count = pairs[0][1][step][2]
                got: dict[str, list[float]] = {"bare": [], "governed": []}
                for k in range(count):
                    for who, ops in (pairs if k % 2 == 0 else pairs[::-1]):
                        got[who].append(_timed(ops[step][1], k) / per)
                for who in got:
                    times[what][who].append(got[who])
    rows: list[list[object]] = []
    for what, t in times.items():
        bare = statistics.median(x for run in t["bare"] for x in run) * 1e3
        gov = statistics.median(x for run in t["governed"] for x in run) * 1e3
        per_round = [statistics.median(g) / statistics.median(b) for b, g in zip(t["bare"], t["governed"])]
        rows.append([what, sum(len(x) for x in t["bare"]), bare, gov, gov / bare,
                     f"{min(per_round):.2f}–{max(per_round):.2f}"])
    return rows


def _forget(items: int, summaries: int, fan_in: int) -> list[object]:
    with tempfile.TemporaryDirectory() as tmp, _pg_store() as inner:
        gs = _governed(inner, Path(tmp) / "prov.db")
        ns = ("users", "u1", "memories")
        for k in range(items):
            gs.put(ns, f"m{k}", {"content": f"memory {k} of user one: detail {k * 7919 % 10007}"})
        for j in range(summaries):
            src = [f"m{(j * fan_in + i) % items}" for i in range(fan_in)]
            gs.put(("users", "u1", "summaries"), f"s{j}", {"content": f"summary {j} of user one",
                                                           "facts": src, "derived_from": [[list(ns), k] for k in src]})
        gs.put(("users", "u2", "memories"), "m0", {"content": "another user's memory"})
        t = time.perf_counter()
        preview = gs.preview_forget(("users", "u1"))
        t_preview = time.perf_counter() - t
        waits: list[float] = []
        scrub = gs.scrub

        def timed_scrub() -> dict[str, Any]:
            out = scrub()
            waits.append(float(out.get("waited_s") or 0.0))
            return out

        gs.scrub = timed_scrub  # type: ignore[method-assign]
        t = time.perf_counter()
        out = gs.forget(("users", "u1"), expect=preview.digest)
        t_apply = time.perf_counter() - t
        ok = out["attestation"]["ok"] and gs.get(("users", "u2", "memories"), "m0") is not None
    return [f"{items} items + {summaries} summaries (fan-in {fan_in})", out["roots"], t_preview, t_apply, sum(waits),
            ok]


def run(quick: bool = False) -> None:
    n, rounds = (40, 2) if quick else (200, 3)
    items, summaries = (200, 40) if quick else (1000, 200)
    over = _overhead(n, rounds)
    forget = _forget(items, summaries, 5)
    text = ("## LangGraph adapter over PostgresStore (`bench/langgraph_adapter.py`)\n\n"
            "Per-operation wall time of `GovernedStore(PostgresStore)` against the bare `PostgresStore` in the "
            f"same run ({rounds} rounds of {n} puts and gets and {n // 4} searches per store, bare and governed "
            "interleaved op by op; provenance in a SQLite file; no vector index). "
            f"Load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
            "(shared machine).\n\n"
            + table(["operation", "samples", "bare ms per op (median)", "governed ms per op (median)", "ratio",
                     "ratio per round"], over)
            + "\n\n`forget` of one user's namespace (one delete event over every item under the prefix; the "
            "summaries are under the same user, so they are roots and nothing is regenerated: the repair "
            "operators' own time is nil). Apply includes the wrapped store's write-back, its `VACUUM FULL` "
            "(after waiting for older snapshots of the database, if any) and the attestation (values read around "
            "the adapter, relation files scanned; no cluster-wide CHECKPOINT after a clean VACUUM FULL).\n\n"
            + table(["namespace", "roots", "preview s", "apply s", "of which waiting for other sessions' older "
                     "snapshots s", "attested"], [forget]) + "\n")
    write_section("langgraph_adapter", text)
    print(text)
