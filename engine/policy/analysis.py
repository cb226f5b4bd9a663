"""Static analysis of a policy (``memsteward check``), in the spirit of Cedar's validator.

Every semantic claim about the mode map Φ_μ is decided by Z3 over the encoding of
:mod:`memsteward.policy.encoding`, and every negative answer carries a concrete cell:

* **totality** — ``domain ∧ ⋀_j ¬guard_j`` is unsat; otherwise each gap is reported with a
  counterexample cell (distinct (kind, arch, event, support, partitions) cells are enumerated);
* **vacuous rules** — ``domain ∧ guard_i`` is unsat;
* **shadowed rules** — ``domain ∧ guard_i ∧ ⋀_{j<i} ¬guard_j`` is unsat; the shadowing rules are
  the unsat core over the earlier guards;
* **type safety** (MemoRepair §2.3) — ``param`` only fires on neural skills, ``recompute`` only
  on replayable kinds, and every (mode, kind, arch) a rule can fire on has ≥ 1 oracle;
* **parameter ranges** — λ ≥ 0, β ≥ 0, 0 ≤ κ ≤ 1, 0 ≤ τ ≤ 1, L ≥ 1, K ≥ 1, trials ≥ 1.
"""

from __future__ import annotations

from typing import Callable, Iterable

import z3

from .domain import Cell, format_number
from .encoding import Encoding, real, solve
from .findings import Finding
from .loader import PolicySource, dotted
from .model import Policy

MAX_GAPS = 12


def analyze(src: PolicySource) -> list[Finding]:
    """All findings for a loaded policy, ordered by position in the file."""
    policy = src.policy
    findings = list(_references(src)) + list(_parameters(src))
    if not any(f.code == "unknown-reference" for f in findings):
        enc = Encoding([policy])
        findings += _rules(src, enc)
        findings += _gaps(src, enc)
        findings += _type_safety(src, enc)
    return sorted(findings, key=lambda f: (f.line, f.col, f.code))


def _at(src: PolicySource, loc: tuple, severity: str, code: str, message: str,
        cell: Cell | None = None, **related: object) -> Finding:
    line, col = src.source.where(loc)
    field = dotted(loc)
    return Finding(severity, code, message, src.file, line, col, field,  # type: ignore[arg-type]
                   cell.as_dict() if cell else None, dict(related))


def _rule_name(policy: Policy, i: int) -> str:
    rule = policy.modes[i]
    return f"rule {i + 1}" + (f" '{rule.name}'" if rule.name else "")


# --------------------------------------------------------------------------- references


def _references(src: PolicySource) -> Iterable[Finding]:
    """Rules may only mention declared kinds, architectures and metadata fields."""
    p = src.policy
    for i, rule in enumerate(p.modes):
        w = rule.when
        for j, kind in enumerate(w.kind or []):
            if kind not in p.kinds:
                yield _at(src, ("modes", i, "when", "kind", j), "error", "unknown-reference",
                          f"{_rule_name(p, i)} names kind '{kind}', which the policy does not declare under 'kinds'")
        for j, arch in enumerate(w.arch or []):
            if "skill" not in p.kinds or arch not in p.architectures("skill"):
                yield _at(src, ("modes", i, "when", "arch", j), "error", "unknown-reference",
                          f"{_rule_name(p, i)} names architecture '{arch}', which no declared skill kind has")
        for field in w.meta:
            kinds = w.kind if w.kind is not None else list(p.kinds)
            if not any(field in p.kinds[k].meta for k in kinds if k in p.kinds):  # type: ignore[index]
                yield _at(src, ("modes", i, "when", "meta", field), "error", "unknown-reference",
                          f"{_rule_name(p, i)} tests metadata field '{field}', which none of its kinds declares")
    for i, rule in enumerate(p.validation):
        for j, kind in enumerate(rule.kind or []):
            if kind not in p.kinds:
                yield _at(src, ("validation", i, "kind", j), "error", "unknown-reference",
                          f"validation rule {i + 1} names kind '{kind}', which the policy does not declare")
    for kind, spec in p.kinds.items():
        if kind != "skill" and spec.architectures:
            yield _at(src, ("kinds", kind, "architectures"), "error", "type",
                      f"only the 'skill' kind has architectures (kind '{kind}')")
        for name, mf in spec.meta.items():
            loc = ("kinds", kind, "meta", name)
            if mf.min is not None and mf.max is not None and mf.min > mf.max:
                yield _at(src, loc, "error", "range", f"metadata field '{name}' has min {mf.min} > max {mf.max}")
            elif (mf.min is not None and mf.default < mf.min) or (mf.max is not None and mf.default > mf.max):
                yield _at(src, loc, "error", "range", f"metadata field '{name}' default {mf.default} is outside [min, max]")
    if not p.kinds:
        yield _at(src, ("kinds",), "error", "totality", "the policy declares no artifact kinds, so it governs nothing")
    for i, rule in enumerate(p.validation):
        for j, oracle in enumerate(rule.oracles):
            if oracle.oracle == "task_regression" and not oracle.probes:
                yield _at(src, ("validation", i, "oracles", j), "info", "oracle",
                          "task_regression declares no probes: it checks only artifacts that carry meta.probes")
    if not p.modes:
        yield _at(src, ("modes",) if ("modes",) in src.source.positions else (), "error", "totality",
                  "the mode map has no rules; add at least a final catch-all `when: {}` rule")


