"""MeClear benchmark 5: verified clearance at K = 5 / 10 / 16 / 20 under 16–128 evaluator calls.

Every method plays one cache per case (no coalition paid twice); each is charged its stand-alone
calls. MeClear runs `search: budgeted` (the budget pays screen, estimation and verification) with
each estimator; ContextCite / ProxySPEX get, per case, the largest B whose ablations (at the
policy's two trials) plus M and the cleared context fit the same budget; LOO and direct flagging run
at their own fixed cost. Cohorts:

* synthetic games (the cohort generator, noise 0.02: one or two faults, gold, beneficial,
  weakly harmful and neutral distractors), every case verified, so every case is solvable;
* text cases played by the offline agent + lexical judge: the LoCoMo builder's cohort at K = 10, and
  a cohort from a different generator (:mod:`bench.meclear_paraphrase`: paraphrased faults, no
  behavioural verification), run through ``memsteward clear --cohort … --json`` itself; solvable
  (ν(M ∖ F) = 1) and unsolvable cases counted apart;
* engine overhead per evaluator call at K = 20 (zero-cost frozen evaluator, as meclear_overhead).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from memsteward.clearance.case import Case, case_evaluator, case_game, parse_case
from memsteward.clearance.cohort import synthetic_cohort
from memsteward.clearance.game import OutcomeStore
from memsteward.clearance.metrics import CaseOutcome, exact_match, outcome, recall_hits
from memsteward.clearance.pipeline import run_method
from memsteward.policy.model import SHAPIQ_ESTIMATORS, ClearanceSpec

from .common import table, write_section
from .meclear_calls import fitting_samples
from .meclear_common import Variant, paper_spec, progress, pyplot, save_plot, with_samples

NAME = "meclear_budget"
BUDGETS = (16, 24, 32, 48, 64, 96, 128)
ESTIMATORS = ("stratified", "permutation", "exact", *(f"shapiq:{n}" for n in SHAPIQ_ESTIMATORS))
DEFAULT = "stratified"  # the estimator the targets are read on (chosen before this run, on a 30-case pilot)
CASES = {5: 60, 10: 40, 16: 24, 20: 24}  # synthetic cases per K (a shared 2-core machine)


def budget_spec(k: int, budget: int, estimator: str) -> ClearanceSpec | None:
    """MeClear's budgeted spec, or None when the budget cannot pay for it (the policy refuses)."""
    update = {"retrieval_budget": k, "search": "budgeted", "call_budget": budget, "estimator": estimator,
              "interactions": "none"}
    try:  # validated as a policy file would be (model_copy alone would skip the budget checks)
        return ClearanceSpec.model_validate({**paper_spec().model_dump(), **update})
    except ValueError:
        return None


def label(estimator: str) -> str:
    return f"MeClear {estimator}"


def run_case(case: Case, k: int, budgets: Sequence[int], estimators: Sequence[str]) -> dict[tuple[str, int], CaseOutcome]:
    """Every method at every budget on one case, one shared cache."""
    base = paper_spec(retrieval_budget=k, interactions="none")
    ev = case_evaluator(case, base)
    store = OutcomeStore()
    probe = case_game(case, base, ev, store).fork()
    full, clean = probe.recovered(probe.grand), probe.recovered(probe.grand - set(case.faults))
    out: dict[tuple[str, int], CaseOutcome] = {}

    def play(name: str, method: str, spec: ClearanceSpec, budget: int) -> None:
        plan = run_method(method, case_game(case, spec, ev, store), spec)
        out[(name, budget)] = replace(outcome(plan, case.faults, case.structure, full, clean), method=name)

    for fixed, method in (("LOO", "loo"), ("direct", "direct")):
        play(fixed, method, base, 0)
    for budget in budgets:
        for est in estimators:
            spec = budget_spec(k, budget, est)
            if spec is not None:
                play(label(est), "meclear", spec, budget)
        b = fitting_samples(case, base, budget)
        if b >= 1:
            play("ContextCite", "contextcite", with_samples(base, b), budget)
            play("ProxySPEX", "proxyspex", with_samples(base, b), budget)
    return out


def row(outs: Sequence[CaseOutcome]) -> dict[str, float]:
    n = len(outs)
    targets = sum(len(o.faults) for o in outs)
    return {"n": n, "recovery": sum(o.recovered for o in outs) / n,
            "exact": sum(exact_match(o.removed, o.faults) for o in outs) / n,
            "removed": sum(len(o.removed) for o in outs) / n, "calls": sum(o.calls for o in outs) / n,
            "max": max(o.calls for o in outs),
            "recall": sum(recall_hits(o.ranking, o.faults) for o in outs) / targets if targets else 0.0}


