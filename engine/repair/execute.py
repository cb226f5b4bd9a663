"""Executing a transition plan: barrier, repair in topological order, validation, publication.

Algorithm 1 line 2 (barrier, one transaction), line 7 (run S_ρ in topological order of
E^req[S_ρ], staging each successor z_i) and line 8 (republish validated successors whose
prerequisites were republished; a failure keeps itself and every dependent withdrawn). Every
step is recorded in the store, so :func:`recover` can roll an interrupted event forward.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import InputError, StoreBusy, StoreError, printable
from ..jsonio import tree_problem
from ..policy.model import Policy
from ..policy.plugins import manifest
from ..store.api import BarrierSpec, OracleReport, Provenance, PublishSpec, RepairLog, StepRecord, StepStatus
from ..store.connection import db_errors
from .artifacts import SERVABLE_STATES, Artifact, Snapshot, artifact_field_problem
from .candidates import REMOVE, Candidate
from .events import Event, with_interfaces
from .executors import Executor, LocalPool, Sequential, Serialized, Shared, executor_from, prepare
from .operators import OperatorError, OperatorRegistry, RepairContext, Successor, operators_for
from .oracles import OracleInput, OracleRegistry, validate
from .plan import StepResult, TransitionPlan, compute_plan, event_scope, paused_gc
from .schemas import interface_problem
from .scope import is_retained, neighbourhood

Progress = Callable[[int, int], None]  # (outcomes recorded, |S_ρ|), after every step's outcome

T = TypeVar("T")
MAX_DETAIL_CHARS = 300
STEP_BATCH = 64  # candidates whose steps one transaction commits (sequential executor: RepairLog.defer_steps)


class StepFailure(Exception):
    """Anything an operator, its context or an oracle raised while running one candidate."""

    def __init__(self, detail: str, stage: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.stage = stage


def guarded(stage: str, fn: Callable[[], T]) -> T:
    """Run one candidate's operator / context / oracle code; any exception it raises (expected
    :class:`OperatorError` or an unexpected bug, an LLM outage, a malformed field the schemas
    missed) becomes a :class:`StepFailure`, so the candidate fails validation, stays withdrawn
    and the event completes (G5). Store errors are not the candidate's fault and propagate."""
    propagate: tuple[type[BaseException], ...] = (*db_errors(), StoreError, StepFailure)
    try:
        return fn()
    except propagate:
        raise
    except OperatorError as exc:
        raise StepFailure(printable(str(exc))[:MAX_DETAIL_CHARS], stage) from None
    except Exception as exc:  # noqa: BLE001 — the point: nothing a candidate does wedges an event
        detail = printable(f"{type(exc).__name__}: {exc}")[:MAX_DETAIL_CHARS]
        raise StepFailure(f"{stage} raised {detail}", stage) from None


def check_inputs(store: RepairLog, plan: TransitionPlan) -> None:
    """Validate before the barrier: the event's Δ and every stored artifact the repair may read
    against the content/meta schemas (:mod:`memsteward.repair.schemas`): the members of C(F) \\ F
    whose mode is not ``remove`` and their influence parents. A removed member is withdrawn and
    never read by any operator (nor are parents only it has): a delete whose cascade is all removed
    reads no stored content here. Raises :class:`InputError`; nothing is withdrawn yet."""
    event = plan.event
    for k, a in enumerate(event.replacements):
        problem = artifact_field_problem(a)
        if problem:
            raise InputError(f"replacement {a.id!r}: {problem[1]}", file="<event>",
                             field=f"replacements[{k}].{problem[0]}")
    for r, iface in event.interfaces.items():
        problem = interface_problem(iface, f"interface.{r}")
        if problem:
            raise InputError(f"migrate interface of {r!r}: {problem[1]}", file="<event>", field=problem[0])
    kept = [i for i in plan.cascade if plan.modes.get(i) != REMOVE]  # an id without a mode is read
    touched = set(kept)
    touched.update(src for src, _ in store.parent_edges(kept))  # indexed: ∝ what is rebuilt
    touched -= set(event.roots)  # a root's stored content is erased or replaced by Δ, never read
    arts = store.artifacts_of(touched)
    for ident in sorted(touched):
        art = arts.get(ident)
        problem = None if art is None or art.state == "erased" else artifact_field_problem(art)
        if problem:
            raise InputError(f"stored artifact {ident!r} has a field no operator can read: {problem[1]} "
                             "(correct it with a `correct` event on a valid store, or re-import)",
                             file=store.path, field=f"{ident}.{problem[0]}")


