"""G5 barrier isolation on the real store (SQLite file and PostgreSQL schema), as a Hypothesis state machine.

The machine drives a store on each backend through random events (delete / correct / migrate),
validation failures, crashes (an exception thrown out of the engine mid-event — after n oracle
calls, or at the n-th store checkpoint, inside or after a transaction — after which the store is
reopened from disk like a restarted process), recoveries and restarts; choices are weighted so
that crashes, rejections and publications are common, and inapplicable rules are filtered by
@precondition. After every step it checks G5 (memsteward.specs.catalog): an artifact of any
event's cascade is servable only as a successor that event validated and published after all its
prerequisites; while an event is unfinished nothing of its cascade is servable; erased roots never
are; rejected successors never are — and that every version of every deleted root is erased and
the audit chain verifies. Seeded mutations of the engine are each caught by the same machine.

Agent writers interleave with all of it (the write rule, ``memsteward.store.live``): between events,
while an event is unfinished (after a crash), and in the middle of an event — between its barrier,
staging and publication transactions, from a second connection while the oracles run. A write
naming a non-servable input must be fenced, a rewrite of an id the running event holds must be
``busy``; no acknowledged write may have read a withdrawn input, and none is lost (its version keeps
its content unless a later event erased it).

Events and recoveries run sequentially or with several workers whose staging interleaves
(:class:`Interleaved`: each candidate's work runs in its own thread and parks before every store
write, ``stage`` and ``record_step``; the machine draws which parked worker writes next), so the
states G5 is checked in include several successors staged at once by different workers, and
crashes that strike one worker while others are parked mid-task (the whole "process" dies).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from test_repair_pipeline import WORDS, policy, stores

from memsteward.errors import InputError, WriteRefused
from memsteward.repair import execute as execute_mod
from memsteward.repair.artifacts import SERVABLE_STATES, parse_store_document
from memsteward.repair.auditchain import first_broken
from memsteward.repair.events import parse_event
from memsteward.repair.execute import recover, run_event
from memsteward.repair.executors import Shared
from memsteward.repair.oracles import ORACLES, Report
from memsteward.shred.vault import Shredded
from memsteward.store import Store

# A real file-backed store; on tmpfs when the machine has one (fsync-heavy, the disk is shared).
_TMP = "/dev/shm" if Path("/dev/shm").is_dir() else None

SETTINGS = settings(max_examples=40, stateful_step_count=14, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
PG_EXAMPLES = 12  # PostgreSQL: each example is a fresh schema on the server (the thresholds scale with it)


class SimulatedCrash(BaseException):
    """Thrown out of the engine mid-event: the process 'dies' with whatever was committed."""


GATED = ("stage", "record_step")  # the writes a worker makes into the shared store


class _Worker(threading.Thread):
    def __init__(self, session: _InterleavedSession, key: str, task: Any) -> None:
        super().__init__(daemon=True)
        self.session, self.key, self.task = session, key, task
        self.parked = False  # waiting at a gate for its turn
        self.go = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self.finished = False
        self.staged = False

    def gate(self) -> None:
        cv = self.session.cv
        with cv:
            self.parked = True
            cv.notify_all()
        self.go.wait()
        self.go.clear()
        if self.session.aborted:
            raise SimulatedCrash()  # the process died while this worker waited

    def run(self) -> None:
        sh = self.session.shared
        try:
            self.result = sh.fn(_GatedStore(self.session.store, self), sh.payload, self.task)
        except BaseException as exc:  # noqa: BLE001 — reported to the coordinator
            self.error = exc
        with self.session.cv:
            self.finished = True
            self.session.cv.notify_all()


class _GatedStore:
    """The worker's view of the shared store: parks before each write until the machine picks it."""

    def __init__(self, store: Any, worker: _Worker) -> None:
        self._store, self._worker = store, worker

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        if name not in GATED:
            return value

        def gated(*args: Any, **kwargs: Any) -> Any:
            self._worker.gate()
            out = value(*args, **kwargs)
            self._worker.staged = name == "stage"  # holds a staged, not yet recorded, successor
            return out
        return gated


