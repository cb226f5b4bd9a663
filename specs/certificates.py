"""Certificate checking of concrete plans against the guarantees (``memsteward verify --plan``).

A plan is checked clause by clause; the first violated clause is reported with its witness.

* ClearancePlan (MeClear): G1 efficiency (Σψ = v̂(M) − v̂(∅), when v̂(∅) is recorded), the
  harmful set H = {ψ_i < −τ} (Eq. 14), the nested chain (Eq. 16–17), the admissible set (Eq. 19),
  G3 — ĵ = min argmax_J ĝ (Eq. 20; under ``search: budgeted`` an unread candidate's gain is null and
  J holds read candidates only), non-degradation (Eq. 21), recovery (Eq. 22) — and the
  cleared context M̃ = M ∖ C_ĵ.
* TransitionPlan (MemoRepair): barrier ⊇ C(F) (§2.2), G4 — executability (Eq. 2), predecessor
  closure (Eq. 3), the reported objective (Eq. 1) and, for the min-cut selector, optimality (Z3 for
  up to :data:`Z3_LIMIT` candidates, otherwise a max-flow certificate: a verified feasible flow whose
  value equals the capacity of the cut the selection induces) — execution order topological over
  E^req[S], and G5 — republished successors validated with republished prerequisites, failures
  and their dependents withdrawn, roots never republished.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import z3

from memsteward.jsonio import bounded_fraction

Z3_LIMIT = 1000
EPS = 1e-9


@dataclass(frozen=True)
class Clause:
    """One checked clause: its guarantee, name, whether it held, and a witness if not."""

    guarantee: str
    name: str
    ok: bool
    witness: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"guarantee": self.guarantee, "clause": self.name, "ok": self.ok,
                "witness": self.witness or None, "note": self.note}


def plan_kind(doc: Mapping[str, Any]) -> str:
    """'transition' or 'clearance' (by the fields a plan carries)."""
    if "cascade" in doc and "candidates" in doc:
        return "transition"
    if "contribution" in doc and "chain" in doc:
        return "clearance"
    raise ValueError("not a TransitionPlan or ClearancePlan (expected 'cascade'+'candidates' or 'contribution'+'chain')")


def check_plan(doc: Mapping[str, Any]) -> list[Clause]:
    return check_transition_plan(doc) if plan_kind(doc) == "transition" else check_clearance_plan(doc)


def _clause(g: str, name: str, bad: Iterable[Any] | None = None, note: str = "",
            witness: Callable[[Any], dict] | None = None) -> Clause:
    first = next(iter(bad), None) if bad is not None else None
    if first is None:
        return Clause(g, name, True, note=note)
    return Clause(g, name, False, witness(first) if witness else {"item": first}, note)


# --------------------------------------------------------------------------- ClearancePlan


def check_clearance_plan(p: Mapping[str, Any]) -> list[Clause]:
    """Clauses of G1 and G3 on a ClearancePlan (MeClear Eq. 3, 14–22)."""
    out: list[Clause] = []
    psi: Mapping[str, float] = p["contribution"]
    context, chain, gains = list(p["context"]), list(p["chain"]), list(p["gains"])
    method = p.get("method", "meclear")
    if method != "meclear":
        removed = list(p["removed"])
        cleared = [m for m in context if m not in set(removed)]
        bad = [] if list(p["cleared_context"]) == cleared and set(removed) <= set(context) else [removed]
        return [_clause("G3", "M̃ = M ∖ removed (baselines claim no Eq. 19–22 guarantee)", bad,
                        witness=lambda r: {"removed": r, "cleared_context": p["cleared_context"]})]
    selected, admissible = int(p["selected"]), list(p["admissible"])
    if p.get("empty_value") is not None:
        total, target = sum(psi.values()), p["baseline_value"] - p["empty_value"]
        out.append(_clause("G1", "efficiency: Σψ_i = v̂(M) − v̂(∅)",
                           [total] if abs(total - target) > 1e-6 else None,
                           witness=lambda t: {"sum_contribution": t, "v(M)-v(empty)": target}))
    else:
        out.append(Clause("G1", "efficiency: Σψ_i = v̂(M) − v̂(∅)", True, note="v̂(∅) not recorded; skipped"))
    out.append(_clause("G3", "the chain is exactly the harmful set H (Eq. 16–17)",
                       sorted(set(chain) ^ set(p["harmful"])),
                       witness=lambda i: {"memory": i, "in_chain": i in chain, "in_H": i in p["harmful"]}))
    if p.get("harm_tolerance") is not None:
        tol = p["harm_tolerance"]
        want = {i for i, v in psi.items() if v < -tol}
        diff = sorted(want ^ set(p["harmful"]))
        out.append(_clause("G3", "harmful set H = {ψ_i < −τ} (Eq. 14)", diff,
                           witness=lambda i: {"memory": i, "contribution": psi.get(i), "tau": tol,
                                              "in_plan_H": i in p["harmful"]}))
        order_bad = [(a, b) for a, b in zip(chain, chain[1:]) if psi[a] > psi[b] + EPS]
        out.append(_clause("G3", "chain ordered by ψ ascending (Eq. 16)", order_bad,
                           witness=lambda ab: {"before": ab[0], "after": ab[1],
                                               "contributions": [psi[ab[0]], psi[ab[1]]]}))
    out.append(_clause("G3", "gains: g(0) = 0 and one entry per chain prefix (Eq. 18; null: not read, "
                       "search: budgeted)",
                       None if gains and gains[0] is not None and abs(gains[0]) <= EPS
                       and len(gains) == len(chain) + 1 else [len(gains)],
                       witness=lambda n: {"gains": gains, "chain_length": len(chain)}))
    out.append(_clause("G3", "0 ∈ J and ĵ ∈ J (Eq. 19)",
                       None if 0 in admissible and selected in admissible else [selected],
                       witness=lambda j: {"selected": j, "admissible": admissible}))
    bad_adm = [j for j in admissible if j > 0 and not (j < len(gains) and gains[j] is not None and gains[j] > EPS)]
    out.append(_clause("G3", "every admissible j > 0 has a read, positive gain (Eq. 19)", bad_adm,
                       witness=lambda j: {"j": j, "gain": gains[j] if j < len(gains) else None}))
    if 0 <= selected < len(gains) and admissible and not bad_adm:
        best = max(gains[j] for j in admissible if j < len(gains))
        bad_sel = [selected] if abs(gains[selected] - best) > EPS or any(
            j < selected and abs(gains[j] - best) <= EPS for j in admissible) else None
        out.append(_clause("G3", "ĵ = min argmax_{j∈J} ĝ(j): minimum cardinality (Eq. 20)", bad_sel,
                           witness=lambda j: {"selected": j, "gain": gains[j], "max_gain": best,
                                              "admissible": admissible}))
    if 0 <= selected < len(gains) and gains[selected] is not None:
        realised = p["cleared_value"] - p["baseline_value"]
        out.append(_clause("G3", "ĝ(ĵ) = v̂(M̃) − v̂(M): the reported gain is the verified one (Eq. 18)",
                           [gains[selected]] if abs(gains[selected] - realised) > 1e-6 else None,
                           witness=lambda g: {"gain": g, "cleared_minus_baseline": realised}))
    out.append(_clause("G3", "non-degradation v̂(M̃) ≥ v̂(M) (Eq. 21)",
                       [p["cleared_value"]] if p["cleared_value"] < p["baseline_value"] - EPS else None,
                       witness=lambda v: {"cleared_value": v, "baseline_value": p["baseline_value"]}))
    out.append(_clause("G3", "ĵ > 0 ⇒ ν(M̃) = 1 (Eq. 22)",
                       [selected] if selected > 0 and not p.get("recovered", False) else None,
                       witness=lambda j: {"selected": j, "recovered": p.get("recovered")}))
    removed = chain[:selected]
    cleared = [m for m in context if m not in set(removed)]
    bad_ctx = [] if list(p["removed"]) == removed and list(p["cleared_context"]) == cleared else [p["removed"]]
    out.append(_clause("G3", "M̃ = M ∖ C_ĵ: removed = chain[:ĵ], cleared context keeps the rest in order", bad_ctx,
                       witness=lambda r: {"removed": r, "expected_removed": removed,
                                          "cleared_context": p["cleared_context"], "expected": cleared}))
    return out


# --------------------------------------------------------------------------- TransitionPlan


def _profit(c: Mapping[str, Any], tradeoff: Fraction) -> Fraction:
    return Fraction(repr(float(c["value"]))) - tradeoff * Fraction(repr(float(c["cost"])))


def check_transition_plan(p: Mapping[str, Any]) -> list[Clause]:
    """Clauses of G4 and G5 on a TransitionPlan (MemoRepair Eq. 1–4, §2.2, Alg. 1)."""
    out: list[Clause] = []
    cascade, roots = set(p["cascade"]), set(p["event"]["roots"])
    cands = {c["id"]: c for c in p["candidates"]}
    selection = set(p["selection"])
    tradeoff = Fraction(repr(float(p["tradeoff"])))
    selector = p["selector"]
    if selector == "no_action":
        out.append(_clause("G4", "no_action selects, executes and republishes nothing",
                           sorted(selection | set(p.get("republished", [])) | {s["id"] for s in p.get("executed", [])}),
                           witness=lambda i: {"artifact": i}))
    else:
        out.append(_clause("G5", "barrier withdraws all of C(F) (§2.2, Alg. 1 line 2)",
                           sorted(cascade - set(p["barrier"])), witness=lambda i: {"not_withdrawn": i}))
    out.append(_clause("G4", "selection ⊆ D⁺(F) (candidates only)", sorted(selection - set(cands)),
                       witness=lambda i: {"selected_non_candidate": i}))
    out.append(_clause("G4", "x_i ≤ v_i: no non-executable candidate selected (Eq. 2)",
                       sorted(i for i in selection if i in cands and not cands[i]["executable"]),
                       witness=lambda i: {"candidate": i, "reason": cands[i].get("reason", "")}))
    required = {i: [j for j in c["prerequisites"] if j in cands] for i, c in cands.items()}
    outside = [(i, j) for i, c in sorted(cands.items()) for j in c["prerequisites"]
               if j not in cands and c["executable"]]
    out.append(_clause("G4", "a prerequisite outside D⁺(F) makes a candidate non-executable (Alg. 1 line 5)", outside,
                       witness=lambda ij: {"candidate": ij[0], "prerequisite_not_a_candidate": ij[1]}))
    missing = [(i, j) for i in sorted(selection) for j in required.get(i, []) if j not in selection]
    out.append(_clause("G4", "x_i ≤ x_j for j ∈ P̄_i: predecessor closure (Eq. 3)", missing,
                       witness=lambda ij: {"selected": ij[0], "missing_prerequisite": ij[1]}))
    objective = sum((_profit(cands[i], tradeoff) for i in selection if i in cands), Fraction(0))
    reported = bounded_fraction(p["objective_exact"]) if "objective_exact" in p else Fraction(repr(float(p["objective"])))
    out.append(_clause("G4", "reported objective = Repair(x) − λ·Cost(x) (Eq. 1)",
                       [reported] if abs(float(objective - reported)) > 1e-9 else None,
                       witness=lambda r: {"reported": str(r), "recomputed": str(objective)}))
    if selector == "mincut" and p.get("budget") is None:
        out.append(_optimality(cands, required, selection, tradeoff, objective))
    else:
        why = f"selector {selector}" if selector != "mincut" else f"budget β = {p.get('budget')} (precedence-constrained knapsack)"
        out.append(Clause("G4", "optimal for Repair − λ·Cost (Thm 1)", True, note=f"not claimed by this plan: {why}"))
    out += _execution(p, cands, required, selection, roots, cascade)
    return out


def _optimality(cands: Mapping[str, Mapping], required: Mapping[str, list[str]], selection: set[str],
                tradeoff: Fraction, objective: Fraction) -> Clause:
    name = "optimal for Repair − λ·Cost over closed executable selections (Thm 1)"
    ids = sorted(cands)
    profits = {i: _profit(cands[i], tradeoff) for i in ids}
    if len(ids) <= Z3_LIMIT:
        x = {i: z3.Bool(f"x[{i}]") for i in ids}
        s = z3.Solver()
        s.set("timeout", 60_000)
        s.add([z3.Not(x[i]) for i in ids if not cands[i]["executable"]])
        s.add([z3.Implies(x[i], x[j]) for i in ids for j in required[i]])
        q = lambda f: z3.Q(f.numerator, f.denominator)  # noqa: E731
        s.add(z3.Sum([z3.If(x[i], q(profits[i]), 0) for i in ids] or [z3.RealVal(0)]) > q(objective))
        r = s.check()
        if r == z3.unsat:
            return Clause("G4", name, True, note=f"Z3: no closed executable selection beats it ({len(ids)} candidates)")
        if r == z3.sat:
            m = s.model()
            better = sorted(i for i in ids if z3.is_true(m.eval(x[i], model_completion=True)))
            return Clause("G4", name, False, {"better_selection": better, "objective": str(objective)})
        # timeout: fall through to the flow certificate
    ok, note = _flow_certificate(cands, required, selection, profits)
    return Clause("G4", name, ok, {} if ok else {"certificate": note}, note)


def _flow_certificate(cands: Mapping[str, Mapping], required: Mapping[str, list[str]], selection: set[str],
                      profits: Mapping[str, Fraction]) -> tuple[bool, str]:
    """Max-flow value = capacity of the cut induced by the selection (strong duality)."""
    import networkx as nx

    scale = math.lcm(*[f.denominator for f in profits.values()] or [1])
    g = nx.DiGraph()
    g.add_nodes_from(["s", "t"])
    inf = sum(abs(int(p * scale)) for p in profits.values()) + 1
    for i, prof in profits.items():
        w = int(prof * scale)
        if w > 0:
            g.add_edge("s", i, capacity=w)
        if not cands[i]["executable"]:
            g.add_edge(i, "t", capacity=inf)
        elif w < 0:
            g.add_edge(i, "t", capacity=-w)
        for j in required[i]:
            g.add_edge(i, j, capacity=inf)
    value, flow = nx.maximum_flow(g, "s", "t", flow_func=nx.algorithms.flow.shortest_augmenting_path)
    for u, v, d in g.edges(data=True):  # the flow is feasible: capacities and conservation
        if not 0 <= flow[u][v] <= d["capacity"]:
            return False, f"flow violates capacity on {u}->{v}"
    for n in g.nodes:
        if n in ("s", "t"):
            continue
        if sum(flow[u][n] for u in g.predecessors(n)) != sum(flow[n][v] for v in g.successors(n)):
            return False, f"flow not conserved at {n}"
    side = selection | {"s"}
    cut = sum(d["capacity"] for u, v, d in g.edges(data=True) if u in side and v not in side)
    if cut != value:
        return False, f"cut capacity {cut} ≠ max-flow value {value} (scaled by {scale})"
    return True, f"max-flow value = cut capacity = {value}/{scale}"


def _execution(p: Mapping[str, Any], cands: Mapping[str, Mapping], required: Mapping[str, list[str]],
               selection: set[str], roots: set[str], cascade: set[str]) -> list[Clause]:
    out: list[Clause] = []
    order = list(p.get("order", []))
    pos = {i: k for k, i in enumerate(order)}
    bad_order = [(j, i) for i in order for j in required.get(i, []) if j in pos and pos[j] > pos[i]]
    out.append(_clause("G4", "execution in topological order of E^req[S] (Alg. 1 line 7)",
                       bad_order + [(None, i) for i in order if i not in selection],
                       witness=lambda ji: {"prerequisite": ji[0], "executed_before_it": ji[1]}))
    if not p.get("executed") and not p.get("republished"):
        return out  # a dry-run plan: nothing executed yet
    status = {s["id"]: s for s in p.get("executed", [])}
    republished = set(p.get("republished", []))
    unvalidated = [i for i in sorted(republished) if i not in status or status[i]["status"] not in
                   ("validated", "republished") or not status[i].get("validation")
                   or any(not r.get("passed", False) for r in status[i]["validation"])]
    out.append(_clause("G5", "republished ⇒ a validated successor with passing oracle reports (§2.2)", unvalidated,
                       witness=lambda i: {"artifact": i, "step": status.get(i)}))
    orphan = [(i, j) for i in sorted(republished) for j in required.get(i, []) if j not in republished]
    out.append(_clause("G5", "republished ⇒ prerequisites republished (Alg. 1 line 8)", orphan,
                       witness=lambda ij: {"artifact": ij[0], "prerequisite_not_republished": ij[1]}))
    failed = {i for i, s in status.items() if s["status"] in ("failed", "blocked")}
    out.append(_clause("G5", "failures stay withdrawn", sorted(failed & republished),
                       witness=lambda i: {"artifact": i, "status": status[i]["status"]}))
    out.append(_clause("G5", "roots are never republished", sorted(roots & republished),
                       witness=lambda i: {"root": i}))
    if p["selector"] != "no_action":
        withdrawn = set(p.get("withdrawn", []))
        unaccounted = sorted(cascade - withdrawn - republished)
        out.append(_clause("G5", "every artifact of C(F) is withdrawn or a republished successor", unaccounted,
                           witness=lambda i: {"artifact": i}))
    return out
