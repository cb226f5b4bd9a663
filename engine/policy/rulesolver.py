"""Per-rule facts of the mode map Φ_μ for ``memsteward check``: vacuous, firing, shadowed (and by
which rules), decided by Z3 with an encoding that stays linear in the number of rules.

Two things keep ``check`` fast on large policies (measured in ``bench/check_scaling.py``):

1. **Each guard is built once** and named by a literal ``g_j ⇔ guard_j``; a chain of prefix
   literals ``p_0 = true, p_{j+1} ⇔ p_j ∧ ¬g_j`` says "no rule before j matches", so "rule i
   fires" is the two assumptions (g_i, p_i). The direct encoding rebuilt ⋀_{j<i} ¬guard_j for
   every rule i — Θ(n²) formula size in the number of rules n, the cause of a minute on 500 rules.
2. **The domain is split by its finite part** (kind, arch, event): each part gets its own
   incremental solver holding only the rules whose kind/arch/event lists admit it. A check
   costs time linear in its solver's size, so spreading n rules over P parts divides the
   quadratic term (n checks × n-sized solver) by up to P.

A shadowed rule's covering rules are found without assuming all i earlier ¬g_j at once: a model
of g_i ∧ ⋀_J ¬g_j is a cell of rule i the cover J misses, and the first earlier rule matching it
(by the pure-Python reference semantics :func:`memsteward.policy.domain.matches`, confirmed in
the model) joins J: |J| + 1 checks, and every rule in J is the first match of some cell of rule i
that the rules before it in J miss (no deletion filter: it would double the checks).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import z3

from .domain import matches
from .encoding import Encoding
from .model import ARCHITECTURES, EVENTS, Policy, When

Part = tuple[str, str | None, str]  # (kind, arch, event)


def admits(when: When, part: Part) -> bool:
    """Whether a guard's finite conditions allow cells of this part."""
    kind, arch, event = part
    return ((when.kind is None or kind in when.kind)
            and (when.arch is None or (arch is not None and arch in when.arch))
            and (when.event is None or event in when.event))


KIND_WEIGHT = 2  # per rule and part, the work of the domain's K kinds: 2·K (fitted, bench/check_limits.py)


def part_work(policy: Policy) -> int:
    """Σ over the parts (kind, arch, event) of n_p · (n_p + 2K): n_p the rules admitting the part
    (:func:`admits`), a rule with c numeric ``meta`` conditions counted 1 + c times, K the number of
    declared kinds. Each of a part's rules costs solver checks whose price grows with the solver's size
    (its rules, their conditions, and the domain's K kinds), so this is what ``check``'s rule analysis
    costs, known before any solver runs (``MAX_PART_WORK``; the weights fitted in bench/check_limits.py).
    Counted as one matrix product (rules × kinds by rules × (arch, event)), not by a loop over rules × parts."""
    import numpy as np

    kinds = list(policy.kinds)
    if not kinds or not policy.modes:
        return 0
    column = {k: c for c, k in enumerate(kinds)}
    slots = (None, *ARCHITECTURES)
    by_kind = np.zeros((len(policy.modes), len(kinds)), dtype=np.int64)
    by_rest = np.zeros((len(policy.modes), len(slots) * len(EVENTS)), dtype=np.int64)
    for r, rule in enumerate(policy.modes):
        w = rule.when
        weight = 1 + len(w.meta)
        if w.kind is None:
            by_kind[r, :] = weight
        else:
            by_kind[r, [column[k] for k in w.kind if k in column]] = weight
        for a, arch in enumerate(slots):
            if w.arch is None or (arch is not None and arch in w.arch):
                for e, event in enumerate(EVENTS):
                    by_rest[r, a * len(EVENTS) + e] = w.event is None or event in w.event
    admitted = by_kind.T @ by_rest  # [kind, arch slot × event] → n_p
    total = 0
    for kind in kinds:
        for arch in policy.architectures(kind):
            a = slots.index(arch)
            row = admitted[column[kind], a * len(EVENTS):(a + 1) * len(EVENTS)]
            total += int((row * (row + KIND_WEIGHT * len(kinds))).sum())
    return total


@dataclass
class RuleFacts:
    """What Z3 found about one rule, per part of the domain it can match."""

    matches_in: list[Part] = field(default_factory=list)  # parts with a cell the guard matches
    fires_in: list[Part] = field(default_factory=list)  # parts with a cell where it is the first match
    covered_by: set[int] = field(default_factory=set)  # earlier rules covering it where it never fires

    @property
    def vacuous(self) -> bool:
        return not self.matches_in

    @property
    def shadowed(self) -> bool:
        return bool(self.matches_in) and not self.fires_in


