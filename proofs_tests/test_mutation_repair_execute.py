"""Systematic tests of ``memsteward.repair.execute`` (issue 33): each function's branches with
values worked by hand from its docstring — what publication erases for every event kind, the
root successors Δ supplies, how a candidate's exceptions become step failures, which successors
are storable, how migrate interfaces merge, what a candidate's context holds, and the statuses
and details the executed steps record (a failed prerequisite blocks, a passed deadline fails).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from memsteward.errors import InputError, StoreError
from memsteward.policy.loader import load_policy
from memsteward.repair import execute as ex
from memsteward.repair.artifacts import Artifact, Snapshot
from memsteward.repair.candidates import Candidate
from memsteward.repair.closure import Selection
from memsteward.repair.events import Event
from memsteward.repair.operators import OperatorError, Successor
from memsteward.repair.plan import TransitionPlan


def plan_of(event: Event, cascade: tuple[str, ...], roots: dict[str, str], base: dict[str, int],
            candidates: tuple[Candidate, ...] = ()) -> TransitionPlan:
    return TransitionPlan(event=event, selector="mincut", tradeoff=0.3, budget=None, cascade=cascade,
                          descendants=tuple(i for i in cascade if i not in event.roots), barrier=cascade,
                          modes={}, candidates=candidates, requirements=(),
                          selection=Selection(frozenset(), Fraction(0), "mincut/networkx", True),
                          order=(), base_versions=base, roots=roots)


# --------------------------------------------------------------------------- erasure_targets


def test_a_delete_erases_its_roots_and_every_unrepublished_version_of_the_cascade():
    ev = Event("delete", ("r1", "r2"))
    plan = plan_of(ev, ("a", "b", "c", "r1", "r2"), {"r1": "erased", "r2": "erased"},
                   {"a": 3, "b": 2, "c": 1, "r1": 1, "r2": 4})
    erase, scrub, tomb = ex.erasure_targets(plan, frozenset({"a"}))
    assert erase == ["r1", "r2"]
    assert scrub == {"a": 3, "b": None, "c": None}  # a republished: its versions up to the base; others: all
    assert tomb == ["r1", "r2"]
    erase, scrub, tomb = ex.erasure_targets(plan, frozenset())
    assert scrub == {"a": None, "b": None, "c": None}


def test_a_privacy_correction_erases_what_was_built_from_the_old_content_and_keeps_the_replacement():
    ev = Event("correct", ("r1", "r2"), (Artifact("r1", "record"),), privacy=True)
    plan = plan_of(ev, ("a", "b", "r1", "r2"), {"r1": "replaced", "r2": "withdrawn"},
                   {"a": 2, "b": 5, "r1": 7, "r2": 1})
    erase, scrub, tomb = ex.erasure_targets(plan, frozenset({"b"}))
    assert erase == []  # nothing is erased outright: r1 is replaced, r2 withdrawn
    assert scrub == {"a": None, "b": 5, "r1": 7, "r2": None}
    assert tomb == ["r1", "r2"]


@pytest.mark.parametrize("event", [
    Event("correct", ("r1",), (Artifact("r1", "record"),)),
    Event("migrate", ("r1",), interfaces={"r1": {"tools": {}}}),
    Event("migrate", ("r1",), interfaces={"r1": {"tools": {}}}, privacy=True),
])
def test_a_plain_correction_and_a_migration_erase_nothing(event):
    action = "replaced" if event.type == "correct" else "interface-updated"
    plan = plan_of(event, ("a", "r1"), {"r1": action}, {"a": 1, "r1": 1})
    assert ex.erasure_targets(plan, frozenset()) == ([], {}, [])
    assert ex.erasure_targets(plan, frozenset({"a"})) == ([], {}, [])


# --------------------------------------------------------------------------- root successors


def test_root_successors_are_the_replacements_or_the_migrated_interfaces():
    snap = Snapshot({"r": Artifact("r", "record", None, 4, {"old": 1}, {"m": 1}),
                     "s": Artifact("s", "record", "x", 2, "c", {})}, ())
    rep = Artifact("r", "record", None, 1, {"new": 1})
    assert ex.root_successors(Event("correct", ("r",), (rep,)), snap) == {"r": rep}
    assert ex.root_successors(Event("correct", ("r", "s"), (rep,)), snap) == {"r": rep}
    got = ex.root_successors(Event("migrate", ("r", "s"), interfaces={"r": {"tools": {"t": {}}}}), snap)
    assert got == {"r": Artifact("r", "record", None, 1, {"tools": {"t": {}}}, {"m": 1})}
    assert got["r"].meta is not snap.artifacts["r"].meta  # a copy of the metadata
    assert ex.root_successors(Event("delete", ("r",)), snap) == {}


# --------------------------------------------------------------------------- guarded, _checked


def test_guarded_turns_a_candidates_exceptions_into_step_failures_and_lets_store_errors_through():
    assert ex.guarded("operator", lambda: 42) == 42
    with pytest.raises(ex.StepFailure) as err:
        ex.guarded("operator", lambda: (_ for _ in ()).throw(OperatorError("no support")))
    assert (err.value.detail, err.value.stage) == ("no support", "operator")
    with pytest.raises(ex.StepFailure) as err:
        ex.guarded("oracle", lambda: {}["missing"])
    assert (err.value.detail, err.value.stage) == ("oracle raised KeyError: 'missing'", "oracle")
    long = "x" * 1000
    with pytest.raises(ex.StepFailure) as err:
        ex.guarded("context", lambda: (_ for _ in ()).throw(OperatorError(long)))
    assert err.value.detail == "x" * ex.MAX_DETAIL_CHARS
    with pytest.raises(ex.StepFailure) as err:
        ex.guarded("context", lambda: (_ for _ in ()).throw(ValueError(long)))
    assert err.value.detail == "context raised " + ("ValueError: " + long)[:ex.MAX_DETAIL_CHARS]
    with pytest.raises(ex.StepFailure) as err:
        ex.guarded("operator", lambda: (_ for _ in ()).throw(OperatorError("bell\x07 and\x1b[2J")))
    assert "\x07" not in err.value.detail and "\x1b" not in err.value.detail
    for exc in (StoreError("disk"), ex.StepFailure("inner", "oracle")):
        with pytest.raises(type(exc)):
            ex.guarded("operator", lambda exc=exc: (_ for _ in ()).throw(exc))
    import sqlite3
    with pytest.raises(sqlite3.OperationalError):
        ex.guarded("operator", lambda: (_ for _ in ()).throw(sqlite3.OperationalError("locked")))


@pytest.mark.parametrize("n", [0, 1, 299, 300, 301, 1000])
def test_a_step_failures_detail_is_cut_at_300_characters_after_escaping(n):
    """The recorded detail is at most 300 characters (written out here, not read from the module):
    an OperatorError's message as it is, any other exception as "<stage> raised <Type>: <message>" with
    the cut on "<Type>: <message>"; control characters are escaped first, so the cut counts escapes."""
    msg = "".join("abcdefghij"[k % 10] for k in range(n))
    with pytest.raises(ex.StepFailure) as err:
        ex.guarded("operator", lambda: (_ for _ in ()).throw(OperatorError(msg)))
    assert err.value.detail == msg[:300] and len(err.value.detail) == min(n, 300)
    assert err.value.stage == "operator"
    with pytest.raises(ex.StepFailure) as err:
        ex.guarded("oracle", lambda: (_ for _ in ()).throw(ValueError(msg)))
    assert err.value.detail == "oracle raised " + ("ValueError: " + msg)[:300]
    assert len(err.value.detail) == len("oracle raised ") + min(n + len("ValueError: "), 300)
    shown = "x" + "\\x1b" * (n // 4 + 1)  # each ESC is shown as the four characters \x1b: the cut splits one
    with pytest.raises(ex.StepFailure) as err:
        ex.guarded("context", lambda: (_ for _ in ()).throw(OperatorError("x" + "\x1b" * (n // 4 + 1))))
    assert err.value.detail == shown[:300] and len(err.value.detail) == min(len(shown), 300)


def test_a_long_operator_failure_is_recorded_cut_at_300_characters(tmp_path):
    """Through run_event and the store: the failed step's report holds the cut detail."""

    class Long(Scripted):
        def __call__(self, artifact: Artifact, ctx) -> Successor:
            if artifact.id == "b":
                raise OperatorError("why " * 200)
            return super().__call__(artifact, ctx)

    policy, store = _chain(tmp_path)
    try:
        plan = ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(Long({})))
        assert _steps(plan)["b"] == ("failed", "operator", ("why " * 75)[:300])
        status, _version, report = store.steps(store.event_ids()[-1])["b"]
        assert (status, report) == ("failed", [{"oracle": "operator", "passed": False, "detail": ("why " * 75)[:300]}])
    finally:
        store.close()


