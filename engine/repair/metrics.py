"""The paper's metrics (MemoRepair §3, "Metrics"), as pure functions.

* Leak% — share of the affected cascade C(F) that remains servable after repair in its
  invalidated (pre-event) version;
* Stale-use% — share of post-event action traces that use invalidated information;
* Rep.% — validated republications over non-remove candidates, micro-averaged over events:
  100 Σ_e |R_ρ,e| / Σ_e |D⁺_e(F)|;
* Cost — repair-operator cost of the executed plan S_ρ normalised to *Repair all*, i.e.
  Σ_{i∈S_ρ} c_i / Σ_{i∈E_0} c_i (so *Repair all* is 1.00 when E_0 ≠ ∅, else 0, as in the paper);
  an operator blocked by a failed prerequisite is still charged (the plan committed to it);
* ΔTask — 100 (E_t[s_t] − 1) with s_t = 1 − (|U_t| + ½|L_t|) / |A_t| (s_t = 1 when A_t = ∅).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence


def leak_pct(cascade: Collection[str], base_versions: Mapping[str, int],
             served: Mapping[str, int]) -> float:
    """Leak%: 100 · |{x ∈ C(F) : x is served at its pre-event version}| / |C(F)| (0 for C(F) = ∅).

    ``served`` maps each servable artifact to the version retrieval serves.
    """
    if not cascade:
        return 0.0
    leaked = sum(1 for x in cascade if x in served and served[x] == base_versions.get(x))
    return 100.0 * leaked / len(cascade)


def stale_use_pct(traces: Sequence[Collection[tuple[str, int]]], invalidated: Collection[tuple[str, int]]) -> float:
    """Stale-use%: 100 · share of post-event action traces using an invalidated (id, version)."""
    if not traces:
        return 0.0
    bad = set(invalidated)
    return 100.0 * sum(1 for t in traces if any(u in bad for u in t)) / len(traces)


def rep_pct(events: Iterable[tuple[int, int]]) -> float:
    """Rep.%: micro-average 100 Σ|R_ρ,e| / Σ|D⁺_e(F)| over (|R|, |D⁺|) pairs (0 when Σ|D⁺| = 0)."""
    pairs = list(events)
    total = sum(d for _, d in pairs)
    return 0.0 if total == 0 else 100.0 * sum(r for r, _ in pairs) / total


def normalized_cost(executed_cost: float, repair_all_cost: float) -> float:
    """Cost: executed operator cost / the cost *Repair all* executes (0 when E_0 is empty)."""
    if repair_all_cost <= 0:
        return 0.0
    return executed_cost / repair_all_cost


def task_score(affected: Collection[str], unrepaired: Collection[str], leaked: Collection[str]) -> float:
    """s_t = 1 − (|U_t| + ½|L_t|) / |A_t|, with U_t, L_t ⊆ A_t (1 when A_t = ∅)."""
    a = set(affected)
    if not a:
        return 1.0
    return 1.0 - (len(a & set(unrepaired)) + 0.5 * len(a & set(leaked))) / len(a)


def delta_task(scores: Sequence[float]) -> float:
    """ΔTask = 100 (E_t[s_t] − 1), in percentage points (0 for no tasks)."""
    if not scores:
        return 0.0
    return 100.0 * (sum(scores) / len(scores) - 1.0)


def plan_metrics(plan, served: Mapping[str, int], tasks: Sequence[Collection[str]] = ()) -> dict[str, float]:
    """Leak%, Stale-use%, Rep.%, Cost and ΔTask of one executed plan, from values only.

    ``served`` is the post-event retrieval view (id → served version); ``tasks`` are the sets of
    artifacts each diagnostic task uses (its action trace reads their served versions).
    """
    from .closure import closure_feasible

    cascade = set(plan.cascade)
    base = plan.base_versions
    leaked = {x for x in cascade if x in served and served[x] == base.get(x)}
    cost_ran = sum(c.cost for c in plan.candidates if c.id in plan.selection.selected)
    cost_all = sum(c.cost for c in plan.candidates if c.id in closure_feasible(plan.candidates))
    repaired = set(plan.republished) | {r for r, a in plan.roots.items() if a in ("replaced", "interface-updated")}
    traces = [{(x, served[x]) for x in t if x in served} for t in tasks]
    scores = [task_score(set(t) & cascade, (set(t) & cascade) - repaired, leaked) for t in tasks]
    return {
        "leak": leak_pct(cascade, base, served),
        "stale_use": stale_use_pct(traces, {(x, base[x]) for x in leaked}),
        "rep": rep_pct([(len(plan.republished), len(plan.candidates))]),
        "cost": normalized_cost(cost_ran, cost_all),
        "delta_task": delta_task(scores),
    }
