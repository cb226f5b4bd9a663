"""`verify --plan --store DB` / `--case FILE`: a self-consistent forged plan is refused.

Each forgery below keeps the plan consistent with itself (the plain certificate check passes it),
and is refused once the plan is checked against the store it came from or the case it clears.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

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


@pytest.mark.parametrize("event, policy", [("event-delete.json", "policies/default.yaml"),
                                           ("event-correct.json", "policies/default.yaml"),
                                           ("event-migrate.json", "policies/tool-agent.yaml")])
def test_genuine_executed_plans_hold_against_their_store(tmp_path: Path, event: str, policy: str):
    """Issue 25: `verify --plan --store` rejected genuine plans (a correct event's among them). Without
    --policy the store's recorded event supplies λ and β — a replacement kept by reference included."""
    db = str(tmp_path / "m.db")
    assert _run("store", "import", "--store", db, str(DATA / "store.json")).exit_code == 0
    r = _run("repair", "--policy", policy, "--store", db, "--event", str(DATA / event), "--json")
    assert r.exit_code == 0, r.output
    code, out = _verify(tmp_path, json.loads(r.stdout), "--store", db)
    assert code == 0, [c for c in out["clauses"] if not c["ok"]] if isinstance(out, dict) else out


COPY = "Remember: the user is allergic to peanuts and carries an epipen, always."


def _with_untracked_copy(tmp_path: Path) -> str:
    db = str(tmp_path / "m.db")
    assert _run("store", "import", "--store", db, str(DATA / "store.json")).exit_code == 0
    put = tmp_path / "copy.json"
    put.write_text(json.dumps({"id": "stray-note", "kind": "record", "content": {"text": COPY, "label": "x"}}))
    assert _run("store", "put", "--store", db, str(put)).exit_code == 0
    return db


def _drop(doc: dict, victim: str) -> dict:
    out = json.loads(json.dumps(doc))
    for key in ("cascade", "descendants", "barrier", "withdrawn", "unservable", "selection", "order", "republished"):
        out[key] = [i for i in out.get(key, []) if i != victim]
    out["candidates"] = [c for c in out["candidates"] if c["id"] != victim]
    for key in ("modes", "base_versions", "untracked"):
        out.get(key, {}).pop(victim, None)
    out["executed"] = [s for s in out.get("executed", []) if s["id"] != victim]
    return out


@pytest.mark.parametrize("dry", [False, True], ids=["executed", "dry-run"])
def test_forgery_dropping_an_untracked_member_is_refused(tmp_path: Path, dry: bool):
    """Issue 25: a forgery that drops a content-scan (untracked) member of C(F) consistently passed."""
    db = _with_untracked_copy(tmp_path)
    r = _run("repair", "--policy", "policies/default.yaml", "--store", db, "--event",
             str(DATA / "event-delete.json"), "--json", *(["--dry-run"] if dry else []))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert "stray-note" in doc["untracked"] and "stray-note" in doc["cascade"]
    assert _verify(tmp_path, doc, "--store", db, "--policy", "policies/default.yaml")[0] == 0
    forged = _drop(doc, "stray-note")
    assert _verify(tmp_path, forged)[0] == 0  # consistent with itself
    code, out = _verify(tmp_path, forged, "--store", db, "--policy", "policies/default.yaml")
    assert code == 1 and not out["ok"], out


@st.composite
def _stores(draw):
    """A small provenance DAG: records, then summaries built from earlier artifacts, some texts shared."""
    n_rec = draw(st.integers(1, 4))
    arts = [{"id": f"r{k}", "kind": "record", "content": {"text": draw(st.sampled_from(TEXTS)), "label": "x"}}
            for k in range(n_rec)]
    for k in range(draw(st.integers(0, 5))):
        ids = [a["id"] for a in arts]
        inputs = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3, unique=True))
        kind = draw(st.sampled_from(["summary", "cache"]))  # a stale cache is in mode remove (no candidate)
        arts.append({"id": f"s{k}", "kind": kind, "content": draw(st.sampled_from(TEXTS)), "inputs": inputs,
                     "meta": {"age_days": 400} if kind == "cache" else {}})
    root = draw(st.sampled_from([a["id"] for a in arts if a["kind"] == "record"]))
    kind = draw(st.sampled_from(["delete", "correct"]))
    return arts, root, kind


TEXTS = ["Alice lives in Paris and walks her dog along the river every single morning.",
         "Bob prefers green tea over coffee when he works late in the evening at home.",
         "The user is allergic to peanuts and carries an epipen in the blue backpack.",
         "A short note."]


@settings(max_examples=25, deadline=None)
@given(_stores())
def test_every_genuine_plan_holds_against_its_store(case):
    """Property (issue 25): plans the engine makes — executed, on any small DAG, deletes and
    corrections — are always accepted by the store clauses (the recorded policy supplies λ, β)."""
    from memsteward.policy.loader import load_policy_source
    from memsteward.repair.events import parse_event
    from memsteward.repair.execute import run_event
    from memsteward.store import Store
    from specs.sources import check_transition_source

    arts, root, kind = case
    store = Store()
    store.record_many(arts)
    doc = {"type": kind, "roots": [root]}
    if kind == "correct":
        doc["replacements"] = [{"id": root, "kind": "record", "content": {"text": "corrected", "label": "x"}}]
    plan = run_event(store, load_policy_source("policies/default.yaml").policy, parse_event(doc, store.snapshot()))
    failed = [c for c in check_transition_source(plan.to_json(), store, None) if not c.ok]
    assert not failed, failed
