"""The paper's metrics (Appendix D.3), as pure functions of plans and verified fault sets.

For a case with verified fault set F (|F| = m) and a method's ranking r_1, r_2, …:

* Recall@|M| = |{r_1..r_m} ∩ F| / |F|, target-micro averaged over all fault records (Eq. 47);
* Complete Set Recall — F ⊆ H (the method's flagged set), case-macro;
* Exact Set Match — H = F, case-macro;
* Binary Task Recovery — ν on the method's cleared context (all trials correct), case-macro;
* extra background — |H \\ F| per case;

and, for a cohort report, the paired difference of two methods on one 0/1 metric with a
percentile-bootstrap interval over cases (:func:`paired_difference`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .plan import ClearancePlan


@dataclass(frozen=True)
class CaseOutcome:
    """One method on one case, reduced to what the metrics need."""

    method: str
    structure: str
    faults: tuple[str, ...]
    flagged: tuple[str, ...]
    ranking: tuple[str, ...]
    recovered: bool
    coalitions: int
    calls: int
    exact: bool = True  # attribution enumerated all 2^K coalitions (else sampled permutations)
    full_correct: bool = False  # ν(M): the full context is already answered correctly
    clean_correct: bool | None = None  # ν(M \\ F): the context without its faults (None: no faults)
    removed: tuple[str, ...] = ()  # C_ĵ: what the method served the query without


def recall_hits(ranking: Sequence[str], faults: Sequence[str]) -> int:
    """|{r_1, …, r_m} ∩ F| with m = |F| (numerator of Eq. 47)."""
    return len(set(ranking[: len(faults)]) & set(faults))


def complete(flagged: Iterable[str], faults: Iterable[str]) -> bool:
    """F ⊆ H."""
    return set(faults) <= set(flagged)


def exact_match(flagged: Iterable[str], faults: Iterable[str]) -> bool:
    """H = F."""
    return set(flagged) == set(faults)


def extra_background(flagged: Iterable[str], faults: Iterable[str]) -> int:
    """|H \\ F|: background memories flagged."""
    return len(set(flagged) - set(faults))


def outcome(plan: ClearancePlan, faults: Sequence[str], structure: str | None,
            full_correct: bool = False, clean_correct: bool | None = None) -> CaseOutcome:
    """Reduce a plan to a :class:`CaseOutcome`."""
    return CaseOutcome(plan.method, structure or "unknown", tuple(faults), tuple(plan.harmful),
                       tuple(plan.ranking), plan.recovered, plan.coalitions_evaluated,
                       plan.evaluator_calls, plan.exact, full_correct, clean_correct, tuple(plan.removed))


@dataclass(frozen=True)
class Summary:
    """Aggregated metrics of one method on one group of cases."""

    method: str
    group: str
    cases: int
    targets: int
    recall_at_m: float
    complete: float
    exact: float
    recovery: float
    extra_background: float
    coalitions_per_case: float
    calls_per_case: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def summarize(outcomes: Sequence[CaseOutcome], group: str = "all") -> Summary:
    """Target-micro Recall@|M| and case-macro rates over ``outcomes`` (one method)."""
    n = len(outcomes)
    targets = sum(len(o.faults) for o in outcomes)
    hits = sum(recall_hits(o.ranking, o.faults) for o in outcomes)
    rate = lambda xs: (sum(xs) / n) if n else 0.0  # noqa: E731
    return Summary(
        method=outcomes[0].method if outcomes else "", group=group, cases=n, targets=targets,
        recall_at_m=hits / targets if targets else 0.0,
        complete=rate([complete(o.flagged, o.faults) for o in outcomes]),
        exact=rate([exact_match(o.flagged, o.faults) for o in outcomes]),
        recovery=rate([o.recovered for o in outcomes]),
        extra_background=rate([extra_background(o.flagged, o.faults) for o in outcomes]),
        coalitions_per_case=rate([o.coalitions for o in outcomes]),
        calls_per_case=rate([o.calls for o in outcomes]))


def summary_table(outcomes: Sequence[CaseOutcome]) -> list[Summary]:
    """Per method: all cases, then each structure (in the paper's order)."""
    methods = list(dict.fromkeys(o.method for o in outcomes))
    order = ["direct", "redundant", "joint"]
    groups = order + sorted({o.structure for o in outcomes} - set(order))
    rows = []
    for m in methods:
        mine = [o for o in outcomes if o.method == m]
        rows.append(summarize(mine, "all"))
        for g in groups:
            sub = [o for o in mine if o.structure == g]
            if sub:
                rows.append(summarize(sub, g))
    return rows


HEADERS = ("method", "group", "cases", "Recall@|M|", "Complete Set Recall", "Exact Set Match",
           "Binary Task Recovery", "extra/case", "coalitions/case", "calls/case")


def format_table(rows: Sequence[Summary]) -> str:
    """A plain-text table of summaries, headed with the paper's metric names."""
    widths = [max(len(h), 8) for h in HEADERS]
    widths[0], widths[1] = 12, 10
    head = " ".join(h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(HEADERS, widths)))
    lines = [head, "-" * len(head)]
    for r in rows:
        cells = [r.method, r.group, str(r.cases), f"{100 * r.recall_at_m:.1f}%", f"{100 * r.complete:.1f}%",
                 f"{100 * r.exact:.1f}%", f"{100 * r.recovery:.1f}%", f"{r.extra_background:.3f}",
                 f"{r.coalitions_per_case:.1f}", f"{r.calls_per_case:.1f}"]
        lines.append(" ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))))
    return "\n".join(lines)


@dataclass(frozen=True)
class PairedDifference:
    """mean(a − b) over paired cases with a (1 − α) percentile-bootstrap interval."""

    metric: str
    a: str
    b: str
    cases: int
    mean: float
    low: float
    high: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def paired_difference(a: Sequence[float], b: Sequence[float], *, metric: str, names: tuple[str, str],
                      confidence: float = 0.95, resamples: int = 4000, seed: int = 0) -> PairedDifference:
    """mean_i (a_i − b_i) and its percentile-bootstrap interval, resampling cases with replacement
    (``resamples`` draws, fixed ``seed``: the same cohort always reports the same interval)."""
    if len(a) != len(b) or not a:
        raise ValueError("paired samples must be non-empty and of equal length")
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(means, [tail, 100 - tail])
    return PairedDifference(metric, names[0], names[1], len(d), float(d.mean()), float(low), float(high))


def cohort_notes(outcomes: Sequence[CaseOutcome]) -> dict:
    """What a reader of a cohort table needs besides the table: how MeClear attributed (exactly or
    by sampling), and how many cases were already solved or unsolvable before clearance."""
    per_case = [o for o in outcomes if o.method == outcomes[0].method] if outcomes else []
    meclear = [o for o in outcomes if o.method == "meclear"]
    return {
        "cases": len(per_case),
        "meclear_exact": sum(o.exact for o in meclear),
        "meclear_sampled": sum(not o.exact for o in meclear),
        "full_context_correct": sum(o.full_correct for o in per_case),
        "clean_context_wrong": sum(o.clean_correct is False for o in per_case),
    }


def cohort_differences(outcomes: Sequence[CaseOutcome], against: str = "loo") -> list[PairedDifference]:
    """MeClear − ``against`` on Binary Task Recovery and Complete Set Recall, paired by case."""
    mine = [o for o in outcomes if o.method == "meclear"]
    theirs = [o for o in outcomes if o.method == against]
    if not mine or len(mine) != len(theirs):
        return []
    out = []
    for metric, score in (("Binary Task Recovery", lambda o: float(o.recovered)),
                          ("Complete Set Recall", lambda o: float(complete(o.flagged, o.faults)))):
        out.append(paired_difference([score(o) for o in mine], [score(o) for o in theirs],
                                     metric=metric, names=("meclear", against)))
    return out


def solvable(o: CaseOutcome) -> bool:
    """The case can be recovered by removing its faults: ν(M ∖ F) = 1 (unknown without faults: no)."""
    return bool(o.clean_correct)


def method_row(outcomes: Sequence[CaseOutcome]) -> dict:
    """One method on one group: recovery, exact set match of the *removed* set, its size, calls."""
    n = len(outcomes)
    mean = lambda xs: (sum(xs) / n) if n else 0.0  # noqa: E731
    targets = sum(len(o.faults) for o in outcomes)
    return {"cases": n, "recovery": mean([o.recovered for o in outcomes]),
            "exact_set_match": mean([exact_match(o.removed, o.faults) for o in outcomes]),
            "removed_per_case": mean([len(o.removed) for o in outcomes]),
            "calls_per_case": mean([o.calls for o in outcomes]),
            "max_calls": max((o.calls for o in outcomes), default=0),
            "recall_at_m": sum(recall_hits(o.ranking, o.faults) for o in outcomes) / targets if targets else 0.0}


def _structure_is(structure: str) -> Callable[[CaseOutcome], bool]:
    return lambda o: o.structure == structure


def cohort_groups(outcomes: Sequence[CaseOutcome]) -> dict[str, dict]:
    """``{group: {"cases": n, "rows": {method: method_row}}}`` for all cases, each structure, and
    the solvable (ν(M ∖ F) = 1) and unsolvable cases apart — so a weak evaluator cannot hide a
    difference among the cases it could not solve anyway."""
    methods = list(dict.fromkeys(o.method for o in outcomes))
    structures = ["direct", "redundant", "joint"]
    structures += sorted({o.structure for o in outcomes} - set(structures))
    selectors: list[tuple[str, Callable[[CaseOutcome], bool]]] = [("all", lambda o: True)]
    selectors += [(g, _structure_is(g)) for g in structures]
    selectors += [("solvable", solvable), ("unsolvable", lambda o: not solvable(o))]
    out: dict[str, dict] = {}
    for name, keep in selectors:
        rows = {m: method_row([o for o in outcomes if o.method == m and keep(o)]) for m in methods}
        cases = max((r["cases"] for r in rows.values()), default=0)
        if cases or name == "all":
            out[name] = {"cases": cases, "rows": rows}
    return out
