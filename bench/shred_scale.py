"""Erasure by key destruction: what a delete costs beyond planning, as the store grows (issue 27).

One on-disk store per backend grows through the sizes (2·10^4, 2·10^5, 10^6 and 2·10^6 artifacts by default;
``MEMSTEWARD_BENCH_SHRED_MAX`` caps SQLite's, ``MEMSTEWARD_BENCH_SHRED_PG_MAX`` PostgreSQL's (with
``MEMSTEWARD_PG_DSN`` set); ``--quick``: 2·10^3 → 2·10^5 and 2·10^3, 2·10^4). Filler artifacts are records of 6–10 words, imported
in batches (sealed, indexed). At each size ``EVENTS`` small deletes run, each of a root record with
a chain of derived summaries and caches (a cascade of 12 artifacts, erasure of 12 versions). Per
delete: **plan** = :func:`compute_plan` alone; **delete** = :func:`run_event` whole; **beyond
planning** = delete − plan (barrier, staging, validation, publication with key destruction, the
erasure record); **erasure** = the key destruction and ``physical-erasure`` step alone
(:meth:`Store.erase_physically` timed inside the run). A reader thread on another connection reads
other artifacts in a loop during every delete: its longest single read is reported. **delete CPU** is
the deleting thread's CPU time in :func:`run_event` (``time.thread_time``: no waiting on fsync, not the
reader's), and **fdatasync** the median latency of a 4 KB write + ``fdatasync`` beside the store just
before that size's deletes, with the load average then: a SQLite delete waits on 11 syncs (the key file's
commits and checkpoint, the barrier's and the publication's commits, two WAL checkpoints: ``proofs_tests/test_delete_syncs.py``),
so on a shared disk the wall times follow the fsync latency of the moment.

**Planning at 10^6, encrypted against plaintext:** when the SQLite store holds 10^6 artifacts (``--quick``:
its largest size), a plaintext twin holds the same fillers, imported batch by batch with the same artifacts
but never sealed (the store marked unsealed, as before encryption at rest: plain digests and shingle hashes).
The same small delete (the 12-artifact cascade, recorded in both) is planned in both, alternating, after one
untimed plan each: the medians, their ratio, and the rows one plan of the encrypted store decrypts.

Also: ``record_many`` of 10^4 records (batches of 1,000) on an encrypted store against the same
store with sealing bypassed (same run, same machine; 3 rounds each, alternating, median); ``audit --deep``'s file pass
(:func:`deep_scan`, one marker) over the largest SQLite store's files against ``cat`` of the same
files to /dev/null (page cache warm for both, ``cat`` first).
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from .common import machine, peak_rss_mb, table, write_section

EVENTS = 5
PLAN_AT = 1_000_000  # the size at which planning is timed on the encrypted store and its plaintext twin
PLAN_ROUNDS = 31
WORDS = [f"w{k}" for k in range(4000)]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _fill(store: Any, rng: random.Random, start: int, stop: int, batch: int = 50_000, twin: Any = None) -> float:
    """Import fillers f{start}… f{stop - 1} into ``store`` (and the same ones into ``twin``); the seconds
    ``store``'s imports took."""
    from memsteward.repair.artifacts import Artifact, Snapshot

    spent = 0.0
    for lo in range(start, stop, batch):
        arts = {f"f{k}": Artifact(f"f{k}", "record", None, 1, _text(rng, rng.randint(6, 10)), {}, "servable")
                for k in range(lo, min(stop, lo + batch))}
        t = time.perf_counter()
        store.import_snapshot(Snapshot(arts, ()))
        spent += time.perf_counter() - t
        if twin is not None:
            twin.import_snapshot(Snapshot(arts, ()))
    return spent


def _plaintext_twin(path: str) -> Any:
    """A SQLite store that never seals (as before encryption at rest): unsealed, its vault's seal a no-op."""
    from memsteward.store.sqlstore import Store

    twin = Store.open(path, create=True)
    twin.conn.execute(twin.q.set_sealed, (0,))
    twin.sealed = False
    twin.vault.seal = lambda rows: list(rows)  # type: ignore[method-assign]
    return twin


