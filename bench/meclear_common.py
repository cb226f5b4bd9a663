"""What the MeClear benchmarks share: the paper's published numbers, method variants, running
variants over a cohort with one cache per case, and the metric tables with bootstrap intervals.

Paper numbers are quoted from `shared/seeds/000_3dd2fe0717002c30.txt` (MeClear); each carries
its source. Numbers marked "fig. text" were read from a figure's extracted labels rather than
the running text, and are less certain.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from memsteward.clearance.case import Case, case_evaluator, case_game
from memsteward.clearance.game import Evaluator, OutcomeStore
from memsteward.clearance.metrics import CaseOutcome, complete, exact_match, extra_background, outcome, recall_hits
from memsteward.clearance.pipeline import run_method
from memsteward.policy import load_policy
from memsteward.policy.model import ClearanceSpec

from .common import HERE, table
from .stats import bootstrap_ratio, paired_counts, rank_ecdf, target_ranks

POLICY = HERE.parent / "policies" / "meclear-paper.yaml"
PLOTS = HERE / "plots"
GROUPS = ("all", "direct", "redundant", "joint")
PAPER_SRC = "MeClear paper (shared/seeds/000)"

# --------------------------------------------------------------------------- the paper's numbers

# Overall, n = 745 (Fig. 4; App. D.3 text for Complete = 1 − residual risk and extra background).
PAPER_OVERALL: dict[str, dict[str, float | None]] = {
    "MeClear L=16": {"recall": 85.9, "complete": 86.7, "exact": 47.0, "recovery": 82.3, "extra": 0.623},
    "LOO": {"recall": 38.3, "complete": 64.2, "exact": 34.2, "recovery": 56.8, "extra": None},
    "ContextCite": {"recall": 86.3, "complete": 81.2, "exact": 43.5, "recovery": 81.5, "extra": 0.576},
    "ProxySPEX": {"recall": 80.9, "complete": 76.8, "exact": 54.2, "recovery": 77.3, "extra": 0.408},
    "direct": {"recall": None, "complete": None, "exact": 42.4, "recovery": 43.6, "extra": 0.934},
}
PAPER_OVERALL_SRC = ("Fig. 4 and App. D.3 / Fig. 11 (Complete = 1 − residual risk: MeClear 13.3 %, ContextCite "
                     "18.8 %, ProxySPEX 23.2 %, LOO 35.8 %; LOO Exact 34.2 = 47.0 − 12.8 pp and ProxySPEX "
                     "Recall 80.9 = 85.9 − 5.0 pp from App. D.3's paired differences); ContextCite Recall 86.3 "
                     "is read from Fig. 4's labels; the paper's direct baseline is the Qwen3.5-Plus LLM judge "
                     "(Exact 42.4 %, Recovery 43.6 %, Fig. 11 labels)")
# Per structure (Fig. 5 running text).
PAPER_STRUCTURE: dict[tuple[str, str], dict[str, float | None]] = {
    ("MeClear L=16", "direct"): {"recall": 83.2, "exact": None, "recovery": 89.6},
    ("LOO", "direct"): {"recall": 68.3, "exact": None, "recovery": 87.2},
    ("MeClear L=16", "redundant"): {"recall": 83.2, "exact": 49.1, "recovery": 68.4},
    ("LOO", "redundant"): {"recall": 12.3, "exact": None, "recovery": 6.3},
    ("MeClear L=16", "joint"): {"recall": 87.1, "exact": None, "recovery": 91.8},
    ("LOO", "joint"): {"recall": None, "exact": 0.0, "recovery": None},
}
# Permutation budget (Fig. 9 / App. D.2 text).
PAPER_BUDGET: dict[str, dict[str, float | None]] = {
    "MeClear L=4": {"recall": 67.6, "complete": 68.1, "exact": 37.3, "extra": 0.581},
    "MeClear L=8": {"recall": None, "complete": None, "exact": None, "extra": 0.685},
    "MeClear L=16": {"recall": 85.9, "complete": 86.7, "exact": 47.0, "extra": 0.623},
}
# Target-rank ECDF at k = 1, 2, 3 (Fig. 12 labels; MeClear 88.1 / 93.6 and ContextCite 61.1 vs 60.5 in text).
PAPER_ECDF: dict[str, tuple[float, float, float]] = {
    "MeClear L=16": (60.5, 88.1, 93.6), "ContextCite": (61.1, 87.6, 92.3),
    "ProxySPEX": (59.1, 82.2, 86.2), "direct": (49.1, 80.2, 89.9), "LOO": (30.6, 43.5, 50.7),
}
# Paired against LOO (Fig. 6 A: recovery 212 wins / 22 losses, both 401, neither 110;
# Fig. 10 labels: Recall 380/17, Complete 196/28, Exact 175/80 — consistent with App. D.3's
# differences: 196 − 28 = 168 ≈ 22.6 % × 745, 175 − 80 = 95 ≈ 12.8 % × 745) and ΔRecovery (Fig. 6 B).
PAPER_PAIRED_LOO = {"recall": (380, 17), "complete": (196, 28), "exact": (175, 80), "recovery": (212, 22)}
PAPER_DELTA_RECOVERY = {"LOO": "+25.5 [+20.9, +29.8]", "ContextCite": "+0.8 [−4.4, +6.7]",
                        "ProxySPEX": "+5.0 [+0.7, +9.3]", "direct": "+38.7 [+31.8, +45.5]"}


def paper_cell(value: float | None, pct: bool = True) -> str:
    if value is None:
        return "–"
    return f"{value:.1f}" if pct else f"{value:.3f}"


# --------------------------------------------------------------------------- variants


@dataclass(frozen=True)
class Variant:
    """One method under one clearance configuration, shown under ``label``."""

    label: str
    method: str
    spec: ClearanceSpec


def paper_spec(**update: object) -> ClearanceSpec:
    """The clearance block of policies/meclear-paper.yaml (K = 5, L = 16, κ = τ = 0.05, 2 trials)."""
    spec = load_policy(POLICY).clearance
    return spec.model_copy(update=update) if update else spec


def with_samples(spec: ClearanceSpec, samples: int) -> ClearanceSpec:
    """The same spec with B ablations for ContextCite / ProxySPEX."""
    return spec.model_copy(update={"baselines": spec.baselines.model_copy(update={"samples": samples})})


def standard_variants(spec: ClearanceSpec, sampled: Sequence[int] = (4, 8, 16)) -> list[Variant]:
    """MeClear exact and sampled at each L, then every baseline (paper settings)."""
    out = [Variant("MeClear exact", "meclear", spec.model_copy(update={"exact": "always"}))]
    out += [Variant(f"MeClear L={L}", "meclear", spec.model_copy(update={"exact": "never", "permutations": L}))
            for L in sorted(sampled, reverse=True)]
    out += [Variant("LOO", "loo", spec), Variant("ContextCite", "contextcite", spec),
            Variant("ProxySPEX", "proxyspex", spec), Variant("direct", "direct", spec)]
    return out


def progress(items: Sequence, desc: str, quiet: bool = False, unit: str = "case") -> Iterable:
    """A tqdm bar on stderr (plain iteration when quiet)."""
    if quiet:
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit=unit, file=sys.stderr, leave=False)


def run_variants(cases: Sequence[Case], variants: Sequence[Variant], *,
                 evaluator: Evaluator | None = None, desc: str = "cases",
                 quiet: bool = False, stops: dict[str, list[tuple[str, int]]] | None = None,
                 ) -> dict[str, list[CaseOutcome]]:
    """Every variant on every case; one evaluator and one coalition cache per case, with each
    variant's stand-alone cost (distinct coalitions × trials) accounted separately. ``stops``
    (when given) collects each plan's (attribution stop reason, permutations used)."""
    out: dict[str, list[CaseOutcome]] = {v.label: [] for v in variants}
    for case in progress(cases, desc, quiet):
        ev = evaluator if evaluator is not None and case.game is None else case_evaluator(case, variants[0].spec)
        store = OutcomeStore()
        for v in variants:
            plan = run_method(v.method, case_game(case, v.spec, ev, store), v.spec)
            out[v.label].append(replace(outcome(plan, case.faults, case.structure), method=v.label))
            if stops is not None:
                stops.setdefault(v.label, []).append((plan.stop, plan.permutations))
    return out


