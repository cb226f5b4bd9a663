"""The store's interface (STYLE.md §4): typed protocols, one per role, and the records crossing it.

* :class:`Provenance` — what planning reads (C(F), the parents of its members, their artifacts; the
  lineage index). A store and an in-memory :class:`~memsteward.repair.artifacts.Snapshot` both answer it.
* :class:`RepairLog` — exactly what executing a transition plan calls (MemoRepair Alg. 1 lines 2–8):
  the barrier, staged successors, step outcomes, publication, erasure; each write is one transaction.
* :class:`Reader` — the retrieval guard and everything attestation and audit read.
* :class:`WritePath` — the agent's writes (provenance, fencing, the re-ingest rule).
* :class:`Admin` — opening, copying, exporting, counting: the store as a whole.
* :class:`Storage` — all of them: what the command line and the public API hand around.

Records replace the tuples and dicts that crossed this boundary: :class:`EventRecord`,
:class:`StepRecord`, :class:`BarrierSpec`, :class:`PublishSpec`, :class:`ErasureReport` and the
:class:`Locator` an executor's worker reopens a store with. ``proofs_tests/test_store_conformance.py``
checks that every backend implements them and that ``execute.py`` calls nothing outside :class:`RepairLog`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol, Self, TypedDict, runtime_checkable

from ..repair.artifacts import Artifact, Snapshot

__all__ = ["ADMIN", "JSON", "OPTIONAL", "capabilities", "READER", "REPAIR_LOG", "WRITE_PATH", "Admin", "AuditRow", "BarrierSpec", "Document",
           "ErasureReport", "EventRecord", "Locator", "Provenance", "PublishSpec", "Reader", "RepairLog",
           "StepRecord", "StepStatus", "Storage", "WritePath"]

JSON = None | bool | int | float | str | list["JSON"] | dict[str, "JSON"]
"""A value JSON can hold (what a stored report or content decodes to)."""

Document = dict[str, Any]
"""A JSON object whose shape another module owns (an event, a policy, a TransitionPlan document)."""

StepStatus = Literal["pending", "staged", "validated", "failed", "blocked"]
OracleReport = list[dict[str, JSON]]
"""A step's oracle outcomes: one object per oracle (``oracle``, ``passed``, ``detail``, …)."""

AuditRow = tuple[int, str, int | None, str, str | None, str, str | None]
"""(seq, at, event_id, action, artifact_id, detail JSON text, hash) of one audit row."""


class StepRecord(NamedTuple):
    """One plan step as recorded: its status, the staged version (None before staging) and the
    oracle report (None until validated / failed / blocked)."""

    status: StepStatus
    version: int | None
    report: OracleReport | None


class EventRecord(NamedTuple):
    """An event whose publication has not committed: its id and the event, policy and plan
    documents the barrier stored (``recover`` rolls it forward from them)."""

    id: int
    event: Document
    policy: Document
    plan: Document


class Locator(NamedTuple):
    """What a worker in another process opens a store with: its URL (a SQLite file's absolute path
    or a PostgreSQL URL, which may carry a password: never printed) and the lease owner it writes as."""

    url: str
    owner: str


@dataclass(frozen=True)
class BarrierSpec:
    """B_ρ ← C(F) (MemoRepair §2.2, Alg. 1 line 2): the plan (a TransitionPlan document, or its
    columns, :meth:`~memsteward.repair.plan.TransitionPlan.to_columns`), the policy document, the
    roots' staged replacements, and the store generation at planning time (None: not checked).

    ``unchanged`` (None: any change voids the plan) tells whether the plan still holds for the store
    as it is: when only agent writes happened since ``generation``, the barrier goes on if it answers
    True (the write rule, :mod:`~memsteward.store.live`). It reads the whole scope, so the barrier asks
    it before taking the store's write lock, in one read snapshot; under the lock it asks only
    ``unchanged_by`` about the agent writes committed since that snapshot: their ids (each → the text of
    every version it holds, as the content scan reads it) and the inputs they named; None there, or a
    write it cannot name (a batch), and ``unchanged`` is asked again under the lock."""

    plan: Mapping[str, Any]
    policy: Mapping[str, Any]
    staged_roots: Mapping[str, Artifact] = field(default_factory=dict)
    generation: int | None = None
    unchanged: Callable[[Provenance], bool] | None = None
    unchanged_by: Callable[[Provenance, Mapping[str, Any], Collection[str]], bool] | None = None

    @property
    def barrier(self) -> list[str]:
        return list(self.plan["barrier"])

    @property
    def event(self) -> Mapping[str, Any]:
        event: Mapping[str, Any] = self.plan["event"]
        return event


