"""Case files: one query, its reference, the frozen context, an optional explicit game.

```json
{"query": "...", "reference": "...",
 "context": [{"id": "m1", "text": "...", "meta": {...}}, ...],
 "game": {"type": "table", "values": {"": 1.0, "m1": 1.0, "m1,m2": 0.5, ...}},
 "faults": ["m4", "m5"], "structure": "redundant"}
```

Any other field (``source``, ``provenance``, … as independent generators write them) is kept in
``Case.meta``; an extra field of a context item goes to that memory's ``meta``.
``game`` is optional: without it the policy's evaluator (offline / openai) plays the game.
Table keys are sorted ids joined by commas; a value is the mean of the trials' 0/1 outcomes
(or give ``"outcomes": {"m1": [1, 0], ...}``). A synthetic game is
``{"type": "synthetic", "base": 0, "support": {"m1": 1.0}, "harms": [{"structure":
"redundant", "members": ["m4", "m5"], "delta": 1.0}], "noise": 0.0}``.
Malformed input raises :class:`InputError` naming the file (and line, for JSONL) and field.
"""

from __future__ import annotations

import contextlib
import math
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..jsonio import parse_json, read_json, source_name
from ..policy.model import ClearanceSpec
from .evaluators import Harm, SyntheticEvaluator, SyntheticGame, TableEvaluator, from_policy
from .evaluators.synthetic import STRUCTURES
from .game import Evaluator, Game, Memory, OutcomeStore, Task

MAX_CASE_BYTES = 8 << 20
CASE_FIELDS = frozenset({"query", "reference", "context", "game", "faults", "structure", "name", "meta"})


@dataclass(frozen=True)
class Case:
    """A validated clearance case."""

    task: Task
    game: dict[str, Any] | None = None
    faults: tuple[str, ...] = ()
    structure: str | None = None
    name: str = "<case>"
    meta: dict[str, Any] = field(default_factory=dict)


class _Where:
    def __init__(self, file: str, line: int | None) -> None:
        self.file, self.line = file, line

    def fail(self, message: str, fld: str = "") -> InputError:
        return InputError(message, file=self.file, line=self.line, field=fld)


def _number(x: Any, where: _Where, fld: str, lo: float = 0.0, hi: float = 1.0) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
        raise where.fail("must be a finite number", fld)
    if not lo <= float(x) <= hi:
        raise where.fail(f"must lie in [{lo:g}, {hi:g}]", fld)
    return float(x)


def _context(raw: Any, where: _Where) -> tuple[Memory, ...]:
    if not isinstance(raw, list) or not raw:
        raise where.fail("must be a non-empty list of memories", "context")
    seen: set[str] = set()
    out = []
    for k, item in enumerate(raw):
        fld = f"context[{k}]"
        if not isinstance(item, dict):
            raise where.fail("must be an object with 'id' and 'text'", fld)
        extra = {k: v for k, v in item.items() if k not in ("id", "text", "meta")}  # kept as metadata
        mid = item.get("id")
        if not isinstance(mid, str) or not mid or "," in mid or mid != mid.strip():
            raise where.fail("id must be a non-empty string without commas or outer spaces", f"{fld}.id")
        if mid in seen:
            raise where.fail(f"duplicate memory id '{mid}'", f"{fld}.id")
        seen.add(mid)
        text = item.get("text", "")
        if not isinstance(text, str):
            raise where.fail("must be a string", f"{fld}.text")
        meta = item.get("meta", {}) or {}
        if not isinstance(meta, dict):
            raise where.fail("must be an object", f"{fld}.meta")
        out.append(Memory(mid, text, {**extra, **meta}))
    return tuple(out)


def _coalition(key: Any, ids: set[str], where: _Where, fld: str) -> frozenset[str]:
    if not isinstance(key, str):
        raise where.fail("coalition keys must be strings", fld)
    members = frozenset(p.strip() for p in key.split(",") if p.strip())
    unknown = sorted(members - ids)
    if unknown:
        raise where.fail(f"coalition '{key}' names unknown memory '{unknown[0]}'", fld)
    return members


def _table(raw: dict[str, Any], ids: set[str], where: _Where) -> TableEvaluator:
    values, outcomes = raw.get("values"), raw.get("outcomes")
    if values is None and outcomes is None:
        raise where.fail("a table game needs 'values' or 'outcomes'", "game")
    vals, outs = {}, {}
    for name, table in (("values", values), ("outcomes", outcomes)):
        if table is None:
            continue
        if not isinstance(table, dict):
            raise where.fail("must be an object keyed by coalition", f"game.{name}")
        for key, v in table.items():
            fld = f"game.{name}['{key}']"
            c = _coalition(key, ids, where, fld)
            if c in vals or c in outs:
                raise where.fail(f"coalition '{key}' is given twice", fld)
            if name == "values":
                vals[c] = _number(v, where, fld)
            else:
                if not isinstance(v, list) or not v:
                    raise where.fail("must be a non-empty list of trial scores", fld)
                outs[c] = [_number(x, where, fld) for x in v]
    return TableEvaluator(vals, outs, source=where.file)


