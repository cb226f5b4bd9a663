"""Code-level checks: the engine's own functions against the Z3 models, on every input within a bound.

The proofs in :mod:`memsteward.specs.proofs` are about *models* of the rules. Here each guarantee is
tied to the functions the engine runs, by bounded exhaustive differential checking: every input
of a small domain is run through the real code, and the result must equal the model's (the Z3
term of the proof evaluated on that input, or an independent brute force) and satisfy the claim.

| G  | engine code checked                                  | model / reference                          |
|----|------------------------------------------------------|--------------------------------------------|
| G1 | clearance.attribution.exact_contribution,            | G1's Shapley term per player (Z3, exact    |
|    | sampled_contribution                                 | rationals); Σψ = v(M) − v(∅)               |
| G2 | attribution.loo, exact_contribution                  | Eq. 31 game; d_i = 0, ψ_i = −Δ/r           |
| G3 | clearance.selection.clearance (Ĥ, chain, ĝ, J, ĵ)    | G3's symbolic scan ``select`` (Z3)         |
| G4 | repair.closure.max_weight_closure (both backends)    | brute force over all 2^n selections        |
| G5 | repair.execute.run_event / recover on a real store   | the G5 invariant on the store after events |
| G5 | execute.recover / Leases.take_event, two recovers    | an uninterrupted run's final store (one    |
|    | racing on a SQLite file (``G5-lease``)               | publication), and the G5 invariant         |
| G6 | repair.execute.run_event (delete) on a real store    | no stored version holds the root's text    |
| G6 | run_event (delete, privacy correction) on SQLite     | no version, servable artifact or byte of   |
|    | files (``G6-files``)                                 | the database file or WAL holds it          |

Each check takes the implementation as a parameter, and each has a broken variant — a plausible
bug planted in a wrapper of the real code — that the same check must refute with a concrete
counterexample input (``memsteward verify`` shows it, so every run shows the check can fail).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import z3

from .proofs import g3_non_degradation
from .proofs.g1_efficiency import shapley_weight


@dataclass(frozen=True)
class CodeResult:
    """Outcome of one code-level check: ``proved`` when every input within ``bound`` agreed."""

    guarantee: str
    code: str
    bound: str
    proved: bool
    inputs: int
    seconds: float
    counterexample: dict[str, Any] | None = None
    sensitivity: dict[str, Any] = field(default_factory=dict)  # the broken variant's refutation

    def as_dict(self) -> dict[str, Any]:
        return {"guarantee": self.guarantee, "code": self.code, "bound": self.bound,
                "result": "proved" if self.proved else "refuted", "inputs": self.inputs,
                "seconds": round(self.seconds, 3), "counterexample": self.counterexample,
                "broken_variant": self.sensitivity}


class Mismatch(Exception):
    def __init__(self, witness: dict[str, Any]) -> None:
        super().__init__(str(witness))
        self.witness = witness


def _close(a: float, b: float | Fraction) -> bool:
    return abs(float(a) - float(b)) <= 1e-9


# --------------------------------------------------------------------------- games on the engine


def _game(values: dict[frozenset, float], ids: tuple[str, ...]):
    from memsteward.clearance.evaluators.table import TableEvaluator
    from memsteward.clearance.game import Game, Memory, Task

    return Game(Task("q", "a", tuple(Memory(i) for i in ids)), TableEvaluator(values), trials=1)


def _subsets(ids: tuple[str, ...]) -> list[frozenset]:
    return [frozenset(c) for r in range(len(ids) + 1) for c in itertools.combinations(ids, r)]


def _name(s: frozenset) -> str:
    return "{" + ",".join(sorted(s)) + "}"


# --------------------------------------------------------------------------- G1


def _model_shapley(k: int) -> tuple[list[z3.ArithRef], list[z3.ArithRef]]:
    """ψ_i as G1's Z3 term over symbolic coalition values v[mask] (Eq. 3)."""
    v = [z3.Real(f"v[{mask:0{k}b}]") for mask in range(1 << k)]
    psi = []
    for i in range(k):
        bit, term = 1 << i, z3.RealVal(0)
        for mask in range(1 << k):
            if not mask & bit:
                w = shapley_weight(bin(mask).count("1"), k)
                term = term + z3.Q(w.numerator, w.denominator) * (v[mask | bit] - v[mask])
        psi.append(term)
    return v, psi


def _eval(term: z3.ArithRef, subst: list[tuple[z3.ArithRef, z3.ArithRef]]) -> Fraction:
    r = z3.simplify(z3.substitute(term, *subst))
    return Fraction(r.numerator_as_long(), r.denominator_as_long())