def cohort_rows(cases: Sequence[Case], k: int, budgets: Sequence[int], estimators: Sequence[str],
                desc: str) -> dict[tuple[str, int], dict[str, float]]:
    results: dict[tuple[str, int], list[CaseOutcome]] = {}
    for case in progress(cases, desc):
        for key, o in run_case(case, k, budgets, estimators).items():
            results.setdefault(key, []).append(o)
    return {key: row(outs) for key, outs in results.items() if len(outs) == len(cases)}


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def budget_table(rows: dict[tuple[str, int], dict[str, float]], budgets: Sequence[int]) -> str:
    names = list(dict.fromkeys(name for name, _ in rows))
    body = []
    for budget in budgets:
        for name in names:
            r = rows.get((name, budget))
            if r is None and name.startswith("MeClear"):
                body.append([budget, name, "does not fit", "", "", "", "", ""])
            elif r is not None:
                body.append([budget, name, pct(r["recovery"]), pct(r["exact"]), f"{r['removed']:.2f}",
                             pct(r["recall"]), f"{r['calls']:.1f}", int(r["max"])])
    for name in ("LOO", "direct"):
        r = rows[(name, 0)]
        body.append(["own cost", name, pct(r["recovery"]), pct(r["exact"]), f"{r['removed']:.2f}",
                     pct(r["recall"]), f"{r['calls']:.1f}", int(r["max"])])
    return table(["budget (calls)", "method", "Recovery %", "Exact set match %", "removed / case",
                  "Recall@|M| %", "calls / case", "max calls"], body)


def targets(k: int, rows: dict[tuple[str, int], dict[str, float]]) -> list[str]:
    """The issue's targets read on this run (the default estimator)."""
    me, out = label(DEFAULT), []
    get = lambda name, b, key: rows[(name, b)][key] if (name, b) in rows else float("nan")  # noqa: E731
    if k >= 10:
        r64, c64 = get(me, 64, "recovery"), get("ContextCite", 64, "recovery")
        s64, cs64 = get(me, 64, "removed"), get("ContextCite", 64, "removed")
        r32, c32 = get(me, 32, "recovery"), get("ContextCite", 32, "recovery")
        ok64 = r64 >= c64 and s64 <= cs64
        ok32 = r32 >= c32 - 0.03
        out.append(f"K = {k}: at 64 calls MeClear {pct(r64)} % recovery (removed {s64:.2f}) against ContextCite "
                   f"{pct(c64)} % (removed {cs64:.2f}) — **{'met' if ok64 else 'not met'}**; at 32 calls "
                   f"{pct(r32)} against {pct(c32)} % — **{'met' if ok32 else 'not met'}** (within 3 pp).")
    else:
        ahead = [b for b in (24, 32, 48, 64) if all(get(me, b, "recovery") > get(s, b, "recovery")
                                                    for s in ("ContextCite", "ProxySPEX"))]
        gaps = {b: max(get(s, b, "recall") for s in ("ContextCite", "ProxySPEX")) - get(me, b, "recall")
                for b in (32, 48, 64)}
        out.append(f"K = 5: recovery ahead of both surrogates at budgets {ahead or 'none'} of 24, 32, 48, 64 "
                   f"(**{'met' if len(ahead) == 4 else 'not met'}**); best surrogate recall − MeClear recall: "
                   + ", ".join(f"{b}: {100 * g:+.1f} pp" for b, g in gaps.items())
                   + f" (**{'met' if all(g <= 0.02 for g in gaps.values()) else 'not met'}**, target ≤ 2 pp).")
    return out


def plot(curves: dict[int, dict[tuple[str, int], dict[str, float]]]) -> str:
    plt = pyplot()
    ks = [k for k in (5, 10, 20) if k in curves]
    fig, axes = plt.subplots(1, len(ks), figsize=(5 * len(ks), 4), sharey=True)
    for ax, k in zip(axes if len(ks) > 1 else [axes], ks):
        rows = curves[k]
        names = (label(DEFAULT), label("permutation"), label("shapiq:KernelSHAP"), label("shapiq:SVARM"),
                 "ContextCite", "ProxySPEX", "LOO", "direct")  # one colour per name on every panel
        for colour, name in enumerate(names[:6]):
            pts = sorted((r["calls"], r["recovery"]) for (n, b), r in rows.items() if n == name and b)
            ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], marker="o", label=name, color=f"C{colour}")
        for colour, name in enumerate(names[6:], start=6):
            r = rows[(name, 0)]
            ax.scatter([r["calls"]], [100 * r["recovery"]], marker="x", label=name, color=f"C{colour}")
        ax.set_xscale("log", base=2)
        ax.set_title(f"K = {k} (synthetic)")
        ax.set_xlabel("measured calls / case")
        ax.grid(alpha=0.3)
    (axes[0] if len(ks) > 1 else axes).set_ylabel("Recovery %")
    (axes[-1] if len(ks) > 1 else axes).legend(fontsize=7)
    return save_plot(fig, "meclear_budget_recovery.png")


