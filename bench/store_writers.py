"""Benchmark: writes during an event, tenants in parallel, batched records (issue 28).

* writers during an event — 8 writer processes record their own artifacts (one ``Store.record``
  each, in a tight loop, outside any cascade) on one store: alone for a fixed time, then while
  another process runs a delete; records/s over the event's wall time and every refusal counted,
  and the event's own wall time alone and with the writers. Two deletes: a 2,000-artifact cascade
  that is withdrawn and removed (summaries of the root only), and 200 summaries that are repaired
  (each also derived from a retained note: staged and validated, 64 candidates per transaction,
  then published). SQLite and PostgreSQL.
* tenants (PostgreSQL) — W writer processes, each on its own tenant (its own schema in the same
  database) or all on one tenant; records/s over wall time; and correct events per second with
  each writer on its own tenant against all on one.
* async (PostgreSQL) — the longest event-loop stall while ``GovernedStore.adelete`` runs a delete
  whose cascade is 300 summaries (a task sleeping 5 ms in a loop records how late it wakes),
  against the same delete run on the loop's thread (what ``abatch`` did before).
* record_many (PostgreSQL, SQLite for reference) — one writer, batches of 1,000 new artifacts in one
  transaction each (the versions rows go as one COPY on PostgreSQL); artifacts/s.

PostgreSQL is the server named by MEMSTEWARD_PG_DSN (default: the loopback test server); each run
works in its own schemas, dropped afterwards. Ratios within one run are what to compare.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import tempfile
import time
import uuid
from typing import Any

from .common import table, write_section

NAME = "store_writers"
DSN = os.environ.get("MEMSTEWARD_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def _pg_url() -> str:
    return f"{DSN}{'&' if '?' in DSN else '?'}schema=bw_{uuid.uuid4().hex[:12]}"


def _drop(url: str) -> None:
    if not url.startswith("postgresql"):
        return
    import psycopg

    base = url.rsplit("schema=", 1)[1].split("&")[0]
    with psycopg.connect(DSN, autocommit=True) as con:
        rows = con.execute("SELECT schema_name FROM information_schema.schemata WHERE schema_name IN (%s, %s) "
                           "OR starts_with(schema_name, %s)", (base, f"{base}_keys", f"{base}__")).fetchall()
        for (name,) in rows:
            con.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _tenant(url: str, t: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}tenant={t}"


def _seed_cascade(url: str, n: int, repaired: bool) -> None:
    from memsteward.repair.artifacts import Artifact, Edge, Snapshot
    from memsteward.store import Store

    arts = [Artifact("r", "record", None, 1, "root fact about alice", {}, "servable"),
            Artifact("n", "record", None, 1, "Bob likes jazz", {}, "servable")]
    arts += [Artifact(f"d{k}", "summary", None, 1, f"root fact about alice. Bob likes jazz. ({k})", {}, "servable")
             for k in range(n)]
    edges = [Edge(p, f"d{k}", "influence") for k in range(n) for p in (("r", "n") if repaired else ("r",))]
    s = Store.open(url, create=True)
    s.import_snapshot(Snapshot({a.id: a for a in arts}, edges))
    s.close()


def _writer(url: str, me: int, start: Any, stop: Any, out: Any) -> None:
    from memsteward.errors import WriteRefused
    from memsteward.store import Store

    s = Store.open(url)
    ok = refused = 0
    done: list[tuple[float, float]] = []  # (when, CPU so far) at each acknowledged write (perf_counter: one clock)
    start.wait()
    t0, c0 = time.perf_counter(), time.process_time()
    while not stop.is_set():
        try:
            s.record({"id": f"w{me}-{ok}", "kind": "record", "content": f"writer {me} note {ok}"}, wait=0)
            ok += 1
            done.append((time.perf_counter(), time.process_time()))
        except WriteRefused:
            refused += 1
    out.put((ok, refused, time.perf_counter() - t0, time.process_time() - c0, done))
    s.close()


def _event(url: str, start: Any, go: Any, done: Any) -> None:
    from memsteward.api import apply_event, bundled_path, load_policy
    from memsteward.store import Store

    s = Store.open(url)
    policy = load_policy(bundled_path("policies", "default.yaml"))
    pids = _backends(s)
    start.wait()
    go.wait()
    t0, c0, s0 = time.perf_counter(), time.process_time(), _cpu_of(pids)
    plan = apply_event(s, policy, {"type": "delete", "roots": ["r"]})
    done.put((t0, time.perf_counter(), len(plan.republished), time.process_time() - c0 + _cpu_of(pids) - s0))
    s.close()


def _busy_loop() -> None:
    """A core's worth of CPU that touches no store (the reference of :func:`_beside_busy_loop`)."""
    while True:
        pass