def check_g1(exact: Callable | None = None, sampled: Callable | None = None, max_players: int = 3) -> int:
    """Every game with v(S) ∈ {0, 1} on K ≤ max_players: the code's exact ψ equals the model's term
    and sums to v(M) − v(∅); the sampled estimate over every single permutation and every pair of
    permutations (K ≤ 3) sums to v(M) − v(∅) and, over all K! permutations, equals exact ψ."""
    from memsteward.clearance import attribution

    exact = exact or attribution.exact_contribution
    sampled = sampled or attribution.sampled_contribution
    n = 0
    for k in range(1, max_players + 1):
        ids = tuple(f"m{i}" for i in range(k))
        subsets = _subsets(ids)
        mask = {s: sum(1 << i for i, m in enumerate(ids) if m in s) for s in subsets}
        v, psi_terms = _model_shapley(k)
        perms = list(itertools.permutations(ids))
        for bits in itertools.product((0, 1), repeat=len(subsets)):
            values = {s: float(b) for s, b in zip(subsets, bits)}
            table = {_name(s): b for s, b in zip(subsets, bits)}
            game = _game(values, ids)
            psi = exact(game)
            subst = [(v[mask[s]], z3.RealVal(b)) for s, b in zip(subsets, bits)]
            total = values[frozenset(ids)] - values[frozenset()]
            for i, m in enumerate(ids):
                want = _eval(psi_terms[i], subst)
                if not _close(psi[m], want):
                    raise Mismatch({"game": table, "player": m, "code ψ": psi[m], "model ψ": str(want)})
            if not _close(sum(psi.values()), total):
                raise Mismatch({"game": table, "Σψ": sum(psi.values()), "v(M) − v(∅)": total})
            runs = [[p] for p in perms] + ([[p, q] for p in perms for q in perms] if k <= 3 else [])
            for run_ in runs:
                est = sampled(game, run_)
                if not _close(sum(est.values()), total):
                    raise Mismatch({"game": table, "permutations": run_, "Σψ̂": sum(est.values()),
                                    "v(M) − v(∅)": total})
            every = sampled(game, perms)
            for m in ids:
                if not _close(every[m], psi[m]):
                    raise Mismatch({"game": table, "player": m, "ψ̂ over all K! orders": every[m], "ψ": psi[m]})
            n += 1
    return n


def _banzhaf(game) -> dict[str, float]:
    """Broken variant of exact ψ: Banzhaf weights 1/2^(K−1) instead of Shapley's (a plausible slip)."""
    players = game.players
    subsets = _subsets(tuple(players))
    v = dict(zip(subsets, game.values(subsets)))
    k = len(players)
    return {i: sum(v[s | {i}] - v[s] for s in subsets if i not in s) / 2 ** (k - 1) for i in players}


# --------------------------------------------------------------------------- G2


def check_g2(loo: Callable | None = None, exact: Callable | None = None, max_players: int = 5) -> int:
    """Eq. 31 games v(S) = u(S ∖ R) − Δ·[S ∩ R ≠ ∅] for every R with 2 ≤ r ≤ K ≤ max_players, every
    u: 2^(M∖R) → {0, 1} and Δ ∈ {1, 2}: the code's d_i = 0 and ψ_i = −Δ/r for i ∈ R."""
    from memsteward.clearance import attribution

    loo = loo or attribution.loo
    exact = exact or attribution.exact_contribution
    n = 0
    for k in range(2, max_players + 1):
        ids = tuple(f"m{i}" for i in range(k))
        for r in range(2, k + 1):
            group, rest = frozenset(ids[:r]), tuple(ids[r:])
            rest_subsets = _subsets(rest)
            for bits in itertools.product((0, 1), repeat=len(rest_subsets)):
                u = dict(zip(rest_subsets, bits))
                for delta in (1, 2):
                    values = {s: float(u[s - group] - (delta if s & group else 0)) for s in _subsets(ids)}
                    game = _game(values, ids)
                    d, psi = loo(game), exact(game)
                    for i in sorted(group):
                        if not (_close(d[i], 0) and _close(psi[i], Fraction(-delta, r))):
                            raise Mismatch({"K": k, "R": sorted(group), "Δ": delta,
                                            "u": {_name(s): b for s, b in u.items()}, "member": i,
                                            "d_i": d[i], "ψ_i": psi[i], "want ψ_i": f"-{delta}/{r}"})
                    n += 1
    return n


def _loo_against_empty(game) -> dict[str, float]:
    """Broken variant of LOO: d_i = v({i}) − v(∅) (the effect of adding i alone, not removing it)."""
    return {i: game.value([i]) - game.value([]) for i in game.players}


# --------------------------------------------------------------------------- G3