@pytest.mark.parametrize("content,meta,problem", [
    ("text", {}, None),
    ({"a": [1, 2.5, None, True]}, {"k": "v"}, None),
    ({"a": {1, 2}}, {}, "successor content is not JSON"),
    ("ok", {"f": object()}, "successor meta is not JSON"),
    ({"a": math.nan}, {}, "successor content is not JSON"),
    ("ok", {"v": math.inf}, "successor meta is not JSON"),
    ({"big": 2**80}, {}, "successor content"),
    ("ok", {"s": "\ud800"}, "successor meta"),
])
def test_checked_accepts_only_storable_json(content, meta, problem):
    s = Successor(content, meta)
    if problem is None:
        assert ex._checked(s) is s
        return
    with pytest.raises(OperatorError) as err:
        ex._checked(s)
    assert str(err.value).startswith(problem)
    assert "  " not in str(err.value)


def test_checked_names_the_field_of_a_value_too_deep():
    deep: dict = {}
    cur = deep
    for _ in range(200):
        cur["d"] = {}
        cur = cur["d"]
    with pytest.raises(OperatorError, match="successor content .*nests deeper"):
        ex._checked(Successor(deep, {}))


# --------------------------------------------------------------------------- interfaces and contexts


def test_interface_merges_the_migrated_roots_and_interface_shaped_parents_in_parent_order():
    ev = Event("migrate", ("r1", "r2"), interfaces={"r1": {"tools": {"a": 1}, "renames": {"x": "y"}},
                                                     "r2": {"tools": {"a": 2, "b": 3}, "arg_renames": {"p": "q"}}})
    avail = {"spec": Artifact("spec", "record", content={"tools": {"c": 4}, "renames": {"x": "z"}}),
             "text": Artifact("text", "record", content={"text": "not an interface"}),
             "plain": Artifact("plain", "record", content="a string")}
    got = ex._interface(["r1", "spec", "text", "plain", "r2", "absent"], ev, avail)
    assert got == {"tools": {"a": 2, "b": 3, "c": 4}, "renames": {"x": "z"}, "arg_renames": {"p": "q"}}
    assert ex._interface([], ev, avail) == {"tools": {}, "renames": {}, "arg_renames": {}}
    # outside a migration the event's interfaces are not read; stored interfaces still are
    other = Event("delete", ("r1",), interfaces={"r1": {"tools": {"a": 1}}})
    assert ex._interface(["r1", "spec"], other, avail) == {"tools": {"c": 4}, "renames": {"x": "z"}, "arg_renames": {}}
    # a migrated root's stored content is not read when the event gives its interface
    avail["r1"] = Artifact("r1", "record", content={"tools": {"old": 0}})
    assert ex._interface(["r1"], ev, avail)["tools"] == {"a": 1}