PLUGINS_KEY = "plugins"  # beside the policy's fields: the plugins it uses, as installed (not a policy field)


def policy_document(policy: Policy) -> dict[str, Any]:
    """The policy as the store records it with an event (its SHA-256 is the audit's policy digest):
    its JSON form and, when it names plugins, each one's name, distribution and version."""
    doc = policy.model_dump(mode="json", by_alias=True)
    plugins = manifest(policy)
    if plugins:
        doc[PLUGINS_KEY] = plugins
    return doc


def policy_of_document(doc: Mapping[str, Any]) -> Policy:
    """The policy of a recorded :func:`policy_document`."""
    return Policy.model_validate({k: v for k, v in doc.items() if k != PLUGINS_KEY})


def root_successors(event: Event, snapshot: Snapshot) -> dict[str, Artifact]:
    """Fresh root versions supplied by Δ: correction replacements X_Δ, migration interfaces κ_e."""
    if event.type == "correct":
        return {a.id: a for a in event.replacements}
    if event.type == "migrate":
        return {r: Artifact(r, snapshot.artifacts[r].kind, snapshot.artifacts[r].arch, content=iface,
                            meta=dict(snapshot.artifacts[r].meta)) for r, iface in event.interfaces.items()}
    return {}


def run_event(store: RepairLog, policy: Policy, event: Event, selector: str = "mincut", backend: str = "networkx",
              operators: OperatorRegistry | None = None, oracles: OracleRegistry | None = None,
              executor: Executor | str | None = None, progress: Progress | None = None) -> TransitionPlan:
    """Plan (pure) and execute one event on a store; ``executor`` runs the candidates' work
    (:mod:`.executors`; None: sequential); ``progress`` as for :func:`resume`.

    Events queue: while another process's event is running (its lease holder alive), this one
    waits, and when its barrier finds the store busy (:class:`~memsteward.errors.StoreBusy`: an
    event started meanwhile, or a write changed the plan's scope) it is planned again — for up to
    ``MEMSTEWARD_WRITE_WAIT`` seconds (default 30). An unfinished event nobody runs (its process
    died) is refused at once: run ``memsteward recover``."""
    from ..store.connection import write_wait

    executor = executor_from(executor)
    operators = operators or operators_for(policy)
    deadline = time.monotonic() + write_wait()
    while True:
        _await_turn(store, deadline)
        generation = store.generation()
        plan = compute_plan(policy, store, event, selector, backend, operators)
        try:
            return execute(store, policy, plan, operators, oracles, generation, executor, progress)
        except StoreBusy:
            if time.monotonic() >= deadline:
                raise


def _await_turn(store: RepairLog, deadline: float) -> None:
    """Return once no event is unfinished; wait while one is being completed by its live holder."""
    while (found := store.unfinished_event()) is not None:
        if not store.event_running(found.id):
            raise InputError("the store has an unfinished event; run `memsteward recover` first", file=store.path)
        if time.monotonic() >= deadline:
            raise StoreBusy(f"event {found.id} is still running (waited MEMSTEWARD_WRITE_WAIT seconds); "
                            "try again later", file=store.path)
        time.sleep(0.05)


