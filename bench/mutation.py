"""`make mutate`: mutation testing of the engine's core with cosmic-ray (optional extra ``mutate``).

Plausible one-line bugs (cosmic-ray's operators: comparison, arithmetic, boolean, constant,
break/continue, exception replacements, …) are planted one at a time into the core modules named by
issue 33 (``CORE``), and each mutant runs every test that executes its line (coverage-based
selection, bench/mutation_select.py; a line run at import is mapped by what it reaches), fastest
first, stopping at the first failure, on ``--workers`` private copies of the tree at once. The map
is one coverage run of the suite, split into one shard per copy, with ``MEMSTEWARD_PG_DSN`` set so
the PostgreSQL tests are mapped and run too. A mutant whose tests still pass *survives*; one whose
line no in-process test executes is *not covered* and counts as a survivor. Every survivor goes to
bench/MUTATION.md, to be killed by a new test or argued equivalent.

Positions that cannot change behaviour (annotations, docstrings, logging calls, ``__all__``) are
filtered before a seeded sample is drawn, in proportion to each module's mutant count. The score is
reported with its 95 % Wilson lower bound. Mutation happens in private copies whose ``memsteward``
package is first on ``PYTHONPATH``, so the working tree is never modified.

    MEMSTEWARD_PG_DSN=postgresql://… python -m bench.mutation --sample 560 --budget-minutes 80 [--seed 0]
        [--workers 2] [--only store/]
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import queue
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench import mutation_select as sel

ROOT = Path(__file__).resolve().parent.parent

# The core (issue 33): planning, closure, execute, the store's write path, erasure and leases, the
# audit chain, lineage, oracles, endpoints, attribution, selection, stratified, compare, encoding.
CORE: list[str] = [
    "engine/repair/plan.py", "engine/repair/candidates.py", "engine/repair/scope.py", "engine/store/planning.py",
    "engine/repair/closure.py", "engine/repair/execute.py",
    "engine/store/writepath.py", "engine/store/erasure.py", "engine/repair/erasure.py", "engine/store/leases.py",
    "engine/repair/auditchain.py", "engine/repair/lineage.py", "engine/repair/oracles.py",
    "engine/policy/endpoints.py", "engine/clearance/attribution.py", "engine/clearance/selection.py",
    "engine/clearance/stratified.py", "engine/policy/compare.py", "engine/policy/encoding.py",
]
# Test files left out of the coverage run: they test packaging, docs, benches, startup time or
# external runtimes (Ray, MCP transport, the wheel), not the core's behaviour in-process.
NOT_MAPPED = frozenset({
    "test_wheel_examples.py", "test_typed_examples.py", "test_docs_site.py", "test_packaging.py",
    "test_cli_startup.py", "test_bench_data.py", "test_bench_meclear_llm.py", "test_bench_repair_traces.py",
    "test_bench_stats.py", "test_llm_demo.py", "test_clear_cohort_ray.py", "test_repair_executors.py",
    "test_mcp_http.py", "test_mcp_server.py", "test_store_boundary.py", "test_fuzz.py", "test_mutation_select.py",
})


PG_ENV = "MEMSTEWARD_PG_DSN"
# Bumped when the way lines are mapped to tests changes, so an older map file is not reused.
MAP_RULES = 3


def postgresql_problem(environ: Mapping[str, str], without: bool) -> str | None:
    """Why the run cannot start as asked: the map and the mutants need ``MEMSTEWARD_PG_DSN`` (the
    suite's PostgreSQL tests kill mutants no SQLite test sees), unless ``--no-postgresql`` says so."""
    if without or environ.get(PG_ENV):
        return None
    return (f"{PG_ENV} is not set: the PostgreSQL tests would be skipped and their kills lost; set it "
            f"(e.g. {PG_ENV}=postgresql://postgres@127.0.0.1:5432/test) or pass --no-postgresql")


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
    dest.chmod(0o755)  # mkdtemp's 0700 would stop the tests that run a child as another user (read-only store)
    pkg = dest / "_import"
    pkg.mkdir()
    (pkg / "memsteward").symlink_to(dest / "engine", target_is_directory=True)
    (dest / "engine" / "specs").symlink_to(dest / "specs", target_is_directory=True)


# The pytest plugins the mapped tests use, loaded by name with autoloading off: other installed
# plugins (langsmith's, platformdirs') cost about a third of a small test run's start-up.
PLUGINS = ("pytest_asyncio.plugin", "pytest_mock", "_hypothesis_pytestplugin", "anyio.pytest_plugin")


def _env(copy: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{copy / '_import'}{os.pathsep}{copy}", "HYPOTHESIS_PROFILE": "ci",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def _pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *(a for p in PLUGINS for a in ("-p", p)), *args]


_CHILD_ENV = "MEMSTEWARD_MUTATE_COVERAGE"
# Written into the copy's import path for the coverage run only: a child Python process started by a
# test (the CLI, a racing writer) measures itself under that test's node id, so code reached only
# through a child process still selects the test that reached it.
_CHILD_COVERAGE = """import atexit, os
if os.environ.get("MEMSTEWARD_MUTATE_COVERAGE") and os.environ.get("PYTEST_CURRENT_TEST"):
    import coverage
    _node = os.environ["PYTEST_CURRENT_TEST"].rsplit(" (", 1)[0]
    _cov = coverage.Coverage(config_file=os.environ["MEMSTEWARD_MUTATE_COVERAGE"], data_suffix=True,
                             context=_node + "|child")
    _cov.start()
    def _save():
        _cov.stop()
        _cov.save()
    atexit.register(_save)
"""


def _shards(files: list[str], weights: dict[str, float], n: int) -> list[list[str]]:
    """The test files split into ``n`` groups of about equal cost (heaviest first onto the lightest)."""
    groups: list[list[str]] = [[] for _ in range(n)]
    load = [0.0] * n
    for f in sorted(files, key=lambda f: (-weights.get(f, 1.0), f)):
        k = load.index(min(load))
        groups[k].append(f)
        load[k] += weights.get(f, 1.0)
    return [g for g in groups if g]


def _elsewhere(copy: Path) -> dict[str, str]:
    """For each core module, the text of every other module of the package and of the tests: a
    module-level name read there makes its line reach the whole module (mutation_select)."""
    texts = {str(p.relative_to(copy)): p.read_text() for d in ("engine", "specs", "proofs_tests")
             for p in sorted((copy / d).rglob("*.py"))}
    return {m: "\n".join(t for f, t in texts.items() if f != m) for m in CORE}


def map_coverage(copies: list[Path], timeout: float, only_tests: list[str],
                 weights: dict[str, float] | None = None) -> tuple[dict, dict[str, float], set[str]]:
    """The mapped test files under coverage with per-test contexts (the selection map), split into one
    shard per copy, the shards run at once."""
    files = sorted(p.name for p in (copies[0] / "proofs_tests").glob("test_*.py")
                   if p.name not in NOT_MAPPED and (not only_tests or any(o in p.name for o in only_tests)))
    if weights is None:  # no earlier durations: a file's size stands for its cost
        weights = {f: float(len((copies[0] / "proofs_tests" / f).read_text())) for f in files}
    shards = _shards(files, weights, len(copies))
    procs = []
    for copy, shard in zip(copies, shards):
        rc = copy / ".mutate-coveragerc"
        rc.write_text(f"[run]\nparallel = true\ndata_file = {copy / '.coverage'}\nsource = memsteward\n")
        (copy / "_import" / "sitecustomize.py").write_text(_CHILD_COVERAGE)
        cmd = _pytest("-q", "-p", "pytest_cov.plugin", "-p", "bench.mutation_plugin", "--cov=memsteward",
                      "--cov-context=test", f"--cov-config={rc}", "--cov-report=",
                      *(f"proofs_tests/{f}" for f in shard))
        env = {**_env(copy), "MEMSTEWARD_MUTATE_OUTCOMES": str(copy / ".mutate-outcomes.json"), _CHILD_ENV: str(rc)}
        log = (copy / ".mutate-map.log").open("w")
        procs.append((copy, subprocess.Popen(cmd, cwd=copy, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    durations: dict[str, float] = {}
    passed: set[str] = set()
    deadline = time.monotonic() + timeout
    for copy, proc, log in procs:
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        outcomes = copy / ".mutate-outcomes.json"
        if not outcomes.exists():
            raise SystemExit(f"the coverage run wrote no outcomes (exit {proc.returncode}):\n"
                             f"{(copy / '.mutate-map.log').read_text()[-4000:]}")
        d, ok = sel.read_outcomes(outcomes)
        durations.update(d)
        passed |= ok
    tests = {str(p.relative_to(copies[0])): p.read_text() for p in sorted((copies[0] / "proofs_tests").glob("test_*.py"))
             if p.name in files}
    cov = sel.coverage_map([(c / ".coverage", c) for c, _, _ in procs], CORE, _elsewhere(copies[0]), tests, durations)
    return cov, durations, passed


def _mutants(copy: Path, module: str) -> list:
    """Every single-mutation work item cosmic-ray's operators produce for one module."""
    from cosmic_ray.commands import init
    from cosmic_ray.work_db import WorkDB, use_db

    with use_db(str(copy / f".cr-{Path(module).stem}-{len(module)}.sqlite"), WorkDB.Mode.create) as db:
        init([copy / module], db, {})
        return [it.mutations[0] for it in db.work_items]


def _where(m, copy: Path) -> dict:
    return {"module": str(Path(m.module_path).relative_to(copy)), "line": m.start_pos[0],
            "operator": m.operator_name.split("/")[-1], "occurrence": m.occurrence,
            "function": m.definition_name}


def draw_sample(copy: Path, size: int, seed: int, only: list[str]) -> tuple[list, dict]:
    """A seeded sample of the observable mutants, allocated to modules in proportion to their count."""
    rng = random.Random(seed)
    modules = [m for m in CORE if not only or any(o in m for o in only)]
    pools, report = {}, {}
    for module in modules:
        spans = sel.unobservable_spans((copy / module).read_text())
        every = _mutants(copy, module)
        pools[module] = [m for m in every if not sel.inside(tuple(m.start_pos), tuple(m.end_pos), spans)]
        report[module] = {"mutants": len(every), "unobservable": len(every) - len(pools[module])}
    total = sum(len(p) for p in pools.values())
    plan = []
    for module, pool in pools.items():
        k = min(len(pool), max(1, round(size * len(pool) / total))) if pool else 0
        pick = rng.sample(pool, k)
        report[module]["sampled"] = k
        plan += pick
    rng.shuffle(plan)
    return plan, report


def place(module: str, line: int, operator: str, occurrence: int) -> tuple[str, int, str, int]:
    """A mutant's identity within one commit's sample: module, line, operator (last part), occurrence."""
    return (module, line, operator.split("/")[-1], occurrence)


def resumable(earlier: Mapping, seed: int, size: int, commit: str) -> list[dict]:
    """The rows of an earlier run (its ``.partial`` or final file) that a resumed run keeps: every
    row, when it drew the same sample (seed and size) from the same commit, else ``SystemExit``
    naming what differs. A run that recorded no commit (made before runs recorded one) is taken on
    the caller's word that it is this commit."""
    why = [f"{k} {earlier.get(k)!r} != {v!r}" for k, v in (("seed", seed), ("size", size))
           if earlier.get(k) != v]
    if earlier.get("commit") not in (None, commit):
        why.append(f"commit {earlier['commit']!r} != {commit!r}")
    if why:
        raise SystemExit("--resume: the earlier run drew another sample: " + "; ".join(why))
    return [dict(r) for r in earlier.get("mutants", [])]


def _by_place(plan: list, root: Path) -> dict[tuple[str, int, str, int], object]:
    """The sampled mutants (cosmic-ray's, with paths under the copy ``root``) by ``place``, in the sample's order."""
    return {place(str(Path(m.module_path).relative_to(root)), m.start_pos[0], m.operator_name, m.occurrence): m
            for m in plan}


def still_to_run(plan: list, done: list[dict], root: Path) -> list:
    """The sampled mutants (in the sample's order) that no row of ``done`` already ran."""
    ran = {place(r["module"], r["line"], r["operator"], r["occurrence"]) for r in done}
    return [m for k, m in _by_place(plan, root).items() if k not in ran]


def _run_one(m, copy: Path, rel: str, tests: list[str], timeout: float) -> dict:
    """Plant one mutation in ``copy`` (restored on exit) and run the selected tests against it."""
    from cosmic_ray.mutating import use_mutation
    from cosmic_ray.plugins import get_operator

    spec = type(m)(module_path=copy / rel, operator_name=m.operator_name, occurrence=m.occurrence,
                   start_pos=m.start_pos, end_pos=m.end_pos, operator_args=m.operator_args,
                   definition_name=m.definition_name)
    row = _where(spec, copy)
    t0 = time.monotonic()
    with use_mutation(spec.module_path, get_operator(spec.operator_name)(**spec.operator_args),
                      spec.occurrence) as (before, after):
        if after is None:
            return {**row, "outcome": "no-mutation", "seconds": 0.0}
        row["diff"] = [ln for ln in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
                       if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
        if not tests:
            return {**row, "outcome": "not-covered", "seconds": 0.0}
        cmd = _pytest("-x", "-q", *tests)
        try:
            r = subprocess.run(cmd, cwd=copy, env=_env(copy), capture_output=True, text=True, timeout=timeout)
            outcome = "survived" if r.returncode == 0 else "killed"
            killer = _first_failure(r.stdout) if r.returncode else None
        except subprocess.TimeoutExpired:
            outcome, killer = "killed", "timeout"
    row.update(outcome=outcome, seconds=round(time.monotonic() - t0, 1), tests=len(tests))
    if killer:
        row["killed_by"] = killer
    return row


def _head() -> str:
    return subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip()


def _cached_map(map_file: Path | None, copies: list[Path], only_tests: list[str]) -> tuple[dict, dict[str, float], set[str]]:
    """The coverage map of this tree: read from ``map_file`` when it was made from the same commit,
    test selection, selection rules and database (``git describe --always --dirty``), else computed
    (its shards balanced by the per-file durations of any earlier map there) and written there."""
    head = _head()
    key = {"commit": head, "tests": sorted(only_tests), "rules": MAP_RULES,
           "postgresql": bool(os.environ.get(PG_ENV))}
    weights: Counter[str] | None = None
    if map_file is not None and map_file.exists():
        doc = json.loads(map_file.read_text())
        if doc.get("key") == key and not head.endswith("-dirty"):
            print(f"coverage map read from {map_file} ({head})", flush=True)
            cov = {m: {int(k): v for k, v in lines.items()} for m, lines in doc["map"].items()}
            return cov, doc["durations"], set(doc["passed"])
        weights = Counter()
        for node, seconds in doc.get("durations", {}).items():
            weights[node.split("::")[0].rsplit("/", 1)[-1]] += seconds + 0.05
    print(f"mapping coverage (the mapped test files in {len(copies)} shards) …", flush=True)
    cov, durations, passed = map_coverage(copies, 3 * 3600, only_tests, dict(weights) if weights else None)
    if map_file is not None:
        map_file.write_text(json.dumps({"key": key, "map": cov, "durations": durations, "passed": sorted(passed)}))
    return cov, durations, passed


def run(size: int, budget_s: float, seed: int, only: list[str], workers: int, limit: int | None,
        only_tests: list[str], map_file: Path | None = None, partial: Path | None = None,
        share: float | None = None, earlier: Mapping | None = None) -> dict:
    """Copy the tree once per worker, map coverage once, draw the sample, run it on ``workers`` copies.
    With ``partial``, the results so far are rewritten there after every mutant (a long run can be
    read, and its survivors classified, while it runs). With ``earlier`` (a stopped run's results on
    this commit, same seed and size), its rows are kept and only the rest of the sample runs."""
    copies = [Path(tempfile.mkdtemp(prefix=f"memsteward-mutate-{w}-")) for w in range(workers)]
    start = time.monotonic()
    commit = _head()
    out: dict = {"seed": seed, "size": size, "budget_s": budget_s, "workers": workers, "commit": commit,
                 "modules": {}, "mutants": []}
    if earlier is not None:
        out["mutants"] = resumable(earlier, seed, size, commit)
        out["resumed"] = [*earlier.get("resumed", []),
                          {"mutants": len(out["mutants"]), "seconds": earlier.get("seconds"),
                           "coverage_s": earlier.get("coverage_s"), "stopped": earlier.get("stopped")}]
    try:
        for c in copies:
            _copy_tree(c)
        cov, durations, passed = _cached_map(map_file, copies, only_tests)
        out["coverage_s"] = round(time.monotonic() - start, 1)
        out["tests_mapped"], out["tests_passing"] = len(durations), len(passed)
        out["test_seconds_mapped"] = round(sum(durations.values()), 1)
        per_mutant = None if share is None else share * out["test_seconds_mapped"]
        out["per_mutant_budget_s"] = per_mutant
        plan, out["modules"] = draw_sample(copies[0], size, seed, only)
        todo = still_to_run(plan, out["mutants"], copies[0])
        print(f"coverage mapped in {out['coverage_s']} s; {len(plan)} mutants sampled"
              + (f", {len(plan) - len(todo)} already run (--resume)" if len(todo) < len(plan) else ""), flush=True)
        mutating = time.monotonic()
        free: queue.Queue[Path] = queue.Queue()
        for c in copies:
            free.put(c)

        def work(m) -> dict | None:
            if time.monotonic() - mutating > budget_s:
                return None
            rel = str(Path(m.module_path).relative_to(copies[0]))
            covering = cov.get(rel, {}).get(m.start_pos[0], [])
            tests = sel.select_tests(covering, durations, passed, limit, per_mutant)
            timeout = run_timeout(tests, durations)
            c = free.get()
            try:
                row = _run_one(m, c, rel, tests, timeout)
                row["tests_beyond_budget"] = len(sel.select_tests(covering, durations, passed, limit)) - len(tests)
                return row
            finally:
                free.put(c)

        with ThreadPoolExecutor(workers) as pool:
            first = len(plan) - len(todo)
            for n, row in enumerate(pool.map(work, todo), start=first):
                if row is None:
                    out.setdefault("stopped", f"budget reached after {n} of {len(plan)} mutants")
                    continue
                out["mutants"].append(row)
                diff = " / ".join(d.strip() for d in row.get("diff", [])) if row["outcome"] != "killed" else ""
                if row["outcome"] == "survived" and row.get("tests_beyond_budget"):
                    diff = f"[{row['tests_beyond_budget']} slower covering tests beyond the budget] " + diff
                print(f"[{n + 1}/{len(plan)}] {row['module']}:{row['line']} {row['operator']}: {row['outcome']}"
                      f" ({row['seconds']}s){'  ' + diff[:200] if diff else ''}", flush=True)
                if partial is not None:
                    partial.write_text(json.dumps({**out, "seconds": round(time.monotonic() - start, 1)},
                                                  indent=1, ensure_ascii=False) + "\n")
            _timeout_pass(pool, out, plan, copies, free, cov, durations, passed, limit, per_mutant,
                          mutating + budget_s)
            _second_pass(pool, out, plan, copies, free, cov, durations, passed, limit, per_mutant,
                         mutating + budget_s, partial, start)
    finally:
        for c in copies:
            shutil.rmtree(c, ignore_errors=True)
    out["seconds"] = round(time.monotonic() - start, 1)
    return out


# A timeout counts as a kill (a mutant that hangs the program is caught), but on a loaded machine a
# test can pass its 3x allowance without any hang: each timed-out mutant runs its tests again with
# this many times their mapped durations before the survivors' second pass.
RECHECK_FACTOR = 10


def after_recheck(row: dict, again: dict) -> dict:
    """A timed-out mutant's row after its tests ran again with a longer allowance: a pass makes it a
    survivor (the first timeout was the machine), a failure a kill by that failure, a second timeout
    a confirmed hang."""
    out = {**row, "timeout_recheck": {"outcome": again["outcome"], "seconds": again.get("seconds", 0.0),
                                      "killed_by": again.get("killed_by")}}
    if again["outcome"] == "survived":
        out["outcome"] = "survived"
        out.pop("killed_by", None)
    elif again.get("killed_by") == "timeout":
        out["killed_by"] = "timeout (confirmed)"
    else:
        out["killed_by"] = again.get("killed_by", "test run failed")
    return out


def run_timeout(tests: list[str], durations: Mapping[str, float], factor: float = 3.0) -> float:
    """How long a mutant's run of ``tests`` may take before it counts as a hang: ``factor`` times their
    mapped durations (10 s for a test the map has no time for) plus a minute of start-up."""
    return 60.0 + factor * sum(durations.get(t, 10.0) for t in tests)


def fits_budget(now: float, timeout: float, deadline: float) -> bool:
    """Whether a rerun started ``now`` ends by ``deadline`` even if it takes its whole ``timeout``: the
    timeout and second passes start only such runs, so nothing after the first pass runs past the
    budget (the seed-5 run started second-pass runs up to its deadline, and they ended 3.6 minutes past
    it). A first-pass mutant started before the deadline may still run to its own timeout."""
    return now + timeout <= deadline


def _timeout_pass(pool: ThreadPoolExecutor, out: dict, plan: list, copies: list[Path], free: queue.Queue[Path],
                  cov: dict, durations: dict[str, float], passed: set[str], limit: int | None,
                  per_mutant: float | None, deadline: float) -> None:
    """Mutants killed only by a timeout run the same tests again with ``RECHECK_FACTOR`` times their
    mapped durations, while the wall-clock budget lasts (``after_recheck``); one the budget did not
    reach keeps ``killed_by: timeout`` and the score counts it as unconfirmed."""
    by_place = _by_place(plan, copies[0])
    todo = [i for i, r in enumerate(out["mutants"]) if r.get("killed_by") == "timeout"]
    if todo:
        print(f"timeout pass: {len(todo)} mutants killed by a timeout run again with {RECHECK_FACTOR}x", flush=True)

    def again(i: int) -> None:
        row = out["mutants"][i]
        tests = sel.select_tests(cov.get(row["module"], {}).get(row["line"], []), durations, passed, limit, per_mutant)
        timeout = run_timeout(tests, durations, RECHECK_FACTOR)
        if not fits_budget(time.monotonic(), timeout, deadline):
            return
        c = free.get()
        try:
            m = by_place[place(row["module"], row["line"], row["operator"], row["occurrence"])]
            second = _run_one(m, c, row["module"], tests, timeout)
        finally:
            free.put(c)
        out["mutants"][i] = after_recheck(row, second)
        print(f"[timeout pass] {row['module']}:{row['line']} {row['operator']}: {out['mutants'][i]['outcome']}"
              f" ({second.get('seconds', 0.0)}s)", flush=True)

    list(pool.map(again, todo))


def _second_pass(pool: ThreadPoolExecutor, out: dict, plan: list, copies: list[Path], free: queue.Queue[Path],
                 cov: dict, durations: dict[str, float], passed: set[str], limit: int | None,
                 per_mutant: float | None, deadline: float, partial: Path | None, start: float) -> None:
    """Survivors whose slower covering tests were left out by ``--max-share`` run those tests now,
    fastest first, while the run's wall-clock budget lasts: a kill there is a kill by the mutant's
    covering tests, marked ``second_pass``; a survivor still standing ran every covering test."""
    by_place = _by_place(plan, copies[0])
    todo = [r for r in out["mutants"] if r["outcome"] == "survived" and r.get("tests_beyond_budget")]
    todo.sort(key=lambda r: sum(durations.get(t, 60.0) for t in
                                sel.beyond_budget(cov.get(r["module"], {}).get(r["line"], []), durations, passed,
                                                  limit, per_mutant)))
    if todo:
        print(f"second pass: {len(todo)} survivors run their covering tests beyond the budget", flush=True)

    def again(row: dict) -> None:
        rest = sel.beyond_budget(cov.get(row["module"], {}).get(row["line"], []), durations, passed, limit, per_mutant)
        timeout = run_timeout(rest, durations)
        if not fits_budget(time.monotonic(), timeout, deadline):
            return
        c = free.get()
        try:
            m = by_place[place(row["module"], row["line"], row["operator"], row["occurrence"])]
            second = _run_one(m, c, row["module"], rest, timeout)
        finally:
            free.put(c)
        row["second_pass"] = {"tests": len(rest), "seconds": second.get("seconds", 0.0), "outcome": second["outcome"]}
        if second["outcome"] == "killed":
            row["outcome"], row["killed_by"] = "killed", second.get("killed_by", "test run failed")
        row["tests_beyond_budget"] = 0
        print(f"[second pass] {row['module']}:{row['line']} {row['operator']}: {second['outcome']}"
              f" ({second.get('seconds', 0.0)}s, {len(rest)} tests)", flush=True)

    list(pool.map(again, todo))
    if partial is not None:
        partial.write_text(json.dumps({**out, "seconds": round(time.monotonic() - start, 1)},
                                      indent=1, ensure_ascii=False) + "\n")


def _diff_lines(diff: str) -> list[str]:
    return [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def _first_failure(output: str) -> str:
    for ln in output.splitlines():
        if ln.startswith(("FAILED ", "ERROR ")):
            return ln.split(" - ")[0][:160]
    return "timeout" if output == "timeout" else "test run failed"


def wilson_lower(k: int, n: int, z: float = 1.959964) -> float:
    """The lower end of the 95 % Wilson score interval for k successes in n trials."""
    if n == 0:
        return 0.0
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n)


def score(result: dict) -> dict:
    c = Counter(m["outcome"] for m in result["mutants"])
    tested = c["killed"] + c["survived"] + c["not-covered"]
    return {"tested": tested, "killed": c["killed"], "survived": c["survived"], "not_covered": c["not-covered"],
            "no_mutation": c["no-mutation"],
            "score": round(100 * c["killed"] / tested, 1) if tested else None,
            "timeouts_unconfirmed": sum(m.get("killed_by") == "timeout" for m in result["mutants"]),
            "wilson_lower": round(100 * wilson_lower(c["killed"], tested), 1)}


def report(result: dict) -> str:
    """The run as Markdown tables: per module, and every survivor with its diff."""
    rows = Counter((m["module"], m["outcome"]) for m in result["mutants"])
    out = ["| module | mutants | unobservable (filtered) | sampled | ran | killed | survived | not covered |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for module, info in result["modules"].items():
        ran = sum(n for (mod, _), n in rows.items() if mod == module)
        out.append(f"| `{module}` | {info['mutants']:,} | {info['unobservable']:,} | {info['sampled']} | {ran} | "
                   f"{rows[(module, 'killed')]} | {rows[(module, 'survived')]} | {rows[(module, 'not-covered')]} |")
    out += ["", "| survivor | operator | diff |", "|---|---|---|"]
    for m in result["mutants"]:
        if m["outcome"] in ("survived", "not-covered"):
            diff = " / ".join(d.strip() for d in m.get("diff", []))[:160].replace("|", "\\|")
            beyond = f" ({m['tests_beyond_budget']} covering tests beyond the budget)" if m.get("tests_beyond_budget") else ""
            if m.get("second_pass"):
                beyond = f" (its {m['second_pass']['tests']} slower covering tests run in the second pass)"
            out.append(f"| `{m['module']}:{m['line']}` ({m['outcome']}{beyond}) | {m['operator']} | `{diff}` |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.mutation", description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=560, help="mutants drawn from the core (default 560)")
    ap.add_argument("--budget-minutes", type=float, default=78.0,
                    help="wall-clock budget for the mutants (default 78: with a ~12-minute map, 90 in all)")
    ap.add_argument("--seed", type=int, default=0, help="sampling seed")
    ap.add_argument("--workers", type=int, default=2, help="parallel mutants, each in its own copy")
    ap.add_argument("--max-tests", type=int, default=0,
                    help="at most this many covering tests per mutant, fastest first (default 0: all of them)")
    ap.add_argument("--max-share", type=float, default=0.05,
                    help="run a mutant's covering tests, fastest first, until their map durations pass this share "
                         "of the whole map's (default 0.05; 0: no budget, every covering test)")
    ap.add_argument("--no-postgresql", action="store_true",
                    help=f"map and run without {PG_ENV} (its PostgreSQL tests are skipped, so their kills are lost)")
    ap.add_argument("--only", action="append", default=[], help="substring of the modules to mutate")
    ap.add_argument("--map-only", action="append", default=[],
                    help="substring of the test files to map (default: every test file but NOT_MAPPED)")
    ap.add_argument("--map", default=str(ROOT / ".venv" / "mutation-map.json"),
                    help="where the coverage map is kept and reused for the same commit ('' to always remap)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "mutation.json"), help="raw results (JSON)")
    ap.add_argument("--report", metavar="JSON", help="print the Markdown tables of an earlier run's raw results")
    ap.add_argument("--resume", metavar="JSON",
                    help="an earlier run's raw results (its .partial file if it was stopped), same commit, seed and "
                         "sample size: keep its rows and run only the rest of the sample")
    a = ap.parse_args(argv)
    if a.report:
        print(report(json.loads(Path(a.report).read_text())), end="")
        return
    if not 1 <= a.sample <= 20000 or not 0 < a.budget_minutes <= 24 * 60 or not 1 <= a.workers <= 16 \
            or not 0 <= a.max_tests <= 10000 or not 0 <= a.max_share <= 1:
        ap.error("--sample 1..20000, --budget-minutes 0..1440, --workers 1..16, --max-tests 0..10000, --max-share 0..1")
    problem = postgresql_problem(os.environ, a.no_postgresql)
    if problem:
        ap.error(problem)
    earlier = None
    if a.resume:
        try:
            earlier = json.loads(Path(a.resume).read_text())
        except (OSError, ValueError) as e:
            ap.error(f"--resume {a.resume}: {e}")
    result = run(a.sample, a.budget_minutes * 60, a.seed, a.only, a.workers, a.max_tests or None, a.map_only,
                 Path(a.map) if a.map else None, Path(a.out + ".partial"), a.max_share or None, earlier)
    result["score"] = score(result)
    Path(a.out).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    s = result["score"]
    print(f"{s['killed']}/{s['tested']} killed ({s['score']} %, 95 % lower bound {s['wilson_lower']} %), "
          f"{s['survived']} survived, {s['not_covered']} not covered, {s['timeouts_unconfirmed']} kills by an "
          f"unconfirmed timeout; {result['seconds']} s; raw results in {a.out}")


if __name__ == "__main__":
    main()