def test_policy_document_lists_plugins_only_when_the_policy_names_some():
    policy = load_policy("policies/default.yaml")
    doc = ex.policy_document(policy)
    assert ex.PLUGINS_KEY not in doc
    assert ex.policy_of_document(doc) == policy
    assert ex.policy_of_document({**doc, ex.PLUGINS_KEY: [{"name": "x"}]}) == policy


def test_check_inputs_names_the_bad_replacement_interface_or_stored_artifact():
    from memsteward.store import Store

    store = Store()
    try:
        snap = Snapshot({"r": Artifact("r", "record", content={"text": "a."}),
                         "s": Artifact("s", "summary", content="x"),
                         "p": Artifact("p", "record", content={"text": "p."})}, ())
        store.import_snapshot(snap)
        ok = plan_of(Event("delete", ("r",)), ("r", "s"), {"r": "erased"}, {"r": 1, "s": 1})
        ex.check_inputs(store, ok)
        bad_rep = Event("correct", ("r",), (Artifact("r", "record", content={"t": "\ud800"}),))
        with pytest.raises(InputError) as err:
            ex.check_inputs(store, plan_of(bad_rep, ("r",), {"r": "replaced"}, {"r": 1}))
        assert err.value.field.startswith("replacements[0].") and "replacement 'r'" in str(err.value)
        bad_iface = Event("migrate", ("r",), interfaces={"r": {"tools": "not a mapping"}})
        with pytest.raises(InputError) as err:
            ex.check_inputs(store, plan_of(bad_iface, ("r",), {"r": "interface-updated"}, {"r": 1}))
        assert "migrate interface of 'r'" in str(err.value) and err.value.field.startswith("interface.r")
    finally:
        store.close()


def test_check_inputs_reads_every_touched_stored_artifact_but_the_roots_and_the_erased():
    from memsteward.repair.artifacts import Edge
    from memsteward.store import Store

    bad = {"goal": 5, "calls": []}  # a chain's goal must be a string: no operator can read it

    def case(**states: str) -> tuple[Store, TransitionPlan]:
        arts = {"r": Artifact("r", "record", None, 1, {"text": "r."}),
                "s": Artifact("s", "skill", "chain", 1, bad, {}, states.get("s", "servable")),
                "p": Artifact("p", "skill", "chain", 1, bad, {}, states.get("p", "servable")),
                "q": Artifact("q", "record", None, 1, {"text": "q."})}
        store = Store()
        store.import_snapshot(Snapshot(arts, (Edge("r", "s"), Edge("p", "s"), Edge("q", "s"))))
        return store, plan_of(Event("delete", ("r",)), ("r", "s"), {"r": "erased"}, {"r": 1, "s": 1})

    store, plan = case()
    try:  # the member s and the outside parent p are both bad: the first by id is named
        with pytest.raises(InputError) as err:
            ex.check_inputs(store, plan)
        assert str(err.value).startswith("stored artifact 'p' has a field no operator can read: ")
        assert err.value.field == "p.content.goal" and err.value.file == store.path
    finally:
        store.close()
    store, plan = case(p="erased")
    try:  # p erased: not read; s (a member) still is
        with pytest.raises(InputError) as err:
            ex.check_inputs(store, plan)
        assert err.value.field == "s.content.goal"
    finally:
        store.close()
    store, plan = case(p="erased", s="erased")
    try:
        ex.check_inputs(store, plan)  # both erased: nothing to read
    finally:
        store.close()
    store, plan = case(p="withdrawn", s="republished")
    try:  # any other state is read
        with pytest.raises(InputError):
            ex.check_inputs(store, plan)
    finally:
        store.close()
    store, _ = case(p="erased")
    try:  # the root's own stored content is never read (erased or replaced by the event)
        ex.check_inputs(store, plan_of(Event("delete", ("s",)), ("s",), {"s": "erased"}, {"s": 1}))
    finally:
        store.close()


def test_check_inputs_reads_no_removed_member_nor_a_parent_only_removed_members_have():
    from memsteward.repair.artifacts import Edge
    from memsteward.store import Store

    bad = {"goal": 5, "calls": []}  # a chain's goal must be a string: no operator can read it
    arts = {"r": Artifact("r", "record", None, 1, {"text": "r."}),
            "s": Artifact("s", "skill", "chain", 1, bad),  # a member
            "p": Artifact("p", "skill", "chain", 1, bad),  # a parent of s alone, outside C(F)
            "k": Artifact("k", "summary", None, 1, "kept summary."),  # a member that is rebuilt
            "q": Artifact("q", "record", None, 1, {"text": "q."})}
    store = Store()
    store.import_snapshot(Snapshot(arts, (Edge("r", "s"), Edge("p", "s"), Edge("r", "k"), Edge("q", "k"))))
    plan = plan_of(Event("delete", ("r",)), ("k", "r", "s"), {"r": "erased"}, {"r": 1, "s": 1, "k": 1})
    try:
        ex.check_inputs(store, plan.replace(modes={"s": "remove", "k": "regen"}))  # s removed: neither read
        with pytest.raises(InputError) as err:  # s rebuilt: both read, p first by id
            ex.check_inputs(store, plan.replace(modes={"s": "param", "k": "regen"}))
        assert err.value.field == "p.content.goal"
        with pytest.raises(InputError) as err:  # a member without a mode is read
            ex.check_inputs(store, plan.replace(modes={"k": "regen"}))
        assert err.value.field == "p.content.goal"
    finally:
        store.close()


# --------------------------------------------------------------------------- resume, end to end