def overhead(n: int, repeats: int) -> str:
    """Engine seconds per evaluator call at K = 20, each estimator at B = 64: wall time of a fresh,
    uncached game minus the time spent inside its (synthetic) evaluator, median over repeats."""
    from memsteward.clearance.game import Game

    from .meclear_overhead import TimedTable

    cases = [parse_case(c) for c in synthetic_cohort(n, seed=20, k=20)]
    variants = [Variant(label(e), "meclear", spec) for e in ESTIMATORS if (spec := budget_spec(20, 64, e))]
    body = []
    for v in variants:
        engine: list[float] = []
        calls = 0
        for r in range(repeats + 1):  # the first pass warms imports and numba up
            wall = inside = 0.0
            calls = 0
            for case in cases:
                timed = TimedTable(case_evaluator(case, v.spec))  # type: ignore[arg-type]
                game = Game(case.task, timed, trials=v.spec.trials, seed=v.spec.seed, recovery=v.spec.recovery)
                t = time.perf_counter()
                plan = run_method("meclear", game, v.spec)
                wall += time.perf_counter() - t
                inside += timed.seconds
                calls += plan.evaluator_calls
            if r:
                engine.append((wall - inside) / len(cases))
        per_case = statistics.median(engine)
        per_call = per_case / (calls / len(cases))
        body.append([v.label, f"{calls / len(cases):.1f}", f"{1000 * per_case:.2f}", f"{1000 * per_call:.3f}",
                     "met" if per_call <= 1e-3 else "not met"])
    return table(["method (B = 64, K = 20)", "calls / case", "engine ms / case", "engine ms / call",
                  "≤ 1 ms / call"], body)


def text_cohorts(quick: bool, data: str | Path | None = None) -> str:
    from .meclear_paraphrase import builder_rows, paraphrase_rows

    md = []
    for title, fn in (("LoCoMo builder cohort (K = 10, offline agent)", builder_rows),
                      ("Paraphrase cohort from a different generator (K = 10, offline agent, via `clear --cohort`)",
                       paraphrase_rows)):
        try:
            md.append(f"**{title}**\n\n" + fn(12 if quick else 60, data=data))
        except FileNotFoundError as exc:
            md.append(f"**{title}**: skipped ({exc})")
    return "\n\n".join(md)


def run(quick: bool = False, data: str | Path | None = None) -> str:
    """Each step rewrites the section, so a late failure keeps what finished."""
    start = time.perf_counter()
    sizes = {k: max(8, n // 4) if quick else n for k, n in CASES.items()}
    curves: dict[int, dict[tuple[str, int], dict[str, float]]] = {}
    parts: list[str] = []
    notes: list[str] = []
    over = overhead(4 if quick else 10, 2 if quick else 3)
    text = text_cohorts(quick, data)
    md = ""
    for k, n in sizes.items():
        cases = [parse_case(c) for c in synthetic_cohort(n, seed=100 + k, k=k, noise=0.02)]
        rows = cohort_rows(cases, k, BUDGETS, ESTIMATORS, f"meclear_budget K={k}")
        curves[k] = rows
        parts.append(f"**K = {k}** ({n} synthetic cases, cohort seed {100 + k}; all solvable: each case is "
                     "verified, ν(M ∖ F) = 1)\n\n" + budget_table(rows, BUDGETS))
        notes += targets(k, rows)
        md = section(parts, notes, text, over, plot(curves), time.perf_counter() - start)
        write_section(NAME, md)
    return md


def section(parts: list[str], notes: list[str], text: str, over: str, link: str, seconds: float) -> str:
    return (f"## MeClear under a call budget: K = 5 / 10 / 16 / 20 at 16–128 calls\n\n{__doc__.split(chr(10), 2)[2]}\n"
            f"`python -m bench meclear_budget`. A call is one agent (+ judge) trial. \"Exact set match\" compares the "
            "*removed* set with the fault set; \"removed / case\" is its size. Budgets MeClear cannot run at (below "
            "K + 2·trials, or `exact` below 2^K + K + 2·trials) say so. Runtime "
            f"{seconds:.0f} s.\n\n### Targets read on this run (estimator `{DEFAULT}`)\n\n"
            + "\n".join(f"* {n}" for n in notes) + "\n\n### Synthetic cohorts\n\n" + "\n\n".join(parts)
            + f"\n\n![recovery against calls]({link})\n\n### Text cohorts (offline agent + lexical judge)\n\n{text}\n\n"
            f"### Engine overhead per evaluator call (K = 20, B = 64)\n\n{over}\n")


if __name__ == "__main__":
    import sys

    print(run(quick="--quick" in sys.argv))
