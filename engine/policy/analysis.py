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

import difflib
from collections.abc import Callable, Iterable

import z3

from .domain import Cell, format_number
from .encoding import Encoding, real, solve
from .endpoints import EndpointRules, endpoints, own_secret, shown_url
from .findings import Finding
from .loader import PolicySource, dotted
from .model import MAX_EXACT_RETRIEVAL_BUDGET, PAPER_ROLES, ROLES, Policy
from .plugins import used
from .rulesolver import RuleAnalysis, RuleFacts, part_work, rule_facts

MAX_GAPS = 12
MAX_NAMED = 8  # rules named in one shadowing message (all are listed in the finding's JSON)
MAX_RULES = 5000  # documented limit of `check`: beyond it the analysis is refused (bench: check_scaling)
MAX_META_CONDITIONS = 600
"""Documented limit of `check` on numeric ``meta`` conditions over all mode rules (issue 25): the
analysis' cost is driven by them (400 rules of 3 conditions on one kind took 62 s here, 5,000 more
than 25 minutes), so a policy with more is refused; docs/security.md records the measurements."""
MAX_PART_WORK = 3_000_000
"""Documented limit of `check` on its rule analysis' work (issue 25): Σ over the domain's parts (kind, arch,
event) of n_p (n_p + 2K), n_p the mode rules that can match the part (a rule of c meta conditions counts
1 + c times), K the declared kinds (:func:`~.rulesolver.part_work`). 5,000 rules within MAX_RULES that
name no kind, over 256 declared kinds (≈ 1,150 parts), kept `check` busy for more than 400 s without an
answer; the worst shapes measured at this limit are in bench/sections/check_limits.md and docs/security.md."""


def analyze(src: PolicySource, rules: EndpointRules | None = None) -> list[Finding]:
    """All findings for a loaded policy, ordered by position in the file.

    ``rules``: the operator's endpoint allow-lists (default: read from the environment and the
    user config file, :meth:`EndpointRules.from_environment`).
    """
    policy = src.policy
    rules = EndpointRules.from_environment() if rules is None else rules
    findings = list(_references(src)) + list(_parameters(src)) + list(_endpoints(src, rules))
    conditions = sum(len(r.when.meta) for r in policy.modes)
    if len(policy.modes) > MAX_RULES:
        findings.append(_at(src, ("modes",), "error", "limit",
                            f"{len(policy.modes)} mode rules exceed the analysed limit of {MAX_RULES}"))
    elif conditions > MAX_META_CONDITIONS:
        findings.append(_at(src, ("modes",), "error", "limit",
                            f"{conditions} meta conditions in mode rules exceed the analysed limit of "
                            f"{MAX_META_CONDITIONS}"))
    elif (work := part_work(policy)) > MAX_PART_WORK:
        findings.append(_at(src, ("modes",), "error", "limit",
                            f"the mode rules' analysis work is {work:,} (Σ over the parts (kind, arch, event) of "
                            "n·(n + 2K), n the rules that can match the part, a rule of c meta conditions counted "
                            f"1 + c times, K the kinds), over the analysed limit of {MAX_PART_WORK:,}: give rules a "
                            "`kind` (a rule without one is analysed for every kind), or declare fewer kinds"))
    elif not any(f.code == "unknown-reference" for f in findings):
        enc = Encoding([policy])
        ra = rule_facts(enc, policy)
        findings += _rules(src, ra.facts)
        findings += _gaps(src, enc)
        findings += _type_safety(src, enc, ra)
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
                          f"{_rule_name(p, i)} names kind '{kind}', which the policy does not declare under "
                          f"'kinds'{_did_you_mean(kind, p.kinds)}")
        for j, arch in enumerate(w.arch or []):
            if arch not in p.skill_architectures():
                yield _at(src, ("modes", i, "when", "arch", j), "error", "unknown-reference",
                          f"{_rule_name(p, i)} names architecture '{arch}', which no declared skill kind has")
        for field in w.meta:
            kinds = w.kind if w.kind is not None else list(p.kinds)
            if not any(field in p.kinds[k].meta for k in kinds if k in p.kinds):
                yield _at(src, ("modes", i, "when", "meta", field), "error", "unknown-reference",
                          f"{_rule_name(p, i)} tests metadata field '{field}', which none of its kinds declares")
    for i, rule in enumerate(p.validation):
        for j, kind in enumerate(rule.kind or []):
            if kind not in p.kinds:
                yield _at(src, ("validation", i, "kind", j), "error", "unknown-reference",
                          f"validation rule {i + 1} names kind '{kind}', which the policy does not declare"
                          f"{_did_you_mean(kind, p.kinds)}")
    yield from _kind_tables(src)
    yield from _roles(src)
    yield from _plugins(src)
    for kind, spec in p.kinds.items():
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


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _kind_tables(src: PolicySource) -> Iterable[Finding]:
    """Kinds named as keys of weight tables and per-kind schemas are declared."""
    p = src.policy
    tables: list[tuple[tuple, Iterable[str]]] = [
        (("selection", "value", "by_kind"), p.selection.value.by_kind),
        (("selection", "cost", "by_kind"), p.selection.cost.by_kind)]
    for i, rule in enumerate(p.validation):
        for j, oracle in enumerate(rule.oracles):
            if oracle.oracle == "schema":
                tables.append((("validation", i, "oracles", j, "by_kind"), oracle.by_kind))
    for loc, names in tables:
        for kind in names:
            if kind not in p.kinds:
                yield _at(src, loc + (kind,), "error", "unknown-reference",
                          f"'{dotted(loc)}' names kind '{kind}', which the policy does not declare"
                          f"{_did_you_mean(kind, p.kinds)}")