POLICY_TEXT = """version: 1
name: chain-of-summaries
kinds:
  record: {}
  summary: {}
  skill: {architectures: [neural]}
support: {min_retained: 1, min_fraction: 0.0}
modes:
  - when: {kind: summary, support: sufficient}
    mode: regen
  - when: {kind: skill, arch: neural, partitions: true}
    mode: param
  - when: {}
    mode: remove
selection: {tradeoff: 0.0}
validation:
  - mode: regen
    oracles:
      - oracle: schema
        schema: {type: string, minLength: 1}
  - mode: param
    oracles:
      - oracle: schema
        schema: {type: string, minLength: 1}
"""


class Scripted:
    """A regen operator that records each context it is given and does what ``plan`` says per id:
    "ok" (a summary of its inputs' ids), "raise", "nan" (a successor no store can hold), "empty"
    (a successor the schema oracle refuses)."""

    name = "scripted-regen"
    checks_content = False

    def __init__(self, plan: dict[str, str]) -> None:
        self.plan = plan
        self.seen: dict[str, object] = {}

    def check(self, artifact: Artifact) -> str | None:
        return None

    def __call__(self, artifact: Artifact, ctx) -> Successor:
        self.seen[artifact.id] = ctx
        what = self.plan.get(artifact.id, "ok")
        if what == "raise":
            raise RuntimeError(f"boom {artifact.id}")
        if what == "nan":
            return Successor({"x": math.nan}, {})
        if what == "empty":
            return Successor("", {})
        return Successor("from " + ",".join(a.id for a in ctx.inputs), {"by": "scripted"})


def _chain(tmp_path, deadline: str | None = None, merge: bool = False):
    """r → a → b → c (summaries), each also fed by the record k; a delete of r repairs a, b, c.
    Outside C(F), w (withdrawn) also feeds a and kr (republished) feeds b. With ``merge``, m is
    derived from a, b and k (two prerequisites)."""
    from memsteward.policy.loader import load_policy_source
    from memsteward.repair.artifacts import Edge
    from memsteward.store import Store

    text = POLICY_TEXT + (f"repair:\n  event_deadline: {deadline}\n" if deadline else "")
    path = tmp_path / "p.yaml"
    path.write_text(text)
    policy = load_policy_source(str(path)).policy
    arts = {"r": Artifact("r", "record", None, 1, {"text": "old."}), "k": Artifact("k", "record", None, 1, {"text": "k."}),
            "a": Artifact("a", "summary", None, 1, "a."), "b": Artifact("b", "summary", None, 1, "b."),
            "c": Artifact("c", "summary", None, 1, "c."),
            "w": Artifact("w", "record", None, 1, {"text": "w."}, {}, "withdrawn"),
            "kr": Artifact("kr", "record", None, 1, {"text": "kr."}, {}, "republished")}
    edges = (Edge("r", "a"), Edge("k", "a"), Edge("a", "b"), Edge("k", "b"), Edge("b", "c"), Edge("k", "c"),
             Edge("w", "a"), Edge("kr", "b"))
    if merge:
        arts["m"] = Artifact("m", "summary", None, 1, "m.")
        edges += (Edge("a", "m"), Edge("b", "m"), Edge("k", "m"))
    store = Store()
    store.import_snapshot(Snapshot(arts, edges))
    return policy, store


def _registry(op: Scripted):
    from memsteward.repair.operators import OperatorRegistry

    reg = OperatorRegistry()
    reg.register("regen", op, kind="summary")
    reg.register("param", op, kind="skill", arch="neural")
    return reg


def _steps(plan: TransitionPlan) -> dict[str, tuple[str, str, str]]:
    return {s.id: (s.status, s.reports[0]["oracle"] if s.reports else "", s.error) for s in plan.executed}


def test_every_candidate_republished_in_order_with_its_context_and_progress(tmp_path):
    policy, store = _chain(tmp_path)
    op = Scripted({})
    seen: list[tuple[int, int]] = []
    try:
        plan = ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(op),
                            progress=lambda done, total: seen.append((done, total)))
        assert plan.order == ("a", "b", "c") and plan.republished == ("a", "b", "c")
        assert [s.status for s in plan.executed] == ["republished"] * 3
        assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
        assert plan.withdrawn == ("r",) and plan.status == "done"
        ctx_a, ctx_b = op.seen["a"], op.seen["b"]
        assert [x.id for x in ctx_a.inputs] == ["k"] and [x.id for x in ctx_a.forget] == ["r"]
        assert ctx_a.forget[0].content == {"text": "old."}
        assert [x.id for x in ctx_b.inputs] == ["a", "k", "kr"] and [x.id for x in ctx_b.reference] == ["k", "kr"]
        assert ctx_b.inputs[0].content == "from k" and ctx_b.inputs[0].state == "staged"
        assert ctx_b.forget == () and ctx_b.previous.id == "b" and ctx_b.previous_valid is True
        assert ctx_a.event_type == "delete" and ctx_a.interface == {"tools": {}, "renames": {}, "arg_renames": {}}
        cur = store.artifacts_of(["a", "b", "c"])
        assert cur["c"].content == "from b,k" and cur["c"].state == "republished" and cur["c"].version == 2
        assert cur["c"].meta == {"by": "scripted"}
    finally:
        store.close()


@pytest.mark.parametrize("what,stage,detail", [
    ("raise", "operator", "operator raised RuntimeError: boom a"),
    ("nan", "operator", "successor content is not JSON"),
    ("empty", "schema", None),
])
def test_a_failed_candidate_blocks_its_dependents_by_name(tmp_path, what, stage, detail):
    policy, store = _chain(tmp_path)
    try:
        plan = ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(Scripted({"a": what})))
        steps = _steps(plan)
        assert steps["a"][0] == "failed" and steps["a"][1] == stage
        if detail:
            assert steps["a"][2].startswith(detail)
        assert steps["b"] == ("blocked", "prerequisites", "prerequisite a not validated")
        assert steps["c"] == ("blocked", "prerequisites", "prerequisite b not validated")
        assert plan.republished == () and set(plan.withdrawn) == {"a", "b", "c", "r"}
        states = store.states()
        assert all(states[i][0] == "withdrawn" for i in "abc")
    finally:
        store.close()


