"""Schemas of artifact content and metadata: exactly what the operators and oracles read, with
bounds (MemoRepair §2.3: an operator π_i reads the artifact and its post-event support).

Validation happens at the door — ``store import``, a correct event's replacements, a migrate
event's interface κ_e — and again, for stores written before these schemas existed, on every
artifact a plan touches before the barrier withdraws anything. A value that passes can still
make an operator fail at run time (e.g. no retained support); that is a validation failure of
the candidate (:mod:`memsteward.repair.execute`), never an unfinishable event.

What is read, by whom:

========================  ===================================================  ====================
field                     reader                                               bound
========================  ===================================================  ====================
meta.transform            ``recompute`` (name of a registered transform)       string ≤ 64 chars
meta.summary_sentences    ``regen`` extractive summary (sentences kept)        1 … 1,000
meta.probes               ``task_regression`` oracle ({query, expect})         ≤ 256 probes
content.calls             ``regen`` chain rewrite, ``sandbox`` oracle:         ≤ 10,000 calls
                          [{tool: str, args: {…}}] (any kind: trajectories,
                          chain skills)
content.goal              chain skills                                         string
content.tools / renames   κ_e of an API record or a migrate event: tools       ≤ 10,000 tools
/ arg_renames             {name: {params: {arg: JSON type}, required: [arg]}},
                          renames {old: new}, arg_renames {tool: {old: new}}
content (neural skill)    ``param`` retrain / ``forget_reference``:            dim 1 … 4,096,
                          {model: bow-softmax, dim, labels, weights}           ≤ 1,024 labels
========================  ===================================================  ====================

Everything else in content and meta is free JSON (bounded by the document limits of
:mod:`memsteward.jsonio`: finite numbers, 64-bit integers, valid Unicode, nesting ≤ 128).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from ..jsonio import tree_problem

MAX_ID_CHARS = 512
MAX_VERSION = 2**31 - 1
MAX_TRANSFORM_CHARS = 64
MAX_SUMMARY_SENTENCES = 1000
MAX_PROBES = 256
MAX_CALLS = 10_000
MAX_TOOLS = 10_000
MAX_DIM = 4096
MAX_LABELS = 1024
PARAM_TYPES: tuple[str, ...] = ("string", "integer", "number", "boolean", "object", "array", "null")
INTERFACE_KEYS: tuple[str, ...] = ("tools", "renames", "arg_renames")

Problem = tuple[str, str]  # (field, message)


def _is_int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _str_map(value: Any, where: str, what: str) -> Problem | None:
    if not isinstance(value, dict):
        return where, f"{what} must be an object"
    for k, v in value.items():
        if not isinstance(v, str) or not v:
            return f"{where}.{k}", f"{what} maps names to non-empty strings"
    return None


def interface_problem(iface: Any, where: str = "content", require_tools: bool = False) -> Problem | None:
    """κ_e: ``tools`` {name: {params: {arg: type}, required: [arg]}}, ``renames``, ``arg_renames``."""
    if not isinstance(iface, dict):
        return where, "an interface is an object"
    tools = iface.get("tools")
    if tools is None:
        if require_tools:
            return f"{where}.tools", "an interface needs a 'tools' object {name: {params, required}}"
    elif not isinstance(tools, dict):
        return f"{where}.tools", "'tools' must be an object {name: {params, required}}"
    else:
        if len(tools) > MAX_TOOLS:
            return f"{where}.tools", f"more than {MAX_TOOLS} tools"
        for name, spec in tools.items():
            at = f"{where}.tools.{name}"
            if not isinstance(spec, dict):
                return at, "a tool is an object {params: {arg: type}, required: [arg]}"
            params = spec.get("params", {})
            if not isinstance(params, dict):
                return f"{at}.params", "'params' must be an object {arg: JSON type name}"
            for arg, typ in params.items():
                if typ not in PARAM_TYPES:
                    return f"{at}.params.{arg}", f"parameter type must be one of {', '.join(PARAM_TYPES)}"
            required = spec.get("required", [])
            if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
                return f"{at}.required", "'required' must be a list of parameter names"
            missing = [r for r in required if r not in params]
            if missing:
                return f"{at}.required", f"required parameter {missing[0]!r} is not in 'params'"
    if "renames" in iface:
        problem = _str_map(iface["renames"], f"{where}.renames", "'renames'")
        if problem:
            return problem
    if "arg_renames" in iface:
        table = iface["arg_renames"]
        if not isinstance(table, dict):
            return f"{where}.arg_renames", "'arg_renames' must be an object {tool: {old: new}}"
        for tool, mapping in table.items():
            problem = _str_map(mapping, f"{where}.arg_renames.{tool}", "an arg_renames entry")
            if problem:
                return problem
    return None


def calls_problem(calls: Any, where: str) -> Problem | None:
    """Tool calls of a trajectory or chain procedure: [{tool: str, args: {…}}]."""
    if not isinstance(calls, list):
        return where, "'calls' must be a list of {tool, args}"
    if len(calls) > MAX_CALLS:
        return where, f"more than {MAX_CALLS} calls"
    for k, call in enumerate(calls):
        at = f"{where}[{k}]"
        if not isinstance(call, dict):
            return at, "a call is an object {tool, args}"
        if not isinstance(call.get("tool"), str) or not call["tool"]:
            return f"{at}.tool", "a call names its tool as a non-empty string"
        if "args" in call and not isinstance(call["args"], dict):
            return f"{at}.args", "a call's 'args' must be an object {name: value}"
    return None


def neural_problem(content: Any, where: str = "content") -> Problem | None:
    """A bow-softmax model {model, dim, labels, weights}; ``dim`` drives the work of retraining."""
    if not isinstance(content, dict) or content.get("model") != "bow-softmax":
        return None  # not a model: the param operator reports the skill as non-executable
    dim = content.get("dim")
    if not _is_int(dim) or not 1 <= dim <= MAX_DIM:
        return f"{where}.dim", f"'dim' must be an integer from 1 to {MAX_DIM}"
    labels = content.get("labels")
    if (not isinstance(labels, list) or not labels or len(labels) > MAX_LABELS
            or not all(isinstance(y, str) for y in labels)):
        return f"{where}.labels", f"'labels' must be a list of 1 to {MAX_LABELS} strings"
    weights = content.get("weights")
    if not isinstance(weights, list) or len(weights) != dim + 1:
        return f"{where}.weights", f"'weights' must have dim + 1 = {dim + 1} rows"
    for r, row in enumerate(weights):
        if not isinstance(row, list) or len(row) != len(labels) or not all(_is_number(v) for v in row):
            return f"{where}.weights[{r}]", f"each weight row holds {len(labels)} numbers (one per label)"
    return None


def meta_problem(meta: Mapping[str, Any], where: str = "meta") -> Problem | None:
    """The metadata operators and oracles read (other keys are free)."""
    t = meta.get("transform")
    if t is not None and (not isinstance(t, str) or len(t) > MAX_TRANSFORM_CHARS):
        return f"{where}.transform", f"'transform' must be a transform name (≤ {MAX_TRANSFORM_CHARS} characters)"
    n = meta.get("summary_sentences")
    if n is not None and (not _is_int(n) or not 1 <= n <= MAX_SUMMARY_SENTENCES):
        return f"{where}.summary_sentences", f"'summary_sentences' must be an integer from 1 to {MAX_SUMMARY_SENTENCES}"
    probes = meta.get("probes")
    if probes is not None:
        if not isinstance(probes, list) or len(probes) > MAX_PROBES:
            return f"{where}.probes", f"'probes' must be a list of at most {MAX_PROBES} {{query, expect}}"
        for k, p in enumerate(probes):
            if not isinstance(p, dict) or not isinstance(p.get("query"), str) or not isinstance(p.get("expect"), str):
                return f"{where}.probes[{k}]", "a probe is an object {query: string, expect: string}"
    return None


def content_problem(kind: str, arch: str | None, content: Any, where: str = "content") -> Problem | None:
    """Content facets read by operators: κ_e (tools…), calls, a chain goal, a neural model."""
    if arch == "neural":  # only skills (the paper kind or a declared skill kind) have an arch
        problem = neural_problem(content, where)
        if problem:
            return problem
    if isinstance(content, dict):
        if any(k in content for k in INTERFACE_KEYS):
            problem = interface_problem(content, where)
            if problem:
                return problem
        if "calls" in content:
            problem = calls_problem(content["calls"], f"{where}.calls")
            if problem:
                return problem
        if arch == "chain" and "goal" in content and not isinstance(content["goal"], str):
            return f"{where}.goal", "a chain procedure's 'goal' is a string"
    return None


ID_RULE = f"an id is valid Unicode without NUL characters, of at most {MAX_ID_CHARS} characters"


def id_problem(ident: str) -> str | None:
    r"""Why a string cannot be an artifact id on every backend (:data:`ID_RULE`), or None.

    PostgreSQL text holds neither a NUL (U+0000) nor a lone surrogate; SQLite would take both, so
    both backends refuse them here, before a store is touched.

    Examples
    --------
    >>> id_problem("note-1") is None, id_problem("a\x00b") is not None, id_problem("\ud800") is not None
    (True, True, True)
    """
    if len(ident) > MAX_ID_CHARS or "\x00" in ident or tree_problem(ident):
        return ID_RULE
    return None


def artifact_problem(ident: Any, kind: str, arch: str | None, version: Any, content: Any,
                     meta: Mapping[str, Any]) -> Problem | None:
    """The first problem of one artifact (field relative to the artifact), or None."""
    if isinstance(ident, str):
        problem = id_problem(ident)
        if problem:
            return "id", problem
    if _is_int(version) and version > MAX_VERSION:
        return "version", f"version must be at most {MAX_VERSION}"
    for name, value in (("content", content), ("meta", meta)):
        found = tree_problem(value)
        if found:
            sub, msg = found
            return (f"{name}{'.' if sub and not sub.startswith('[') else ''}{sub}", msg)
    return meta_problem(meta) or content_problem(kind, arch, content)