def execute(store: RepairLog, policy: Policy, plan: TransitionPlan, operators: OperatorRegistry | None = None,
            oracles: OracleRegistry | None = None, generation: int | None = None,
            executor: Executor | str | None = None, progress: Progress | None = None) -> TransitionPlan:
    """Barrier (one transaction), then :func:`resume`. *No action* changes nothing.

    ``generation`` (from :meth:`RepairLog.generation` when the plan was computed) makes the barrier
    refuse a plan computed from a store another process has changed since. The executor is
    reached (a Ray cluster connected) before the barrier: if it cannot be, nothing is withdrawn.
    """
    executor = executor_from(executor)
    if plan.selector == "no_action":
        return plan.replace(status="done", withdrawn=(), republished=())
    check_inputs(store, plan)
    if executor.name == "ray" and store.locator() is None:
        raise InputError("the ray executor needs a store its workers can open (a SQLite file or "
                         "postgresql://…), not an in-memory store", file=store.path, field="executor")
    prepare(executor)
    event_id = barrier(store, policy, plan, generation, operators)
    return resume(store, event_id, policy, plan, operators, oracles, executor, progress)


def barrier(store: RepairLog, policy: Policy, plan: TransitionPlan, generation: int | None = None,
            operators: OperatorRegistry | None = None) -> int:
    """Alg. 1 line 2, B_ρ ← C(F), as :func:`execute` runs it: the plan handed over column by column
    (:meth:`TransitionPlan.to_columns`: no object per candidate), then :meth:`RepairLog.barrier`'s one
    transaction — with the collector paused throughout (10^5-element lists, nothing cyclic). Agent
    writes since ``generation`` void the plan only if they changed its scope (:func:`scope_unchanged`)."""
    roots = Snapshot(store.artifacts_of(plan.event.roots, content=False), ())  # root_successors reads no content
    with paused_gc():
        return store.barrier(BarrierSpec(plan.to_columns(), policy_document(policy),
                                         root_successors(plan.event, roots), generation,
                                         scope_unchanged(policy, plan, operators), writes_unchanged(policy, plan)))


def scope_unchanged(policy: Policy, plan: TransitionPlan,
                    operators: OperatorRegistry | None = None) -> Callable[[Provenance], bool]:
    """Whether ``plan`` still holds on a store agents wrote to since it was planned: its event's
    scope read again (C(F), grown by untracked copies as planning grows it) has the same members at
    the same versions. A write outside C(F) changes neither; a new version of a member, a new
    derivation from one or a new copy of a root's content does (the barrier refuses, run again)."""
    def unchanged(source: Provenance) -> bool:
        scope = event_scope(policy, source, plan.event, operators)
        if scope.cascade != frozenset(plan.cascade):
            return False
        versions = {i: a.version for i, a in scope.artifacts.items() if i in scope.cascade}
        return versions == {i: plan.base_versions.get(i) for i in scope.cascade}
    return unchanged


def writes_unchanged(policy: Policy, plan: TransitionPlan) -> Callable[[Provenance, Mapping[str, Any], Collection[str]], bool]:
    """Whether agent writes — ``written`` (id → the text of every version it holds) naming ``inputs`` —
    left ``plan``'s scope as :func:`scope_unchanged` last found it, without reading the scope again:
    none of them is a member of C(F) (a new version) or names one as an input (a new derivation), and,
    where planning scans content, none is an untracked copy of a root's content (the scan's test,
    :func:`~memsteward.repair.lineage.untracked`, on exactly these artifacts: planning's candidates
    are a superset it filters with the same test, so a copy planning would find is found here)."""
    cascade, ev, lin = frozenset(plan.cascade), plan.event, policy.lineage
    scans = lin.content_scan and (ev.type == "delete" or (ev.type == "correct" and ev.privacy))

    def unchanged_by(source: Provenance, written: Mapping[str, Any], inputs: Collection[str]) -> bool:
        if not cascade.isdisjoint(written) or not cascade.isdisjoint(inputs):
            return False
        if not scans or not written:
            return True
        from .lineage import untracked

        roots = {r: a.content for r, a in source.artifacts_of(ev.roots).items()}
        return not untracked(roots, sorted(written.items()), lin.shingle_words, lin.min_shared)
    return unchanged_by