# --------------------------------------------------------------------------- parameters


def _parameters(src: PolicySource) -> Iterable[Finding]:
    p = src.policy
    sel, clr = p.selection, p.clearance
    checks = [
        (sel.tradeoff >= 0, ("selection", "tradeoff"), f"tradeoff λ must be ≥ 0 (MemoRepair Eq. 1), got {sel.tradeoff}"),
        (sel.budget is None or sel.budget >= 0, ("selection", "budget"), f"budget β must be ≥ 0, got {sel.budget}"),
        (0 <= clr.screen_tolerance <= 1, ("clearance", "screen_tolerance"),
         f"screen_tolerance κ must lie in [0, 1] (MeClear Alg. 1 line 4), got {clr.screen_tolerance}"),
        (0 <= clr.harm_tolerance <= 1, ("clearance", "harm_tolerance"),
         f"harm_tolerance τ must lie in [0, 1] (MeClear Eq. 14), got {clr.harm_tolerance}"),
        (clr.permutations >= 1, ("clearance", "permutations"), f"permutations L must be ≥ 1, got {clr.permutations}"),
        (clr.retrieval_budget >= 1, ("clearance", "retrieval_budget"),
         f"retrieval_budget K must be ≥ 1, got {clr.retrieval_budget}"),
        (clr.trials >= 1, ("clearance", "trials"), f"trials must be ≥ 1, got {clr.trials}"),
        (sel.value.default >= 0 and sel.cost.default >= 0, ("selection",), "value and cost defaults must be ≥ 0"),
    ]
    for ok, loc, message in checks:
        if not ok:
            yield _at(src, loc, "error", "range", message)
    if clr.retrieval_budget > 20 and clr.exact == "always":
        yield _at(src, ("clearance", "exact"), "warning", "cost",
                  f"exact Shapley at K = {clr.retrieval_budget} evaluates 2^K coalitions")


# --------------------------------------------------------------------------- rules


def _rules(src: PolicySource, enc: Encoding) -> list[Finding]:
    """Vacuous and shadowed rules, with the rules that shadow them (unsat core)."""
    p = src.policy
    dom = enc.domain()
    out: list[Finding] = []
    for i, rule in enumerate(p.modes):
        guard = enc.guard(rule.when, p)
        if solve(dom, guard) is None:
            out.append(_at(src, ("modes", i), "warning", "vacuous",
                           f"{_rule_name(p, i)} can never match: its conditions contradict each other "
                           "or the declared kinds/ranges", rule=i + 1))
            continue
        if i == 0:
            continue
        shadowers = _shadowed_by(enc, p, i, dom, guard)
        if shadowers:
            names = ", ".join(_rule_name(p, j) for j in shadowers)
            out.append(_at(src, ("modes", i), "warning", "shadowed",
                           f"{_rule_name(p, i)} can never fire: every cell it matches is taken by {names}",
                           rule=i + 1, shadowed_by=[j + 1 for j in shadowers]))
    return out


def _shadowed_by(enc: Encoding, p: Policy, i: int, dom: z3.BoolRef, guard: z3.BoolRef) -> list[int]:
    """Indices of earlier rules that together cover rule i (empty if rule i can fire)."""
    s = z3.Solver()
    s.set("timeout", 10_000)
    s.add(dom, guard)
    marks = []
    for j in range(i):
        lit = z3.Bool(f"__not_rule_{j}")
        s.add(z3.Implies(lit, z3.Not(enc.guard(p.modes[j].when, p))))
        marks.append(lit)
    r = s.check(*marks)
    if r == z3.sat:
        return []
    if r != z3.unsat:
        raise TimeoutError(f"Z3 returned unknown on {_rule_name(p, i)}")
    core = {str(c) for c in s.unsat_core()}
    picked = [j for j, lit in enumerate(marks) if str(lit) in core]
    return _minimise(enc, p, dom, guard, picked)


def _minimise(enc: Encoding, p: Policy, dom: z3.BoolRef, guard: z3.BoolRef, picked: list[int]) -> list[int]:
    """Drop rules from an unsat core while the rest still covers the guard (deletion filter)."""
    keep = list(picked)
    for j in list(keep):
        trial = [k for k in keep if k != j]
        if solve(dom, guard, *[z3.Not(enc.guard(p.modes[k].when, p)) for k in trial]) is None:
            keep = trial
    return keep


# --------------------------------------------------------------------------- totality


