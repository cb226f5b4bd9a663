"""Validation oracles Validate_i (MemoRepair §2.2): a registry keyed by oracle name.

A successor is publishable only when *every* oracle the policy assigns to its (mode, kind, arch)
passes (``Policy.oracles_for``). Offline implementations:

* ``schema`` — the successor content validates against a JSON Schema (a built-in subset:
  type, enum, const, min/maxLength, minimum/maximum, required, properties,
  additionalProperties, items, min/maxItems);
* ``replay`` — re-running the operator ``runs`` times reproduces the successor (within tolerance);
* ``task_regression`` — probe queries (policy probes plus the artifact's ``meta.probes``) are
  answered from the successor by lexical retrieval of its best-matching sentence; the share
  whose answer contains the expected text must reach ``min_pass``;
* ``sandbox`` — every call of a chain procedure type-checks against the current interface κ_e;
* ``forget_reference`` — forget-set suppression and retained (reference) utility of a neural skill;
* ``grounded`` — regenerated text is grounded in retained support, carries no prompt scaffolding
  or control characters, and nothing only the forget set holds (:func:`grounding_problems`).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..clearance.lexical import content_tokens, tokens
from . import neural
from .artifacts import Artifact
from .operators import Operator, OperatorError, RepairContext, Successor, _support_texts, sentences, text_of

JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda x: isinstance(x, str),
    "integer": lambda x: isinstance(x, int) and not isinstance(x, bool),
    "number": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
    "boolean": lambda x: isinstance(x, bool),
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "null": lambda x: x is None,
}


@dataclass(frozen=True)
class Report:
    oracle: str
    passed: bool
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"oracle": self.oracle, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True)
class OracleInput:
    artifact: Artifact
    successor: Successor
    ctx: RepairContext
    operator: Operator


def schema_errors(value: Any, schema: Mapping[str, Any], path: str = "$") -> list[str]:
    """Errors of ``value`` against a JSON Schema subset (empty list: valid)."""
    errs: list[str] = []
    t = schema.get("type")
    if t is not None:
        types = [t] if isinstance(t, str) else list(t)
        if not any(JSON_TYPES.get(x, lambda _: False)(value) for x in types):
            return [f"{path}: expected {'/'.join(types)}"]
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{path}: not in enum")
    if "const" in schema and value != schema["const"]:
        errs.append(f"{path}: not the constant")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errs.append(f"{path}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errs.append(f"{path}: longer than {schema['maxLength']}")
    if JSON_TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            errs.append(f"{path}: below minimum")
        if "maximum" in schema and value > schema["maximum"]:
            errs.append(f"{path}: above maximum")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errs.append(f"{path}: missing {key!r}")
        props = schema.get("properties", {})
        for key, sub in value.items():
            if key in props:
                errs += schema_errors(sub, props[key], f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                errs.append(f"{path}: unexpected {key!r}")
            elif isinstance(schema.get("additionalProperties"), dict):
                errs += schema_errors(sub, schema["additionalProperties"], f"{path}.{key}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errs.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errs.append(f"{path}: more than {schema['maxItems']} items")
        if isinstance(schema.get("items"), dict):
            for k, item in enumerate(value):
                errs += schema_errors(item, schema["items"], f"{path}[{k}]")
    return errs


def check_schema(spec: Any, x: OracleInput) -> Report:
    schema = spec.by_kind.get(x.artifact.kind, spec.schema_)
    errs = schema_errors(x.successor.content, schema)
    return Report("schema", not errs, "; ".join(errs[:3]))


def _close(a: Any, b: Any, tol: float) -> bool:
    if JSON_TYPES["number"](a) and JSON_TYPES["number"](b):
        return math.isclose(a, b, abs_tol=tol, rel_tol=0.0)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(p, q, tol) for p, q in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol) for k in a)
    return a == b


def check_replay(spec: Any, x: OracleInput) -> Report:
    for run in range(spec.runs):
        try:
            again = x.operator(x.artifact, x.ctx)
        except OperatorError as exc:
            return Report("replay", False, f"replay {run + 1} failed: {exc}")
        if not _close(again.content, x.successor.content, spec.tolerance):
            return Report("replay", False, f"replay {run + 1} differs from the staged successor")
    return Report("replay", True, f"{spec.runs} replays agree")


def answer(content: Any, query: str) -> str:
    """Offline agent: the successor's sentence with the largest token overlap with the query."""
    text = content if isinstance(content, str) else str(content)
    q = set(neural.tokens(query))
    best = max(sentences(text) or [""], key=lambda s: len(q & set(neural.tokens(s))))
    return best