def _plugins(src: PolicySource) -> Iterable[Finding]:
    """Every plugin the policy names is installed, importable and of its group's type (loading a
    plugin imports its code: a policy names plugins, the operator installs them)."""
    if next(used(src.policy), None) is None:
        return
    from ..repair.plugins import problems  # local: imports the repair engine

    for loc, message in problems(src.policy):
        yield _at(src, loc, "error", "plugin", message)


def _roles(src: PolicySource) -> Iterable[Finding]:
    """Every kind has a role (a paper kind has its paper role); only skill kinds have architectures."""
    p = src.policy
    for kind, spec in p.kinds.items():
        role = p.role(kind)
        if role is None:
            yield _at(src, ("kinds", kind), "error", "type",
                      f"kind '{kind}' needs a role: one of {', '.join(ROLES)} (only the paper kinds "
                      f"{', '.join(PAPER_ROLES)} have one by default)")
        elif role != "skill" and spec.architectures:
            yield _at(src, ("kinds", kind, "architectures"), "error", "type",
                      f"only skill kinds (role 'skill') have architectures; kind '{kind}' has role '{role}'")


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
    if clr.retrieval_budget > MAX_EXACT_RETRIEVAL_BUDGET and clr.exact == "always":
        yield _at(src, ("clearance", "exact"), "error", "cost",
                  f"exact Shapley at K = {clr.retrieval_budget} evaluates 2^K coalitions; with exact: always, "
                  f"K must be ≤ {MAX_EXACT_RETRIEVAL_BUDGET}")


# --------------------------------------------------------------------------- endpoints


def _endpoints(src: PolicySource, rules: EndpointRules) -> Iterable[Finding]:
    """Every endpoint is shown (info); a key variable outside the operator's allow-list and
    plain HTTP to a non-loopback host are errors (a policy cannot choose where a secret goes)."""
    for loc, ep in endpoints(src.policy):
        yield _at(src, loc + ("base_url",), "info", "endpoint",
                  f"this policy sends memory text to {shown_url(ep.base_url)} "
                  f"(model {ep.model!r}, key from ${ep.api_key_env})")
        problem = rules.url_problem(ep.base_url)
        if problem:
            yield _at(src, loc + ("base_url",), "error", "endpoint", problem)
        if own_secret(ep.api_key_env):
            yield _at(src, loc + ("api_key_env",), "error", "secret",
                      f"api_key_env {ep.api_key_env!r} is one of memsteward's own secrets (audit key, store DSN, "
                      "master or index key); it is never sent to an endpoint, whatever the allow-list says")
        elif not rules.key_env_allowed(ep.api_key_env):
            yield _at(src, loc + ("api_key_env",), "error", "secret",
                      f"api_key_env {ep.api_key_env!r} is not an allowed key variable "
                      f"(allowed: {', '.join(rules.key_envs) or 'none'}); the operator of memsteward "
                      f"allows others in MEMSTEWARD_ALLOWED_KEY_ENVS or the config file, never a policy")