def _plan_pair(store: Any, twin: Any, policy: Any, n: int) -> list[Any]:
    """Median time to plan the same small delete in the encrypted ``store`` and its plaintext ``twin``
    (alternating, after one untimed plan each), and the rows one plan of ``store`` decrypts."""
    from memsteward.repair.events import parse_event
    from memsteward.repair.plan import compute_plan

    events = []
    for s in (store, twin):
        root = _cascade(s, random.Random(11), "plan")
        events.append(parse_event({"type": "delete", "roots": [root]}, s))
    opened: list[int] = []
    real_open = store.vault.open

    def counting(rows: Any, *a: Any, **k: Any) -> Any:
        rows = list(rows)
        opened.append(sum(1 for r in rows if r[2] is not None or r[3].startswith("ms1:")))
        return real_open(rows, *a, **k)

    store.vault.open = counting
    compute_plan(policy, store, events[0], "mincut", "ortools")
    store.vault.open = real_open
    compute_plan(policy, twin, events[1], "mincut", "ortools")
    times: list[list[float]] = [[], []]
    for _ in range(PLAN_ROUNDS):
        for k, s in enumerate((store, twin)):
            t = time.perf_counter()
            compute_plan(policy, s, events[k], "mincut", "ortools")
            times[k].append(time.perf_counter() - t)
    enc, plain = (statistics.median(x) for x in times)
    return [f"{n:,}", f"{enc * 1e3:.2f}", f"{plain * 1e3:.2f}", f"{enc / plain:.2f}×", sum(opened),
            f"{os.getloadavg()[0]:.1f}"]


def _cascade(store: Any, rng: random.Random, tag: str) -> str:
    """A root record, 5 summaries in a chain (each from the root or the previous one and a filler),
    6 caches of them: 12 artifacts in C(F)."""
    root = f"root-{tag}"
    store.record({"id": root, "kind": "record", "content": f"marker {tag} " + _text(rng, 20)})
    prev = root
    for k in range(5):
        s = f"sum-{tag}-{k}"
        store.record({"id": s, "kind": "summary", "content": _text(rng, 12)}, inputs=[prev, "f0"])
        store.record({"id": f"cache-{tag}-{k}", "kind": "cache", "content": _text(rng, 8)}, inputs=[s])
        prev = s
    store.record({"id": f"cache-{tag}-root", "kind": "cache", "content": _text(rng, 8)}, inputs=[root])
    return root


class Reader(threading.Thread):
    """Reads filler artifacts on its own connection until stopped; keeps the longest read."""

    def __init__(self, location: str, n: int) -> None:
        super().__init__(daemon=True)
        from memsteward.store.sqlstore import Store

        self.store = Store.open(location)
        self.n, self.stop, self.longest = n, threading.Event(), 0.0

    def run(self) -> None:
        rng = random.Random(7)
        while not self.stop.is_set():
            t = time.perf_counter()
            self.store.get(f"f{rng.randrange(self.n)}")
            self.longest = max(self.longest, time.perf_counter() - t)
            time.sleep(0.002)

    def finish(self) -> float:
        self.stop.set()
        self.join()
        self.store.close()
        return self.longest


