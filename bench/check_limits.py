"""`memsteward check` on the worst shapes at each documented policy limit (issue 25).

Every limit `check` documents must be one it answers within 60 s on this machine. The limits: 5,000
mode rules (MAX_RULES), 600 numeric meta conditions (MAX_META_CONDITIONS), 256 kinds (MAX_KINDS), the
rule analysis' work Σ n_p (n_p + 2K) over the parts (kind, arch, event) (MAX_PART_WORK; a rule of c meta
conditions counts 1 + c times, K the kinds), and the file's 1 MiB / 100,000 nodes. The shapes are the expensive ones found: rules that
name no kind (each is analysed in every part), overlapping meta ranges (every rule shadowed, so each
needs a covering set), each grown to the largest size a limit admits, plus two over-limit shapes that
must be refused at once. Each is one `memsteward check --json` process, timed with its CPU (user + sys of
the child: Z3 runs in-process) beside the wall time and the load average, since the machine is shared.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memsteward.policy.analysis import MAX_META_CONDITIONS, MAX_PART_WORK, MAX_RULES
from memsteward.policy.model import MAX_KINDS, Policy
from memsteward.policy.rulesolver import part_work

from .common import table, write_section

ROLES = ("root", "skill", "replayable", "text")
VALIDATION = [{"mode": m, "oracles": [{"oracle": "schema", "schema": {}}]} for m in ("recompute", "regen", "param")]
TIMEOUT_S = 400


def _kinds(n: int, meta: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i in range(n):
        spec: dict[str, Any] = {"role": ROLES[i % 4]}
        if ROLES[i % 4] == "skill":
            spec["architectures"] = ["neural", "prompt", "chain"]
        if meta:
            spec["meta"] = {f"f{j}": {"min": 0, "max": 10000} for j in range(meta)}
        out[f"k{i}"] = spec
    return out


def _doc(kinds: dict[str, Any], rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"version": 1, "kinds": kinds, "modes": rules + [{"when": {}, "mode": "remove"}], "validation": VALIDATION}


def _range(rng: random.Random) -> dict[str, int]:
    return {"gt": rng.randint(0, 5000), "le": rng.randint(5000, 10000)}


def kindless(n: int, kinds: int, seed: int = 0) -> dict[str, Any]:
    """n rules naming no kind (events, support, partitions at random) over ``kinds`` kinds."""
    rng = random.Random(seed)
    rules = []
    for _ in range(n):
        w: dict[str, Any] = {}
        if rng.random() < 0.7:
            w["event"] = rng.sample(["delete", "correct", "migrate"], rng.randint(1, 2))
        if rng.random() < 0.5:
            w["support"] = rng.choice(["sufficient", "insufficient"])
        if rng.random() < 0.5:
            w["partitions"] = rng.choice([True, False])
        rules.append({"when": w, "mode": "remove"})
    return _doc(_kinds(kinds), rules)


def kind_lists(n: int, kinds: int, seed: int = 0) -> dict[str, Any]:
    """n rules, each naming 1-8 of ``kinds`` kinds (the 100,000-node cap bounds the lists at 5,000 rules)."""
    rng = random.Random(seed)
    names = [f"k{i}" for i in range(kinds)]
    rules = []
    for _ in range(n):
        w: dict[str, Any] = {"kind": rng.sample(names, rng.randint(1, 8))}
        if rng.random() < 0.5:
            w["event"] = rng.choice(["delete", "correct", "migrate"])
        rules.append({"when": w, "mode": "remove"})
    return _doc(_kinds(kinds), rules)


def meta_kindless(n: int, per: int, kinds: int = 4, seed: int = 0) -> dict[str, Any]:
    """n rules naming no kind, each with ``per`` overlapping meta ranges on fields every kind declares."""
    rng = random.Random(seed)
    rules = [{"when": {"meta": {f"f{j}": _range(rng) for j in range(per)}}, "mode": "remove"} for _ in range(n)]
    return _doc(_kinds(kinds, per), rules)


def meta_one_kind(n: int, per: int, seed: int = 0) -> dict[str, Any]:
    """n rules on one kind with ``per`` overlapping meta ranges each (the shape of MAX_META_CONDITIONS)."""
    rng = random.Random(seed)
    kinds = {"record": {}, "cache": {"meta": {f"f{j}": {"min": 0, "max": 10000} for j in range(per)}}}
    rules = [{"when": {"kind": "cache", "meta": {f"f{j}": _range(rng) for j in range(per)}}, "mode": "remove"}
             for _ in range(n)]
    return {"version": 1, "kinds": kinds, "modes": rules + [{"when": {}, "mode": "remove"}]}


def meta_plus_plain(n: int, seed: int = 0) -> dict[str, Any]:
    """200 rules of 3 meta conditions on one kind (600, the limit) shuffled among n − 200 plain rules on 4 kinds."""
    rng = random.Random(seed)
    kinds = _kinds(4)
    kinds["k0"] = {"role": "text", "meta": {f"f{j}": {"min": 0, "max": 10000} for j in range(3)}}
    rules: list[dict[str, Any]] = [{"when": {"kind": "k0", "meta": {f"f{j}": _range(rng) for j in range(3)}},
                                    "mode": "remove"} for _ in range(MAX_META_CONDITIONS // 3)]
    for _ in range(n - len(rules)):
        w: dict[str, Any] = {"kind": rng.choice(["k0", "k1", "k2", "k3"])}
        if rng.random() < 0.5:
            w["event"] = rng.choice(["delete", "correct", "migrate"])
        if rng.random() < 0.3:
            w["support"] = rng.choice(["sufficient", "insufficient"])
        rules.append({"when": w, "mode": "remove"})
    rng.shuffle(rules)
    return _doc(kinds, rules)


def largest(make: Callable[[int], dict[str, Any]], hi: int) -> int:
    """The largest n ≤ hi whose policy ``make(n)`` is within MAX_PART_WORK (work grows with n)."""
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if part_work(Policy.model_validate(make(mid))) <= MAX_PART_WORK:
            lo = mid
        else:
            hi = mid - 1
    return lo


def shapes(quick: bool) -> list[tuple[str, dict[str, Any]]]:
    """(label, policy) at the limits; ``quick``: the over-limit refusals and two small shapes only."""
    out = [(f"over: {MAX_RULES - 1} kind-less rules, {MAX_KINDS} kinds", kindless(MAX_RULES - 1, MAX_KINDS)),
           (f"over: {MAX_META_CONDITIONS} kind-less meta rules, {MAX_KINDS} kinds",
            meta_kindless(MAX_META_CONDITIONS, 1, MAX_KINDS))]
    if quick:
        return out + [("120 meta rules, 1 condition, one kind", meta_one_kind(120, 1)),
                      ("20 rules of 30 meta conditions, one kind", meta_one_kind(20, 30))]
    sized: list[tuple[str, Callable[[int], dict[str, Any]], int]] = [
        ("kind-less rules, 4 kinds", lambda n: kindless(n, 4), MAX_RULES - 1),
        ("kind-less rules, 16 kinds", lambda n: kindless(n, 16), MAX_RULES - 1),
        ("kind-less rules, 256 kinds", lambda n: kindless(n, MAX_KINDS), MAX_RULES - 1),
        ("rules naming 1-8 of 256 kinds", lambda n: kind_lists(n, MAX_KINDS), MAX_RULES - 1),
        ("600 meta conditions (200 × 3, one kind) among plain rules, 4 kinds", meta_plus_plain, MAX_RULES - 1),
        ("kind-less rules of 1 meta condition, 4 kinds", lambda n: meta_kindless(n, 1), MAX_META_CONDITIONS),
        ("kind-less rules of 2 meta conditions, 4 kinds", lambda n: meta_kindless(n, 2), MAX_META_CONDITIONS // 2),
    ]
    for label, make, hi in sized:
        n = largest(make, hi)
        out.append((f"{n} {label}", make(n)))
    return out + [("600 meta rules of 1 condition, one kind", meta_one_kind(600, 1)),
                  ("200 meta rules of 3 conditions, one kind", meta_one_kind(200, 3)),
                  ("20 meta rules of 30 conditions, one kind", meta_one_kind(20, 30))]


def check_once(path: Path) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, outcome) of one `memsteward check --json` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-m", "memsteward", "check", str(path), "--json"], capture_output=True,
                           text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, float("nan"), f"no answer in {TIMEOUT_S} s"
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    codes = sorted({f["code"] for f in json.loads(r.stdout) if f["severity"] == "error"}) if r.stdout else []
    return wall, cpu, f"exit {r.returncode}" + (f" ({', '.join(codes)})" if codes else "")


def run(quick: bool = False) -> str:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, (label, doc) in enumerate(shapes(quick)):
            path = Path(tmp) / f"p{k}.json"
            path.write_text(json.dumps(doc))
            work = part_work(Policy.model_validate(doc))
            load = os.getloadavg()[0]
            wall, cpu, outcome = check_once(path)
            rows.append([label, len(doc["modes"]), f"{work:,}", f"{path.stat().st_size / 1024:.0f} KB", f"{wall:.1f}",
                         f"{cpu:.1f}", f"{load:.1f}", outcome])
    md = ("## check: the worst shapes at each documented limit\n\n"
          "`python -m bench check_limits` (module docstring: the shapes). One `memsteward check --json` "
          f"process per policy; limits: {MAX_RULES} rules, {MAX_META_CONDITIONS} meta conditions, {MAX_KINDS} "
          f"kinds, part work Σ n_p (n_p + 2K) ≤ {MAX_PART_WORK:,} (a rule of c meta conditions counts 1 + c "
          "times), 1 MiB / 100,000 nodes. "
          "CPU is the child's user + sys time, the load the 1-minute average when it started (2 cores, shared).\n\n"
          + table(["shape", "rules", "part work", "size", "wall s", "CPU s", "load", "outcome"], rows) + "\n")
    write_section("check_limits", md)
    return md


if __name__ == "__main__":
    print(run())
