"""Mode assignment Φ_μ and repair candidates q_i = (μ_i, π_i, P_i, v_i, w_i, c_i) (§2.3).

For each descendant i ∈ D(F), in topological order of the influence graph, a
:class:`~memsteward.policy.domain.Cell` is built from the artifact and the event and the policy's
ordered mode rules assign μ_i (``memsteward.policy.domain.decide``; no matching rule ⇒ remove).
Support suffices when ``policy.support.sufficient(retained, inputs)`` where an influence input is
retained when it lies in Ret(e) or is an affected descendant that is itself repairable (μ ≠ remove).
Partitions exist for a neural skill when provenance yields a non-empty forget set (inputs
outside Ret(e)) and a non-empty reference set (inputs in Ret(e)). Inputs left withdrawn or erased
by an earlier event are not support (they are not servable in the post-event store).

P_i is the set of affected influence inputs whose repaired successors π_i consumes: parents in
D(F) — except for ``param``, which forgets affected inputs instead of consuming them (§3.1:
the operator "removes the deleted support from the skill's retained reference set").
A candidate is non-executable (v_i = 0) when P_i \\ D⁺(F) ≠ ∅, when it lies on a cycle (of E^inf
within C(F), hence of E^req), or when no registered operator can run on it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple

from ..policy.domain import Cell, decide
from ..policy.model import Policy
from . import scope as scopes
from .artifacts import SERVABLE, SERVABLE_STATES, Artifact
from .events import Event
from .operators import Operator, OperatorRegistry, operators_for
from .scope import EDGE_ORDER, ChildIndex, Scope, order_and_cycles, order_rest, peel_level_arrays

REMOVE = "remove"
ERASED = "erased"
_PARENT, _CHILD = itemgetter(0), itemgetter(1)
_STATE = attrgetter("state")
_NO_ARTIFACT = Artifact("", "")  # a root with no artifact (never decided: roots have no mode)


class Candidate(NamedTuple):
    """q_i for one non-removed descendant i ∈ D⁺(F) (an immutable value: a named tuple, which a
    cascade of 10^5 builds in a quarter of a frozen dataclass's time)."""

    id: str
    kind: str
    arch: str | None
    mode: str
    operator: str
    prerequisites: tuple[str, ...]  # P_i
    executable: bool  # v_i
    value: float  # w_i
    cost: float  # c_i
    reason: str = ""  # why v_i = 0

    def as_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "arch": self.arch, "mode": self.mode,
                "operator": self.operator, "prerequisites": list(self.prerequisites),
                "executable": self.executable, "value": self.value, "cost": self.cost,
                "reason": self.reason}


_new_candidate = tuple.__new__  # Candidate from a full tuple of fields, without the named tuple's Python __new__


@dataclass(frozen=True)
class Assignment:
    """Result of lines 3–5 of Algorithm 1: modes for D(F), candidates for D⁺(F)."""

    modes: Mapping[str, str]
    candidates: tuple[Candidate, ...]
    cells: Mapping[str, Cell]


def meta_cell_values(policy: Policy, artifact: Artifact) -> dict[str, float]:
    """The numeric metadata the artifact's kind declares (declared default when absent)."""
    return dict(_meta_key(_meta_fields(policy, artifact.kind), artifact.meta))


def _meta_fields(policy: Policy, kind: str) -> tuple[tuple[str, float], ...]:
    """(name, declared default) of every numeric metadata field of ``kind`` (none for unknown kinds)."""
    spec = policy.kinds.get(kind)
    return () if spec is None else tuple((name, mf.default) for name, mf in spec.meta.items())


def _meta_key(fields: tuple[tuple[str, float], ...], meta: Mapping[str, Any]) -> tuple[tuple[str, float], ...]:
    out = []
    for name, default in fields:
        v = meta.get(name)
        out.append((name, float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default))
    return tuple(out)


