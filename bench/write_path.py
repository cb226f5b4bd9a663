"""Benchmark: the write path (Store.record / record_many) and the retrieval guard (Store.servable).

Write path: N artifacts recorded into a fresh SQLite file store (WAL, synchronous=FULL), each
with one influence input (the previous artifact), (a) one ``record`` call — one durable commit —
at a time, and (b) ``record_many`` in batches. The reference, run in the same process on the same
disk, is plain SQLite doing the same row inserts (a version row, an artifact row, an edge) with the
same PRAGMAs and commit pattern and none of memsteward's checks: the ratio is the price of
validation, fencing, tombstone lookups and the hash-chained audit.

Retrieval guard: a store of M artifacts (bulk-loaded through SQL into the store's own schema, 10 %
withdrawn and 1 % erased, so building it stays a few seconds), then ``servable`` of 100 candidate
ids (90 existing, 10 unknown) per call. The reference is the same filter over a Python dict of all
states held in memory (what a guard without a database index would need).
"""

from __future__ import annotations

import os
import random
import sqlite3
import statistics
import tempfile
import time

from memsteward.repair.writes import prepare
from memsteward.store import Store

from .common import table, write_section

PRAGMAS = ("PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL")


def _doc(k: int) -> dict:
    return {"id": f"a{k}", "kind": "record", "content": {"text": f"note {k}: the user said something"}}


def _inputs(k: int) -> list[str]:
    return [f"a{k - 1}"] if k else []


def _raw_reference(path: str, n: int, batch: int | None) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    for p in PRAGMAS:
        conn.execute(p)
    conn.executescript("CREATE TABLE v(id TEXT, version INT, content TEXT, meta TEXT, PRIMARY KEY(id, version));"
                       "CREATE TABLE a(id TEXT PRIMARY KEY, kind TEXT, version INT, state TEXT);"
                       "CREATE TABLE e(src TEXT, dst TEXT, type TEXT, PRIMARY KEY(src, dst, type));")
    import json

    start = time.perf_counter()
    size = batch or 1
    for lo in range(0, n, size):
        ks = range(lo, min(n, lo + size))
        rows = [(_doc(k), _inputs(k)) for k in ks]
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO v VALUES (?,?,?,?)",
                         [(d["id"], 1, json.dumps(d["content"], sort_keys=True), "{}") for d, _ in rows])
        conn.executemany("INSERT INTO a VALUES (?,?,1,'servable')", [(d["id"], d["kind"]) for d, _ in rows])
        conn.executemany("INSERT INTO e VALUES (?,?,'influence')", [(i, d["id"]) for d, ins in rows for i in ins])
        conn.execute("COMMIT")
    seconds = time.perf_counter() - start
    conn.close()
    return seconds