# --------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class CaseMetrics:
    """Per-case numerators the paper's metrics aggregate."""

    hits: list[float]
    targets: list[float]
    complete: list[float]
    exact: list[float]
    recovered: list[float]
    extra: list[float]
    calls: list[float]


def case_metrics(outcomes: Sequence[CaseOutcome]) -> CaseMetrics:
    return CaseMetrics(
        hits=[float(recall_hits(o.ranking, o.faults)) for o in outcomes],
        targets=[float(len(o.faults)) for o in outcomes],
        complete=[float(complete(o.flagged, o.faults)) for o in outcomes],
        exact=[float(exact_match(o.flagged, o.faults)) for o in outcomes],
        recovered=[float(o.recovered) for o in outcomes],
        extra=[float(extra_background(o.flagged, o.faults)) for o in outcomes],
        calls=[float(o.calls) for o in outcomes])


def subset(outcomes: Sequence[CaseOutcome], group: str) -> list[int]:
    return [k for k, o in enumerate(outcomes) if group == "all" or o.structure == group]


def metric_cells(outcomes: Sequence[CaseOutcome], reps: int, seed: int = 0,
                 clusters: Sequence[str] | None = None) -> dict[str, object]:
    """Recall@|M| (target-micro), Complete, Exact, Recovery (case-macro), extra background per
    case and calls per case, each with a 95 % percentile-bootstrap interval."""
    m = case_metrics(outcomes)
    kw = {"reps": reps, "seed": seed, "clusters": clusters}
    return {"n": len(outcomes), "targets": int(sum(m.targets)),
            "recall": bootstrap_ratio(m.hits, m.targets, **kw),
            "complete": bootstrap_ratio(m.complete, **kw), "exact": bootstrap_ratio(m.exact, **kw),
            "recovery": bootstrap_ratio(m.recovered, **kw), "extra": bootstrap_ratio(m.extra, **kw),
            "calls": sum(m.calls) / len(m.calls) if m.calls else 0.0}