def recover(store: RepairLog, operators: OperatorRegistry | None = None,
            oracles: OracleRegistry | None = None, executor: Executor | str | None = None,
            progress: Progress | None = None) -> TransitionPlan | None:
    """Roll an interrupted event forward from its recorded plan and steps (None: nothing to do)."""
    executor = executor_from(executor)
    getattr(executor, "check", lambda: None)()  # an unreachable Ray address: exit 2 even with nothing to do
    found = store.unfinished_event()
    if found is not None and executor.name == "ray" and store.locator() is None:
        raise InputError("the ray executor needs a store its workers can open (a SQLite file or "
                         "postgresql://…), not an in-memory store", file=store.path, field="executor")
    if found is not None:
        prepare(executor)
    if found is None:
        for event_id in store.pending_physical_erasure():  # killed between publication and the file step
            store.erase_physically(event_id)
        store.collect_pool_keys()  # pooled keys a crashed writer left (they sealed nothing stored)
        return None
    event_id, _event, policy_doc, plan_doc = found
    if not store.take_event(event_id):  # one writer per event: a live holder makes this raise EventHeld
        return None  # completed meanwhile by the process that held it
    policy = policy_of_document(policy_doc)
    plan = TransitionPlan.from_json(plan_doc)
    # a migrate's interfaces are kept as references to the root versions its barrier staged
    plan = plan.replace(event=with_interfaces(plan.event, lambda r, v: _content_at(store, r, v)))
    done = resume(store, event_id, policy, plan, operators, oracles, executor, progress)
    store.collect_pool_keys()  # pooled keys a crashed writer left (they sealed nothing stored)
    return done


def _content_at(store: RepairLog, ident: str, version: int) -> Any:
    found = store.version_of(ident, version)
    if found is None:
        raise InputError(f"the stored event refers to version {version} of {ident!r}, which the store does not "
                         "hold", file=store.path, field=f"interface_refs.{ident}")
    return found.content


def _interface(parents: list[str], event: Event, available: Mapping[str, Artifact]) -> dict[str, Any]:
    merged: dict[str, Any] = {"tools": {}, "renames": {}, "arg_renames": {}}
    for p in parents:
        iface = event.interfaces.get(p) if event.type == "migrate" else None
        if iface is None and p in available and isinstance(available[p].content, dict):
            iface = available[p].content if "tools" in available[p].content else None
        if iface:
            for key in merged:
                merged[key].update(iface.get(key, {}))
    return merged


def build_context(store: RepairLog, snap: Snapshot, plan: TransitionPlan, c: Candidate, parents: list[str],
                  successors: Mapping[str, Artifact], affected: frozenset[str] | None = None) -> RepairContext:
    """The post-event support of candidate i: Ret(e) inputs, staged prerequisites, partitions."""
    parents = sorted(parents)
    affected = frozenset(plan.cascade) if affected is None else affected
    event = plan.event
    replacements = {a.id: a for a in event.replacements}
    available: dict[str, Artifact] = {}
    forget: list[Artifact] = []
    for p in parents:
        if p in successors and p in c.prerequisites:
            available[p] = successors[p]
        elif is_retained(p, affected, event.type, replacements):
            # a replacement X_Δ is evidence at the version the barrier stored it under, not at
            # the default version 1 of the event file
            art = (store.staged(p) or replacements[p]) if p in replacements else snap.artifacts[p]
            if p in replacements or art.state in SERVABLE_STATES:
                available[p] = art
        elif p in affected:
            old = store.version_of(p, plan.base_versions[p])
            if old is not None and old.content is not None:
                forget.append(old)
    inputs = tuple(available[p] for p in sorted(available))
    reference = tuple(a for a in inputs if a.id not in c.prerequisites)
    return RepairContext(event.type, inputs, tuple(forget), reference,
                         _interface(parents, event, available), store.version_of(c.id, plan.base_versions[c.id]),
                         previous_valid=c.id not in plan.unservable)


