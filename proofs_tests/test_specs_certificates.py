"""`memsteward verify --plan`: real plans pass every clause; each tampered plan fails the right one."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.specs.certificates import check_plan

CASES = sorted(Path("engine/data/cases").glob("*.json"))


def _clearance_plan(case: Path, method: str = "meclear") -> dict:
    result = CliRunner().invoke(main, ["clear", "--case", str(case), "--method", method, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
@pytest.mark.parametrize("method", ["meclear", "loo", "contextcite"])
def test_real_clearance_plans_hold(case: Path, method: str):
    clauses = check_plan(_clearance_plan(case, method))
    assert all(c.ok for c in clauses), [c.as_dict() for c in clauses if not c.ok]


def _first_failure(doc: dict) -> str:
    failed = [c for c in check_plan(doc) if not c.ok]
    assert failed, "tampered plan passed every clause"
    return failed[0].name


TAMPER = {
    "selected not minimal": (lambda d: d.update(selected=0, removed=[], cleared_context=d["context"],
                                                cleared_value=d["baseline_value"], recovered=False), "Eq. 20"),
    "efficiency broken": (lambda d: d["contribution"].update({d["context"][0]: d["contribution"][d["context"][0]] + 0.5}), "efficiency"),
    "degrading clearance": (lambda d: d.update(cleared_value=d["baseline_value"] - 0.5), "v̂(M̃)"),
    "unrecovered selection": (lambda d: d.update(recovered=False), "Eq. 22"),
    "removed beyond chain": (lambda d: d.update(removed=d["context"][:1]), "M̃ = M ∖ C_ĵ"),
    "harmful set wrong": (lambda d: d.update(harmful=[]), "harmful set H"),
    "beneficial memory in the chain": (lambda d: d.update(chain=d["chain"] + ["m1"]), "harmful set H"),
}


@pytest.mark.parametrize("name", sorted(TAMPER))
def test_tampered_clearance_plan_names_the_clause(name: str):
    doc = _clearance_plan(Path("engine/data/cases/redundant.json"))
    assert doc["selected"] > 0
    mutate, expected = TAMPER[name]
    bad = copy.deepcopy(doc)
    mutate(bad)
    assert expected in _first_failure(bad)


def test_verify_plan_cli_exit_codes(tmp_path: Path):
    doc = _clearance_plan(Path("engine/data/cases/redundant.json"))
    good, bad, broken = tmp_path / "good.json", tmp_path / "bad.json", tmp_path / "broken.json"
    good.write_text(json.dumps(doc))
    doc["recovered"] = False
    bad.write_text(json.dumps(doc))
    broken.write_text('{"contribution": ')
    assert CliRunner().invoke(main, ["verify", "--plan", str(good)]).exit_code == 0
    r = CliRunner().invoke(main, ["verify", "--plan", str(bad), "--json"])
    assert r.exit_code == 1 and "Eq. 22" in json.loads(r.stdout)["first_violation"]["clause"]
    r = CliRunner().invoke(main, ["verify", "--plan", str(broken)])
    assert r.exit_code == 2 and "invalid JSON" in r.output


def _transition_plan(tmp_path: Path) -> dict:
    r = CliRunner().invoke(main, ["repair", "--policy", "policies/default.yaml", "--store",
                                  "engine/data/repair/store.json", "--event", "engine/data/repair/event-delete.json",
                                  "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_real_transition_plan_holds(tmp_path: Path):
    clauses = check_plan(_transition_plan(tmp_path))
    assert all(c.ok for c in clauses), [c.as_dict() for c in clauses if not c.ok]
    assert any("optimal" in c.name and "Z3" in c.note for c in clauses)


TRANSITION_TAMPER = {
    "no_action that republishes": (lambda d: d.update(selector="no_action", barrier=[]), "no_action"),
    "non-closed selection": (lambda d: d.update(selection=[i for i in d["selection"] if i != "cache-household"]),
                             "closure"),
    "suboptimal selection": (lambda d: d.update(selection=[], objective_exact="0", objective=0.0, order=[],
                                                executed=[], republished=[]), "optimal"),
    "root as prerequisite": (lambda d: d["candidates"][0]["prerequisites"].append(d["event"]["roots"][0]),
                             "outside D⁺(F)"),
    "republished without reports": (lambda d: d["executed"][0].update(validation=[]), "validated successor"),
}


@pytest.mark.parametrize("name", sorted(TRANSITION_TAMPER))
def test_tampered_transition_plan_names_the_clause(tmp_path: Path, name: str):
    doc = _transition_plan(tmp_path)
    mutate, expected = TRANSITION_TAMPER[name]
    mutate(doc)
    assert expected in _first_failure(doc)


def test_malformed_plan_is_bad_input(tmp_path: Path):
    doc = _clearance_plan(Path("engine/data/cases/redundant.json"))
    doc["contribution"] = [1, 2]
    f = tmp_path / "p.json"
    f.write_text(json.dumps(doc))
    r = CliRunner().invoke(main, ["verify", "--plan", str(f)])
    assert r.exit_code == 2 and "not a valid plan" in r.output
