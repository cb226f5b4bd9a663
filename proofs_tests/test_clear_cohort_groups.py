"""`clear --cohort FILE.jsonl` on cases written by another generator (issue 32).

Extra fields are kept as the case's metadata; a malformed line is an error naming the line (exit 2);
`--json` reports recovery, exact set match of the removed set, removed-set size and calls per case
under `groups.<group>.rows.<method>`, with solvable and unsolvable cases apart.
"""

from __future__ import annotations

import json

from click.testing import CliRunner

from memsteward.clearance.cohort import synthetic_cohort
from memsteward.cli import main

ROW_KEYS = {"cases", "recovery", "exact_set_match", "removed_per_case", "calls_per_case", "max_calls", "recall_at_m"}


def _run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _foreign_cases(k: int = 8, n: int = 4) -> list[dict]:
    """Cases as an independent generator writes them: provenance fields, no `meta` block."""
    out = []
    for j, c in enumerate(synthetic_cohort(n, seed=3, k=k)):
        c = {key: v for key, v in c.items() if key != "meta"}
        c.update({"source": "elsewhere-gen", "generator_version": 7, "name": f"foreign-{j}"})
        c["context"] = [{**m, "retrieved_rank": r} for r, m in enumerate(c["context"])]
        out.append(c)
    return out


def test_a_foreign_cohort_runs_and_reports_groups(tmp_path) -> None:
    path = tmp_path / "foreign.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in _foreign_cases()))
    res = _run("clear", "--cohort", str(path), "--methods", "meclear,loo,contextcite", "--k", "8",
               "--call-budget", "40", "--estimator", "stratified", "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    for method in ("meclear", "loo", "contextcite"):
        assert set(report["groups"]["all"]["rows"][method]) == ROW_KEYS
    assert report["groups"]["all"]["cases"] == 4
    assert report["groups"]["solvable"]["cases"] == 4  # the synthetic generator verifies ν(M ∖ F)
    assert report["groups"]["all"]["rows"]["meclear"]["max_calls"] <= 40
    first = report["per_case"][0]
    assert first["name"] == "foreign-0" and first["meta"] == {"source": "elsewhere-gen", "generator_version": 7}
    assert set(first["methods"]) == {"meclear", "loo", "contextcite"}


def test_a_malformed_line_is_named_and_nothing_runs(tmp_path) -> None:
    cases = _foreign_cases(n=3)
    lines = [json.dumps(cases[0]), json.dumps({**cases[1], "faults": "m1"}), json.dumps(cases[2])]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    res = _run("clear", "--cohort", str(path), "--k", "8", "--json")
    assert res.exit_code == 2
    assert f"{path}:2:" in res.stderr and "[faults]" in res.stderr and "Traceback" not in res.output
    assert res.stdout == ""


def test_a_budget_below_the_screen_is_refused_with_exit_2(tmp_path) -> None:
    path = tmp_path / "ok.jsonl"
    path.write_text(json.dumps(_foreign_cases(n=1)[0]) + "\n")
    res = _run("clear", "--cohort", str(path), "--k", "8", "--call-budget", "11")
    assert res.exit_code == 2 and "K + 2·trials = 12" in res.stderr


def test_help_documents_the_estimators_and_the_budget() -> None:
    text = _run("clear", "--help").output
    for needle in ("--estimator", "--call-budget", "shapiq:NAME", "KernelSHAP", "search: budgeted",
                   "K + 2·trials", "stratified", "exact"):
        assert needle in text, needle


def test_the_policy_schema_documents_estimator_search_and_budget() -> None:
    schema = json.loads(_run("schema").stdout)
    props = schema["$defs"]["ClearanceSpec"]["properties"]
    assert "shapiq:SVARM" in props["estimator"]["enum"] and props["search"]["enum"] == ["paper", "budgeted"]
    assert "K + 2·trials" in props["call_budget"]["description"] and "bounded" not in props["call_budget"]
    assert props["call_budget"]["anyOf"][0]["maximum"] == 10_000_000


def test_after_verified_refine_spends_more_and_never_removes_more(tmp_path) -> None:
    path = tmp_path / "foreign.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in _foreign_cases(n=4)))
    rows = {}
    for after in ("stop", "refine"):
        res = _run("clear", "--cohort", str(path), "--methods", "meclear", "--k", "8", "--call-budget", "48",
                   "--estimator", "stratified", "--after-verified", after, "--json")
        assert res.exit_code == 0, res.output
        rows[after] = json.loads(res.stdout)["groups"]["all"]["rows"]["meclear"]
    assert rows["refine"]["recovery"] == rows["stop"]["recovery"]
    assert rows["refine"]["removed_per_case"] <= rows["stop"]["removed_per_case"]
    assert rows["stop"]["calls_per_case"] < rows["refine"]["calls_per_case"] and rows["refine"]["max_calls"] <= 48


def test_after_verified_refine_without_the_budgeted_search_is_refused(tmp_path) -> None:
    path = tmp_path / "ok.jsonl"
    path.write_text(json.dumps(_foreign_cases(n=1)[0]) + "\n")
    res = _run("clear", "--cohort", str(path), "--k", "8", "--after-verified", "refine")
    assert res.exit_code == 2 and "needs search 'budgeted'" in res.stderr and "Traceback" not in res.output
    assert "--after-verified" in _run("clear", "--help").output
    schema = json.loads(_run("schema").stdout)
    assert schema["$defs"]["ClearanceSpec"]["properties"]["after_verified"]["enum"] == ["stop", "refine"]
