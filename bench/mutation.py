"""`make mutate`: mutation testing of the engine's core with cosmic-ray (optional extra ``mutate``).

Plausible one-line bugs (cosmic-ray's operators: comparison, arithmetic, boolean, constant,
break/continue, exception replacements, …) are planted one at a time into the core modules —
repair (graph, candidates, closure, execute, store), the audit chain, clearance (game,
attribution, selection) and policy (encoding, analysis, compare) — and each mutant runs the
test files that cover its module. A mutant whose tests still pass *survives*; every survivor
goes to bench/MUTATION.md, to be killed by a new test or explained (an equivalent mutant).

The full mutant set is thousands of runs; on this shared machine a stratified, seeded sample
per module within a wall-clock budget is what fits (``--per-module``, ``--budget-minutes``;
both are reported). Mutation happens in a private copy of the repository whose ``memsteward``
package is put first on ``PYTHONPATH``, so the working tree is never modified.

    python -m bench.mutation --per-module 6 --budget-minutes 30 [--seed 0] [--only store.py]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_REPAIR = ["test_repair_pipeline.py", "test_repair_cli.py"]
# the G5 machine itself (its own mutation-catching tests run it 3 × 1000 times: too slow per mutant)
_MACHINE = "test_specs_stateful.py::test_barrier_isolation_state_machine"
_CLEAR = ["test_meclear_properties.py", "test_meclear_paper.py", "test_meclear_screen.py", "test_meclear_trials.py",
          "test_meclear_stratified.py", "test_specs_certificates.py", "test_clear_cli.py", "test_mutation_survivors.py"]
_POLICY = ["test_policy_analysis.py", "test_policy_compare.py", "test_policy_bad_input.py", "test_mutation_survivors.py"]
# module → the test files that cover it (what a reviewer would run after touching the module)
CORE: dict[str, list[str]] = {
    "engine/repair/graph.py": ["test_repair_graph.py", *_REPAIR],
    "engine/repair/candidates.py": [*_REPAIR, "test_repair_closure.py"],
    "engine/repair/closure.py": ["test_repair_closure.py", *_REPAIR],
    "engine/repair/execute.py": [*_REPAIR, "test_repair_erasure_versions.py", "test_repair_erasure.py",
                                 "test_repair_scope.py", "test_mutation_survivors.py", _MACHINE],
    "engine/store/writepath.py": ["test_store_sqlite.py", "test_store_write_path.py", "test_repair_erasure_versions.py",
                               "test_repair_erasure.py", "test_specs_audit.py", "test_specs_audit_chain.py", *_REPAIR,
                               _MACHINE],
    "engine/repair/auditchain.py": ["test_specs_audit.py", "test_specs_audit_chain.py"],
    "engine/clearance/game.py": [*_CLEAR, "test_determinism.py"],
    "engine/clearance/attribution.py": _CLEAR,
    "engine/clearance/selection.py": _CLEAR,
    "engine/policy/encoding.py": _POLICY,
    "engine/policy/analysis.py": _POLICY,
    "engine/policy/compare.py": _POLICY,
}


def _copy_tree(dest: Path) -> None:
    """The tracked files (plus uncommitted edits) of the repository, and an import layout in which
    ``memsteward`` is the copy's engine/ and ``memsteward.specs`` its specs/."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    for f in files:
        src = ROOT / f
        if src.is_symlink():  # e.g. engine/data/policies -> ../../policies: keep it a link
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            (dest / f).symlink_to(os.readlink(src))
        elif src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    pkg = dest / "_import"
    pkg.mkdir()
    (pkg / "memsteward").symlink_to(dest / "engine", target_is_directory=True)
    (dest / "engine" / "specs").symlink_to(dest / "specs", target_is_directory=True)


def _command(tests: list[str]) -> str:
    paths = " ".join(f"proofs_tests/{t}" for t in dict.fromkeys(tests))
    return f"{sys.executable} -m pytest -x -q -p no:cacheprovider {paths}"


def _mutants(copy: Path, module: str) -> list:
    """Every single-mutation work item cosmic-ray's operators produce for one module."""
    from cosmic_ray.commands import init
    from cosmic_ray.work_db import WorkDB, use_db

    with use_db(str(copy / f".cr-{Path(module).stem}.sqlite"), WorkDB.Mode.create) as db:
        init([copy / module], db, {})
        return list(db.work_items)


def _where(item, copy: Path) -> dict:
    m = item.mutations[0]
    return {"module": str(Path(m.module_path).relative_to(copy)), "line": m.start_pos[0],
            "operator": m.operator_name.split("/")[-1], "occurrence": m.occurrence,
            "function": m.definition_name}


