"""MemoRepair benchmark 3: planning at scale, the SQLite barrier, overlapping events.

* Planning — generated tool-agent stores of 10^3 … 10^6 artifacts
  (:func:`bench.repair_traces.scale_snapshot`, a migration of 30% of the APIs, so about 13% of
  the store is in C(F)). Each (size, backend) runs in its own subprocess so its peak RSS
  (VmHWM) is its own: graph build, cascade, candidates (mode assignment,
  SCCs, executability), exact selection (min cut) and execution order, each timed, and
  ``compute_plan`` end to end. OR-Tools at every size; pure networkx only while its selection
  stays far below a minute (its growth is extrapolated from the previous size).
* Barrier — withdrawing 10^5 artifacts in one transaction in a file-backed SQLite store (WAL,
  synchronous=FULL) in a temporary directory, on a fresh copy of the database per repeat.
* Overlapping events — a delete and a migration whose cascades overlap, run one after another
  on the same store through the full pipeline: what the second event sees and does.
"""

from __future__ import annotations

import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

NAME = "repair_scale"
SIZES = [1_000, 10_000, 100_000, 1_000_000]
NX_LIMIT_S = 60.0


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_mb() -> float:
    """Peak RSS of this process image (VmHWM). ``getrusage``'s ru_maxrss is not used: on Linux it also
    counts the parent's RSS at fork time, so a worker spawned by a large parent would inherit its peak."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------- subprocess workers


def plan_worker(n: int, backend: str, repeats: int) -> dict[str, Any]:
    from memsteward.repair.candidates import assign
    from memsteward.repair.closure import select
    from memsteward.repair.events import event_from_dict
    from memsteward.repair.graph import cascade, influence_graph
    from memsteward.repair.operators import operators_for
    from memsteward.repair.plan import compute_plan, execution_order

    from .repair_policies import load
    from .repair_traces import scale_snapshot

    import importlib

    for mod in ("numpy", "networkx", "ortools.graph.python.max_flow"):  # before the baseline: Δpeak is
        importlib.import_module(mod)  # what planning adds, not imports

    rss0 = _rss_mb()
    t = time.perf_counter()
    snap, ev = scale_snapshot(n, seed=0, event_share=0.3)
    gen_s = time.perf_counter() - t
    policy = load("tool-agent")
    event = event_from_dict(ev)
    rss_gen = _rss_mb()
    peak_pre = _peak_mb()  # high-water mark before planning (imports, store)
    phases: dict[str, list[float]] = {k: [] for k in ("graph", "cascade_s", "candidates_s", "selection", "order",
                                                       "compute_plan")}
    info: dict[str, Any] = {}
    for _ in range(repeats):
        t = time.perf_counter()
        g = influence_graph(snap.artifacts.keys(), snap.influence_edges())
        t1 = time.perf_counter()
        affected = cascade(g, event.roots)
        t2 = time.perf_counter()
        asg = assign(policy, snap.artifacts, g, event, operators_for(policy))
        t3 = time.perf_counter()
        sel = select(asg.candidates, policy.selection.tradeoff, "mincut", None, backend)
        t4 = time.perf_counter()
        order = execution_order(asg.candidates, sel.selected)
        t5 = time.perf_counter()
        for k, v in zip(("graph", "cascade_s", "candidates_s", "selection", "order"), (t1 - t, t2 - t1, t3 - t2,
                                                                                  t4 - t3, t5 - t4)):
            phases[k].append(v)
        info = {"cascade": len(affected), "candidates": len(asg.candidates), "selected": len(sel.selected),
                "executable": sum(c.executable for c in asg.candidates), "order_len": len(order),
                "method": sel.method, "edges": len(snap.edges), "artifacts": len(snap.artifacts)}
        del g, asg, sel, order
        t = time.perf_counter()
        plan = compute_plan(policy, snap, event, "mincut", backend)
        phases["compute_plan"].append(time.perf_counter() - t)
        assert len(plan.selection.selected) == info["selected"]
        del plan
    return {"n": n, "backend": backend, "repeats": repeats, "generate_s": gen_s,
            **{k: statistics.median(v) for k, v in phases.items()}, **info,
            "rss_start_mb": rss0, "rss_after_store_mb": rss_gen, "peak_before_plan_mb": peak_pre,
            "peak_mb": _peak_mb()}


def barrier_worker(n_desc: int, repeats: int) -> dict[str, Any]:
    from memsteward.repair.execute import policy_document, root_successors
    from memsteward.repair.events import event_from_dict
    from memsteward.repair.plan import compute_plan
    from memsteward.repair.store import Store

    from .repair_policies import load
    from .repair_traces import barrier_snapshot

    snap, ev = barrier_snapshot(n_desc)
    policy = load("tool-agent")
    event = event_from_dict(ev)
    with tempfile.TemporaryDirectory(prefix="memsteward-barrier-") as tmp:
        path = os.path.join(tmp, "store.db")
        store = Store(path)
        t = time.perf_counter()
        store.import_snapshot(snap)
        import_s = time.perf_counter() - t
        t = time.perf_counter()
        plan = compute_plan(policy, store.snapshot(), event, "mincut", "ortools")
        plan_s = time.perf_counter() - t
        doc, pdoc, roots = plan.to_json(), policy_document(policy), root_successors(event, snap)
        store.close()
        times = []
        for k in range(repeats):
            copy = os.path.join(tmp, f"copy{k}.db")
            shutil.copyfile(path, copy)
            st = Store(copy)
            gen = st.generation()
            t = time.perf_counter()
            st.barrier(doc, pdoc, roots, gen)
            times.append(time.perf_counter() - t)
            withdrawn = sum(1 for s, _ in st.states().values() if s == "withdrawn")
            st.close()
            os.remove(copy)
    return {"barrier": len(plan.barrier), "withdrawn": withdrawn, "barrier_s": statistics.median(times),
            "barrier_all": times, "import_s": import_s, "plan_s": plan_s, "steps": len(plan.order)}


def _spawn(args: list[str], timeout: float = 900) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "bench.repair_scale", *args], capture_output=True, text=True,
                         timeout=timeout, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if out.returncode != 0:
        raise RuntimeError(f"worker {args} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- overlapping events


def overlapping(seeds: tuple[int, ...], max_pairs: int, repeats: int) -> dict[str, Any]:
    """Pairs (delete a trajectory, migrate an API) whose cascades overlap, run one after another."""
    from memsteward.repair.artifacts import parse_store_document
    from memsteward.repair.events import parse_event
    from memsteward.repair.execute import run_event
    from memsteward.repair.graph import cascade, influence_graph
    from memsteward.repair.store import Store

    from .repair_policies import load, progress
    from .repair_traces import tool_agent_trace

    policy = load("tool-agent")
    agg: dict[str, Any] = {"pairs": 0, "overlap": 0, "withdrawn_by_first": 0, "republished_by_first": 0,
                           "second_republished_withdrawn": 0, "second_republished_republished": 0,
                           "second_unservable_candidates": 0, "leaked": 0, "union": 0, "stale": 0, "traces": 0,
                           "deleted_calls_served": 0, "t_alone": [], "t_second": [], "t_both": []}
    pairs = []
    for s in seeds:
        tr = tool_agent_trace(seed=s, n_events=40)
        snap = parse_store_document(tr.store, "<trace>")
        g = influence_graph(snap.artifacts.keys(), snap.influence_edges())
        migs = {ev["roots"][0]: ev for ev in tr.events["migrate"]}
        for dev in tr.events["delete"]:
            c1 = cascade(g, dev["roots"])
            for api, mev in sorted(migs.items()):
                c2 = cascade(g, [api])
                if (c1 & c2) - set(dev["roots"]):
                    pairs.append((tr, snap, dev, mev, c1, c2))
                    break
    pairs = pairs[:max_pairs]
    bar = progress(len(pairs), "overlapping events")
    for tr, snap, dev, mev, c1, c2 in pairs:
        base = Store()
        base.import_snapshot(snap)
        alone, second, both = [], [], []
        for _ in range(repeats):
            st = base.copy_in_memory()
            t = time.perf_counter()
            run_event(st, policy, parse_event(mev, st.snapshot()), "mincut", "ortools")
            alone.append(time.perf_counter() - t)
            st.close()
            st = base.copy_in_memory()
            t = time.perf_counter()
            p1 = run_event(st, policy, parse_event(dev, st.snapshot()), "mincut", "ortools")
            before2 = st.states()
            t2 = time.perf_counter()
            p2 = run_event(st, policy, parse_event(mev, st.snapshot()), "mincut", "ortools")
            t3 = time.perf_counter()
            second.append(t3 - t2)
            both.append(t3 - t)
            served = {a.id: a for a in st.serve()}
            st.close()
        ov = (c1 & c2) - set(dev["roots"]) - set(mev["roots"])
        agg["pairs"] += 1
        agg["overlap"] += len(ov)
        agg["withdrawn_by_first"] += sum(1 for x in ov if before2[x][0] == "withdrawn")
        agg["republished_by_first"] += sum(1 for x in ov if x in p1.republished)
        agg["second_republished_withdrawn"] += sum(1 for x in ov if x in p2.republished and x not in p1.republished)
        agg["second_republished_republished"] += sum(1 for x in ov if x in p2.republished and x in p1.republished)
        agg["second_unservable_candidates"] += sum(1 for c in p2.candidates if c.id in p2.unservable)
        union = c1 | c2
        base_v = {x: 1 for x in union}
        base_v.update(p2.base_versions)
        leaked = {x for x in union if x in served and served[x].version == base_v[x]}
        agg["leaked"] += len(leaked)
        agg["union"] += len(union)
        aff = [t for t in tr.tasks if union & set(t)]
        agg["traces"] += len(aff)
        agg["stale"] += sum(1 for t in aff if leaked & set(t))
        deleted = snap.artifacts[dev["roots"][0]].content
        secrets = {json.dumps(c.get("args", {}), sort_keys=True) for c in deleted.get("calls", [])}
        for a in served.values():
            if isinstance(a.content, dict) and a.kind == "skill":
                for c in a.content.get("calls", []):
                    orig = {k.removesuffix("_v2"): v for k, v in c.get("args", {}).items()}
                    if a.id in c1 and json.dumps(orig, sort_keys=True) in secrets and a.id in p2.republished \
                            and a.id not in p1.republished:
                        agg["deleted_calls_served"] += 1
        agg["t_alone"].append(statistics.median(alone))
        agg["t_second"].append(statistics.median(second))
        agg["t_both"].append(statistics.median(both))
        base.close()
        bar.update(1)
    bar.close()
    return agg


# --------------------------------------------------------------------------- section


def run(quick: bool = False) -> str:
    from .common import table, write_section
    from .meclear_common import pyplot, save_plot
    from .repair_policies import progress

    start = time.perf_counter()
    sizes = [1_000, 10_000] if quick else SIZES
    results: list[dict[str, Any]] = []
    nx_next_ok = True
    bar = progress(len(sizes) * 2, "planning scale")
    for n in sizes:
        reps = 3 if n <= 100_000 else 1
        results.append(_spawn(["--worker", "plan", str(n), "ortools", str(reps)]))
        bar.update(1)
        if nx_next_ok and n <= 100_000:
            r = _spawn(["--worker", "plan", str(n), "networkx", str(reps)])
            results.append(r)
            nx_next_ok = r["selection"] * 12 < NX_LIMIT_S
        bar.update(1)
    bar.close()
    n_barrier = 10_000 if quick else 100_000
    bres = _spawn(["--worker", "barrier", str(n_barrier), "3"])
    ov = overlapping((0,) if quick else (0, 1, 2), 6 if quick else 30, 1 if quick else 3)
    md = render(results, bres, ov, time.perf_counter() - start, pyplot, save_plot, table)
    write_section(NAME, md)
    return md


def render(results: list[dict], bres: dict, ov: dict, seconds: float, pyplot: Any, save_plot: Any,
           table: Any) -> str:
    by = {(r["n"], r["backend"]): r for r in results}
    rows = []
    for r in results:
        nx = by.get((r["n"], "networkx"))
        ot = by[(r["n"], "ortools")]
        rows.append([f"{r['artifacts']:,}", r["backend"], f"{r['cascade']:,}", f"{r['candidates']:,}",
                     f"{r['graph']:.2f}", f"{r['candidates_s']:.2f}", f"{r['selection']:.3f}",
                     f"{r['order']:.2f}", f"{r['compute_plan']:.2f}",
                     f"{nx['selection'] / ot['selection']:.1f}×" if nx and r["backend"] == "ortools" else "",
                     f"{nx['compute_plan'] / ot['compute_plan']:.2f}×" if nx and r["backend"] == "ortools" else "",
                     f"{r['peak_mb']:.0f}", f"{r['rss_after_store_mb']:.0f}",
                     (f"{r['peak_mb'] - r['rss_after_store_mb']:.0f}" if r["peak_mb"] > r["peak_before_plan_mb"] + 1
                      else f"< {max(1.0, r['peak_before_plan_mb'] - r['rss_after_store_mb']):.0f}"), r["repeats"]])
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for backend, color in (("ortools", "C0"), ("networkx", "C3")):
        rs = [r for r in results if r["backend"] == backend]
        ax.loglog([r["candidates"] for r in rs], [r["selection"] for r in rs], "-o", color=color,
                  label=f"selection ({backend})")
    rs = [r for r in results if r["backend"] == "ortools"]
    ax.loglog([r["candidates"] for r in rs], [r["candidates_s"] for r in rs], "--s", color="C2",
              label="candidates (shared)")
    ax.loglog([r["candidates"] for r in rs], [r["compute_plan"] for r in rs], ":^", color="k",
              label="compute_plan total (OR-Tools)")
    ax.set_xlabel("candidates |D⁺(F)|")
    ax.set_ylabel("seconds (median)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    plot = save_plot(fig, "repair_scale.png")
    biggest = max(rs, key=lambda r: r["n"])
    nxs = sorted((r for r in results if r["backend"] == "networkx"), key=lambda r: r["n"])
    if len(nxs) >= 2 and nxs[-1]["n"] < biggest["n"]:
        growth = nxs[-1]["selection"] / nxs[-2]["selection"]
        steps = math.log10(biggest["n"] / nxs[-1]["n"])
        nx_note = (f"networkx ran up to {nxs[-1]['artifacts']:,} artifacts; its selection grew "
                   f"{growth:.0f}× from {nxs[-2]['artifacts']:,} to {nxs[-1]['artifacts']:,}, so at "
                   f"{biggest['artifacts']:,} it would take about {nxs[-1]['selection'] * growth ** steps:.0f} s "
                   "(extrapolated, not run: the 10^6 point is OR-Tools only). ")
    else:
        nx_note = ""
    ta, ts, tb = (statistics.median(ov[k]) if ov[k] else float("nan") for k in ("t_alone", "t_second", "t_both"))
    return "\n".join([
        "## MemoRepair 3: planning at scale, the SQLite barrier, overlapping events (paper Table 4)\n",
        "**Planning.** Generated tool-agent stores (`scale_snapshot`: per 100 artifacts 1 API, 24 trajectories, "
        "20 caches, 20 chains, 15 prompt skills, 15 summaries, 5 digests; a migration of 30% of the APIs). Each "
        "(size, backend) runs in a fresh subprocess; times are medians of `repeats` runs (one run at 10^6), "
        "peak = the subprocess's peak RSS (VmHWM), store = RSS once the libraries are imported and the store "
        "is in memory, Δpeak = peak − store (what planning adds; shown as an upper bound \"< x\" when the "
        "process's high-water mark was already reached before planning, by library imports). Phases: graph = building the influence DiGraph over the whole store; candidates = "
        "mode assignment, SCCs and executability over C(F) (includes its own cascade); selection = the exact "
        "min cut; order = topological order of E^req[S]; compute_plan = the whole pure planning call end to "
        "end (it rebuilds the graph). Ratios are networkx / OR-Tools in the same run. networkx runs only while "
        f"12× its previous selection time stays under {NX_LIMIT_S:.0f} s, and never at 10^6.\n",
        table(["artifacts", "backend", "|C(F)|", "candidates", "graph s", "candidates s", "selection s", "order s",
               "compute_plan s", "nx/OR sel.", "nx/OR total", "peak MB", "store MB", "Δpeak MB", "repeats"], rows) + "\n",
        f"![scale]({plot})\n",
        f"At the largest size ({biggest['artifacts']:,} artifacts, {biggest['candidates']:,} candidates) "
        f"planning takes {biggest['compute_plan']:.1f} s end to end with OR-Tools, of which the exact selection "
        f"is {biggest['selection']:.2f} s; peak memory {biggest['peak_mb'] / 1024:.1f} GB. Reference (engine "
        "author, same machine class): at 100k descendants OR-Tools min cut ≈ 1.5–1.8 s, networkx ≈ 10–60 s, "
        "candidates ≈ 5–7 s. The paper reports no planning times; it only states that selection is a single "
        "s–t min cut (Theorem 1). Where time goes: building the whole-store graph and the candidates dominate, "
        "not the min cut; networkx's pure-Python preflow-push grows clearly faster than OR-Tools' C++ solver. "
        + nx_note + "Memory: Δpeak is what planning adds on top of the store held in memory (Artifact objects); at "
        f"{biggest['artifacts']:,} artifacts the whole-store networkx DiGraph and the candidate structures add {biggest['peak_mb'] - biggest['rss_after_store_mb']:.0f} MB.\n",
        f"**Barrier.** Withdrawing {bres['barrier']:,} artifacts (C(F) of one delete, plan from `compute_plan`) in "
        "a file-backed SQLite store (WAL, synchronous=FULL, temp dir), one transaction that also records the "
        "event, the plan, the plan steps and a hash-chained audit row per withdrawn artifact: "
        f"**{bres['barrier_s']:.2f} s** (median of {len(bres['barrier_all'])}: "
        f"{', '.join(f'{x:.2f}' for x in bres['barrier_all'])} s), i.e. "
        f"{bres['barrier'] / bres['barrier_s']:,.0f} artifacts/s; {bres['withdrawn']:,} artifacts withdrawn "
        f"afterwards. For scale: importing the store took {bres['import_s']:.2f} s and planning the event "
        f"{bres['plan_s']:.2f} s. Paper Table 4 reports the barrier only as a ratio (no barrier = 0.52× the "
        "repair time, at 100% Leak and Stale during repair); here the barrier is a fixed, one-transaction cost "
        "before any repair runs.\n",
        f"**Overlapping events.** {ov['pairs']} pairs on tool-agent traces: delete a trajectory, then migrate an "
        "API whose cascade overlaps the first one, on the same store through the full pipeline (λ = 0.3, no "
        f"injected failures). The overlaps hold {ov['overlap']} artifacts (roots excluded): before the second "
        f"event {ov['withdrawn_by_first']} of them were withdrawn by the first event and "
        f"{ov['republished_by_first']} republished by it. The second event's barrier withdraws all of its "
        f"cascade again; it republishes {ov['second_republished_republished']} of the overlap that the first "
        f"had republished (a newer successor, rebuilt from the current support) and "
        f"{ov['second_republished_withdrawn']} that the first had left withdrawn — rebuilt from servable "
        "support only. "
        f"{ov['second_unservable_candidates']} of its candidates were withdrawn before it started; their "
        "stored content is never used as support (`TransitionPlan.unservable`). After both events Leak = "
        f"{100 * ov['leaked'] / max(1, ov['union']):.1f}% and Stale-use = "
        f"{100 * ov['stale'] / max(1, ov['traces']):.1f}% over the union of both cascades, and "
        f"{ov['deleted_calls_served']} served chain carries a call of the deleted trajectory. "
        f"Time (medians over pairs): the migration alone {1000 * ta:.1f} ms, after the delete {1000 * ts:.1f} ms "
        f"({ts / ta:.2f}×); both events {1000 * tb:.1f} ms ({tb / ta:.2f}× the migration alone). Paper Table 4: "
        "overlapping events 1.86× repair time with Leak = Stale = 0 — equal on exposure; our ratio is the cost "
        "of running two barriers and two plans.\n",
        "This benchmark found a bug, now fixed: before the fix, a chain procedure withdrawn by a delete (its "
        "only trajectory erased) was reached again by a later migration of its API and rewritten from its "
        "*previous* (withdrawn) version's calls — republishing the deleted trajectory's call arguments. The "
        "chain operator now uses the previous version only when it was servable before the event "
        "(regression test `proofs_tests/test_repair_overlap.py`).\n",
        f"Section total {seconds:.0f} s.\n",
    ])


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--worker":
        kind = sys.argv[2]
        if kind == "plan":
            res = plan_worker(int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
        else:
            res = barrier_worker(int(sys.argv[3]), int(sys.argv[4]))
        print(json.dumps(res))
    else:
        from .__main__ import main

        sys.exit(main([*sys.argv[1:], NAME]))
