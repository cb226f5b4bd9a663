"""Systematic tests of ``memsteward.repair.candidates`` (issue 33): the metadata a cell reads
(every value type, at and beside a rule's threshold), one worked scope whose members each take
one branch of the classification (kept, forget, repairable; a replacement, a withdrawn, erased,
republished or absent parent; partitions; an erased member; a cycle; a removed prerequisite),
with the modes and candidates worked by hand — through the one-by-one pass and the array pass —
and the candidates' reasons, weights and requirement edges.
"""

from __future__ import annotations

import json
from unittest import mock

import pytest

from memsteward.policy.loader import load_policy
from memsteward.repair import candidates as cands
from memsteward.repair import scope as scopes
from memsteward.repair.artifacts import Artifact, Edge, Snapshot
from memsteward.repair.candidates import Candidate, assign, requirement_edges
from memsteward.repair.events import Event, parse_event
from memsteward.repair.operators import OperatorRegistry, operators_for
from memsteward.repair.reference import reference_assign
from memsteward.repair.scope import order_and_cycles, read_scope
from memsteward.store import Store

DEFAULT = load_policy("policies/default.yaml")
TOOL = load_policy("policies/tool-agent.yaml")


# --------------------------------------------------------------------------- metadata


@pytest.mark.parametrize("value,want", [
    (7, 7.0), (2.5, 2.5), (0, 0.0), (-3, -3.0), (True, 1.0), (False, 1.0), ("30", 1.0), (None, 1.0),
    ([5], 1.0), ({"v": 5}, 1.0),
])
def test_meta_key_reads_numbers_and_falls_back_to_the_declared_default(value, want):
    fields = (("calls", 1.0), ("age_days", 0.0))
    got = cands._meta_key(fields, {"calls": value})
    assert got == (("calls", want), ("age_days", 0.0))
    assert all(type(v) is float for _, v in got)
    assert cands._meta_key(fields, {}) == (("calls", 1.0), ("age_days", 0.0))
    assert cands._meta_key((), {"calls": 5}) == ()


def test_meta_cell_values_are_the_kinds_declared_fields_only():
    art = Artifact("c", "cache", None, 1, None, {"calls": 30, "age_days": 2, "other": 9})
    assert cands.meta_cell_values(TOOL, art) == {"age_days": 2.0, "calls": 30.0}
    assert cands.meta_cell_values(TOOL, Artifact("c", "cache")) == {"age_days": 0.0, "calls": 1.0}
    assert cands.meta_cell_values(TOOL, Artifact("s", "summary", None, 1, None, {"calls": 3})) == {}
    assert cands.meta_cell_values(TOOL, Artifact("u", "unknown-kind", None, 1, None, {"calls": 3})) == {}
    assert cands._meta_fields(TOOL, "cache") == (("age_days", 0.0), ("calls", 1.0))
    assert cands._meta_fields(TOOL, "nope") == ()


def test_neural_skill_needs_the_neural_arch_and_the_skill_role():
    assert cands._neural_skill(DEFAULT, "skill", "neural") is True
    assert cands._neural_skill(DEFAULT, "skill", "prompt") is False
    assert cands._neural_skill(DEFAULT, "summary", "neural") is False
    assert cands._neural_skill(DEFAULT, "nope", "neural") is False


# --------------------------------------------------------------------------- one worked scope