def run(per_module: int, budget_s: float, seed: int, only: list[str], timeout: float) -> dict:
    from cosmic_ray.mutating import mutate_and_test
    from cosmic_ray.work_item import TestOutcome

    copy = Path(tempfile.mkdtemp(prefix="memsteward-mutate-"))
    here = os.getcwd()
    start = time.monotonic()
    out: dict = {"seed": seed, "per_module": per_module, "budget_s": budget_s, "modules": {}, "mutants": []}
    try:
        _copy_tree(copy)
        os.environ["PYTHONPATH"] = str(copy / "_import")
        os.environ["HYPOTHESIS_PROFILE"] = "ci"
        os.chdir(copy)
        rng = random.Random(seed)
        modules = [m for m in CORE if not only or any(o in m for o in only)]
        plan = []
        for module in modules:
            items = _mutants(copy, module)
            pick = rng.sample(items, min(per_module, len(items)))
            out["modules"][module] = {"mutants": len(items), "sampled": len(pick)}
            plan += [(module, it) for it in pick]
        for command in dict.fromkeys(_command(CORE[m]) for m in modules):  # unmutated tests must pass
            r = subprocess.run(command.split(), capture_output=True, text=True, timeout=timeout)
            if r.returncode != 0:
                raise SystemExit(f"tests fail without a mutation ({command}):\n{r.stdout[-2000:]}")
        out["baseline_s"] = round(time.monotonic() - start, 1)
        mutating = time.monotonic()  # the budget is for mutants; the baseline is reported apart
        rng.shuffle(plan)  # a budget cut leaves a uniform sample, not the first modules only
        for n, (module, item) in enumerate(plan):
            if time.monotonic() - mutating > budget_s:
                out["stopped"] = f"budget reached after {n} of {len(plan)} mutants"
                break
            t0 = time.monotonic()
            res = mutate_and_test(item.mutations, _command(CORE[module]), timeout)
            row = {**_where(item, copy), "seconds": round(time.monotonic() - t0, 1),
                   "outcome": (res.test_outcome.value if res.test_outcome else res.worker_outcome.value),
                   "diff": _diff_lines(res.diff or "")}
            if res.test_outcome == TestOutcome.KILLED:
                row["killed_by"] = _first_failure(res.output or "")
            out["mutants"].append(row)
            print(f"[{n + 1}/{len(plan)}] {row['module']}:{row['line']} {row['operator']}: {row['outcome']}"
                  f" ({row['seconds']}s)", flush=True)
    finally:
        os.chdir(here)
        shutil.rmtree(copy, ignore_errors=True)
    out["seconds"] = round(time.monotonic() - start, 1)
    return out


def _diff_lines(diff: str) -> list[str]:
    return [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def _first_failure(output: str) -> str:
    for ln in output.splitlines():
        if ln.startswith(("FAILED ", "ERROR ")):
            return ln.split(" - ")[0][:160]
    return "timeout" if output == "timeout" else "test run failed"


def score(result: dict) -> dict:
    c = Counter(m["outcome"] for m in result["mutants"])
    tested = c["killed"] + c["survived"]
    return {"tested": tested, "killed": c["killed"], "survived": c["survived"],
            "incompetent": c["incompetent"], "no_test": c["no-test"],
            "score": round(100 * c["killed"] / tested, 1) if tested else None}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.mutation", description=__doc__.splitlines()[0])
    ap.add_argument("--per-module", type=int, default=6, help="mutants sampled per core module")
    ap.add_argument("--budget-minutes", type=float, default=30.0, help="wall-clock budget of the run")
    ap.add_argument("--seed", type=int, default=0, help="sampling seed")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant's test run")
    ap.add_argument("--only", action="append", default=[], help="substring of the modules to mutate")
    ap.add_argument("--out", default=str(ROOT / "bench" / "mutation.json"), help="raw results (JSON)")
    a = ap.parse_args(argv)
    if not 1 <= a.per_module <= 1000 or not 0 < a.budget_minutes <= 24 * 60:
        ap.error("--per-module must be 1..1000 and --budget-minutes 0..1440")
    result = run(a.per_module, a.budget_minutes * 60, a.seed, a.only, a.timeout)
    result["score"] = score(result)
    Path(a.out).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    s = result["score"]
    print(f"{s['killed']}/{s['tested']} killed ({s['score']} %), {s['survived']} survived; "
          f"{result['seconds']} s; raw results in {a.out}")


if __name__ == "__main__":
    main()