def synthetic_game(raw: dict[str, Any], ids: set[str], where: _Where) -> SyntheticGame:
    """Validate a synthetic game block."""
    support = raw.get("support", {}) or {}
    if not isinstance(support, dict):
        raise where.fail("must be an object id → weight", "game.support")
    for m, w in support.items():
        if m not in ids:
            raise where.fail(f"unknown memory '{m}'", "game.support")
        _number(w, where, f"game.support.{m}", -1.0, 1.0)
    harms = []
    raw_harms = raw.get("harms", []) or []
    if not isinstance(raw_harms, list):
        raise where.fail("must be a list", "game.harms")
    for k, h in enumerate(raw_harms):
        fld = f"game.harms[{k}]"
        if not isinstance(h, dict) or h.get("structure") not in STRUCTURES:
            raise where.fail(f"needs 'structure' in {list(STRUCTURES)}", fld)
        members = h.get("members")
        if not isinstance(members, list) or not members or any(m not in ids for m in members):
            raise where.fail("'members' must list memory ids of the context", f"{fld}.members")
        harms.append(Harm(h["structure"], tuple(members), _number(h.get("delta", 1.0), where, f"{fld}.delta")))
    return SyntheticGame(base=_number(raw.get("base", 0.0), where, "game.base"),
                         support={m: float(w) for m, w in support.items()}, harms=tuple(harms),
                         noise=_number(raw.get("noise", 0.0), where, "game.noise", 0.0, 0.5),
                         salt=str(raw.get("salt", "")))


def parse_case(data: Any, file: str = "<case>", line: int | None = None) -> Case:
    """Validate a decoded case object."""
    where = _Where(file, line)
    if not isinstance(data, dict):
        raise where.fail("a case must be a JSON object")
    # fields other generators add (source, provenance, …) are kept as the case's metadata
    extra = {k: v for k, v in data.items() if k not in CASE_FIELDS}
    query = data.get("query")
    if not isinstance(query, str) or not query.strip():
        raise where.fail("must be a non-empty string", "query")
    reference = data.get("reference", "")
    if not isinstance(reference, str):
        raise where.fail("must be a string", "reference")
    context = _context(data.get("context"), where)
    ids = {m.id for m in context}
    game = data.get("game")
    if game is not None:
        if not isinstance(game, dict) or game.get("type") not in ("table", "synthetic"):
            raise where.fail("'type' must be 'table' or 'synthetic'", "game.type")
        (_table if game["type"] == "table" else synthetic_game)(game, ids, where)
    faults = data.get("faults", []) or []
    if not isinstance(faults, list) or any(not isinstance(f, str) or f not in ids for f in faults):
        raise where.fail("must list ids of memories in the context", "faults")
    structure = data.get("structure")
    if structure is not None and structure not in STRUCTURES:
        raise where.fail(f"must be one of {list(STRUCTURES)}", "structure")
    meta = data.get("meta", {}) or {}
    if not isinstance(meta, dict):
        raise where.fail("must be an object", "meta")
    name = data.get("name", file)
    if not isinstance(name, str):
        raise where.fail("must be a string", "name")
    return Case(Task(query, reference, context), game, tuple(faults), structure, name, {**extra, **meta})


def load_case(path: str | Path) -> Case:
    """Read and validate one case file (JSON)."""
    return parse_case(read_json(path, MAX_CASE_BYTES), source_name(path))


def iter_cohort(path: str | Path, max_context: int | None = None) -> Iterator[Case]:
    """Cases of a JSONL cohort, one per non-empty line (errors name file:line); a case whose
    context exceeds ``max_context`` (the policy's K) is an error at its line.

    Bounded: a regular file only (a FIFO or ``/dev/zero`` is refused before it is opened), each
    line at most :data:`MAX_CASE_BYTES`, UTF-8, and parsed with the bounded JSON reader
    (finite numbers, 64-bit integers, nesting ≤ 128 — a line nested 10^5 deep is one error).
    """
    name = str(path)
    try:
        if name == "-" and not isinstance(path, Path):  # standard input
            name, handle = "<stdin>", sys.stdin.buffer
        else:
            mode = os.stat(path).st_mode
            if not stat.S_ISREG(mode):
                raise InputError("not a regular file, expected a JSONL cohort", file=name)
            handle = open(path, "rb")
    except FileNotFoundError:
        raise InputError("file not found", file=name) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=name) from None
    with handle if handle is not sys.stdin.buffer else contextlib.nullcontext(handle):  # stdin stays open
        for lineno, raw in enumerate(iter(lambda: handle.readline(MAX_CASE_BYTES + 1), b""), 1):
            if len(raw) > MAX_CASE_BYTES:
                raise InputError(f"line is over the {MAX_CASE_BYTES}-byte limit", file=name, line=lineno)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not UTF-8 text (byte {exc.start} of the line)", file=name, line=lineno) from None
            if not text.strip():
                continue
            case = parse_case(parse_json(text, name, line=lineno), name, lineno)
            if max_context is not None and len(case.task.context) > max_context:
                raise InputError(f"the context has {len(case.task.context)} memories but the policy's "
                                 f"retrieval_budget (K) is {max_context}", file=name, line=lineno,
                                 field="context")
            yield case


def case_evaluator(case: Case, spec: ClearanceSpec) -> Evaluator:
    """The case's explicit game (table / synthetic), else the policy's evaluator."""
    where = _Where(case.name, None)
    ids = set(case.task.ids)
    if case.game is not None and case.game.get("type") == "table":
        return _table(case.game, ids, where)
    if case.game is not None:
        return SyntheticEvaluator(synthetic_game(case.game, ids, where))
    return from_policy(spec.evaluator)


def case_game(case: Case, spec: ClearanceSpec, evaluator: Evaluator | None = None,
              store: OutcomeStore | None = None) -> Game:
    """The cached game of a case under a policy's clearance settings."""
    k = len(case.task.context)
    if k > spec.retrieval_budget:
        raise InputError(f"the context has {k} memories but the policy's retrieval_budget (K) is "
                         f"{spec.retrieval_budget}", file=case.name, field="context")
    return Game(case.task, evaluator or case_evaluator(case, spec), trials=spec.trials,
                seed=spec.seed, recovery=spec.recovery, call_budget=spec.call_budget, store=store)