class _InterleavedSession:
    def __init__(self, shared: Shared, workers: int, draw) -> None:
        self.shared, self.capacity, self.draw = shared, workers, draw
        self.store = shared.store  # the coordinator's Serialized store: one lock for it and the workers
        self.cv = threading.Condition()
        self.workers: list[_Worker] = []
        self.aborted = False

    def submit(self, key: str, mode: str, task: Any) -> None:
        w = _Worker(self, key, task)
        self.workers.append(w)
        w.start()

    def _quiescent(self) -> list[_Worker]:
        with self.cv:
            self.cv.wait_for(lambda: all(w.parked or w.finished for w in self.workers))
            return sorted(self.workers, key=lambda w: w.key)

    def next_done(self) -> tuple[str, Any]:
        while True:
            live = self._quiescent()
            pick = live[self.draw(st.integers(0, len(live) - 1), label="next worker to write")]
            if pick.finished:
                self.workers.remove(pick)
                if pick.error is not None:
                    raise pick.error
                return pick.key, pick.result
            _count("writes while another worker holds a staged successor",
                   any(w.staged and not w.finished for w in live if w is not pick))
            with self.cv:
                pick.parked = False
            pick.go.set()
            with self.cv:
                self.cv.wait_for(lambda: pick.parked or pick.finished)  # noqa: B023
            if pick.finished and isinstance(pick.error, SimulatedCrash):
                _count("crashes with other workers mid-task", len(self.workers) > 1)
                raise pick.error  # the process dies: no other worker writes again

    def close(self) -> None:
        self.aborted = True
        for w in self.workers:
            w.go.set()
        for w in self.workers:
            w.join()
        self.workers.clear()


class Interleaved:
    """Several workers at once, their store writes in an order the machine draws."""

    name = "interleaved"

    def __init__(self, workers: int, draw) -> None:
        self.workers, self._draw = workers, draw

    def open(self, shared: Shared) -> _InterleavedSession:
        return _InterleavedSession(shared, self.workers, self._draw)


@st.composite
def wide_stores(draw):
    """A store whose derived artifacts mostly hang off the few records directly: wide cascades with
    many candidates that are not each other's prerequisites (room for workers to stage at once)."""
    n_rec = draw(st.integers(1, 3))
    arts = [{"id": f"r{k}", "kind": "record",
             "content": {"text": f"{WORDS[k]} fact {k}. {WORDS[k + 3]} too.", "label": "ab"[k % 2]}}
            for k in range(n_rec)]
    edges = []
    for k in range(draw(st.integers(2, 8))):
        ident = f"d{k}"
        shape = draw(st.sampled_from(["summary", "summary", "cache", "prompt", "chain"]))
        art = {"id": ident, "kind": "skill" if shape in ("prompt", "chain") else shape, "content": "derived text.",
               "meta": {"transform": "texts", "age_days": 0} if shape == "cache" else {}}
        if shape in ("prompt", "chain"):
            art["arch"] = shape
        if shape == "chain":
            art["content"] = {"goal": "g", "calls": [{"tool": "t", "args": {}}]}
        arts.append(art)
        pool = [f"r{j}" for j in range(n_rec)] + ([f"d{k - 1}"] if k and draw(st.integers(0, 4)) == 0 else [])
        for p in sorted(set(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2)))):
            edges.append({"src": p, "dst": ident, "type": "influence"})
    return {"artifacts": arts, "edges": edges}


def _executor(data):
    workers = data.draw(st.sampled_from([1, 2, 3, 4]), label="workers")
    return None if workers == 1 else Interleaved(workers, data.draw)


# What the machine exercised, summed over a run (bench/g5_machine.py reports it in RESULTS.md).
STATS: dict[str, int] = {}


def _count(key: str, n: int = 1) -> None:
    STATS[key] = STATS.get(key, 0) + n


