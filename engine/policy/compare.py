"""Semantic diff of two policies' mode maps (``memsteward compare``).

A *decision* on a cell is the mode Φ_μ assigns and the set of oracles that must pass for it.
For every pair (old rule i, new rule j) and every (kind, arch), Z3 decides whether some cell
is decided by i in the old policy and by j in the new one; when the decisions differ, the
model is the concrete example cell. Differences are classified:

* **stricter** — the new policy withdraws (``remove``) where the old repaired, or keeps the
  mode and demands a strict superset of oracles;
* **looser** — the reverse;
* **changed** — a different repair mode, incomparable oracle sets, or oracle settings that move in
  both directions (or have no order);
* an oracle's settings count: with the same mode and oracles, a higher threshold (``grounded
  min_support``, ``task_regression min_pass``, …) is stricter and a lower one looser
  (:data:`ORACLE_DIRECTION`); every changed setting is named with its old and new value;
* a cell one policy leaves undecided (a gap, or a kind it does not declare) is treated as the
  paper's fallback ``remove`` (MemoRepair §2.3 "Otherwise, the artifact is assigned remove").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import z3

from .domain import Cell
from .encoding import Encoding, solve
from .model import Policy, oracle_name

ORDER = {"stricter": 0, "looser": 1, "changed": 2}


@dataclass(frozen=True)
class Decision:
    mode: str
    oracles: frozenset[str]
    rule: int | None  # 1-based rule index, None for a gap / undeclared kind
    settings: frozenset[str] = frozenset()  # each oracle with its settings, as canonical JSON

    def describe(self) -> str:
        ors = ",".join(sorted(self.oracles))
        return self.mode + (f"[{ors}]" if ors else "") + ("" if self.rule is not None else " (no rule)")


@dataclass(frozen=True)
class Difference:
    verdict: str  # stricter | looser | changed
    cell: Cell
    old: Decision
    new: Decision

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "cell": self.cell.as_dict(),
            "old": {"mode": self.old.mode, "oracles": sorted(self.old.oracles), "rule": self.old.rule,
                    "oracle_settings": [json.loads(x) for x in sorted(self.old.settings)]},
            "new": {"mode": self.new.mode, "oracles": sorted(self.new.oracles), "rule": self.new.rule,
                    "oracle_settings": [json.loads(x) for x in sorted(self.new.settings)]},
            "oracle_changes": self.oracle_changes,
        }

    @property
    def oracle_changes(self) -> list[dict[str, Any]]:
        """Each changed setting of an oracle both sides demand, with old and new value and verdict."""
        return oracle_changes(self.old, self.new) if self.old.mode == self.new.mode else []


def decision(policy: Policy, rule: int | None, kind: str, arch: str | None) -> Decision:
    """The decision rule ``rule`` (0-based; None for a gap) makes on (kind, arch)."""
    if rule is None or kind not in policy.kinds or arch not in policy.architectures(kind):
        return Decision("remove", frozenset(), None)
    mode = policy.modes[rule].mode
    specs = policy.oracles_for(mode, kind, arch) if mode != "remove" else []
    return Decision(mode, frozenset(oracle_name(o) for o in specs), rule + 1,
                    frozenset(json.dumps(o.model_dump(mode="json", by_alias=True), sort_keys=True) for o in specs))


def verdict(old: Decision, new: Decision) -> str | None:
    """Classify a change of decision (None: equal). With the same mode, the oracle sets and the
    settings of the oracles both keep count: a superset of oracles or a higher threshold is
    stricter, the reverse looser; a mix of both directions, or an unordered setting, is changed."""
    if (old.mode, old.oracles, old.settings) == (new.mode, new.oracles, new.settings):
        return None
    if old.mode != "remove" and new.mode == "remove":
        return "stricter"
    if old.mode == "remove" and new.mode != "remove":
        return "looser"
    if old.mode != new.mode:
        return "changed"
    directions = {s["verdict"] for s in oracle_changes(old, new)}
    if new.oracles > old.oracles:
        directions.add("stricter")
    elif new.oracles < old.oracles:
        directions.add("looser")
    elif new.oracles != old.oracles:
        directions.add("changed")
    return directions.pop() if len(directions) == 1 else "changed"


# Oracle settings whose direction is known: +1 when a larger value lets fewer successors pass
# (stricter), -1 when it lets more pass (looser). Booleans count as 0/1.
ORACLE_DIRECTION: dict[tuple[str, str], int] = {
    ("grounded", "min_support"): +1,
    ("replay", "runs"): +1,
    ("replay", "tolerance"): -1,
    ("task_regression", "min_pass"): +1,
    ("sandbox", "allow_extra_args"): -1,
    ("forget_reference", "max_forget_score"): -1,
    ("forget_reference", "min_retained_utility"): +1,
}


def _by_oracle(d: Decision) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for text in sorted(d.settings):
        spec = json.loads(text)
        out.setdefault(spec["oracle"], []).append(spec)
    return out


def oracle_changes(old: Decision, new: Decision) -> list[dict[str, Any]]:
    """Every setting of an oracle both decisions demand that changed: ``{"oracle", "setting",
    "old", "new", "verdict"}``, the verdict by :data:`ORACLE_DIRECTION` (a lower ``min_support``
    is looser), ``changed`` for settings with no order (a schema, the probe list). An oracle a
    decision lists more than once (several validation rules) is compared as one whole value."""
    a, b = _by_oracle(old), _by_oracle(new)
    out: list[dict[str, Any]] = []
    for oracle in sorted(set(a) & set(b)):
        if a[oracle] == b[oracle]:
            continue
        if len(a[oracle]) != 1 or len(b[oracle]) != 1:
            out.append({"oracle": oracle, "setting": "*", "old": a[oracle], "new": b[oracle], "verdict": "changed"})
            continue
        x, y = a[oracle][0], b[oracle][0]
        for key in sorted(set(x) | set(y)):
            if key != "oracle" and x.get(key) != y.get(key):
                out.append({"oracle": oracle, "setting": key, "old": x.get(key), "new": y.get(key),
                            "verdict": _direction(ORACLE_DIRECTION.get((oracle, key)), x.get(key), y.get(key))})
    return out


def _direction(sign: int | None, old: Any, new: Any) -> str:
    if sign is None or not isinstance(old, (int, float)) or not isinstance(new, (int, float)):
        return "changed"
    return "stricter" if (new - old) * sign > 0 else "looser"


def _branches(enc: Encoding, policy: Policy) -> list[tuple[int | None, z3.BoolRef]]:
    """Disjoint cases covering the domain: rule i fires, or no rule applies."""
    out: list[tuple[int | None, z3.BoolRef]] = [(i, enc.fires(policy, i)) for i in range(len(policy.modes))]
    out.append((None, z3.Or(z3.Not(enc.declared(policy)), enc.uncovered(policy))))
    return out


def compare(old: Policy, new: Policy) -> list[Difference]:
    """One example cell per (verdict, old rule, new rule, kind, arch) region that differs."""
    enc = Encoding([old, new])
    dom = enc.domain()
    found: list[Difference] = []
    old_br, new_br = _branches(enc, old), _branches(enc, new)
    for kind in enc.kinds:
        for arch in enc.archs_of(kind):
            pin = enc.pin(kind, arch)
            if solve(dom, pin) is None:
                continue
            for i, fires_old in old_br:
                d_old = decision(old, i, kind, arch)
                for j, fires_new in new_br:
                    d_new = decision(new, j, kind, arch)
                    v = verdict(d_old, d_new)
                    if v is None:
                        continue
                    model = solve(dom, pin, fires_old, fires_new)
                    if model is not None:
                        found.append(Difference(v, enc.cell(model), d_old, d_new))
    found.sort(key=lambda d: (ORDER[d.verdict], d.cell.kind, d.cell.arch or "", d.cell.event))
    return found


def settings_diff(old: Policy, new: Policy) -> list[dict]:
    """Scalar settings outside the mode map that changed (λ, β, support, clearance, weights)."""
    a = old.model_dump(mode="json", exclude={"modes", "validation", "name", "description"})
    b = new.model_dump(mode="json", exclude={"modes", "validation", "name", "description"})
    out: list[dict] = []
    _walk_diff(a, b, "", out)
    return out


# Settings whose direction is known: +1 when a larger value withdraws more (stricter).
_DIRECTION = {"selection.tradeoff": +1, "selection.budget": -1}


def setting_verdict(path: str, old: object, new: object) -> str:
    """stricter / looser for λ and β (a larger λ or smaller β republishes less), else changed."""
    sign = _DIRECTION.get(path)
    if sign is None:
        return "changed"
    if path == "selection.budget" and (old is None or new is None):
        return "stricter" if old is None else "looser"  # adding a cap is stricter
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        return "stricter" if (new - old) * sign > 0 else "looser"
    return "changed"


def _walk_diff(a: object, b: object, path: str, out: list[dict]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            _walk_diff(a.get(key), b.get(key), f"{path}.{key}" if path else str(key), out)
    elif a != b and not path.endswith("description"):
        out.append({"setting": path, "old": a, "new": b, "verdict": setting_verdict(path, a, b)})
