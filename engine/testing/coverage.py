"""Coverage of a policy by its declared cases (``memsteward test --coverage``).

Per policy, from the observations of its repair cases:

* **rules** — which mode rules of Φ_μ decided at least one descendant (the percentage that
  ``--threshold`` gates on), each unfired rule named with its file:line;
* **regions** — every (kind, arch, event, support) region of the domain, decided by the same Z3
  encoding as ``memsteward check``; an unreached region is printed with a concrete witness cell
  (and the rule that would decide it);
* **oracles** — each oracle of each validation rule that never ran on a successor;
* **λ / β** — whether some case's selection depended on the tradeoff λ (selecting at λ = 0 gives
  another set) and, when the policy sets one, on the budget β (selecting without β gives another set);
* **thresholds** — each ordered setting of each oracle (``grounded min_support``, ``task_regression
  min_pass``, … — the settings ``compare`` calls stricter or looser): at stake when some case ends
  otherwise (another republished or failed set) with that one setting at its loosest value. One that
  is never at stake could be loosened without any case noticing; a case whose ``successors`` give the
  oracle a borderline input puts it at stake.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ..policy.compare import ORACLE_DIRECTION
from ..policy.domain import Cell, firing_rule
from ..policy.encoding import Encoding, solve
from ..policy.loader import PolicySource
from ..policy.model import EVENTS, Policy, oracle_name
from .run import CaseResult, observe

SUPPORTS = ("sufficient", "insufficient")


@dataclass
class Item:
    """One thing that should be exercised: what it is, where it is declared, whether it was."""

    what: str
    name: str
    line: int
    covered: bool
    witness: dict[str, Any] | None = None
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"what": self.what, "name": self.name, "line": self.line, "covered": self.covered,
                "witness": self.witness, "note": self.note}


@dataclass
class PolicyCoverage:
    file: str
    cases: int
    rules: list[Item] = field(default_factory=list)
    regions: list[Item] = field(default_factory=list)
    oracles: list[Item] = field(default_factory=list)
    edges: list[Item] = field(default_factory=list)
    thresholds: list[Item] = field(default_factory=list)

    @property
    def percent(self) -> float:
        """Rule coverage: fired rules / all rules (100 for a policy without rules)."""
        if not self.rules:
            return 100.0
        return 100.0 * sum(i.covered for i in self.rules) / len(self.rules)

    def percent_of(self, items: list[Item]) -> float:
        return 100.0 if not items else 100.0 * sum(i.covered for i in items) / len(items)

    def as_dict(self) -> dict[str, Any]:
        return {"policy": self.file, "cases": self.cases, "rule_coverage": round(self.percent, 2),
                "region_coverage": round(self.percent_of(self.regions), 2),
                "oracle_coverage": round(self.percent_of(self.oracles), 2),
                "threshold_coverage": round(self.percent_of(self.thresholds), 2),
                "rules": [i.as_dict() for i in self.rules], "regions": [i.as_dict() for i in self.regions],
                "oracles": [i.as_dict() for i in self.oracles], "edges": [i.as_dict() for i in self.edges],
                "thresholds": [i.as_dict() for i in self.thresholds]}


def coverage(src: PolicySource, results: list[CaseResult]) -> PolicyCoverage:
    """Coverage of one policy by the given results (all of them cases of this policy)."""
    p = src.policy
    obs = [r.observation for r in results if r.observation is not None]
    out = PolicyCoverage(src.file, len(results))
    fired = {i for o in obs for i in o.rules.values() if i is not None}
    for i, rule in enumerate(p.modes):
        out.rules.append(Item("rule", rule.name or f"rule {i + 1}", src.source.where(("modes", i))[0], i in fired,
                              note=f"mode {rule.mode}"))
    out.regions = _regions(src, [c for o in obs for c in o.cells.values()])
    ran = {(c.mode, c.kind, c.arch, name) for o in obs for c in o.plan.candidates
           for name in o.oracles.get(c.id, ())}
    for vi, vrule in enumerate(p.validation):
        for oj, oracle in enumerate(vrule.oracles):
            hit = any(vrule.applies(m, k, a) and n == oracle_name(oracle) for m, k, a, n in ran)
            scope = "".join([f" kind={','.join(vrule.kind)}" if vrule.kind else "",
                             f" arch={','.join(vrule.arch)}" if vrule.arch else ""])
            out.oracles.append(Item("oracle", f"{oracle_name(oracle)} (validation {vi + 1}: mode={vrule.mode}{scope})",
                                    src.source.where(("validation", vi, "oracles", oj))[0], hit))
    sel_line = src.source.where(("selection", "tradeoff"))[0]
    out.edges.append(Item("edge", "λ (selection.tradeoff)", sel_line, any(o.tradeoff_at_stake for o in obs),
                          note="no case's selection depends on λ (λ = 0 selects the same)"))
    if p.selection.budget is not None:
        out.edges.append(Item("edge", "β (selection.budget)", src.source.where(("selection", "budget"))[0],
                              any(o.budget_at_stake for o in obs), note="no case's selection is capped by β"))
    out.thresholds = _thresholds(src, [r for r in results if r.observation is not None])
    return out


#: the loosest value of each ordered oracle setting (the bound of its range that lets most pass)
LOOSEST: dict[tuple[str, str], Any] = {
    ("grounded", "min_support"): 0.0, ("replay", "runs"): 1, ("replay", "tolerance"): 1e300,
    ("task_regression", "min_pass"): 0.0, ("sandbox", "allow_extra_args"): True,
    ("forget_reference", "max_forget_score"): 1.0, ("forget_reference", "min_retained_utility"): 0.0,
}


def loosened(policy: Policy, vi: int, oj: int, setting: str, value: Any) -> Policy:
    """The policy with one setting of one oracle of one validation rule set to ``value``."""
    rule = policy.validation[vi]
    oracles = list(rule.oracles)
    oracles[oj] = oracles[oj].model_copy(update={setting: value})
    rules = list(policy.validation)
    rules[vi] = rule.model_copy(update={"oracles": oracles})
    return policy.model_copy(update={"validation": rules})


def _outcome(obs: Any) -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(obs.plan.republished), obs.failed


def _thresholds(src: PolicySource, results: list[CaseResult]) -> list[Item]:
    """Each ordered oracle setting, at stake when a case ends otherwise with it at its loosest."""
    p = src.policy
    out: list[Item] = []
    for vi, vrule in enumerate(p.validation):
        for oj, oracle in enumerate(vrule.oracles):
            for setting in sorted(k for (o, k) in ORACLE_DIRECTION if o == oracle.oracle):
                value, loose = getattr(oracle, setting), LOOSEST[(oracle.oracle, setting)]
                name = f"{oracle_name(oracle)} {setting} = {value} (validation {vi + 1}: mode={vrule.mode})"
                line = src.source.where(("validation", vi, "oracles", oj))[0]
                hit = value != loose and _at_stake(loosened(p, vi, oj, setting, loose), results)
                out.append(Item("threshold", name, line, hit, note=(
                    f"no case ends otherwise at {setting} = {loose}: give a case 'successors' that this "
                    "oracle accepts only there")))
    return out


def _at_stake(loose: Policy, results: list[CaseResult]) -> bool:
    return any(_outcome(observe(loose, r.case)) != _outcome(r.observation) for r in results)


def _regions(src: PolicySource, cells: list[Cell]) -> list[Item]:
    """Every non-empty (kind, arch, event, support) region, reached or with a Z3 witness cell."""
    p = src.policy
    enc = Encoding([p])
    dom = enc.domain()
    reached = {(c.kind, c.arch, c.event, c.support) for c in cells}
    out: list[Item] = []
    for kind in p.kinds:
        for arch, event, support in itertools.product(p.architectures(kind), EVENTS, SUPPORTS):
            key = (kind, arch, event, support)
            name = f"kind={kind} arch={arch or '-'} event={event} support={support}"
            line = src.source.where(("kinds", kind))[0]
            if key in reached:
                out.append(Item("region", name, line, True))
                continue
            pins = enc.finite_pins(Cell(kind, arch, event, support, False))
            model = solve(dom, enc.declared(p), pins["kind"], pins["arch"], pins["event"], pins["support"])
            if model is None:
                continue  # empty region (metadata ranges exclude it)
            cell = enc.cell(model)
            rule = firing_rule(p, cell)
            note = (f"would be decided by {p.modes[rule].name or f'rule {rule + 1}'} → {p.modes[rule].mode}"
                    if rule is not None else "no rule decides it")
            out.append(Item("region", name, line, False, cell.as_dict(), f"{{{cell.describe()}}}; {note}"))
    return out
