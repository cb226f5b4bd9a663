"""Benchmark: the PostgreSQL store against the SQLite store (WAL) with 1, 2, 4 and 8 writers.

* records/s — W writer processes, each recording its own artifacts one ``Store.record`` at a
  time (one durable commit each: SQLite WAL with synchronous=FULL; PostgreSQL on loopback with its
  default synchronous_commit), all on ONE store; the rate is all records over the wall time from a
  common start (after every writer has opened the store) to the last writer's end.
* events/s — W writer processes each applying correct events to its own topic of one shared store
  (a root → summary cascade, so two events never overlap in data but still share the store's one
  event at a time and the audit chain): events over wall time. A writer whose barrier meets
  another's unfinished event waits (jittered) and tries again, as a real writer does.
* barrier — withdrawing 10^5 artifacts (|C(F)| = 10^5 + 1, :func:`bench.repair_traces.barrier_snapshot`)
  in one transaction on both backends, median of repeats on a fresh store each time.

* references in the same run: PostgreSQL with one statement per round trip (``PgConnection.PIPELINE
  = False``, the store before write queueing) for one writer, and the barrier with COPY off
  (``dialect.COPY_MIN`` = ∞: 10^5 single-row INSERTs, the store before COPY batches).

PostgreSQL is the server named by MEMSTEWARD_PG_DSN (default: the loopback test server); each
run works in its own schema, dropped afterwards. Both backends run in the same run, so the ratio
is what to compare; both share the machine's cores with the writers.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

from .common import machine, table, write_section

NAME = "store_backends"
DSN = os.environ.get("MEMSTEWARD_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
WRITERS = [1, 2, 4, 8]


def _pg_url() -> str:
    return f"{DSN}{'&' if '?' in DSN else '?'}schema=bench_{uuid.uuid4().hex[:12]}"


def _drop(url: str) -> None:
    if url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(DSN, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{url.rsplit("schema=", 1)[1]}" CASCADE')


def _record_worker(url: str, me: int, n: int, start: Any, done: Any, pipeline: bool = True) -> None:
    from memsteward.store import Store
    from memsteward.store.postgres import PgConnection

    PgConnection.PIPELINE = pipeline

    s = Store.open(url)
    start.wait()
    for k in range(n):
        s.record({"id": f"w{me}-{k}", "kind": "record", "content": f"writer {me} note {k}"},
                 inputs=[f"w{me}-{k - 1}"] if k else [])
    s.close()
    done.put(time.perf_counter())


def _event_worker(url: str, me: int, n: int, start: Any, done: Any) -> None:
    from memsteward.api import apply_event, bundled_path, load_policy
    from memsteward.errors import InputError
    from memsteward.store import Store

    s = Store.open(url)
    policy = load_policy(bundled_path("policies", "default.yaml"))
    rng = random.Random(me)
    start.wait()
    for k in range(n):
        repl = {"id": f"n{me}a", "kind": "record", "content": f"topic {me} fact a, corrected at {k}"}
        for _ in range(10_000):
            try:
                apply_event(s, policy, {"type": "correct", "roots": [f"n{me}a"], "replacements": [repl]})
                break
            except InputError as exc:
                if "unfinished event" not in str(exc) and "changed while" not in str(exc):
                    raise
                time.sleep(rng.uniform(0.001, 0.01))
    s.close()
    done.put(time.perf_counter())


def _seed_topics(url: str, topics: int) -> None:
    from memsteward.store import Store

    s = Store.open(url, create=True)
    for t in range(topics):
        s.record({"id": f"n{t}a", "kind": "record", "content": f"topic {t} fact a"})
        s.record({"id": f"n{t}b", "kind": "record", "content": f"topic {t} fact b"})
        s.record({"id": f"s{t}", "kind": "summary", "content": f"topic {t} fact a. topic {t} fact b"},
                 inputs=[f"n{t}a", f"n{t}b"])
    s.close()


def _rate(url: str, worker: Any, writers: int, per_writer: int, *extra: Any) -> float:
    ctx = mp.get_context("fork")
    start, done = ctx.Barrier(writers + 1), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(url, i, per_writer, start, done, *extra)) for i in range(writers)]
    for p in procs:
        p.start()
    start.wait()
    t0 = time.perf_counter()
    ends = [done.get(timeout=1800) for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"writer failed with exit code {p.exitcode}")
    return writers * per_writer / (max(ends) - t0)


def _store(kind: str, tmp: str) -> str:
    from memsteward.store import Store

    url = _pg_url() if kind == "postgresql" else os.path.join(tmp, f"{uuid.uuid4().hex[:8]}.db")
    Store.open(url, create=True).close()
    return url


def _barrier(kind: str, tmp: str, n_desc: int, repeats: int, copy: bool = True) -> tuple[float, int]:
    from memsteward.repair.events import event_from_dict
    from memsteward.repair.execute import policy_document, root_successors
    from memsteward.repair.plan import compute_plan
    from memsteward.store import Store
    from memsteward.store.api import BarrierSpec

    from .repair_policies import load
    from .repair_traces import barrier_snapshot

    snap, ev = barrier_snapshot(n_desc)
    policy, event = load("tool-agent"), event_from_dict(ev)
    plan = compute_plan(policy, snap, event, "mincut", "ortools")
    doc, pdoc, roots = plan.to_json(), policy_document(policy), root_successors(event, snap)
    from memsteward.store import postgres as dialect

    times, copy_min = [], dialect.COPY_MIN
    dialect.COPY_MIN = copy_min if copy else 10**12
    for _ in range(repeats):
        url = _store(kind, tmp)
        st = Store.open(url)
        st.import_snapshot(snap)
        gen = st.generation()
        t = time.perf_counter()
        st.barrier(BarrierSpec(doc, pdoc, roots, gen))
        times.append(time.perf_counter() - t)
        st.close()
        _drop(url)
    dialect.COPY_MIN = copy_min
    return statistics.median(times), len(plan.barrier)


def run(quick: bool = False) -> None:
    records, events = (20, 2) if quick else (200, 6)
    n_desc, repeats = (2_000, 1) if quick else (100_000, 2)
    rows_r, rows_e = [], []
    load_start, t0 = os.getloadavg(), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memsteward-backends-") as tmp:
        pair: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(3):  # interleaved, so both see the same (shared, shifting) machine load
            for pipelined in (False, True):
                url = _store("postgresql", tmp)
                pair[pipelined].append(_rate(url, _record_worker, 1, records, pipelined))
                _drop(url)
        unpipelined, pipelined_1 = statistics.median(pair[False]), statistics.median(pair[True])
        print(f"[store_backends] records w=1 PostgreSQL one statement per round trip vs pipelined: {pair}",
              file=sys.stderr, flush=True)
        for w in WRITERS:
            r = {}
            for kind in ("sqlite", "postgresql"):
                url = _store(kind, tmp)
                r[kind] = _rate(url, _record_worker, w, records)
                _drop(url)
            rows_r.append([w, r["sqlite"], r["postgresql"], r["postgresql"] / r["sqlite"]])
            print(f"[store_backends] records w={w}: {r}", file=sys.stderr, flush=True)
        for w in WRITERS:
            e = {}
            for kind in ("sqlite", "postgresql"):
                url = _store(kind, tmp)
                _seed_topics(url, w)
                e[kind] = _rate(url, _event_worker, w, events)
                _drop(url)
            rows_e.append([w, e["sqlite"], e["postgresql"], e["postgresql"] / e["sqlite"]])
            print(f"[store_backends] events w={w}: {e}", file=sys.stderr, flush=True)
        bar = {kind: _barrier(kind, tmp, n_desc, repeats) for kind in ("sqlite", "postgresql")}
        bar["postgresql, COPY off (reference)"] = _barrier("postgresql", tmp, n_desc, 1, copy=False)
    load_end = os.getloadavg()
    md = ["## Store backends: PostgreSQL against SQLite (WAL), many writers\n",
          f"`python -m bench {NAME}{' --quick' if quick else ''}`. Each writer is its own process; "
          f"{records} records (one durable commit each) or {events} correct events per writer, one shared "
          "store per row and backend; PostgreSQL on loopback (same machine, same cores).\n",
          table(["writers", "SQLite records/s", "PostgreSQL records/s", "PG / SQLite"], rows_r), "",
          f"Reference in the same run, 1 writer, 3 interleaved runs each (median): PostgreSQL with one statement "
          f"per round trip (`PgConnection.PIPELINE = False`, ≈ 13 round trips a record) {unpipelined:.3g} "
          f"records/s; with queued writes {pipelined_1:.3g} records/s (×{pipelined_1 / unpipelined:.2f}). Queued "
          "writes go out in one psycopg pipeline with the next read or COMMIT: 3 round trips a record (the "
          "versions read to seal ahead; BEGIN + lock + the checks' reads; writes + audit head + COMMIT), counted "
          "on psycopg's calls; the key store's commit is on its own connection.\n",
          table(["writers", "SQLite events/s", "PostgreSQL events/s", "PG / SQLite"], rows_e), "",
          table(["backend", "artifacts withdrawn", "barrier (s, median)"],
                [[k, n, t] for k, (t, n) in bar.items()]), "",
          "The PostgreSQL barrier writes its 10^5 chained `withdraw` audit rows by the driver's bulk insert "
          "(`Driver.bulk_insert`: one COPY from `COPY_MIN` rows); the reference row is the same barrier with "
          "`COPY_MIN` = ∞, those rows as an executemany of one INSERT in the same pipeline (1 repeat). The time "
          "is `barrier()`'s whole call: since 2026-12-02 it ends by making the keys of the steps' versions "
          "(here 10^5) in one key-file commit, after the withdrawal has committed (a further 1.4-2.8 s at 10^5 in A/B runs at load 2-4: "
          "before, each batch of steps made its own keys later in the event).\n",
          f"Machine load average (1 min) {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end "
          f"({os.cpu_count()} cores, shared with other work). Commit `{machine()['commit']}`; the run took "
          f"{(time.perf_counter() - t0) / 60:.1f} min.\n",
          "Events are serialised by design on both backends (one unfinished event per store; on PostgreSQL "
          "the store's advisory lock orders every write), so more writers do not raise events/s; what "
          "PostgreSQL adds is that the writers may be on other hosts."]
    write_section(NAME, "\n".join(md))


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