class BarrierMachine(RuleBasedStateMachine):
    """Rules draw their choices so that crashes (about half of the events), rejected successors and
    republications are common, not luck; rules that do not apply are filtered by @precondition."""

    locate = None  # a test sets it to a callable giving a fresh store location (a PostgreSQL schema URL)

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="memsteward-g5-", dir=_TMP))
        self.path = str(self.dir / "store.db") if self.locate is None else type(self).locate()
        self.store: Store | None = None
        self.rejected: dict[int, set[str]] = {}  # event id → successors the oracles rejected
        self.acked: dict[tuple[str, int], tuple[str, int]] = {}  # (id, version) → (content, last event id then)
        self.writes = 0

    def teardown(self) -> None:
        if self.store is not None:
            ev = self.store.event()
            for k in range(1, (ev["id"] + 1) if ev else 1):
                e = self.store.event(k)
                _count("publications", e["status"] == "done")
                for step in e["plan"].get("executed", []):
                    _count(f"steps {step['status']}")
            self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @initialize(doc=st.one_of(stores(), wide_stores(), wide_stores(), wide_stores()))
    def load(self, doc) -> None:
        self.store = Store.open(self.path, create=True)
        self.store.import_snapshot(parse_store_document(doc, "<machine>"))
        _count("machines")

    def _live(self) -> list[str]:
        return sorted(i for i, (st_, _) in self.store.states().items() if st_ != "erased")

    # ------------------------------------------------------------------ steps

    @precondition(lambda self: self.store.unfinished_event() is None and self._live())
    @rule(data=st.data())
    def event(self, data) -> None:
        if data.draw(st.integers(0, 4), label="restart first") == 0:
            self._restart()
            _count("restarts between events")
        snap = self.store.snapshot()
        live = self._live()
        records = [i for i in live if snap.artifacts[i].kind == "record"]
        pick_from = records if records and data.draw(st.booleans(), label="roots among records") else live
        roots = sorted(set(data.draw(st.lists(st.sampled_from(pick_from), min_size=1, max_size=2), label="roots")))
        etype = data.draw(st.sampled_from(["delete", "correct", "migrate"]), label="type")
        doc = {"type": etype, "roots": roots}
        if etype == "correct":
            doc["replacements"] = [{"id": r, "kind": snap.artifacts[r].kind,
                                    **({"arch": snap.artifacts[r].arch} if snap.artifacts[r].arch else {}),
                                    "content": {"text": f"corrected fact {len(self.rejected)}.", "label": "a"}
                                    if snap.artifacts[r].kind == "record" else snap.artifacts[r].content,
                                    "meta": dict(snap.artifacts[r].meta)} for r in roots]
        if etype == "migrate":
            doc["interface"] = {r: {"tools": {"t": {"params": {}}}} for r in roots}
        derived = [i for i in live if i not in roots]
        reject = data.draw(st.sets(st.sampled_from(derived), max_size=2) if derived else st.just(set()),
                           label="oracles reject")
        # crashes in about half of the events: after n oracle calls, or at the n-th store checkpoint
        # (inside or after a transaction of the barrier, a staging step or the publication)
        crash = data.draw(st.sampled_from([None, None, "validation", "checkpoint", "checkpoint"]), label="crash")
        crash_after = data.draw(st.integers(0, 3), label="after n validations") if crash == "validation" else None
        if crash == "checkpoint":
            self._crash_at_checkpoint(data.draw(st.integers(1, 12), label="at checkpoint"))
        next_id = (self.store.event()["id"] + 1) if self.store.event() else 1
        self.rejected[next_id] = set(reject)
        _count("events")
        executor = _executor(data)
        _count("events with interleaved workers", executor is not None)
        selector = data.draw(st.sampled_from(["mincut", "mincut", "repair_all"]), label="selector")
        if data.draw(st.booleans(), label="agent writes mid-event"):
            self._write_at_commits(self._writer(data))
        try:
            run_event(self.store, policy(), parse_event(doc, snap), selector, "networkx",
                      oracles=_oracles(reject, crash_after), executor=executor)
        except SimulatedCrash:
            _count("crashes mid-event")
            self._restart()
        except InputError:
            _count("events refused (bad input)")  # nothing may have changed (checked by the invariants)

    @precondition(lambda self: self.store is not None and self.store.unfinished_event() is None)
    @rule(data=st.data())
    def agent_write(self, data) -> None:
        """One agent write between events, checked against the write rule (writes during an event come
        from the commit hook, :meth:`_write_at_commits`; a rule here would only delay recoveries).
        A crash armed for the event may strike the write's own transaction: unacknowledged, restart."""
        try:
            self._write(self.store, data)
        except SimulatedCrash:
            _count("crashes mid-write")
            self._restart()

    def _write_at_commits(self, write: Any) -> None:
        """An agent write from a second connection after every commit of this store (between the
        event's barrier, staging, step and publication transactions), kept for this store object."""
        real, store = self.store.checkpoint, self.store

        def checkpoint() -> None:
            real()
            if not store.conn.in_transaction:
                write()
        self.store.checkpoint = checkpoint

    def _writer(self, data) -> Any:
        """An agent writing from a second connection while the event runs (called by its oracles)."""
        seed = data.draw(st.integers(0, 2**16), label="mid-event writes")

        def write() -> None:
            import random

            other = Store.open(self.path)
            try:
                self._write(other, None, random.Random(seed + self.writes))
            finally:
                other.close()
        return write

    def _write(self, store: Store, data, rng: Any = None) -> None:
        states = store.states()
        ids = sorted(states)
        pick = (lambda xs, label: data.draw(st.sampled_from(xs), label=label)) if data is not None else \
            (lambda xs, label: rng.choice(xs))
        inputs = sorted({pick(ids, "write input") for _ in range(pick([0, 1, 2], "inputs"))}) if ids else []
        self.writes += 1
        ident = pick(ids, "rewritten id") if ids and pick([True, False], "rewrite") else f"w{self.writes}"
        old = store.artifacts_of([ident], content=False).get(ident)
        art = {"id": ident, "kind": old.kind if old else "summary", "content": f"agent note {self.writes}.",
               **({"arch": old.arch} if old is not None and old.arch else {})}
        live = store.unfinished_event()
        held = set(live.plan["barrier"]) if live is not None else set()
        fenced = [i for i in inputs if states[i][0] not in SERVABLE_STATES]
        last = (store.event() or {}).get("id", 0)
        _count("writes tried during an unfinished event", live is not None)
        try:
            got = store.record(art, inputs=inputs, wait=0)
        except WriteRefused as exc:
            own = states.get(ident, ("servable",))[0]
            want = "fenced" if fenced else ("busy" if own in ("withdrawn", "staged") and ident in held
                                             else "not-servable")
            assert exc.reason == want, (exc.reason, want, ident, inputs)
            _count(f"writes refused ({exc.reason})")
            return
        assert not fenced, f"write of {ident} acknowledged although its input {fenced[0]} is {states[fenced[0]][0]}"
        assert not (ident in held and states[ident][0] != "servable"), f"{ident} rewritten while event holds it"
        self.acked[(ident, got.version)] = (art["content"], last)
        _count("writes during an unfinished event" if live is not None else "writes between events")

    @precondition(lambda self: self.store.unfinished_event() is not None)
    @rule(data=st.data())
    def recover_interrupted(self, data) -> None:
        event_id = self.store.unfinished_event()[0]
        recover(self.store, oracles=_oracles(self.rejected.get(event_id, set()), None), executor=_executor(data))
        _count("recoveries")

    @precondition(lambda self: self.store.unfinished_event() is None and not self._live())
    @rule()
    def restart_when_all_is_erased(self) -> None:
        self._restart()  # nothing is left to delete: only a restart remains (the invariants re-run)
        _count("restarts between events")

    def _crash_at_checkpoint(self, n: int) -> None:
        """Fault injection as a wrapper of this store object's checkpoint hook (the crash test's
        MEMSTEWARD_CRASH_AT, in-process): the n-th checkpoint throws the process 'death'."""
        real, seen = self.store.checkpoint, [0]

        def checkpoint() -> None:
            seen[0] += 1
            if seen[0] == n:
                raise SimulatedCrash()
            real()
        self.store.checkpoint = checkpoint

    def _restart(self) -> None:
        self.store.close()
        self.store = Store.open(self.path)

    # ------------------------------------------------------------------ G5, erasure, audit chain

    @invariant()
    def barrier_isolation(self) -> None:
        if self.store is None:
            return
        written = {}
        for (ident, _), (_, last) in self.acked.items():
            written[ident] = max(written.get(ident, 0), last)
        try:
            violation = g5_violation(self.store, self.rejected, written)
        except Shredded as exc:  # a servable artifact whose current version's key a delete destroyed
            violation = f"an erased version is reachable as servable: {exc}"
        assert violation is None, violation

    @invariant()
    def no_acknowledged_write_is_lost(self) -> None:
        if self.store is None:
            return
        for (ident, version), (content, _) in self.acked.items():
            assert any(v == version for v, _, _ in self.store.versions(ident)), \
                f"acknowledged write {ident} v{version} is gone"
            if self.store.is_erased(ident, version):  # a later delete erased it (its key destroyed: unreadable)
                continue
            try:
                art = self.store.version_of(ident, version)
            except Shredded:  # an event died between destroying the keys and publishing: recover completes it
                assert self.store.unfinished_event() is not None, f"{ident} v{version} unreadable, no event in flight"
                continue
            assert art is not None and art.content == content, f"acknowledged write {ident} v{version} lost its content"

    @invariant()
    def every_version_of_a_deleted_root_is_erased(self) -> None:
        if self.store is None:
            return
        ev = self.store.event()
        for k in range(1, (ev["id"] + 1) if ev else 1):
            e = self.store.event(k)
            if e["status"] != "done" or e["event"]["type"] != "delete":
                continue
            for root in e["event"]["roots"]:
                for version, erased, _ in self.store.versions(root):
                    assert erased, f"deleted root {root} v{version} is not marked erased"
                    art = self.store.version_of(root, version)
                    assert art.content is None, f"deleted root {root} still holds content in v{version}"

    @invariant()
    def audit_chain_holds(self) -> None:
        if self.store is None:
            return
        broken = first_broken(self.store.audit_rows(), self.store.audit_head())
        assert broken is None, f"audit chain broken at row {broken}"