def assign(policy: Policy, scope: Scope, event: Event, operators: OperatorRegistry | None = None,
           ordering: tuple[list[str], frozenset[str]] | None = None) -> Assignment:
    """Algorithm 1 lines 3–5 over C(F) only: modes μ_i, candidates Q_ρ, P_i, executability v_i.

    ``ordering`` is a parents-first order of C(F) and its cyclic members; by default
    :func:`~memsteward.repair.scope.order_and_cycles` (the networkx reference passes its own).

    In parents-first order, for each descendant i its inputs are classified once — in Ret(e)
    (:func:`~memsteward.repair.scope.is_retained`: outside C(F), or a correction's replacement),
    counted as support when also servable (or a replacement); affected (the forget set); in D(F),
    counted as support when already repairable, Σ_{j ∈ P_i ∩ D(F)} [μ_j ≠ remove] (a cycle's later
    members are not yet decided: not support). Partitions exist for a neural skill with a forget
    set (inputs in C(F) \\ X_Δ) and a reference set (retained inputs). Φ_μ is evaluated once per
    distinct cell (a cascade of 10^5 members has a few dozen).

    A cascade of at least ``PEEL_MIN_MEMBERS`` members is decided level by level in arrays
    (:func:`_assign_levels`); the members the peel leaves (on or after a cycle), and every member of
    a smaller cascade, one by one (:func:`_assign_in_order`). Both read the same classification.
    """
    operators = operators or operators_for(policy)
    modes: dict[str, str] = {}
    cells: dict[str, Cell] = {}
    in_desc_of: dict[str, Sequence[str]] = {}
    plus: set[str] = set()  # D⁺(F) so far: the members decided repairable (μ ≠ remove)
    if ordering is None and len(scope.members) >= scopes.PEEL_MIN_MEMBERS:
        order, cyclic = _assign_levels(policy, scope, event, modes, cells, plus, in_desc_of)
    else:
        order, cyclic = ordering if ordering is not None else order_and_cycles(scope)
    _assign_in_order(policy, scope, event, order, modes, cells, plus, in_desc_of)
    return Assignment(modes, _candidates(policy, scope, modes, plus, cyclic, in_desc_of, operators), cells)


def _assign_in_order(policy: Policy, scope: Scope, event: Event, order: Sequence[str], modes: dict[str, str],
                     cells: dict[str, Cell], plus: set[str], in_desc_of: dict[str, Sequence[str]]) -> None:
    """μ_i for each member of ``order`` (parents first) after those already in ``modes``: one pass."""
    if not order:
        return
    roots = frozenset(event.roots)
    affected = scope.cascade
    artifacts, parents_of = scope.artifacts, scope.parents
    state_of = scope.states.get  # a parent outside C(F) not held is servable (States)
    reps = event.replacement_ids
    correct = event.type == "correct"
    servable = SERVABLE_STATES
    sufficient = policy.support.sufficient
    fields: dict[str, tuple[tuple[str, float], ...]] = {}
    decided: dict[tuple, tuple[Cell, str]] = {}
    for i in order:
        if i in roots:
            continue
        parents = parents_of.get(i, ())
        kept = forget = repairable = 0
        in_desc = in_desc_of[i] = []
        for p in parents:
            if p in affected:
                if correct and p in reps:
                    kept += 1
                else:
                    forget += 1
                if p not in roots:  # p ∈ D(F) (a small set's probe instead of a large one's)
                    in_desc.append(p)
                    if p in plus:
                        repairable += 1
            elif p in reps or state_of(p, SERVABLE) in servable:
                kept += 1
        art = artifacts[i]
        kind, arch = art.kind, art.arch
        declared = fields.get(kind)
        if declared is None:
            declared = fields[kind] = _meta_fields(policy, kind)
        key = (kind, arch, _meta_key(declared, art.meta) if declared else (),
               sufficient(kept + repairable, len(parents)),
               _neural_skill(policy, kind, arch) and forget > 0 and kept > 0)
        hit = decided.get(key)
        if hit is None:
            hit = decided[key] = _decide(policy, event, *key)
        cells[i] = hit[0]
        # an erased artifact (deleted by an earlier event) is never repaired: that would resurrect it
        mode = modes[i] = REMOVE if art.state == ERASED else hit[1]
        if mode != REMOVE:
            plus.add(i)


def _neural_skill(policy: Policy, kind: str, arch: str | None) -> bool:
    """Whether Φ_μ's partitions (a forget and a reference set) can exist for such an artifact: a
    neural artifact of a kind whose role is skill (the paper's ``skill`` or a declared one)."""
    return arch == "neural" and policy.role(kind) == "skill"


def _decide(policy: Policy, event: Event, kind: str, arch: str | None, meta: tuple[tuple[str, float], ...],
            sufficient: bool, partitions: bool) -> tuple[Cell, str]:
    """The cell of one class of descendants and the mode Φ_μ assigns it (no rule: remove)."""
    cell = Cell(kind, arch, event.type, "sufficient" if sufficient else "insufficient", partitions, dict(meta))
    return cell, decide(policy, cell) or REMOVE


