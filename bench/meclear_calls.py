"""MeClear benchmark 2: evaluator calls — what each method costs and what a call buys.

1. Calls per case of every method on the paper-shaped synthetic cohort (K = 5): distinct
   coalitions × trials (plus one rating call per memory for direct flagging).
2. Quality at equal call budgets (K = 5): MeClear sampled under the policy's ``call_budget``
   (it caps L), ContextCite / ProxySPEX with the largest B that fits the same budget per case,
   against LOO, direct flagging and exact enumeration at their fixed costs.
3. Larger contexts K ∈ {10, 16, 20} (parametric synthetic games): fixed-L sampling against
   the adaptive mode (beyond the paper; it stops on the decision, Theorem D in
   specs/ADAPTIVE_STOPPING.md) at equal quality — the calls each needs to reach the same Recall@|M|.
4. Trials: the calls saved by reading sampled coalitions at one trial (``sample_trials: 1``)
   and what it does to recall and recovery at trial noise 0.02 and 0.10.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from memsteward.clearance.baselines import ablations
from memsteward.clearance.case import Case, case_evaluator, case_game, parse_case
from memsteward.clearance.cohort import synthetic_cohort
from memsteward.clearance.game import OutcomeStore
from memsteward.clearance.metrics import CaseOutcome, outcome
from memsteward.clearance.pipeline import run_method
from memsteward.policy.model import AdaptiveSpec, ClearanceSpec

from .common import table, write_section
from .meclear_common import (
    PAPER_BUDGET,
    PAPER_OVERALL,
    Variant,
    metric_cells,
    paper_spec,
    progress,
    pyplot,
    run_variants,
    save_plot,
    standard_variants,
    with_samples,
)
from .stats import smallest_reaching

NAME = "meclear_calls"
BUDGETS = (16, 24, 32, 40, 48, 64)
BUDGET_METHODS = ("MeClear (call_budget)", "MeClear stratified (call_budget)", "ContextCite (B fitted)",
                  "ProxySPEX (B fitted)")
ADAPTIVE = AdaptiveSpec(enabled=True, batch=8, max_permutations=32, bound="normal")


def fitting_samples(case: Case, spec: ClearanceSpec, budget: int, cap: int = 512) -> int:
    """The largest B whose ablations (plus M and the cleared context) fit ``budget`` calls."""
    players = case.task.ids
    masks = ablations(players, cap, spec.seed)  # B masks are the first B of the same seeded stream
    seen = {frozenset(players)}
    cost, best = spec.trials, 0  # M itself
    for b, mask in enumerate(masks, start=1):
        extra = 0 if mask in seen else spec.trials
        if cost + extra + spec.trials > budget:  # + the cleared context's evaluation
            break
        seen.add(mask)
        cost += extra
        best = b
    return best


def budget_run(cases: Sequence[Case], spec: ClearanceSpec, budgets: Sequence[int],
               quiet: bool = False) -> dict[tuple[str, int], list[CaseOutcome]]:
    """MeClear (call_budget caps L), ContextCite and ProxySPEX (B fitted per case) per budget."""
    out: dict[tuple[str, int], list[CaseOutcome]] = {}
    for case in progress(cases, "meclear_calls budgets", quiet):
        ev = case_evaluator(case, spec)
        store = OutcomeStore()
        for budget in budgets:
            me = spec.model_copy(update={"exact": "never", "permutations": 64, "call_budget": budget})
            runs = [("MeClear (call_budget)", "meclear", me),
                    ("MeClear stratified (call_budget)", "meclear", me.model_copy(update={"estimator": "stratified"}))]
            b = fitting_samples(case, spec, budget)
            if b >= 1:
                runs += [("ContextCite (B fitted)", "contextcite", with_samples(spec, b)),
                         ("ProxySPEX (B fitted)", "proxyspex", with_samples(spec, b))]
            for label, method, s in runs:
                plan = run_method(method, case_game(case, s, ev, store), s)
                out.setdefault((label, budget), []).append(
                    replace(outcome(plan, case.faults, case.structure), method=label))
    return out


def large_k(k: int, n: int, quiet: bool) -> tuple[dict[str, list[CaseOutcome]], list[int],
                                                 dict[str, list[tuple[str, int]]]]:
    """Fixed-L ladder and adaptive variants on n synthetic cases with K = k (ω off)."""
    spec = paper_spec(retrieval_budget=k, exact="never", interactions="none")
    ladder = [4, 8, 16, 32, 64, 128]  # the adaptive mode draws the same seeded permutations first
    variants = [Variant(f"fixed L={L}", "meclear", spec.model_copy(update={"permutations": L})) for L in ladder]
    variants.append(Variant("fixed L=32, 1 sample trial", "meclear",
                            spec.model_copy(update={"permutations": 32, "sample_trials": 1})))
    decided = spec.model_copy(update={"permutations": 8, "adaptive": ADAPTIVE})
    variants += [
        Variant("adaptive normal (≤ 32)", "meclear", decided),
        Variant("adaptive normal (≤ 32), 1 sample trial", "meclear", decided.model_copy(update={"sample_trials": 1})),
        Variant("adaptive bernstein (≤ 64)", "meclear", decided.model_copy(update={
            "adaptive": ADAPTIVE.model_copy(update={"bound": "bernstein", "max_permutations": 64})})),
    ]
    cases = [parse_case(c) for c in synthetic_cohort(n, seed=k, k=k, noise=0.02, trials=spec.trials)]
    stops: dict[str, list[tuple[str, int]]] = {}
    return run_variants(cases, variants, desc=f"meclear_calls K={k}", quiet=quiet, stops=stops), ladder, stops


def budget_table(cases: Sequence[Case], spec: ClearanceSpec, budgets: Sequence[int], reps: int,
                 desc: str) -> tuple[str, dict, dict]:
    """The equal-budget table (and its curves) of one cohort."""
    bres = budget_run(cases, spec, budgets, quiet=False)
    curves: dict[str, list[tuple[float, float, float]]] = {}
    rows, at_budget = [], {}
    for budget in budgets:
        for label in BUDGET_METHODS:
            outs = bres.get((label, budget), [])
            if len(outs) < len(cases):
                rows.append([budget, label, "does not fit", "", "", "", "", ""])
                continue
            c = metric_cells(outs, reps)
            curves.setdefault(label, []).append((c["calls"], c["recall"].point, c["recovery"].point))
            at_budget[(label, budget)] = c
            rows.append([budget, label, c["recall"].pct(), c["complete"].pct(), c["exact"].pct(),
                         c["recovery"].pct(), c["extra"].num(2), round(c["calls"], 1)])
    md = table(["call budget / case", "method", "Recall@\\|M\\| %", "Complete %", "Exact %", "Recovery %",
                "extra bg / case", "measured calls / case"], rows)
    return md, at_budget, curves


def budget_gaps(at_budget: dict, budgets: Sequence[int], metric: str = "recall") -> list[tuple[int, float, float]]:
    """(budget, best surrogate − MeClear stratified, best surrogate − MeClear permutation) in points."""
    out = []
    for b in budgets:
        keys = [(lb, b) for lb in BUDGET_METHODS]
        if not all(k in at_budget for k in keys):
            continue
        best = max(at_budget[(lb, b)][metric].point for lb in BUDGET_METHODS[2:])
        out.append((b, best - at_budget[(BUDGET_METHODS[1], b)][metric].point,
                    best - at_budget[(BUDGET_METHODS[0], b)][metric].point))
    return out


def gap_text(gaps: list[tuple[int, float, float]]) -> str:
    return ", ".join(f"{b}: {100 * g:+.1f} pp (permutations {100 * p:+.1f})" for b, g, p in gaps)


def conclusions(points: dict, low: dict, high: dict, budgets: Sequence[int], k_summary: dict,
                trials: dict) -> str:
    """Plain-words reading of this run's numbers."""
    me16, ex = points["MeClear L=16"], points["MeClear exact"]
    g_lo, g_hi = budget_gaps(low, budgets), budget_gaps(high, budgets)
    g_hi_rec = budget_gaps(high, budgets, "recovery")
    lo_ok = [b for b, g, _ in g_lo if 24 <= b <= 64 and g <= 0.02]
    lo_goal = [b for b, _, _ in g_lo if 24 <= b <= 64]
    ex_hi = trials.get(("K = 5, exact", 0.10, None))
    adaptive = []
    for (k, label), (decided, calls, recall, l32) in sorted(k_summary.items()):
        if not label.startswith("adaptive normal"):
            continue
        adaptive.append(f"K = {k}, {label}: {calls:.0f} calls = {calls / l32[0]:.2f}× fixed L = 32's {l32[0]:.0f} "
                        f"at {100 * recall:.1f} % recall against {100 * l32[1]:.1f} % (decided in "
                        f"{100 * decided:.0f} % of cases)")
    trial_txt = []
    for (name, noise, t), (calls, rec, rcv) in sorted(trials.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or 9)):
        if t != 1:
            continue
        base = trials[(name, noise, None)]
        trial_txt.append(f"{name} at noise {noise:.2f}: {base[0]:.1f} → {calls:.1f} calls "
                         f"({calls / base[0]:.2f}×), recall {100 * base[1]:.1f} → {100 * rec:.1f} %, "
                         f"recovery {100 * base[2]:.1f} → {100 * rcv:.1f} %")
    rec_lo = budget_gaps(low, budgets, "recovery")
    return f"""* **Cost at the paper's settings.** MeClear L = 16 needs {me16[0]:.1f} calls per case here,
  exact enumeration {ex[0]:.0f} (all 32 coalitions × 2 trials; {100 * ex[1]:.1f} against {100 * me16[1]:.1f} %
  recall), which is why `exact: auto` takes it at K = 5.
* **Equal budgets, noise 0.02 — goal not met in recall.** Best surrogate − MeClear stratified
  recall (the permutation estimator in brackets), by budget: {gap_text(g_lo)}. Within 2 pp at
  {", ".join(map(str, lo_ok)) or "none"} of the budgets {", ".join(map(str, lo_goal))}. In *recovery* the
  stratified estimator is where the gain is (best surrogate − stratified: {", ".join(f"{b}: {100 * g:+.1f}" for b, g, _ in rec_lo)} pp):
  reusing the LOO screen (∅, the LOO coalitions and M make three strata exact) lets the few
  sampled coalitions find the removal that verifies. Recall@|M| ranks by ψ̂, and there the
  sample-reuse estimator pays for its reuse: a coalition's residual moves *every* memory's
  estimate, so a null memory (ψ = 0, whose permutation marginals are all exactly 0) gets noise
  of order r/s per sample and sometimes ranks above a fault; the lasso surrogates fit these
  nearly additive games from any random half-masks.
* **Equal budgets, noise 0.10 — not ahead in recall.** Best surrogate − stratified recall:
  {gap_text(g_hi)}; in recovery {", ".join(f"{b}: {100 * g:+.1f}" for b, g, _ in g_hi_rec)} pp (negative =
  MeClear ahead). Part of the recall limit is the target, not the sampling: exact MeClear (the
  Shapley value of the noisy two-trial game, no sampling error) reaches
  {"–" if ex_hi is None else f"{100 * ex_hi[1]:.1f} %"} recall with {"–" if ex_hi is None else f"{ex_hi[0]:.0f}"}
  calls, below the surrogates' recall at the top budgets, because the lasso's L1 penalty
  shrinks trial noise that an unbiased estimator of that Shapley value must keep.
* **Adaptive mode (Theorem D: stop when the removed set is settled) — goal not met.**
  {"; ".join(adaptive)}. With two trials it reaches (or passes) fixed L = 32's recall at
  0.8–0.85× its calls, not half: a 95 % simultaneous guarantee (Bonferroni over K memories and
  the sample-size grid) needs ≈ 30 samples to separate a redundant or joint fault (ψ ≈ −0.15 …
  −0.3) from a weak harm or a wide neutral next to it, so about two thirds of the cases run to the
  per-memory cap; cases with one direct fault settle after the first 8 permutations or one more
  look. With one trial for sampled coalitions it spends 0.46–0.48× of L = 32's calls, at a recall
  3–4 points below it (the one-trial game is noisier; fixed L = 32 at one trial loses as much).
* **Trials.** {"; ".join(trial_txt)}.
"""