def test_a_failure_in_the_middle_keeps_what_came_before(tmp_path):
    policy, store = _chain(tmp_path)
    try:
        plan = ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(Scripted({"b": "raise"})))
        assert _steps(plan)["a"][0] == "republished"
        assert _steps(plan)["b"][:2] == ("failed", "operator")
        assert _steps(plan)["c"] == ("blocked", "prerequisites", "prerequisite b not validated")
        assert plan.republished == ("a",) and plan.withdrawn == ("b", "c", "r")
    finally:
        store.close()


def test_a_passed_deadline_fails_every_candidate_even_a_blocked_one(tmp_path):
    policy, store = _chain(tmp_path, "1.0e-9")
    try:
        plan = ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(Scripted({})))
        steps = _steps(plan)
        assert {i: s[:2] for i, s in steps.items()} == {i: ("failed", "deadline") for i in "abc"}
        assert "repair.event_deadline = 1e-09 s" in steps["b"][2]
    finally:
        store.close()


def test_a_correction_gives_its_replacement_at_the_version_the_barrier_stored(tmp_path):
    policy, store = _chain(tmp_path)
    op = Scripted({})
    try:
        rep = Artifact("r", "record", None, 1, {"text": "new."})
        plan = ex.run_event(store, policy, Event("correct", ("r",), (rep,)), operators=_registry(op))
        ctx_a = op.seen["a"]
        assert [x.id for x in ctx_a.inputs] == ["k", "r"] and ctx_a.forget == ()
        r_in = ctx_a.inputs[1]
        assert r_in.content == {"text": "new."} and r_in.version == 2  # the barrier's version, not Δ's 1
        assert plan.roots == {"r": "replaced"} and plan.withdrawn == ("r",)  # roots are always listed
        assert plan.republished == ("a", "b", "c")
    finally:
        store.close()


def test_no_action_changes_nothing_and_a_dry_run_leaves_the_store_as_it_was(tmp_path):
    policy, store = _chain(tmp_path)
    try:
        before = store.states()
        plan = ex.run_event(store, policy, Event("delete", ("r",)), "no_action", operators=_registry(Scripted({})))
        assert (plan.status, plan.withdrawn, plan.republished, plan.executed) == ("done", (), (), ())
        assert store.states() == before
        dry = ex.dry_run(store, policy, Event("delete", ("r",)), operators=_registry(Scripted({})))
        assert dry.republished == ("a", "b", "c") and store.states() == before
        assert ex.dry_run(store, policy, Event("delete", ("r",)), "no_action").withdrawn == ()
    finally:
        store.close()


class Interrupting(Scripted):
    """Stops the run (as Ctrl-C does) when it reaches ``stop``."""

    def __init__(self, stop: str) -> None:
        super().__init__({})
        self.stop = stop

    def __call__(self, artifact: Artifact, ctx) -> Successor:
        if artifact.id == self.stop:
            raise KeyboardInterrupt
        return super().__call__(artifact, ctx)


def test_recover_finishes_an_interrupted_event_from_the_steps_it_recorded(tmp_path):
    policy, store = _chain(tmp_path)
    try:
        assert ex.recover(store) is None  # nothing to do
        with pytest.raises(KeyboardInterrupt):
            ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(Interrupting("b")))
        assert store.unfinished_event() is not None
        with pytest.raises(InputError, match="run `memsteward recover` first"):
            ex.run_event(store, policy, Event("delete", ("k",)), operators=_registry(Scripted({})))
        with pytest.raises(InputError, match="run `memsteward recover` first"):
            ex.dry_run(store, policy, Event("delete", ("k",)))
        op = Scripted({})
        seen: list[tuple[int, int]] = []
        plan = ex.recover(store, _registry(op), progress=lambda d, t: seen.append((d, t)))
        assert plan is not None and plan.republished == ("a", "b", "c") and plan.status == "done"
        assert set(op.seen) == {"b", "c"}  # a's outcome was recorded before the interruption: not run again
        assert seen == [(1, 3), (2, 3), (3, 3)]
        assert [x.id for x in op.seen["b"].inputs] == ["a", "k", "kr"]  # a's staged successor, read back from the store
        assert op.seen["b"].inputs[0].content == "from k"
        assert store.unfinished_event() is None and ex.recover(store) is None
    finally:
        store.close()


def test_scope_unchanged_sees_new_versions_and_new_members_but_not_writes_elsewhere(tmp_path):
    from memsteward.repair.artifacts import Edge
    from memsteward.repair.plan import compute_plan

    policy, store = _chain(tmp_path)
    try:
        snap = store.snapshot()
        plan = compute_plan(policy, snap, Event("delete", ("r",)))
        check = ex.scope_unchanged(policy, plan)
        assert check(snap) is True
        arts = dict(snap.artifacts)
        elsewhere = Snapshot({**arts, "z": Artifact("z", "record", None, 1, {"text": "z."})},
                             snap.edges + (Edge("k", "z"),))
        assert check(elsewhere) is True  # a write outside C(F)
        newer = Snapshot({**arts, "b": arts["b"]._replace(version=2)}, snap.edges)
        assert check(newer) is False  # a new version of a member
        grown = Snapshot({**arts, "d": Artifact("d", "summary", None, 1, "d.")}, snap.edges + (Edge("c", "d"),))
        assert check(grown) is False  # a new derivation from a member
        parent = Snapshot({**arts, "z": Artifact("z", "record", None, 1, {"text": "z."})},
                          snap.edges + (Edge("z", "b"),))
        assert check(parent) is True  # a new influence parent outside C(F): same members, same versions
    finally:
        store.close()