def _fail(store: RepairLog, event_id: int, c: Candidate, status: StepStatus, detail: str, oracle: str) -> StepResult:
    """Record a failed / blocked step: the candidate stays withdrawn (Alg. 1 line 8)."""
    report: OracleReport = [{"oracle": oracle, "passed": False, "detail": detail}]
    store.record_step(event_id, c.id, status, report)
    return StepResult(c.id, c.mode, status, None, tuple(report), detail)


def _run_step(store: RepairLog, event_id: int, policy: Policy, c: Candidate, ctx: RepairContext, step: StepRecord,
              operators: OperatorRegistry, oracles: OracleRegistry | None) -> tuple[StepResult, Artifact | None]:
    """Construct (or reuse the staged) successor z_i, stage it, validate it; record the outcome."""
    st, version, _report = step
    op = operators.find(c.mode, c.kind, c.arch)
    art = ctx.previous
    if op is None or art is None:
        return _fail(store, event_id, c, "failed", "no operator for this candidate", "operator"), None
    if store.is_erased(c.id, art.version):
        return _fail(store, event_id, c, "failed", "its version was erased by an earlier delete event", "operator"), None
    if st == "staged" and version is not None:  # resumed after a crash: the staged successor is kept
        staged = store.version_of(c.id, version)
        successor = Successor(staged.content, dict(staged.meta))  # type: ignore[union-attr]
    else:
        try:
            successor = guarded("operator", lambda: _checked(op(art, ctx)))
        except StepFailure as exc:
            return _fail(store, event_id, c, "failed", exc.detail, exc.stage), None
        version = store.stage(event_id, c.id, successor.content, successor.meta,
                              support=[{"id": a.id, "version": a.version} for a in ctx.inputs],
                              forget=[{"id": a.id, "version": a.version} for a in ctx.forget])
    try:
        ok, reports = guarded("oracle", lambda: validate(policy.oracles_for(c.mode, c.kind, c.arch),
                                                         OracleInput(art, successor, ctx, op), oracles))
    except StepFailure as exc:
        return _fail(store, event_id, c, "failed", exc.detail, exc.stage), None
    rep = [r.as_dict() for r in reports]
    status: StepStatus = "validated" if ok else "failed"
    store.record_step(event_id, c.id, status, rep)
    staged_art = Artifact(c.id, c.kind, c.arch, version, successor.content, successor.meta, "staged") if ok else None
    return StepResult(c.id, c.mode, status, version, tuple(rep)), staged_art


def _checked(successor: Successor) -> Successor:
    """An operator's successor must be storable JSON within the document bounds."""
    for name, value in (("content", successor.content), ("meta", successor.meta)):
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise OperatorError(f"successor {name} is not JSON: {exc}") from None
        problem = tree_problem(value)
        if problem:
            raise OperatorError(f"successor {name} {problem[0]}: {problem[1]}".replace("  ", " "))
    return successor


@dataclass(frozen=True)
class EventWork:
    """What every candidate's work in one event shares (sent once per worker)."""

    event_id: int
    policy: Policy
    operators: OperatorRegistry
    oracles: OracleRegistry | None


@dataclass(frozen=True)
class CandidateTask:
    """One candidate's work: its post-event context and the step recorded so far."""

    candidate: Candidate
    ctx: RepairContext
    step: StepRecord


def run_task(store: RepairLog, work: EventWork, task: CandidateTask) -> tuple[StepResult, Artifact | None]:
    """A worker's unit (:mod:`.executors`): π_i, stage z_i, oracles, record — into the shared store."""
    return _run_step(store, work.event_id, work.policy, task.candidate, task.ctx, task.step, work.operators,
                     work.oracles)


