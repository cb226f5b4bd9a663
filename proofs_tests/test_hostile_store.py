"""Hostile stores and events (issue 17, item 1), on both store backends: validate before the barrier, and nothing an input
can contain makes an event unfinishable.

* malformed migrate interfaces and fields only an operator reads are refused at the door (event
  parsing, ``store import``) with file, artifact id and field — the store byte-identical, the
  next valid event succeeding;
* a store written before the schemas existed is checked on every artifact a plan touches before
  anything is withdrawn;
* an operator or oracle that raises anything at run time fails its candidate (it stays
  withdrawn), the event completes, and ``recover`` completes an event a wedged store left behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import store_exists, store_fingerprint

from memsteward.cli import main
from memsteward.errors import InputError
from memsteward.policy.loader import load_policy_source
from memsteward.repair import neural
from memsteward.repair.artifacts import Artifact, Snapshot, parse_store_document
from memsteward.repair.events import Event, parse_event
from memsteward.repair.execute import policy_document, recover, root_successors, run_event
from memsteward.repair.operators import default_operators
from memsteward.repair.plan import compute_plan
from memsteward.repair.schemas import PARAM_TYPES
from memsteward.store import Store
from memsteward.store.api import BarrierSpec

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
POLICY = str(ROOT / "policies" / "tool-agent.yaml")
STORE_DOC = json.loads((DATA / "store.json").read_text())
VALID_MIGRATE = json.loads((DATA / "event-migrate.json").read_text())


fingerprint = store_fingerprint  # SQLite file + WAL bytes, or every row of the PostgreSQL schema


@pytest.fixture
def db(store_at) -> str:
    path = store_at("store")
    store = Store.open(path, create=True)
    store.import_snapshot(parse_store_document(STORE_DOC, "store.json"))
    store.close()  # the last close checkpoints the WAL: the fingerprint starts from one file
    return path


def _run(args: list[str]):
    return CliRunner().invoke(main, args)


def _one_error(result, file: str, field: str) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(file) and f"[{field}]" in lines[0], result.output
    return lines[0]


def _next_event_succeeds(db: str, tmp_path: Path) -> None:
    ev = tmp_path / "next.json"
    ev.write_text(json.dumps(VALID_MIGRATE))
    result = _run(["repair", "--policy", POLICY, "--store", str(db), "--event", str(ev), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["status"] == "done"


# Each malformed κ_e, with the field the error must name (a hand table, not derived from the code).
BAD_INTERFACES = {
    "tool-is-int": ({"tools": {"forecast": 5}}, "interface.tools.forecast"),
    "tool-is-list": ({"tools": {"forecast": []}}, "interface.tools.forecast"),
    "tool-is-string": ({"tools": {"forecast": "x"}}, "interface.tools.forecast"),
    "tools-is-list": ({"tools": ["forecast"]}, "interface.tools"),
    "tools-is-string": ({"tools": "forecast"}, "interface.tools"),
    "params-is-list": ({"tools": {"f": {"params": ["city"]}}}, "interface.tools.f.params"),
    "param-type-unknown": ({"tools": {"f": {"params": {"city": "str"}}}}, "interface.tools.f.params.city"),
    "param-type-list": ({"tools": {"f": {"params": {"city": ["string"]}}}}, "interface.tools.f.params.city"),
    "param-type-object": ({"tools": {"f": {"params": {"city": {}}}}}, "interface.tools.f.params.city"),
    "required-is-string": ({"tools": {"f": {"params": {"c": "string"}, "required": "c"}}},
                           "interface.tools.f.required"),
    "required-is-int": ({"tools": {"f": {"params": {}, "required": 5}}}, "interface.tools.f.required"),
    "required-not-a-param": ({"tools": {"f": {"params": {}, "required": ["c"]}}}, "interface.tools.f.required"),
    "renames-is-list": ({"tools": {}, "renames": ["forecast"]}, "interface.renames"),
    "rename-to-int": ({"tools": {}, "renames": {"forecast": 5}}, "interface.renames.forecast"),
    "arg-renames-is-list": ({"tools": {}, "arg_renames": []}, "interface.arg_renames"),
    "arg-renames-entry-string": ({"tools": {}, "arg_renames": {"f": "x"}}, "interface.arg_renames.f"),
    "arg-rename-to-null": ({"tools": {}, "arg_renames": {"f": {"a": None}}}, "interface.arg_renames.f.a"),
}


@pytest.mark.parametrize("name", sorted(BAD_INTERFACES))
def test_malformed_interface_is_refused_before_the_barrier(db: str, tmp_path: Path, name: str):
    iface, field = BAD_INTERFACES[name]
    ev = tmp_path / "e.json"
    ev.write_text(json.dumps({"type": "migrate", "roots": ["api-weather-v1"], "interface": iface}))
    before = fingerprint(db)
    _one_error(_run(["repair", "--policy", POLICY, "--store", str(db), "--event", str(ev)]), str(ev), field)
    assert fingerprint(db) == before
    _next_event_succeeds(db, tmp_path)


def test_issue_repro_repair_then_recover(db: str, tmp_path: Path):
    """The issue's repro: once exit 3 and a wedged store; now exit 2, and recover has nothing to do."""
    ev = tmp_path / "e.json"
    ev.write_text('{"type":"migrate","roots":["api-weather-v1"],"interface":{"tools":{"forecast":5}}}')
    _one_error(_run(["repair", "--policy", POLICY, "--store", str(db), "--event", str(ev)]), str(ev),
               "interface.tools.forecast")
    result = _run(["recover", "--store", str(db), "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["recovered"] is False


def _set(path: list, value):
    def mutate(doc):
        art = next(a for a in doc["artifacts"] if a["id"] == path[0])
        target = art
        for key in path[1:-1]:
            target = target[key] if not isinstance(target, list) else target[int(key)]
        target[path[-1]] = value
    return mutate


# Fields only an operator reads later (the issue's list plus their neighbours): artifact, field.
BAD_FIELDS = {
    "summary-sentences-string": (["sum-trips", "meta", "summary_sentences"], "three",
                                 "meta.summary_sentences"),
    "summary-sentences-zero": (["sum-trips", "meta", "summary_sentences"], 0, "meta.summary_sentences"),
    "summary-sentences-huge": (["sum-trips", "meta", "summary_sentences"], 10**9, "meta.summary_sentences"),
    "neural-dim-string": (["neural-prefs", "content", "dim"], "x", "content.dim"),
    "neural-dim-negative": (["neural-prefs", "content", "dim"], -5, "content.dim"),
    "neural-dim-1e8": (["neural-prefs", "content", "dim"], 10**8, "content.dim"),
    "neural-weights-short": (["neural-prefs", "content", "weights"], [[0.0]], "content.weights"),
    "trajectory-args-string": (["traj-paris", "content", "calls", "0", "args"], "x", "content.calls[0].args"),
    "trajectory-tool-int": (["traj-paris", "content", "calls", "0", "tool"], 7, "content.calls[0].tool"),
    "trajectory-calls-object": (["traj-paris", "content", "calls"], {"tool": "x"}, "content.calls"),
    "api-tools-list": (["api-weather-v1", "content", "tools"], ["forecast"], "content.tools"),
    "transform-list": (["cache-paris", "meta", "transform"], ["texts"], "meta.transform"),
    "probes-string": (["prompt-travel", "meta", "probes"], "x", "meta.probes"),
    "chain-goal-object": (["chain-weather", "content", "goal"], {"a": 1}, "content.goal"),
}


@pytest.mark.parametrize("name", sorted(BAD_FIELDS))
def test_import_refuses_fields_operators_cannot_read(db: str, store_at, tmp_path: Path, name: str):
    path, value, field = BAD_FIELDS[name]
    doc = json.loads(json.dumps(STORE_DOC))
    _set(path, value)(doc)
    index = next(k for k, a in enumerate(doc["artifacts"]) if a["id"] == path[0])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc, indent=1))
    fresh = store_at("fresh")
    line = _one_error(_run(["store", "import", "--store", fresh, str(bad)]), str(bad),
                      f"artifacts[{index}].{field}")
    assert repr(path[0]) in line  # names the artifact id
    assert not store_exists(fresh)
    # the same field in a correct event's replacement is refused before the barrier
    if path[0] == "traj-paris":
        rep = dict(next(a for a in doc["artifacts"] if a["id"] == "traj-paris"))
        ev = tmp_path / "e.json"
        ev.write_text(json.dumps({"type": "correct", "roots": ["traj-paris"], "replacements": [rep]}))
        before = fingerprint(db)
        _one_error(_run(["repair", "--policy", POLICY, "--store", str(db), "--event", str(ev)]), str(ev),
                   f"replacements[0].{field}")
        assert fingerprint(db) == before