def check_task_regression(spec: Any, x: OracleInput) -> Report:
    probes = [(p.query, p.expect) for p in spec.probes]
    for p in x.artifact.meta.get("probes", []) or []:
        if isinstance(p, dict) and isinstance(p.get("query"), str) and isinstance(p.get("expect"), str):
            probes.append((p["query"], p["expect"]))
    if not probes:
        return Report("task_regression", True, "no probes")
    passed = sum(e.lower() in answer(x.successor.content, q).lower() for q, e in probes)
    ok = passed / len(probes) >= spec.min_pass - 1e-12
    return Report("task_regression", ok, f"{passed}/{len(probes)} probes pass")


def call_errors(calls: Any, interface: Mapping[str, Any], allow_extra: bool) -> list[str]:
    """Type-check chain calls against an interface {"tools": {name: {"params", "required"}}}."""
    tools = interface.get("tools", {})
    if not isinstance(calls, list) or not calls:
        return ["no calls"]
    errs = []
    for k, call in enumerate(calls):
        tool = call.get("tool") if isinstance(call, dict) else None
        if tool not in tools:
            errs.append(f"call {k}: unknown tool {tool!r}")
            continue
        params = tools[tool].get("params", {})
        args = call.get("args", {})
        for name in tools[tool].get("required", []):
            if name not in args:
                errs.append(f"call {k}: {tool} misses required {name!r}")
        for name, v in args.items():
            if name not in params:
                if not allow_extra:
                    errs.append(f"call {k}: {tool} has no parameter {name!r}")
            elif not JSON_TYPES.get(params[name], lambda _: True)(v):
                errs.append(f"call {k}: {tool}.{name} is not {params[name]}")
    return errs


def check_sandbox(spec: Any, x: OracleInput) -> Report:
    content = x.successor.content
    calls = content.get("calls") if isinstance(content, dict) else None
    errs = call_errors(calls, x.ctx.interface, spec.allow_extra_args)
    return Report("sandbox", not errs, "; ".join(errs[:3]) or f"{len(calls or ())} calls type-check")


def check_forget_reference(spec: Any, x: OracleInput) -> Report:
    params = x.successor.content
    if not neural.is_params(params):
        return Report("forget_reference", False, "successor is not a model")
    forget = neural.examples_of([a.content for a in x.ctx.forget])
    ref = neural.examples_of([a.content for a in x.ctx.reference])
    fs = neural.forget_score(params, forget, ref)
    ru = neural.accuracy(params, ref)
    ok = fs <= spec.max_forget_score and ru >= spec.min_retained_utility
    return Report("forget_reference", ok, f"forget score {fs:.2f}, retained utility {ru:.2f}")


# --------------------------------------------------------------------------- grounded (regenerated text)

_TAG = re.compile(r"</?\s*[A-Za-z_][\w:-]*\s*/?>")
SHINGLE = 5  # a run of this many words copied from the prompt (and not from the support) is a leak


