"""`memsteward clear` end to end: single cases, cohorts, generators, and bad input (exit 2)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memsteward.clearance.case import iter_cohort, load_case, parse_case
from memsteward.clearance.demo import bundled_case_path, run_clearance_demo
from memsteward.cli import main
from memsteward.errors import InputError

REQUIRED = {"loo", "contribution", "interaction", "harmful", "chain", "gains", "selected",
            "cleared_context", "removed", "baseline_value", "cleared_value",
            "coalitions_evaluated", "evaluator_calls", "exact"}


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_clear_case_json_has_the_plan_fields():
    res = run("clear", "--policy", "policies/meclear-paper.yaml",
              "--case", bundled_case_path("redundant"), "--json")
    assert res.exit_code == 0, res.output
    plan = json.loads(res.output)
    assert REQUIRED <= set(plan)
    assert plan["removed"] == ["m3", "m5"] and plan["selected"] == 2 and plan["exact"] is True
    assert plan["loo"]["m3"] == 0.0 and plan["contribution"]["m3"] < -0.05
    assert plan["interaction"][0]["structure"] == "redundant"


@pytest.mark.parametrize("method", ["meclear", "loo", "contextcite", "proxyspex", "direct"])
def test_clear_case_every_method(method):
    res = run("clear", "--case", bundled_case_path("direct"), "--method", method)
    assert res.exit_code == 0, res.output
    assert "removed:" in res.output


def test_table_case_from_the_readme(tmp_path):
    case = {"query": "q", "reference": "r",
            "context": [{"id": "m1", "text": "a"}, {"id": "m2", "text": "b"}],
            "game": {"type": "table", "values": {"": 0.0, "m1": 1.0, "m2": 0.0, "m1,m2": 0.5}},
            "faults": ["m2"]}
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))
    res = run("clear", "--case", str(path), "--json")
    assert res.exit_code == 0, res.output
    plan = json.loads(res.output)
    assert plan["removed"] == ["m2"] and plan["cleared_value"] == 1.0


def test_cohort_table_and_json(tmp_path):
    out = tmp_path / "cohort.jsonl"
    res = run("clear", "--synthetic-cohort", "12", "--seed", "4", "--out", str(out))
    assert res.exit_code == 0, res.output
    assert len(list(iter_cohort(out))) == 12
    res = run("clear", "--cohort", str(out), "--methods", "meclear,loo")
    assert res.exit_code == 0, res.output
    assert "Recall@|M|" in res.output and "redundant" in res.output
    res = run("clear", "--cohort", str(out), "--json", "--methods", "meclear")
    data = json.loads(res.stdout)
    assert data["cases"] == 12 and data["rows"][0]["method"] == "meclear"


BAD_CASES = [
    ("{not json", "invalid JSON"),
    ('{"query": "", "context": [{"id": "a"}]}', "[query]"),
    ('{"query": "q", "context": []}', "[context]"),
    ('{"query": "q", "context": [{"id": "a"}, {"id": "a"}]}', "duplicate memory id 'a'"),
    ('{"query": "q", "context": [{"id": "a,b"}]}', "[context[0].id]"),
    ('{"query": "q", "context": [{"id": "a"}], "faults": ["zz"]}', "[faults]"),
    ('{"query": "q", "context": [{"id": "a"}], "game": {"type": "magic"}}', "[game.type]"),
    ('{"query": "q", "context": [{"id": "a"}], "game": {"type": "table", "values": {"a,b": 1}}}',
     "unknown memory 'b'"),
    ('{"query": "q", "context": [{"id": "a"}], "game": {"type": "table", "values": {"a": 2}}}',
     "must lie in [0, 1]"),
    ('{"query": "q", "context": [{"id": "a"}], "game": {"type": "table", "values": {"a": NaN}}}',
     "finite number"),
    ('{"query": "q", "context": [{"id": "a"}], "game": {"type": "table", "values": {"a": 1}}}',
     "no value for coalition ''"),
    ('{"query": "q", "context": [{"id": "a"}], "meta": [1]}', "[meta]"),
    ('{"query": "q", "context": [{"id": "a"}], "faults": ["zz"]}', "[faults]"),
]


@pytest.mark.parametrize("text, message", BAD_CASES)
def test_bad_case_is_one_line_exit_2(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    res = run("clear", "--case", str(path))
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and message in lines[0]
    assert "Traceback" not in res.output


def test_bad_cohort_line_is_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = json.dumps({"query": "q", "context": [{"id": "a"}]})
    path.write_text(good + "\n" + '{"query": 3, "context": [{"id": "a"}]}' + "\n")
    res = run("clear", "--cohort", str(path))
    assert res.exit_code == 2
    assert f"{path}:2: error" in res.stderr and "[query]" in res.stderr


def test_missing_case_file_and_context_over_budget(tmp_path):
    res = run("clear", "--case", str(tmp_path / "nope.json"))
    assert res.exit_code == 2 and "file not found" in res.stderr
    big = {"query": "q", "context": [{"id": f"m{i}"} for i in range(6)]}
    path = tmp_path / "big.json"
    path.write_text(json.dumps(big))
    res = run("clear", "--case", str(path))
    assert res.exit_code == 2 and "retrieval_budget" in res.stderr


def test_exactly_one_mode():
    assert run("clear").exit_code == 2
    assert run("clear", "--case", "a", "--cohort", "b").exit_code == 2


def test_bundled_cases_parse_and_demo_story():
    for name in ("direct", "redundant", "joint"):
        case = load_case(bundled_case_path(name))
        assert case.structure == name and case.faults
    lines: list[str] = []
    results = run_clearance_demo(lines.append)
    assert results["redundant"] == {"meclear": True, "loo": False}
    assert all(r["meclear"] for r in results.values())
    assert any("masks" in line for line in lines)


def test_parse_case_rejects_non_object():
    with pytest.raises(InputError, match="JSON object"):
        parse_case([1, 2])
