"""G5 barrier isolation on the real SQLite store, as a Hypothesis state machine.

The machine drives a file-backed store through random events (delete / correct / migrate),
validation failures, simulated crashes (an exception thrown out of the engine mid-event, after
which the store is reopened from disk like a restarted process), recoveries and serves. After
every step it checks G5 (memsteward.specs.catalog): an artifact of any event's cascade is servable only as a
successor that event validated and published after all its prerequisites; while an event is
unfinished nothing of its cascade is servable; erased roots never are; rejected successors never
are. Seeded mutations of the engine are each caught by the same machine.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from memsteward.errors import InputError
from memsteward.repair import execute as execute_mod
from memsteward.repair.artifacts import SERVABLE_STATES, parse_store_document
from memsteward.repair.events import parse_event
from memsteward.repair.execute import recover, run_event
from memsteward.repair.oracles import ORACLES, Report
from memsteward.repair.store import Store

from test_repair_pipeline import policy, stores

# A real file-backed store; on tmpfs when the machine has one (fsync-heavy, the disk is shared).
_TMP = "/dev/shm" if Path("/dev/shm").is_dir() else None

SETTINGS = settings(max_examples=40, stateful_step_count=10, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


class SimulatedCrash(BaseException):
    """Thrown out of the engine mid-event: the process 'dies' with whatever was committed."""


class BarrierMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="memsteward-g5-", dir=_TMP))
        self.path = str(self.dir / "store.db")
        self.store: Store | None = None
        self.rejected: dict[int, set[str]] = {}  # event id → successors the oracles rejected

    def teardown(self) -> None:
        if self.store is not None:
            self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @initialize(doc=stores())
    def load(self, doc) -> None:
        self.store = Store.open(self.path, create=True)
        self.store.import_snapshot(parse_store_document(doc, "<machine>"))

    # ------------------------------------------------------------------ steps

    @rule(data=st.data())
    def event(self, data) -> None:
        snap = self.store.snapshot()
        live = sorted(i for i, a in snap.artifacts.items() if a.state != "erased")
        if not live or self.store.unfinished_event() is not None:
            return
        roots = sorted(set(data.draw(st.lists(st.sampled_from(live), min_size=1, max_size=2), label="roots")))
        etype = data.draw(st.sampled_from(["delete", "correct", "migrate"]), label="type")
        doc = {"type": etype, "roots": roots}
        if etype == "correct":
            doc["replacements"] = [{"id": r, "kind": snap.artifacts[r].kind,
                                    **({"arch": snap.artifacts[r].arch} if snap.artifacts[r].arch else {}),
                                    "content": {"text": "corrected fact.", "label": "a"}
                                    if snap.artifacts[r].kind == "record" else snap.artifacts[r].content,
                                    "meta": dict(snap.artifacts[r].meta)} for r in roots]
        if etype == "migrate":
            doc["interface"] = {r: {"tools": {"t": {"params": {}}}} for r in roots}
        reject = data.draw(st.sets(st.sampled_from(live)), label="oracles reject")
        crash_after = data.draw(st.one_of(st.none(), st.integers(0, 2)), label="crash after n validations")
        next_id = (self.store.event()["id"] + 1) if self.store.event() else 1
        self.rejected[next_id] = set(reject)
        try:
            run_event(self.store, policy(), parse_event(doc, snap), "mincut", "networkx",
                      oracles=_oracles(reject, crash_after))
        except SimulatedCrash:
            self._restart()
        except InputError:
            pass  # e.g. an event the store refuses; nothing may have changed (checked by the invariant)

    @rule()
    def recover_interrupted(self) -> None:
        if self.store.unfinished_event() is not None:
            event_id = self.store.unfinished_event()[0]
            recover(self.store, oracles=_oracles(self.rejected.get(event_id, set()), None))

    @rule()
    def crash_and_restart(self) -> None:
        self._restart()

    def _restart(self) -> None:
        self.store.close()
        self.store = Store.open(self.path)

    # ------------------------------------------------------------------ G5

    @invariant()
    def barrier_isolation(self) -> None:
        if self.store is None:
            return
        violation = g5_violation(self.store, self.rejected)
        assert violation is None, violation


def _oracles(reject: set[str], crash_after: int | None) -> dict:
    """The real oracles, except that ``reject`` fail and the run 'crashes' after n validations."""
    calls = [0]

    def wrap(name, fn):
        def oracle(spec, x):
            calls[0] += 1
            if crash_after is not None and calls[0] > crash_after:
                raise SimulatedCrash()
            return Report(name, False, "rejected by the test") if x.artifact.id in reject else fn(spec, x)
        return oracle

    return {name: wrap(name, fn) for name, fn in ORACLES.items()}


def g5_violation(store: Store, rejected: dict[int, set[str]]) -> str | None:
    """The first G5 violation in the store, or None."""
    states = store.states()
    served = {i for i, (st_, _) in states.items() if st_ in SERVABLE_STATES}
    servable_ids = {a.id for a in store.serve()}
    if servable_ids != served:
        return f"serve() returned {sorted(servable_ids ^ served)} inconsistently with the states"
    last_event: dict[str, dict] = {}
    ev = store.event()
    events = [store.event(k) for k in range(1, ev["id"] + 1)] if ev else []
    for e in events:
        for i in e["plan"]["cascade"]:
            last_event[i] = e
    for i in sorted(served):
        e = last_event.get(i)
        if e is None:
            continue  # never affected by an event
        if e["status"] != "done":
            return f"{i} is servable while event {e['id']} (whose cascade holds it) is unfinished"
        plan = e["plan"]
        if i in e["event"]["roots"]:
            if plan.get("roots", {}).get(i) == "erased":
                return f"erased root {i} is servable"
            if store.get(i).version <= plan["base_versions"][i]:
                return f"root {i} is served at its invalidated version"
            continue
        steps = {s["id"]: s for s in plan.get("executed", [])}
        step = steps.get(i)
        if step is None or step["status"] not in ("validated", "republished"):
            return f"{i} of event {e['id']}'s cascade is servable without a validated successor"
        if i in rejected.get(e["id"], set()):
            return f"{i} was rejected by its oracle but is servable"
        (_, version_now) = states[i]
        if step["version"] != version_now:
            return f"{i} is served at v{version_now}, not its validated successor v{step['version']}"
        for j, k in plan["requirements"]:
            if k == i and steps.get(j, {}).get("status") not in ("validated", "republished"):
                return f"{i} is servable but its prerequisite {j} was not republished"
    return None


@pytest.mark.slow
def test_barrier_isolation_state_machine():
    run_state_machine_as_test(BarrierMachine, settings=SETTINGS)


# ---------------------------------------------------------------------- mutations


def _publish_before_validation(monkeypatch):
    """Validation results are ignored: every staged successor counts as validated."""
    real = execute_mod.validate
    monkeypatch.setattr(execute_mod, "validate", lambda *a, **k: (True, real(*a, **k)[1]))


def _withdraw_after_repair(monkeypatch):
    """The barrier records the event but withdraws nothing (withdrawal only at publication)."""
    real = Store.barrier

    def barrier(self, plan_doc, policy_doc, staged_roots, generation=None):
        return real(self, {**plan_doc, "barrier": []}, policy_doc, staged_roots, generation)
    monkeypatch.setattr(Store, "barrier", barrier)


def _skip_dependent_of_failure(monkeypatch):
    """A candidate runs even when a prerequisite failed (its successor ignores the failure)."""
    real = execute_mod.resume

    def resume(store, event_id, pol, plan, operators=None, oracles=None):
        stripped = plan.replace(candidates=tuple(c.__class__(c.id, c.kind, c.arch, c.mode, c.operator, (),
                                                             c.executable, c.value, c.cost, c.reason)
                                                 for c in plan.candidates))
        return real(store, event_id, pol, stripped, operators, oracles)
    monkeypatch.setattr(execute_mod, "resume", resume)


@pytest.mark.slow
@pytest.mark.parametrize("mutation", [_publish_before_validation, _withdraw_after_repair, _skip_dependent_of_failure],
                         ids=["publish-before-validation", "withdraw-after-repair", "skip-dependent-of-failure"])
def test_state_machine_catches_engine_mutation(monkeypatch, mutation):
    mutation(monkeypatch)
    with pytest.raises(AssertionError):
        # generation only: finding the violation is the point, shrinking it would only cost time
        run_state_machine_as_test(BarrierMachine, settings=settings(SETTINGS, max_examples=1000,
                                                                     phases=[Phase.generate]))
