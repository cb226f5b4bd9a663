"""Executors (issue 10 part 2): sequential, a local pool and Ray run the same transition plan to the
same result, respect E^req, refuse bad executor values before anything changes, and a worker
that dies mid-task leaves the event recoverable (G5 unchanged).

Ray is real: one local instance per session, ``ray.init(num_cpus=2)`` (never skipped: `make test`
installs it through the ``test`` extra).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from test_repair_pipeline import policy as repair_policy
from test_repair_pipeline import scenarios as repair_scenarios

from memsteward.errors import InputError
from memsteward.repair.artifacts import SERVABLE_STATES, parse_store_document
from memsteward.repair.auditchain import first_broken
from memsteward.repair.events import parse_event
from memsteward.repair.execute import recover, run_event
from memsteward.repair.executors import MAX_WORKERS, LocalPool, RayExecutor, Sequential, WorkerLost, parse_executor
from memsteward.repair.metrics import plan_metrics
from memsteward.repair.operators import (
    OperatorError,
    ParamRetrain,
    RegenText,
    RepairContext,
    Successor,
    default_operators,
)
from memsteward.store import Store


def _store(tmp: Path, name: str, doc: dict) -> Store:
    store = Store.open(str(tmp / f"{name}.db"), create=True)
    store.import_snapshot(parse_store_document(doc, "<test>"))
    return store


def _outcome(store: Store, plan) -> dict:
    """What must not depend on the executor: the final plan, states, versions, metrics, a valid chain."""
    doc = plan.to_json()
    served = {a.id: a.version for a in store.serve()}
    versions = {i: [(v, store.version_of(i, v).content) for v, _, _ in store.versions(i)] for i in store.states()}
    return {"plan": doc, "states": store.states(), "versions": versions,
            "metrics": plan_metrics(plan, served),
            "chain_broken_at": first_broken(store.audit_rows(), store.audit_head())}


EXECUTORS = {"sequential": Sequential(), "pool": LocalPool(3), "ray": RayExecutor(3)}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(scenario=repair_scenarios())
def test_sequential_pool_and_ray_give_identical_results(ray_cluster, tmp_path_factory, scenario):
    doc, event_doc, selector = scenario
    tmp = tmp_path_factory.mktemp("exec")
    outcomes = {}
    for name, executor in EXECUTORS.items():
        store = _store(tmp, name, doc)
        try:
            plan = run_event(store, repair_policy(), parse_event(event_doc, store), selector, "networkx",
                             executor=executor)
            outcomes[name] = _outcome(store, plan)
        finally:
            store.close()
    assert outcomes["sequential"]["chain_broken_at"] is None
    assert outcomes["pool"] == outcomes["sequential"]
    assert outcomes["ray"] == outcomes["sequential"]


# ------------------------------------------------------------------------------ E^req and processes


def _chain_store(n: int = 6) -> dict:
    """r0 → s0 → s1 → … (each summary a prerequisite of the next) plus a neural skill on r0."""
    arts = [{"id": "r0", "kind": "record", "content": {"text": "Alice likes tea. Bob likes jazz.", "label": "a"}},
            {"id": "r1", "kind": "record", "content": {"text": "Carol likes rain.", "label": "b"}}]
    edges = []
    prev = "r0"
    for k in range(n):
        arts.append({"id": f"s{k}", "kind": "summary", "content": "old summary.", "meta": {}})
        edges += [{"src": prev, "dst": f"s{k}", "type": "influence"}, {"src": "r1", "dst": f"s{k}", "type": "influence"}]
        prev = f"s{k}"
    from memsteward.repair import neural
    arts.append({"id": "n0", "kind": "skill", "arch": "neural", "content": neural.train([("seed", "a")])})
    edges += [{"src": "r0", "dst": "n0", "type": "influence"}, {"src": "r1", "dst": "n0", "type": "influence"}]
    return {"artifacts": arts, "edges": edges}


class PidRegen:
    """regen that records which process built the successor and which prerequisites it saw."""

    name = "regen:pid"

    def check(self, artifact):
        return None

    def __call__(self, artifact, ctx: RepairContext) -> Successor:
        built = RegenText()(artifact, ctx)
        return Successor(built.content, {"pid": os.getpid(), "seen": sorted(f"{a.id}@{a.state}" for a in ctx.inputs)})


class PidParam:
    """param that records the process that retrained (must be a pool process, not this one)."""

    name = "param:pid"

    def check(self, artifact):
        return None

    def __call__(self, artifact, ctx: RepairContext) -> Successor:
        return Successor(ParamRetrain()(artifact, ctx).content, {"pid": os.getpid()})


def _pid_operators():
    ops = default_operators()
    ops.register("regen", PidRegen())
    ops.register("param", PidParam())
    return ops


def test_pool_runs_successors_after_their_prerequisites_and_param_in_processes(tmp_path):
    store = _store(tmp_path, "p", _chain_store())
    event = parse_event({"type": "delete", "roots": ["r1"]}, store)
    plan = run_event(store, repair_policy(), event, "repair_all", "networkx", operators=_pid_operators(),
                     executor="pool:4")
    assert set(plan.republished) == {f"s{k}" for k in range(6)} | {"n0"}
    for k in range(1, 6):  # each successor was built from its prerequisite's *staged* successor
        assert f"s{k - 1}@staged" in store.get(f"s{k}").meta["seen"]
    assert store.get("s3").meta["pid"] == os.getpid()       # I/O-bound: a thread of this process
    assert store.get("n0").meta["pid"] != os.getpid()       # CPU-bound param: a pool process
    assert first_broken(store.audit_rows(), store.audit_head()) is None
    store.close()


# ------------------------------------------------------------------------------ a worker dies


class KillerParam:
    """param whose worker process dies (SIGKILL) mid-task, unless it runs in the coordinator."""

    name = "param:killer"

    def __init__(self, coordinator: int) -> None:
        self.coordinator = coordinator

    def check(self, artifact):
        return None

    def __call__(self, artifact, ctx):
        if os.getpid() != self.coordinator:
            os.kill(os.getpid(), signal.SIGKILL)
        raise OperatorError("unreachable")


def _servable_of_cascade(store: Store, plan_doc: dict) -> set[str]:
    states = store.states()
    return {i for i in plan_doc["cascade"] if states[i][0] in SERVABLE_STATES}


@pytest.mark.parametrize("executor", ["pool:2", "ray:2"])
def test_a_worker_killed_mid_task_leaves_the_event_recoverable(ray_cluster, tmp_path, executor):
    doc = _chain_store(3)
    ref = _store(tmp_path, "ref", doc)
    store = _store(tmp_path, "killed", doc)
    event_doc = {"type": "delete", "roots": ["r1"]}
    expected = run_event(ref, repair_policy(), parse_event(event_doc, ref), "repair_all", "networkx")
    ops = default_operators()
    ops.register("param", KillerParam(os.getpid()))
    with pytest.raises(WorkerLost, match="recover"):
        run_event(store, repair_policy(), parse_event(event_doc, store), "repair_all", "networkx",
                  operators=ops, executor=executor)
    pending = store.unfinished_event()
    assert pending is not None  # a crash: nothing published
    assert _servable_of_cascade(store, pending[3]) == set()  # G5: its cascade stays withdrawn
    assert store.steps(pending[0])["n0"][0] in ("pending", "staged")
    store.close()
    store = Store.open(str(tmp_path / "killed.db"))  # like a restarted process: recover finishes it
    plan = recover(store, executor=executor)
    assert plan is not None and plan.republished == expected.republished
    assert store.states() == ref.states()
    assert first_broken(store.audit_rows(), store.audit_head()) is None
    store.close()
    ref.close()


# ------------------------------------------------------------------------------ bad executor values


@pytest.mark.parametrize("text", ["pool:0", f"pool:{MAX_WORKERS + 1}", "pool:x", "pool:-1", "pool:", "threads",
                                  "sequential:2", "ray://host", "ray://h:1:2:3", "ray:1e3", "pool:" + "9" * 400])
def test_bad_executor_values_are_refused(text):
    with pytest.raises(InputError, match="executor|worker count"):
        parse_executor(text)


def test_executor_values_parse():
    assert parse_executor("pool:7") == LocalPool(7)
    assert parse_executor("ray") == RayExecutor()
    assert parse_executor("ray://10.0.0.1:10001:8") == RayExecutor(8, "ray://10.0.0.1:10001")
    assert parse_executor("sequential") == Sequential()


def _cli_files(tmp_path: Path) -> tuple[str, str]:
    store = _store(tmp_path, "cli", _chain_store(2))
    store.close()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"type": "delete", "roots": ["r1"]}))
    return str(tmp_path / "cli.db"), str(event)


@pytest.mark.parametrize("executor,message", [("pool:0", "worker count"), ("pool:300", "worker count"),
                                              ("ray://127.0.0.1:1", "cannot reach the Ray cluster"),
                                              ("gpu", "unknown executor")])
def test_cli_bad_executor_exits_2_and_changes_nothing(tmp_path, executor, message):
    from memsteward.cli import main

    store_path, event_path = _cli_files(tmp_path)
    before = Store.open(store_path).dump_state()
    for args in (["repair", "--policy", "policies/default.yaml", "--store", store_path, "--event", event_path],
                 ["recover", "--store", store_path]):
        result = CliRunner().invoke(main, [*args, "--executor", executor])
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.output
        assert Store.open(store_path).dump_state() == before
    ok = CliRunner().invoke(main, ["repair", "--policy", "policies/default.yaml", "--store", store_path,
                                   "--event", event_path, "--executor", "pool:2", "--json"])
    assert ok.exit_code == 0, ok.output  # the next valid event succeeds


# ------------------------------------------------------------------------------ coordinator and threads


def _fan_store(chains: int, length: int) -> dict:
    """``chains`` prerequisite chains c{k}_0 → c{k}_1 → … over one record (wide and deep)."""
    arts = [{"id": "r0", "kind": "record", "content": {"text": "Alice likes tea. Bob likes jazz.", "label": "a"}}]
    edges = []
    for k in range(chains):
        for j in range(length):
            ident = f"c{k:02d}_{j}"
            arts.append({"id": ident, "kind": "summary", "content": "old summary.", "meta": {}})
            edges.append({"src": "r0", "dst": ident, "type": "influence"})
            if j:
                edges.append({"src": f"c{k:02d}_{j - 1}", "dst": ident, "type": "influence"})
    return {"artifacts": arts, "edges": edges}


def test_coordinator_records_blocked_steps_while_threads_stage(tmp_path):
    """Half the chains fail at their head, so the coordinator records their blocked dependents
    while worker threads are staging and validating the other chains on the same connection:
    every write lands in its own transaction, and the result is the sequential run's."""
    from memsteward.repair.oracles import ORACLES, Report

    heads = {f"c{k:02d}_0" for k in range(0, 16, 2)}

    def reject_heads(name, fn):
        return lambda spec, x: Report(name, False, "rejected") if x.artifact.id in heads else fn(spec, x)
    oracles = {name: reject_heads(name, fn) for name, fn in ORACLES.items()}
    event_doc = {"type": "correct", "roots": ["r0"], "replacements": [
        {"id": "r0", "kind": "record", "content": {"text": "Alice likes green tea. Bob likes jazz.", "label": "a"}}]}
    outcomes = {}
    for name in ("sequential", "pool:8"):
        store = _store(tmp_path, name.replace(":", "-"), _fan_store(16, 4))
        plan = run_event(store, repair_policy(), parse_event(event_doc, store), "repair_all", "networkx",
                         oracles=oracles, executor=name)
        outcomes[name] = _outcome(store, plan)
        store.close()
    statuses = [s["status"] for s in outcomes["sequential"]["plan"]["executed"]]
    assert statuses.count("blocked") == 24 and statuses.count("republished") == 32
    assert outcomes["pool:8"] == outcomes["sequential"]