def _worked() -> tuple[Snapshot, list[tuple[str, str]]]:
    """Root r (a record); outside C(F): k1 servable, kr republished, w withdrawn, x erased, and
    "ghost", a parent with no artifact. Each member below takes one branch (see the modes)."""
    tx = {"transform": "texts"}
    arts = [Artifact("r", "record", None, 1, {"text": "root."}),
            Artifact("k1", "record", None, 1, {"text": "kept."}),
            Artifact("kr", "record", None, 1, {"text": "kept."}, {}, "republished"),
            Artifact("w", "record", None, 1, {"text": "w."}, {}, "withdrawn"),
            Artifact("x", "record", None, 1, {"text": "x."}, {}, "erased")]
    def summ(i: str, state: str = "servable") -> Artifact:
        return Artifact(i, "summary", None, 1, f"{i} text.", {}, state)
    arts += [summ("s1"), summ("s2"), summ("s3"), summ("s4"), summ("s5"), summ("s6"), summ("s7"), summ("s8"), summ("s9"),
             summ("e1", "erased"), summ("y1"), summ("y2"), summ("z1"), summ("z2")]
    arts += [Artifact("n1", "skill", "neural", 1, None), Artifact("n2", "skill", "neural", 1, None),
             Artifact("p1", "skill", "prompt", 1, "prompt text.")]
    arts += [Artifact(f"c{k}", "cache", None, 1, {"out": 1}, {**tx, "age_days": age})
             for k, age in enumerate([100, 90, True, "200", 90.5, 91], 1)]
    edges = [("r", "s1"), ("k1", "s1"),             # kept 1 of 2: sufficient → regen
             ("s1", "s2"),                          # a repairable parent in D(F): 1 of 1 → regen, P = (s1)
             ("r", "s3"),                           # nothing kept → remove
             ("r", "s4"), ("w", "s4"),              # a withdrawn parent is not support → remove
             ("r", "s5"), ("k1", "s5"), ("x", "s5"),  # 1 of 3 (an erased parent) → remove
             ("r", "s6"), ("k1", "s6"), ("kr", "s6"),  # republished counts: 2 of 3 → regen
             ("r", "s7"), ("k1", "s7"), ("ghost", "s7"),  # absent parent: 1 of 3 → remove
             ("s3", "s8"), ("k1", "s8"),            # a removed parent is not support: 1 of 2 → regen, P = (s3)
             ("s1", "s9"), ("s3", "s9"), ("w", "s9"),  # one repairable of 3 counts once: 1/3 → remove
             ("r", "e1"), ("k1", "e1"),             # sufficient, but erased → remove
             ("s1", "p1"), ("s3", "p1"),            # 1 repairable of 2 → regen; P = (s1, s3), s3 removed
             ("r", "n1"), ("k1", "n1"),             # neural: forget 1, kept 1 → partitions → param, P = ()
             ("r", "n2"),                           # neural: nothing kept → no partitions → remove
             ("r", "y1"), ("k1", "y1"), ("kr", "y1"), ("y2", "y1"),  # a cycle y1 ⇄ y2, both sufficient
             ("y1", "y2"), ("k1", "y2"),
             ("r", "z1"), ("k1", "z1"), ("w", "z1"), ("z2", "z1"),  # y's twin, but z1 has only 1 of 4
             ("z1", "z2"), ("k1", "z2")]
    edges += [("r", f"c{k}") for k in range(1, 7)]
    return Snapshot({a.id: a for a in arts}, tuple(Edge(u, v) for u, v in edges)), edges


DELETE_MODES = {"s1": "regen", "s2": "regen", "s3": "remove", "s4": "remove", "s5": "remove", "s6": "regen",
                "s7": "remove", "s8": "regen", "s9": "remove", "e1": "remove", "p1": "regen", "n1": "param", "n2": "remove",
                "y1": "regen", "y2": "regen", "z1": "remove", "z2": "regen",
                "c1": "remove", "c2": "recompute", "c3": "recompute", "c4": "recompute", "c5": "remove", "c6": "remove"}


def _passes():
    yield "one by one", mock.patch.multiple(scopes, PEEL_MIN_MEMBERS=10**9)
    yield "arrays", mock.patch.multiple(scopes, PEEL_MIN_MEMBERS=0)
    yield "arrays, narrow tail", mock.patch.multiple(scopes, PEEL_MIN_MEMBERS=0, PEEL_NARROW_LEVELS=1)


