"""Artifacts, edges and snapshots: the provenance graph G = (V, E^inf, E^sem) (§2.1).

Also the JSON exchange format of a store and its validation. Validation reads the whole
document before anything is written, so bad input never changes a store.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple, TypeGuard

from ..errors import InputError
from ..jsonio import parse_json, read_text, source_name
from ..policy.model import ARCHITECTURES, KIND_PATTERN, KINDS, MAX_KIND_CHARS
from .schemas import artifact_problem

EDGE_TYPES: tuple[str, ...] = ("influence", "semantic")
STATES: tuple[str, ...] = ("servable", "withdrawn", "staged", "republished", "erased")
SERVABLE = "servable"
SERVABLE_STATES: frozenset[str] = frozenset({SERVABLE, "republished"})
SCANNED_STATES: frozenset[str] = SERVABLE_STATES | {"withdrawn"}
"""States the content scan reads (issue 25): served, or left withdrawn by an earlier event."""
ABSENT = "absent"  # the state planning gives an influence parent that has no artifact (never support)
ARTIFACT_FIELDS: frozenset[str] = frozenset({"id", "kind", "arch", "version", "content", "meta", "state"})


class _NoMeta(dict):
    """The empty metadata an :class:`Artifact` gets by default: one shared instance, which refuses
    every change (a dict for JSON and pickling; building an artifact with its own metadata is how
    metadata is given)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("an artifact's default metadata is shared and read-only: pass meta= to Artifact")

    __setitem__ = __delitem__ = __ior__ = update = setdefault = pop = popitem = clear = _refuse  # type: ignore[assignment]


class Artifact(NamedTuple):
    """One durable artifact at one version (kind ∈ {record, cache, summary, skill}; arch for skills).

    An immutable value: a named tuple, which a store reads by the 10^5 for planning in half a frozen
    dataclass's time. A tuple all the same: the json module writes it as an array, so documents
    use :meth:`as_dict`. Without ``meta`` it has the shared read-only empty metadata."""

    id: str
    kind: str
    arch: str | None = None
    version: int = 1
    content: Any = None
    meta: Mapping[str, Any] = _NoMeta()
    state: str = "servable"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind}
        if self.arch is not None:
            out["arch"] = self.arch
        out.update(version=self.version, content=self.content, meta=dict(self.meta), state=self.state)
        return out


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    type: str = "influence"

    def as_dict(self) -> dict[str, str]:
        return {"src": self.src, "dst": self.dst, "type": self.type}