def metrics_table(results: Mapping[str, Sequence[CaseOutcome]], group: str, reps: int,
                  clusters: Sequence[str] | None = None,
                  paper: Mapping[str, Mapping[str, float | None]] | None = None) -> tuple[str, dict[str, dict]]:
    """A markdown table of every variant on one group of cases (and the computed cells)."""
    header = ["method", "n", "Recall@\\|M\\| %", "Complete %", "Exact %", "Recovery %",
              "extra bg / case", "calls / case"]
    if paper:
        header += ["paper R / C / E / Rec (extra)"]
    rows, cells = [], {}
    for label, outs in results.items():
        idx = subset(outs, group)
        if not idx:
            continue
        sub = [outs[k] for k in idx]
        c = metric_cells(sub, reps, clusters=[clusters[k] for k in idx] if clusters else None)
        cells[label] = c
        row = [label, c["n"], c["recall"].pct(), c["complete"].pct(), c["exact"].pct(), c["recovery"].pct(),
               c["extra"].num(2), round(c["calls"], 1)]
        if paper:
            p = paper.get(label)
            row.append("–" if p is None else
                       " / ".join(paper_cell(p.get(k)) for k in ("recall", "complete", "exact", "recovery"))
                       + (f" ({p['extra']:.3f})" if p.get("extra") is not None else ""))
        rows.append(row)
    return table(header, rows), cells


def ecdf_of(outcomes: Sequence[CaseOutcome], ks: Sequence[int]) -> dict[int, float]:
    ranks = [r for o in outcomes for r in target_ranks(o.ranking, o.faults)]
    return rank_ecdf(ranks, ks)


def paired_vs(results: Mapping[str, Sequence[CaseOutcome]], reference: str, reps: int,
              clusters: Sequence[str] | None = None) -> list[list[object]]:
    """Per method: W/L against ``reference`` on per-case recall, Complete, Exact and Recovery,
    the both / neither split of Recovery, and ΔRecovery (pp) with a paired bootstrap CI."""
    ref = case_metrics(results[reference])
    rows = []
    for label, outs in results.items():
        if label == reference:
            continue
        me = case_metrics(outs)
        per_case_recall = lambda m: [h / t for h, t in zip(m.hits, m.targets)]  # noqa: E731
        rec = paired_counts(me.recovered, ref.recovered)
        delta = bootstrap_ratio([a - b for a, b in zip(me.recovered, ref.recovered)], reps=reps,
                                clusters=clusters)
        cells = [label]
        for a, b in ((per_case_recall(me), per_case_recall(ref)), (me.complete, ref.complete),
                     (me.exact, ref.exact)):
            p = paired_counts(a, b)
            cells.append(f"{p.wins}/{p.losses}")
        cells += [f"{rec.wins}/{rec.losses}", f"{rec.both} / {rec.neither}",
                  f"{100 * delta.point:+.1f} [{100 * delta.low:+.1f}, {100 * delta.high:+.1f}]"]
        rows.append(cells)
    return rows


# --------------------------------------------------------------------------- plots


def save_plot(fig, name: str) -> str:
    """Save a matplotlib figure under bench/plots/ and return the section-relative link."""
    PLOTS.mkdir(exist_ok=True)
    path = PLOTS / name
    fig.savefig(path, dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return f"plots/{name}"


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def elapsed(start: float) -> str:
    import time

    return f"{time.perf_counter() - start:.1f} s"