def _oracles(reject: set[str], crash_after: int | None, during: Any = None) -> dict:
    """The real oracles, except that ``reject`` fail and the run 'crashes' after n validations;
    ``during`` (an agent's write) runs before each validation, mid-event."""
    calls = [0]

    def wrap(name, fn):
        def oracle(spec, x):
            if during is not None:
                during()
            calls[0] += 1
            if crash_after is not None and calls[0] > crash_after:
                raise SimulatedCrash()
            return Report(name, False, "rejected by the test") if x.artifact.id in reject else fn(spec, x)
        return oracle

    return {name: wrap(name, fn) for name, fn in ORACLES.items()}


def g5_violation(store: Store, rejected: dict[int, set[str]], written: dict[str, int] | None = None) -> str | None:
    """The first G5 violation in the store, or None. ``written``: ids an agent rewrote → the last
    event id when it did (a later version than the event's successor is the agent's, not stale)."""
    states = store.states()
    served = {i for i, (st_, _) in states.items() if st_ in SERVABLE_STATES}
    try:
        servable_ids = {a.id for a in store.serve()}
    except Shredded as exc:  # a servable artifact at a version whose data key a delete destroyed
        return f"serves an erased version: {exc}"
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
        if written and written.get(i, 0) >= e["id"] and e["status"] == "done":
            continue  # rewritten by an agent after the event was published
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


