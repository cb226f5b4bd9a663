"""Repair events e = (F, τ, Δ) (MemoRepair §2.1) and their JSON format.

``{"type": "delete", "roots": ["r1"]}``;
``{"type": "correct", "roots": ["r2"], "replacements": [<artifact>...]}`` — each replacement is a
fresh version of a root (same id), the set X_Δ;
``{"type": "migrate", "roots": ["api-v1"], "interface": {...}}`` — the post-event interface κ_e
(for several roots: an object keyed by root id).
A correct event may say ``"privacy": true``: the superseded content was personal data, so it is
erased at publication (with everything built from it), as a delete would.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InputError
from ..policy.model import EVENTS
from ..store.api import Provenance
from .artifacts import Artifact, Snapshot, line_of, parse_artifact, read_json
from .schemas import id_problem, interface_problem

EVENT_FIELDS = frozenset({"type", "roots", "replacements", "interface", "privacy"})


@dataclass(frozen=True)
class Event:
    """e = (F, τ, Δ): ``roots`` F, ``type`` τ, Δ = replacements X_Δ and/or interfaces κ_e."""

    type: str
    roots: tuple[str, ...]
    replacements: tuple[Artifact, ...] = ()
    interfaces: Mapping[str, Any] = field(default_factory=dict)
    privacy: bool = False  # a correct event whose superseded content must be erased (like a delete)
    # a migrate event read back from the store: root → {stored_version, sha256}, the version its
    # barrier staged holding κ_e (:func:`referenced`); :func:`with_interfaces` reads them back
    interface_refs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def replacement_ids(self) -> frozenset[str]:
        return frozenset(a.id for a in self.replacements)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "roots": list(self.roots)}
        if self.replacements:
            out["replacements"] = [_replacement_dict(a) for a in self.replacements]
        if self.interfaces:
            out["interface"] = (dict(self.interfaces) if len(self.roots) > 1
                                else self.interfaces[self.roots[0]])
        if self.privacy:
            out["privacy"] = True
        if self.interface_refs:
            out[INTERFACE_REFS] = {r: dict(ref) for r, ref in sorted(self.interface_refs.items())}
        return out


def _replacement_dict(a: Artifact) -> dict[str, Any]:
    d = a.as_dict()
    d.pop("state", None)
    d.pop("version", None)
    return d


def load_event(path: str, source: Provenance) -> Event:
    """Read and validate an event file against a store or snapshot (InputError on any problem)."""
    doc, text = read_json(path)
    return parse_event(doc, source, path, text)


def parse_event(doc: Any, source: Provenance, file: str = "<event>", text: str = "") -> Event:
    """Validate an event document: known type, existing roots, well-formed Δ. Only the roots are
    read from ``source`` (a ``Store`` or a ``Snapshot``)."""
    def fail(msg: str, fld: str, value: Any = None) -> InputError:
        return InputError(msg, file=file, line=line_of(text, value) if value is not None else None, field=fld)

    if not isinstance(doc, dict):
        raise fail("an event is an object with 'type' and 'roots'", "")
    extra = set(doc) - EVENT_FIELDS
    if extra:
        raise fail(f"unknown event field {sorted(extra)[0]!r}", sorted(extra)[0])
    etype = doc.get("type")
    if etype not in EVENTS:
        raise fail(f"event type must be one of {', '.join(EVENTS)}", "type")
    roots = doc.get("roots")
    if not isinstance(roots, list) or not roots or not all(isinstance(r, str) for r in roots):
        raise fail("'roots' must be a non-empty list of artifact ids", "roots")
    for i, r in enumerate(roots):  # no store holds such an id, and PostgreSQL cannot even be asked about it
        bad_id = id_problem(r)
        if bad_id:
            raise fail(bad_id, f"roots[{i}]")
    known = source.artifacts_of(set(roots))
    for i, r in enumerate(roots):
        if r not in known:
            raise fail(f"unknown artifact {r!r}", f"roots[{i}]", r)
        if known[r].state == "erased":
            raise fail(f"artifact {r!r} was erased by an earlier delete event", f"roots[{i}]", r)
    if len(set(roots)) != len(roots):
        raise fail("'roots' lists an artifact twice", "roots")
    replacements = _replacements(doc, etype, roots, known, file, text)
    interfaces = _interfaces(doc, etype, roots, file)
    for r, iface in interfaces.items():
        problem = migrate_problem(known[r], iface)
        if problem is not None:
            fld, msg = problem
            raise InputError(f"migrate of {r!r}: {msg}", file=file, line=line_of(text, r),
                             field=f"interface{'' if len(roots) == 1 else '.' + r}{fld}")
    privacy = doc.get("privacy", False)
    if not isinstance(privacy, bool) or (privacy and etype != "correct"):
        raise InputError("'privacy' is true or false, and belongs to correct events only", file=file,
                         line=line_of(text, "privacy"), field="privacy")
    return Event(etype, tuple(roots), replacements, interfaces, privacy)


def _replacements(doc: dict, etype: str, roots: list[str], known: Mapping[str, Artifact], file: str,
                  text: str) -> tuple[Artifact, ...]:
    raw = doc.get("replacements")
    if etype != "correct":
        if raw is not None:
            raise InputError("'replacements' belong to correct events only", file=file, field="replacements")
        return ()
    if not isinstance(raw, list) or not raw:
        raise InputError("a correct event needs a non-empty 'replacements' list", file=file, field="replacements")
    out: list[Artifact] = []
    for i, obj in enumerate(raw):
        art = parse_artifact(obj, f"replacements[{i}]", file, text)
        if art.id not in roots:
            raise InputError(f"replacement {art.id!r} is not a root of the event (a replacement is a fresh "
                             "version of a root)", file=file, line=line_of(text, art.id),
                             field=f"replacements[{i}].id")
        old = known[art.id]
        if (art.kind, art.arch) != (old.kind, old.arch):
            raise InputError(f"replacement {art.id!r} changes kind/arch", file=file, field=f"replacements[{i}].kind")
        if art.id in {a.id for a in out}:
            raise InputError(f"replacement {art.id!r} given twice", file=file, field=f"replacements[{i}].id")
        out.append(art)
    return tuple(out)


def migrate_problem(root: Artifact, iface: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field suffix, message) when a migrate cannot apply to ``root``: the root is not a record (a
    migrate replaces a source's interface; a summary, cache or skill is derived and is repaired, never
    migrated), a rename names a tool that is in neither the old nor the new interface, or a rename
    table has a cycle (``{a: b, b: a}``, ``{a: a}``)."""
    if root.kind != "record":
        return "", f"the root is a {root.kind}, not a record (a tool interface is a record; derived artifacts are repaired)"
    found = root.content.get("tools") if isinstance(root.content, dict) else None
    old = found if isinstance(found, dict) else {}
    tools = iface.get("tools")
    new: dict[str, Any] = tools if isinstance(tools, dict) else old
    renames = iface.get("renames") or {}
    for src, dst in renames.items():
        if src not in old and dst not in old:  # (dst already in old: the rename was applied before)
            return f".renames.{src}", f"renames tool {src!r}, which the interface does not have"
        if dst not in new:
            return f".renames.{src}", f"renames to tool {dst!r}, which the new interface does not have"
    cycle = rename_cycle(renames)
    if cycle:
        return ".renames", f"the renames form a cycle ({' → '.join(cycle)})"
    for tool, table in (iface.get("arg_renames") or {}).items():
        if tool not in new and tool not in old:
            return f".arg_renames.{tool}", f"arg_renames names tool {tool!r}, which is in neither interface"
        cycle = rename_cycle(table)
        if cycle:
            return f".arg_renames.{tool}", f"the argument renames form a cycle ({' → '.join(cycle)})"
    return None