@dataclass(frozen=True)
class Snapshot:
    """A read-only view of a store: artifacts by id (current versions) and all edges."""

    artifacts: Mapping[str, Artifact]
    edges: tuple[Edge, ...]

    def influence_edges(self) -> list[tuple[str, str]]:
        return [(e.src, e.dst) for e in self.edges if e.type == "influence"]

    @cached_property
    def _influence_index(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """(children, parents) over E^inf, built once per snapshot (the snapshot is immutable). An
        edge given twice counts once, as in a store, where (src, dst, type) is the key."""
        children: dict[str, list[str]] = {}
        parents: dict[str, list[str]] = {}
        for src, dst in dict.fromkeys((e.src, e.dst) for e in self.edges if e.type == "influence"):
            children.setdefault(src, []).append(dst)
            parents.setdefault(dst, []).append(src)
        return children, parents

    def reach(self, roots: Collection[str]) -> frozenset[str]:
        """C(F) = Reach(F; E^inf), roots included (one BFS over the cached child index)."""
        children = self._influence_index[0]
        seen = set(roots)
        queue = deque(seen)
        while queue:
            for child in children.get(queue.popleft(), ()):
                if child not in seen:
                    seen.add(child)
                    queue.append(child)
        return frozenset(seen)

    def parent_edges(self, ids: Collection[str]) -> list[tuple[str, str]]:
        """Every influence edge (u, v) with v ∈ ``ids``, ordered by (v, u)."""
        parents = self._influence_index[1]
        return [(u, v) for v in sorted(ids) for u in sorted(parents.get(v, ()))]

    def artifacts_of(self, ids: Collection[str], content: bool = True) -> dict[str, Artifact]:
        """The artifacts among ``ids`` that exist (in memory already: always with content)."""
        return {i: self.artifacts[i] for i in ids if i in self.artifacts}

    def unservable_of(self, ids: Collection[str]) -> dict[str, str]:
        """The state of each of ``ids`` that is not servable (``"absent"``: no such artifact)."""
        out = {i: self.artifacts[i].state if i in self.artifacts else ABSENT for i in ids}
        return {i: s for i, s in out.items() if s not in SERVABLE_STATES}

    @cached_property
    def _shingle_index(self) -> dict[int, list[str]]:
        """The lineage index of the servable artifacts (trigram hash → ids), built once per snapshot."""
        from .lineage import index_hashes

        index: dict[int, list[str]] = {}
        for i, a in sorted(self.artifacts.items()):
            if a.state in SCANNED_STATES:
                for h in index_hashes([[a.content, dict(a.meta)]]):
                    index.setdefault(h, []).append(i)
        return index

    def shingle_candidates(self, roots: Mapping[str, Any], n: int) -> list[tuple[str, Any]]:
        """(id, content) of the servable artifacts that may share an n-word run with one of ``roots``'
        contents (:func:`memsteward.repair.lineage.candidates` over the snapshot's index)."""
        from .lineage import candidates

        index = self._shingle_index
        ids = candidates(roots, n, lambda h, limit: index.get(h, [])[:limit])
        return [(i, [[self.artifacts[i].content, dict(self.artifacts[i].meta)]]) for i in sorted(ids)]

    def as_dict(self) -> dict[str, Any]:
        return {"artifacts": [a.as_dict() for a in self.artifacts.values()],
                "edges": [e.as_dict() for e in self.edges]}


# --------------------------------------------------------------------------- JSON parsing


def line_of(text: str, value: Any) -> int | None:
    """Best-effort line of the first occurrence of a JSON value in a document."""
    if not text:
        return None
    needle = json.dumps(value)
    pos = text.find(needle)
    return None if pos < 0 else text.count("\n", 0, pos) + 1


def read_json(path: str) -> tuple[Any, str]:
    """Read a JSON file (and its text, for line lookups); errors name file, line and column."""
    text = read_text(path, what="JSON file")
    return parse_json(text, source_name(path)), text


_KIND = re.compile(KIND_PATTERN)


def is_kind_name(kind: Any) -> TypeGuard[str]:
    """A paper kind, or a name a policy may declare (an identifier of at most MAX_KIND_CHARS)."""
    return isinstance(kind, str) and len(kind) <= MAX_KIND_CHARS and _KIND.fullmatch(kind) is not None


def parse_artifact(obj: Any, where: str, file: str, text: str = "", sized: bool = True) -> Artifact:
    """Validate one artifact object of the exchange format (``sized`` False: the caller checks the
    size against :data:`MAX_CONTENT_BYTES` itself, on the JSON text it makes anyway)."""
    def fail(msg: str, fld: str = "", value: Any = None) -> InputError:
        return InputError(msg, file=file, line=line_of(text, value) if value is not None else None,
                          field=f"{where}.{fld}" if fld else where)

    if not isinstance(obj, dict):
        raise fail("an artifact is an object")
    extra = set(obj) - ARTIFACT_FIELDS
    if extra:
        raise fail(f"unknown field {sorted(extra)[0]!r} (extra fields belong in 'meta')", sorted(extra)[0])
    ident = obj.get("id")
    if not isinstance(ident, str) or not ident:
        raise fail("artifact 'id' must be a non-empty string", "id")
    kind = obj.get("kind")
    if not is_kind_name(kind):
        raise fail(f"artifact {ident!r}: kind must be one of {', '.join(KINDS)} or a kind a policy declares "
                   f"(an identifier of at most {MAX_KIND_CHARS} characters)", "kind", ident)
    arch = obj.get("arch")
    if kind == "skill" and arch not in ARCHITECTURES:
        raise fail(f"skill {ident!r}: arch must be one of {', '.join(ARCHITECTURES)}", "arch", ident)
    if arch is not None and (kind in KINDS and kind != "skill" or arch not in ARCHITECTURES):
        raise fail(f"artifact {ident!r}: only skills have an arch, one of {', '.join(ARCHITECTURES)}", "arch", ident)
    version = obj.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise fail(f"artifact {ident!r}: version must be a positive integer", "version", ident)
    meta = obj.get("meta", {})
    if not isinstance(meta, dict):
        raise fail(f"artifact {ident!r}: meta must be an object", "meta", ident)
    state = obj.get("state", "servable")
    if state not in STATES:
        raise fail(f"artifact {ident!r}: state must be one of {', '.join(STATES)}", "state", ident)
    problem = artifact_problem(ident, kind, arch, version, obj.get("content"), meta)
    if problem is not None:
        fld, msg = problem
        raise fail(f"artifact {ident!r}: {msg}", fld, ident)
    size = json_size(obj.get("content")) + json_size(meta) if sized else 0
    if size > MAX_CONTENT_BYTES:  # one cap for every write path: put, import, replacements
        raise fail(f"artifact {ident!r} is {size} bytes of JSON, over the {MAX_CONTENT_BYTES}-byte limit",
                   "content", ident)
    return Artifact(ident, kind, arch, version, obj.get("content"), dict(meta), state)


MAX_CONTENT_BYTES = 1 << 20
"""Limit on one artifact's content plus metadata, as compact JSON UTF-8 bytes (1 MiB), on every write
path: ``store put``, ``store import``, a correct event's replacements, a migrate's rewritten versions."""


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON (0 when it is not JSON: the schema check reports that)."""
    try:
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError, RecursionError):
        return 0


def artifact_field_problem(art: Artifact) -> tuple[str, str] | None:
    """The schema problem of an artifact already built (e.g. read from an older store), or None."""
    return artifact_problem(art.id, art.kind, art.arch, art.version, art.content, art.meta)


def parse_store_document(doc: Any, file: str, text: str = "") -> Snapshot:
    """Validate a whole store document: unique ids, edges between existing nodes, known types."""
    if not isinstance(doc, dict):
        raise InputError("a store document is an object with 'artifacts' and 'edges'", file=file)
    extra = set(doc) - {"artifacts", "edges"}
    if extra:
        raise InputError(f"unknown top-level field {sorted(extra)[0]!r}", file=file, field=sorted(extra)[0])
    raw_artifacts = doc.get("artifacts", [])
    raw_edges = doc.get("edges", [])
    if not isinstance(raw_artifacts, list):
        raise InputError("'artifacts' must be a list", file=file, field="artifacts")
    if not isinstance(raw_edges, list):
        raise InputError("'edges' must be a list", file=file, field="edges")
    artifacts: dict[str, Artifact] = {}
    for i, obj in enumerate(raw_artifacts):
        art = parse_artifact(obj, f"artifacts[{i}]", file, text)
        if art.id in artifacts:
            raise InputError(f"duplicate artifact id {art.id!r}", file=file,
                             line=_second_line(text, art.id), field=f"artifacts[{i}].id")
        artifacts[art.id] = art
    edges = parse_edges(raw_edges, artifacts.keys(), file, text)
    return Snapshot(artifacts, edges)


def parse_edges(raw_edges: list, known: Iterable[str], file: str, text: str = "") -> tuple[Edge, ...]:
    known_ids = set(known)
    seen: set[Edge] = set()
    out: list[Edge] = []
    for i, e in enumerate(raw_edges):
        where = f"edges[{i}]"
        if not isinstance(e, dict) or set(e) - {"src", "dst", "type"}:
            raise InputError("an edge is an object {src, dst, type}", file=file, field=where)
        etype = e.get("type", "influence")
        if etype not in EDGE_TYPES:
            raise InputError(f"edge type must be 'influence' or 'semantic', got {etype!r}", file=file,
                             field=f"{where}.type")
        for end in ("src", "dst"):
            node = e.get(end)
            if not isinstance(node, str):
                raise InputError(f"edge {end} must be an artifact id", file=file, field=f"{where}.{end}")
            if node not in known_ids:
                raise InputError(f"edge {end} {node!r} names a missing artifact", file=file,
                                 line=line_of(text, node), field=f"{where}.{end}")
        edge = Edge(e["src"], e["dst"], etype)
        if edge not in seen:
            seen.add(edge)
            out.append(edge)
    return tuple(out)


def _second_line(text: str, ident: str) -> int | None:
    needle = json.dumps(ident)
    first = text.find(needle)
    second = text.find(needle, first + 1) if first >= 0 else -1
    return None if second < 0 else text.count("\n", 0, second) + 1
