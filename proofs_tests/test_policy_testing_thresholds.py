"""`memsteward test`: cases give oracle inputs (``successors``), and coverage reports the oracle
thresholds no case puts at stake (issue 31: lowering ``grounded min_support`` 0.75 → 0.0 passed
`check`, `test`, coverage and properties, because no case could reach the threshold).

The given successor of ``sum-profile`` was worked out by hand against its retained support (r2:
"The user prefers vegetarian meals.", r3: "The user lives in Berlin."): sentence 1's content words
{vegetarian, meal, berlin} are all supported; sentence 2's {user, ride, horse, daily} only 1/4.
So ``grounded`` rejects it at min_support 0.75 and accepts it at 0.0.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from memsteward.cli import main

POLICIES = Path("policies")
DEFAULT_TEST = POLICIES / "tests" / "default_test.yaml"
HALF_GROUNDED = "Vegetarian meals in Berlin. The user rides horses daily."
SUMMARY_THRESHOLD = "grounded min_support = 0.75 (validation 2: mode=regen)"


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def suite(tmp_path: Path, policy: Path, successors: dict | None, name: str = "mine_test.yaml") -> Path:
    """The default test file's delete-r1 case, with the given oracle inputs and what they imply."""
    doc = yaml.safe_load(DEFAULT_TEST.read_text())
    doc["policy"] = str(policy.resolve())
    case = doc["cases"][0]
    doc["cases"] = [case]
    if successors is not None:
        case["successors"] = successors
        case["expect"] = {"failed": ["sum-profile"], "republished": ["cache-new", "prompt-chef", "neural-prefs"],
                          "oracles": {"sum-profile": ["schema", "grounded"]}}
    out = tmp_path / name
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def loosened_policy(tmp_path: Path) -> Path:
    text = (POLICIES / "default.yaml").read_text()
    assert text.count("min_support: 0.75") == 2
    out = tmp_path / "loose.yaml"
    out.write_text(text.replace("min_support: 0.75", "min_support: 0.0"))
    return out


def thresholds(path: Path) -> dict[str, bool]:
    r = run("test", "--coverage", "--json", str(path))
    assert r.exit_code == 0, r.output
    return {i["name"]: i["covered"] for i in json.loads(r.output)["coverage"][0]["thresholds"]}


def test_a_given_successor_is_judged_by_the_oracles(tmp_path):
    r = run("test", str(suite(tmp_path, POLICIES / "default.yaml", {"sum-profile": HALF_GROUNDED})))
    assert r.exit_code == 0, r.output


def test_the_loosened_threshold_fails_the_case(tmp_path):
    """The issue's scenario: min_support 0.75 → 0.0 lets the half-grounded text through."""
    path = suite(tmp_path, loosened_policy(tmp_path), {"sum-profile": HALF_GROUNDED})
    r = run("test", str(path))
    assert r.exit_code == 1
    assert "failed" in r.output and "sum-profile" in r.output


def test_coverage_reports_thresholds_never_at_stake(tmp_path):
    without = thresholds(suite(tmp_path, POLICIES / "default.yaml", None, "plain_test.yaml"))
    assert without[SUMMARY_THRESHOLD] is False and not any(without.values())
    r = run("test", "--coverage", str(suite(tmp_path, POLICIES / "default.yaml", None, "plain_test.yaml")))
    assert f"threshold never at stake: {SUMMARY_THRESHOLD}" in r.output
    given = thresholds(suite(tmp_path, POLICIES / "default.yaml", {"sum-profile": HALF_GROUNDED}))
    assert given[SUMMARY_THRESHOLD] is True
    assert {k for k, v in given.items() if v} == {SUMMARY_THRESHOLD}  # the prompt rule's copy is not at stake
    assert set(given) == set(without) and len(given) == 8  # replay ×2, grounded ×2, task_regression, forget ×2, sandbox


def test_successors_belong_to_repair_cases(tmp_path):
    doc = yaml.safe_load(DEFAULT_TEST.read_text())
    doc["policy"] = str((POLICIES / "default.yaml").resolve())
    doc["cases"] = [doc["cases"][2]]
    doc["cases"][0]["successors"] = {"m1": "x"}
    path = tmp_path / "bad_test.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    r = run("test", str(path))
    assert r.exit_code == 2 and "'successors' applies to repair cases" in r.output and str(path) in r.output
    assert "Traceback" not in r.output
