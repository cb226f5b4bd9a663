"""The plugins a policy names, and what is installed: entry-point metadata only (no plugin code
is imported here; loading and the repair-time boundary are :mod:`memsteward.repair.plugins`).

Groups: ``memsteward.operators`` (repair operators) and ``memsteward.oracles`` (validation
oracles). :func:`manifest` is what the audit's policy digest and the remembered ``check`` verdict
cover: the name, distribution and version of each plugin the policy uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from typing import Any

GROUPS: dict[str, str] = {"operator": "memsteward.operators", "oracle": "memsteward.oracles"}
MAX_PLUGINS = 512  # entry points read per group (an environment is untrusted too)


@dataclass(frozen=True)
class Plugin:
    """One installed entry point of a memsteward group."""

    group: str  # "operator" | "oracle"
    name: str
    target: str  # "module:attribute"
    distribution: str
    version: str

    def as_dict(self) -> dict[str, str]:
        return {"group": GROUPS[self.group], "name": self.name, "target": self.target,
                "distribution": self.distribution, "version": self.version}


def installed(group: str) -> dict[str, Plugin]:
    """The entry points of ``group`` ("operator" or "oracle") by name (the first of a duplicated name)."""
    out: dict[str, Plugin] = {}
    for k, ep in enumerate(metadata.entry_points(group=GROUPS[group])):
        if k >= MAX_PLUGINS:
            break
        dist = getattr(ep, "dist", None)
        out.setdefault(ep.name, Plugin(group, ep.name, ep.value, getattr(dist, "name", "") or "?",
                                       getattr(dist, "version", "") or "?"))
    return out


# --------------------------------------------------------------------------- what a policy uses


def used(policy: Any) -> Iterator[tuple[tuple[Any, ...], str, str]]:
    """(location in the policy, group, name) of every plugin the policy names."""
    for kind, spec in policy.kinds.items():
        for mode, name in spec.operators.items():
            yield ("kinds", kind, "operators", mode), "operator", name
    for i, rule in enumerate(policy.validation):
        for j, oracle in enumerate(rule.oracles):
            if oracle.oracle == "plugin":
                yield ("validation", i, "oracles", j, "plugin"), "oracle", oracle.plugin


def manifest(policy: Any) -> list[dict[str, str]]:
    """Name, distribution and version of each plugin the policy uses, sorted (the audit pins it)."""
    found: dict[tuple[str, str], dict[str, str]] = {}
    for _, group, name in used(policy):
        plugin = installed(group).get(name)
        found[(group, name)] = (plugin.as_dict() if plugin is not None else
                                {"group": GROUPS[group], "name": name, "target": "", "distribution": "",
                                 "version": ""})
    return [found[k] for k in sorted(found)]