# --------------------------------------------------------------------------- rules


def _rules(src: PolicySource, facts: list[RuleFacts]) -> list[Finding]:
    """Vacuous and shadowed rules, with the rules that shadow them (irredundant covers)."""
    p = src.policy
    out: list[Finding] = []
    for i, f in enumerate(facts):
        if f.vacuous:
            out.append(_at(src, ("modes", i), "warning", "vacuous",
                           f"{_rule_name(p, i)} can never match: its conditions contradict each other "
                           "or the declared kinds/ranges", rule=i + 1))
        elif f.shadowed:
            shadowers = sorted(f.covered_by)
            names = ", ".join(_rule_name(p, j) for j in shadowers[:MAX_NAMED])
            more = f" and {len(shadowers) - MAX_NAMED} more" if len(shadowers) > MAX_NAMED else ""
            out.append(_at(src, ("modes", i), "warning", "shadowed",
                           f"{_rule_name(p, i)} can never fire: every cell it matches is taken by {names}{more}",
                           rule=i + 1, shadowed_by=[j + 1 for j in shadowers]))
    return out


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


def _type_safety(src: PolicySource, enc: Encoding, ra: RuleAnalysis) -> list[Finding]:
    """param ⇒ neural skill; recompute ⇒ replayable kind; non-remove ⇒ ≥ 1 oracle. Each is a
    question about the parts of the domain (kind, arch, event) where a rule fires."""
    p = src.policy
    out: list[Finding] = []
    replayable = {k for k, spec in p.kinds.items() if spec.replayable}
    opaque = set(p.kinds_with_role("opaque"))
    forbidden: dict[str, tuple[Callable[[str, str | None], bool], Callable[[Cell], str]]] = {
        "param": (lambda kind, arch: not (p.role(kind) == "skill" and arch == "neural"),
                  lambda cell: "to a non-neural artifact (param repairs neural skills only)"),
        "recompute": (lambda kind, arch: kind not in replayable,
                      lambda cell: f"to kind '{cell.kind}', which is not replayable"),
    }
    opaque_rule = (lambda kind, arch: kind in opaque,
                   lambda cell: f"to kind '{cell.kind}', whose role 'opaque' is never regenerated (only remove)")
    for i, rule in enumerate(p.modes):
        fires = ra.facts[i].fires_in
        checks = ([forbidden[rule.mode]] if rule.mode in forbidden else []) + (
            [opaque_rule] if rule.mode != "remove" and opaque else [])
        for bad, why in checks:
            hit = next((part for part in fires if bad(part[0], part[1])), None)
            if hit is not None:
                cell = enc.cell(ra.fire_witness(i, hit))
                out.append(_at(src, ("modes", i, "mode"), "error", "type",
                               f"{_rule_name(p, i)} assigns '{rule.mode}' {why(cell)}, e.g. {{{cell.describe()}}}",
                               cell, rule=i + 1))
        if rule.mode == "remove":
            continue
        reported: set[tuple[str, str | None]] = set()
        for part in fires:
            kind, arch, _ = part
            if (kind, arch) in reported or p.oracles_for(rule.mode, kind, arch):
                continue
            reported.add((kind, arch))
            cell = enc.cell(ra.fire_witness(i, part))
            what = f"kind '{kind}'" + (f", arch '{arch}'" if arch else "")
            out.append(_at(src, ("modes", i, "mode"), "error", "oracle",
                           f"{_rule_name(p, i)} assigns '{rule.mode}' to {what} but no validation oracle covers "
                           f"it; add one under 'validation' (MemoRepair §2.2: republish only validated "
                           f"successors), e.g. {{{cell.describe()}}}", cell, rule=i + 1))
    return out
