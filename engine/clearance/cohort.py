"""Cohorts: a synthetic generator shaped like the paper's, the LoCoMo fault-injection builder,
and the runner that evaluates every method on every case with one shared cache per case.

Synthetic cohort (Appendix D, Table 3 shape): 375 direct : 285 redundant : 85 joint, K = 5,
two trials, trial noise. Each proposal is kept only after the paper's behavioural
verification (App. D.1): the clean context is correct in every trial; a direct fault makes the
context incorrect; each redundant fault alone sustains the failure; each joint fault alone is
harmless while together they make the context fail.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..policy.model import ClearanceSpec
from .case import Case, case_evaluator, case_game, parse_case
from .evaluators import Harm, SyntheticEvaluator, SyntheticGame, from_policy
from .game import Coalition, Evaluator, Game, OutcomeStore, Task
from .metrics import CaseOutcome, Summary, outcome, summary_table
from .pipeline import METHODS, run_method

PAPER_SHAPE = {"direct": 375, "redundant": 285, "joint": 85}


def shape_counts(n: int, shape: dict[str, int] = PAPER_SHAPE) -> dict[str, int]:
    """Split n cases in the paper's proportions (largest remainder)."""
    total = sum(shape.values())
    raw = {k: n * v / total for k, v in shape.items()}
    counts = {k: int(v) for k, v in raw.items()}
    for k in sorted(raw, key=lambda k: raw[k] - counts[k], reverse=True)[: n - sum(counts.values())]:
        counts[k] += 1
    return counts


# --------------------------------------------------------------------------- verification (App. D.1)


def all_correct(evaluator: Evaluator, task: Task, coalition: Coalition, trials: int, seed: int) -> bool:
    return all(s >= 1.0 for s in evaluator.evaluate(task, [coalition], trials, seed)[0].scores)


def all_wrong(evaluator: Evaluator, task: Task, coalition: Coalition, trials: int, seed: int) -> bool:
    return all(s <= 0.0 for s in evaluator.evaluate(task, [coalition], trials, seed)[0].scores)


def verified(structure: str, evaluator: Evaluator, task: Task, faults: Sequence[str],
             trials: int, seed: int) -> bool:
    """The paper's behavioural verification of an injected fault set (App. D.1)."""
    full = frozenset(task.ids)
    clean = full - set(faults)
    if not all_correct(evaluator, task, clean, trials, seed):
        return False
    if not all_wrong(evaluator, task, full, trials, seed):
        return False
    if structure == "redundant":
        return all(all_wrong(evaluator, task, clean | {f}, trials, seed) for f in faults)
    if structure == "joint":
        return all(all_correct(evaluator, task, clean | {f}, trials, seed) for f in faults)
    return True


# --------------------------------------------------------------------------- synthetic cohort


def _synthetic_proposal(structure: str, rng: random.Random, k: int, noise: float,
                        name: str) -> dict[str, Any]:
    n_faults = 1 if structure == "direct" else 2
    ids = [f"m{i + 1}" for i in range(k)]
    rng.shuffle(ids)
    faults, background = ids[:n_faults], ids[n_faults:]
    support: dict[str, float] = {}
    roles: dict[str, str] = {f: "fault" for f in faults}
    gold = background[0]
    support[gold], roles[gold] = 1.0, "gold"
    harms: list[Harm] = []
    for m in background[1:]:
        u = rng.random()
        if u < 0.25:
            support[m], roles[m] = 1.0, "gold"  # a second supporting memory
        elif u < 0.5:
            support[m], roles[m] = round(rng.uniform(0.3, 0.6), 2), "beneficial"
        elif u < 0.6:
            harms.append(Harm("direct", (m,), round(rng.uniform(0.1, 0.3), 2)))
            roles[m] = "weak-harm"
        else:
            roles[m] = "neutral"
    delta = rng.choice([1.0, 1.0, 0.8, 0.6])
    harms.append(Harm(structure, tuple(faults), delta))  # type: ignore[arg-type]
    order = sorted(ids, key=lambda m: int(m[1:]))
    context = []
    for m in order:
        lo, hi = (0.4, 0.95) if roles[m] == "fault" else (0.05, 0.75)
        context.append({"id": m, "text": f"{roles[m]} memory {m}",
                        "meta": {"relevance": round(rng.uniform(lo, hi), 3), "role": roles[m]}})
    game = {"type": "synthetic", "base": 0.0, "support": support,
            "harms": [{"structure": h.structure, "members": list(h.members), "delta": h.delta} for h in harms],
            "noise": noise, "salt": name}
    return {"name": name, "query": f"synthetic query {name}", "reference": "gold answer",
            "context": context, "game": game, "faults": sorted(faults, key=lambda m: int(m[1:])),
            "structure": structure}