def test_a_plan_whose_scope_changed_is_refused_at_the_barrier_and_planned_again(tmp_path):
    from memsteward.errors import StoreBusy
    from memsteward.repair.plan import compute_plan

    policy, store = _chain(tmp_path)
    try:
        generation = store.generation()
        plan = compute_plan(policy, store, Event("delete", ("r",)))
        store.record({"id": "d", "kind": "summary", "content": "d."}, ["k"])  # an agent write outside C(F)
        ok = ex.execute(store, policy, plan, _registry(Scripted({})), None, generation)  # a write outside C(F)
        assert ok.republished == ("a", "b", "c")
        policy2, store2 = _chain(tmp_path)
        try:
            generation = store2.generation()
            plan = compute_plan(policy2, store2, Event("delete", ("r",)))
            store2.record({"id": "d", "kind": "summary", "content": "d."}, ["c"])  # a derivation from a member
            with pytest.raises(StoreBusy):
                ex.execute(store2, policy2, plan, _registry(Scripted({})), None, generation)
            assert store2.unfinished_event() is None  # nothing withdrawn
            again = ex.run_event(store2, policy2, Event("delete", ("r",)), operators=_registry(Scripted({})))
            assert again.cascade == ("a", "b", "c", "d", "r")
        finally:
            store2.close()
    finally:
        store.close()


def test_run_event_plans_again_when_a_write_changes_the_scope_between_plan_and_barrier(tmp_path, monkeypatch):
    """A write deriving from a member lands after run_event planned and before its barrier: the barrier
    refuses (StoreBusy), and run_event, well within MEMSTEWARD_WRITE_WAIT, plans again and runs the
    event with the new artifact in its cascade (seed-5 survivor execute.py:146: ``>=`` to ``<=`` gave up
    at once)."""
    from memsteward.errors import StoreBusy

    policy, store = _chain(tmp_path)
    plans: list[tuple[str, ...]] = []  # the cascade of each plan run_event made
    busy: list[int] = []  # the number of plans made when the barrier refused one
    real, real_execute = ex.compute_plan, ex.execute

    def plan_then_write(*args, **kwargs):
        plan = real(*args, **kwargs)
        plans.append(plan.cascade)
        if len(plans) == 1:  # another writer, between this plan and its barrier
            store.record({"id": "d", "kind": "summary", "content": "d."}, ["c"])
        return plan

    def execute(*args, **kwargs):
        try:
            return real_execute(*args, **kwargs)
        except StoreBusy:
            busy.append(len(plans))
            raise

    monkeypatch.setenv("MEMSTEWARD_WRITE_WAIT", "30")
    monkeypatch.setattr(ex, "compute_plan", plan_then_write)
    monkeypatch.setattr(ex, "execute", execute)
    try:
        done = ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(Scripted({})))
        assert busy == [1] and plans == [("a", "b", "c", "r"), ("a", "b", "c", "d", "r")]
        assert done.cascade == ("a", "b", "c", "d", "r") and done.status == "done"
    finally:
        store.close()


def test_a_recovered_candidate_whose_operator_is_gone_fails_and_blocks_its_dependents(tmp_path):
    from memsteward.repair.operators import OperatorRegistry

    policy, store = _chain(tmp_path)
    try:
        with pytest.raises(KeyboardInterrupt):
            ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(Interrupting("b")))
        plan = ex.recover(store, OperatorRegistry())
        assert plan is not None
        steps = _steps(plan)
        assert steps["a"][0] == "republished"
        assert steps["b"] == ("failed", "operator", "no operator for this candidate")
        assert steps["c"] == ("blocked", "prerequisites", "prerequisite b not validated")
    finally:
        store.close()


def _ray_started() -> bool:
    import sys

    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


def test_the_ray_executor_is_refused_for_an_in_memory_store_before_anything_is_written(tmp_path):
    policy, store = _chain(tmp_path)
    ray_before = _ray_started()  # another test of the same session may have started Ray already
    try:
        assert store.locator() is None
        before = store.states()
        with pytest.raises(InputError, match="the ray executor needs a store its workers can open") as err:
            ex.run_event(store, policy, Event("delete", ("r",)), executor="ray")
        assert err.value.field == "executor"
        assert store.states() == before and store.unfinished_event() is None
        assert _ray_started() == ray_before
        assert ex.recover(store, executor="ray") is None  # nothing to finish: no refusal
        with pytest.raises(KeyboardInterrupt):
            ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(Interrupting("b")))
        with pytest.raises(InputError, match="the ray executor needs a store its workers can open"):
            ex.recover(store, _registry(Scripted({})), executor="ray")
        assert store.unfinished_event() is not None
        assert _ray_started() == ray_before  # refused before the executor was reached (no Ray instance joined or started)
        assert ex.recover(store, _registry(Scripted({}))).republished == ("a", "b", "c")
    finally:
        store.close()


def test_a_candidate_missing_two_prerequisites_names_the_first(tmp_path):
    policy, store = _chain(tmp_path, merge=True)
    try:
        plan = ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(Scripted({"a": "raise"})))
        assert plan.candidate("m").prerequisites == ("a", "b")
        steps = _steps(plan)
        assert steps["m"] == ("blocked", "prerequisites", "prerequisite a not validated")
        assert steps["b"] == ("blocked", "prerequisites", "prerequisite a not validated")
    finally:
        store.close()