@dataclass(frozen=True)
class PublishSpec:
    """R_ρ (Alg. 1 line 8): ``republish`` (validated successors and root updates), ``erase``
    (deleted roots: every version), ``scrub`` (further artifacts → the highest version to erase, None:
    every version), ``tombstone`` (roots whose erased contents' digests are kept) and the final plan."""

    event_id: int
    republish: Sequence[str]
    erase: Sequence[str]
    plan: Mapping[str, Any]
    scrub: Mapping[str, int | None] = field(default_factory=dict)
    tombstone: Sequence[str] = ()


class ErasureReport(TypedDict, total=False):
    """The outcome of the physical-erasure step, as its audit row records it (counts only)."""

    wait_seconds: float
    backend: str
    complete: bool
    file: bool
    checkpoint: bool
    vacuum: bool
    scan: dict[str, Any] | None
    server_files: str
    versions: int
    keys_destroyed: int
    keys_alive: int
    sealed: bool
    key_store: str
    key_checkpoint: bool
    key_residue: str


@runtime_checkable
class Provenance(Protocol):
    """What planning reads from a store (implemented by every store and by ``Snapshot``)."""

    def reach(self, roots: Collection[str]) -> frozenset[str]:
        """C(F): ``roots`` and every artifact reachable from them over influence edges."""
        ...

    def parent_edges(self, ids: Collection[str]) -> Iterable[tuple[str, str]]:
        """Every influence edge (u, v) with v ∈ ``ids``, ordered by (v, u) (each id's parents
        contiguous and ascending: :func:`~memsteward.repair.scope.read_scope` groups them in one pass)."""
        ...

    def artifacts_of(self, ids: Collection[str], content: bool = True) -> Mapping[str, Artifact]:
        """The current version of each id that exists (unknown ids are left out); ``content`` False
        allows leaving the content out (``None``)."""
        ...

    def unservable_of(self, ids: Collection[str]) -> Mapping[str, str]:
        """The visibility state of each id that is not servable (``"absent"``: no such artifact);
        servable ids are left out."""
        ...

    def shingle_candidates(self, roots: Mapping[str, Any], n: int) -> Iterable[tuple[str, Any]]:
        """(id, content) of every servable artifact that may share an n-word run with one of ``roots``'
        contents, read through the lineage index (a superset: :func:`~memsteward.repair.lineage.untracked`
        checks them exactly)."""
        ...


@runtime_checkable
class RepairLog(Provenance, Protocol):
    """The writes and reads of one event's execution; each write is one transaction."""

    path: str

    def generation(self) -> int: ...
    def unfinished_event(self) -> EventRecord | None: ...
    def barrier(self, spec: BarrierSpec) -> int: ...
    def take_event(self, event_id: int) -> bool: ...
    def event_running(self, event_id: int) -> bool: ...
    def steps(self, event_id: int) -> Mapping[str, StepRecord]: ...
    def stage(self, event_id: int, ident: str, content: Any, meta: Mapping[str, Any],
              support: Sequence[Mapping[str, Any]] = (), forget: Sequence[Mapping[str, Any]] = ()) -> int: ...
    def record_step(self, event_id: int, ident: str, status: StepStatus, report: OracleReport) -> None: ...
    def defer_steps(self, on: bool) -> None:
        """``on``: :meth:`stage` and :meth:`record_step` queue their writes until :meth:`flush_steps`
        commits them in one transaction; off: what is queued is dropped (never committed)."""
        ...
    def flush_steps(self) -> None: ...
    def publish(self, spec: PublishSpec) -> list[tuple[str, int]]: ...
    def erase_physically(self, event_id: int, refs: Sequence[tuple[str, int]] | None = None) -> ErasureReport: ...
    def pending_physical_erasure(self) -> list[int]: ...
    def collect_pool_keys(self) -> int: ...
    def staged(self, ident: str) -> Artifact | None: ...
    def version_of(self, ident: str, version: int) -> Artifact | None: ...
    def is_erased(self, ident: str, version: int) -> bool: ...
    def copy_in_memory(self) -> Storage: ...
    def copy_scope(self, cascade: Collection[str]) -> Storage: ...
    def locator(self) -> Locator | None: ...
    def act_for(self, owner: str) -> None: ...


