"""`memsteward test --properties`: generated scenarios within a policy's declarations, G4/G5 and
declared invariants; a planted policy bug is found, shrunk and written out as a failing case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.policy.loader import load_policy
from memsteward.testing.properties import scenarios

POLICIES = Path("policies")
INVARIANT = {"name": "sensitive-summary-never-regenerated-after-delete",
             "for": {"kind": "summary", "event": "delete", "meta": {"sensitivity": {"ge": 3}}},
             "mode_not_in": ["regen"]}


def run(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("name", sorted(p.stem for p in POLICIES.glob("*.yaml")))
def test_shipped_policies_hold_their_properties(name):
    r = run("test", "--properties", str(POLICIES / f"{name}.yaml"), "--examples", "25", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["passed"] and doc["examples"] == 25


def test_generated_scenarios_stay_within_the_declarations():
    from hypothesis import given, settings

    policy = load_policy(POLICIES / "assistant.yaml")
    seen_sensitive = []

    # derandomized: whether 60 random examples reach the boundary was a coin toss (it failed once
    # in a full run); a fixed derivation makes the coverage claim below repeatable
    @settings(max_examples=60, deadline=None, database=None, derandomize=True)
    @given(scenarios(policy))
    def check(sc):
        store, event = sc
        for a in store["artifacts"]:
            assert a["kind"] in policy.kinds
            if a["kind"] == "skill":
                assert a["arch"] in ("neural", "prompt")  # assistant declares these two only
            for field, value in a["meta"].items():
                mf = policy.kinds[a["kind"]].meta[field]
                assert (mf.min is None or value >= mf.min) and (mf.max is None or value <= mf.max)
            if a["kind"] == "summary" and a["meta"]["sensitivity"] >= 3:
                seen_sensitive.append(a["id"])
        ids = [a["id"] for a in store["artifacts"]]
        for e in store["edges"]:  # a DAG: edges go from earlier to later artifacts
            assert ids.index(e["src"]) < ids.index(e["dst"])
        assert set(event["roots"]) <= {a["id"] for a in store["artifacts"] if a["kind"] == "record"}

    check()
    assert seen_sensitive  # the declared range's boundary (sensitivity 3) is generated


def _planted(tmp_path: Path) -> tuple[Path, Path]:
    """assistant.yaml without its first rule: sensitive summaries are regenerated after a delete."""
    doc = yaml.safe_load((POLICIES / "assistant.yaml").read_text())
    assert doc["modes"][0]["name"] == "sensitive-summaries-never-regenerated-after-delete"
    doc["modes"] = doc["modes"][1:]
    policy = tmp_path / "planted.yaml"
    policy.write_text(yaml.safe_dump(doc, sort_keys=False))
    test = tmp_path / "planted_test.yaml"
    test.write_text(yaml.safe_dump({"policy": "planted.yaml", "invariants": [INVARIANT]}, sort_keys=False))
    return policy, test


def test_planted_bug_is_found_shrunk_and_saved(tmp_path):
    policy, test = _planted(tmp_path)
    out = tmp_path / "failures"
    r = run("test", "--properties", str(policy), str(test), "--examples", "300", "--seed", "2",
            "--save-failures", str(out))
    assert r.exit_code == 1, r.output
    assert "invariant sensitive-summary-never-regenerated-after-delete" in r.output
    store = json.loads((out / "store.json").read_text())
    event = json.loads((out / "event.json").read_text())
    violation = json.loads((out / "violation.json").read_text())
    assert event["type"] == "delete"
    culprit = violation[0]["witness"]["artifact"]
    summary = next(a for a in store["artifacts"] if a["id"] == culprit)
    assert summary["kind"] == "summary" and summary["meta"]["sensitivity"] >= 3
    # Small by hand: regen needs sufficient support (≥ 2 retained or repairable inputs, ≥ 0.6 of
    # all inputs) and an input in the deleted cascade, so a failing store has ≥ 4 artifacts and the
    # summary ≥ 2 inputs (e.g. a deleted record's summary, repairable, and a retained record).
    # Hypothesis's shrinker reaches a small store, not always one particular minimum (6.170 stops
    # at 5 artifacts and 2 inputs where earlier releases gave 4 and 3), so the test bounds it.
    assert 4 <= len(store["artifacts"]) <= 6, store
    assert len([e for e in store["edges"] if e["dst"] == culprit]) >= 2, store
    # The saved case reproduces: with an expectation that the summary is removed it fails under the
    # planted policy and passes under the shipped one.
    case_file = out / "failure_test.yaml"
    case = yaml.safe_load(case_file.read_text())
    case["cases"][0]["expect"] = {"modes": {culprit: "remove"}}
    case_file.write_text(yaml.safe_dump(case, sort_keys=False))
    planted = run("test", str(case_file))
    assert planted.exit_code == 1 and 'actual:   "regen"' in planted.output
    case["policy"] = str((POLICIES / "assistant.yaml").resolve())
    case_file.write_text(yaml.safe_dump(case, sort_keys=False))
    shipped = run("test", str(case_file))
    assert shipped.exit_code == 0, shipped.output
    # the same seed gives the same run
    again = run("test", "--properties", str(policy), str(test), "--examples", "300", "--seed", "2", "--json")
    assert again.exit_code == 1 and json.loads(again.output)["store"] == store


def test_examples_are_bounded():
    r = run("test", "--properties", str(POLICIES / "default.yaml"), "--examples", "100001")
    assert r.exit_code == 2
