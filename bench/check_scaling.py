"""How `memsteward check` scales with the number of mode rules (issue 17: 2,000 rules in seconds).

Generated policies: n random rules over four kinds (cache and summary rules test an `age_days`
interval, skill rules an architecture; half name an event, a third a support value) and a final
catch-all, so most rules are shadowed — the expensive case, each needing a covering set. The
whole analysis (`analyze`: references, parameters, endpoints, vacuity, shadowing with covers,
totality, type safety) is timed, after loading and schema validation (timed separately).

Reference, run in the same process: the direct encoding the analysis used before, which asks
"does rule i fire" as one fresh solver over guard_i ∧ ⋀_{j<i} ¬guard_j with every guard rebuilt
(Θ(n²) formula size) — only that one query, and only at small n, since it alone took a minute at
500 rules.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
import z3

from memsteward.policy.analysis import MAX_META_CONDITIONS, MAX_RULES, analyze
from memsteward.policy.encoding import Encoding, solve
from memsteward.policy.loader import load_policy_source

from .common import table, write_section


def policy_doc(n: int, seed: int = 0) -> dict[str, Any]:
    """A policy with n random mode rules and a final catch-all."""
    rng = random.Random(seed)
    kinds = {"record": {}, "cache": {"replayable": True, "meta": {"age_days": {"min": 0, "max": 10000, "default": 0},
                                                                   "calls": {"min": 0, "default": 1}}},
             "summary": {"meta": {"age_days": {"min": 0, "default": 0}}},
             "skill": {"architectures": ["neural", "prompt", "chain"]}}
    rules = []
    for i in range(n):
        kind = rng.choice(["cache", "summary", "skill", "record"])
        when: dict[str, Any] = {"kind": kind}
        if kind in ("cache", "summary") and sum("meta" in r["when"] for r in rules) < MAX_META_CONDITIONS:
            when["meta"] = {"age_days": {"gt": rng.randint(0, 5000), "le": rng.randint(5000, 10000)}}
        if kind == "skill":
            when["arch"] = rng.choice(["prompt", "chain"])
        if rng.random() < 0.5:
            when["event"] = rng.choice(["delete", "correct", "migrate"])
        if rng.random() < 0.3:
            when["support"] = rng.choice(["sufficient", "insufficient"])
        mode = {"cache": "recompute", "summary": "regen", "skill": "regen", "record": "remove"}[kind]
        rules.append({"name": f"r{i}", "when": when, "mode": "remove" if rng.random() < 0.3 else mode})
    rules.append({"name": "otherwise", "when": {}, "mode": "remove"})
    return {"version": 1, "name": f"generated-{n}", "kinds": kinds, "modes": rules,
            "validation": [{"mode": "recompute", "oracles": [{"oracle": "replay"}]},
                           {"mode": "regen", "oracles": [{"oracle": "schema", "schema": {"type": "string"}}]}]}


def direct_fires(src) -> int:
    """Reference: 'rule i fires' by the direct Θ(n²) encoding (fresh solver, rebuilt guards)."""
    p = src.policy
    enc = Encoding([p])
    dom = z3.And(enc.domain(), enc.declared(p))
    return sum(solve(dom, enc.guard(r.when, p), *[z3.Not(enc.guard(q.when, p)) for q in p.modes[:i]]) is not None
               for i, r in enumerate(p.modes))


def run(quick: bool = False) -> str:
    sizes = [100, 250, 500] if quick else [100, 250, 500, 1000, 2000]
    reference_sizes = {100} if quick else {100, 250}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"p{n}.yaml"
            path.write_text(yaml.safe_dump(policy_doc(n), sort_keys=False))
            start = time.perf_counter()
            src = load_policy_source(path)
            load_s = time.perf_counter() - start
            start, cpu = time.perf_counter(), time.process_time()
            findings = analyze(src)
            analyze_s, analyze_cpu = time.perf_counter() - start, time.process_time() - cpu
            shadowed = sum(f.code == "shadowed" for f in findings)
            ref = "–"
            if n in reference_sizes:
                start = time.perf_counter()
                direct_fires(src)
                ref = f"{time.perf_counter() - start:.2f} s (fires only)"
            rows.append([n + 1, f"{path.stat().st_size / 1024:.0f} KB", f"{load_s:.2f}", f"{analyze_s:.2f}", f"{analyze_cpu:.2f}",
                         f"{1000 * analyze_s / (n + 1):.2f}", shadowed, ref])
    md = ("## check: analysis time against the number of rules\n\n"
          "`python -m bench check_scaling` (module docstring: the generated policies and the reference). "
          f"Policies over {MAX_RULES} rules are refused by `check` (finding `limit`). Wall time on a shared "
          "2-core machine varies with load; the CPU column is this process's own time (Z3 runs in-process).\n\n"
          + table(["rules", "size", "load + schema s", "analyze s", "analyze CPU s", "ms / rule", "shadowed",
                   "reference: direct encoding"], rows) + "\n")
    write_section("check_scaling", md)
    return md


if __name__ == "__main__":
    print(run())