def _beside_busy_loop(url: str, writers: int, seconds: float) -> float:
    """Records/s of ``writers`` writers while one process spins on the CPU and nothing else runs:
    what taking one core away costs them, with no lock, no event and no data in common."""
    loop = mp.get_context("fork").Process(target=_busy_loop, daemon=True)
    loop.start()
    try:
        return _writers_during(url, writers, seconds)[0]
    finally:
        loop.kill()
        loop.join()


WARM = 1.0  # seconds the writers write before they are counted (each process's first writes fill its key pool)


def _writers_during(url: str, writers: int, seconds: float | None) -> tuple[float, int, float, int, float, float]:
    """(records/s, refusals, wall seconds, successors republished: 0 without an event, the CPU the
    writer processes got in cores, the CPU the event used in cores: its process and its server
    processes, 0 without an event); no writers: the event alone. The writers write for ``WARM``
    seconds first; then the event runs (``seconds`` None) or ``seconds`` pass, and the writes
    acknowledged within that window, the event's own, are counted."""
    ctx = mp.get_context("fork")
    with_event = seconds is None
    start, stop, go, out, done = ctx.Barrier(writers + 1 + with_event), ctx.Event(), ctx.Event(), ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(url, i, start, stop, out)) for i in range(writers)]
    if with_event:
        procs.append(ctx.Process(target=_event, args=(url, start, go, done)))
    for p in procs:
        p.start()
    start.wait()
    if writers:
        time.sleep(WARM)
    go.set()
    if with_event:
        t0, t1, republished, event_cpu = done.get(timeout=3600)
    else:
        t0 = time.perf_counter()
        time.sleep(seconds or 0)
        t1, republished, event_cpu = time.perf_counter(), 0, 0.0
    stop.set()
    rows = [out.get(timeout=600) for _ in range(writers)] or [(0, 0, 0.0, 0.0, [])]
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a process failed with exit code {p.exitcode}")
    wall = t1 - t0
    within = [[c for t, c in r[4] if t0 <= t < t1] for r in rows]
    return (sum(map(len, within)) / wall, sum(r[1] for r in rows), wall, republished,
            sum(w[-1] - w[0] for w in within if w) / wall, event_cpu / wall)


def _backends(s: Any) -> list[int]:
    """The PostgreSQL server processes serving store ``s`` (its connection, its key store's)."""
    conns = [getattr(s.conn, "raw", None), getattr(s.vault.keys, "conn", None)]  # s.vault: the key store opened now
    return [c.info.backend_pid for c in conns if c is not None and hasattr(c, "info")]


def _cpu_of(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes ``pids`` of this machine have used."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _busy() -> tuple[float, float]:
    """(busy, total) CPU time of the whole machine so far, from /proc/stat (jiffies)."""
    with open("/proc/stat") as f:
        cpu = [int(x) for x in f.readline().split()[1:]]
    idle = cpu[3] + cpu[4]
    return sum(cpu) - idle, sum(cpu)


def _record_worker(url: str, me: int, n: int, start: Any, done: Any) -> None:
    from memsteward.store import Store

    s = Store.open(url, create=True)
    pids = _backends(s)
    start.wait()
    c0, s0 = time.process_time(), _cpu_of(pids)
    for k in range(n):
        s.record({"id": f"w{me}-{k}", "kind": "record", "content": f"writer {me} note {k}"})
    done.put((time.perf_counter(), time.process_time() - c0, _cpu_of(pids) - s0))
    s.close()


def _event_worker(url: str, me: int, n: int, start: Any, done: Any) -> None:
    from memsteward.api import apply_event, bundled_path, load_policy
    from memsteward.errors import InputError
    from memsteward.store import Store

    s = Store.open(url, create=True)
    policy = load_policy(bundled_path("policies", "default.yaml"))
    root = f"n{me}a"
    s.record({"id": root, "kind": "record", "content": f"topic {me} fact a"})
    s.record({"id": f"n{me}b", "kind": "record", "content": f"topic {me} fact b"})
    s.record({"id": f"s{me}", "kind": "summary", "content": f"topic {me} fact a. topic {me} fact b"},
             inputs=[root, f"n{me}b"])
    pids = _backends(s)
    start.wait()
    c0, s0 = time.process_time(), _cpu_of(pids)
    for k in range(n):
        repl = {"id": root, "kind": "record", "content": f"topic {me} fact a, corrected at {k}"}
        while True:
            try:
                apply_event(s, policy, {"type": "correct", "roots": [root], "replacements": [repl]})
                break
            except InputError as exc:  # one tenant for all: another writer's event is unfinished
                if "unfinished event" not in str(exc) and "changed while" not in str(exc):
                    raise
                time.sleep(0.005)
    done.put((time.perf_counter(), time.process_time() - c0, _cpu_of(pids) - s0))
    s.close()


def _rate(urls: list[str], worker: Any, per_writer: int) -> tuple[float, float, float, float]:
    """(operations/s, client CPU ms per operation, server CPU ms per operation, machine busy fraction)."""
    ctx = mp.get_context("fork")
    start, done = ctx.Barrier(len(urls) + 1), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(u, i, per_writer, start, done)) for i, u in enumerate(urls)]
    for p in procs:
        p.start()
    start.wait()
    t0, b0 = time.perf_counter(), _busy()
    ends = [done.get(timeout=1800) for _ in procs]
    b1 = _busy()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"writer failed with exit code {p.exitcode}")
    ops = len(urls) * per_writer
    return (ops / (max(e[0] for e in ends) - t0), 1000 * sum(e[1] for e in ends) / ops,
            1000 * sum(e[2] for e in ends) / ops, (b1[0] - b0[0]) / max(1, b1[1] - b0[1]))


