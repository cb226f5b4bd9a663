"""`verify --plan --store DB` / `--case FILE`: a self-consistent forged plan is refused.

Each forgery below keeps the plan consistent with itself (the plain certificate check passes it),
and is refused once the plan is checked against the store it came from or the case it clears.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main

DATA = Path("engine/data/repair")
CASES = Path("engine/data/cases")


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture()
def executed(tmp_path: Path) -> tuple[str, dict]:
    db = str(tmp_path / "m.db")
    assert _run("store", "import", "--store", db, str(DATA / "store.json")).exit_code == 0
    r = _run("repair", "--policy", "policies/default.yaml", "--store", db, "--event", str(DATA / "event-delete.json"),
             "--json")
    assert r.exit_code == 0, r.output
    return db, json.loads(r.stdout)


def _verify(tmp_path: Path, doc: dict, *extra: str):
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(doc))
    r = _run("verify", "--plan", str(p), "--json", *extra)
    return r.exit_code, (json.loads(r.stdout) if r.stdout.strip().startswith("{") else r.output)


def _drop_descendant(doc: dict) -> dict:
    """Remove a leaf descendant consistently from every list of the plan."""
    victim = next(i for i in doc["descendants"] if i not in {x for c in doc["candidates"] for x in c["prerequisites"]}
                  and i not in doc["selection"])
    out = json.loads(json.dumps(doc))
    for key in ("cascade", "descendants", "barrier", "withdrawn", "unservable", "selection", "order", "republished"):
        out[key] = [i for i in out.get(key, []) if i != victim]
    out["candidates"] = [c for c in out["candidates"] if c["id"] != victim]
    out["modes"].pop(victim, None)
    out["base_versions"].pop(victim, None)
    out["executed"] = [s for s in out["executed"] if s["id"] != victim]
    return out


def _move_roots(doc: dict) -> dict:
    out = json.loads(json.dumps(doc))
    out["event"]["roots"] = ["p6"]  # an artifact outside the cascade
    return out


def _cheaper_tradeoff(doc: dict) -> dict:
    out = json.loads(json.dumps(doc))
    out["tradeoff"] = 0.0
    return out


@pytest.mark.parametrize("forge", [_drop_descendant, _move_roots, _cheaper_tradeoff],
                         ids=["descendant-dropped", "roots-moved", "tradeoff-changed"])
def test_forged_transition_plan_refused_with_the_store(tmp_path: Path, executed, forge):
    db, doc = executed
    code, out = _verify(tmp_path, doc, "--store", db)
    assert code == 0, out  # the genuine plan holds against its store
    forged = forge(doc)
    code, out = _verify(tmp_path, forged, "--store", db)
    assert code == 1 and not out["ok"], out


def test_dropped_descendant_passes_the_self_check_alone(tmp_path: Path, executed):
    _, doc = executed
    code, out = _verify(tmp_path, _drop_descendant(doc))
    assert code == 0, out  # why --store is needed: the plan alone is consistent


def test_forged_clearance_plan_refused_with_the_case(tmp_path: Path):
    case = str(CASES / "redundant.json")
    r = _run("clear", "--case", case, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    code, out = _verify(tmp_path, doc, "--case", case)
    assert code == 0, out
    # τ and v̂(∅) dropped: the plan alone still passes, against its case it is refused
    stripped = {k: v for k, v in doc.items() if k not in ("harm_tolerance", "empty_value")}
    assert _verify(tmp_path, stripped)[0] == 0
    code, out = _verify(tmp_path, stripped, "--case", case)
    assert code == 1 and not out["ok"] and "harm_tolerance" in json.dumps(out["first_violation"]), out
    # and removing a helpful memory on top is refused as well
    forged = dict(stripped, removed=sorted(set(doc["removed"]) | {doc["cleared_context"][0]}))
    assert _verify(tmp_path, forged, "--case", case)[0] != 0