class PartSolver:
    """One incremental solver over one part of the domain, holding the rules that admit it."""

    def __init__(self, enc: Encoding, policy: Policy, part: Part, rules: list[int],
                 guards: list[z3.BoolRef], timeout_ms: int) -> None:
        kind, arch, event = part
        self.enc, self.policy, self.rules = enc, policy, rules
        self.position = {j: k for k, j in enumerate(rules)}
        self.solver = z3.Solver()
        self.solver.set("timeout", timeout_ms)
        self.solver.add(enc.domain(), enc.declared(policy), enc.pin(kind, arch), enc.event == EVENTS.index(event))
        self.g = [z3.Bool(f"__guard_{j}") for j in rules]
        self.none_before = [z3.BoolVal(True)] + [z3.Bool(f"__none_before_{k + 1}") for k in range(len(rules))]
        for k, j in enumerate(rules):
            self.solver.add(self.g[k] == guards[j])
            self.solver.add(self.none_before[k + 1] == z3.And(self.none_before[k], z3.Not(self.g[k])))

    def sat(self, *assumptions: z3.BoolRef) -> bool:
        """Satisfiable under the assumptions (no model is built: that costs as much as the check)."""
        r = self.solver.check(*assumptions)
        if r == z3.unknown:
            raise TimeoutError(f"Z3 returned unknown ({self.solver.reason_unknown()})")
        return r == z3.sat

    def model(self, *assumptions: z3.BoolRef) -> z3.ModelRef | None:
        return self.solver.model() if self.sat(*assumptions) else None

    def first_match(self, model: z3.ModelRef, k: int) -> int | None:
        """Position (≤ k) of the first rule matching the model's cell, by the Python semantics,
        confirmed in the model; None if rounding the model's rationals made them disagree."""
        cell = self.enc.cell(model)
        for pos in range(k + 1):
            if matches(self.policy.modes[self.rules[pos]].when, cell):
                return pos if z3.is_true(model.eval(self.g[pos], model_completion=True)) else None
        return None

    def _bisect(self, base: list[z3.BoolRef], k: int) -> int:
        """A position needed to cover ``base`` (sat, base ∧ p_k unsat): m − 1 for the least m
        with base ∧ p_m unsat (p_m only strengthens as m grows)."""
        lo, hi = 0, k
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.sat(*base, self.none_before[mid]):
                lo = mid
            else:
                hi = mid
        return hi - 1

    def analyse(self, k: int, facts: RuleFacts, part: Part) -> None:
        """Whether the rule at position k matches / fires in this part (added to ``facts``)."""
        if self.sat(self.g[k], self.none_before[k]):
            facts.matches_in.append(part)
            facts.fires_in.append(part)
        elif self.sat(self.g[k]):
            facts.matches_in.append(part)

    def fire_witness(self, j: int) -> z3.ModelRef:
        """A cell of this part where rule j is the first match (it fires here)."""
        k = self.position[j]
        model = self.model(self.g[k], self.none_before[k])
        assert model is not None
        return model

    def cover(self, j: int) -> set[int]:
        """Earlier rules covering rule j in this part (where it matches but never fires)."""
        k = self.position[j]
        cover: list[int] = []
        model = self.model(self.g[k])
        while model is not None:
            base = [self.g[k], *[z3.Not(self.g[c]) for c in cover]]
            pos = self.first_match(model, k)
            cover.append(pos if pos is not None and pos < k and pos not in cover else self._bisect(base, k))
            model = self.model(self.g[k], *[z3.Not(self.g[c]) for c in cover])
        return {self.rules[c] for c in cover}


@dataclass
class RuleAnalysis:
    """Facts of every rule (index = rule position) and the solvers, for witnesses on demand."""

    facts: list[RuleFacts]
    solvers: dict[Part, PartSolver]

    def fire_witness(self, j: int, part: Part) -> z3.ModelRef:
        return self.solvers[part].fire_witness(j)


def rule_facts(enc: Encoding, policy: Policy, timeout_ms: int = 10_000) -> RuleAnalysis:
    """Vacuous / firing / shadowed (with covers) for every rule of ``policy``."""
    guards = [enc.guard(rule.when, policy) for rule in policy.modes]
    facts = [RuleFacts() for _ in policy.modes]
    solvers: dict[Part, PartSolver] = {}
    for kind in policy.kinds:
        for arch in policy.architectures(kind):
            for event in EVENTS:
                part: Part = (kind, arch, event)
                rules = [j for j, rule in enumerate(policy.modes) if admits(rule.when, part)]
                if not rules:
                    continue
                ps = solvers[part] = PartSolver(enc, policy, part, rules, guards, timeout_ms)
                for k, j in enumerate(rules):
                    ps.analyse(k, facts[j], part)
    for j, f in enumerate(facts):  # covers only for rules that fire nowhere
        if f.shadowed:
            for part in f.matches_in:
                f.covered_by |= solvers[part].cover(j)
    return RuleAnalysis(facts, solvers)
