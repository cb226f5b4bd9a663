"""Property-based regression of a team's policy (``memsteward test --properties``).

Hypothesis generates provenance stores and events *within the policy's declarations*: artifact
kinds and skill architectures the policy declares, metadata values inside each field's declared
range (with the thresholds the rules mention and their neighbours as preferred points), influence
DAGs over records, and delete / correct / migrate events. Each scenario is planned and executed by
the real engine on a private in-memory store, and checked:

* **G4** (MemoRepair Eq. 1–4, Thm 1) and **G5** (§2.2, Alg. 1) — every clause of the plan
  certificate of :mod:`memsteward.specs.certificates` (``memsteward verify --plan``);
* **G5 on the store** — after publication, no member of C(F) is servable unless it is a
  republished successor or a root's fresh version;
* the policy's **invariants** (declared in its test file, see :class:`~memsteward.testing.spec.Invariant`):
  for every descendant i ∈ D(F) whose cell matches ``for``, ``mode_in`` / ``mode_not_in`` /
  ``republished`` / ``servable_after`` hold.

A failure is shrunk by Hypothesis; the minimal store, event and violated clauses are returned
(and written out by the CLI with ``--save-failures``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hyp_seed
from hypothesis import strategies as st

from ..policy.domain import matches, meta_points
from ..policy.model import EVENTS, Policy
from ..repair.artifacts import parse_store_document
from ..repair.events import parse_event
from ..repair.execute import run_event
from ..specs.certificates import check_transition_plan
from .load import fresh_store
from .run import observation_of
from .spec import Invariant

MAX_EXAMPLES = 10_000
MAX_ROOTS = 4
MAX_DERIVED = 6
LABELS = ("alpha", "beta")
NEURAL = {"model": "bow-softmax", "dim": 4, "labels": list(LABELS), "weights": [[0.0, 0.0]] * 5}


@dataclass(frozen=True)
class Violation:
    """One violated clause: which guarantee or invariant, and a witness."""

    clause: str
    detail: str
    witness: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"clause": self.clause, "detail": self.detail, "witness": self.witness}


@dataclass
class PropertyResult:
    examples: int
    store: dict[str, Any] | None = None
    event: dict[str, Any] | None = None
    violations: list[Violation] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.violations


# --------------------------------------------------------------------------- generation


def _meta_values(policy: Policy, kind: str) -> st.SearchStrategy[dict[str, float]]:
    """Values inside each declared field's range; rule thresholds (and neighbours) preferred."""
    spec = policy.kinds[kind]
    points = meta_points(policy, kind)
    fields: dict[str, st.SearchStrategy[float]] = {}
    for name, mf in spec.meta.items():
        lo = mf.min if mf.min is not None else min(points[name], default=0.0) - 1000.0
        hi = mf.max if mf.max is not None else max(points[name], default=0.0) + 1000.0
        pts = st.sampled_from(points[name] or [mf.default])
        # three draws in four from the rule thresholds and their neighbours: each region between
        # thresholds is hit often; the rest anywhere in the declared range
        fields[name] = st.one_of(pts, pts, pts, st.floats(lo, hi, allow_nan=False, allow_infinity=False))
    return st.fixed_dictionaries(fields)


def _content(role: str | None, arch: str | None, k: int) -> Any:
    if arch == "neural":
        return dict(NEURAL)
    if arch == "chain":
        return {"goal": f"procedure {k}", "calls": []}
    if role == "root":
        return {"text": f"fact number {k}", "label": LABELS[k % 2]}
    return f"derived text number {k}."


def scenarios(policy: Policy, max_derived: int = MAX_DERIVED) -> st.SearchStrategy[tuple[dict, dict]]:
    """(store document, event document) within the policy's declared kinds, archs and ranges."""
    roots = policy.kinds_with_role("root")
    root_kind = "record" if "record" in roots else (roots or tuple(policy.kinds))[0]
    kinds = sorted(policy.kinds, key=lambda x: (x == root_kind, x))  # non-root kinds shrink first
    role = {k: policy.role(k) for k in policy.kinds}
    meta = {k: _meta_values(policy, k) for k in policy.kinds}  # built once, drawn many times
    archs = {k: st.sampled_from(policy.architectures(k)) for k in policy.kinds if role[k] == "skill"}

    @st.composite
    def draw_scenario(draw: st.DrawFn) -> tuple[dict, dict]:
        n_roots = draw(st.integers(1, MAX_ROOTS))
        artifacts: list[dict[str, Any]] = []
        for k in range(n_roots):
            arch = policy.architectures(root_kind)[0]
            a: dict[str, Any] = {"id": f"r{k}", "kind": root_kind, "content": _content(role[root_kind], arch, k),
                                 "meta": draw(meta[root_kind])}
            if arch is not None:
                a["arch"] = arch
            artifacts.append(a)
        edges: list[dict[str, str]] = []
        for k in range(draw(st.integers(1, max_derived))):
            kind = draw(st.sampled_from(kinds))
            arch = draw(archs[kind]) if kind in archs else None
            ident = f"d{k}"
            a = {"id": ident, "kind": kind, "content": _content(role[kind], arch, k), "meta": draw(meta[kind])}
            if arch is not None:
                a["arch"] = arch
            if kind == "cache" or policy.kinds[kind].replayable:
                a["meta"]["transform"] = "texts"
            earlier = [x["id"] for x in artifacts]
            artifacts.append(a)
            parents = draw(st.lists(st.sampled_from(earlier), min_size=1, max_size=4, unique=True))
            edges += [{"src": p, "dst": ident, "type": "influence"} for p in sorted(parents)]
        etype = draw(st.sampled_from(EVENTS))
        root_ids = [a["id"] for a in artifacts[:n_roots]]
        roots = sorted(draw(st.lists(st.sampled_from(root_ids), min_size=1, max_size=n_roots, unique=True)))
        return {"artifacts": artifacts, "edges": edges}, _event(etype, roots, artifacts)

    return draw_scenario()


