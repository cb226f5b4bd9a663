"""Benchmark 8: how far each `memsteward verify` proof reaches within a time budget.

Each proof is re-run at growing size bounds (players K, chain length h, candidates n,
model-checking depth) until one run exceeds the per-step budget; the table reports the
seconds per bound, so a reader sees how far each proof reaches in about a minute.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from memsteward.specs.proofs import g1_efficiency, g2_blind_spot, g3_non_degradation, g4_closure, g5_barrier

from .common import table, write_section

LADDERS: dict[str, tuple[str, list[int], Callable[[int], object]]] = {
    "G1": ("players K (exact + one symbolic permutation)", [3, 4, 5, 6, 7, 8],
           lambda k: g1_efficiency.prove(max_players=k, max_permutations=4)),
    "G2": ("players K (every 2 ≤ r ≤ K)", [4, 5, 6, 7, 8, 9],
           lambda k: g2_blind_spot.prove(max_players=k)),
    "G3": ("chain length h", [8, 16, 32, 64],
           lambda h: g3_non_degradation.prove(max_chain=h)),
    "G4": ("generated candidates n (Z3 optimality of the cut)", [64, 256, 1000, 2000],
           lambda n: g4_closure.prove(max_symbolic=3, sizes=(n,), seeds=1)),
    "G5": ("BMC depth (4 artifacts, every DAG)", [6, 10, 14, 18, 22],
           lambda d: g5_barrier.prove(artifacts=4, depth=d)),
}


def run(quick: bool = False) -> str:
    budget = 5.0 if quick else 60.0
    rows = []
    for gid, (what, sizes, prove) in LADDERS.items():
        for size in (sizes[:2] if quick else sizes):
            start = time.perf_counter()
            result = prove(size)
            seconds = time.perf_counter() - start
            status = getattr(result, "status", "?")
            rows.append([gid, what, size, status, round(seconds, 2)])
            if seconds > budget or status != "proved":
                break
    md = ("## Verification: proof time against its size bound\n\n"
          f"Each ladder stops after the first bound that takes over {budget:.0f} s or does not prove. "
          "`memsteward verify` uses bounds well inside these (all five in about 10 s).\n\n"
          + table(["guarantee", "size parameter", "bound", "result", "seconds"], rows))
    write_section("verify_scaling", md)
    return md