def check_g3(clear: Callable | None = None, max_chain: int = 4) -> int:
    """Chains of h ≤ max_chain harmful memories (ψ_i = −(i+1), τ = ½), every v̂(M) and v̂(M ∖ C_j) on
    the grid {0, ¼, ½, ¾, 1} (h ≤ 3) or {0, ½, 1} (h = 4), recovery ν = [v̂ = 1]: the code's ĵ equals
    G3's symbolic scan evaluated on the same gains, ĝ(ĵ) ≥ 0, ĵ > 0 ⇒ ν, and M̃ = M ∖ C_ĵ."""
    from memsteward.clearance.selection import clearance

    clear = clear or clearance
    n = 0
    for h in range(0, max_chain + 1):
        ids = tuple(f"m{i}" for i in range(h + 1))  # m0..m{h-1} harmful, m{h} neutral
        contribution = {m: -(i + 1.0) for i, m in enumerate(ids[:h])} | {ids[h]: 0.0}
        order = sorted(ids[:h], key=lambda m: contribution[m])
        grid = (0.0, 0.25, 0.5, 0.75, 1.0) if h <= 3 else (0.0, 0.5, 1.0)
        for vals in itertools.product(grid, repeat=h + 1):
            values = {frozenset(ids) - frozenset(order[:j]): vals[j] for j in range(h + 1)}
            sel = clear(_game(values, ids), contribution, 0.5)
            gains = [z3.RealVal(Fraction(x) - Fraction(vals[0])) for x in vals]
            recovered = [z3.BoolVal(True)] + [z3.BoolVal(x >= 1.0) for x in vals[1:]]
            j_model = z3.simplify(g3_non_degradation.select(gains, recovered)[0]).as_long()
            witness = {"h": h, "v̂(M ∖ C_j), j=0..h": list(vals), "code ĵ": sel.selected, "model ĵ": j_model}
            if sel.selected != j_model or tuple(sel.chain) != tuple(order):
                raise Mismatch({**witness, "code chain": list(sel.chain), "want chain": order})
            j = sel.selected
            if vals[j] < vals[0] or (j > 0 and vals[j] < 1.0) or tuple(sel.removed) != tuple(order[:j]):
                raise Mismatch({**witness, "violated": "ĝ(ĵ) ≥ 0, ĵ > 0 ⇒ ν, or M̃ = M ∖ C_ĵ"})
            n += 1
    return n


def _clear_last_tie(game, contribution, harm_tolerance):
    """Broken variant of Eq. 20: among maximal gains, the *largest* admissible j (max, not min)."""
    from memsteward.clearance import selection as sel

    h = sel.harmful(contribution, harm_tolerance)
    ordered = sel.chain(contribution, h, game.players)
    g = sel.gains(game, ordered)
    j_set = sel.admissible(game, ordered, g)
    best = max(g[j] for j in j_set)
    return sel.Selection(h, ordered, tuple(g), tuple(j_set), max(j for j in j_set if g[j] >= best - sel.EPS))


# --------------------------------------------------------------------------- G4


def check_g4(select: Callable | None = None, max_n: int = 3) -> int:
    """Every prerequisite relation on n ≤ max_n candidates (any digraph, cycles included), every
    executability vector and every weight p_i = w_i − λc_i ∈ {−1, 2} at λ = 1: the engine's
    selection is closed, executable-only, and optimal (brute force over all 2^n selections),
    with both min-cut backends."""
    select = select or _engine_select
    n_checked = 0
    for n in range(1, max_n + 1):
        pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
        for edges in itertools.product((False, True), repeat=len(pairs)):
            prereqs = [[j for (a, j), on in zip(pairs, edges) if on and a == i] for i in range(n)]
            for executable in itertools.product((True, False), repeat=n):
                for weights in itertools.product((-1, 2), repeat=n):
                    best = max(sum(weights[i] for i in x) for x in _feasible(n, executable, prereqs))
                    for backend in ("networkx", "ortools"):
                        chosen = select(weights, executable, prereqs, backend)
                        witness = {"n": n, "p": list(weights), "executable": list(executable),
                                   "prerequisites": prereqs, "backend": backend, "selected": sorted(chosen)}
                        if any(not executable[i] for i in chosen) or any(j not in chosen for i in chosen
                                                                          for j in prereqs[i]):
                            raise Mismatch({**witness, "violated": "closure / executability"})
                        if sum(weights[i] for i in chosen) != best:
                            raise Mismatch({**witness, "violated": f"optimality (best {best})"})
                    n_checked += 1
    return n_checked