def trials_run(cases_by_noise: dict[float, Sequence[Case]], large: dict[float, Sequence[Case]],
               reps: int) -> tuple[str, dict]:
    """Calls, recall and recovery with and without one-trial sampled coalitions."""
    spec = paper_spec()
    rows, summary = [], {}
    configs = [("K = 5, exact", spec.model_copy(update={"exact": "always"})),
               ("K = 5, exact: auto", spec),
               ("K = 5, stratified L = 16", spec.model_copy(update={"exact": "never", "estimator": "stratified"})),
               ("K = 5, permutations L = 16", spec.model_copy(update={"exact": "never", "interactions": "none"}))]
    k10 = paper_spec(retrieval_budget=10, exact="never", interactions="none")
    large_configs = [("K = 10, permutations L = 32", k10.model_copy(update={"permutations": 32})),
                     ("K = 10, adaptive (≤ 32)", k10.model_copy(update={"permutations": 8, "adaptive": ADAPTIVE}))]
    for noise in sorted(cases_by_noise):
        for group, cfgs in ((cases_by_noise[noise], configs), (large[noise], large_configs)):
            variants = []
            for name, s in cfgs:
                variants += [Variant(f"{name}|{t}", "meclear", s.model_copy(update={"sample_trials": t}))
                             for t in (None, 1)]
            res = run_variants(group, variants, desc=f"meclear_calls trials {noise}")
            for v in variants:
                name, t = v.label.split("|")
                tt = None if t == "None" else int(t)
                c = metric_cells(res[v.label], reps)
                summary[(name, noise, tt)] = (c["calls"], c["recall"].point, c["recovery"].point)
                rows.append([f"{noise:.2f}", name, "2 (all)" if tt is None else "1 (sampled), 2 (screen, decisions)",
                             round(c["calls"], 1), c["recall"].pct(), c["recovery"].pct(), len(group)])
    md = table(["trial noise", "configuration", "trials per coalition", "calls / case", "Recall@\\|M\\| %",
                "Recovery %", "cases"], rows)
    return md, summary