def rename_cycle(renames: Mapping[str, str]) -> list[str] | None:
    """A cycle of the rename map (old → new) as the list of names around it, or None."""
    for start in renames:
        seen, name = [start], renames[start]
        while name in renames and name not in seen:
            seen.append(name)
            name = renames[name]
        if name == start:
            return [*seen, start]
    return None


def _interfaces(doc: dict, etype: str, roots: list[str], file: str) -> dict[str, Any]:
    raw = doc.get("interface")
    if etype != "migrate":
        if raw is not None:
            raise InputError("'interface' belongs to migrate events only", file=file, field="interface")
        return {}
    if not isinstance(raw, dict):
        raise InputError("a migrate event needs an 'interface' object (the new κ_e)", file=file, field="interface")
    if len(roots) == 1:
        found = {roots[0]: raw}
        where = {roots[0]: "interface"}
    else:
        if set(raw) != set(roots):
            raise InputError("with several roots, 'interface' is an object keyed by exactly the root ids",
                             file=file, field="interface")
        found = dict(raw)
        where = {r: f"interface.{r}" for r in raw}
    for r, iface in found.items():
        problem = interface_problem(iface, where[r])
        if problem is not None:
            fld, msg = problem
            raise InputError(f"migrate interface of {r!r}: {msg}", file=file, field=fld)
    return found