@pytest.mark.parametrize("name,patch", list(_passes()))
def test_a_delete_classifies_each_input_as_worked_by_hand(name, patch):
    snap, _ = _worked()
    event = Event("delete", ("r",))
    scope = read_scope(snap, ["r"])
    with patch:
        got = assign(DEFAULT, scope, event)
    assert dict(got.modes) == DELETE_MODES
    by = {c.id: c for c in got.candidates}
    assert [c.id for c in got.candidates] == sorted(i for i, m in DELETE_MODES.items() if m != "remove")
    assert by["s2"].prerequisites == ("s1",) and by["s2"].executable and by["s2"].reason == ""
    assert by["s8"].prerequisites == ("s3",) and not by["s8"].executable
    assert by["s8"].reason == "requires removed descendant s3"
    assert by["p1"].prerequisites == ("s1", "s3") and by["p1"].reason == "requires removed descendant s3"
    assert by["n1"].prerequisites == () and by["n1"].mode == "param"
    assert by["y1"].reason == by["y2"].reason == "on a cycle of influence (E^req) edges"
    assert by["y1"].prerequisites == ("y2",) and by["y2"].prerequisites == ("y1",)
    assert by["z2"].reason == "requires removed descendant z1"  # a removed prerequisite is named before the cycle
    assert by["s1"].prerequisites == () and by["s1"].executable
    # weights: default.yaml's value by kind (summary 1.0, skill 2.0, else 1.0), cost by mode
    assert (by["s1"].value, by["s1"].cost) == (1.0, 1.5)
    assert (by["n1"].value, by["n1"].cost) == (2.0, 4.0)
    assert (by["c2"].value, by["c2"].cost) == (1.0, 0.5)
    assert by["s1"].operator and by["c2"].operator and by["n1"].operator
    cell = got.cells
    assert cell["s1"].support == "sufficient" and cell["s3"].support == "insufficient"
    assert cell["n1"].partitions is True and cell["n2"].partitions is False
    assert cell["c3"].meta == {"age_days": 0.0} and cell["c5"].meta == {"age_days": 90.5}
    assert cell["e1"].support == "sufficient"  # decided as its cell says, then held at remove
    assert all(c.event == "delete" for c in cell.values())
    assert "r" not in got.modes and "r" not in cell
    ref = reference_assign(DEFAULT, scope, event, None, order_and_cycles(scope))
    assert dict(ref.modes) == DELETE_MODES and ref.candidates == got.candidates


@pytest.mark.parametrize("name,patch", list(_passes()))
def test_a_correction_counts_its_replacement_as_kept_and_not_as_forgotten(name, patch):
    snap, _ = _worked()
    rep = Artifact("r", "record", None, 1, {"text": "corrected."})
    event = Event("correct", ("r",), (rep,))
    scope = read_scope(snap, ["r"])
    with patch:
        got = assign(DEFAULT, scope, event)
    want = dict(DELETE_MODES)
    # the replacement is kept: s3 (1 of 1), s4 (1 of 2), s5 (2 of 3), s7 (2 of 3) now have support;
    # n1 forgets nothing (its affected input is the replacement) → no partitions → remove; n2 likewise
    want.update(s3="regen", s4="regen", s5="regen", s7="regen", n1="remove", z1="regen", s8="regen",
                s9="regen")  # s9: s1 and s3 both repairable now, 2 of 3
    assert dict(got.modes) == want
    by = {c.id: c for c in got.candidates}
    assert by["p1"].executable is True and by["p1"].prerequisites == ("s1", "s3")
    assert by["z1"].reason == "on a cycle of influence (E^req) edges"
    assert all(c.event == "correct" for c in got.cells.values())
    ref = reference_assign(DEFAULT, scope, event, None, order_and_cycles(scope))
    assert dict(ref.modes) == want and ref.candidates == got.candidates


@pytest.mark.parametrize("name,patch", list(_passes()))
def test_a_replacement_outside_the_cascade_is_kept_whatever_its_state(name, patch):
    # a correction of r whose Δ also names w (withdrawn, outside C(F)): w counts as kept for s4
    snap, _ = _worked()
    event = Event("correct", ("r",), (Artifact("w", "record", None, 1, {"text": "w2."}),))
    scope = read_scope(snap, ["r"])
    with patch:
        got = assign(DEFAULT, scope, event)
    assert got.modes["s4"] == "regen"  # w (a replacement) kept: 1 of 2
    assert got.modes["s3"] == "remove"  # r is not replaced: forgotten
    ref = reference_assign(DEFAULT, scope, event, None, order_and_cycles(scope))
    assert dict(ref.modes) == dict(got.modes) and ref.candidates == got.candidates


def _stored_worked() -> Store:
    """The worked scope in a real SQLite store (without the "ghost" parent, which a store refuses):
    every id, kind, arch and state then comes back as a fresh string from a row, not the literal."""
    snap, _ = _worked()
    store = Store()
    store.import_snapshot(Snapshot(snap.artifacts, tuple(e for e in snap.edges if e.src != "ghost")))
    return store


