"""The benchmarks' statistics helpers (bench/stats.py): small, fast, no timing."""

from __future__ import annotations

import random

from bench.stats import (
    bootstrap_ratio,
    paired_counts,
    rank_ecdf,
    smallest_reaching,
    target_ranks,
)


def test_bootstrap_interval_contains_the_mean():
    rng = random.Random(1)
    xs = [float(rng.random() < 0.7) for _ in range(200)]
    ci = bootstrap_ratio(xs, reps=500, seed=3)
    assert abs(ci.point - sum(xs) / len(xs)) < 1e-12
    assert ci.low <= ci.point <= ci.high
    assert 0.0 <= ci.low < ci.high <= 1.0


def test_bootstrap_ratio_is_target_micro_and_deterministic():
    hits, targets = [1, 2, 0, 1], [1, 2, 2, 1]
    a = bootstrap_ratio(hits, targets, reps=300, seed=5)
    assert abs(a.point - 4 / 6) < 1e-12
    assert a == bootstrap_ratio(hits, targets, reps=300, seed=5)
    assert a.low <= a.point <= a.high


def test_cluster_bootstrap_keeps_clusters_together():
    # two clusters with constant values: every resample is a mix of whole clusters
    xs = [1.0, 1.0, 0.0, 0.0]
    ci = bootstrap_ratio(xs, clusters=["a", "a", "b", "b"], reps=400, seed=0)
    assert ci.point == 0.5 and ci.low == 0.0 and ci.high == 1.0


def test_constant_sample_has_a_degenerate_interval():
    ci = bootstrap_ratio([1.0] * 10, reps=100)
    assert (ci.point, ci.low, ci.high) == (1.0, 1.0, 1.0)


def test_target_ranks_and_ecdf_monotone():
    assert target_ranks(["m3", "m1", "m2"], ["m1", "m2"]) == [2, 3]
    assert target_ranks(["m1"], ["m9"]) == [2]
    ranks = [1, 1, 2, 3, 5, 2, 4]
    e = rank_ecdf(ranks, [1, 2, 3, 4, 5])
    values = [e[k] for k in sorted(e)]
    assert values == sorted(values) and values[-1] == 1.0
    assert abs(e[1] - 2 / 7) < 1e-12 and abs(e[2] - 4 / 7) < 1e-12


def test_paired_counts_on_a_hand_example():
    a = [1, 1, 0, 0, 1, 0]
    b = [1, 0, 1, 0, 0, 0]
    p = paired_counts(a, b)
    assert (p.wins, p.losses, p.ties, p.both, p.neither) == (2, 1, 3, 1, 2)
    q = paired_counts([0.5, 1.0, 0.0], [0.5, 0.0, 1.0])  # non-binary ties count as ties only
    assert (q.wins, q.losses, q.ties, q.both, q.neither) == (1, 1, 1, 0, 0)


def test_smallest_reaching():
    ladder = [(10, 0.5), (20, 0.8), (40, 0.9), (30, 0.85)]
    assert smallest_reaching(ladder, 0.8) == (20, 0.8)
    assert smallest_reaching(ladder, 0.95) is None