def _machine(store_at) -> type[BarrierMachine]:
    """The machine on the fixture's backend: SQLite keeps its tmpfs file, PostgreSQL a fresh schema per example."""
    if store_at.backend == "sqlite":
        return BarrierMachine
    fresh = iter(range(10**9))
    return type("PgBarrierMachine", (BarrierMachine,), {"locate": staticmethod(lambda: store_at(f"g5-{next(fresh)}"))})


HARD_PATHS = {"crashes mid-event": 10, "recoveries": 5, "publications": 20, "steps failed": 5,
              "events with interleaved workers": 10, "writes tried during an unfinished event": 5,
              "writes refused (fenced)": 5}
"""How often a G5 machine run must exercise each hard path, per 40 examples."""


def _short_of_hard_paths(stats: dict[str, int], examples: int) -> list[str]:
    """The hard paths (:data:`HARD_PATHS`) a run of ``examples`` examples exercised less often than asked."""
    scale = examples / 40
    return [f"{name}: {stats.get(name, 0)} < {n * scale:g}" for name, n in HARD_PATHS.items()
            if stats.get(name, 0) < n * scale]


HARD_PATH_ROUNDS = 3  # a random run short of the hard paths gets up to 2 more rounds of as many examples


@pytest.mark.slow
def test_barrier_isolation_state_machine(store_at):
    STATS.clear()
    examples = SETTINGS.max_examples if store_at.backend == "sqlite" else PG_EXAMPLES
    # the weights make the hard paths common: a run that never crashes, fails or republishes
    # would prove little (typical CI run: see bench/RESULTS.md, "G5 state machine"). Hypothesis draws
    # new examples each run, so a run of 12 (PostgreSQL) fell short of 5 recoveries × 12/40 about once
    # in a few runs: a short run goes on with fresh examples (every one checks the invariants) until
    # the hard paths were exercised as often as asked, for at most HARD_PATH_ROUNDS rounds
    machine = _machine(store_at)  # one for all rounds: on PostgreSQL it numbers its fresh schemas
    for _ in range(HARD_PATH_ROUNDS):
        run_state_machine_as_test(machine, settings=settings(SETTINGS, max_examples=examples))
        if not _short_of_hard_paths(STATS, examples):
            break
    if os.environ.get("MEMSTEWARD_G5_STATS"):  # bench/g5_machine.py reports what a CI run exercised
        Path(os.environ["MEMSTEWARD_G5_STATS"]).write_text(json.dumps(STATS, sort_keys=True))
    # concurrent staging is exercised, not just possible; agent writers interleave with events
    short = _short_of_hard_paths(STATS, examples)
    assert not short, f"{'; '.join(short)} in {HARD_PATH_ROUNDS} rounds of {examples} examples: {STATS}"