def _feasible(n: int, executable, prereqs) -> Iterator[set[int]]:
    for bits in itertools.product((False, True), repeat=n):
        x = {i for i in range(n) if bits[i]}
        if all(executable[i] for i in x) and all(j in x for i in x for j in prereqs[i]):
            yield x


def _candidates(weights, executable, prereqs):
    from memsteward.repair.candidates import Candidate

    return [Candidate(str(i), "summary", None, "regen", "regen", tuple(str(j) for j in prereqs[i]),
                      bool(executable[i]), 1.0 + max(p, 0), 1.0 + max(-p, 0)) for i, p in enumerate(weights)]


def _engine_select(weights, executable, prereqs, backend) -> set[int]:
    from memsteward.repair.closure import max_weight_closure

    return {int(i) for i in max_weight_closure(_candidates(weights, executable, prereqs), 1.0, backend).selected}


def _select_ignoring_executability(weights, executable, prereqs, backend) -> set[int]:
    """Broken variant: v_i dropped when the network is built (non-executable candidates selectable)."""
    return _engine_select(weights, [True] * len(weights), prereqs, backend)


# --------------------------------------------------------------------------- G5

_G5_STORE = {"artifacts": [
    {"id": "r0", "kind": "record", "content": {"text": "the user likes tea.", "label": "a"}},
    {"id": "r1", "kind": "record", "content": {"text": "the user lives in paris.", "label": "b"}},
    {"id": "d0", "kind": "summary", "content": "tea."},
    {"id": "d1", "kind": "summary", "content": "tea in paris."},
    {"id": "d2", "kind": "cache", "content": "paris", "meta": {"transform": "texts", "age_days": 0}}],
    "edges": [{"src": "r0", "dst": "d0", "type": "influence"}, {"src": "d0", "dst": "d1", "type": "influence"},
              {"src": "r1", "dst": "d1", "type": "influence"}, {"src": "r1", "dst": "d2", "type": "influence"}]}


class _Crash(BaseException):
    """Thrown out of an oracle: the engine 'dies' mid-event with whatever was committed."""


def _oracles(reject: frozenset[str], crash_after: int | None, ignore_results: bool) -> dict:
    from memsteward.repair.oracles import ORACLES, Report

    calls = [0]

    def wrap(name, fn):
        def oracle(spec, x):
            calls[0] += 1
            if crash_after is not None and calls[0] > crash_after:
                raise _Crash()
            if x.artifact.id in reject and not ignore_results:
                return Report(name, False, "rejected by the check")
            return fn(spec, x)
        return oracle

    return {name: wrap(name, fn) for name, fn in ORACLES.items()}


def _event_doc(etype: str, roots: tuple[str, ...], snap) -> dict:
    doc: dict[str, Any] = {"type": etype, "roots": list(roots)}
    if etype == "correct":
        doc["replacements"] = [{"id": r, "kind": "record", "content": {"text": "corrected.", "label": "a"},
                                "meta": {}} for r in roots]
    if etype == "migrate":
        doc["interface"] = {r: {"tools": {"t": {"params": {}}}} for r in roots}
    return doc


def g5_violations(store, rejected: frozenset[str]) -> str | None:
    """The G5 invariant on a store: every servable member of an event's cascade is a root correctly
    replaced, or a successor the event validated (not rejected) whose prerequisites were too."""
    ev = store.event()
    if ev is None:
        return None
    plan, served = ev["plan"], {a.id for a in store.serve()}
    if ev["status"] != "done":
        leaked = sorted(set(plan["cascade"]) & served)
        return f"{leaked} servable while the event is unfinished" if leaked else None
    steps = {s["id"]: s for s in plan.get("executed", [])}
    ok = {i for i, s in steps.items() if s["status"] in ("validated", "republished")}
    for i in sorted(set(plan["cascade"]) & served):
        if i in ev["event"]["roots"]:
            if ev["event"]["type"] == "delete" or store.get(i).version <= plan["base_versions"][i]:
                return f"root {i} servable at an invalidated or erased version"
            continue
        if i not in ok or i in rejected:
            return f"{i} servable without a validated successor"
        if store.states()[i][1] != steps[i]["version"]:
            return f"{i} served at a version other than its validated successor"
        if any(k == i and j not in ok for j, k in plan["requirements"]):
            return f"{i} servable while a prerequisite failed"
    return None


