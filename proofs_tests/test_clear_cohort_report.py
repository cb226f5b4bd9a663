"""`clear --cohort` reports what a reader needs (issue 13 item 6): the paper's metric names, the
MeClear − LOO difference with its interval, exact vs sampled attribution, cases already solved or
unsolvable, and input checks (`--limit`, empty `--methods`, a context larger than K) up front."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memsteward.clearance.metrics import paired_difference
from memsteward.cli import main

CTX = [{"id": "m1", "text": "gold"}, {"id": "m2", "text": "fault"}]
TABLES = {  # hand tables over K = 2 (coalition key: sorted ids joined by commas)
    "fixable": {"": 0, "m1": 1, "m2": 0, "m1,m2": 0},
    "already-right": {"": 0, "m1": 1, "m2": 1, "m1,m2": 1},
    "unfixable": {"": 0, "m1": 0, "m2": 0, "m1,m2": 0},
    "redundant": {"": 0, "m1": 1, "m2": 0, "m1,m2": 0},
}


def _case(name: str, values: dict) -> dict:
    return {"name": name, "query": "q?", "reference": "gold", "context": CTX, "faults": ["m2"],
            "game": {"type": "table", "values": values}}


def _cohort(tmp_path: Path, cases: list[dict]) -> str:
    path = tmp_path / "cohort.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return str(path)


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_notes_and_paired_difference(tmp_path):
    cases = [_case(n, v) for n, v in TABLES.items()]
    cohort = _cohort(tmp_path, cases)
    res = run("clear", "--cohort", cohort, "--methods", "meclear,loo", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["notes"] == {"cases": 4, "meclear_exact": 4, "meclear_sampled": 0,
                            "full_context_correct": 1, "clean_context_wrong": 1}
    assert "table games" in doc["evaluator"]
    # the difference, recomputed from single-case runs
    per_method = {}
    for m in ("meclear", "loo"):
        got = []
        for k, c in enumerate(cases):
            path = tmp_path / f"case{k}.json"
            path.write_text(json.dumps(c))
            plan = json.loads(run("clear", "--case", str(path), "--method", m, "--json").stdout)
            got.append(float(plan["recovered"]))
        per_method[m] = got
    expect = sum(a - b for a, b in zip(per_method["meclear"], per_method["loo"])) / len(cases)
    rec = next(d for d in doc["differences"] if d["metric"] == "Binary Task Recovery")
    assert abs(rec["mean"] - expect) < 1e-12 and rec["low"] <= rec["mean"] <= rec["high"]
    text = run("clear", "--cohort", cohort, "--methods", "meclear,loo").stdout
    for name in ("Complete Set Recall", "Exact Set Match", "Binary Task Recovery", "Recall@|M|",
                 "MeClear − LOO", "exact (all 2^K coalitions) on 4", "already correct with the full context: 1"):
        assert name in text, text


def test_paired_difference_interval():
    d = paired_difference([1, 1, 1, 0], [0, 1, 1, 1], metric="x", names=("a", "b"))
    assert d.mean == 0.0 and d.low < 0 < d.high
    same = paired_difference([1, 0, 1], [1, 0, 1], metric="x", names=("a", "b"))
    assert (same.mean, same.low, same.high) == (0.0, 0.0, 0.0)


def test_limit_applies_to_cohorts(tmp_path):
    cohort = _cohort(tmp_path, [_case(n, v) for n, v in TABLES.items()])
    res = run("clear", "--cohort", cohort, "--methods", "loo", "--limit", "2", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["cases"] == 2


def test_empty_methods_is_bad_input(tmp_path):
    cohort = _cohort(tmp_path, [_case("a", TABLES["fixable"])])
    res = run("clear", "--cohort", cohort, "--methods", " , ")
    assert res.exit_code == 2 and "--methods" in res.output


def test_a_context_larger_than_k_is_refused_before_any_case_runs(tmp_path):
    big = _case("big", TABLES["fixable"])
    big["context"] = [{"id": f"m{i}", "text": f"t{i}"} for i in range(1, 7)]
    big.pop("game")
    cohort = _cohort(tmp_path, [_case("a", TABLES["fixable"]), _case("b", TABLES["fixable"]), big])
    res = run("clear", "--cohort", cohort)
    assert res.exit_code == 2
    assert f"{cohort}:3:" in res.output and "retrieval_budget (K) is 5" in res.output
    assert "clear:" not in res.output  # no case ran (no progress bar)
