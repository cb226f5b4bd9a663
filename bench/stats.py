"""Pure statistics the benchmarks share: bootstrap intervals, the target-rank ECDF, paired wins.

Everything here is a deterministic function of its inputs (seeded resampling), with no I/O,
so it is unit-tested in ``proofs_tests/test_bench_stats.py``.

* :func:`bootstrap_ratio` — percentile bootstrap CI of Σ num / Σ den over resampled cases (or
  clusters of cases); a case-macro rate is the special case den = 1, the paper's target-micro
  Recall@|M| is num = hits, den = |F|.
* :func:`target_ranks`, :func:`rank_ecdf` — the rank of every injected target in a method's
  ranking and the share of targets with rank ≤ k (paper Fig. 12).
* :func:`paired_counts` — case-level wins / losses / ties of method A against method B
  (paper Fig. 6 and 10), and for 0/1 outcomes the "both" / "neither" split.
* :func:`smallest_reaching` — the cheapest configuration of a ladder that reaches a quality.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Interval:
    """A point estimate with a (1 − α) percentile-bootstrap interval."""

    point: float
    low: float
    high: float

    def pct(self, digits: int = 1) -> str:
        """``"85.9 [83.1, 88.4]"`` in percent."""
        return f"{100 * self.point:.{digits}f} [{100 * self.low:.{digits}f}, {100 * self.high:.{digits}f}]"

    def num(self, digits: int = 3) -> str:
        """``"0.623 [0.58, 0.67]"``."""
        return f"{self.point:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def bootstrap_ratio(num: Sequence[float], den: Sequence[float] | None = None, *,
                    reps: int = 2000, seed: int = 0, alpha: float = 0.05,
                    clusters: Sequence[Hashable] | None = None) -> Interval:
    """Percentile bootstrap of Σ num / Σ den, resampling cases (or whole clusters) with replacement.

    ``den`` defaults to 1 per case (a plain mean). With ``clusters`` (one label per case) the
    resampling unit is the cluster: cases of the same query or conversation stay together, as
    in the paper's cluster bootstrap (App. D.3). The point estimate is the full-sample ratio.
    """
    x = np.asarray(num, dtype=float)
    d = np.ones_like(x) if den is None else np.asarray(den, dtype=float)
    if x.shape != d.shape:
        raise ValueError("num and den must have the same length")
    if x.size == 0:
        return Interval(0.0, 0.0, 0.0)
    point = float(x.sum() / d.sum()) if d.sum() else 0.0
    if clusters is not None:
        if len(clusters) != x.size:
            raise ValueError("one cluster label per case")
        labels = {c: k for k, c in enumerate(dict.fromkeys(clusters))}
        idx = np.fromiter((labels[c] for c in clusters), dtype=int, count=x.size)
        x, d = np.bincount(idx, weights=x), np.bincount(idx, weights=d)
    rng = np.random.default_rng(seed)
    n = x.size
    draws = rng.integers(0, n, size=(reps, n))
    top, bottom = x[draws].sum(axis=1), d[draws].sum(axis=1)
    ratios = np.divide(top, bottom, out=np.full(reps, point), where=bottom != 0)
    low, high = np.quantile(ratios, [alpha / 2, 1 - alpha / 2])
    return Interval(point, float(min(low, point)), float(max(high, point)))


def target_ranks(ranking: Sequence[str], faults: Iterable[str]) -> list[int]:
    """1-based rank of every target in ``ranking`` (len(ranking) + 1 when it is missing)."""
    pos = {m: k + 1 for k, m in enumerate(ranking)}
    return [pos.get(f, len(ranking) + 1) for f in faults]


def rank_ecdf(ranks: Iterable[int], ks: Sequence[int]) -> dict[int, float]:
    """Share of targets whose rank is ≤ k, for each k (paper Fig. 12; monotone in k)."""
    r = np.asarray(list(ranks), dtype=int)
    if r.size == 0:
        return {k: 0.0 for k in ks}
    return {k: float((r <= k).mean()) for k in ks}


@dataclass(frozen=True)
class Paired:
    """Case-level comparison of method A against B on one metric."""

    wins: int  # A better
    losses: int  # B better
    ties: int
    both: int  # 0/1 metrics: both succeed (a tie)
    neither: int  # 0/1 metrics: both fail (a tie)


def paired_counts(a: Sequence[float], b: Sequence[float]) -> Paired:
    """Wins (a > b), losses (a < b) and ties over paired cases; ties of 0/1 outcomes split into
    both (1, 1) and neither (0, 0)."""
    if len(a) != len(b):
        raise ValueError("paired sequences must have the same length")
    wins = sum(1 for x, y in zip(a, b) if x > y)
    losses = sum(1 for x, y in zip(a, b) if x < y)
    both = sum(1 for x, y in zip(a, b) if x == y and x >= 1)
    neither = sum(1 for x, y in zip(a, b) if x == y and x <= 0)
    return Paired(wins, losses, len(a) - wins - losses, both, neither)


def smallest_reaching(ladder: Sequence[tuple[float, float]], target: float) -> tuple[float, float] | None:
    """Among (cost, quality) points, the cheapest whose quality ≥ target (None if none does)."""
    ok = [(c, q) for c, q in ladder if q >= target - 1e-12]
    return min(ok) if ok else None