def test_param_types_match_the_sandbox_oracle():
    from memsteward.repair.oracles import JSON_TYPES

    assert set(PARAM_TYPES) == set(JSON_TYPES)


def _legacy_store(path: str, mutate) -> None:
    """A store as an older memsteward wrote it: import without the content/meta schemas."""
    doc = json.loads(json.dumps(STORE_DOC))
    mutate(doc)
    arts = {a["id"]: Artifact(a["id"], a["kind"], a.get("arch"), 1, a.get("content"), a.get("meta", {}))
            for a in doc["artifacts"]}
    store = Store.open(str(path), create=True)
    store.import_snapshot(Snapshot(arts, parse_store_document(STORE_DOC, "x").edges))
    store.close()


def test_legacy_bad_field_is_refused_before_anything_is_withdrawn(store_at, tmp_path: Path):
    db = store_at("legacy")
    _legacy_store(db, _set(["neural-prefs", "content", "dim"], 10**8))
    ev = tmp_path / "e.json"
    ev.write_text('{"type": "delete", "roots": ["p2"]}')  # neural-prefs is in C(p2)
    before = fingerprint(db)
    line = _one_error(_run(["repair", "--policy", str(ROOT / "policies" / "assistant.yaml"), "--store", str(db),
                            "--event", str(ev)]), str(db), "neural-prefs.content.dim")
    assert "neural-prefs" in line
    assert fingerprint(db) == before
    # an event whose plan does not touch the bad artifact still runs
    _next_event_succeeds(db, tmp_path)


