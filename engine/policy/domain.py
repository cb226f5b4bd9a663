"""The decision domain of Φ_μ and its concrete (pure-Python) evaluation.

A *cell* is one point of the domain the mode map ranges over: an artifact kind (and an
architecture for skills), an event type, whether retained support suffices, whether
forget/reference partitions are available, and a value for every numeric metadata field
the kind declares. :func:`decide` is the reference semantics that the Z3 analysis in
:mod:`memsteward.policy.analysis` must agree with (tested against brute-force enumeration).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from .model import EVENTS, ModeRule, Policy, When


@dataclass(frozen=True)
class Cell:
    """One point of the Φ_μ domain: the inputs the mode map may test."""

    kind: str
    arch: str | None
    event: str
    support: str  # "sufficient" | "insufficient"
    partitions: bool
    meta: Mapping[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        parts = [
            f"kind={self.kind}",
            f"arch={self.arch or '-'}",
            f"event={self.event}",
            f"support={self.support}",
            f"partitions={'yes' if self.partitions else 'no'}",
        ]
        parts += [f"meta.{k}={format_number(v)}" for k, v in sorted(self.meta.items())]
        return " ".join(parts)

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "arch": self.arch,
            "event": self.event,
            "support": self.support,
            "partitions": self.partitions,
            "meta": dict(sorted(self.meta.items())),
        }


def format_number(v: float) -> str:
    """A metadata value as written in cells and messages (integers without '.0', else exact repr)."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def matches(when: When, cell: Cell) -> bool:
    """Whether a rule guard holds on a cell (an omitted field matches everything).

    A metadata condition on a field the cell's kind does not declare never holds.
    """
    if when.kind is not None and cell.kind not in when.kind:
        return False
    if when.arch is not None and (cell.arch is None or cell.arch not in when.arch):
        return False
    if when.event is not None and cell.event not in when.event:
        return False
    if when.support is not None and cell.support != when.support:
        return False
    if when.partitions is not None and cell.partitions != when.partitions:
        return False
    for name, cond in when.meta.items():
        if name not in cell.meta or not cond.holds(cell.meta[name]):
            return False
    return True


def firing_rule(policy: Policy, cell: Cell) -> int | None:
    """Index of the first rule of Φ_μ whose guard holds on ``cell`` (None: a gap)."""
    for index, rule in enumerate(policy.modes):
        if matches(rule.when, cell):
            return index
    return None


def decide(policy: Policy, cell: Cell) -> str | None:
    """μ = Φ_μ(cell): the mode of the first matching rule, or None when no rule matches."""
    index = firing_rule(policy, cell)
    return None if index is None else policy.modes[index].mode


def finite_cells(policy: Policy) -> Iterator[tuple[str, str | None, str, str, bool]]:
    """Every (kind, arch, event, support, partitions) combination of the policy's domain."""
    for kind in policy.kinds:
        for arch in policy.architectures(kind):
            for event, support, partitions in itertools.product(
                EVENTS, ("sufficient", "insufficient"), (False, True)
            ):
                yield kind, arch, event, support, partitions


def meta_points(policy: Policy, kind: str, rules: list[ModeRule] | None = None) -> dict[str, list[float]]:
    """Representative values for each numeric field of ``kind``.

    Every threshold t any rule mentions yields the points t − ½, t, t + ½ (and t ± 1e-6) so that
    each region between thresholds is sampled; declared bounds clip the points. This is the
    brute-force reference used to test the Z3 analysis.
    """
    rules = policy.modes if rules is None else rules
    spec = policy.kinds[kind]
    points: dict[str, list[float]] = {}
    for name, mf in spec.meta.items():
        cands = {mf.default}
        for rule in rules:
            cond = rule.when.meta.get(name)
            if cond is None:
                continue
            for t in cond.thresholds():
                cands.update({t - 0.5, t - 1e-6, t, t + 1e-6, t + 0.5})
        if mf.min is not None:
            cands.add(mf.min)
        if mf.max is not None:
            cands.add(mf.max)
        points[name] = sorted(
            v for v in cands if (mf.min is None or v >= mf.min) and (mf.max is None or v <= mf.max)
        )
    return points


def enumerate_cells(policy: Policy) -> Iterator[Cell]:
    """All finite cells × representative metadata points (brute-force reference domain)."""
    for kind, arch, event, support, partitions in finite_cells(policy):
        pts = meta_points(policy, kind)
        names = sorted(pts)
        for values in itertools.product(*(pts[n] for n in names)):
            yield Cell(kind, arch, event, support, partitions, dict(zip(names, values)))
