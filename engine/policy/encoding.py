"""Z3 encoding of the Φ_μ domain and of rule guards.

A cell (see :mod:`memsteward.policy.domain`) becomes a tuple of Z3 variables:

* ``kind`` — Int, index into :attr:`Encoding.kinds`;
* ``arch`` — Int, −1 for non-skills, else index into ``ARCHITECTURES``;
* ``event`` — Int, index into ``EVENTS``;
* ``support`` — Bool (True: retained support suffices);
* ``partitions`` — Bool (forget/reference partitions available);
* ``meta[f]`` — Real, one per numeric metadata field name.

:meth:`Encoding.domain` constrains these to well-formed cells of the given policies;
:meth:`Encoding.guard` is the exact Z3 counterpart of :func:`memsteward.policy.domain.matches`.
One encoding can serve several policies (``memsteward compare``): kinds, architectures and
metadata fields are the union of what the policies declare.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import z3

from .domain import Cell
from .model import ARCHITECTURES, EVENTS, NumericCondition, Policy, When


def real(x: float) -> z3.ArithRef:
    """An exact Z3 rational for a float (no rounding surprises at thresholds)."""
    fr = Fraction(x)
    return z3.RealVal(f"{fr.numerator}/{fr.denominator}")


class Encoding:
    """Z3 variables and constraints for the cells of one or more policies."""

    def __init__(self, policies: Sequence[Policy]) -> None:
        self.policies = list(policies)
        kinds: list[str] = []
        for p in self.policies:
            kinds += [k for k in p.kinds if k not in kinds]
        self.kinds = kinds
        self.kind = z3.Int("kind")
        self.arch = z3.Int("arch")
        self.event = z3.Int("event")
        self.support = z3.Bool("support_sufficient")
        self.partitions = z3.Bool("partitions")
        names = sorted({f for p in self.policies for spec in p.kinds.values() for f in spec.meta})
        self.meta = {f: z3.Real(f"meta.{f}") for f in names}
        self._guards: dict[tuple[int, int], tuple[When, Policy, z3.BoolRef]] = {}
        self._domain: z3.BoolRef | None = None
        self._declared: dict[int, tuple[Policy, z3.BoolRef]] = {}

    # ---- atoms ------------------------------------------------------------------------

    def is_kind(self, kind: str) -> z3.BoolRef:
        return self.kind == self.kinds.index(kind) if kind in self.kinds else z3.BoolVal(False)

    def is_arch(self, arch: str | None) -> z3.BoolRef:
        return self.arch == (-1 if arch is None else ARCHITECTURES.index(arch))

    def archs_of(self, kind: str) -> tuple[str | None, ...]:
        out: list[str | None] = []
        for p in self.policies:
            out += [a for a in p.architectures(kind) if a not in out]
        return tuple(out)

    def fields_of(self, kind: str, policy: Policy | None = None) -> list[str]:
        pols = [policy] if policy is not None else self.policies
        out: list[str] = []
        for p in pols:
            spec = p.kinds.get(kind)
            if spec is not None:
                out += [f for f in spec.meta if f not in out]
        return out

    # ---- the domain ---------------------------------------------------------------------

    def domain(self) -> z3.BoolRef:
        """Well-formed cells: a declared kind, its architectures, in-range metadata (built once: the
        analysis asks for it once per (kind, arch, event) part, and a policy may declare many kinds)."""
        if self._domain is None:
            self._domain = self._build_domain()
        return self._domain

    def _build_domain(self) -> z3.BoolRef:
        per_kind = []
        for kind in self.kinds:
            archs = z3.Or([self.is_arch(a) for a in self.archs_of(kind)])
            bounds = [self._bounds(kind, f) for f in self.fields_of(kind)]
            per_kind.append(z3.And(self.is_kind(kind), archs, *bounds))
        return z3.And(z3.Or(per_kind), self.event >= 0, self.event < len(EVENTS))

    def _bounds(self, kind: str, field: str) -> z3.BoolRef:
        lo: float | None = None
        hi: float | None = None
        lo_set = hi_set = False
        for p in self.policies:
            spec = p.kinds.get(kind)
            mf = spec.meta.get(field) if spec is not None else None
            if mf is None:
                continue
            # the union of the policies' ranges (a bound holds only if every policy sets it)
            lo = mf.min if not lo_set else (None if lo is None or mf.min is None else min(lo, mf.min))
            hi = mf.max if not hi_set else (None if hi is None or mf.max is None else max(hi, mf.max))
            lo_set = hi_set = True
        x = self.meta[field]
        parts = []
        if lo is not None:
            parts.append(x >= real(lo))
        if hi is not None:
            parts.append(x <= real(hi))
        return z3.And(parts) if parts else z3.BoolVal(True)

    # ---- guards -------------------------------------------------------------------------

    def condition(self, field: str, cond: NumericCondition) -> z3.BoolRef:
        x = self.meta[field]
        parts = []
        if cond.gt is not None:
            parts.append(x > real(cond.gt))
        if cond.ge is not None:
            parts.append(x >= real(cond.ge))
        if cond.lt is not None:
            parts.append(x < real(cond.lt))
        if cond.le is not None:
            parts.append(x <= real(cond.le))
        if cond.eq is not None:
            parts.append(x == real(cond.eq))
        if cond.ne is not None:
            parts.append(x != real(cond.ne))
        return z3.And(parts)

    def guard(self, when: When, policy: Policy) -> z3.BoolRef:
        """Z3 formula for ``matches(when, cell)`` under ``policy``'s declarations (built once per
        rule: building Z3 terms from Python dominates the analysis of large policies). The entry keeps
        the rule and the policy it was built for and is used only for those two objects: a rule shared
        by a copy of the policy with other kinds (``model_copy``), whose id a freed policy had, is
        built again."""
        key = (id(when), id(policy))
        cached = self._guards.get(key)
        if cached is not None and cached[0] is when and cached[1] is policy:
            return cached[2]
        formula = self._guard(when, policy)
        self._guards[key] = (when, policy, formula)
        return formula

    def _guard(self, when: When, policy: Policy) -> z3.BoolRef:
        parts: list[z3.BoolRef] = []
        if when.kind is not None:
            parts.append(z3.Or([self.is_kind(k) for k in when.kind if k in policy.kinds] or [z3.BoolVal(False)]))
        if when.arch is not None:
            parts.append(z3.Or([self.is_arch(a) for a in when.arch]))
        if when.event is not None:
            parts.append(z3.Or([self.event == EVENTS.index(e) for e in when.event]))
        if when.support is not None:
            parts.append(self.support if when.support == "sufficient" else z3.Not(self.support))
        if when.partitions is not None:
            parts.append(self.partitions if when.partitions else z3.Not(self.partitions))
        for field, cond in when.meta.items():
            declaring = [k for k in policy.kinds if field in self.fields_of(k, policy)]
            if not declaring or field not in self.meta:
                parts.append(z3.BoolVal(False))
                continue
            parts.append(z3.And(z3.Or([self.is_kind(k) for k in declaring]), self.condition(field, cond)))
        return z3.And(parts) if parts else z3.BoolVal(True)

    def declared(self, policy: Policy) -> z3.BoolRef:
        """The cell is in ``policy``'s own domain (kind, architecture, metadata ranges); others get no
        decision (built once per policy)."""
        cached = self._declared.get(id(policy))
        if cached is None or cached[0] is not policy:
            cached = self._declared[id(policy)] = (policy, self._build_declared(policy))
        return cached[1]

    def _build_declared(self, policy: Policy) -> z3.BoolRef:
        return z3.Or([
            z3.And(self.is_kind(k), z3.Or([self.is_arch(a) for a in policy.architectures(k)]),
                   *[self._range(mf.min, mf.max, self.meta[f]) for f, mf in policy.kinds[k].meta.items()])
            for k in policy.kinds
        ] or [z3.BoolVal(False)])

    @staticmethod
    def _range(lo: float | None, hi: float | None, x: z3.ArithRef) -> z3.BoolRef:
        parts = ([x >= real(lo)] if lo is not None else []) + ([x <= real(hi)] if hi is not None else [])
        return z3.And(parts) if parts else z3.BoolVal(True)

    def fires(self, policy: Policy, index: int) -> z3.BoolRef:
        """Rule ``index`` is the first matching rule: guard_i ∧ ⋀_{j<i} ¬guard_j."""
        earlier = [z3.Not(self.guard(r.when, policy)) for r in policy.modes[:index]]
        return z3.And(self.declared(policy), self.guard(policy.modes[index].when, policy), *earlier)

    def uncovered(self, policy: Policy) -> z3.BoolRef:
        """No rule of ``policy`` matches (a gap in Φ_μ)."""
        return z3.And(self.declared(policy), *[z3.Not(self.guard(r.when, policy)) for r in policy.modes])

    # ---- models back to cells -------------------------------------------------------------

    def cell(self, model: z3.ModelRef) -> Cell:
        """Decode a satisfying assignment into a concrete :class:`Cell`."""
        ev = lambda e: model.eval(e, model_completion=True)  # noqa: E731
        kind = self.kinds[ev(self.kind).as_long()]
        a = ev(self.arch).as_long()
        arch = None if a < 0 else ARCHITECTURES[a]
        event = EVENTS[ev(self.event).as_long()]
        support = "sufficient" if z3.is_true(ev(self.support)) else "insufficient"
        partitions = z3.is_true(ev(self.partitions))
        meta = {}
        for f in self.fields_of(kind):
            val = ev(self.meta[f])
            meta[f] = float(Fraction(val.as_fraction())) if z3.is_rational_value(val) else float(val.as_decimal(12).rstrip("?"))
        return Cell(kind, arch, event, support, partitions, meta)

    def pin(self, kind: str, arch: str | None) -> z3.BoolRef:
        return z3.And(self.is_kind(kind), self.is_arch(arch))

    def finite_pins(self, cell: Cell) -> dict[str, z3.BoolRef]:
        """Equalities fixing the finite part of ``cell``, by dimension name."""
        return {
            "kind": self.is_kind(cell.kind),
            "arch": self.is_arch(cell.arch),
            "event": self.event == EVENTS.index(cell.event),
            "support": self.support if cell.support == "sufficient" else z3.Not(self.support),
            "partitions": self.partitions if cell.partitions else z3.Not(self.partitions),
        }


def solve(*constraints: z3.BoolRef, timeout_ms: int = 10_000) -> z3.ModelRef | None:
    """A model of the constraints, or None when unsat. Raises on ``unknown`` (timeouts fail)."""
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*constraints)
    r = s.check()
    if r == z3.sat:
        return s.model()
    if r == z3.unsat:
        return None
    raise TimeoutError(f"Z3 returned unknown ({s.reason_unknown()})")