def _event(etype: str, roots: list[str], artifacts: list[dict[str, Any]]) -> dict[str, Any]:
    event: dict[str, Any] = {"type": etype, "roots": roots}
    by_id = {a["id"]: a for a in artifacts}
    if etype == "correct":
        event["replacements"] = [
            {k: v for k, v in (("id", r), ("kind", by_id[r]["kind"]), ("arch", by_id[r].get("arch")),
                               ("content", {"text": f"corrected {r}", "label": LABELS[0]}), ("meta", {}))
             if v is not None} for r in roots]
    elif etype == "migrate":
        iface = {"tools": {}, "renames": {}, "arg_renames": {}}
        event["interface"] = iface if len(roots) == 1 else {r: iface for r in roots}
    return event


# --------------------------------------------------------------------------- checking


def check_scenario(policy: Policy, invariants: list[Invariant], store_doc: dict, event_doc: dict) -> list[Violation]:
    """Run one scenario through the real engine and return every violated clause."""
    snap = parse_store_document(store_doc, "<generated store>")
    event = parse_event(event_doc, snap, "<generated event>")
    store = fresh_store(snap, "<generated store>")
    try:
        plan = run_event(store, policy, event, "mincut", "networkx")
        servable = frozenset(a.id for a in store.serve())
    finally:
        store.close()
    out = [Violation(f"{c.guarantee}: {c.name}", c.note, c.witness)
           for c in check_transition_plan(plan.to_json()) if not c.ok]
    fresh_roots = {r for r, act in plan.roots.items() if act in ("replaced", "interface-updated")}
    leaked = sorted((set(plan.cascade) & servable) - set(plan.republished) - fresh_roots)
    if leaked:
        out.append(Violation("G5: nothing of C(F) servable unless republished (store)",
                             f"servable after publication: {', '.join(leaked)}", {"servable": leaked}))
    obs = observation_of(policy, snap, event, plan, servable)
    for inv in invariants:
        for ident, cell in sorted(obs.cells.items()):
            if matches(inv.for_, cell):
                out += _clauses(inv, ident, plan.modes.get(ident, "remove"), ident in plan.republished,
                                ident in servable, cell.describe())
    return out


def _clauses(inv: Invariant, ident: str, mode: str, republished: bool, servable: bool, cell: str) -> list[Violation]:
    found: list[Violation] = []
    name = f"invariant {inv.name}"
    wit = {"artifact": ident, "mode": mode, "cell": cell}
    if inv.mode_in is not None and mode not in inv.mode_in:
        found.append(Violation(name, f"{ident} gets mode {mode}, not one of {inv.mode_in}", wit))
    if inv.mode_not_in is not None and mode in inv.mode_not_in:
        found.append(Violation(name, f"{ident} gets mode {mode}, which the invariant forbids", wit))
    if inv.republished is not None and republished != inv.republished:
        found.append(Violation(name, f"{ident} is {'' if republished else 'not '}republished", wit))
    if inv.servable_after is not None and servable != inv.servable_after:
        found.append(Violation(name, f"{ident} is {'' if servable else 'not '}servable after the event", wit))
    return found


class _Failed(AssertionError):
    pass


def run_properties(policy: Policy, invariants: list[Invariant], examples: int = 100, seed: int = 0) -> PropertyResult:
    """Generate up to ``examples`` scenarios; on a failure, shrink it and return the minimal one."""
    if not 1 <= examples <= MAX_EXAMPLES:
        raise ValueError(f"examples must lie in 1 … {MAX_EXAMPLES}")
    count = [0]
    last: list[tuple[dict, dict, list[Violation]]] = []

    @hyp_seed(seed)
    @settings(max_examples=examples, deadline=None, database=None, report_multiple_bugs=False,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink], print_blob=False)
    @given(scenarios(policy))
    def prop(sc: tuple[dict, dict]) -> None:
        count[0] += 1
        store_doc, event_doc = sc
        found = check_scenario(policy, invariants, store_doc, event_doc)
        if found:
            last[:] = [(store_doc, event_doc, found)]
            raise _Failed(found[0].detail)

    try:
        prop()
    except _Failed:
        store_doc, event_doc, found = last[0]
        return PropertyResult(count[0], store_doc, event_doc, found)
    return PropertyResult(count[0])


def save_failure(result: PropertyResult, folder: str | Path, policy_path: str) -> list[Path]:
    """Write store.json, event.json, violation.json and a ready-to-edit declared case."""
    import yaml

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    files = {"store.json": result.store, "event.json": result.event,
             "violation.json": [v.as_dict() for v in result.violations]}
    written = []
    for name, doc in files.items():
        (out / name).write_text(json.dumps(doc, indent=2) + "\n")
        written.append(out / name)
    case = {"version": 1, "policy": str(Path(policy_path).resolve()),
            "cases": [{"name": "property-failure", "description": "; ".join(
                f"{v.clause}: {v.detail}" for v in result.violations)[:500],
                "store": "store.json", "event": "event.json", "expect": {}}]}
    text = ("# Found by memsteward test --properties: fill in `expect` with the behaviour you want,\n"
            "# then move this case into the policy's test file.\n" + yaml.safe_dump(case, sort_keys=False))
    (out / "failure_test.yaml").write_text(text)
    written.append(out / "failure_test.yaml")
    return written
