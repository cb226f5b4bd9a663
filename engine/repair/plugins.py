"""Repair operators and validation oracles as plugins, found by entry points.

A team extends memsteward without forking it by installing a distribution that declares entry
points in two groups (the packaging ecosystem's convention, as pytest and Flake8 plugins do)::

    [project.entry-points."memsteward.operators"]
    profile-merge = "my_package.repair:ProfileMerge"      # a class (or a factory) of an Operator
    [project.entry-points."memsteward.oracles"]
    profile-check = "my_package.repair:ProfileCheck"      # a class (or a factory) of an oracle

A policy names a plugin: ``kinds.<kind>.operators.<mode>: profile-merge`` and
``validation[i].oracles[j]: {oracle: plugin, plugin: profile-check, settings: {...}}``.

Contracts (checked when ``memsteward check`` loads the plugin, each failure a finding naming the
policy's file, line and field):

* an **operator** entry point loads to an object with ``check(artifact) -> str | None`` and
  ``__call__(artifact, ctx) -> Successor`` (:class:`~memsteward.repair.operators.Operator`), or to a
  class / zero-argument factory returning one;
* an **oracle** entry point loads to a callable ``(settings: Mapping, x: OracleInput) -> Report``,
  or to a class / zero-argument factory returning one.

At repair time a plugin runs behind the same boundary as the built-ins: any exception it raises
(in ``check`` too, or a ``SystemExit``) fails only its candidate, which stays withdrawn, and the
event completes. The audit's policy digest covers the name, distribution and version of every
plugin the policy uses (:func:`memsteward.policy.plugins.manifest`), so a changed plugin changes the evidence.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from typing import Any

from ..errors import printable
from ..policy.plugins import GROUPS, installed, used
from .artifacts import Artifact
from .operators import Operator, OperatorError, RepairContext, Successor


class PluginProblem(Exception):
    """A plugin a policy names cannot be used: unknown, not importable, or of the wrong type."""


def _entry_point(group: str, name: str) -> metadata.EntryPoint:
    for ep in metadata.entry_points(group=GROUPS[group], name=name):
        return ep
    known = ", ".join(sorted(installed(group))) or "none installed"
    raise PluginProblem(f"unknown {group} plugin '{name}' (entry-point group {GROUPS[group]}: {known}; "
                        f"see `memsteward plugins`)")


def _instantiate(group: str, name: str) -> Any:
    """Import the entry point and build the object (a class or factory is called without arguments)."""
    ep = _entry_point(group, name)
    try:
        obj = ep.load()
    except BaseException as exc:  # noqa: BLE001 — an import may raise anything, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise PluginProblem(f"{group} plugin '{name}' ({printable(ep.value)[:120]}) cannot be imported: "
                            f"{type(exc).__name__}") from None
    if inspect.isclass(obj) or (inspect.isfunction(obj) and _zero_arg(obj) and group == "operator"):
        try:
            obj = obj()
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise PluginProblem(f"{group} plugin '{name}' could not be constructed: {type(exc).__name__}") from None
    return obj


def _zero_arg(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


@lru_cache(maxsize=64)
def load_operator(name: str) -> Operator:
    """The operator plugin ``name``, behind the candidate boundary. Raises :class:`PluginProblem`."""
    obj = _instantiate("operator", name)
    if not (callable(getattr(obj, "check", None)) and callable(obj)):
        raise PluginProblem(f"operator plugin '{name}' is a {type(obj).__name__}, not an operator "
                            f"(it needs check(artifact) and __call__(artifact, ctx))")
    return PluginOperator(name, obj)


@lru_cache(maxsize=64)
def load_oracle(name: str) -> Callable[[Mapping[str, Any], Any], Any]:
    """The oracle plugin ``name`` as a callable ``(settings, OracleInput) -> Report``.
    Raises :class:`PluginProblem`."""
    obj = _instantiate("oracle", name)
    if not callable(obj) or inspect.isclass(obj):
        raise PluginProblem(f"oracle plugin '{name}' is a {type(obj).__name__}, not an oracle "
                            f"(it needs __call__(settings, oracle_input) -> Report)")
    return obj  # type: ignore[no-any-return]


@dataclass(frozen=True)
class PluginOperator:
    """A plugin operator seen through the engine's boundary: its ``check`` may raise anything (the
    candidate then cannot run), its result must be a :class:`Successor`, and a ``SystemExit`` from
    it is an :class:`OperatorError` (the candidate fails; the event completes)."""

    plugin: str
    inner: Any

    @property
    def name(self) -> str:
        return f"plugin:{self.plugin}"

    @property
    def checks_content(self) -> bool:
        return bool(getattr(self.inner, "checks_content", True))

    def check(self, artifact: Artifact) -> str | None:
        try:
            reason = self.inner.check(artifact)
        except BaseException as exc:  # noqa: BLE001 — nothing a plugin does wedges planning
            if isinstance(exc, KeyboardInterrupt):
                raise
            return f"plugin check raised {type(exc).__name__}"
        return None if reason is None else printable(str(reason))[:200]

    def __call__(self, artifact: Artifact, ctx: RepairContext) -> Successor:
        try:
            out = self.inner(artifact, ctx)
        except SystemExit:
            raise OperatorError(f"operator plugin '{self.plugin}' called exit") from None
        if not isinstance(out, Successor):
            raise OperatorError(f"operator plugin '{self.plugin}' returned a {type(out).__name__}, not a Successor")
        return out


def problems(policy: Any) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(location, message) for each plugin the policy names that cannot be used."""
    for loc, group, name in used(policy):
        try:
            (load_operator if group == "operator" else load_oracle)(name)
        except PluginProblem as exc:
            yield loc, str(exc)