def test_short_of_hard_paths_names_each_path_below_its_share():
    full = {"crashes mid-event": 10, "recoveries": 5, "publications": 20, "steps failed": 5,
            "events with interleaved workers": 10, "writes tried during an unfinished event": 5,
            "writes refused (fenced)": 5}
    assert _short_of_hard_paths(full, 40) == []
    assert _short_of_hard_paths({**full, "recoveries": 1}, 12) == ["recoveries: 1 < 1.5"]
    assert _short_of_hard_paths({**full, "recoveries": 4}, 40) == ["recoveries: 4 < 5"]
    assert _short_of_hard_paths({}, 40)[0] == "crashes mid-event: 0 < 10"


WIDE = {"artifacts": [{"id": "r0", "kind": "record", "content": {"text": "tea fact 0. rain too.", "label": "a"}},
                      {"id": "r1", "kind": "record", "content": {"text": "jazz fact 1. bike too.", "label": "b"}}]
        + [{"id": f"d{k}", "kind": "summary", "content": "derived text.", "meta": {}} for k in range(6)],
        "edges": [{"src": "r0", "dst": f"d{k}", "type": "influence"} for k in range(6)]
        + [{"src": "r1", "dst": "d5", "type": "influence"}, {"src": "d0", "dst": "d5", "type": "influence"},
           {"src": "d1", "dst": "d4", "type": "influence"}]}


def test_concurrent_staging_interleavings_keep_g5(tmp_path_factory):
    """Six successors of one correction (two with a prerequisite), three workers whose stage /
    record writes interleave as drawn, oracles rejecting some, the process 'dying' at a drawn
    point: G5 holds in the crashed state and after recovery (with its own interleaving), the
    audit chain verifies, and the result is the sequential run's."""
    STATS.clear()
    given(data=st.data())(settings(SETTINGS, max_examples=40)(
        lambda data: _wide_interleaving(tmp_path_factory, data)))()
    # the point is exercised, not just possible: writes while another worker held a staged
    # successor, and crashes that struck with other workers mid-task
    assert STATS.get("writes while another worker holds a staged successor", 0) >= 20, STATS
    assert STATS.get("crashes with other workers mid-task", 0) >= 5, STATS