def _assign_levels(policy: Policy, scope: Scope, event: Event, modes: dict[str, str], cells: dict[str, Cell],
                   plus: set[str], in_desc_of: dict[str, Sequence[str]]) -> tuple[list[str], frozenset[str]]:
    """:func:`_assign_in_order` for every member the level peel orders, one level at a time in
    arrays (:func:`~memsteward.repair.scope.peel_level_arrays`): the same classification of each
    influence edge into C(F) (:func:`_influence_inputs`), a level's repairable support
    Σ [μ_j ≠ remove] pushed along E^inf from the levels before it, Φ_μ once per distinct class
    (:func:`_decide_levels`). Fills the four maps for those members and returns the members left
    (on or after a cycle, in parents-first order: :func:`~memsteward.repair.scope.order_rest`) and
    the cyclic ones."""
    import numpy as np

    ids = scope.members
    n = len(ids)
    e = _influence_inputs(scope, event)
    unknown = scope.cascade - scope.artifacts.keys() - set(event.roots)
    if unknown:  # as the one-by-one pass: a descendant without its artifact is a broken scope
        raise KeyError(min(unknown))
    arts = list(map(scope.artifacts.get, ids, repeat(_NO_ARTIFACT)))
    inner_src, inner_dst = e.src[e.inside], e.dst[e.inside]  # E^inf[C(F)]
    levels = peel_level_arrays(n, inner_src, inner_dst)
    code, is_plus, decided = _decide_levels(policy, event, levels, e, arts)
    peeled = np.concatenate(levels) if levels else np.zeros(0, dtype=np.int64)
    done = peeled[~e.is_root[peeled]].tolist()
    done_ids = [ids[k] for k in done]
    cell_mode = [decided[k] for k in code[done].tolist()]
    cells.update(zip(done_ids, [cm[0] for cm in cell_mode]))
    modes.update(zip(done_ids, [REMOVE if arts[k].state == ERASED else cm[1] for k, cm in zip(done, cell_mode)]))
    plus.update(compress(done_ids, is_plus[done].tolist()))
    d_at = np.flatnonzero(e.desc)  # P_i ∩ D(F) of each member, in its parents' order
    bounds = np.searchsorted(e.dst[d_at], np.arange(n + 1)).tolist()
    desc = list(map(e.parents.__getitem__, d_at.tolist()))
    in_desc_of.update((ids[k], desc[bounds[k]:bounds[k + 1]]) for k in done)
    rest, cyclic = order_rest(n, peeled.tolist(), inner_src.tolist(), inner_dst.tolist())
    return [ids[k] for k in rest], frozenset(ids[k] for k in cyclic)


class _Inputs(NamedTuple):
    """Every influence edge p → i into C(F) as arrays over edges (grouped by i in id order) and
    members (positions in :attr:`Scope.members`), classified as :func:`_assign_in_order` does."""

    parents: list[str]  # p of each edge
    src: Any  # position of p, −1 outside C(F)
    dst: Any  # position of i
    inside: Any  # p ∈ C(F)
    desc: Any  # p ∈ D(F)
    is_root: Any  # per member: a root
    inputs: Any  # per member: |pa(i)|
    kept: Any  # per member: inputs retained (outside C(F) and servable, or a replacement)
    forget: Any  # per member: affected inputs that are not a correction's replacement


def _influence_inputs(scope: Scope, event: Event) -> _Inputs:
    """:class:`_Inputs` of a scope, with a dictionary probe per edge and no Python loop."""
    import numpy as np

    ids = scope.members
    n = len(ids)
    pos = {i: k for k, i in enumerate(ids)}
    edges = scope.edges
    dst = np.fromiter(map(pos.__getitem__, map(_CHILD, edges)), np.int64, len(edges))
    if np.any(dst[1:] < dst[:-1]):  # not grouped by child (a scope built by hand): group them
        edges = sorted(edges, key=EDGE_ORDER)
        dst = np.fromiter(map(pos.__getitem__, map(_CHILD, edges)), np.int64, len(edges))
    flat = list(map(_PARENT, edges))
    src = np.fromiter(map(pos.get, flat, repeat(-1)), np.int64, len(flat))
    inputs = np.bincount(dst, minlength=n)
    inside = src >= 0
    is_root = np.zeros(n, dtype=bool)
    is_root[[pos[r] for r in event.roots if r in pos]] = True
    reps = event.replacement_ids
    rep = np.fromiter(map(reps.__contains__, flat), bool, len(flat)) if reps else np.zeros(len(flat), bool)
    servable = np.ones(len(flat), dtype=bool)  # read for the parents outside C(F) only
    outside = np.flatnonzero(~inside)
    servable[outside] = np.fromiter(map(SERVABLE_STATES.__contains__, map(
        scope.states.get, map(flat.__getitem__, outside.tolist()), repeat(SERVABLE))), bool, len(outside))
    kept_inside = rep if event.type == "correct" else np.zeros(len(flat), bool)  # a replacement in C(F)
    kept = np.bincount(dst[np.where(inside, kept_inside, rep | servable)], minlength=n)
    forget = np.bincount(dst[inside & ~kept_inside], minlength=n)
    desc = inside & ~is_root[np.where(inside, src, 0)]
    return _Inputs(flat, src, dst, inside, desc, is_root, inputs, kept, forget)


