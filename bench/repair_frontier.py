"""MemoRepair benchmark 2: the λ frontier (paper Fig. 3), the selector ablation, provenance drop.

* λ frontier — the tool-agent trace (ToolBench-shaped), three seeds, each event type: Rep.
  against Cost as λ sweeps, for the exact min cut and, as a reference, the greedy selector
  under the same λ; mean ± std over seeds (Fig. 3 draws shaded Rep. bands and Cost caps).
* Selector ablation — min cut against Barrier+Greedy on the same candidates: the objective
  Σ (w_i − λ c_i) each reaches (plans only, many events, and larger generated instances
  from :func:`bench.repair_traces.scale_snapshot`), and executed Rep. / Cost.
* Provenance drop (paper Table 4) — a share p of influence edges is missing from the store the
  engine plans on; Leak% and Stale-use% are measured against the full graph.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from memsteward.repair.artifacts import Snapshot, parse_store_document
from memsteward.repair.events import event_from_dict
from memsteward.repair.plan import compute_plan

from .common import table, write_section
from .meclear_common import pyplot, save_plot
from .repair_policies import EVENT_TYPES, aggregate, load, progress, run_trace
from .repair_traces import SHAPES, scale_snapshot, tool_agent_trace

NAME = "repair_frontier"
LAMBDAS = [0.0, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0, 1.5, 2.0, 3.0, 5.0, 1000.0]
DROPS = [0.0, 0.005, 0.01, 0.02, 0.05]
PAPER_DROP = {0.005: (8.6, 9.4), 0.01: (17.7, 19.7), 0.02: (34.2, 38.0), 0.05: (61.8, 68.5)}


def _ms(xs: Sequence[float]) -> tuple[float, float]:
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def frontier(seeds: Sequence[int], n_events: int, lambdas: Sequence[float]) -> dict:
    """(selector, event type, λ) → list over seeds of (Rep., Cost)."""
    out: dict[tuple[str, str, float], list[tuple[float, float]]] = {}
    traces = [tool_agent_trace(seed=s, n_events=n_events) for s in seeds]
    bar = progress(len(lambdas) * len(seeds) * 3 * n_events * 2, "λ frontier")
    for lam in lambdas:
        policy = load("tool-agent", lam)
        for tr in traces:
            outs = run_trace(tr, policy, ["mincut", "greedy"], bar=bar)
            for sel in ("mincut", "greedy"):
                for et in EVENT_TYPES:
                    a = aggregate(o for o in outs if o.selector == sel and o.event_type == et)
                    out.setdefault((sel, et, lam), []).append((a["rep"], a["cost"]))
    bar.close()
    return out


def plot_frontier(fr: dict, lambdas: Sequence[float]) -> str:
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=False)
    for ax, et in zip(axes, EVENT_TYPES):
        for sel, color, label, style, z in (("greedy", "C3", "greedy", "--", 2),
                                            ("mincut", "C0", "min cut (MemoRepair)", "-o", 3)):
            pts = [fr[(sel, et, lam)] for lam in lambdas]
            rep = [_ms([p[0] for p in ps]) for ps in pts]
            cost = [_ms([p[1] for p in ps]) for ps in pts]
            xs, ys = [c[0] for c in cost], [r[0] for r in rep]
            ax.plot(xs, ys, style, ms=3, color=color, label=label, zorder=z, lw=1.2 if sel == "greedy" else 1.8)
            ax.fill_between(xs, [r[0] - r[1] for r in rep], [r[0] + r[1] for r in rep], color=color, alpha=0.15)
            ax.errorbar(xs, ys, xerr=[c[1] for c in cost], fmt="none", ecolor=color, capsize=2, lw=0.8)
            if sel == "mincut":
                k = list(lambdas).index(0.3)
                ax.annotate("λ=0.3", (xs[k], ys[k]), textcoords="offset points", xytext=(6, -12), fontsize=8)
        ax.set_title(f"{et}")
        ax.set_xlabel("Cost (normalised to Repair all)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Rep. (% of D⁺(F))")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle("Repair–cost frontier, tool-agent traces, λ sweep (mean ± std over 3 seeds)", fontsize=10)
    return save_plot(fig, "repair_frontier.png")


def objective_gaps(instances: Sequence[tuple[Any, Snapshot, dict]], tradeoff: float = 0.3) -> list[tuple]:
    """(label, n candidates, min-cut objective, greedy objective) per planned event (no execution)."""
    rows = []
    for policy, snap, ev_doc in instances:
        event = event_from_dict(ev_doc)
        mc = compute_plan(policy, snap, event, "mincut", "ortools")
        gr = compute_plan(policy, snap, event, "greedy", "ortools")
        rows.append((len(mc.candidates), mc.selection.objective_exact, gr.selection.objective_exact,
                     len(mc.selection.selected), len(gr.selection.selected)))
    return rows


def gap_summary(rows: list[tuple]) -> list[object]:
    worse = [r for r in rows if r[2] < r[1]]
    total_mc = sum((r[1] for r in rows), Fraction(0))
    total_gr = sum((r[2] for r in rows), Fraction(0))
    rel = [float((r[1] - r[2]) / r[1]) for r in worse if r[1] > 0]
    return [len(rows), f"{statistics.fmean(r[0] for r in rows):.0f}", len(worse),
            f"{100 * len(worse) / max(1, len(rows)):.1f}%",
            f"{100 * float(total_gr / total_mc):.2f}%" if total_mc else "–",
            f"{100 * max(rel):.1f}%" if rel else "0"]


def run(quick: bool = False) -> str:
    start = time.perf_counter()
    seeds = (0, 1, 2)
    n_events = 3 if quick else 20
    lambdas = [0.0, 0.3, 1.0, 1000.0] if quick else LAMBDAS
    fr = frontier(seeds, n_events, lambdas)
    plot = plot_frontier(fr, lambdas)
    rows = []
    for et in EVENT_TYPES:
        for lam in lambdas:
            rep, cost = (_ms([p[k] for p in fr[("mincut", et, lam)]]) for k in (0, 1))
            grep, gcost = (_ms([p[k] for p in fr[("greedy", et, lam)]]) for k in (0, 1))
            rows.append([et, "∞ (1000)" if lam >= 1000 else lam, f"{rep[0]:.1f} ± {rep[1]:.1f}",
                         f"{cost[0]:.2f} ± {cost[1]:.2f}", f"{grep[0]:.1f} ± {grep[1]:.1f}",
                         f"{gcost[0]:.2f} ± {gcost[1]:.2f}"])
    knee = []
    for et in EVENT_TYPES:
        ceiling = _ms([p[0] for p in fr[("mincut", et, 0.0)]])[0]
        at = [_ms([p[k] for p in fr[("mincut", et, 0.3)]])[0] for k in (0, 1)]
        knee.append(f"{et}: {100 * at[0] / ceiling:.1f}% of the λ=0 ceiling at Cost {at[1]:.2f}" if ceiling else
                    f"{et}: no repairs")
    # selector ablation on plans only: trace events and larger generated instances
    inst = []
    for shape, gen in SHAPES.items():
        policy = load(shape)
        for s in seeds:
            tr = gen(seed=s, n_events=n_events)
            snap = parse_store_document(tr.store, "<trace>")
            inst += [(shape, policy, snap, ev) for et in EVENT_TYPES for ev in tr.events[et]]
    sizes = [2000] if quick else [2000, 10000]
    gap_rows = []
    for shape in SHAPES:
        rows_s = objective_gaps([(p, sn, ev) for sh, p, sn, ev in inst if sh == shape])
        gap_rows.append([f"{shape} trace events"] + gap_summary(rows_s))
    ta = load("tool-agent")
    for n in sizes:
        big = []
        for s in range(3 if quick else 6):
            snap, ev = scale_snapshot(n, seed=s, event_share=0.3)
            big.append((ta, snap, ev))
        gap_rows.append([f"generated store, {n} artifacts"] + gap_summary(objective_gaps(big)))
    # provenance drop
    drop_rows = []
    dseeds = (0,) if quick else (0, 1, 2)
    d_events = 3 if quick else 15
    bar = progress(len(DROPS) * len(SHAPES) * len(dseeds) * 3 * d_events, "provenance drop")
    drop_res: dict[tuple[str, float], dict] = {}
    for shape, gen in SHAPES.items():
        policy = load(shape)
        trs = [gen(seed=s, n_events=d_events) for s in dseeds]
        for p in DROPS:
            outs = [o for tr in trs for o in run_trace(tr, policy, ["mincut"], drop=p, bar=bar)]
            drop_res[(shape, p)] = aggregate(outs)
    bar.close()
    for p in DROPS:
        paper = PAPER_DROP.get(p, (0.0, 0.0))
        row: list[object] = [p]
        for shape in SHAPES:
            a = drop_res[(shape, p)]
            row += [f"{a['leak']:.1f}", f"{a['stale']:.1f}", f"{a['leak'] / (100 * p):.1f}×" if p else "–"]
        row += [f"{paper[0]:.1f}", f"{paper[1]:.1f}", f"{paper[0] / (100 * p):.1f}×" if p else "–"]
        drop_rows.append(row)
    md = render(plot, rows, knee, gap_rows, drop_rows, seeds, n_events, time.perf_counter() - start)
    write_section(NAME, md)
    return md


def render(plot: str, rows: list, knee: list[str], gap_rows: list, drop_rows: list, seeds: Sequence[int],
           n_events: int, seconds: float) -> str:
    return "\n".join([
        "## MemoRepair 2: λ frontier, selector ablation, provenance drop (paper Fig. 3, Table 4)\n",
        f"**λ frontier.** Tool-agent traces, seeds {list(seeds)}, {n_events} events of each type per seed, full "
        "pipeline with the same injected failures as section 1 (10% operator, 5% validation). For each λ the "
        "tool-agent policy's tradeoff is replaced and every event is executed; Rep. and Cost are aggregated "
        "per seed, then mean ± std over seeds (the band is ±1 std of Rep., the caps ±1 std of Cost, as in the "
        "paper's Fig. 3). λ = 1000 stands for λ → ∞. Greedy is swept under the same λ for reference.\n",
        f"![frontier]({plot})\n",
        table(["event", "λ", "min cut Rep.", "min cut Cost", "greedy Rep.", "greedy Cost"], rows) + "\n",
        "At λ = 0.3 (the policies' value, the paper's knee) min cut keeps " + "; ".join(knee) + ". "
        "Paper (ToolBench, Fig. 3 / §3.1): λ = 0.3 recovers 91.1–94.3% of the Repair-all ceiling at Cost "
        "0.57–0.66, and the endpoints are Remove all (λ → ∞) and Repair all (λ = 0). Same shape here: the "
        "endpoints are exactly Remove all (Rep. = Cost = 0) and Repair all (Cost 1.00), and Rep. falls "
        "monotonically as λ grows. Where we differ: our per-artifact costs are drawn with a wide spread, so "
        "λ = 0.3 already drops the expensive low-value tail and our knee sits lower on the Rep. axis than the "
        "paper's; the level of the curve is a property of the generated costs, not of the selector.\n",
        "**Selector ablation (objective).** For each planned event, the objective Σ_{i∈S} (w_i − λ c_i) of the "
        "exact min cut and of Barrier+Greedy on the *same* candidates (λ = 0.3, plans only, no execution). The "
        "larger generated stores (`scale_snapshot`, a migration over 30% of the APIs) have deeper requirement "
        "chains (caches → prompts → summaries).\n",
        table(["instances", "events", "mean candidates", "greedy below optimum", "share",
               "greedy objective / optimum (Σ)", "worst single gap"], gap_rows) + "\n",
        "Min cut is never below greedy (Theorem 1; also property-tested in `proofs_tests`). On the small trace "
        "cascades the greedy value-to-cost order is almost always optimal too, which is why the two rows of "
        "Table 1 nearly coincide in section 1 (within about 0.5 Rep. points and 0.04 Cost); the paper (Table 1) reports Barrier+Greedy 0.9–5.1 Rep. "
        "points below MemoRepair at 0.05–0.11 higher Cost, i.e. a larger gap than ours — the engine's greedy "
        "adds a candidate together with its missing prerequisites whenever the group's profit is positive, a "
        "stronger heuristic than a plain value-to-cost ranking. At large λ greedy sometimes *publishes* slightly "
        "more than the min cut (frontier table) although its objective is never higher: Rep. is not the "
        "objective, and the min cut returns the minimal optimal closure. Greedy loses where a costly shared "
        "prerequisite pays off only for several dependents together — frequent in the larger generated "
        "stores, rare in our shallow traces. Executed Rep./Cost of both selectors are in the frontier table "
        "(greedy columns) and in Table 1 of section 1.\n",
        "**Provenance drop.** Each influence edge is missing from the store the engine plans on with "
        "probability p (a fresh seeded sample per event); MemoRepair (λ = 0.3) runs on that store; Leak% and "
        "Stale-use% are measured against the cascade of the full graph (an artifact leaks when it stays "
        "servable at its pre-event version). Both shapes, 3 seeds, all event types pooled. Paper: Table 4 "
        "(ToolBench).\n",
        table(["p_drop", "tool-agent Leak", "tool-agent Stale", "amplification", "assistant Leak",
               "assistant Stale", "amplification", "paper Leak", "paper Stale", "paper ampl."], drop_rows) + "\n",
        "Leak grows linearly with p, as in the paper, but with a much smaller amplification (Leak / p): a "
        "dropped edge hides only the descendants that are reachable through it alone. Our traces are 2–4 "
        "levels deep with several parents per derived artifact, so most artifacts stay reachable through "
        "another edge; the paper's 18× at p = 0.01 implies much deeper or narrower cascades (long chains of "
        "single-parent derivations). Either way p = 0 gives exactly 0: complete influence provenance is the "
        "invariant the zero-Leak contract rests on, and the engine cannot detect a missing edge by itself.\n",
        f"Section total {seconds:.0f} s.\n",
    ])