STORED_VERSION = "stored_version"
"""The key of a replacement the store keeps as a reference: the version its barrier staged."""
INTERFACE_REFS = "interface_refs"
"""The field of a stored migrate event that replaces ``interface``: root → reference to its staged version."""


def referenced(doc: Mapping[str, Any], versions: Mapping[str, int],
               digest: Callable[[Any], str] | None = None) -> dict[str, Any]:
    """The event document as the store keeps it (issue 25): each replacement X_Δ that the barrier
    staged as version ``versions[id]`` becomes a reference — id, kind, arch, that version and the
    content's digest — and so does each migrate interface κ_e (``interface_refs``: root → version and
    digest, in place of ``interface``), so their text lives in ``versions`` only (where a later delete
    erases it), never in ``events``. What is already held as a reference stays as it is. ``digest`` is
    the store's digest of a content (``digest_of``: HMAC-SHA256 under its index key once sealed, so a
    short replacement cannot be guessed back from the reference); default: plain SHA-256."""
    from .writes import content_digest

    digest = content_digest if digest is None else digest

    out = dict(doc)
    reps = doc.get("replacements")
    if reps:
        kept = []
        for o in reps:
            if STORED_VERSION in o or o["id"] not in versions:
                kept.append(o)
                continue
            ref = {k: o[k] for k in ("id", "kind", "arch") if o.get(k) is not None}
            kept.append({**ref, STORED_VERSION: int(versions[o["id"]]), "sha256": digest(o.get("content"))})
        out["replacements"] = kept
    if doc.get("type") == "migrate" and "interface" in doc:
        roots = list(doc["roots"])
        whole = dict(doc["interface"]) if len(roots) > 1 else {roots[0]: doc["interface"]}
        refs = dict(doc.get(INTERFACE_REFS) or {})
        refs.update({r: {STORED_VERSION: int(versions[r]), "sha256": digest(i)}
                     for r, i in whole.items() if r in versions})
        left = {r: i for r, i in whole.items() if r not in versions}
        del out["interface"]
        if left:
            out["interface"] = left if len(roots) > 1 else left[roots[0]]
        out[INTERFACE_REFS] = dict(sorted(refs.items()))
    return out


def with_interfaces(event: Event, content_of: Callable[[str, int], Any]) -> Event:
    """A migrate event read back from the store with its interfaces κ_e again: each reference's
    content read from its staged version (``content_of(root, version)``, e.g. the store's
    ``version_of``). Anything else is returned as it is."""
    if not event.interface_refs:
        return event
    found = {r: content_of(r, int(ref[STORED_VERSION])) for r, ref in event.interface_refs.items()}
    return replace(event, interfaces={**event.interfaces, **found}, interface_refs={})


def _stored_replacement(o: Mapping[str, Any]) -> Artifact:
    if STORED_VERSION in o:  # content and meta live in the staged version (Store.staged / version_of)
        return Artifact(o["id"], o["kind"], o.get("arch"), int(o[STORED_VERSION]))
    return parse_artifact(o, "replacements", "<store>")


def event_from_dict(doc: dict, snapshot: Snapshot | None = None) -> Event:
    """Rebuild an event recorded in the store (already validated when it was accepted). A replacement
    kept as a reference (:func:`referenced`) comes back without content: the store holds it."""
    roots = tuple(doc["roots"])
    reps = tuple(_stored_replacement(o) for o in doc.get("replacements", []))
    raw = doc.get("interface")
    interfaces = {} if raw is None else (dict(raw) if len(roots) > 1 else {roots[0]: raw})
    return Event(doc["type"], roots, reps, interfaces, bool(doc.get("privacy", False)),
                 dict(doc.get(INTERFACE_REFS) or {}))


def dumps(event: Event) -> str:
    return json.dumps(event.as_dict(), sort_keys=True)