def _deletes(store: Any, location: str, policy: Any, n: int, rng: random.Random) -> dict[str, float]:
    from memsteward.repair.events import parse_event
    from memsteward.repair.execute import run_event
    from memsteward.repair.plan import compute_plan

    plans, deletes, erasures, blocked, cpus = [], [], [], [], []
    real = type(store).erase_physically
    for e in range(EVENTS):
        root = _cascade(store, rng, f"{n}-{e}")
        event = parse_event({"type": "delete", "roots": [root]}, store)
        t = time.perf_counter()
        compute_plan(policy, store, event, "mincut", "ortools")
        plans.append(time.perf_counter() - t)
        spent: list[float] = []

        def timed_erase(self: Any, *a: Any, spent: list[float] = spent, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return real(self, *a, **k)
            finally:
                spent.append(time.perf_counter() - t0)

        type(store).erase_physically = timed_erase
        reader = Reader(location, n)
        reader.start()
        try:
            t, c = time.perf_counter(), time.thread_time()
            run_event(store, policy, event, "mincut", "ortools")
            deletes.append(time.perf_counter() - t)
            cpus.append(time.thread_time() - c)
        finally:
            type(store).erase_physically = real
            blocked.append(reader.finish())
        erasures.append(sum(spent))
    med = statistics.median
    return {"plan": med(plans), "delete": med(deletes), "beyond": med(d - p for d, p in zip(deletes, plans)),
            "erasure": med(erasures), "blocked": max(blocked), "cpu": med(cpus)}


def fsync_ms(directory: str, n: int = 15) -> float:
    """Median latency of a 4 KB write + fdatasync in ``directory`` now (what each commit waits for)."""
    path = os.path.join(directory, "fsync-probe")
    out = []
    with open(path, "wb", buffering=0) as fh:
        for _ in range(n):
            t = time.perf_counter()
            fh.write(b"x" * 4096)
            os.fdatasync(fh.fileno())
            out.append(time.perf_counter() - t)
    os.remove(path)
    return statistics.median(out) * 1e3


def _sizes(quick: bool, backend: str) -> list[int]:
    if backend == "postgresql":
        top = int(os.environ.get("MEMSTEWARD_BENCH_SHRED_PG_MAX", "2000000"))
        return [s for s in ([2_000, 20_000] if quick else [20_000, 200_000, 1_000_000, 2_000_000]) if s <= top]
    top = int(os.environ.get("MEMSTEWARD_BENCH_SHRED_MAX", "2000000"))
    return [s for s in ([2_000, 20_000, 200_000] if quick else [20_000, 200_000, 1_000_000, 2_000_000]) if s <= top]


def _grow(location: str, backend: str, sizes: list[int], policy: Any,
          plan_at: int | None = None) -> tuple[list[list[Any]], str | None, list[list[Any]]]:
    """The delete rows at each size, the SQLite file, and (``plan_at``: a size of ``sizes``, SQLite) the
    planning row of the encrypted store against its plaintext twin at that size."""
    from memsteward.store.sqlstore import Store

    rng = random.Random(1)
    store = Store.open(location, create=True)
    twin = _plaintext_twin(os.path.join(os.path.dirname(location), "plain.db")) if plan_at in sizes else None
    rows, have, files, planned = [], 0, None, []
    for n in sizes:
        fill = _fill(store, rng, have, n, twin=twin if twin is not None and n <= (plan_at or 0) else None)
        have = n
        if twin is not None and n == plan_at:
            planned.append(_plan_pair(store, twin, policy, n))
            print(f"[shred] planning encrypted vs plaintext at {n}: {planned[-1]}", file=sys.stderr, flush=True)
            twin.close()
            for suffix in ("", "-wal", "-shm", ".keys", ".keys-wal", ".keys-shm"):
                if os.path.exists(twin.path + suffix):
                    os.remove(twin.path + suffix)
            twin = None
        sync = fsync_ms(os.path.dirname(location) if backend == "sqlite" else tempfile.gettempdir())
        r = _deletes(store, location, policy, n, rng)
        size = sum(os.path.getsize(p) for p in (store.path, store.path + "-wal") if os.path.exists(p)) \
            if backend == "sqlite" else None
        rows.append([backend, f"{n:,}", f"{r['plan'] * 1e3:.1f}", f"{r['delete'] * 1e3:.1f}",
                     f"{r['beyond'] * 1e3:.1f}", f"{r['cpu'] * 1e3:.1f}", f"{r['erasure'] * 1e3:.1f}",
                     f"{r['blocked'] * 1e3:.1f}", f"{sync:.1f}", f"{os.getloadavg()[0]:.1f}",
                     "-" if size is None else f"{size / 1e6:.0f}", f"{(n - (sizes[sizes.index(n) - 1] if sizes.index(n) else 0)) / fill:,.0f}"])
        print(f"[shred] {backend} {n}: {rows[-1]}", file=sys.stderr, flush=True)
        files = store.path if backend == "sqlite" else None
    store.close()
    return rows, files, planned


def _record_many(tmp: str) -> list[list[Any]]:
    """Records/s of each mode: the median of 3 rounds, the modes alternating (A B B A A B) after one
    untimed warm-up batch, so neither pays the first store's imports or sits alone in a load spike."""
    from memsteward.store.sqlstore import Store

    modes = ("encrypted", "unencrypted (sealing bypassed)")
    rates: dict[str, list[float]] = {m: [] for m in modes}
    for k, mode in enumerate(["warm-up", *(modes[j] for j in (0, 1, 1, 0, 0, 1))]):
        rng = random.Random(3)
        store = Store.open(os.path.join(tmp, f"rm-{k}.db"), create=True)
        if mode.startswith("un"):
            store.vault.seal = lambda rows: list(rows)  # type: ignore[method-assign]
        t = time.perf_counter()
        for b in range(1 if mode == "warm-up" else 10):
            store.record_many([{"id": f"r{b}-{k}", "kind": "record", "content": _text(rng, 12)} for k in range(1000)])
        if mode != "warm-up":
            rates[mode].append(10_000 / (time.perf_counter() - t))
        store.close()
    plain = statistics.median(rates[modes[1]])
    return [[m, f"{statistics.median(rates[m]):,.0f}", f"{statistics.median(rates[m]) / plain:.2f}×",
             " / ".join(f"{r:,.0f}" for r in rates[m])] for m in modes]


def _deep_vs_cat(path: str) -> list[list[Any]]:
    from memsteward.shred.deepscan import deep_scan

    files = [p for p in (path, path + "-wal", path + ".keys") if os.path.exists(p)]
    size = sum(os.path.getsize(p) for p in files)
    subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    t = time.perf_counter()
    subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)
    cat = time.perf_counter() - t
    t = time.perf_counter()
    report = deep_scan(files, {"m": "marker 0-0 a text that was erased and must not be found"}, [])
    deep = time.perf_counter() - t
    return [[f"{size / 1e6:,.0f}", f"{cat:.2f}", f"{deep:.2f}", f"{deep / cat:.1f}×", report["needles"]]]