def check_g5(ignore_validation: bool = False) -> int:
    """The real engine (barrier, staging, validation, publication, recovery on an in-memory SQLite
    store) on a 5-artifact store: every event type × every root set × every set of rejected
    successors × a crash after 0 or 1 validations or none (then ``recover``): G5 holds after it."""
    from importlib import resources

    from memsteward.policy.loader import load_policy
    from memsteward.repair.artifacts import parse_store_document
    from memsteward.repair.events import parse_event
    from memsteward.repair.execute import recover, run_event
    from memsteward.store.opening import open_store

    policy = load_policy(str(resources.files("memsteward") / "data" / "policies" / "default.yaml"))
    n = 0
    derived = ("d0", "d1", "d2")
    for etype in ("delete", "correct", "migrate"):
        for roots in (("r0",), ("r1",), ("r0", "r1")):
            for r in range(len(derived) + 1):
                for reject in itertools.combinations(derived, r):
                    for crash_after in (None, 0, 1):
                        store = open_store()
                        store.import_snapshot(parse_store_document(_G5_STORE, "<g5>"))
                        snap = store.snapshot()
                        rejected = frozenset(reject)
                        try:
                            run_event(store, policy, parse_event(_event_doc(etype, roots, snap), snap),
                                      "mincut", "networkx", oracles=_oracles(rejected, crash_after, ignore_validation))
                        except _Crash:
                            bad = g5_violations(store, rejected)
                            if bad is None:
                                recover(store, oracles=_oracles(rejected, None, ignore_validation))
                        bad = g5_violations(store, rejected)
                        store.close()
                        if bad is not None:
                            raise Mismatch({"event": etype, "roots": list(roots), "rejected": list(reject),
                                            "crash after validations": crash_after, "violation": bad})
                        n += 1
    return n


# --------------------------------------------------------------------------- G5: two recovers racing

def _lease_state(store) -> dict[str, Any]:
    """What an uninterrupted run and a raced one must agree on: every artifact's versions (number,
    servable) and state, the event's status, and how many publication rows the audit log holds."""
    return {"versions": {i: [(v, bool(ok)) for v, ok, _ in store.versions(i)] for i in sorted(store.states())},
            "states": store.states(), "status": (store.event() or {}).get("status"),
            "published": sum(1 for r in store.audit_rows() if r[3] == "publish")}


def _take_then(store, before: Callable[[], None]) -> None:
    """Make ``store.take_event`` run ``before`` first: this process read the event unfinished, then
    the other recover ran, then this one tries to take the event (the interleaving of the race)."""
    real = store.take_event

    def take(event_id: int) -> bool:
        before()
        return real(event_id)

    store.take_event = take


def _raced_recover(path: str, crash_after: int, schedule: str, policy, event_doc: dict,
                   reject: frozenset[str]) -> dict[str, Any]:
    """Event on a SQLite file; the engine dies after ``crash_after`` validations; then two recovers
    A and B (two handles, two lease owners) race by ``schedule``."""
    from memsteward.repair.artifacts import parse_store_document
    from memsteward.repair.events import parse_event
    from memsteward.repair.execute import recover, run_event
    from memsteward.store.opening import open_store

    first = open_store(path, create=True)
    first.import_snapshot(parse_store_document(_G5_STORE, "<g5>"))
    snap = first.snapshot()
    try:
        run_event(first, policy, parse_event(event_doc, snap), "mincut", "networkx",
                  oracles=_oracles(reject, crash_after, False))
    except _Crash:
        pass
    first.close()  # the event's holder is gone
    a, b = open_store(path), open_store(path)
    try:
        if schedule == "A then B":
            recover(a, oracles=_oracles(reject, None, False))
            recover(b, oracles=_oracles(reject, None, False))
        elif schedule == "A reads, B recovers, A takes":
            _take_then(a, lambda: recover(b, oracles=_oracles(reject, None, False)))
            recover(a, oracles=_oracles(reject, None, False))
        else:  # "A takes and dies, B recovers"
            try:
                recover(a, oracles=_oracles(reject, 0, False))
            except _Crash:
                pass
            a.close()
            recover(b, oracles=_oracles(reject, None, False))
        bad = g5_violations(b, reject)
        if bad is not None:
            return {"violation": bad}
        return _lease_state(b)
    finally:
        a.close()
        b.close()


LEASE_SCHEDULES = ("A then B", "A reads, B recovers, A takes", "A takes and dies, B recovers")