def _decide_levels(policy: Policy, event: Event, levels: Sequence[Any], e: _Inputs, arts: Sequence[Artifact],
                   ) -> tuple[Any, Any, dict[int, tuple[Cell, str]]]:
    """Each peeled member's class code, whether it is repairable, and (cell, mode) per code. A
    class is (kind, arch, declared metadata) × sufficient support × partitions, coded
    ``static · 4 + 2·sufficient + partitions``."""
    import numpy as np

    n = len(arts)
    fields = {k: _meta_fields(policy, k) for k in {a.kind for a in arts}}
    statics = [(a.kind, a.arch, _meta_key(f, a.meta) if (f := fields[a.kind]) else ()) for a in arts]
    classes = {c: k for k, c in enumerate(dict.fromkeys(statics))}
    static = np.fromiter(map(classes.__getitem__, statics), np.int64, n)
    statics_of: list[tuple[str, str | None, tuple[tuple[str, float], ...]]] = list(classes)
    neural = np.array([_neural_skill(policy, k, a) for k, a, _ in statics_of], dtype=bool)
    erased = np.fromiter(map(ERASED.__eq__, map(_STATE, arts)), bool, n)
    children = ChildIndex(n, e.src[e.desc], e.dst[e.desc])  # a level's repairable members support these
    sufficient = policy.support.sufficient
    repairable = np.zeros(n, dtype=np.int64)
    is_plus = np.zeros(n, dtype=bool)
    code = np.zeros(n, dtype=np.int64)
    decided: dict[int, tuple[Cell, str]] = {}
    for level in levels:
        members = level[~e.is_root[level]]
        if not members.size:
            continue
        support = e.kept[members] + repairable[members]
        width = int(support.max()) + 1
        pairs, at = np.unique(e.inputs[members] * width + support, return_inverse=True)
        enough = np.array([sufficient(q % width, q // width) for q in pairs.tolist()], dtype=bool)
        partitions = neural[static[members]] & (e.forget[members] > 0) & (e.kept[members] > 0)
        c = code[members] = static[members] * 4 + enough[at] * 2 + partitions
        for k in np.unique(c).tolist():
            if k not in decided:
                kind, arch, meta = statics_of[k >> 2]
                decided[k] = _decide(policy, event, kind, arch, meta, bool(k & 2), bool(k & 1))
        repairs = np.array([decided[k][1] != REMOVE for k in c.tolist()], dtype=bool) & ~erased[members]
        is_plus[members] = repairs
        np.add.at(repairable, children.of(members[repairs]), 1)
    return code, is_plus, decided


def _candidates(policy: Policy, scope: Scope, modes: Mapping[str, str], plus: set[str],
                cyclic: frozenset[str], in_desc_of: Mapping[str, Sequence[str]],
                operators: OperatorRegistry) -> tuple[Candidate, ...]:
    """Q_ρ: q_i for every i ∈ D⁺(F) = {i ∈ D(F) : μ_i ≠ remove} (``plus``), in id order (read off
    the sorted members). The operator and the weight functions are looked up once per (mode, kind, arch)."""
    per_key: dict[tuple[str, str, str | None], tuple[Operator | None, str, Callable, Callable]] = {}
    artifacts = scope.artifacts
    value, cost = policy.selection.value, policy.selection.cost
    out = []
    for i in filter(plus.__contains__, scope.members):
        art = artifacts[i]
        mode, kind, arch, meta = modes[i], art.kind, art.arch, art.meta
        found = per_key.get((mode, kind, arch))
        if found is None:
            op = operators.find(mode, kind, arch)
            found = per_key[(mode, kind, arch)] = (op, "" if op is None else op.name,
                                                   value.resolver(kind, mode), cost.resolver(kind, mode))
        op = found[0]
        prereqs = () if mode == "param" else tuple(in_desc_of[i])
        if not plus.issuperset(prereqs):
            reason = "requires removed descendant " + next(p for p in prereqs if p not in plus)
        elif i in cyclic:
            reason = "on a cycle of influence (E^req) edges"
        elif op is None:
            reason = f"no operator registered for mode {mode}"
        else:
            reason = op.check(art) or ""
        out.append(_new_candidate(Candidate, (i, kind, arch, mode, found[1], prereqs, not reason, found[2](meta),
                                              found[3](meta), reason)))
    return tuple(out)


def requirement_edges(candidates: Collection[Candidate]) -> list[tuple[str, str]]:
    """E^req = {(j, i) : i ∈ D⁺(F), j ∈ P̄_i} with P̄_i = P_i ∩ D⁺(F) (§2.3)."""
    plus = {c.id for c in candidates}
    return [(j, c.id) for c in candidates for j in c.prerequisites if j in plus]
