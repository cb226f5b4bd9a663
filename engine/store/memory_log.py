"""The audit chain and the repair log of :class:`MemoryStore` (see :mod:`.memory`): the same rows as
the SQL store's ``audit.py``, ``repairlog.py``, ``leases.py`` and ``erasure.py``, kept in dicts."""

from __future__ import annotations

import copy
import json
import os
import secrets
import socket
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ..errors import EventHeld, InputError, StoreBusy
from ..repair.artifacts import Snapshot
from ..repair.auditchain import GENESIS, Binding, row_hash, seal, signing_key
from ..repair.auditchain import tombstone_commitment as commitment
from ..repair.events import referenced
from ..repair.writes import content_digest
from ..textnorm import text_digests
from .api import BarrierSpec, ErasureReport, EventRecord, Locator, OracleReport, PublishSpec, StepRecord, StepStatus
from .core import _dump, _erase_wait, _now, digest
from .memory import MemoryReads
from .planstore import plan_text as stored_plan
from .planstore import read_fields, read_plan
from .tombstoned import refuse_tombstoned_successors

__all__ = ["MemoryStore"]

_PENDING = StepRecord("pending", None, None)


class MemoryStore(MemoryReads):
    """Every protocol of :mod:`.api` over plain dicts (the reference the SQL backends are compared with).

    >>> from memsteward.store.memory_log import MemoryStore
    >>> s = MemoryStore()
    >>> s.record({"id": "a", "kind": "record", "content": "x"}).version
    1
    >>> s.servable(["b", "a"]), s.audit_log()[0]["action"]
    (['a'], 'record')
    """

    def __init__(self, path: str = ":memory:") -> None:
        super().__init__(path)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(6)}"
        self.erase_wait = _erase_wait()
        self._key = signing_key()
        self._store_id = secrets.token_hex(16)  # what its audit head's seal binds (as a SQL store's store_keys)
        self.checkpoints = 0

    def capabilities(self) -> frozenset[str]:
        """The lineage index and copy (into another memory store); no files to scan, no keys to destroy."""
        return frozenset({"lineage-index", "copy"})

    # ------------------------------------------------------------------ the audit chain

    def _audit(self, action: str, artifact_id: str | None = None, event_id: int | None = None,
               detail: Mapping[str, Any] | None = None) -> None:
        seq, prev = self.t.audit_head[:2] if self.t.audit_head else (0, GENESIS)
        seq += 1
        at, text = _now(), _dump(detail or {})
        head = row_hash(prev, seq, at, event_id, action, artifact_id, text)
        self.t.audit.append((seq, at, event_id, action, artifact_id, text, head))
        self.t.audit_head = (seq, head, None if self._key is None else seal(self._key, seq, head, self.audit_binding()))

    def digest_of(self, value: Any) -> str:
        """The digest this store keeps of a content: plain SHA-256 (an in-memory store seals nothing)."""
        return content_digest(value)

    def audit_binding(self) -> Binding:
        """What the audit head's seal binds: this store's id (random, per instance), no tenant."""
        return self._store_id, None

    def audit_head(self) -> tuple[int, str] | None:
        return None if self.t.audit_head is None else (self.t.audit_head[0], self.t.audit_head[1])

    def audit_seal(self) -> str | None:
        return None if self.t.audit_head is None else self.t.audit_head[2]

    def audit_rows(self) -> list[tuple[int, str, int | None, str, str | None, str, str | None]]:
        return list(self.t.audit)

    def audit_log(self) -> list[dict[str, Any]]:
        return [{"seq": s, "at": at, "event_id": ev, "action": a, "artifact_id": art, "detail": json.loads(d)}
                for s, at, ev, a, art, d, _h in self.t.audit]

    def audit_log_of(self, event_id: int) -> list[dict[str, Any]]:
        return [{"seq": s, "at": at, "event_id": ev, "action": a, "artifact_id": art, "detail": json.loads(d)}
                for s, at, ev, a, art, d, _h in self.t.audit if ev == event_id]

    def audit_log_stream(self) -> Any:
        return iter(self.audit_log())

    def generation(self) -> int:
        return self.t.audit[-1][0] if self.t.audit else 0

    def collect_pool_keys(self) -> int:
        """No data key exists here: nothing to collect."""
        return 0

    def keys_alive(self, refs: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
        """No data key exists: nothing outside the process ever held a byte of a memory store."""
        return []

    # ------------------------------------------------------------------ events

    def unfinished_event(self) -> EventRecord | None:
        open_ = sorted(i for i, r in self.t.events.items() if r[4] != "done")
        if not open_:
            return None
        _t, ev, pol, plan, _s, _c = self.t.events[open_[0]]
        return EventRecord(open_[0], json.loads(ev), json.loads(self.t.policies.get(pol, pol)), read_plan(plan))

    def event(self, event_id: int | None = None) -> dict[str, Any] | None:
        if not self.t.events:
            return None
        i = max(self.t.events) if event_id is None else event_id
        if i not in self.t.events:
            return None
        t, ev, pinned, plan, status, created = self.t.events[i]
        pol = self.t.policies.get(pinned, pinned)  # stored once by digest, as the SQL store's ``policies``
        return {"id": i, "type": t, "event": json.loads(ev), "policy": json.loads(pol), "plan": read_plan(plan),
                "status": status, "created": created,
                "sha256": {"event": digest(ev), "policy": digest(pol), "plan": digest(plan)}}

    def event_ids(self) -> list[int]:
        return sorted(self.t.events)

    # ------------------------------------------------------------------ leases

    def _lease(self, event_id: int) -> None:
        self.t.event_lease[event_id] = (self.owner, socket.gethostname(), os.getpid(), None, _now(), None)

    def _check_lease(self, event_id: int) -> None:
        row = self.t.event_lease.get(event_id)
        if row is not None and row[0] != self.owner:
            raise EventHeld(f"event {event_id} was taken over by process {row[2]} on {row[1]} at {row[4]}",
                            {"event": event_id, "host": row[1], "pid": row[2], "since": row[4]}, file=self.path)

    def event_running(self, event_id: int) -> bool:
        """Never: one process holds a memory store, and a lease of another owner is of a store object gone."""
        return False

    def take_event(self, event_id: int) -> bool:
        """One process holds a memory store: any lease of another owner is of a store object gone."""
        row = self.t.events.get(event_id)
        if row is None or row[4] == "done":
            return False
        with self.transaction():
            self._lease(event_id)
        return True

    def act_for(self, owner: str) -> None:
        self.owner = owner

    def locator(self) -> Locator | None:
        return None  # only this process holds it

    # ------------------------------------------------------------------ the repair log

    def barrier(self, spec: BarrierSpec) -> int:
        if self.unfinished_event() is not None:
            raise StoreBusy("the store has an unfinished event; run `memsteward recover` first", file=self.path)
        if not self._planned_on_this(spec):
            raise StoreBusy("the store changed while the event was being planned; run it again", file=self.path)
        refuse_tombstoned_successors(self, spec.staged_roots)
        barrier = spec.barrier
        nxt = {r: max(v for (i, v) in self.t.versions if i == r) + 1 for r in spec.staged_roots}
        plan = {**spec.plan, "event": referenced(spec.plan["event"], nxt)}  # X_Δ by reference, as the SQL store
        event_text, policy_text = _dump(plan["event"]), _dump(spec.policy)
        with self.transaction() as t:
            for i in barrier:
                row = t.artifacts.get(i)
                if row is not None and row[3] != "erased":
                    row[3], row[4] = "withdrawn", None
            plan_text = stored_plan(plan)
            event_id = max(t.events, default=0) + 1
            t.policies.setdefault(digest(policy_text), policy_text)
            t.events[event_id] = [plan["event"]["type"], event_text, digest(policy_text), plan_text, "barrier", _now()]
            self._lease(event_id)
            for root, art in sorted(spec.staged_roots.items()):
                self._insert_version(event_id, root, art.content, dict(art.meta))
            self._audit("barrier", event_id=event_id,
                        detail={"type": plan["event"]["type"], "roots": plan["event"]["roots"],
                                "event_sha256": digest(event_text), "policy_sha256": digest(policy_text),
                                "plan_sha256": digest(plan_text), "withdrawn": len(barrier)})
            for i in barrier:
                self._audit("withdraw", i, event_id)
        return event_id

    def _planned_on_this(self, spec: BarrierSpec) -> bool:
        """As the SQL store's: nothing changed since planning, or only agent writes that left the scope."""
        if spec.generation is None or self.generation() == spec.generation:
            return True
        since = [row[3] for row in self.t.audit if row[0] > spec.generation]
        return spec.unchanged is not None and set(since) <= {"record", "refuse"} and spec.unchanged(self)

    def _insert_version(self, event_id: int, ident: str, content: Any, meta: Mapping[str, Any]) -> int:
        version = max(v for (i, v) in self.t.versions if i == ident) + 1
        self.t.versions[(ident, version)] = [_dump(content), _dump(dict(meta)), event_id, 0, content_digest(content)]
        self.t.artifacts[ident][4] = version
        return version

    def staged(self, ident: str) -> Any:
        row = self.t.artifacts.get(ident)
        return None if row is None or row[4] is None else self.version_of(ident, int(row[4]))

    def _step_keys(self, event_id: int) -> dict[str, tuple[int, str]]:
        if event_id not in self.t.events:
            raise InputError(f"no event {event_id} in the store", file=self.path)
        fields = read_fields(self.t.events[event_id][3], ("order", "modes"))
        return {i: (k, fields["modes"][i]) for k, i in enumerate(fields["order"])}

    def steps(self, event_id: int) -> dict[str, StepRecord]:
        recorded = {r[0]: StepRecord(r[2], r[3], None if r[4] is None else json.loads(r[4]))
                    for (e, _s), r in self.t.plan_steps.items() if e == event_id}
        return {i: recorded.get(i, _PENDING) for i in self._step_keys(event_id)}

    def _record(self, event_id: int, ident: str, status: str, column: int, value: Any) -> None:
        seq, mode = self._step_keys(event_id)[ident]
        row = self.t.plan_steps.setdefault((event_id, seq), [ident, mode, status, None, None])
        row[2], row[column] = status, value

    def stage(self, event_id: int, ident: str, content: Any, meta: Mapping[str, Any],
              support: Sequence[Mapping[str, Any]] = (), forget: Sequence[Mapping[str, Any]] = ()) -> int:
        with self.transaction() as t:
            self._check_lease(event_id)
            version = self._insert_version(event_id, ident, content, meta)
            t.artifacts[ident][3] = "staged"
            self._record(event_id, ident, "staged", 3, version)
            self._audit("stage", ident, event_id, {"version": version, "support": list(support), "forget": list(forget)})
        return version

    def defer_steps(self, on: bool) -> None:
        """Nothing to group: each step of the in-memory log commits at once (no lock is held for others)."""

    def flush_steps(self) -> None:
        """Nothing is queued (:meth:`defer_steps`)."""

    def record_step(self, event_id: int, ident: str, status: StepStatus, report: OracleReport) -> None:
        with self.transaction() as t:
            self._check_lease(event_id)
            self._record(event_id, ident, status, 4, _dump(report))
            if status != "validated":
                t.artifacts[ident][3] = "withdrawn"
            self._audit(status, ident, event_id, {"report": report} if status != "validated" else {})

    def publish(self, spec: PublishSpec) -> list[tuple[str, int]]:
        event_id = spec.event_id
        targets: dict[str, int | None] = dict(spec.scrub)
        targets.update({r: None for r in spec.erase})
        with self.transaction() as t:
            self._check_lease(event_id)
            t.event_lease.pop(event_id, None)
            for ident in spec.republish:
                row = t.artifacts.get(ident)
                if row is not None and row[4] is not None:
                    row[2], row[3], row[4] = row[4], "republished", None
                cur = self._artifact(ident)
                self._audit("republish", ident, event_id, {} if cur is None else {
                    "version": cur.version, "sha256": content_digest(cur.content)})
            gone = self._erase_versions(event_id, targets, frozenset(spec.tombstone) | frozenset(spec.erase))
            for ident in spec.erase:
                t.artifacts[ident][3], t.artifacts[ident][4] = "erased", None
            for row in t.artifacts.values():
                if row[3] == "staged":
                    row[3] = "withdrawn"
                if row[3] == "withdrawn":
                    row[4] = None
            self._reindex(set(spec.republish) | set(targets))
            held = {i: v for (i, v), row in sorted(t.versions.items(), reverse=True) if row[2] == event_id}
            final = stored_plan({**spec.plan, "event": referenced(spec.plan["event"], held)})
            t.events[event_id][3], t.events[event_id][4] = final, "done"
            self._audit("publish", event_id=event_id, detail={"republished": len(spec.republish),
                                                               "plan_sha256": digest(final)})
        return gone

    def _erase_versions(self, event_id: int, targets: Mapping[str, int | None],
                        tombstone: frozenset[str]) -> list[tuple[str, int]]:
        gone: list[tuple[str, int]] = []
        for ident in sorted(targets):
            erased, stoned = [], False
            for (i, version), row in sorted(self.t.versions.items()):
                limit = targets[ident]
                if i != ident or row[3] or (limit is not None and version > limit):
                    continue
                value = None if row[0] is None else json.loads(row[0])
                sha = content_digest(value)
                gone.append((ident, version))
                erased.append({"version": version, "sha256": sha})
                if ident in tombstone and row[0] is not None:
                    stoned = True
                    self.t.tombstones.setdefault(sha, (ident, event_id))
                    for d in sorted(text_digests(value)):  # normalised text (issue 25)
                        self.t.tombstones.setdefault(d, (ident, event_id))
                row[0], row[1], row[3], row[4] = None, "{}", 1, sha
            if erased:
                pinned = [d for d, (r, e) in self.t.tombstones.items() if r == ident and e == event_id]
                self._audit("erase", ident, event_id,
                            {"versions": erased, **({"tombstones": commitment(pinned)} if stoned else {})})
        return gone

    def erasure_state(self) -> tuple[dict[tuple[str, int], str | None], dict[tuple[str, int], list[str]]]:
        versions = {k: row[4] for k, row in self.t.versions.items() if row[3]}
        stones: dict[tuple[str, int], list[str]] = {}
        for d, (r, e) in self.t.tombstones.items():
            stones.setdefault((r, e), []).append(d)
        return versions, stones

    def erase_physically(self, event_id: int, refs: Sequence[tuple[str, int]] | None = None) -> ErasureReport:
        """Nothing outside the process holds a byte of a memory store: the step only records that."""
        done = [r for r in self.t.audit if r[3] == "physical-erasure" and r[2] == event_id]
        if done:  # exactly once per event, as the SQL store
            return json.loads(done[0][5])  # type: ignore[no-any-return]
        detail: ErasureReport = {"wait_seconds": self.erase_wait, "complete": True, "file": False}
        with self.transaction():
            self._audit("physical-erasure", event_id=event_id, detail=detail)
        return detail

    def pending_physical_erasure(self) -> list[int]:
        erased = {r[2] for r in self.t.audit if r[3] == "erase"}
        done = {r[2] for r in self.t.audit if r[3] == "physical-erasure"}
        return sorted(int(e) for e in erased - done if e is not None)

    # ------------------------------------------------------------------ copies

    def copy_in_memory(self) -> MemoryStore:
        mem = MemoryStore()
        mem.t = copy.deepcopy(self.t)
        return mem

    def copy_into(self, dst: MemoryStore, batch: int = 2000,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Every row into the empty memory store ``dst`` (the ``copy`` capability): its tables become a
        copy of these, audit sequence numbers and hashes kept; returns the row counts."""
        if dst.t.audit or dst.t.artifacts:
            raise InputError("the destination store is not empty", file=dst.path)
        dst.t = copy.deepcopy(self.t)
        counts = dst.row_counts()
        if progress is not None:
            progress(sum(counts.values()), sum(counts.values()))
        return counts

    def copy_scope(self, cascade: Collection[str]) -> MemoryStore:
        from ..repair.scope import neighbourhood

        mem = MemoryStore()
        snap: Snapshot = neighbourhood(self, cascade)
        mem.import_snapshot(snap, file=self.path)
        return mem