CPU_BOUND = 0.9  # writers that keep less than this share of their rate beside one spinning process wait for CPU


def _spin_note(rows: list[list[Any]]) -> str:
    """What the spinning-process rows say, by backend: the share left, and whether that makes the
    writers bound by CPU on this machine (below :data:`CPU_BOUND`)."""
    said = [f"the {kind} writers {left:.0%} of their rate ({'bound by CPU here' if left < CPU_BOUND else 'not bound by CPU here'})"
            for kind, _, _, left in rows]
    return (f"One spinning process, and nothing of the store's, leaves {' and '.join(said)}. Writers bound by CPU "
            "lose that share to an event that uses about a core (last column of the first table) before any "
            "lock is involved.\n")


async def _probe(stop: Any, lags: list[float]) -> None:
    import asyncio

    while not stop.is_set():
        t0 = time.perf_counter()
        await asyncio.sleep(0.005)
        lags.append(time.perf_counter() - t0 - 0.005)


def _loop_stall(n: int, on_loop: bool) -> tuple[float, float]:
    """(longest loop stall, event seconds) of a delete with ``n`` dependent summaries, run through
    ``adelete`` or (``on_loop``) on the loop's own thread."""
    import asyncio

    from langgraph.store.memory import InMemoryStore

    import memsteward
    from memsteward.integrations.langgraph import GovernedStore

    url, ns = _pg_url(), ("mem", "alice")
    gs = GovernedStore(InMemoryStore(), memsteward.open_store(url),
                       memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml")), scrub_files=False)
    gs.put(ns, "n1", {"content": "Alice lives in Paris near the old museum"})
    gs.put(ns, "n2", {"content": "Alice likes green tea in the morning"})
    for k in range(n):
        gs.put(ns, f"s{k}", {"content": f"Summary {k}: Alice lives in Paris and likes tea",
                             "derived_from": [[list(ns), "n1"], [list(ns), "n2"]]})

    async def run() -> tuple[float, float]:
        stop, lags = asyncio.Event(), []
        probe = asyncio.create_task(_probe(stop, lags))
        await asyncio.sleep(0.02)
        t0 = time.perf_counter()
        if on_loop:
            gs.delete(ns, "n1")
        else:
            await gs.adelete(ns, "n1")
        took = time.perf_counter() - t0
        stop.set()
        await probe
        return max(lags), took
    out = asyncio.run(run())
    gs.store.close()
    _drop(url)
    return out


def _record_many(url: str, batches: int, size: int) -> float:
    from memsteward.store import Store

    s = Store.open(url, create=True)
    t0 = time.perf_counter()
    for b in range(batches):
        s.record_many([{"id": f"b{b}-{k}", "kind": "record", "content": f"batch {b} note {k}"} for k in range(size)])
    rate = batches * size / (time.perf_counter() - t0)
    s.close()
    return rate


def run(quick: bool = False) -> None:
    cascade, repaired, writers, alone = (200, 20, 4, 2.0) if quick else (2_000, 200, 8, 10.0)
    repeats = 1 if quick else 6  # events with the writers, each on its own store: their windows added up
    per_writer, events = (20, 2) if quick else (100, 4)
    batches, size = (2, 200) if quick else (10, 1_000)
    load_start = os.getloadavg()
    rows_w: list[list[Any]] = []
    rows_b: list[list[Any]] = []
    with tempfile.TemporaryDirectory(prefix="memsteward-writers-") as tmp:
        for kind in ("sqlite", "postgresql"):
            for n, fixed in ((cascade, False), (repaired, True)):
                urls = [_pg_url() if kind == "postgresql" else os.path.join(tmp, f"{uuid.uuid4().hex[:8]}.db")
                        for _ in range(2 + repeats)]
                for u in urls:
                    _seed_cascade(u, n, fixed)
                _, _, solo, _, _, solo_cores = _writers_during(urls[0], 0, None)  # the event alone
                base, base_refused, _, _, base_cores, _ = _writers_during(urls[1], writers, alone)
                if not fixed:  # once per backend: the same writers beside one spinning process
                    spun = _beside_busy_loop(urls[1], writers, alone)
                    rows_b.append([kind, base, spun, spun / base])
                runs = [_writers_during(u, writers, None) for u in urls[2:]]  # one event per store, in a row
                wall = sum(r[2] for r in runs)
                during = sum(r[0] * r[2] for r in runs) / wall
                refused, republished = sum(r[1] for r in runs), runs[0][3]
                cores = sum(r[4] * r[2] for r in runs) / wall
                event_cores = sum(r[5] * r[2] for r in runs) / wall
                what = f"{n:,} {'repaired' if fixed else 'removed'}"
                each = [r[0] / base for r in runs]  # one event's window alone: the spread between events
                rows_w.append([kind, what, base, during, during / base, f"{min(each):.2f}–{max(each):.2f}",
                               refused + base_refused, solo, wall / repeats,
                               f"{base_cores:.2f} / {cores:.2f}", f"{solo_cores:.2f} / {event_cores:.2f}"])
                print(f"[store_writers] {kind} {what}: alone {base:.3g}/s, during {during:.3g}/s (event {solo:.1f} s "
                      f"alone, {wall / repeats:.1f} s with writers, {republished} republished; each event: "
                      f"{', '.join(f'{r[0]:.3g}/s in {r[2]:.2f} s' for r in runs)}), refused {refused}",
                      file=sys.stderr, flush=True)
                for u in urls:
                    _drop(u)
        base_url = _pg_url()
        rows_t, rows_e = [], []
        for rows, worker, n, name in ((rows_t, _record_worker, per_writer, "records"), (rows_e, _event_worker, events,
                                                                                       "events")):
            for w in (1, 8):
                own = _rate([_tenant(base_url, f"{name[0]}{w}t{i}") for i in range(w)], worker, n)
                shared = _rate([_tenant(base_url, f"{name[0]}{w}shared")] * w, worker, n)
                rows.append([w, own[0], own[1], own[2], own[0] * (own[1] + own[2]) / 1000, f"{own[3]:.0%}",
                             shared[0]])
                print(f"[store_writers] tenants {name} w={w}: own {own}, one shared {shared}", file=sys.stderr,
                      flush=True)
        _drop(base_url)
        many = {}
        for kind in ("postgresql", "sqlite"):
            url = _pg_url() if kind == "postgresql" else os.path.join(tmp, f"{uuid.uuid4().hex[:8]}.db")
            many[kind] = _record_many(url, batches, size)
            _drop(url)
        print(f"[store_writers] record_many: {many}", file=sys.stderr, flush=True)
        summaries = 30 if quick else 300
        stalls = [[label, *_loop_stall(summaries, on_loop)] for label, on_loop in
                  (("on the loop's thread (before)", True), ("`adelete` (now)", False))]
        print(f"[store_writers] async: {stalls}", file=sys.stderr, flush=True)
    load_end = os.getloadavg()
    cores = os.cpu_count() or 1

    def scaling(rows: list[list[Any]], what: str, unit: str) -> str:
        one, eight = rows[0], rows[1]
        cost = eight[2] + eight[3]  # client + server CPU ms per operation, 8 tenants
        ceiling = cores * 1000 / cost
        return (f"8 tenants / 1 tenant: ×{eight[1] / one[1]:.2f} {what}/s. One {unit} costs {cost:.3g} ms of CPU "
                f"with 8 tenants (client {eight[2]:.3g} + server {eight[3]:.3g}; one writer alone: "
                f"{one[2]:.3g} + {one[3]:.3g}), so {cores} cores give at most {ceiling:.3g} {what}/s = "
                f"×{ceiling / one[1]:.2f} one tenant's with nothing else running. The 8 tenants' processes got "
                f"{eight[4]:.2f} cores (one tenant's: {one[4]:.2f}); the machine was {eight[5]} busy during the "
                f"8-tenant run (other work included): the tenants share no lock, the {what}/s they reach is the "
                f"CPU they are given.\n")
    header = ["writers", "{0}/s, a tenant each", "client CPU (ms per {1})", "server CPU (ms per {1})",
              "cores used (writers + server)", "machine busy", "{0}/s, one tenant"]
    md = ["## Store writers: writes during an event, tenants, batches (issue 28)\n",
          f"`python -m bench {NAME}{' --quick' if quick else ''}`. Each writer is its own process.\n",
          f"**Writes during an event.** {writers} writers record their own artifacts (one `record` each, in a "
          f"tight loop, outside any cascade) on one store: alone for {alone:g} s, then while another process runs "
          f"a delete — of a root with {cascade:,} summaries removed with it, or with {repaired} summaries that are "
          "repaired (staged and validated, 64 candidates per transaction, then published). Before this release "
          "every one of those writes was refused while the event was unfinished. The writers write for "
          f"{WARM:g} s before they are counted (a process's first writes fill its key pool), and the writes "
          "counted are those acknowledged within the window measured (the event's own, from its start to its "
          f"end); {repeats} events in a row, each on its own store with the same cascade, their windows added "
          "up (the next column: the lowest and the highest of the events' own ratios). The event's own wall time "
          "is measured alone (same store, no writers) and with the writers (per event).\n",
          table(["backend", "cascade", "records/s alone", "records/s during the event", "during / alone",
                 "during / alone, each event", "refused",
                 "event alone (s)", "event with writers (s)", "writers' CPU, cores (alone / during)",
                 "event's CPU, cores (alone / with writers)"], rows_w), "",
          "Every write transaction of a store appends to its one audit chain, under the store's one write lock "
          "(SQLite's, PostgreSQL's advisory lock); writers in a tight loop keep it busy, and each transaction of "
          "the event (barrier, each batch of staged successors and step outcomes, publication) takes its turn behind them, "
          "so the event itself is slowed by the writers (its wall time alone and with writers). What a "
          "transaction does under the lock is kept short: a write seals its version (the key store's own durable commit) before it takes "
          "the lock; the barrier reads the plan's scope again before it takes the lock (under it, only the writes "
          "committed since are checked); a publication reads its erasure and destroys its keys before its "
          "transaction; and on PostgreSQL a batch of steps and a publication do their work (stage, republish, "
          "erase, re-index) before they take the lock to check the event's lease and chain their audit rows. "
          "On a 2-core machine the event's own work "
          "(planning, operators, oracles) also takes CPU from the writers: the writers' CPU is what the writer "
          "processes got, alone and during the event; the event's is what its process and its server processes "
          "used (/proc), in cores over its own wall time.\n",
          "**What one core less costs the writers.** The same writers, on the same store, alone and beside one "
          "process that spins on the CPU (no store, no lock, no data in common; as long as the writers alone), "
          "in the same run: the share of their rate that is left when a core's worth of CPU goes elsewhere, as "
          "during an event that uses about a core.\n",
          table(["backend", "records/s alone", "records/s beside one spinning process", "beside / alone"], rows_b),
          "", _spin_note(rows_b),
          f"**Tenants (PostgreSQL).** W writers, each on its own tenant (its own schema in the same database, "
          f"its own advisory lock), against W writers on one tenant; {per_writer} records each. CPU is what the "
          "writer processes and their server processes used (/proc), per record.\n",
          table([h.format("records", "record") for h in header], rows_t), "",
          scaling(rows_t, "records", "record"),
          f"Events: correct events ({events} per writer), each writer on its own tenant against all on one "
          "(where they queue: one event at a time).\n",
          table([h.format("events", "event") for h in header], rows_e), "",
          scaling(rows_e, "events", "event"),
          f"**record_many**, one writer, {batches} batches of {size:,} new artifacts (one transaction each): "
          f"PostgreSQL {many['postgresql']:,.0f} artifacts/s, SQLite {many['sqlite']:,.0f} artifacts/s.\n",
          f"**Async (PostgreSQL).** The longest event-loop stall (a task sleeping 5 ms in a loop) while a delete "
          f"with {summaries} dependent summaries runs through `GovernedStore.adelete`, against the same delete on "
          "the loop's own thread (what `abatch` did before):\n",
          table(["delete run", "longest stall (s)", "event (s)"], stalls), "",
          f"Machine load average (1 min) {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end "
          f"({os.cpu_count()} cores, shared with other work): with 2 cores, 8 writer processes compete for "
          "CPU with the event and the server, so the ratios, not the rates, are the result."]
    write_section(NAME, "\n".join(md))


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