def gap_cells(policy: Policy, enc: Encoding | None = None, limit: int = MAX_GAPS) -> tuple[list[tuple[Cell, dict]], bool]:
    """Cells no rule matches, each with the widest region around it that is all gap.

    Each witness cell is widened over event, support and partitions: a dimension becomes
    ``"*"`` when, with the witness's metadata values, every value of it is also a gap.
    Returns ([(witness cell, region)], more) where ``more`` says further gaps exist.
    """
    enc = enc or Encoding([policy])
    dom, gap = enc.domain(), enc.uncovered(policy)
    blocked: list[z3.BoolRef] = []
    found: list[tuple[Cell, dict]] = []
    while True:
        model = solve(dom, gap, *blocked)
        if model is None:
            return found, False
        if len(found) == limit:
            return found, True
        cell = enc.cell(model)
        pins = enc.finite_pins(cell)
        meta_pin = [enc.meta[f] == real(v) for f, v in cell.meta.items()]
        for dim in ("event", "support", "partitions"):
            trial = {k: v for k, v in pins.items() if k != dim}
            if solve(dom, *trial.values(), *meta_pin, z3.Not(gap)) is None:
                pins = trial
        region = {"kind": cell.kind, "arch": cell.arch,
                  **{d: (getattr(cell, d) if d in pins else "*") for d in ("event", "support", "partitions")}}
        found.append((cell, region))
        blocked.append(z3.Not(z3.And(*pins.values())))


def describe_region(region: dict, cell: Cell) -> str:
    parts = [f"kind={region['kind']}", f"arch={region['arch'] or '-'}"]
    for d in ("event", "support", "partitions"):
        v = region[d]
        parts.append(f"{d}={'yes' if v is True else 'no' if v is False else v}")
    parts += [f"meta.{k}={format_number(v)}" for k, v in sorted(cell.meta.items())]
    return " ".join(parts)


def _gaps(src: PolicySource, enc: Encoding) -> list[Finding]:
    if not src.policy.modes:
        return []
    cells, more = gap_cells(src.policy, enc)
    out = [
        _at(src, ("modes",), "error", "totality",
            f"the mode map is not total: no rule decides the cells {{{describe_region(region, cell)}}}",
            cell, region=region)
        for cell, region in cells
    ]
    if more:
        out.append(_at(src, ("modes",), "error", "totality",
                       f"more than {MAX_GAPS} uncovered regions; add a final catch-all rule `when: {{}}`"))
    return out


# --------------------------------------------------------------------------- type safety


def _type_safety(src: PolicySource, enc: Encoding) -> list[Finding]:
    """param ⇒ neural skill; recompute ⇒ replayable kind; non-remove ⇒ ≥ 1 oracle."""
    p = src.policy
    dom = enc.domain()
    out: list[Finding] = []
    replayable = [k for k, spec in p.kinds.items() if spec.replayable]
    # mode → (cells the mode must never fire on, what to say about one of them)
    forbidden: dict[str, tuple[z3.BoolRef, Callable[[Cell], str]]] = {
        "param": (z3.Not(z3.And(enc.is_kind("skill"), enc.is_arch("neural"))),
                  lambda cell: "to a non-neural artifact (param repairs neural skills only)"),
        "recompute": (z3.And([z3.Not(enc.is_kind(k)) for k in replayable]) if replayable else z3.BoolVal(True),
                      lambda cell: f"to kind '{cell.kind}', which is not replayable"),
    }
    for i, rule in enumerate(p.modes):
        fires = enc.fires(p, i)
        if rule.mode in forbidden:
            bad, why = forbidden[rule.mode]
            model = solve(dom, fires, bad)
            if model is not None:
                cell = enc.cell(model)
                out.append(_at(src, ("modes", i, "mode"), "error", "type",
                               f"{_rule_name(p, i)} assigns '{rule.mode}' {why(cell)}, e.g. {{{cell.describe()}}}",
                               cell, rule=i + 1))
        if rule.mode != "remove":
            out += _missing_oracles(src, enc, i, dom, fires)
    return out


def _missing_oracles(src: PolicySource, enc: Encoding, i: int, dom: z3.BoolRef, fires: z3.BoolRef) -> list[Finding]:
    p = src.policy
    mode = p.modes[i].mode
    out = []
    for kind in p.kinds:
        for arch in p.architectures(kind):
            if p.oracles_for(mode, kind, arch):
                continue
            model = solve(dom, fires, enc.pin(kind, arch))
            if model is not None:
                cell = enc.cell(model)
                what = f"kind '{kind}'" + (f", arch '{arch}'" if arch else "")
                out.append(_at(src, ("modes", i, "mode"), "error", "oracle",
                               f"{_rule_name(p, i)} assigns '{mode}' to {what} but no validation oracle covers "
                               f"it; add one under 'validation' (MemoRepair §2.2: republish only validated "
                               f"successors), e.g. {{{cell.describe()}}}", cell, rule=i + 1))
    return out