@pytest.mark.parametrize("etype", ["delete", "correct"])
@pytest.mark.parametrize("name,patch", list(_passes()))
def test_the_worked_scope_read_from_a_store_with_the_event_parsed_from_json(etype, name, patch):
    """As planning really runs: the event parsed from its JSON text (a fresh type string), the scope
    read from SQLite (fresh kind, arch and state strings). The modes are the hand-worked ones above,
    except s7, whose absent parent is gone: kept 1 of 2 → regen."""
    store = _stored_worked()
    try:
        _check_stored_worked(store, etype, patch)
    finally:
        store.close()


def _check_stored_worked(store: Store, etype: str, patch) -> None:
    doc = {"type": etype, "roots": ["r"]} | (
        {"replacements": [{"id": "r", "kind": "record", "content": {"text": "corrected."}}]} if etype == "correct" else {})
    text = json.dumps(doc)
    event = parse_event(json.loads(text), store, "event.json", text)
    scope = read_scope(store, ["r"])
    assert scope.artifacts["e1"].state == "erased" and scope.states == {"w": "withdrawn", "x": "erased"}
    with patch:
        got = assign(DEFAULT, scope, event)
    want = dict(DELETE_MODES, s7="regen")
    if etype == "correct":  # as in the correction test above: the replacement r is kept, not forgotten
        want.update(s3="regen", s4="regen", s5="regen", s7="regen", n1="remove", z1="regen", s8="regen", s9="regen")
    assert dict(got.modes) == want
    by = {c.id: c for c in got.candidates}
    assert got.modes["e1"] == "remove" and got.cells["e1"].support == "sufficient"  # erased: held at remove
    if etype == "delete":
        assert by["n1"].mode == "param" and by["n1"].prerequisites == () and got.cells["n1"].partitions is True
        assert by["s8"].reason == "requires removed descendant s3"
    assert by["y1"].reason == "on a cycle of influence (E^req) edges"
    assert all(c.event == etype for c in got.cells.values())


