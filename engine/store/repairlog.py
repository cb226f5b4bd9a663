"""The repair log (:class:`~memsteward.store.api.RepairLog`): an event's state changes, one transaction each.

The barrier (MemoRepair §2.2, Alg. 1 line 2) records the event and its plan and withdraws all of
C(F) at once; each staged successor and each step outcome is one commit (or a batch of them, one
commit: :meth:`Transitions.defer_steps`); publication (Alg. 1
line 8) republishes, erases and closes the event in one commit. A process killed at any point
leaves the store at a transaction boundary where nothing of C(F) is servable unless published,
and :meth:`Transitions.unfinished_event` lets ``memsteward recover`` roll the event forward.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Literal

from ..errors import InputError, StoreBusy
from ..repair.artifacts import Artifact
from ..repair.events import STORED_VERSION, referenced
from ..shred.api import KeyStoreError
from . import audit
from .api import BarrierSpec, EventRecord, OracleReport, Provenance, PublishSpec, StepRecord, StepStatus
from .connection import retrying
from .core import _dump, _now, digest
from .planstore import plan_text as stored_plan
from .planstore import read_fields, read_plan
from .tombstoned import refuse_tombstoned_successors
from .transfer import Transfer

__all__ = ["Transitions"]

_PENDING = StepRecord("pending", None, None)  # a step of the order without a ``plan_steps`` row


class Transitions(Transfer):
    """Barrier, staging, step outcomes and publication of an event."""

    def unfinished_event(self) -> EventRecord | None:
        """(event id, event, policy, plan) of an event whose publication has not committed."""
        row = self.conn.execute(self.q.unfinished_event).fetchone()
        if row is None:
            return None
        return EventRecord(int(row[0]), json.loads(row[1]), json.loads(row[2]), read_plan(row[3]))

    @retrying
    def barrier(self, spec: BarrierSpec) -> int:
        """B_ρ ← C(F): record the event and plan, withdraw all of C(F) and stage root
        replacements / new interfaces — in ONE transaction (§2.2, Alg. 1 line 2). The plan's steps
        are pending from here on without a row each (:meth:`steps` reads them from the stored order).

        ``spec.generation`` is :meth:`generation` at planning time: if another process changed the
        store since (beyond agent writes that leave the plan's scope as it was: ``spec.unchanged``),
        or left an event unfinished, nothing is written (StoreBusy). The scope is read again before the
        store's write lock is taken (:meth:`_scope_checked`); under the lock only the agent writes
        committed since are checked (:meth:`_planned_on_this`).
        """
        from ..repair.plan import paused_gc  # imported by every caller already (execute.py)

        checked = self._scope_checked(spec.generation, spec.unchanged)
        with paused_gc():  # 10^5 rows of new objects, none cyclic: no collector passes over the heap
            return self._barrier(spec.plan, spec.policy, spec.staged_roots, checked, spec.unchanged, spec.unchanged_by)

    def _scope_checked(self, generation: int | None, unchanged: Callable[[Provenance], bool] | None) -> int | None:
        """The generation at which a plan computed at ``generation`` was found to still hold, read in one
        snapshot and without the store's write lock (writers go on while the scope is read again): the
        same generation when nothing changed since, else the snapshot's when only agent writes that left
        the scope as it was (``unchanged``) happened in between (else StoreBusy). None: not checked."""
        if generation is None:
            return None
        with self.read_snapshot():
            now = self.generation()
            if not self._planned_on_this(generation, now, unchanged, None):
                raise StoreBusy("the store changed while the event was being planned; run it again", file=self.path)
        return now

    AGENT_WRITES_CHECKED = 1_000  # agent writes since the scope check that the barrier checks one by one

    def _planned_on_this(self, generation: int | None, now: int, unchanged: Callable[[Provenance], bool] | None,
                         unchanged_by: Callable[[Provenance, Mapping[str, Any], Collection[str]], bool] | None) -> bool:
        """Whether a plan found to hold at ``generation`` still holds at generation ``now``: nothing
        changed since, or only agent writes (``record``/``refuse`` audit rows) that left its scope as it
        was — asked of ``unchanged_by`` with just those writes (their ids and inputs, from their audit
        rows) where it is given and every write names its artifact, else of ``unchanged`` (the scope
        read again)."""
        if generation is None or now == generation:
            return True
        if unchanged is None or self.conn.execute(self.q.audit_changed_since, (generation,)).fetchone() is not None:
            return False
        if unchanged_by is not None:
            rows = self.conn.execute(self.q.audit_since, (generation, self.AGENT_WRITES_CHECKED + 1)).fetchall()
            records = [(ident, detail) for action, ident, detail in rows if action == "record"]
            if len(rows) <= self.AGENT_WRITES_CHECKED and all(ident is not None for ident, _ in records):
                inputs = {i for _, detail in records for i in json.loads(detail).get("inputs", ())}
                texts = self._opened_by_id(self.conn.execute(self.q.shingle_candidates,
                                                             (json.dumps(sorted({i for i, _ in records})),)))
                return unchanged_by(self, dict(texts), inputs)
        return unchanged(self)  # the scope read again (a batch's row names no artifact)

    def _barrier(self, plan_doc: Mapping[str, Any], policy_doc: Mapping[str, Any],
                 staged_roots: Mapping[str, Artifact], generation: int | None,
                 unchanged: Callable[[Provenance], bool] | None = None,
                 unchanged_by: Callable[[Provenance, Mapping[str, Any], Collection[str]], bool] | None = None) -> int:
        barrier = list(plan_doc["barrier"])
        policy_text = _dump(policy_doc)
        ids_text = json.dumps(barrier)  # encoded once: the UPDATE and the withdraw rows read it
        # durable (synced): the publication destroys keys in the key store, a file of its own, before its own
        # commit; the event must be on disk before any key goes, or a power cut could keep the keys' destruction
        # and lose the event that `recover` finishes (its steps need no sync: lost, `recover` runs them again)
        with self.transaction():
            if self.unfinished_event() is not None:
                raise StoreBusy("the store has an unfinished event; run `memsteward recover` first", file=self.path)
            if not self._planned_on_this(generation, self.generation(), unchanged, unchanged_by):
                raise StoreBusy("the store changed while the event was being planned; run it again",
                                 file=self.path)
            refuse_tombstoned_successors(self, staged_roots)
            # the replacements X_Δ are kept as references to the versions staged below, not as copies
            plan_doc = {**plan_doc, "event": referenced(plan_doc["event"], self._next_versions(staged_roots),
                                                        self.digest_of)}
            event_text = _dump(plan_doc["event"])
            # SQLite withdraws C(F) while this thread packs the plan (planstore: ~6x smaller at
            # |C(F)| = 10^5): the sqlite3 module lets go of the GIL while a statement runs
            withdrawn = self._concurrently(len(barrier) > audit.WITHDRAW_PART, self._withdraw, ids_text)
            try:
                plan_text = stored_plan(plan_doc)
            finally:
                withdrawn()
            event_id = self._insert_event(plan_doc["event"]["type"], event_text, policy_text, plan_text)
            self._lease(event_id)
            event = plan_doc["event"]
            if event["type"] == "delete" or (event["type"] == "correct" and event.get("privacy")):
                # the roots' normalised tombstone digests, durable before the publication destroys any key
                self._record_erasing_digests(event_id, event["roots"])
            self.checkpoint()
            for root, art in sorted(staged_roots.items()):
                self._insert_version(event_id, root, art.content, dict(art.meta))
            self._audit("barrier", event_id=event_id,
                        detail={"type": plan_doc["event"]["type"], "roots": plan_doc["event"]["roots"],
                                "event_sha256": digest(event_text), "policy_sha256": digest(policy_text),
                                "plan_sha256": digest(plan_text),
                                "withdrawn": len(barrier)})
            self._append_withdrawals(event_id, barrier, ids_text)  # one transaction, one time, one hashing pass
        self._plan_steps = (event_id, plan_doc["order"], plan_doc["modes"])  # committed: its steps' keys
        # after the barrier, not before it: C(F) is withdrawn first (making 10^5 steps' keys took 2-3 s, which
        # delayed the withdrawal), and the keys are still durable before any step stages a version under one
        self._make_step_keys(plan_doc["order"])
        return event_id

    def _make_step_keys(self, order: Sequence[str]) -> None:
        """The keys of the versions the event's steps will stage, made in ONE durable key-store commit right
        after the barrier, not one per step: a step's seal (:meth:`stage`) then finds its key, an INSERT OR
        IGNORE that changes nothing (no sync). Best effort: a key store that fails here fails again, with
        the same error, at the first step's seal (which makes its own key), where the event's run handles
        an interruption; an unused key (a step that stages nothing) protects nothing."""
        if not order:
            return
        try:
            self.vault.keys.create(sorted(self._next_versions(order).items()))
        except KeyStoreError:
            pass

    def _next_versions(self, ids: Iterable[str]) -> dict[str, int]:
        """The version a new version of each id gets (inside the write transaction: no one else writes)."""
        return {i: int(top) + 1 for i, top in self.conn.execute(self.q.max_versions, (json.dumps(sorted(ids)),))}

    def _insert_event(self, kind: str, event_text: str, policy_text: str, plan_text: str) -> int:
        """The ``events`` row of a barrier; its id. Ids count 1, 2, … on both backends (a PostgreSQL
        identity would skip the ids of rolled-back barriers; the write lock makes MAX + 1 safe).
        The policy is stored once, in ``policies`` under its SHA-256 (the digest the barrier's audit
        row pins); the event row holds that digest (issue 25: never a copy per event)."""
        pinned = digest(policy_text)
        self.driver.write(self.q.insert_policy, (pinned, policy_text))
        (event_id,) = self.conn.execute(self.q.insert_event, (kind, event_text, pinned, plan_text, "barrier", _now())).fetchone()
        return int(event_id)

    def _withdraw(self, ids_text: str) -> None:
        """B_ρ: every id of the JSON array ``ids_text`` withdrawn (erased ones stay erased), one UPDATE."""
        self.driver.write(self.q.withdraw, (ids_text,))

    def _version_row(self, ident: str, content: Any, meta: Mapping[str, Any]) -> tuple[str, int, str, str]:
        """(id, next version, content text, meta text) of a new version of ``ident``."""
        (top,) = self.conn.execute(self.q.max_version, (ident,)).fetchone()
        return ident, int(top) + 1, _dump(content), _dump(dict(meta))

    def _insert_version(self, event_id: int, ident: str, content: Any, meta: Mapping[str, Any],
                        ahead: tuple[tuple[str, int, str, str], Any] | None = None) -> int:
        """A new version of ``ident`` staged by the event; ``ahead``: (row, sealed row) sealed before the
        transaction, used when the row is still the one it sealed."""
        row = self._version_row(ident, content, meta)
        version = row[1]
        ((_, _, sealed, sealed_meta),) = [ahead[1]] if ahead is not None and ahead[0] == row else self.vault.seal([row])
        self.driver.write(self.q.insert_version, (ident, version, sealed, sealed_meta, event_id, self.digest_of(content)))
        self.driver.write(self.q.set_staged_version, (version, ident))
        return version

    def _event_versions(self, event_id: int, event: Mapping[str, Any]) -> dict[str, int]:
        """The version the event's barrier staged for each replacement or migrate interface still held
        as a copy."""
        ids = [o["id"] for o in event.get("replacements", ()) if STORED_VERSION not in o]
        if "interface" in event:
            ids += list(event["roots"])
        if not ids:
            return {}
        return {i: int(v) for i, v in self.conn.execute(self.q.event_versions, (event_id, json.dumps(ids)))}

    def staged(self, ident: str) -> Artifact | None:
        """The staged successor of an artifact (None if it has none)."""
        row = self.conn.execute(self.q.staged_version, (ident,)).fetchone()
        if row is None or row[0] is None:
            return None
        return self.version_of(ident, int(row[0]))

    def steps(self, event_id: int) -> dict[str, StepRecord]:
        """The plan steps of an event in execution order: artifact id → (status, staged version, report).

        A step has a ``plan_steps`` row from its first recorded outcome on (staged, then validated,
        failed or blocked); a step of the stored plan's order without one is ``pending``. (Releases
        before this one wrote a pending row per step at the barrier; such rows read the same.)"""
        recorded = {i: StepRecord(st, v, None if r is None else json.loads(r)) for i, st, v, r in self.conn.execute(
            self.q.plan_steps_of, (event_id,))}
        return {i: recorded.get(i, _PENDING) for i in self._step_keys(event_id)}

    def _step_keys(self, event_id: int) -> dict[str, tuple[int, str]]:
        """Each step of the event's order → (seq, mode) of its ``plan_steps`` row: its position in the
        order and its mode, from the barrier this store ran or else from the stored plan (read once)."""
        cached = self._plan_steps
        if cached is not None and cached[0] == event_id:
            if len(cached) == 2:
                known: dict[str, tuple[int, str]] = cached[1]
                return known
            order, modes = cached[1], cached[2]
        else:
            row = self.conn.execute(self.q.event_plan, (event_id,)).fetchone()
            if row is None:
                raise InputError(f"no event {event_id} in the store", file=self.path)
            fields = read_fields(row[0], ("order", "modes"))
            order, modes = fields["order"], fields["modes"]
        keys = {i: (k, modes[i]) for k, i in enumerate(order)}
        self._plan_steps = (event_id, keys)
        return keys

    def _record(self, event_id: int, ident: str, status: str, column: Literal["version", "report"],
                value: int | str) -> None:
        """Write one step's status and its ``version`` (staged) or ``report`` (an outcome), inside the
        caller's transaction: the row is inserted, or updated where one exists (the staged step's, or a
        pending row of an earlier release) — keyed by (event, seq), as the barrier once wrote it."""
        seq, mode = self._step_keys(event_id)[ident]
        sql = self.q.record_step_version if column == "version" else self.q.record_step_report
        self.driver.write(sql, (event_id, seq, ident, mode, status, value))

    _deferred: list[tuple[Any, ...]] | None = None
    """The steps :meth:`stage` and :meth:`record_step` queued since :meth:`defer_steps` (None: each commits at once)."""

    def defer_steps(self, on: bool) -> None:
        """``on``: from now on :meth:`stage` and :meth:`record_step` queue their writes, and
        :meth:`flush_steps` commits everything queued in ONE transaction (an event's many steps take
        the store's write lock a few times, not twice per candidate). Off: the queue is dropped
        uncommitted (a step that was never committed is run again by ``recover``)."""
        self._deferred = [] if on else None

    @retrying
    def flush_steps(self) -> None:
        """Commit the queued steps in one transaction, in the order they were made: each staged successor
        (its version sealed first, all in one key-store commit outside the write lock) and each outcome,
        with the same rows and chained audit rows as one transaction per step would write. Fenced: the
        event's lease is checked first (a process that lost the event writes nothing)."""
        queued = self._deferred
        if not queued:
            return
        rows = [op[3] for op in queued if op[0] == "stage"]
        sealed = {(r[0], r[1]): r2 for r, r2 in zip(rows, self.vault.seal(rows), strict=True)}  # keys durable first
        events = sorted({op[1] for op in queued})

        def fenced() -> None:  # under the store's write lock, before the chain's rows: only the event's writer writes
            for event_id in events:
                self._check_lease(event_id)
        # made durable by the publication's commit (lost, recover reruns it); lock_late (PostgreSQL): the body
        # writes only rows of the ids the barrier holds and of its event, which no writer changes while the
        # event runs (the write rule, memsteward.store.live): writers go on meanwhile
        with self.transaction(durable=False, lock_late=True, locked=fenced):
            fenced()  # early: no work for a process that lost the event
            # only the event writes versions of the ids its barrier holds: the versions read when the steps
            # were queued are the ones they get (checked)
            top = self._next_versions({r[0] for r in rows})
            notes: list[tuple[str, int | None, str, str | None, str]] = []
            for op in queued:
                if op[0] == "stage":
                    _, event_id, ident, (_, version, _, _), support, forget, digest_ = op
                    if top.get(ident, 1) != version:
                        raise InputError(f"{ident!r}: version {version} was taken while its successor was "
                                         "queued; run `memsteward recover`", file=self.path)
                    top[ident] = version + 1
                    _, _, text, meta_text = sealed[(ident, version)]
                    self.driver.write(self.q.insert_version, (ident, version, text, meta_text, event_id, digest_))
                    self.driver.write(self.q.set_staged_version, (version, ident))
                    self.driver.write(self.q.set_state_staged, (ident,))
                    self._record(event_id, ident, "staged", "version", version)
                    notes.append((_now(), event_id, "stage", ident,
                                  _dump({"version": version, "support": support, "forget": forget})))
                else:
                    _, event_id, ident, status, report = op
                    self._record(event_id, ident, status, "report", _dump(report))
                    if status != "validated":
                        self.driver.write(self.q.set_state_withdrawn, (ident,))
                    notes.append((_now(), event_id, status, ident, _dump({"report": report} if status != "validated"
                                                                          else {})))
            self._append_audit(notes)
        self._deferred = []

    @retrying
    def stage(self, event_id: int, ident: str, content: Any, meta: Mapping[str, Any],
              support: Sequence[Mapping[str, Any]] = (), forget: Sequence[Mapping[str, Any]] = ()) -> int:
        """Stage one successor z_i (a new version, not servable) in one transaction (after
        :meth:`defer_steps`: queued; the version it will have is returned).

        ``support`` (id, version) are the inputs it was built from and ``forget`` the invalidated
        versions it must not retain; both go into the hash-chained audit row (the attestation's evidence).
        """
        # sealed before the transaction (the key store's commit outside the write lock): only this event
        # writes versions of the ids its barrier holds, so the version read now is the one it gets
        row = self._version_row(ident, content, meta)
        if self._deferred is not None:
            self._deferred.append(("stage", event_id, ident, row, list(support), list(forget), self.digest_of(content)))
            return row[1]
        ahead = (row, self.vault.seal([row])[0])  # the key is durable before this commit is written
        with self.transaction(durable=False):  # made durable by the publication's commit; lost, recover reruns it
            self._check_lease(event_id)
            version = self._insert_version(event_id, ident, content, meta, ahead)
            self.driver.write(self.q.set_state_staged, (ident,))
            self._record(event_id, ident, "staged", "version", version)
            self._audit("stage", ident, event_id, {"version": version, "support": list(support),
                                                   "forget": list(forget)})
        return version

    @retrying
    def record_step(self, event_id: int, ident: str, status: StepStatus, report: OracleReport) -> None:
        """Record validated / failed / blocked; a failed or blocked successor stays withdrawn (after
        :meth:`defer_steps`: queued)."""
        if self._deferred is not None:
            self._deferred.append(("step", event_id, ident, status, report))
            return
        with self.transaction(durable=False):  # made durable by the publication's commit; lost, recover reruns it
            self._check_lease(event_id)
            self._record(event_id, ident, status, "report", _dump(report))
            if status != "validated":
                self.driver.write(self.q.set_state_withdrawn, (ident,))
            self._audit(status, ident, event_id, {"report": report} if status != "validated" else {})

    @retrying
    def publish(self, spec: PublishSpec) -> list[tuple[str, int]]:
        """R_ρ: republish validated predecessor-closed successors and root updates, erase deleted
        roots, and close the event — in one transaction (Alg. 1 line 8).

        ``erase`` are deleted roots: every version is erased and the artifact's state becomes
        ``erased``. ``scrub`` maps further artifacts to the highest version to erase (None: every
        version) — the versions built from deleted content. ``tombstone`` lists the roots whose
        erased versions' content digests go into ``tombstones``. Each republish row chains the
        successor's content digest, each erase row the digests of the versions it erased.
        Returns the erased versions (id, version), whose DEKs are destroyed (:meth:`erase_physically`).
        """
        event_id, republish, erase, plan_doc = spec.event_id, spec.republish, spec.erase, spec.plan
        tombstone = spec.tombstone
        targets: dict[str, int | None] = dict(spec.scrub)
        targets.update({r: None for r in erase})

        def fenced() -> None:  # under the store's write lock, before the chain's rows: fencing, the lease
            self._check_lease(event_id)  # only the event's current writer publishes
            # the erased versions' keys, destroyed only now: a writer that read the roots with their keys gone and
            # their tombstones not committed would let a copy of their content in (the write rule, store.live)
            self._destroy_keys(erasing)
            if not targets:  # else the lease is kept until the physical step's row (erase_physically)
                self.driver.write(self.q.delete_lease, (event_id,))
        self._check_lease(event_id)  # early: no work for a process that lost the event
        # the erasure's reads and rows made before the transaction (the store's write lock, from BEGIN on
        # SQLite): they concern only versions of the ids the barrier holds
        erasing = self._erasure_of(event_id, targets, frozenset(tombstone) | frozenset(erase))
        # lock_late: the body reads and changes only rows of the ids the barrier holds, of its event and the
        # tombstones it adds, which no writer changes while the event runs (the write rule,
        # memsteward.store.live): writers go on meanwhile; the lock is taken for fencing and the chain
        with self.transaction(lock_late=True, locked=fenced) as c:
            self._check_lease(event_id)
            for ident in republish:
                self.driver.write(self.q.republish, (ident,))
                row = c.execute(self.q.current_version_content, (ident,)).fetchone()
                self._audit("republish", ident, event_id, {} if row is None else {
                    "version": int(row[0]), "sha256": self.digest_of(self._open_content([(ident, row[0], row[1])])[0])})
            self.checkpoint()
            erasing = self._erase_versions(event_id, targets, frozenset(tombstone) | frozenset(erase), erasing)
            gone = erasing.refs
            for ident in erase:
                self.driver.write(self.q.set_state_erased, (ident,))
            # successors staged but not republished go back to withdrawn, and no withdrawn one keeps a staged
            # version: only C(F) (the barrier) can hold either, so only its rows are read (cost ∝ the cascade)
            self.driver.write(self.q.withdraw_unpublished, (json.dumps(list(plan_doc["barrier"])),))
            self._reindex(set(republish) | set(targets))  # successors' content in, erased content out
            final = stored_plan({**plan_doc, "event": referenced(plan_doc["event"],
                                                                 self._event_versions(event_id, plan_doc["event"]),
                                                                 self.digest_of)})
            self.driver.write(self.q.close_event, (final, event_id))
            self._audit("publish", event_id=event_id, detail={"republished": len(republish),
                                                               "plan_sha256": digest(final)})
        return gone