def test_an_oracle_that_raises_fails_its_candidate_and_the_event_completes(tmp_path):
    from memsteward.repair.oracles import ORACLES

    def broken(spec, x):
        raise RuntimeError("oracle bug")

    policy, store = _chain(tmp_path, merge=True)
    try:
        plan = ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(Scripted({})),
                            oracles={**ORACLES, "schema": broken})
        steps = _steps(plan)
        assert steps["a"] == ("failed", "oracle", "oracle raised RuntimeError: oracle bug")
        assert steps["b"][:2] == steps["c"][:2] == steps["m"][:2] == ("blocked", "prerequisites")
        assert plan.status == "done" and store.unfinished_event() is None
        assert store.version_of("a", 2) is not None  # the successor was staged before its oracle ran
    finally:
        store.close()


def test_a_param_candidate_forgets_a_repaired_parent_it_does_not_consume(tmp_path):
    """n, a neural skill fed by r (the root), a (a repaired summary) and k: param mode, no
    prerequisites; its context gets k as input and reference, and forgets r and a at their old
    versions, a's new successor notwithstanding (it is repaired first: a precedes n by id)."""
    from memsteward.repair.artifacts import Edge

    policy, store = _chain(tmp_path)
    try:
        store.import_snapshot(Snapshot({"n": Artifact("n", "skill", "neural", 1, None)},
                                       (Edge("r", "n"), Edge("a", "n"), Edge("k", "n"))))
        op = Scripted({})
        plan = ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(op))
        assert plan.modes["n"] == "param" and plan.candidate("n").prerequisites == ()
        assert plan.order.index("a") < plan.order.index("n")
        ctx = op.seen["n"]
        assert [x.id for x in ctx.inputs] == ["k"] and [x.id for x in ctx.reference] == ["k"]
        assert [(x.id, x.version, x.content) for x in ctx.forget] == [("a", 1, "a."), ("r", 1, {"text": "old."})]
        assert "n" in plan.republished
    finally:
        store.close()


def test_recover_keeps_the_successor_staged_before_an_interruption(tmp_path, monkeypatch):
    """An interruption between b's staging and its validation leaves b ``staged`` with its version:
    recover validates that staged successor and publishes it, without calling b's operator again
    (seed-5 survivor execute.py:327, ``st == "staged"`` → ``st < "staged"``, built b anew)."""
    policy, store = _chain(tmp_path)
    real = ex.validate

    def stop_at_b(specs, inp, oracles):  # noqa: ANN001, ANN202 — the engine's own validation, interrupted once at b
        if inp.successor is not None and inp.artifact.id == "b":
            monkeypatch.setattr(ex, "validate", real)
            raise KeyboardInterrupt
        return real(specs, inp, oracles)

    monkeypatch.setattr(ex, "validate", stop_at_b)
    try:
        first = Scripted({})
        with pytest.raises(KeyboardInterrupt):
            ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(first))
        event_id = store.unfinished_event()[0]
        status, version, _ = store.steps(event_id)["b"]
        assert status == "staged" and version is not None and "b" in first.seen
        staged = store.version_of("b", version)
        again = Scripted({})
        plan = ex.recover(store, _registry(again))
        assert "b" not in again.seen and set(again.seen) == {"c"}
        assert _steps(plan)["b"][0] == "republished"
        assert store.get("b").version == version and store.get("b").content == staged.content
    finally:
        store.close()


class FailThenInterrupt(Scripted):
    """a: a successor the schema oracle refuses (staged, then failed); e: an interruption."""

    def __call__(self, artifact: Artifact, ctx) -> Successor:
        if artifact.id == "e":
            raise KeyboardInterrupt
        if artifact.id == "a":
            return Successor("", {})
        return super().__call__(artifact, ctx)


def test_a_staged_candidate_that_failed_before_an_interruption_still_blocks_its_dependents(tmp_path):
    """recover reads a's recorded outcome (failed, with the version it staged) and must not hand
    that staged successor to b: b stays blocked, as it would have been without the interruption."""
    from memsteward.repair.artifacts import Edge

    policy, store = _chain(tmp_path)
    try:
        store.import_snapshot(Snapshot({"e": Artifact("e", "summary", None, 1, "e.")}, (Edge("r", "e"), Edge("k", "e"))))
        with pytest.raises(KeyboardInterrupt):
            ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(FailThenInterrupt({})))
        (event_id, *_), steps = store.unfinished_event(), None
        steps = store.steps(event_id)
        assert steps["a"][0] == "failed" and steps["a"][1] is not None  # staged, then refused
        op = Scripted({})
        plan = ex.recover(store, _registry(op))
        got = _steps(plan)
        assert got["a"][:2] == ("failed", "schema")
        assert got["b"] == ("blocked", "prerequisites", "prerequisite a not validated")
        assert got["c"] == ("blocked", "prerequisites", "prerequisite b not validated")
        assert got["e"][0] == "republished" and set(op.seen) == {"e"}
    finally:
        store.close()


class _Stop(BaseException):
    """Thrown out of a progress callback: the run stops there, its outcomes so far recorded."""