def run(quick: bool = False) -> None:
    from memsteward.policy.loader import load_policy

    start = time.time()
    policy = load_policy("policies/default.yaml")
    tmp = tempfile.mkdtemp(prefix="shred-bench-")
    sizes = _sizes(quick, "sqlite")
    plan_at = max((s for s in sizes if s <= PLAN_AT), default=None)
    rows, largest, planned = _grow(os.path.join(tmp, "s.db"), "sqlite", sizes, policy, plan_at)
    dsn = os.environ.get("MEMSTEWARD_PG_DSN")
    if dsn:
        url = f"{dsn}{'&' if '?' in dsn else '?'}schema=shred_bench_{os.getpid()}"
        try:
            rows += _grow(url, "postgresql", _sizes(quick, "postgresql"), policy)[0]
        finally:
            import psycopg
            with psycopg.connect(dsn, autocommit=True) as c:
                for s in (f"shred_bench_{os.getpid()}", f"shred_bench_{os.getpid()}_keys"):
                    c.execute(f'DROP SCHEMA IF EXISTS "{s}" CASCADE')
    rm = _record_many(tmp)
    deep = _deep_vs_cat(largest) if largest else []
    m = machine()
    md = ["## Erasure by key destruction: delete cost against store size (`bench/shred_scale.py`)\n",
          f"Commit `{m['commit']}`, {m['cores']} cores, {m['date']}, load average {os.getloadavg()[0]:.1f} (shared "
          f"machine); {time.time() - start:.0f} s, peak RSS {peak_rss_mb():.0f} MB. " + __doc__.split("\n\n", 1)[1],
          table(["backend", "artifacts", "plan ms", "delete ms", "beyond planning ms", "delete CPU ms",
                 "erasure step ms", "longest concurrent read ms", "fdatasync ms", "load", "DB MB",
                 "fill artifacts/s"], rows),
          "\n`record_many`, 10^4 records in batches of 1,000:\n",
          table(["store", "records/s (median)", "of unencrypted", "rounds"], rm)]
    if planned:
        md += [f"\nPlanning a small delete (the 12-artifact cascade) on SQLite, encrypted store against its plaintext twin "
               f"(same fillers), medians of {PLAN_ROUNDS} alternating rounds:\n",
               table(["artifacts", "encrypted ms", "plaintext ms", "ratio", "rows decrypted per plan", "load"], planned)]
    if deep:
        md += ["\n`audit --deep` file pass against `cat` on the largest SQLite store's files:\n",
               table(["MB", "cat s", "deep scan s", "ratio", "needles"], deep)]
    write_section("shred_scale", "\n".join(md))
    shutil.rmtree(tmp, ignore_errors=True)  # the stores (2.5 GB at 2·10^6)
