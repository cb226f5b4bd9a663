"""MeClear benchmark 5: verified clearance at K = 5 / 10 / 16 / 20 under 16–128 evaluator calls.

Every method plays one cache per case (no coalition paid twice); each is charged its stand-alone
calls. MeClear runs `search: budgeted` (the budget pays screen, estimation and verification) with
each estimator, and with `stratified` also under `after_verified: refine` (the rest of the budget
refines the ranking after a verified removal); ContextCite / ProxySPEX get, per case, the largest B whose ablations (at the
policy's two trials) plus M and the cleared context fit the same budget; LOO and direct flagging run
at their own fixed cost. Cohorts:

* synthetic games (the cohort generator, noise 0.02: one or two faults, gold, beneficial,
  weakly harmful and neutral distractors), every case verified, so every case is solvable;
* text cases played by the offline agent + lexical judge: the LoCoMo builder's cohort at K = 10, and
  a cohort from a different generator (:mod:`bench.meclear_paraphrase`: paraphrased faults, no
  behavioural verification), run through ``memsteward clear --cohort … --json`` itself; solvable
  (ν(M ∖ F) = 1) and unsolvable cases counted apart;
* engine overhead per evaluator call at K = 20 (the synthetic evaluator's own time subtracted), as
  this process's CPU time and as wall time.

The search (specs/BUDGETED_SEARCH.md, steps 2, 2′ and 3′): when no candidate of the LOO ranking
recovers, the block search group-tests halves of the ranking, then halves of a recovering half (each
test a verification at the policy's trials), before any estimation round; while no verified removal
recovers, the LOO effects are not (S2)'s control variate, and after each estimation round the pair the
held coalitions separate most is verified. The rules were developed on the seed-1xx cohorts below; the
targets are re-read on cohort seed 200 + K. Against the run before the block search (the same cohorts;
every figure here is deterministic given the seeds, only times depend on load), `stratified + refine`
at 32 calls: K = 16 recovery 66.7 → 95.8 % (seed 216: 66.7 → 87.5 %; ContextCite 79.2 / 79.2 %),
K = 20 62.5 → 91.7 % (62.5 → 79.2 %), K = 10 82.5 → 97.5 % (80.0 → 100.0 %); K = 5 at 24 calls
90.0 → 95.0 % (85.0 → 96.7 %); LoCoMo builder at 32 calls 78.3 → 96.7 %. The removal found under a
tight budget is larger (K = 20, 32 calls: 0.75 → 3.04 memories per case, ContextCite 3.96): the
search stops shrinking the recovering block when the budget ends.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from memsteward.clearance.case import Case, case_evaluator, case_game, parse_case
from memsteward.clearance.cohort import synthetic_cohort
from memsteward.clearance.evaluators.synthetic import STRUCTURES
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
REFINED = ("stratified",)  # estimators also run with after_verified: refine (label "… + refine")
DEFAULT = "stratified + refine"  # the variant the targets are read on (see the section's note)
CASES = {5: 60, 10: 40, 16: 24, 20: 24}  # synthetic cases per K (a shared 2-core machine)
SECOND_SEED = 200  # a second cohort seed (200 + K) the targets are re-read on, for the default variant only
SECOND_BUDGETS = (24, 32, 48, 64)  # the budgets the targets read


def variants() -> list[str]:
    """Every MeClear variant the bench runs: each estimator, and ``… + refine`` for :data:`REFINED`."""
    return [*ESTIMATORS[:1], *(f"{e} + refine" for e in REFINED), *ESTIMATORS[1:]]


def budget_spec(k: int, budget: int, variant: str) -> ClearanceSpec | None:
    """MeClear's budgeted spec, or None when the budget cannot pay for it (the policy refuses)."""
    estimator, _, refine = variant.partition(" + ")
    update = {"retrieval_budget": k, "search": "budgeted", "call_budget": budget, "estimator": estimator,
              "interactions": "none", "after_verified": "refine" if refine else "stop"}
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
            "recall": sum(recall_hits(o.ranking, o.faults) for o in outs) / targets if targets else 0.0,
            **{f"{key}:{s}": float(sum((o.recovered if key == "recovered" else 1) for o in outs if o.structure == s))
               for s in STRUCTURES for key in ("recovered", "cases")}}


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
                   f"{pct(r32)} against {pct(c32)} % — **{'met' if ok32 else 'not met'}** (within 3 pp). "
                   f"Recovered cases by fault structure, MeClear / ContextCite: at 32 calls {split(rows, 32)}; "
                   f"at 64 calls {split(rows, 64)}.")
    else:
        surrogates = ("ContextCite", "ProxySPEX")
        verdicts = {b: "ahead" if all(get(me, b, "recovery") > get(x, b, "recovery") for x in surrogates)
                    else "tied at 100 %" if get(me, b, "recovery") == 1.0 else "not ahead"
                    for b in (24, 32, 48, 64)}
        ok = all(v == "ahead" for v in verdicts.values())
        tie_ok = all(v != "not ahead" for v in verdicts.values())
        gaps = {b: max(get(x, b, "recall") for x in surrogates) - get(me, b, "recall") for b in (32, 48, 64)}
        out.append("K = 5: recovery against both surrogates — " + ", ".join(f"{b}: {v}" for b, v in verdicts.items())
                   + (" (**met**)" if ok else " (**met if a tie at the 100 % ceiling counts as not behind**; strictly "
                      "ahead: not met)" if tie_ok else " (**not met**)")
                   + "; best surrogate recall − MeClear recall: "
                   + ", ".join(f"{b}: {100 * g:+.1f} pp" for b, g in gaps.items())
                   + f" (**{'met' if all(g <= 0.02 for g in gaps.values()) else 'not met'}**, target ≤ 2 pp).")
    return out


