"""What-if replay of a policy change (``memsteward compare OLD NEW --replay STORE``).

The events a store recorded (or the event files given with ``--events``) are replayed, in order,
under each policy on its own private in-memory copy of the store (dry runs: the store on disk is
never written). Each policy's copy evolves with its own outcomes, so a later event sees what the
policy itself left servable. Per event, the two executed TransitionPlans are compared on:

* ``withdrawn`` — B_ρ ∖ R_ρ (MemoRepair Alg. 1 line 8);
* ``republished`` — R_ρ;
* ``removed`` — descendants Φ_μ assigns ``remove``;
* ``unrepaired`` — descendants with a repair mode that were not republished (not selected for
  cost, non-executable, failed validation or blocked): memory left without a fresh successor;
* ``leaked`` — members of C(F) still servable at their pre-event version (the paper's Leak; the
  barrier keeps this empty unless the store is inconsistent).

A difference is **looser** when the new policy republishes (or leaks) an artifact the old one kept
withdrawn, **stricter** for the reverse, and **changed** when only removed / unrepaired differ.

A SQLite store's replay starts from every artifact's first stored version. Content a delete has
erased stays erased (the replay cannot and must not bring it back): the earliest surviving
version stands in for an erased one, and an event that cannot run on what survives is reported
per policy, not hidden. An artifact with no surviving version has lost its metadata too, so a
decision on it that reads metadata (a mode rule's ``meta`` test of its kind, or weights
``from_meta``) cannot be replayed as it was made: each such decision is listed as *partial*
(event, artifact, the fields read), and ``compare --fail-on`` fails on it unless ``--allow-partial``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..policy.model import Policy
from ..repair.artifacts import Artifact, Snapshot
from ..repair.closure import DEFAULT_BACKEND
from ..repair.events import INTERFACE_REFS, STORED_VERSION, Event, event_from_dict, load_event
from ..repair.execute import run_event
from ..repair.plan import TransitionPlan
from ..store.api import Storage
from ..store.opening import open_store

FIELDS = ("withdrawn", "republished", "removed", "unrepaired", "leaked")
MAX_EVENTS = 10_000


@dataclass(frozen=True)
class Outcome:
    """What one policy's dry run did on one event (or why it could not run); ``partial``: the
    decisions it made on artifacts whose metadata was erased, with the metadata fields they read."""

    sets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    error: str = ""
    partial: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {**{k: list(v) for k, v in self.sets.items()}, "error": self.error or None,
                "partial": [{"artifact": a, "reads": list(r)} for a, r in self.partial]}


def meta_read(policy: Policy, kind: str) -> tuple[str, ...]:
    """The metadata fields ``policy`` reads to decide on an artifact of ``kind``: the ``meta``
    fields its kind declares (mode rules may test them) and the ``from_meta`` of its weights."""
    declared = policy.kinds[kind].meta if kind in policy.kinds else {}
    weights = (policy.selection.value.from_meta, policy.selection.cost.from_meta)
    return tuple(sorted({*declared, *(w for w in weights if w)}))


@dataclass(frozen=True)
class EventDiff:
    index: int
    event: dict[str, Any]
    old: Outcome
    new: Outcome

    @property
    def differences(self) -> dict[str, dict[str, list[str]]]:
        out = {}
        for f in FIELDS:
            a, b = set(self.old.sets.get(f, ())), set(self.new.sets.get(f, ()))
            if a != b:
                out[f] = {"only_old": sorted(a - b), "only_new": sorted(b - a)}
        return out

    @property
    def verdict(self) -> str | None:
        d = self.differences
        if self.old.error != self.new.error:
            return "changed"
        if not d:
            return None
        gained = any(d.get(f, {}).get("only_new") for f in ("republished", "leaked"))
        lost = any(d.get(f, {}).get("only_old") for f in ("republished", "leaked"))
        if gained:
            return "looser"  # any loosening counts, even beside a tightening elsewhere
        return "stricter" if lost else "changed"

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "event": self.event, "verdict": self.verdict, "old": self.old.as_dict(),
                "new": self.new.as_dict(), "differences": self.differences}


def outcome(plan: TransitionPlan, servable_versions: dict[str, int]) -> Outcome:
    """The compared sets of an executed plan, given what is servable afterwards (id → version)."""
    republished = set(plan.republished)
    removed = {i for i, m in plan.modes.items() if m == "remove"}
    unrepaired = {i for i, m in plan.modes.items() if m != "remove" and i not in republished}
    leaked = {i for i in plan.cascade if servable_versions.get(i) == plan.base_versions.get(i)
              and i not in republished and plan.roots.get(i) not in ("replaced", "interface-updated")}
    return Outcome({"withdrawn": tuple(sorted(plan.withdrawn)), "republished": tuple(sorted(republished)),
                    "removed": tuple(sorted(removed)), "unrepaired": tuple(sorted(unrepaired)),
                    "leaked": tuple(sorted(leaked))})


def recorded_events(store: Storage) -> list[dict[str, Any]]:
    """The completed events a store recorded, oldest first."""
    latest = store.event()
    if latest is None:
        return []
    if latest["id"] > MAX_EVENTS:
        raise InputError(f"the store records more than {MAX_EVENTS} events; replay a range with --events",
                         file=store.path)
    docs = []
    for i in range(1, latest["id"] + 1):
        ev = store.event(i)
        if ev is not None and ev["status"] == "done":
            docs.append(_inlined(store, ev["event"]))
    return docs


def _inlined(store: Storage, doc: dict[str, Any]) -> dict[str, Any]:
    """The event with each replacement and migrate interface the store keeps by reference (its staged
    version) read back into content (and meta), as it was given; a version a later delete erased stays
    a reference."""
    def kept(ident: str, version: int) -> Artifact | None:
        if store.is_erased(ident, version):
            return None
        found = store.version_of(ident, version)
        return found if found is not None and found.content is not None else None

    out = dict(doc)
    reps = doc.get("replacements")
    if reps:
        inlined = []
        for o in reps:
            if STORED_VERSION in o and (k := kept(o["id"], int(o[STORED_VERSION]))) is not None:
                o = {**{key: o[key] for key in ("id", "kind", "arch") if o.get(key) is not None},
                     "content": k.content, "meta": dict(k.meta)}
            inlined.append(o)
        out["replacements"] = inlined
    refs = doc.get(INTERFACE_REFS)
    if refs:
        found = {r: k.content for r, ref in refs.items() if (k := kept(r, int(ref[STORED_VERSION]))) is not None}
        if len(found) == len(refs):
            del out[INTERFACE_REFS]
            out["interface"] = found if len(doc["roots"]) > 1 else found[doc["roots"][0]]
    return out


def unknown_meta(store: Storage) -> frozenset[str]:
    """Ids none of whose versions survives (a delete erased all): their metadata is gone."""
    return frozenset(i for i in store.snapshot().artifacts if all(erased for _v, erased, _e in store.versions(i)))


def initial_snapshot(store: Storage) -> tuple[Snapshot, list[str]]:
    """Every artifact at its first stored version, servable.

    A version a delete erased (G6) is never read back: the earliest surviving version stands in
    for it (for a derived artifact, the successor republished without the deleted data), and an
    artifact with no surviving version keeps no content. Also returns the ids whose first version
    was erased (their replay may differ from what happened: content and metadata are gone).
    """
    current = store.snapshot()
    arts: dict[str, Artifact] = {}
    lost: list[str] = []
    for ident, a in current.artifacts.items():
        versions = sorted(store.versions(ident))
        first = versions[0][0]
        kept = [v for v, erased, _ev in versions if not erased]
        if versions[0][1]:
            lost.append(ident)
        old = store.version_of(ident, kept[0]) if kept else None
        content, meta = (old.content, dict(old.meta)) if old is not None else (None, {})
        arts[ident] = Artifact(ident, a.kind, a.arch, first, content, meta, "servable")
    return Snapshot(arts, current.edges), sorted(lost)


def replay(old: Policy, new: Policy, store_path: str,
           event_paths: tuple[str, ...] = ()) -> tuple[list[EventDiff], int, list[str]]:
    """Replay under both policies: (one diff per event, number of events, ids that start erased)."""
    lost: list[str] = []
    blind: frozenset[str] = frozenset()
    source = open_store(store_path)
    try:
        if event_paths:
            snap = source.snapshot()
            events = [load_event(p, snap).as_dict() for p in event_paths]
        else:
            events = recorded_events(source)
            if not events:
                raise InputError("the store records no completed events to replay; give event files with --events",
                                 file=store_path)
            snap, lost = initial_snapshot(source)
            blind = unknown_meta(source)
    finally:
        source.close()
    chains = []
    for policy in (old, new):
        chains.append(_run_chain(policy, snap, events, blind))
    diffs = [EventDiff(k + 1, ev, a, b) for k, (ev, a, b) in enumerate(zip(events, chains[0], chains[1]))]
    return diffs, len(events), lost


def _run_chain(policy: Policy, snap: Snapshot, events: list[dict[str, Any]],
               blind: frozenset[str] = frozenset()) -> list[Outcome]:
    store = open_store()
    out: list[Outcome] = []
    try:
        store.import_snapshot(snap, file="<replay>")
        for doc in events:
            try:
                event: Event = event_from_dict(doc)
                plan = run_event(store, policy, event, "mincut", DEFAULT_BACKEND)
            except InputError as exc:
                out.append(Outcome(error=exc.message))
                continue
            done = outcome(plan, {a.id: a.version for a in store.serve()})
            partial = tuple((i, reads) for i in sorted(set(plan.modes) & blind)
                            if (reads := meta_read(policy, snap.artifacts[i].kind)))
            out.append(Outcome(done.sets, partial=partial))
    finally:
        store.close()
    return out


def totals(diffs: list[EventDiff]) -> dict[str, dict[str, int]]:
    """Per compared set: how many artifacts over all events, under each policy."""
    return {f: {"old": sum(len(d.old.sets.get(f, ())) for d in diffs),
                "new": sum(len(d.new.sets.get(f, ())) for d in diffs)} for f in FIELDS}


def describe_event(doc: dict[str, Any]) -> str:
    return f"{doc.get('type')} {','.join(doc.get('roots', []))}"