def _memsteward(path: str, n: int, batch: int | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process)."""
    store = Store(path)
    cpu = time.process_time()
    start = time.perf_counter()
    if batch is None:
        for k in range(n):
            store.record(_doc(k), inputs=_inputs(k))
    else:
        for lo in range(0, n, batch):
            store.record_many([prepare(_doc(k), _inputs(k)) for k in range(lo, min(n, lo + batch))])
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    store.close()
    return seconds, cpu


def write_rows(n_single: int, n: int, batches: list[int]) -> list[list[object]]:
    rows = []
    for batch in [None, *batches]:
        count = n_single if batch is None else n
        with tempfile.TemporaryDirectory(prefix="memsteward-bench-") as tmp:
            ours, cpu = _memsteward(os.path.join(tmp, "m.db"), count, batch)
            ref = _raw_reference(os.path.join(tmp, "r.db"), count, batch)
        label = "one `record` per commit (durable)" if batch is None else f"`record_many`, {batch:,} per batch"
        rows.append([label, f"{count:,}", round(count / ours), round(count / cpu), round(count / ref),
                     round(ours / ref, 2)])
    return rows


def _big_store(path: str, m: int) -> dict[str, str]:
    """M artifacts written through SQL into the store's own tables (states: 89 % servable, 10 %
    withdrawn, 1 % erased); returns the states as the reference dict."""
    store = Store(path)
    rng = random.Random(0)
    states = {}
    chunk = 100_000
    for lo in range(0, m, chunk):
        arts = []
        for k in range(lo, min(m, lo + chunk)):
            r = rng.random()
            st = "erased" if r < 0.01 else "withdrawn" if r < 0.11 else "servable"
            states[f"a{k}"] = st
            arts.append((f"a{k}", "record", None, 1, st))
        with store.transaction() as c:
            c.executemany("INSERT INTO artifacts(id, kind, arch, version, state) VALUES (?,?,?,?,?)", arts)
            c.executemany("INSERT INTO versions(id, version, content, meta) VALUES (?, 1, '\"x\"', '{}')",
                          [(a[0],) for a in arts])
    store.close()
    return states


def guard_rows(m: int, calls: int) -> tuple[list[list[object]], float]:
    with tempfile.TemporaryDirectory(prefix="memsteward-bench-") as tmp:
        path = os.path.join(tmp, "big.db")
        start = time.perf_counter()
        states = _big_store(path, m)
        build = time.perf_counter() - start
        store = Store(path)
        rng = random.Random(1)
        queries = [[f"a{rng.randrange(m)}" for _ in range(90)] + [f"zz{rng.randrange(m)}" for _ in range(10)]
                   for _ in range(calls)]
        ours, ref = [], []
        for q in queries:
            t = time.perf_counter()
            got = store.servable(q)
            ours.append(time.perf_counter() - t)
            t = time.perf_counter()
            want = [i for i in q if states.get(i) in ("servable", "republished")]
            ref.append(time.perf_counter() - t)
            assert got == want
        store.close()
    med, p99 = statistics.median(ours) * 1e3, sorted(ours)[int(0.99 * len(ours))] * 1e3
    rows = [[f"{m:,}", 100, calls, round(med, 3), round(p99, 3), round(statistics.median(ref) * 1e3, 4)]]
    return rows, build


def run(quick: bool = False) -> str:
    n = 5_000 if quick else 100_000
    n_single = 1_000 if quick else 5_000  # fsync-bound: the rate does not depend on N (see the text)
    m = 50_000 if quick else 1_000_000
    wrows = write_rows(n_single, n, [1_000, 10_000])
    grows, build = guard_rows(m, 200 if quick else 1_000)
    md = ["## Write path and retrieval guard (`bench/write_path.py`)", "",
          "Recording N artifacts (each with one influence input) into a SQLite file store (WAL, "
          "synchronous=FULL). Reference: plain SQLite inserting the same rows with the same commit "
          "pattern and no checks, same run, same disk. Targets (issue 9): ≥ 2,000/s one at a time "
          "(durable), ≥ 20,000/s batched. One durable commit per artifact is bound by the disk's "
          "fsync (one per commit, the reference pays the same), so its rate does not depend on N and "
          f"{n_single:,} artifacts are timed rather than 10^5 on this shared machine; batches are 10^5.", "",
          "The CPU column divides by this process's CPU time (waiting for the disk or for a core on "
          "the shared machine excluded): what the code costs when it has a core to itself.", "",
          table(["write", "N", "memsteward artifacts/s (wall)", "artifacts per CPU-second", "plain SQLite rows/s",
                 "time ratio (memsteward / plain)"],
                wrows), "",
          f"Retrieval guard: `Store.servable(ids)` for 100 candidate ids (90 in the store, 10 unknown) against "
          f"a store of M artifacts (89 % servable, 10 % withdrawn, 1 % erased; bulk-loaded in {build:.1f} s). "
          "Every answer is checked against the reference: the same filter over an in-memory dict of all "
          "states. Target (issue 9): ≤ 1 ms median.", "",
          table(["M", "ids per call", "calls", "median ms", "p99 ms", "reference (dict) median ms"], grows), ""]
    text = "\n".join(md)
    write_section("write_path", text)
    return text