def run(quick: bool = False) -> str:
    start = time.perf_counter()
    n, reps = (80, 200) if quick else (200, 1000)
    spec = paper_spec()
    cases = [parse_case(c) for c in synthetic_cohort(n, seed=0, k=5, noise=0.02, trials=spec.trials,
                                                     eval_seed=spec.seed)]
    noisy = [parse_case(c) for c in synthetic_cohort(n, seed=0, k=5, noise=0.10, trials=spec.trials,
                                                     eval_seed=spec.seed)]

    # 1. calls per case -------------------------------------------------------------------
    variants = standard_variants(spec)
    variants.insert(2, Variant("MeClear L=16, ω off", "meclear", spec.model_copy(
        update={"exact": "never", "interactions": "none"})))
    variants.insert(3, Variant("MeClear L=16, stratified", "meclear", spec.model_copy(
        update={"exact": "never", "estimator": "stratified"})))
    results = run_variants(cases, variants, desc="meclear_calls methods")
    cost_rows, points = [], {}
    for label, outs in results.items():
        c = metric_cells(outs, reps)
        coal = sum(o.coalitions for o in outs) / len(outs)
        points[label] = (c["calls"], c["recall"].point, c["recovery"].point)
        cost_rows.append([label, round(coal, 1), round(c["calls"], 1), max(o.calls for o in outs),
                          c["recall"].pct(), c["recovery"].pct(),
                          f"{100 * c['recall'].point / c['calls']:.2f}"])
    cost_md = table(["method", "distinct coalitions / case", "calls / case", "max calls", "Recall@\\|M\\| %",
                     "Recovery %", "Recall % per call"], cost_rows)

    # 2. equal call budgets ---------------------------------------------------------------
    budgets = BUDGETS[::2] if quick else BUDGETS
    budget_md, at_budget, curves = budget_table(cases, spec, budgets, reps, "noise 0.02")
    noisy_md, at_noisy, _ = budget_table(noisy, spec, budgets, reps, "noise 0.10")

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, idx, name in ((axes[0], 1, "Recall@|M|"), (axes[1], 2, "Binary Task Recovery")):
        for label, pts in curves.items():
            ax.plot([p[0] for p in pts], [100 * p[idx] for p in pts], marker="o", label=label)
        for label in ("LOO", "direct", "MeClear exact", "MeClear L=16"):
            x, *q = points[label]
            ax.scatter([x], [100 * q[idx - 1]], marker="s")
            ax.annotate(label, (x, 100 * q[idx - 1]), fontsize=7, xytext=(3, -10), textcoords="offset points")
        ax.set_xlabel("evaluator calls per case (measured)")
        ax.set_ylabel(f"{name} (%)")
        ax.set_title(f"{name} at equal call budgets, K = 5")
    axes[0].legend(fontsize=7)
    budget_png = save_plot(fig, "meclear_calls_budget.png")

    # 3. large K: fixed L against adaptive -------------------------------------------------
    nk = 12 if quick else 40
    ks = (10,) if quick else (10, 16, 20)
    k_sections, k_plot, k_summary = [], {}, {}
    for k in ks:
        kres, ladder, stops = large_k(k, nk, quick)
        cells = {label: metric_cells(outs, reps) for label, outs in kres.items()}
        fixed = [(cells[f"fixed L={L}"]["calls"], cells[f"fixed L={L}"]["recall"].point) for L in ladder]
        l32 = (cells["fixed L=32"]["calls"], cells["fixed L=32"]["recall"].point)
        k_plot[k] = (fixed, {lb: (c["calls"], c["recall"].point) for lb, c in cells.items()
                             if not lb.startswith("fixed L=") or "trial" in lb})
        rows = []
        for label, c in cells.items():
            st = stops[label]
            decided = sum(1 for s, _ in st if s == "decided") / len(st)
            row = [label, c["recall"].pct(), c["complete"].pct(), c["recovery"].pct(), round(c["calls"], 1),
                   f"{100 * decided:.0f}" if label.startswith("adaptive") else ""]
            if label.startswith("adaptive") or "trial" in label:
                hit = smallest_reaching(fixed, c["recall"].point)
                k_summary[(k, label)] = (decided, c["calls"], c["recall"].point, l32)
                row += ["–" if hit is None else f"{hit[0]:.0f}",
                        "fixed never reaches it" if hit is None else f"{c['calls'] / hit[0]:.2f}×",
                        f"{c['calls'] / l32[0]:.2f}×"]
            else:
                row += ["", "", ""]
            rows.append(row)
        k_sections.append(f"**K = {k}** ({nk} cases, cohort seed {k})\n\n" + table(
            ["variant", "Recall@\\|M\\| %", "Complete %", "Recovery %", "calls / case", "decided %",
             "fixed-L calls for the same recall", "/ that fixed L", "/ fixed L = 32"], rows))

    fig, axes = plt.subplots(1, len(ks), figsize=(4.2 * len(ks), 3.6), squeeze=False)
    for ax, k in zip(axes[0], ks):
        fixed, adaptive = k_plot[k]
        ax.plot([p[0] for p in fixed], [100 * p[1] for p in fixed], marker="o", markersize=4, label="fixed L = 4…128",
                zorder=2)
        for i, ((label, (x, y)), marker) in enumerate(zip(adaptive.items(), ("^", "v", "s", "D"))):
            ax.scatter([x], [100 * y], marker=marker, s=90, facecolors="none", linewidths=1.5, label=label, zorder=3,
                       edgecolors=f"C{i + 1}")
        ax.set_xscale("log")
        from matplotlib.ticker import NullFormatter

        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("calls per case (log)")
        ax.set_title(f"K = {k}")
    axes[0][0].set_ylabel("Recall@|M| (%)")
    axes[0][0].legend(fontsize=6)
    k_png = save_plot(fig, "meclear_calls_adaptive.png")

    # 4. trials -----------------------------------------------------------------------------
    nt = 12 if quick else 40
    large = {noise: [parse_case(c) for c in synthetic_cohort(nt, seed=10, k=10, noise=noise, trials=spec.trials)]
             for noise in (0.02, 0.10)}
    trials_md, trials = trials_run({0.02: cases, 0.10: noisy}, large, reps)

    total = time.perf_counter() - start
    said = conclusions(points, at_budget, at_noisy, budgets, k_summary, trials)
    md = f"""## MeClear: evaluator calls and quality per call

**Evaluator: synthetic games** — each case is an explicit game (harm structure + trial-flip noise, `SyntheticEvaluator`); no text agent and no language model are involved, so these figures measure the attribution and selection algorithms, not answer quality.

`python -m bench meclear_calls` — the synthetic cohort of `meclear_cohort` at reduced size
({n} cases, K = 5, two trials, noise 0.02; and the same generator at noise 0.10), {nk} cases per
K for the larger contexts, {nt} cases at K = 10 for the trials table (sizes chosen to finish in
a few minutes on a shared 2-core machine; intervals are bootstrap 95 %). A *call* is one agent
(+ judge) trial: distinct coalitions × trials, plus one rating call per memory for direct
flagging; all methods share one cache per case but each is charged its stand-alone cost.
Runtime {total:.1f} s.

The paper reports no call counts; its budgets are L = 16 permutations (≈ 28 distinct
coalitions at K = 5, i.e. ≈ 56 calls with two trials, plus the LOO screen, mostly shared) and
B = 32 ablations for ContextCite / ProxySPEX (App. D.2). Paper quality at those budgets:
MeClear {PAPER_OVERALL['MeClear L=16']['recall']} % recall / {PAPER_OVERALL['MeClear L=16']['recovery']} %
recovery, ContextCite {PAPER_OVERALL['ContextCite']['recall']} / {PAPER_OVERALL['ContextCite']['recovery']},
ProxySPEX {PAPER_OVERALL['ProxySPEX']['recall']} / {PAPER_OVERALL['ProxySPEX']['recovery']},
LOO {PAPER_OVERALL['LOO']['recall']} / {PAPER_OVERALL['LOO']['recovery']} (Fig. 4); L = 4 gives
{PAPER_BUDGET['MeClear L=4']['recall']} % recall (Fig. 9).

### Calls per case at the paper's settings

"ω off" drops the pairwise interaction diagnosis (Eq. 15, App. C), which never changes the
selection but evaluates extra coalitions around the sampled permutations. "stratified" is the
sample-reuse estimator (`estimator: stratified`, beyond the paper) at the cost of L = 16
permutations: at K = 5 that is every coalition, i.e. exact.

{cost_md}

### Quality at equal call budgets (K = 5)

MeClear samples up to L = 64 permutations — or, `stratified`, up to the same expected number of
coalitions — under the policy's `call_budget`, which stops adding samples when the next would not
fit; the LOO screen (12 calls) and the verification of Eq. 19 always run, so its measured calls
can exceed the budget slightly. ContextCite / ProxySPEX get, per case, the largest B whose
ablations plus M and the cleared context fit the budget.

**Trial noise 0.02**

{budget_md}

**Trial noise 0.10** (same generator and seeds, noisier trials)

{noisy_md}

The methods at their own, fixed cost are in the first table.

![quality against calls]({budget_png})

### Larger contexts: fixed L against the adaptive mode (K = 10, 16, 20)

Synthetic games with K memories (the same generator: one or two injected faults, gold,
beneficial, weakly harmful and neutral background; noise 0.02), ω off. The adaptive mode
(beyond the paper) starts with 8 permutations and stops as soon as the removed set is settled
by the intervals (Theorem D, `specs/ADAPTIVE_STOPPING.md`); until then it adds 8 samples per
look to each memory that can still change the removed set — targeted marginals, or whole
permutations when at least half the memories are relevant — up to 32 samples per memory
(`normal`: CLT interval with one pseudo-observation of maximal variance; `bernstein`:
min(Hoeffding, empirical Bernstein); union bound over memories and sample sizes). "1 sample
trial" reads sampled coalitions at one trial (`sample_trials: 1`); the screen and every
coalition a decision reads keep two. "decided" is the share of cases stopped by the rule.

""" + "\n\n".join(k_sections) + f"""

![fixed L against adaptive]({k_png})

### Trials: a second trial only where a decision reads the coalition

`sample_trials: 1`: coalitions that only feed the sampled ψ estimate get one trial; the LOO
screen, v̂(∅) of the stratified estimator, and the gains and recovery of chain candidates
(Eq. 18–19) keep two. `exact: auto` counts calls after the savings. Cohorts as above ({n} cases
at K = 5, {nt} at K = 10) at trial noise 0.02 and 0.10.

{trials_md}

### What this says

{said}
"""
    write_section(NAME, md)
    return md


if __name__ == "__main__":
    import sys

    run(quick="--quick" in sys.argv)