def resume(store: RepairLog, event_id: int, policy: Policy, plan: TransitionPlan,
           operators: OperatorRegistry | None = None, oracles: OracleRegistry | None = None,
           executor: Executor | str | None = None, progress: Progress | None = None) -> TransitionPlan:
    """Alg. 1 lines 7–8 from whatever steps the store already records (idempotent): run S_ρ
    respecting E^req[S_ρ] — candidate i is handed to the executor only once every prerequisite
    j ∈ P̄_i has a recorded outcome; if one did not validate, i is blocked (never run). With the
    sequential executor this is exactly plan order. Publication waits for every candidate.

    ``progress(done, total)`` is called once with the outcomes already recorded (a resumed event
    starts above 0) and after every further outcome, ending at ``done == total == |S_ρ|``."""
    operators = operators or operators_for(policy)
    executor = executor_from(executor)
    store = Serialized(store)  # one lock for the coordinator and worker threads
    by_id = {c.id: c for c in plan.candidates}
    affected = frozenset(plan.cascade)
    steps = store.steps(event_id)
    successors: dict[str, Artifact] = {}
    results: dict[str, StepResult] = {}
    for i in plan.order:
        st, version, report = steps[i]
        if st in ("validated", "failed", "blocked"):  # recorded before an interruption
            results[i] = StepResult(i, by_id[i].mode, st, version, tuple(report or ()))
            if st == "validated" and version is not None:
                successors[i] = store.version_of(i, version)
    # the candidates' contexts read the neighbourhood; with none left to run (a delete of roots only, as a
    # forget of a namespace is, or a resumed event) it is not read: its contents cost ∝ |C(F)|
    snap = neighbourhood(store, plan.cascade) if len(results) < len(plan.order) else Snapshot({}, ())
    parents_of: dict[str, list[str]] = {}
    for src, dst in snap.influence_edges():
        parents_of.setdefault(dst, []).append(src)
    position = {i: k for k, i in enumerate(plan.order)}
    waiting: dict[str, int] = {}
    dependents: dict[str, list[str]] = {}
    ready: list[int] = []
    for i in plan.order:
        if i in results:
            continue
        deps = {j for j in by_id[i].prerequisites if j in position and j not in results}
        waiting[i] = len(deps)
        for j in deps:
            dependents.setdefault(j, []).append(i)
        if not deps:
            heapq.heappush(ready, position[i])

    def settle(i: str) -> None:
        for k in dependents.get(i, ()):
            waiting[k] -= 1
            if waiting[k] == 0:
                heapq.heappush(ready, position[k])

    total = len(plan.order)
    report = progress or (lambda done, total: None)
    report(len(results), total)
    session = executor.open(Shared(run_task, EventWork(event_id, policy, operators, oracles), store,
                                   store.locator()))
    in_flight = 0
    deadline = time.monotonic() + policy.repair.event_deadline
    # the steps run in this thread (sequential) are committed STEP_BATCH candidates at a time (RepairLog.defer_steps):
    # a dependent reads its prerequisites' successors from ``successors``, never from the store, so nothing waits
    # for a batch's commit but the publication; an interruption commits what is queued, a kill loses it (recover
    # runs those candidates again)
    batched = isinstance(executor, Sequential)
    queued = 0
    if batched:
        store.defer_steps(True)
    try:
        while ready or in_flight:
            while ready and in_flight < session.capacity:
                i = plan.order[heapq.heappop(ready)]
                c = by_id[i]
                missing = [j for j in c.prerequisites if j not in successors]
                try:
                    if time.monotonic() > deadline:
                        raise StepFailure(f"the event's deadline (repair.event_deadline = "
                                          f"{policy.repair.event_deadline:g} s) passed before this candidate "
                                          "started", "deadline")
                    if missing:
                        raise StepFailure(f"prerequisite {missing[0]} not validated", "prerequisites")
                    ctx = guarded("context", lambda: build_context(store, snap, plan, c, parents_of.get(i, []),  # noqa: B023
                                                                   successors, affected))
                except StepFailure as exc:
                    status: StepStatus = "blocked" if missing and exc.stage != "deadline" else "failed"
                    results[i] = _fail(store, event_id, c, status, exc.detail, exc.stage)
                    queued += 1
                    settle(i)
                    report(len(results), total)
                    continue
                session.submit(i, c.mode, CandidateTask(c, ctx, steps[i]))
                in_flight += 1
            if in_flight:
                i, (results[i], staged) = session.next_done()
                in_flight -= 1
                if staged is not None:
                    successors[i] = staged
                queued += 1
                settle(i)
                report(len(results), total)
            if batched and queued >= STEP_BATCH:
                store.flush_steps()
                queued = 0
        store.flush_steps()  # every outcome committed before the publication reads them
    except BaseException:
        if batched:  # interrupted (an error, Ctrl-C): the outcomes reached so far are kept, as step by step
            with contextlib.suppress(BaseException):
                store.flush_steps()
        raise
    finally:
        session.close()
        if batched:
            store.defer_steps(False)
    return _publish(store, event_id, plan, [results[i] for i in plan.order])