@runtime_checkable
class Reader(Protocol):
    """Retrieval (the guard) and every read attestation and audit make."""

    path: str

    def serve(self) -> list[Artifact]: ...
    def serve_stream(self) -> Iterator[Artifact]: ...
    def servable(self, ids: Sequence[str]) -> list[str]: ...
    def get(self, ident: str) -> Artifact | None: ...
    def last_with_prefix(self, prefixes: Sequence[str]) -> dict[str, tuple[str, str]]: ...
    def ids_with_prefix(self, prefix: str, limit: int) -> list[tuple[str, str]]: ...
    def states(self) -> dict[str, tuple[str, int]]: ...
    def versions(self, ident: str) -> list[tuple[int, bool, int | None]]: ...
    def versions_held(self, ids: Collection[str]) -> dict[str, list[tuple[int, bool, bool]]]: ...
    def version_of(self, ident: str, version: int) -> Artifact | None: ...
    def event(self, event_id: int | None = None) -> Document | None: ...
    def event_ids(self) -> list[int]: ...
    def audit_rows(self) -> list[AuditRow]: ...
    def audit_head(self) -> tuple[int, str] | None: ...
    def audit_seal(self) -> str | None: ...
    def audit_binding(self) -> tuple[str, str | None]: ...
    def digest_of(self, value: Any) -> str: ...
    def audit_log(self) -> list[Document]: ...
    def audit_log_stream(self) -> Iterator[Document]: ...
    def audit_log_of(self, event_id: int) -> list[Document]: ...
    def erasure_state(self) -> tuple[dict[tuple[str, int], str | None], dict[tuple[str, int], list[str]]]: ...
    def keys_alive(self, refs: Sequence[tuple[str, int]]) -> list[tuple[str, int]]: ...


@runtime_checkable
class WritePath(Protocol):
    """The agent's writes: one transaction each, fenced against what is under repair or erased."""

    def record(self, artifact: Artifact | Mapping[str, Any], inputs: Sequence[str] = (),
               semantic: Sequence[str] = (), *, reingest: str = "refuse", wait: float | None = None,
               before_commit: Callable[[], None] | None = None) -> Artifact: ...
    def record_many(self, writes: Sequence[Any], *, reingest: str = "refuse",
                    wait: float | None = None, before_commit: Callable[[], None] | None = None) -> list[Artifact]: ...
    def tombstone_of(self, content: Any, meta: Mapping[str, Any] | None = None) -> str | None:
        """The tombstone digest (the store's own form) a write of ``content`` would hit, else None."""
        ...


@runtime_checkable
class Admin(Protocol):
    """The store as a whole: import, export, copy, counts, closing."""

    path: str
    backend: str
    migrated: tuple[int, int] | None

    def import_snapshot(self, snap: Snapshot, file: str = "<input>") -> None: ...
    def export(self) -> Document: ...
    def export_stream(self) -> dict[str, Iterator[Document]]: ...
    def snapshot(self) -> Snapshot: ...
    def read_snapshot(self) -> AbstractContextManager[None]: ...
    def row_counts(self, tables: Sequence[str] | None = None) -> dict[str, int]: ...
    def copy_into(self, dst: Self, batch: int = 2000,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, int]: ...
    def dump_state(self) -> dict[str, Any]: ...
    def version_count(self) -> int: ...
    def close(self) -> None: ...


@runtime_checkable
class Storage(RepairLog, Reader, WritePath, Admin, Protocol):
    """Every role at once: what ``open_store`` returns and the command line hands around."""


OPTIONAL = frozenset({"key-destruction", "lineage-index", "copy"})
"""Optional capabilities a store may declare (its ``capabilities()``): ``key-destruction`` — physical
erasure by crypto-shredding: every version is sealed at rest under a data key of its own and a delete
destroys the keys of the versions it erases, so after it *the keys of all N erased versions are
destroyed and no plaintext of them is in the store's files* (its WAL, replicas and backups hold
ciphertext whose key is gone; ``audit --deep`` scans the bytes); the lineage index behind
``shingle_candidates``; ``copy_into`` another store."""


def capabilities(store: object) -> frozenset[str]:
    """The optional capabilities ``store`` declares (none when it declares nothing)."""
    declared = getattr(store, "capabilities", None)
    return frozenset(declared()) & OPTIONAL if callable(declared) else frozenset()


def _members(proto: type) -> frozenset[str]:
    """The public names a protocol declares, its base protocols' included."""
    names: set[str] = set()
    for klass in proto.__mro__:
        if getattr(klass, "_is_protocol", False) and klass is not Protocol:
            names |= {n for n in {*vars(klass), *getattr(klass, "__annotations__", {})} if not n.startswith("_")}
    return frozenset(names)


REPAIR_LOG, READER, WRITE_PATH, ADMIN = _members(RepairLog), _members(Reader), _members(WritePath), _members(Admin)
"""The member names of each protocol (the conformance suite checks them against each backend)."""