def check_g5_lease(ignore_status: bool = False) -> int:
    """Two ``recover`` calls racing on a SQLite file after the engine died mid-event (every event
    type on r0, d1 rejected or not, a crash after 0 or 1 validations), by every schedule of
    :data:`LEASE_SCHEDULES`: the final store equals the one a single uninterrupted run leaves
    (same versions, one publication), and G5 holds. Liveness is the code's own rule for holders in
    this process (a closed handle is a dead holder)."""
    import tempfile
    from importlib import resources

    from memsteward.policy.loader import load_policy
    from memsteward.repair.artifacts import parse_store_document
    from memsteward.repair.events import parse_event
    from memsteward.repair.execute import run_event
    from memsteward.store.opening import open_store

    policy = load_policy(str(resources.files("memsteward") / "data" / "policies" / "default.yaml"))
    probe = open_store()
    cls = type(probe)  # the concrete store class (the lease methods are its own)
    probe.close()
    own = cls.__dict__.get("take_event")
    if ignore_status:  # broken variant: an event already published can be taken (and run) again
        def take_ignoring_status(self, event_id: int) -> bool:
            with self.transaction():
                self._lease(event_id)
            return True
        cls.take_event = take_ignoring_status  # type: ignore[method-assign]
    n = 0
    try:
        with tempfile.TemporaryDirectory(prefix="memsteward-g5-lease-") as tmp:
            for k, (etype, reject, crash_after, schedule) in enumerate(itertools.product(
                    ("delete", "correct", "migrate"), ((), ("d1",)), (0, 1), LEASE_SCHEDULES)):
                rejected = frozenset(reject)
                ref = open_store()
                ref.import_snapshot(parse_store_document(_G5_STORE, "<g5>"))
                snap = ref.snapshot()
                doc = _event_doc(etype, ("r0",), snap)
                run_event(ref, policy, parse_event(doc, snap), "mincut", "networkx",
                          oracles=_oracles(rejected, None, False))
                want = _lease_state(ref)
                ref.close()
                got = _raced_recover(f"{tmp}/s{k}.db", crash_after, schedule, policy, doc, rejected)
                if got != want:
                    raise Mismatch({"event": etype, "rejected": list(reject), "crash after validations": crash_after,
                                    "schedule": schedule, "raced": _diff(got, want)})
                n += 1
    finally:
        if own is not None:
            cls.take_event = own  # type: ignore[method-assign]
        elif "take_event" in cls.__dict__:
            del cls.take_event
    return n


