"""Determinism: plans do not depend on PYTHONHASHSEED (set and dict iteration order).

String hashing is salted per process, so a key or an order taken from a set's iteration (e.g. a
coalition key that joins a frozenset's members unsorted, which seeds the synthetic evaluator's
trial noise) changes results from one process to the next. Each process below recomputes the
same clearance plans (all five methods, on a noisy synthetic game and on the bundled cases) and
the same repair plans (delete / correct / migrate on the demo store) and prints them; three
processes with three different seeds must print the same bytes. This is CI's non-default-seed
pass over the determinism-sensitive paths (no record of whole-suite runs under other seeds is kept).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys
from memsteward.clearance.case import case_game, load_case, parse_case
from memsteward.clearance.pipeline import METHODS, run_method
from memsteward.policy.loader import load_policy
from memsteward.repair.events import load_event
from memsteward.repair.execute import dry_run
from memsteward.store import Store

policy = load_policy("policies/default.yaml")
spec = policy.clearance.model_copy(update={"exact": "never", "permutations": 12})
noisy = parse_case({
    "name": "noisy", "query": "q", "reference": "a",
    "context": [{"id": i, "text": "memory " + i} for i in ("ka", "kb", "kc", "kd", "ke")],
    "game": {"type": "synthetic", "base": 0.25, "support": {"ka": 0.5, "kb": 0.25}, "noise": 0.25,
             "harms": [{"structure": "redundant", "members": ["kc", "kd"], "delta": 0.75},
                       {"structure": "direct", "members": ["ke"], "delta": 0.25}]}})
out = {}
cases = [noisy] + [load_case(f"engine/data/cases/{n}.json") for n in ("direct", "joint", "redundant")]
for case in cases:
    for method in METHODS:
        for s in (spec, policy.clearance):
            out[f"{case.name}/{method}/{s.exact}"] = run_method(method, case_game(case, s), s).to_json()
store = Store.open("engine/data/repair/store.json")
for event in ("delete", "correct", "migrate"):
    plan = dry_run(store, policy, load_event(f"engine/data/repair/event-{event}.json", store.snapshot()))
    out[f"repair/{event}"] = plan.to_json()
print(json.dumps(out, sort_keys=True))
"""

SEEDS = ("0", "1", "2718281")


def _run(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    r = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_plans_are_identical_under_three_hash_seeds():
    outputs = {seed: _run(seed) for seed in SEEDS}
    doc = json.loads(outputs[SEEDS[0]])
    assert len(doc) == 4 * 5 * 2 + 3 and all(doc.values())
    digests = {seed: hashlib.sha256(text.encode()).hexdigest()[:12] for seed, text in outputs.items()}
    if len(set(outputs.values())) != 1:
        first = json.loads(outputs[SEEDS[0]])
        for seed in SEEDS[1:]:
            other = json.loads(outputs[seed])
            differ = sorted(k for k in first if first[k] != other.get(k))
            assert not differ, f"PYTHONHASHSEED={seed} changes {differ[:5]} (digests {digests})"
    assert len(set(outputs.values())) == 1, digests