def control_chars(text: str) -> int:
    """Control, format, surrogate and private-use characters (newline and tab allowed) and U+FFFD."""
    return sum(1 for ch in text if ch == "\ufffd" or (
        ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co")))


def _stem(token: str) -> str:
    """A crude suffix strip so that inflections match (``visits`` ~ ``visit``)."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(token) > len(suffix) + 3 and token.endswith(suffix):
            return token[: -len(suffix)]
    return token


def _words(text: str) -> set[str]:
    return {_stem(t) for t in content_tokens(text)}


def _shingles(texts: Iterable[str]) -> set[tuple[str, ...]]:
    out: set[tuple[str, ...]] = set()
    for text in texts:
        toks = tokens(text)
        out.update(tuple(toks[i:i + SHINGLE]) for i in range(len(toks) - SHINGLE + 1))
    return out


def grounding_problems(text: str, support: Sequence[str], forget: Sequence[str],
                       scaffold: Sequence[str], min_support: float) -> list[str]:
    """Why regenerated ``text`` must not be published (empty: it may). The lexical test:

    1. no control, format, surrogate or private-use character and no U+FFFD;
    2. no prompt scaffolding: no markup tag (``<records>``, ``</memories>``, …) that no retained
       input contains, and no run of :data:`SHINGLE` words that occurs in the operator's prompt
       text (``scaffold``) but in no retained input;
    3. grounded in retained support Ret(e): every sentence has content words, and at least
       ``min_support`` of them (after a crude suffix strip) occur in the retained inputs;
    4. nothing of the forget set: no content word that occurs in For_i(e) (the invalidated inputs,
       e.g. a deleted root) and in no retained input.

    The problems name counts and sentence numbers only, never text (it may hold deleted data).
    """
    problems: list[str] = []
    bad = control_chars(text)
    if bad:
        problems.append(f"{bad} control character(s)")
    support_tags = {t for s in support for t in _TAG.findall(s)}
    if set(_TAG.findall(text)) - support_tags:
        problems.append("markup tags from the prompt")
    if (_shingles([text]) & _shingles(scaffold)) - _shingles(support):
        problems.append("text copied from the regeneration prompt")
    retained = set().union(*(_words(s) for s in support))
    sents = sentences(text)
    unsupported = []
    for k, sent in enumerate(sents, 1):
        words = _words(sent)
        if not words or len(words & retained) / len(words) < min_support - 1e-12:
            unsupported.append(k)
    if not sents:
        problems.append("no sentence")
    elif unsupported:
        shown = ", ".join(map(str, unsupported[:5])) + (" …" if len(unsupported) > 5 else "")
        problems.append(f"{len(unsupported)} of {len(sents)} sentence(s) not grounded in retained "
                        f"support (sentence {shown})")
    leaked = (_words(text) & set().union(*(_words(f) for f in forget))) - retained
    if leaked:
        problems.append(f"{len(leaked)} word(s) only the forget set contains")
    return problems


def check_grounded(spec: Any, x: OracleInput) -> Report:
    text = x.successor.content
    if not isinstance(text, str):
        return Report("grounded", False, "successor is not text")
    support = _support_texts(x.ctx)
    forget = [t for t in (text_of(a.content) for a in x.ctx.forget) if t]
    scaffold = tuple(getattr(x.operator, "scaffold", ()) or ())
    problems = grounding_problems(text, support, forget, scaffold, spec.min_support)
    return Report("grounded", not problems,
                  "; ".join(problems) or f"{len(sentences(text))} sentence(s) grounded in retained support")


def check_embedding(spec: Any, x: OracleInput) -> Report:
    """The successor's vector was computed from its republished text (:mod:`memsteward.repair.embedding`)."""
    from .embedding import ReEmbed, embedding_problem, governed_text

    op = x.operator
    if not isinstance(op, ReEmbed):
        return Report("embedding", False, "no re-embedding operator built this successor "
                                          "(declare 'embed' on the kind)")
    text = governed_text(x.successor.content, op.fields)
    problem = embedding_problem(x.successor.meta.get(op.field), text, op.embedder, spec.tolerance)
    return Report("embedding", problem is None,
                  problem or f"meta.{op.field}: {op.embedder.name} vector of the republished text")


def check_plugin(spec: Any, x: OracleInput) -> Report:
    """An installed oracle plugin (:mod:`memsteward.repair.plugins`); whatever it raises or returns
    other than a :class:`Report` fails the candidate."""
    from .plugins import load_oracle

    name = f"plugin:{spec.plugin}"
    report = load_oracle(spec.plugin)(dict(spec.settings), x)
    if not isinstance(report, Report):
        raise OperatorError(f"oracle {name} returned a {type(report).__name__}, not a Report")
    return Report(name, bool(report.passed), str(report.detail)[:500])


OracleFn = Callable[[Any, OracleInput], Report]
OracleRegistry = Mapping[str, OracleFn]

ORACLES: dict[str, OracleFn] = {
    "schema": check_schema,
    "replay": check_replay,
    "task_regression": check_task_regression,
    "sandbox": check_sandbox,
    "forget_reference": check_forget_reference,
    "grounded": check_grounded,
    "embedding": check_embedding,
    "plugin": check_plugin,
}


def validate(oracle_specs: list, x: OracleInput,
             registry: OracleRegistry | None = None) -> tuple[bool, list[Report]]:
    """Validate_i(z_i) = 1 iff every assigned oracle passes ("all must pass").

    ``registry`` maps oracle names to implementations (default :data:`ORACLES`); pass a copy
    with entries replaced to plug in other oracles (e.g. LLM-judged task regression).
    """
    registry = ORACLES if registry is None else registry
    reports = [registry[spec.oracle](spec, x) for spec in oracle_specs]
    return all(r.passed for r in reports), reports
