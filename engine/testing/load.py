"""Discovery and validation of test files: every problem is one :class:`InputError` naming the
test file, the line and the field (exit 2), before any case runs."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..clearance.case import Case, load_case, parse_case
from ..errors import InputError
from ..policy.loader import Loc, PolicySource, SourceMap, _schema_findings, load_checked_source, load_yaml
from ..repair.artifacts import Snapshot, parse_store_document
from ..repair.events import Event, load_event, parse_event
from ..store.api import Storage
from ..store.opening import open_store
from .spec import CaseSpec, Invariant, Partial, SuiteSpec

SUFFIX = "_test.yaml"
MAX_FILES = 1_000


@dataclass(frozen=True)
class LoadedCase:
    """A validated case, ready to run (its store is built in memory when it runs)."""

    suite: Suite
    index: int
    spec: CaseSpec
    snapshot: Snapshot | None = None
    event: Event | None = None
    clearance: Case | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def line(self) -> int:
        return self.suite.source.where(("cases", self.index))[0]

    def where(self, *loc: Any) -> str:
        """``file:line`` of a field of this case."""
        return f"{self.suite.file}:{self.suite.source.where(('cases', self.index, *loc))[0]}"


@dataclass
class Suite:
    """A loaded test file and the policy it tests."""

    file: str
    source: SourceMap
    spec: SuiteSpec
    policy: PolicySource
    cases: list[LoadedCase]

    @property
    def invariants(self) -> list[Invariant]:
        return self.spec.invariants


def discover(paths: tuple[str, ...] | list[str]) -> list[str]:
    """Test files named by ``paths``: files as given, folders searched recursively for ``*_test.yaml``."""
    found: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found += [str(f) for f in sorted(path.rglob(f"*{SUFFIX}")) if f.is_file()]
        elif path.exists():
            found.append(str(path))
        else:
            raise InputError("no such file or folder", file=str(p))
    if len(found) > MAX_FILES:
        raise InputError(f"more than {MAX_FILES} test files", file=str(paths[0]))
    return found


def _fail(source: SourceMap, loc: Loc, message: str) -> InputError:
    from ..policy.loader import dotted

    line, col = source.where(loc)
    return InputError(message, file=source.file, line=line, col=col, field=dotted(loc))


_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _loc_of(field: str) -> Loc:
    """``artifacts[3].kind`` → ("artifacts", 3, "kind")."""
    return tuple(int(i) if i else name for name, i in _PART.findall(field))


def _relocate(exc: InputError, source: SourceMap, prefix: Loc) -> InputError:
    """An error from an inline document, moved to the test file's line of the offending field."""
    loc = prefix + _loc_of(exc.field)
    return _fail(source, loc, exc.message)


def _resolve_policy(file: Path, spec: SuiteSpec, source: SourceMap) -> Path:
    if spec.policy is not None:
        p = Path(os.path.normpath(file.parent / spec.policy))
        if not p.is_file():
            raise _fail(source, ("policy",), f"policy file not found: {spec.policy}")
        return p
    stem = file.name[: -len(SUFFIX)] if file.name.endswith(SUFFIX) else file.stem
    for folder in (file.parent, file.parent.parent):
        p = Path(os.path.normpath(folder / f"{stem}.yaml"))
        if p.is_file():
            return p
    raise _fail(source, (), f"no 'policy' given and no {stem}.yaml next to the test file or in its parent folder")


def load_suite(path: str) -> Suite:
    """Read, validate and prepare every case of one test file (InputError on the first problem)."""
    data, source = load_yaml(path)
    if not isinstance(data, dict):
        raise _fail(source, (), "a test file is a mapping with 'cases'")
    from pydantic import ValidationError

    try:
        spec = SuiteSpec.model_validate(data)
    except ValidationError as exc:
        first = _schema_findings(exc, source)[0]
        raise InputError(first.message, file=first.file, line=first.line, col=first.col, field=first.field) from None
    file = Path(path)
    policy = load_checked_source(_resolve_policy(file, spec, source))
    suite = Suite(path, source, spec, policy, [])
    _check_invariants(suite)
    shared = None
    if spec.store is not None:
        shared = _snapshot(spec.store, file, source, ("store",), suite)
    for i, case in enumerate(spec.cases):
        suite.cases.append(_load_case(suite, i, case, shared))
    return suite


def _snapshot(raw: str | dict, file: Path, source: SourceMap, loc: Loc, suite: Suite) -> Snapshot:
    if isinstance(raw, str):
        target = file.parent / raw
        if not target.exists():
            raise _fail(source, loc, f"store not found: {raw}")
        store = open_store(str(target))
        try:
            snap = store.snapshot()
        finally:
            store.close()
    else:
        try:
            snap = parse_store_document(raw, suite.file)
        except InputError as exc:
            raise _relocate(exc, source, loc) from None
    kinds = suite.policy.policy.kinds
    for k, art in enumerate(snap.artifacts.values()):
        if art.kind not in kinds:
            where = loc + ("artifacts", k, "kind") if isinstance(raw, dict) else loc
            raise _fail(source, where, f"artifact {art.id!r} has kind '{art.kind}', which the policy "
                                       f"{suite.policy.policy.name!r} does not declare")
    return snap