def split(rows: dict[tuple[str, int], dict[str, float]], budget: int) -> str:
    """'direct 20 / 19 of 20, …' for the default variant against ContextCite at one budget."""
    me, cc = rows.get((label(DEFAULT), budget)), rows.get(("ContextCite", budget))
    if me is None or cc is None:
        return "not run"
    return ", ".join(f"{s} {me[f'recovered:{s}']:.0f} / {cc[f'recovered:{s}']:.0f} of {me[f'cases:{s}']:.0f}"
                     for s in STRUCTURES if me[f"cases:{s}"])


def plot(curves: dict[int, dict[tuple[str, int], dict[str, float]]]) -> str:
    plt = pyplot()
    ks = [k for k in (5, 10, 20) if k in curves]
    fig, axes = plt.subplots(1, len(ks), figsize=(5 * len(ks), 4), sharey=True)
    for ax, k in zip(axes if len(ks) > 1 else [axes], ks):
        rows = curves[k]
        names = (label(DEFAULT), label("stratified"), label("permutation"), label("shapiq:KernelSHAP"),
                 label("shapiq:SVARM"), "ContextCite", "ProxySPEX", "LOO", "direct")  # one colour per name
        for colour, name in enumerate(names[:7]):
            pts = sorted((r["calls"], r["recovery"]) for (n, b), r in rows.items() if n == name and b)
            ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], marker="o", label=name, color=f"C{colour}")
        for colour, name in enumerate(names[7:], start=7):
            r = rows[(name, 0)]
            ax.scatter([r["calls"]], [100 * r["recovery"]], marker="x", label=name, color=f"C{colour}")
        ax.set_xscale("log", base=2)
        ax.set_title(f"K = {k} (synthetic)")
        ax.set_xlabel("measured calls / case")
        ax.grid(alpha=0.3)
    (axes[0] if len(ks) > 1 else axes).set_ylabel("Recovery %")
    (axes[-1] if len(ks) > 1 else axes).legend(fontsize=7)
    return save_plot(fig, "meclear_budget_recovery.png")


class Timed:
    """An evaluator wrapper that records the wall and CPU seconds spent inside it."""

    def __init__(self, inner: object) -> None:
        self.inner, self.wall, self.cpu = inner, 0.0, 0.0

    def evaluate(self, task, coalitions, trials, seed):  # type: ignore[no-untyped-def]
        w, c = time.perf_counter(), time.process_time()
        try:
            return self.inner.evaluate(task, coalitions, trials, seed)  # type: ignore[attr-defined]
        finally:
            self.wall += time.perf_counter() - w
            self.cpu += time.process_time() - c

    def rate(self, task, memory):  # type: ignore[no-untyped-def]
        return self.inner.rate(task, memory)  # type: ignore[attr-defined]


