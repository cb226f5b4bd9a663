"""Benchmark: the dry run of a small delete as the store grows (issue 26).

A dry run plans on the store (a pure read) and executes on an in-memory copy. Before issue 26
the copy was the whole store (``copy_in_memory``: SQLite's page backup), so a 4-artifact delete
cost more the larger the store; now the copy holds only what the event reads
(``copy_scope``: C(F), the influence parents of its members and their artifacts). Both are timed
in the same run on the same SQLite file, for stores of 2·10^4 … 2·10^6 artifacts
(:func:`bench.repair_traces.scale_batches`, the tool-agent shape): the median of ``repeats`` calls,
in-process (no start-up). The ratio to the smallest store is what to compare.

    python -m bench.store_dryrun [--sizes 20000,200000,2000000] [--repeats 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from typing import Any

from .common import machine, table, write_section

NAME = "store_dryrun"
SIZES = [20_000, 200_000, 2_000_000]
MAX_CASCADE = 6  # "a small delete": a root whose cascade holds at most this many artifacts


def _build(n: int, path: str) -> dict[str, Any]:
    from memsteward.store import open_store

    from .repair_traces import scale_batches

    t = time.perf_counter()
    store = open_store(path, create=True)
    for batch in scale_batches(n, seed=0):
        store.import_snapshot(batch)
    built = time.perf_counter() - t
    small, size = None, 0
    for k in range(min(24 * max(1, n // 100), 2000)):  # the first root whose cascade is closest to 4
        reach = len(store.reach([f"traj-{k}"]))
        if 2 <= reach <= MAX_CASCADE and (small is None or abs(reach - 4) < abs(size - 4)):
            small, size = {"type": "delete", "roots": [f"traj-{k}"]}, reach
            if reach == 4:
                break
    store.close()
    if small is None:
        raise RuntimeError(f"no small delete in the store of {n}")
    return {"n": n, "build_s": built, "event": small, "cascade": size, "db_mb": os.path.getsize(path) / 2**20}


def _old_dry_run(store: Any, policy: Any, event: Any) -> Any:
    """The dry run before issue 26: the whole store copied into memory, then the event run on it."""
    from memsteward.repair.execute import run_event

    copy = store.copy_in_memory()
    try:
        return run_event(copy, policy, event, "mincut", "ortools")
    finally:
        copy.close()


def _median(fn: Any, repeats: int) -> tuple[float, float, Any]:
    """Median wall and median CPU time of ``repeats`` calls (CPU: this process's, robust to a loaded machine's
    waits for a core, which swamp a call of a few milliseconds) and the last call's result."""
    times, cpus, out = [], [], None
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        cpus.append(time.process_time() - c)
        times.append(time.perf_counter() - t)
    return statistics.median(times), statistics.median(cpus), out


def measure(n: int, folder: str, repeats: int) -> dict[str, Any]:
    from memsteward.repair.events import event_from_dict
    from memsteward.repair.execute import dry_run
    from memsteward.store import open_store

    from .repair_policies import load

    path = os.path.join(folder, f"store-{n}.db")
    row = _build(n, path)
    policy = load("tool-agent")
    store = open_store(path)
    event = event_from_dict(row["event"])
    dry_run(store, policy, event, "mincut", "ortools")  # warm: imports, the policy's first compilation
    new_s, new_cpu, new = _median(lambda: dry_run(store, policy, event, "mincut", "ortools"), repeats)
    old_s, old_cpu, old = _median(lambda: _old_dry_run(store, policy, event), repeats)
    store.close()
    os.remove(path)
    assert new.to_json() == old.to_json(), "the two dry runs disagree"
    return {**row, "new_s": new_s, "new_cpu": new_cpu, "old_s": old_s, "old_cpu": old_cpu}


def _commit() -> str:
    """The commit measured, ``+dirty`` when the tracked files differ from it."""
    commit = machine()["commit"]
    try:
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, cwd=os.path.dirname(os.path.abspath(__file__)), check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return commit
    return commit + ("+dirty" if dirty else "")


def run(sizes: list[int] = SIZES, repeats: int = 9, quick: bool = False) -> str:
    if quick:
        sizes, repeats = sizes[:2], 1
    rows = []
    commit, load_start, t0 = _commit(), os.getloadavg(), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memsteward-dryrun-") as folder:
        for n in sizes:
            rows.append(measure(n, folder, repeats))
            r = rows[-1]
            print(f"n={n}: build {r['build_s']:.0f} s, copy_scope {r['new_s']:.3f} s ({r['new_cpu']:.3f} s CPU), "
                  f"whole copy {r['old_s']:.3f} s ({r['old_cpu']:.3f} s CPU), load {os.getloadavg()[0]:.2f}", flush=True)
    wall, load_end = time.perf_counter() - t0, os.getloadavg()
    b = rows[0]
    body = table(["artifacts", "db MB", "|C(F)|", "dry run, copy of C(F): wall (s)", "× smallest", "CPU (s)",
                  "× smallest", "dry run, whole-store copy (before): wall (s)", "× smallest", "CPU (s)", "× smallest"],
                 [[f"{r['n']:,}", f"{r['db_mb']:.0f}", r["cascade"],
                   f"{r['new_s']:.4f}", f"{r['new_s'] / b['new_s']:.2f}", f"{r['new_cpu']:.4f}",
                   f"{r['new_cpu'] / b['new_cpu']:.2f}", f"{r['old_s']:.3f}", f"{r['old_s'] / b['old_s']:.2f}",
                   f"{r['old_cpu']:.3f}", f"{r['old_cpu'] / b['old_cpu']:.2f}"] for r in rows])
    text = ("## Dry run of a small delete as the store grows (issue 26)\n\n"
            "`repair --dry-run` plans on the store and executes on an in-memory copy. Both copies timed in the "
            f"same run on the same SQLite file, median wall and median CPU time (this process) of {repeats} in-process "
            "calls (no start-up; on a loaded machine the CPU column is the one to compare): the copy of what "
            "the event reads (`copy_scope`: C(F), its members' parents and their artifacts) against the whole-store "
            "copy used before. Both give the same plan (asserted).\n\n" + body + "\n\n"
            f"Commit `{commit}`; the run took {wall / 60:.1f} min (building the stores included); 1-minute load "
            f"{load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end ({os.cpu_count()} cores). "
            f"Command: `nice -n 5 python -m bench.store_dryrun --sizes {','.join(map(str, sizes))} "
            f"--repeats {repeats}`.\n")
    write_section(NAME, text)
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--repeats", type=int, default=9)  # a small delete's dry run is ~10 ms: 3 calls are noise at load 9
    args = ap.parse_args()
    print(run([int(s) for s in args.sizes.split(",")], args.repeats))


if __name__ == "__main__":
    main()