def test_only_a_cascade_of_peel_min_members_is_assigned_in_arrays():
    """A star of PEEL_MIN_MEMBERS − 1 members (the root and its children, each with a kept parent
    outside) is assigned one by one, without numpy (CLI start-up); so is one of PEEL_MIN_MEMBERS
    given its ordering (the reference's); the same star without an ordering goes through the array
    pass (numpy imported). Every child is regen (1 of 2 inputs kept) on each path. A fresh process,
    so that numpy's presence says which path ran."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from memsteward.policy.loader import load_policy\n"
            "from memsteward.repair.artifacts import Artifact, Edge, Snapshot\n"
            "from memsteward.repair.candidates import assign\n"
            "from memsteward.repair.events import Event\n"
            "from memsteward.repair.scope import PEEL_MIN_MEMBERS, read_scope\n"
            "policy = load_policy('policies/default.yaml')\n"
            "def star(n):\n"
            "    kids = [f's{k:05d}' for k in range(n - 1)]\n"
            "    arts = {i: Artifact(i, 'summary', None, 1, 's.') for i in kids}\n"
            "    arts |= {'r': Artifact('r', 'record', None, 1, {'text': 'r.'}), 'k': Artifact('k', 'record', None, 1, {})}\n"
            "    edges = tuple(Edge(p, i) for i in kids for p in ('k', 'r'))\n"
            "    return read_scope(Snapshot(arts, edges), ['r'])\n"
            "def show(got):\n"
            "    print(len(got.modes), sorted(set(got.modes.values())), len(got.candidates), 'numpy' in sys.modules)\n"
            "show(assign(policy, star(PEEL_MIN_MEMBERS - 1), Event('delete', ('r',))))\n"
            "big = star(PEEL_MIN_MEMBERS)\n"
            "show(assign(policy, big, Event('delete', ('r',)), None, (list(big.members), frozenset())))\n"
            "show(assign(policy, big, Event('delete', ('r',))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    n = scopes.PEEL_MIN_MEMBERS
    assert out[:3] == [f"{n - 2} ['regen'] {n - 2} False", f"{n - 1} ['regen'] {n - 1} False",
                       f"{n - 1} ['regen'] {n - 1} True"]


def _star(n: int) -> Snapshot:
    """The root r and n − 1 summaries, each with r and a kept record k outside as inputs."""
    kids = [f"s{k:05d}" for k in range(n - 1)]
    arts = {i: Artifact(i, "summary", None, 1, "s.") for i in kids}
    arts |= {"r": Artifact("r", "record", None, 1, {"text": "r."}), "k": Artifact("k", "record", None, 1, {})}
    return Snapshot(arts, tuple(Edge(p, i) for i in kids for p in ("k", "r")))


@pytest.mark.parametrize("n,given,levels", [
    (scopes.PEEL_MIN_MEMBERS - 1, False, False), (scopes.PEEL_MIN_MEMBERS, False, True),
    (scopes.PEEL_MIN_MEMBERS + 1, False, True), (scopes.PEEL_MIN_MEMBERS, True, False), (3, True, False),
])
def test_the_array_pass_runs_from_peel_min_members_when_no_ordering_is_given(n, given, levels):
    """Which pass assigns (a spy on the array pass): arrays from PEEL_MIN_MEMBERS members of C(F) on,
    unless the caller gives its ordering; the modes and candidates are the same either way."""
    scope = read_scope(_star(n), ["r"])
    assert len(scope.members) == n
    event = Event("delete", ("r",))
    ordering = (list(scope.members), frozenset()) if given else None  # "k" < "r" < "s…": parents first
    with mock.patch.object(cands, "_assign_levels", wraps=cands._assign_levels) as spy:
        got = assign(DEFAULT, scope, event, None, ordering)
    assert spy.called is levels
    assert dict(got.modes) == {f"s{k:05d}": "regen" for k in range(n - 1)}
    assert [c.id for c in got.candidates] == sorted(got.modes) and all(c.executable for c in got.candidates)


@pytest.mark.parametrize("calls,mode", [(20, "recompute"), (21, "remove"), (20.5, "remove"), (True, "recompute"),
                                        ("99", "recompute"), (0, "recompute")])
@pytest.mark.parametrize("name,patch", list(_passes()))
def test_a_rules_metadata_threshold_from_both_sides(calls, mode, name, patch):
    arts = {"r": Artifact("r", "record", None, 1, {"text": "r."}),
            "c": Artifact("c", "cache", None, 1, {"o": 1}, {"transform": "texts", "calls": calls})}
    snap = Snapshot(arts, (Edge("r", "c"),))
    scope = read_scope(snap, ["r"])
    with patch:
        got = assign(TOOL, scope, Event("delete", ("r",)))
    assert got.modes == {"c": mode}


def test_a_mode_without_an_operator_is_named_and_not_executable():
    snap, _ = _worked()
    scope = read_scope(snap, ["r"])
    full = operators_for(DEFAULT)
    only_regen = OperatorRegistry()
    only_regen.register("regen", full.find("regen", "summary", None), kind="summary")
    got = assign(DEFAULT, scope, Event("delete", ("r",)), only_regen)
    by = {c.id: c for c in got.candidates}
    assert by["c2"].reason == "no operator registered for mode recompute" and by["c2"].operator == ""
    assert by["n1"].reason == "no operator registered for mode param"
    assert by["p1"].reason == "requires removed descendant s3"  # the prerequisite rule comes first
    assert by["s1"].executable and by["s1"].operator == full.find("regen", "summary", None).name


def test_an_operators_check_is_the_reason_of_an_otherwise_executable_candidate():
    # a cache whose recorded call cannot be replayed (no transform): the replay operator's check says why
    arts = {"r": Artifact("r", "record", None, 1, {"text": "r."}),
            "c": Artifact("c", "cache", None, 1, {"o": 1}, {"age_days": 0})}
    scope = read_scope(Snapshot(arts, (Edge("r", "c"),)), ["r"])
    got = assign(DEFAULT, scope, Event("delete", ("r",)))
    (c,) = got.candidates
    op = operators_for(DEFAULT).find("recompute", "cache", None)
    assert c.reason == (op.check(arts["c"]) or "") and c.reason
    assert c.executable is False


def test_requirement_edges_keep_prerequisites_that_are_candidates():
    qs = [Candidate("a", "summary", None, "regen", "op", (), True, 1.0, 1.0),
          Candidate("b", "summary", None, "regen", "op", ("a", "gone"), True, 1.0, 1.0),
          Candidate("c", "summary", None, "regen", "op", ("b", "a"), False, 1.0, 1.0)]
    assert requirement_edges(qs) == [("a", "b"), ("b", "c"), ("a", "c")]
    assert requirement_edges([]) == []
    assert qs[1].as_dict() == {"id": "b", "kind": "summary", "arch": None, "mode": "regen", "operator": "op",
                               "prerequisites": ["a", "gone"], "executable": True, "value": 1.0, "cost": 1.0,
                               "reason": ""}