@pytest.mark.parametrize("n, stop", [(3, 3), (3, 1), (300, 300), (300, 299), (300, 1)])
def test_resume_reads_the_neighbourhood_only_with_candidates_left_to_run(tmp_path, n, stop):
    """r and k feed n summaries; a delete of r is stopped after ``stop`` outcomes, then recovered.
    With every outcome recorded (stop == n) recover runs nothing and does not read C(F)'s influence
    parents (SQLite's trace: no parent-edge query); with any left it reads them once. 300 candidates:
    more than the 256 small ints Python caches, so a count compared by identity is seen too."""
    from memsteward.policy.loader import load_policy_source
    from memsteward.repair.artifacts import Edge
    from memsteward.store import Store

    (tmp_path / "p.yaml").write_text(POLICY_TEXT)
    policy = load_policy_source(str(tmp_path / "p.yaml")).policy
    ids = [f"a{j:03d}" for j in range(n)]
    arts = {"r": Artifact("r", "record", None, 1, {"text": "old."}), "k": Artifact("k", "record", None, 1, {"text": "k."})}
    arts.update((i, Artifact(i, "summary", None, 1, f"{i}.")) for i in ids)
    store = Store()
    try:
        store.import_snapshot(Snapshot(arts, tuple(e for i in ids for e in (Edge("r", i), Edge("k", i)))))

        def progress(done: int, total: int) -> None:
            if done == stop:
                raise _Stop

        with pytest.raises(_Stop):
            ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(Scripted({})), progress=progress)
        op = Scripted({})
        issued: list[str] = []
        store.conn.set_trace_callback(issued.append)
        plan = ex.recover(store, _registry(op))
        store.conn.set_trace_callback(None)
        assert plan is not None and plan.republished == tuple(ids)
        assert sorted(op.seen) == ids[stop:]
        assert sum("ORDER BY e.dst, e.src" in q for q in issued) == (0 if stop == n else 1)
    finally:
        store.close()


@pytest.mark.parametrize("batch, committed", [
    (1, [0, 1, 2, 2, 2, 5, 6]),
    (2, [0, 0, 2, 2, 2, 5, 5]),
    (3, [0, 0, 0, 0, 0, 5, 5]),
    (4, [0, 0, 0, 0, 0, 5, 5]),
    (6, [0, 0, 0, 0, 0, 0, 6]),  # the 6th outcome (z's) fills it: b and c count one each
    (64, [0, 0, 0, 0, 0, 0, 0]),
])
def test_sequential_outcomes_are_committed_once_a_batch_is_queued(tmp_path, monkeypatch, batch, committed):
    """r feeds a and x; a feeds b and c; x → y → z → w (each also fed by k); a's operator raises. Plan
    order a, x, b, c, y, z, w: a fails, b and c are blocked (no operator run), the chain is republished.
    The outcomes committed at each progress call (the store read in the callback), worked by hand: the
    queue is committed after an operator's outcome (a, x, y, z, w) once it holds ``batch`` outcomes,
    blocked ones counted, and its remainder before the publication (e.g. batch 1: b's and c's blocked
    outcomes wait for y's)."""
    from memsteward.policy.loader import load_policy_source
    from memsteward.repair.artifacts import Edge
    from memsteward.store import Store

    monkeypatch.setattr(ex, "STEP_BATCH", batch)
    (tmp_path / "p.yaml").write_text(POLICY_TEXT)
    policy = load_policy_source(str(tmp_path / "p.yaml")).policy
    arts = {"r": Artifact("r", "record", None, 1, {"text": "old."}), "k": Artifact("k", "record", None, 1, {"text": "k."})}
    arts.update((i, Artifact(i, "summary", None, 1, f"{i}.")) for i in "abcxyzw")
    edges = [Edge("k", i) for i in "abcxyzw"]
    edges += [Edge("r", "a"), Edge("a", "b"), Edge("a", "c"), Edge("r", "x"), Edge("x", "y"), Edge("y", "z"), Edge("z", "w")]
    store = Store()
    try:
        store.import_snapshot(Snapshot(arts, tuple(edges)))
        seen: list[int] = []

        def progress(done: int, total: int) -> None:
            if done:
                found = store.unfinished_event()
                assert found is not None
                seen.append(sum(st[0] != "pending" for st in store.steps(found[0]).values()))

        plan = ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(Scripted({"a": "raise"})),
                            progress=progress)
        assert plan.order == ("a", "x", "b", "c", "y", "z", "w")
        assert [(s.id, s.status) for s in plan.executed] == [
            ("a", "failed"), ("x", "republished"), ("b", "blocked"), ("c", "blocked"), ("y", "republished"),
            ("z", "republished"), ("w", "republished")]
        assert seen == committed
    finally:
        store.close()


def test_a_candidate_forgets_only_parent_versions_that_still_hold_content(tmp_path):
    """s (a summary of r and q) fails in a delete of r: withdrawn, its only version erased. n, a neural
    skill fed by s, q and k, is repaired in param mode then and again in a delete of q, whose scope
    holds s: n's context forgets q at its old version, not s's erased version (nothing to forget)."""
    from memsteward.policy.loader import load_policy_source
    from memsteward.repair.artifacts import Edge
    from memsteward.store import Store

    (tmp_path / "p.yaml").write_text(POLICY_TEXT)
    policy = load_policy_source(str(tmp_path / "p.yaml")).policy
    arts = {i: Artifact(i, "record", None, 1, {"text": f"{i}."}) for i in ("r", "q", "k")}
    arts["s"] = Artifact("s", "summary", None, 1, "s.")
    arts["n"] = Artifact("n", "skill", "neural", 1, None)
    store = Store()
    try:
        store.import_snapshot(Snapshot(arts, (Edge("r", "s"), Edge("q", "s"), Edge("s", "n"), Edge("q", "n"),
                                              Edge("k", "n"))))
        first = Scripted({"s": "raise"})
        plan = ex.run_event(store, policy, Event("delete", ("r",)), operators=_registry(first))
        assert _steps(plan)["s"][0] == "failed" and plan.modes["n"] == "param"
        assert [(x.id, x.version) for x in first.seen["n"].forget] == [("s", 1)]  # s still held its text then
        assert store.versions("s") == [(1, True, None)]
        second = Scripted({})
        plan = ex.run_event(store, policy, Event("delete", ("q",)), operators=_registry(second))
        assert plan.cascade == ("n", "q", "s") and plan.republished == ("n",)
        assert [(x.id, x.version, x.content) for x in second.seen["n"].forget] == [("q", 1, {"text": "q."})]
    finally:
        store.close()