def fresh_store(snap: Snapshot, file: str = "<test>") -> Storage:
    """A private in-memory store holding ``snap`` (the case's dry-run copy)."""
    store = open_store()
    store.import_snapshot(snap, file=file)
    return store


def _load_case(suite: Suite, i: int, case: CaseSpec, shared: Snapshot | None) -> LoadedCase:
    source, file = suite.source, Path(suite.file)
    loc: Loc = ("cases", i)
    if case.clearance is not None:
        cl = _clearance(case.clearance, file, source, loc + ("clearance",))
        ids = set(cl.task.ids)
        _known_ids(case.expect.cleared, ids, source, loc + ("expect", "cleared"), "memory of the context")
        return LoadedCase(suite, i, case, clearance=cl)
    if case.store is not None:
        snap = _snapshot(case.store, file, source, loc + ("store",), suite)
    elif shared is not None:
        snap = shared
    else:
        raise _fail(source, loc, "a repair case needs a 'store' (here or at the top of the file)")
    event = _event(case.event, snap, file, source, loc + ("event",))  # type: ignore[arg-type]
    ids = set(snap.artifacts)
    exp = case.expect
    for name in ("cascade", "withdrawn", "republished", "removed", "selected", "failed", "servable"):
        _known_ids(getattr(exp, name), ids, source, loc + ("expect", name), "artifact of the store")
    for name in ("modes", "rules", "oracles"):
        for key in getattr(exp, name):
            if key not in ids:
                raise _fail(source, loc + ("expect", name, key), f"unknown artifact {key!r}")
    rules = suite.policy.policy.modes
    names = {r.name for r in rules if r.name}
    for key, ref in exp.rules.items():
        ok = (isinstance(ref, int) and 1 <= ref <= len(rules)) or (isinstance(ref, str) and ref in names)
        if not ok:
            raise _fail(source, loc + ("expect", "rules", key),
                        f"unknown rule {ref!r}: the policy's rules are "
                        + ", ".join(r.name or str(k + 1) for k, r in enumerate(rules)))
    return LoadedCase(suite, i, case, snapshot=snap, event=event)


def _known_ids(expected: list[str] | Partial | None, ids: set[str], source: SourceMap, loc: Loc, what: str) -> None:
    if expected is None:
        return
    if isinstance(expected, Partial):
        groups = [("include", expected.include), ("exclude", expected.exclude)]
    else:
        groups = [(None, expected)]
    for key, group in groups:
        for k, ident in enumerate(group):
            if ident not in ids:
                where = loc + ((key, k) if key else (k,))
                raise _fail(source, where, f"unknown {what}: {ident!r}")


def _event(raw: str | dict, snap: Snapshot, file: Path, source: SourceMap, loc: Loc) -> Event:
    if isinstance(raw, str):
        target = file.parent / raw
        if not target.is_file():
            raise _fail(source, loc, f"event file not found: {raw}")
        return load_event(str(target), snap)
    try:
        return parse_event(raw, snap, str(file))
    except InputError as exc:
        raise _relocate(exc, source, loc) from None


def _clearance(raw: str | dict, file: Path, source: SourceMap, loc: Loc) -> Case:
    if isinstance(raw, str):
        target = file.parent / raw
        if not target.is_file():
            raise _fail(source, loc, f"clearance case not found: {raw}")
        return load_case(target)
    try:
        return parse_case(raw, str(file))
    except InputError as exc:
        raise _relocate(exc, source, loc) from None


def _check_invariants(suite: Suite) -> None:
    """Invariants may only mention declared kinds, architectures and metadata fields."""
    p = suite.policy.policy
    for i, inv in enumerate(suite.spec.invariants):
        w = inv.for_
        loc: Loc = ("invariants", i, "for")
        for j, kind in enumerate(w.kind or []):
            if kind not in p.kinds:
                raise _fail(suite.source, loc + ("kind", j), f"invariant {inv.name!r} names kind '{kind}', "
                                                             "which the policy does not declare")
        for j, arch in enumerate(w.arch or []):
            if arch not in p.skill_architectures():
                raise _fail(suite.source, loc + ("arch", j), f"invariant {inv.name!r} names architecture "
                                                             f"'{arch}', which no declared skill kind has")
        kinds = w.kind if w.kind is not None else list(p.kinds)
        for field in w.meta:
            if not any(field in p.kinds[k].meta for k in kinds if k in p.kinds):
                raise _fail(suite.source, loc + ("meta", field), f"invariant {inv.name!r} tests metadata field "
                                                                 f"'{field}', which none of its kinds declares")
