"""`clear --cohort … --executor ray` (issue 10 part 3): each case a Ray task with its own coalition
cache; the same outcomes (removed sets, rankings, recovery, coalitions and calls) as the local run,
on a fixed cohort of table games, through the API and the CLI. Real local Ray (conftest)."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.clearance.case import iter_cohort
from memsteward.clearance.cohort import run_cohort
from memsteward.cli import main
from memsteward.policy import load_policy
from memsteward.repair.executors import RayExecutor

IDS = ["m1", "m2", "m3", "m4"]


def table_cohort(n: int = 10, seed: int = 7) -> list[dict]:
    """Fixed table games over K = 4: a value per coalition, drawn once from a seeded generator."""
    rng = random.Random(seed)
    cases = []
    for c in range(n):
        values = {",".join(s): round(rng.random(), 3)
                  for r in range(len(IDS) + 1) for s in itertools.combinations(IDS, r)}
        faults = sorted(rng.sample(IDS, rng.randint(1, 2)))
        cases.append({"name": f"t{c}", "query": "q?", "reference": "gold",
                      "context": [{"id": i, "text": f"memory {i}"} for i in IDS], "faults": faults,
                      "game": {"type": "table", "values": values}})
    return cases


@pytest.fixture
def cohort_file(tmp_path: Path) -> str:
    path = tmp_path / "tables.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in table_cohort()))
    return str(path)


def test_cohort_on_ray_equals_the_local_run(ray_cluster, cohort_file):
    spec = load_policy("policies/meclear-paper.yaml").clearance
    cases = list(iter_cohort(cohort_file, spec.retrieval_budget))
    methods = ["meclear", "loo", "contextcite", "direct"]
    local = run_cohort(cases, spec, methods)
    remote = run_cohort(cases, spec, methods, executor=RayExecutor(3))
    assert remote == local
    assert len(local) == len(cases) * len(methods) and any(o.flagged for o in local)


def test_clear_cli_cohort_executor_ray_same_json(ray_cluster, cohort_file):
    args = ["clear", "--policy", "policies/meclear-paper.yaml", "--cohort", cohort_file, "--json",
            "--methods", "meclear,loo"]
    local = CliRunner().invoke(main, args)
    remote = CliRunner().invoke(main, [*args, "--executor", "ray:2"])
    assert local.exit_code == 0 and remote.exit_code == 0, (local.output, remote.output)
    assert json.loads(remote.stdout) == json.loads(local.stdout)


@pytest.mark.parametrize("extra,message", [(["--executor", "pool:2"], "sequential or ray"),
                                           (["--executor", "ray:0"], "worker count"),
                                           (["--executor", "ray://127.0.0.1:1"], "cannot reach the Ray cluster"),
                                           (["--executor", "ray", "--archive", "arch"], "--archive")])
def test_clear_bad_executor_is_exit_2(cohort_file, tmp_path, extra, message):
    res = CliRunner().invoke(main, ["clear", "--cohort", cohort_file, *extra])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]