def overhead(n: int, repeats: int) -> str:
    """Engine time per evaluator call at K = 20, each variant at B = 64: the time of a fresh, uncached
    game minus the time spent inside its (synthetic) evaluator, median over repeats. CPU time (this
    process's) is what the engine costs; wall time also holds waiting for the other processes of a
    shared machine, so both are shown and the target is read on CPU time."""
    from memsteward.clearance.game import Game

    cases = [parse_case(c) for c in synthetic_cohort(n, seed=20, k=20)]
    runs = [Variant(label(e), "meclear", spec) for e in variants() if (spec := budget_spec(20, 64, e))]
    body = []
    for v in runs:
        cpu: list[float] = []
        wall: list[float] = []
        calls = 0
        for r in range(repeats + 1):  # the first pass warms imports and numba up
            w = c = 0.0
            calls = 0
            for case in cases:
                timed = Timed(case_evaluator(case, v.spec))
                game = Game(case.task, timed, trials=v.spec.trials, seed=v.spec.seed,  # type: ignore[arg-type]
                            recovery=v.spec.recovery)
                w0, c0 = time.perf_counter(), time.process_time()
                plan = run_method("meclear", game, v.spec)
                w += time.perf_counter() - w0 - timed.wall
                c += time.process_time() - c0 - timed.cpu
                calls += plan.evaluator_calls
            if r:
                cpu.append(c / calls)
                wall.append(w / calls)
        per_cpu, per_wall = statistics.median(cpu), statistics.median(wall)
        body.append([v.label, f"{calls / len(cases):.1f}", f"{1000 * per_cpu:.3f}", f"{1000 * per_wall:.3f}",
                     "met" if per_cpu <= 1e-3 else "not met"])
    return table(["method (B = 64, K = 20)", "calls / case", "engine CPU ms / call", "engine wall ms / call",
                  "≤ 1 ms / call (CPU)"], body)


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
    second = second_seed(sizes)
    md = ""
    for k, n in sizes.items():
        cases = [parse_case(c) for c in synthetic_cohort(n, seed=100 + k, k=k, noise=0.02)]
        rows = cohort_rows(cases, k, BUDGETS, variants(), f"meclear_budget K={k}")
        curves[k] = rows
        parts.append(f"**K = {k}** ({n} synthetic cases, cohort seed {100 + k}; all solvable: each case is "
                     "verified, ν(M ∖ F) = 1)\n\n" + budget_table(rows, BUDGETS))
        notes += targets(k, rows)
        md = section(parts, notes, second, text, over, plot(curves), time.perf_counter() - start)
        write_section(NAME, md)
    return md


def second_seed(sizes: dict[int, int]) -> list[str]:
    """The targets re-read on cohort seed 200 + K with the default variant, so a search rule chosen on
    the main cohorts (seeds 105–120) is checked on cases it was not developed on."""
    notes: list[str] = []
    for k, n in sizes.items():
        seed = SECOND_SEED + k
        cases = [parse_case(c) for c in synthetic_cohort(n, seed=seed, k=k, noise=0.02)]
        rows = cohort_rows(cases, k, SECOND_BUDGETS, [DEFAULT], f"meclear_budget K={k} seed {seed}")
        notes += [f"(seed {seed}, {n} cases) {t}" for t in targets(k, rows)]
    return notes


def section(parts: list[str], notes: list[str], second: list[str], text: str, over: str, link: str,
            seconds: float) -> str:
    return (f"## MeClear under a call budget: K = 5 / 10 / 16 / 20 at 16–128 calls\n\n{__doc__.split(chr(10), 2)[2]}\n"
            f"`python -m bench meclear_budget`. A call is one agent (+ judge) trial. \"Exact set match\" compares the "
            "*removed* set with the fault set; \"removed / case\" is its size. Budgets MeClear cannot run at (below "
            "K + 2·trials, or `exact` below 2^K + K + 2·trials) say so. Runtime "
            f"{seconds:.0f} s.\n\n### Targets read on this run (`{DEFAULT}`)\n\n"
            "`MeClear stratified + refine` is `estimator: stratified` with `after_verified: refine`: after a "
            "verified removal at the gain ceiling it keeps estimating with the rest of B and verifies each new "
            "chain (specs/BUDGETED_SEARCH.md, part f: the same recovery as `stop` case by case, a removal no "
            "larger). It was chosen during development on these same cohorts (seeds 105–120), so it is not a "
            "held-out choice; `MeClear stratified` (stop) is shown beside it.\n\n"
            + "\n".join(f"* {n}" for n in notes)
            + "\n\nThe same targets on a second cohort seed (200 + K; the default variant, ContextCite and "
            "ProxySPEX only):\n\n" + "\n".join(f"* {n}" for n in second)
            + "\n\n### Synthetic cohorts\n\n" + "\n\n".join(parts)
            + f"\n\n![recovery against calls]({link})\n\n### Text cohorts (offline agent + lexical judge)\n\n{text}\n\n"
            f"### Engine overhead per evaluator call (K = 20, B = 64)\n\n{over}\n")


if __name__ == "__main__":
    import sys

    print(run(quick="--quick" in sys.argv))