def erasure_targets(plan: TransitionPlan, republished: frozenset[str]) -> tuple[list[str], dict[str, int | None], list[str]]:
    """What publication erases (the erasure issue, item 1): (roots erased outright, further
    artifacts → highest version to erase (None: all), roots whose erased versions are tombstoned).

    A delete — and a correction marked ``privacy`` — erases every version of every member of C(F)
    that was built from the roots' old content: all versions up to the base version, and every
    version of a member that is not republished (a failed successor included). Republished
    successors were built from retained support only and are kept. A migration erases nothing.
    """
    ev = plan.event
    if ev.type == "migrate" or (ev.type == "correct" and not ev.privacy):
        return [], {}, []
    erase = [r for r, act in plan.roots.items() if act == "erased"]
    kept = republished | {r for r, act in plan.roots.items() if act == "replaced"}
    scrub = {i: (plan.base_versions[i] if i in kept else None) for i in plan.cascade if i not in erase}
    return erase, scrub, list(ev.roots)


def _publish(store: RepairLog, event_id: int, plan: TransitionPlan, results: list[StepResult]) -> TransitionPlan:
    """R_ρ = validated successors (their prerequisites validated, else they were blocked), root
    updates, erasure of what was built from deleted content — one transaction. withdrawn = B_ρ \\ R_ρ:
    roots are always listed (their invalidated versions stay withdrawn); a corrected / migrated
    root's fresh version (X_Δ / κ_e) is reported under ``roots``."""
    republished = [s.id for s in results if s.status == "validated"]
    root_updates = [r for r, act in plan.roots.items() if act in ("replaced", "interface-updated")]
    erase, scrub, tombstone = erasure_targets(plan, frozenset(republished))
    final_steps = tuple(StepResult(s.id, s.mode, "republished", s.version, s.reports)
                        if s.status == "validated" else s for s in results)
    published = set(republished)
    final = plan.replace(executed=final_steps, republished=tuple(sorted(republished)),
                         withdrawn=tuple(i for i in plan.barrier if i not in published), status="done")
    gone = store.publish(PublishSpec(event_id, republished + root_updates, erase, final.to_json(), scrub, tombstone))
    if erase or scrub:
        store.erase_physically(event_id, gone)
    return final


def dry_run(store: RepairLog, policy: Policy, event: Event, selector: str = "mincut", backend: str = "networkx",
            operators: OperatorRegistry | None = None, oracles: OracleRegistry | None = None,
            executor: Executor | str | None = None, progress: Progress | None = None) -> TransitionPlan:
    """Plan on the store (a pure read), execute on an in-memory copy of what the execution reads
    (C(F), the influence parents of its members and their artifacts: :meth:`RepairLog.copy_scope`):
    the full report, the real store untouched, at a cost that grows with the cascade, not with the
    store. The copy lives in this process only, so a Ray executor runs as a local pool of its size."""
    runner = executor_from(executor)
    if runner.name == "ray":
        runner = LocalPool(runner.workers)
    if store.unfinished_event() is not None:
        raise InputError("the store has an unfinished event; run `memsteward recover` first", file=store.path)
    operators = operators or operators_for(policy)
    plan = compute_plan(policy, store, event, selector, backend, operators)
    if plan.selector == "no_action":
        return plan.replace(status="done", withdrawn=(), republished=())
    copy = store.copy_scope(plan.cascade)
    try:
        return execute(copy, policy, plan, operators, oracles, None, runner, progress)
    finally:
        copy.close()