def test_recover_completes_an_event_wedged_by_an_older_version(db: str, tmp_path: Path):
    """An older memsteward let a malformed κ_e through to the barrier (exit 3, recover exit 3, the
    cascade withdrawn for good). Re-create that state through the store API; recover completes it."""
    store = Store.open(str(db))
    policy = load_policy_source(POLICY).policy
    event = Event("migrate", ("api-weather-v1",), interfaces={"api-weather-v1": {"tools": {"forecast": 5}}})
    plan = compute_plan(policy, store.snapshot(), event)
    store.barrier(BarrierSpec(plan.to_json(), policy_document(policy), root_successors(event, store.snapshot())))
    assert store.unfinished_event() is not None
    final = recover(store)
    assert final is not None and final.status == "done"
    assert store.unfinished_event() is None
    by_id = {s.id: s for s in final.executed}
    failed = [i for i, s in by_id.items() if s.status == "failed"]
    assert failed, by_id  # the chains rewritten to the malformed interface fail, with the reason
    assert all(by_id[i].reports for i in failed)
    served = {a.id for a in store.serve()}
    assert not served & set(failed)  # failures stay withdrawn (G5)
    store.close()
    _next_event_succeeds(db, tmp_path)


class Exploding:
    """A registered operator with a bug: it raises something that is not an OperatorError."""

    name = "regen:exploding"

    def check(self, artifact):
        return None

    def __call__(self, artifact, ctx):
        raise ZeroDivisionError("boom \x1b[31m")


def test_unexpected_operator_exception_fails_only_its_candidate(db: str):
    store = Store.open(str(db))
    policy = load_policy_source(POLICY).policy
    ops = default_operators()
    ops.register("regen", Exploding(), kind="summary")
    event = parse_event({"type": "delete", "roots": ["traj-paris"]}, store.snapshot())
    plan = run_event(store, policy, event, operators=ops)
    assert plan.status == "done" and store.unfinished_event() is None
    by_id = {s.id: s for s in plan.executed}
    summaries = [i for i in by_id if store.get(i).kind == "summary"]
    assert summaries and all(by_id[i].status in ("failed", "blocked") for i in summaries)
    detail = by_id["sum-trips"].reports[0]["detail"]  # sum-weekly needs it, so is blocked
    assert "ZeroDivisionError: boom" in detail and "\x1b" not in detail  # escaped for terminals
    others = [i for i, s in by_id.items() if i not in summaries and s.status == "republished"]
    assert others  # the rest of the event proceeded
    assert not {a.id for a in store.serve()} & set(summaries)


def test_neural_dim_bound_keeps_retraining_small():
    """The schema's dim bound is what keeps ``param`` bounded: a model at the bound validates."""
    from memsteward.repair.schemas import MAX_DIM, neural_problem

    small = neural.train([("a b", "x"), ("c d", "y")], dim=8)
    assert neural_problem(small) is None
    assert neural_problem(dict(small, dim=MAX_DIM + 1))[0] == "content.dim"
    assert neural_problem(dict(small, dim=9))[0] == "content.weights"


def test_event_values_beyond_bounds_are_bad_input(db: str, tmp_path: Path):
    cases = {
        "1e400": ('{"type": "delete", "roots": ["p1"], "x": 1e400}', None),
        "surrogate-root": ('{"type": "delete", "roots": ["\\ud800"]}', None),
        "big-int": ('{"type": "correct", "roots": ["p1"], "replacements": [{"id": "p1", "kind": "record", '
                    '"content": {"n": 99999999999999999999999}}]}', None),
    }
    for name, (text, _) in cases.items():
        ev = tmp_path / f"{name}.json"
        ev.write_text(text)
        before = fingerprint(db)
        result = _run(["repair", "--policy", POLICY, "--store", str(db), "--event", str(ev)])
        assert result.exit_code == 2 and "Traceback" not in result.output, (name, result.output)
        assert fingerprint(db) == before
    with pytest.raises(InputError):
        parse_store_document({"artifacts": [{"id": "a", "kind": "record", "version": 2**63}]}, "x")