def _diff(got: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
    return {k: {"raced": got.get(k), "uninterrupted": want.get(k)} for k in sorted(set(got) | set(want))
            if got.get(k) != want.get(k)}


# --------------------------------------------------------------------------- G6

MARK = "zebra-4711"  # the deleted root's content marker: no stored version may hold it afterwards
# Untracked copies (missing provenance) are found by the content scan (word shingles, at least
# `shingle_words` words): the one-word marker below is too short for it, so this check covers tracked
# provenance; proofs_tests/test_repair_lineage_index.py covers the scan.
UNTRACKED = (False,)


def _g6_store(edges: tuple[tuple[str, str], ...], untracked: bool) -> dict:
    """r0 (to delete) and r1 records, summaries d1..d3; r1 feeds every summary; ``edges`` among
    r0, d1, d2, d3 (topological); a summary reachable from r0 copies its text; with ``untracked``,
    d3 copies it too without any edge (missing provenance, for the content scan)."""
    tainted, changed = {"r0"}, True
    while changed:
        changed = False
        for u, v in edges:
            if u in tainted and v not in tainted:
                tainted.add(v)
                changed = True
    arts = [{"id": "r0", "kind": "record", "content": {"text": f"the user's secret is {MARK}.", "label": "a"}},
            {"id": "r1", "kind": "record", "content": {"text": "the user likes tea.", "label": "b"}}]
    for d in ("d1", "d2", "d3"):
        copy = d in tainted or (untracked and d == "d3")
        arts.append({"id": d, "kind": "summary", "content": f"summary: tea{'; ' + MARK if copy else ''}."})
    links = [("r1", d) for d in ("d1", "d2", "d3")] + list(edges)
    return {"artifacts": arts, "edges": [{"src": u, "dst": v, "type": "influence"} for u, v in links]}


def check_g6(erase_roots_only: bool = False) -> int:
    """The real engine on every influence DAG among r0, d1, d2, d3 (64) (an untracked copy of r0's
    text in d3 too, once the engine scans content: ``UNTRACKED``), with no successor rejected or d1
    rejected: after
    ``delete r0`` is published no stored version of any artifact holds r0's text, nothing
    servable does, and the DEK of every erased version is destroyed (no copy of it decrypts)."""
    from importlib import resources

    from memsteward.policy.loader import load_policy
    from memsteward.repair import execute
    from memsteward.repair.artifacts import parse_store_document
    from memsteward.repair.events import parse_event
    from memsteward.store.opening import open_store

    policy = load_policy(str(resources.files("memsteward") / "data" / "policies" / "default.yaml"))
    nodes = ("r0", "d1", "d2", "d3")
    pairs = list(itertools.combinations(nodes, 2))
    real_targets = execute.erasure_targets
    if erase_roots_only:  # broken variant: only the roots' versions are erased
        execute.erasure_targets = lambda plan, rep: (real_targets(plan, rep)[0], {}, real_targets(plan, rep)[2])
    n = 0
    try:
        for bits in itertools.product((False, True), repeat=len(pairs)):
            edges = tuple(e for e, on in zip(pairs, bits) if on)
            for untracked in UNTRACKED:
                for reject in ((), ("d1",)):
                    store = open_store()
                    store.import_snapshot(parse_store_document(_g6_store(edges, untracked), "<g6>"))
                    snap = store.snapshot()
                    execute.run_event(store, policy, parse_event({"type": "delete", "roots": ["r0"]}, snap),
                                      "mincut", "networkx", oracles=_oracles(frozenset(reject), None, False))
                    held = [f"{i}@v{v}" for i in store.states() for v, _, _ in store.versions(i)
                            if MARK in json.dumps(store.version_of(i, v).content)]
                    served = [a.id for a in store.serve() if MARK in json.dumps(a.content)]
                    erased = [(i, v) for i in store.states() for v, e, _ in store.versions(i) if e]
                    keyed = sorted(f"{i}@v{v}" for i, v in store.vault.alive(erased))  # crypto-shredding
                    store.close()
                    if held or served or keyed:
                        raise Mismatch({"influence": [f"{u}->{v}" for u, v in edges], "untracked copy in d3": untracked,
                                        "rejected": list(reject), "versions holding r0's text": held,
                                        "servable with it": served, "erased versions whose DEK is alive": keyed})
                    n += 1
    finally:
        execute.erasure_targets = real_targets
    return n


def _files_bytes(path: str) -> bytes:
    """The bytes of a SQLite store's files (database, WAL, journal: :func:`repair.erasure.store_files`)."""
    from pathlib import Path

    from memsteward.repair.erasure import store_files

    return b"".join(Path(f).read_bytes() for f in store_files(path))


def _key_destruction(store: Any) -> tuple[bool, list[str]]:
    """Whether the latest event's ``physical-erasure`` row is there (crypto-shredding's evidence), and
    the erased versions whose data key the live key store still holds (none, when the erasure holds)."""
    event = store.event()
    log = [r for r in store.audit_log() if event is not None and r["event_id"] == event["id"]]
    refs = [(r["artifact_id"], int(v["version"])) for r in log if r["action"] == "erase"
            for v in r["detail"].get("versions", [])]
    return any(r["action"] == "physical-erasure" for r in log), [f"{i}@v{v}" for i, v in store.keys_alive(refs)]


def check_g6_files(ignore_privacy: bool = False) -> int:
    """The real engine on SQLite *files*: every influence DAG among r0, d1, d2, d3 (64) × a delete
    of r0 or a correction of r0 marked ``privacy``: afterwards no stored version holds r0's text,
    nothing servable does, no byte of it is in the database file or its WAL, the event's key destruction
    is recorded and no erased version's data key is left in the key store (crypto-shredding, issue 27)."""
    import dataclasses
    import tempfile
    from importlib import resources

    from memsteward.policy.loader import load_policy
    from memsteward.repair import execute
    from memsteward.repair.artifacts import parse_store_document
    from memsteward.repair.events import parse_event
    from memsteward.store.opening import open_store

    policy = load_policy(str(resources.files("memsteward") / "data" / "policies" / "default.yaml"))
    nodes = ("r0", "d1", "d2", "d3")
    pairs = list(itertools.combinations(nodes, 2))
    fixed = {"id": "r0", "kind": "record", "content": {"text": "the user moved away.", "label": "a"}}
    docs = {"delete": {"type": "delete", "roots": ["r0"]},
            "privacy correction": {"type": "correct", "roots": ["r0"], "replacements": [fixed], "privacy": True}}
    n = 0
    with tempfile.TemporaryDirectory(prefix="memsteward-g6-") as tmp:
        for k, bits in enumerate(itertools.product((False, True), repeat=len(pairs))):
            edges = tuple(e for e, on in zip(pairs, bits) if on)
            for name, doc in docs.items():
                path = f"{tmp}/g6-{k}-{name[0]}.db"
                store = open_store(path, create=True)
                store.import_snapshot(parse_store_document(_g6_store(edges, False), "<g6>"))
                event = parse_event(doc, store.snapshot())
                if ignore_privacy:  # broken variant: a privacy correction erases like a plain one
                    event = dataclasses.replace(event, privacy=False)
                execute.run_event(store, policy, event, "mincut", "networkx", oracles=_oracles(frozenset(), None, False))
                held = [f"{i}@v{v}" for i in store.states() for v, _, _ in store.versions(i)
                        if MARK in json.dumps(store.version_of(i, v).content)]
                served = [a.id for a in store.serve() if MARK in json.dumps(a.content)]
                on_disk = MARK.encode() in _files_bytes(path)  # while open: the WAL as a reader finds it
                recorded, alive = _key_destruction(store)
                store.close()
                if held or served or on_disk or not recorded or alive:
                    raise Mismatch({"event": name, "influence": [f"{u}->{v}" for u, v in edges],
                                    "versions holding r0's text": held, "servable with it": served,
                                    "in the database file or WAL": on_disk, "key destruction recorded": recorded,
                                    "erased versions whose key is alive": alive})
                n += 1
    return n


# --------------------------------------------------------------------------- running


@dataclass(frozen=True)
class CodeCheck:
    guarantee: str
    code: str
    bound: str
    run: Callable[[], int]
    broken: str
    run_broken: Callable[[], int]


CHECKS: dict[str, CodeCheck] = {c.guarantee: c for c in (
    CodeCheck("G1", "attribution.exact_contribution, sampled_contribution",
              "every 0/1 game on K ≤ 3; every permutation and pair of permutations; all K! orders",
              check_g1, "Banzhaf weights instead of Shapley's", lambda: check_g1(exact=_banzhaf)),
    CodeCheck("G2", "attribution.loo, exact_contribution",
              "every redundant group 2 ≤ r ≤ K ≤ 5, every u: 2^(M∖R) → {0,1}, Δ ∈ {1,2}",
              check_g2, "LOO against the empty coalition", lambda: check_g2(loo=_loo_against_empty)),
    CodeCheck("G3", "selection.clearance (Ĥ, chain, ĝ, J, ĵ)",
              "chains h ≤ 4, every v̂ on a 5-point grid (h ≤ 3) or 3-point grid (h = 4), ν = [v̂ = 1]",
              check_g3, "ties broken towards the largest j", lambda: check_g3(clear=_clear_last_tie)),
    CodeCheck("G4", "closure.max_weight_closure (networkx and ortools)",
              "every digraph of prerequisites on n ≤ 3, every v, every p ∈ {−1, 2}^n",
              check_g4, "executability dropped from the network",
              lambda: check_g4(select=_select_ignoring_executability)),
    CodeCheck("G5", "execute.run_event / recover on an in-memory SQLite store",
              "5 artifacts; every event type × root set × rejected set; crash after 0, 1 or no validations",
              check_g5, "validation results ignored at publication", lambda: check_g5(ignore_validation=True)),
    CodeCheck("G5-lease", "execute.recover / Leases.take_event: two recovers racing on a SQLite file",
              "every event type on r0 × d1 rejected or not × a crash after 0 or 1 validations × 3 schedules "
              "(sequential; A reads, B recovers, A takes; A takes and dies, B recovers)",
              check_g5_lease, "a published event can be taken again", lambda: check_g5_lease(ignore_status=True)),
    CodeCheck("G6-files", "execute.run_event (delete, privacy correction) on SQLite files, bytes read back",
              "every influence DAG on r0, d1..d3 (64) × delete or privacy correction of r0",
              check_g6_files, "a privacy correction erased like a plain correction",
              lambda: check_g6_files(ignore_privacy=True)),
    CodeCheck("G6", "execute.run_event (delete: erasure targets, content scan, publication) on SQLite",
              "every influence DAG on r0, d1..d3 (64) × d1 rejected or not (tracked provenance; the content scan of untracked copies is tested in test_repair_lineage_index)",
              check_g6, "only the roots' versions erased", lambda: check_g6(erase_roots_only=True)),
)}


def run_check(gid: str, broken: bool = False) -> CodeResult:
    """Run one guarantee's code check (or its broken variant); never raises on a mismatch."""
    c = CHECKS[gid]
    start = time.perf_counter()
    try:
        n = (c.run_broken if broken else c.run)()
        return CodeResult(gid, c.code, c.bound, True, n, time.perf_counter() - start)
    except Mismatch as exc:
        return CodeResult(gid, c.code, c.bound, False, 0, time.perf_counter() - start, counterexample=exc.witness)


def verify_code(gid: str, with_broken: bool = True) -> CodeResult:
    """The check on the engine's code, and (by default) its broken variant, which must be refuted."""
    real = run_check(gid)
    if not with_broken:
        return real
    bad = run_check(gid, broken=True)
    sens = {"variant": CHECKS[gid].broken, "refuted": not bad.proved, "counterexample": bad.counterexample}
    return CodeResult(real.guarantee, real.code, real.bound, real.proved and not bad.proved, real.inputs,
                      real.seconds + bad.seconds, real.counterexample, sens)