def synthetic_case(structure: str, rng: random.Random, *, k: int = 5, noise: float = 0.02,
                   trials: int = 2, seed: int = 0, name: str = "syn",
                   max_tries: int = 200) -> dict[str, Any]:
    """One behaviourally verified synthetic case of the given structure."""
    for attempt in range(max_tries):
        raw = _synthetic_proposal(structure, rng, k, noise, f"{name}" if attempt == 0 else f"{name}.{attempt}")
        case = parse_case(raw, name)
        game = raw["game"]
        evaluator = SyntheticEvaluator(SyntheticGame(
            0.0, game["support"], tuple(Harm(h["structure"], tuple(h["members"]), h["delta"]) for h in game["harms"]),
            noise, game["salt"]))
        if verified(structure, evaluator, case.task, case.faults, trials, seed):
            return raw
    raise RuntimeError(f"could not verify a {structure} case in {max_tries} tries")


def synthetic_cohort(n: int, seed: int = 0, *, k: int = 5, noise: float = 0.02, trials: int = 2,
                     shape: dict[str, int] = PAPER_SHAPE, eval_seed: int = 0) -> list[dict[str, Any]]:
    """n verified cases in the paper's proportions of direct / redundant / joint faults."""
    rng = random.Random(seed)
    out = []
    for structure, count in shape_counts(n, shape).items():
        for i in range(count):
            out.append(synthetic_case(structure, rng, k=k, noise=noise, trials=trials,
                                      seed=eval_seed, name=f"syn-{seed}-{structure}-{i:04d}"))
    rng.shuffle(out)
    return out


def write_jsonl(cases: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write cases as JSONL (beside ``path``, then renamed over it); returns how many."""
    from ..safewrite import replace_file

    n = 0
    with replace_file(str(path)) as fh:
        for c in cases:
            fh.write(json.dumps(c, ensure_ascii=False) + "\n")
            n += 1
    return n


# --------------------------------------------------------------------------- running a cohort


def run_case(case: Case, spec: ClearanceSpec, methods: Sequence[str] = METHODS,
             evaluator: Evaluator | None = None) -> list[CaseOutcome]:
    """Every method on one case; one evaluator and one cache, separate call accounting."""
    ev = evaluator or case_evaluator(case, spec)
    store = OutcomeStore()
    plans = [run_method(method, case_game(case, spec, ev, store), spec) for method in methods]
    probe: Game = case_game(case, spec, ev, store)  # its own accounting: no method pays for it
    full = probe.recovered(probe.grand)
    clean = probe.recovered(probe.grand - set(case.faults)) if case.faults else None
    return [outcome(plan, case.faults, case.structure, full, clean) for plan in plans]


_WORKER_EVALUATOR: dict[str, Evaluator] = {}  # per worker process: one client for all its cases


def _case_task(job: tuple[Case, ClearanceSpec, tuple[str, ...]]) -> list[CaseOutcome]:
    """One case as an executor task (module-level: shipped by reference). Its own coalition
    cache (:func:`run_case`); a case without its own game uses the policy's evaluator, made once
    per worker process."""
    case, spec, methods = job
    evaluator = None
    if case.game is None:
        key = spec.evaluator.model_dump_json()
        if key not in _WORKER_EVALUATOR:
            _WORKER_EVALUATOR[key] = from_policy(spec.evaluator)
        evaluator = _WORKER_EVALUATOR[key]
    return run_case(case, spec, methods, evaluator)


def run_cohort(cases: Iterable[Case], spec: ClearanceSpec, methods: Sequence[str] = METHODS,
               progress: Callable[[Iterable[Case]], Iterator[Case]] | None = None,
               evaluator: Evaluator | None = None, executor: Any = None) -> list[CaseOutcome]:
    """Every method on every case (``progress`` wraps the iteration, e.g. tqdm). With an
    ``executor`` (:mod:`memsteward.repair.executors`, e.g. Ray) each case is one task with its own
    shared coalition cache, results in case order — the same outcomes as the local run."""
    if executor is not None and getattr(executor, "name", "sequential") != "sequential":
        jobs = [(case, spec, tuple(methods)) for case in cases]
        return [o for outcomes in executor.map(_case_task, jobs) for o in outcomes]
    out: list[CaseOutcome] = []
    shared = evaluator  # the policy's evaluator (one client for the whole cohort), made lazily
    for case in (progress(cases) if progress else cases):
        if case.game is None and shared is None:
            shared = from_policy(spec.evaluator)
        out.extend(run_case(case, spec, methods, shared if case.game is None else None))
    return out


def synthetic_benchmark(n: int = 745, seed: int = 0, spec: ClearanceSpec | None = None,
                        methods: Sequence[str] = METHODS, k: int = 5,
                        noise: float = 0.02) -> list[Summary]:
    """Generate a paper-shaped synthetic cohort and summarise every method (for bench/)."""
    spec = spec or ClearanceSpec(retrieval_budget=k)
    cases = [parse_case(c) for c in synthetic_cohort(n, seed, k=k, noise=noise, trials=spec.trials,
                                                     eval_seed=spec.seed)]
    return summary_table(run_cohort(cases, spec, methods))
