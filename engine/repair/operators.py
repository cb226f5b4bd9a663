"""Repair operators π_i, a registry keyed by (mode, kind, arch) (MemoRepair §2.3).

Offline deterministic implementations:

* ``recompute`` — re-run the registered transform named by ``meta.transform`` on the inputs;
* ``regen`` — extractive summary of retained support (summaries, prompt skills), or a chain
  procedure rebuilt from retained trajectories and rewritten to the current interface κ_e;
* ``param`` — retrain the neural skill's numpy model on its reference set Ref_i(e).

An operator is a pure function of the artifact and a :class:`RepairContext`; it raises
:class:`OperatorError` when it cannot build a successor. Plug in others with
:meth:`OperatorRegistry.register`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import neural
from .artifacts import Artifact


class OperatorError(Exception):
    """An operator could not construct a successor (the candidate fails, stays withdrawn)."""


@dataclass(frozen=True)
class RepairContext:
    """What an operator may read: post-event support only (§2.3).

    ``inputs``: influence parents in Ret(e) (replacement versions for corrected roots) and the
    staged successors of prerequisites P̄_i, ordered by id. ``forget`` / ``reference``: the
    partitions For_i(e) / Ref_i(e) for parametric repair. ``interface``: κ_e as seen by the
    artifact (tools of its interface parents after the event). ``previous``: the artifact's
    pre-event version, used only where the event does not invalidate content (migration) and
    only when ``previous_valid``: an artifact already withdrawn by an earlier event has invalidated
    content (e.g. calls taken from an erased trajectory), which must not be republished.
    """

    event_type: str
    inputs: tuple[Artifact, ...] = ()
    forget: tuple[Artifact, ...] = ()
    reference: tuple[Artifact, ...] = ()
    interface: Mapping[str, Any] = field(default_factory=dict)
    previous: Artifact | None = None
    previous_valid: bool = True


@dataclass(frozen=True)
class Successor:
    content: Any
    meta: Mapping[str, Any]


class Operator(Protocol):
    @property
    def name(self) -> str: ...
    # Optional ``checks_content: bool`` (absent means True): whether :meth:`check` reads the
    # artifact's content. Planning reads content only where some check may (:func:`reads_content`).

    def check(self, artifact: Artifact) -> str | None:
        """Why the operator can never run on this artifact (None: it can)."""

    def __call__(self, artifact: Artifact, ctx: RepairContext) -> Successor: ...


# --------------------------------------------------------------------------- recompute


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, sort_keys=True)


def _concat(xs: list[Any]) -> str:
    return "\n".join(_text(x) for x in xs)


def _json_merge(xs: list[Any]) -> dict:
    out: dict = {}
    for x in xs:
        if not isinstance(x, dict):
            raise OperatorError("json_merge needs object inputs")
        out.update(x)
    return out


def _sum(xs: list[Any]) -> float:
    total = 0.0
    for x in xs:
        v = x.get("value") if isinstance(x, dict) else x
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise OperatorError("sum needs numeric inputs")
        total += v
    return total


def _identity(xs: list[Any]) -> Any:
    if len(xs) != 1:
        raise OperatorError(f"identity needs exactly one input, got {len(xs)}")
    return xs[0]


def _texts(xs: list[Any]) -> str:
    out = []
    for x in xs:
        if isinstance(x, dict):
            x = x.get("result", x.get("text", x))
        out.append(_text(x))
    return "\n".join(out)


TRANSFORMS: dict[str, Callable[[list[Any]], Any]] = {
    "texts": _texts,
    "concat": _concat,
    "upper": lambda xs: _concat(xs).upper(),
    "json_merge": _json_merge,
    "sum": _sum,
    "count": lambda xs: len(xs),
    "identity": _identity,
    "sorted_unique": lambda xs: "\n".join(sorted({ln for x in xs for ln in _text(x).splitlines() if ln})),
}


@dataclass(frozen=True)
class Recompute:
    """Deterministic replay: successor = TRANSFORMS[meta.transform](contents of inputs)."""

    name: str = "recompute:transform"
    checks_content = False  # meta.transform only

    def check(self, artifact: Artifact) -> str | None:
        t = artifact.meta.get("transform")
        if t is None:
            return "no meta.transform recorded"
        if t not in TRANSFORMS:
            return f"unknown transform {t!r}"
        return None

    def __call__(self, artifact: Artifact, ctx: RepairContext) -> Successor:
        if not ctx.inputs:
            raise OperatorError("no retained inputs to recompute from")
        fn = TRANSFORMS[str(artifact.meta["transform"])]
        return Successor(fn([a.content for a in ctx.inputs]), dict(artifact.meta))


# --------------------------------------------------------------------------- regen (text)

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def extractive_summary(texts: list[str], limit: int = 3) -> str:
    """Top-``limit`` sentences by mean term frequency over the support, in original order."""
    sents = [s for t in texts for s in sentences(t)]
    unique = list(dict.fromkeys(sents))  # first occurrences, in order
    freq = Counter(tok for s in unique for tok in neural.tokens(s))

    def score(s: str) -> float:
        toks = neural.tokens(s)
        return sum(freq[t] for t in toks) / len(toks) if toks else 0.0

    ranked = sorted(range(len(unique)), key=lambda k: (-score(unique[k]), k))[:limit]
    return " ".join(unique[k] for k in sorted(ranked))


def text_of(content: Any) -> str | None:
    """The text an artifact's content carries (a string, or a record's text / summary / result /
    task field); None when it carries none."""
    if isinstance(content, dict):
        content = content.get("text") or content.get("summary") or content.get("result") or content.get("task")
    return content if isinstance(content, str) and content.strip() else None


def _support_texts(ctx: RepairContext) -> list[str]:
    return [t for t in (text_of(a.content) for a in ctx.inputs) if t]


@dataclass(frozen=True)
class RegenText:
    """Regenerate a summary or prompt skill extractively from retained support only."""

    name: str = "regen:extractive"
    checks_content = False

    def check(self, artifact: Artifact) -> str | None:
        return None

    def __call__(self, artifact: Artifact, ctx: RepairContext) -> Successor:
        texts = _support_texts(ctx)
        if not texts:
            raise OperatorError("no retained textual support")
        limit = int(artifact.meta.get("summary_sentences", 3))
        return Successor(extractive_summary(texts, max(1, limit)), dict(artifact.meta))


# --------------------------------------------------------------------------- regen (chain)


def rewrite_call(call: Mapping[str, Any], interface: Mapping[str, Any]) -> dict[str, Any]:
    """Rename a call's tool and arguments per the interface's ``renames`` / ``arg_renames``."""
    tool = str(call.get("tool"))
    tool = interface.get("renames", {}).get(tool, tool)
    arg_map = interface.get("arg_renames", {}).get(tool, {})
    args = {arg_map.get(k, k): v for k, v in dict(call.get("args", {})).items()}
    return {"tool": tool, "args": args}


@dataclass(frozen=True)
class RegenChain:
    """Rebuild a chain procedure from retained trajectories (or, on migration, its own calls)
    and rewrite every call to the post-event interface κ_e."""

    name: str = "regen:chain-rewrite"
    checks_content = False

    def check(self, artifact: Artifact) -> str | None:
        return None

    def __call__(self, artifact: Artifact, ctx: RepairContext) -> Successor:
        calls: list[Any] = []
        goal = None
        for a in ctx.inputs:
            if isinstance(a.content, dict) and isinstance(a.content.get("calls"), list):
                calls.extend(a.content["calls"])
                goal = goal or a.content.get("task")
        if (ctx.event_type == "migrate" and ctx.previous is not None and ctx.previous_valid
                and isinstance(ctx.previous.content, dict)):
            goal = ctx.previous.content.get("goal", goal)
            if not calls:
                calls = list(ctx.previous.content.get("calls", []))
        if not calls:
            raise OperatorError("no retained procedure support")
        rewritten = [rewrite_call(c, ctx.interface) for c in calls if isinstance(c, dict)]
        return Successor({"goal": goal or "", "calls": rewritten}, dict(artifact.meta))


# --------------------------------------------------------------------------- param


@dataclass(frozen=True)
class ParamRetrain:
    """Parametric repair: retrain the model on the reference set Ref_i(e) only."""

    name: str = "param:retrain"
    checks_content = True  # the content must be a model

    def check(self, artifact: Artifact) -> str | None:
        return None if neural.is_params(artifact.content) else "content is not a bow-softmax model"

    def __call__(self, artifact: Artifact, ctx: RepairContext) -> Successor:
        examples = neural.examples_of([a.content for a in ctx.reference])
        if not examples:
            raise OperatorError("empty reference set")
        return Successor(neural.train(examples, int(artifact.content.get("dim", neural.DIM))), dict(artifact.meta))


# --------------------------------------------------------------------------- registry


class OperatorRegistry:
    """Operators keyed by (mode, kind, arch); lookup tries the most specific key first."""

    def __init__(self) -> None:
        self._ops: dict[tuple[str, str | None, str | None], Operator] = {}

    def register(self, mode: str, op: Operator, kind: str | None = None, arch: str | None = None) -> None:
        self._ops[(mode, kind, arch)] = op

    def find(self, mode: str, kind: str, arch: str | None) -> Operator | None:
        for key in ((mode, kind, arch), (mode, None, arch), (mode, kind, None), (mode, None, None)):
            if key in self._ops:
                return self._ops[key]
        return None


def reads_content(operators: OperatorRegistry, modes_for: Callable[[str, str | None], Collection[str]],
                  ) -> Callable[[str, str | None], bool]:
    """Whether an artifact of (kind, arch) may need its content at planning time: when the
    operator of some mode in ``modes_for(kind, arch)`` has a :meth:`~Operator.check` that reads
    content (an operator that does not say ``checks_content = False`` is assumed to). Decided
    once per (kind, arch)."""
    seen: dict[tuple[str, str | None], bool] = {}

    def needs(kind: str, arch: str | None) -> bool:
        key = (kind, arch)
        if key not in seen:
            ops = [operators.find(m, kind, arch) for m in modes_for(kind, arch)]
            seen[key] = any(getattr(op, "checks_content", True) for op in ops if op is not None)
        return seen[key]

    return needs


def default_operators() -> OperatorRegistry:
    reg = OperatorRegistry()
    reg.register("recompute", Recompute())
    reg.register("regen", RegenText())
    reg.register("regen", RegenChain(), arch="chain")  # every skill kind's chains (only skills have an arch)
    reg.register("param", ParamRetrain())
    return reg


def operators_for(policy: Any) -> OperatorRegistry:
    """The default registry, with LLM ``regen`` for text kinds (``summary`` and every kind of role
    ``text``) and prompt skills when the policy names a ``repair.regen_endpoint`` (chain rewriting
    stays deterministic)."""
    reg = default_operators()
    endpoint = getattr(getattr(policy, "repair", None), "regen_endpoint", None)
    if endpoint is not None:
        from .llm_regen import LLMRegen

        llm = LLMRegen(endpoint)
        for kind in policy.kinds_with_role("text"):
            reg.register("regen", llm, kind=kind)
        for kind in policy.kinds_with_role("skill"):
            reg.register("regen", llm, kind=kind, arch="prompt")
    kinds = getattr(policy, "kinds", {})
    if any(spec.operators or spec.embed for spec in kinds.values()):
        _declared_operators(reg, policy)
    return reg


def _declared_operators(reg: OperatorRegistry, policy: Any) -> None:
    """A kind's plugin operators (``kinds.<kind>.operators``) and, for a kind that declares ``embed``,
    every one of its operators wrapped to rebuild the vector (:class:`~memsteward.repair.embedding.ReEmbed`).
    A plugin that cannot be loaded (``check`` reports it) makes its candidates non-executable."""
    from .embedding import ReEmbed, embedder_for
    from .plugins import PluginProblem, load_operator

    embedder = None
    for kind, spec in policy.kinds.items():
        for mode in ("recompute", "regen", "param"):
            for arch in policy.architectures(kind):
                op: Operator | None
                if mode in spec.operators:
                    try:
                        op = load_operator(spec.operators[mode])
                    except PluginProblem as exc:
                        op = Unavailable(f"plugin:{spec.operators[mode]}", str(exc))
                else:
                    op = reg.find(mode, kind, arch)
                if op is not None and spec.embed is not None:
                    embedder = embedder or embedder_for(policy.repair.embedder)
                    op = ReEmbed(op, embedder, spec.embed.field, tuple(spec.fields))
                if op is not None:
                    reg.register(mode, op, kind=kind, arch=arch)


@dataclass(frozen=True)
class Unavailable:
    """An operator the policy names that cannot be loaded here: its candidates cannot run."""

    name: str
    reason: str
    checks_content = False

    def check(self, artifact: Artifact) -> str | None:
        return self.reason

    def __call__(self, artifact: Artifact, ctx: RepairContext) -> Successor:
        raise OperatorError(self.reason)
