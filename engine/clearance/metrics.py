"""The paper's metrics (Appendix D.3), as pure functions of plans and verified fault sets.

For a case with verified fault set F (|F| = m) and a method's ranking r_1, r_2, …:

* Recall@|M| = |{r_1..r_m} ∩ F| / |F|, target-micro averaged over all fault records (Eq. 47);
* Complete Set Recall — F ⊆ H (the method's flagged set), case-macro;
* Exact Set Match — H = F, case-macro;
* Binary Task Recovery — ν on the method's cleared context (all trials correct), case-macro;
* extra background — |H \\ F| per case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

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


def outcome(plan: ClearancePlan, faults: Sequence[str], structure: str | None) -> CaseOutcome:
    """Reduce a plan to a :class:`CaseOutcome`."""
    return CaseOutcome(plan.method, structure or "unknown", tuple(faults), tuple(plan.harmful),
                       tuple(plan.ranking), plan.recovered, plan.coalitions_evaluated,
                       plan.evaluator_calls)


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


def format_table(rows: Sequence[Summary]) -> str:
    """A plain-text table of summaries."""
    head = (f"{'method':<12} {'group':<10} {'cases':>5} {'Recall@|M|':>10} {'Complete':>9} "
            f"{'Exact':>7} {'Recovery':>9} {'extra/case':>10} {'coal/case':>9} {'calls/case':>10}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r.method:<12} {r.group:<10} {r.cases:>5} {100 * r.recall_at_m:>9.1f}% "
                     f"{100 * r.complete:>8.1f}% {100 * r.exact:>6.1f}% {100 * r.recovery:>8.1f}% "
                     f"{r.extra_background:>10.3f} {r.coalitions_per_case:>9.1f} {r.calls_per_case:>10.1f}")
    return "\n".join(lines)