def _wide_interleaving(tmp_path_factory, data) -> None:
    tmp = tmp_path_factory.mktemp("g5wide")
    ref, store = Store.open(str(tmp / "ref.db"), create=True), Store.open(str(tmp / "s.db"), create=True)
    for s in (ref, store):
        s.import_snapshot(parse_store_document(WIDE, "<wide>"))
    event = {"type": "correct", "roots": ["r0"], "replacements": [
        {"id": "r0", "kind": "record", "content": {"text": "tea fact 9. rain again.", "label": "a"}}]}
    reject = data.draw(st.sets(st.sampled_from([f"d{k}" for k in range(6)]), max_size=2), label="reject")
    rejected = {1: set(reject)}
    expected = run_event(ref, policy(), parse_event(event, ref), "repair_all", "networkx", oracles=_oracles(reject, None))
    crash_after = data.draw(st.one_of(st.none(), st.integers(0, 5)), label="crash after n validations")
    try:
        run_event(store, policy(), parse_event(event, store), "repair_all", "networkx",
                  oracles=_oracles(reject, crash_after), executor=Interleaved(3, data.draw))
    except SimulatedCrash:
        assert g5_violation(store, rejected) is None
        store.close()
        store = Store.open(str(tmp / "s.db"))
        plan = recover(store, oracles=_oracles(reject, None), executor=Interleaved(3, data.draw))
        assert plan is not None and plan.republished == expected.republished
    assert g5_violation(store, rejected) is None
    assert first_broken(store.audit_rows(), store.audit_head()) is None
    assert store.states() == ref.states()
    store.close()
    ref.close()


# ---------------------------------------------------------------------- mutations


def _publish_before_validation(monkeypatch):
    """Validation results are ignored: every staged successor counts as validated."""
    real = execute_mod.validate
    monkeypatch.setattr(execute_mod, "validate", lambda *a, **k: (True, real(*a, **k)[1]))


def _withdraw_after_repair(monkeypatch):
    """The barrier records the event but withdraws nothing (withdrawal only at publication)."""
    real = Store.barrier

    def barrier(self, spec):
        return real(self, replace(spec, plan={**spec.plan, "barrier": []}))
    monkeypatch.setattr(Store, "barrier", barrier)


def _skip_dependent_of_failure(monkeypatch):
    """A candidate runs even when a prerequisite failed (its successor ignores the failure)."""
    real = execute_mod.resume

    def resume(store, event_id, pol, plan, operators=None, oracles=None, executor=None, progress=None):
        stripped = plan.replace(candidates=tuple(c.__class__(c.id, c.kind, c.arch, c.mode, c.operator, (),
                                                             c.executable, c.value, c.cost, c.reason)
                                                 for c in plan.candidates))
        return real(store, event_id, pol, stripped, operators, oracles, executor, progress)
    monkeypatch.setattr(execute_mod, "resume", resume)


def _write_reads_withdrawn(monkeypatch):
    """Write fencing off: a write may read (and rewrite) a withdrawn or staged artifact."""
    from memsteward.store import writepath

    monkeypatch.setattr(writepath, "SERVABLE_STATES", frozenset(SERVABLE_STATES) | {"withdrawn", "staged"})


@pytest.mark.slow
@pytest.mark.parametrize("mutation", [_publish_before_validation, _withdraw_after_repair, _skip_dependent_of_failure,
                                      _write_reads_withdrawn],
                         ids=["publish-before-validation", "withdraw-after-repair", "skip-dependent-of-failure",
                              "write-reads-withdrawn"])
def test_state_machine_catches_engine_mutation(monkeypatch, mutation):
    mutation(monkeypatch)
    with pytest.raises(AssertionError):
        # generation only: finding the violation is the point, shrinking it would only cost time
        run_state_machine_as_test(BarrierMachine, settings=settings(SETTINGS, max_examples=1000,
                                                                     phases=[Phase.generate]))
