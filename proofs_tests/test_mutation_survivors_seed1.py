"""Tests that kill mutants which survived the seed-1 `make mutate` run (bench/MUTATION.md lists each).

Each test names the surviving mutant it kills; its expected values are written by hand.
"""

from __future__ import annotations


def test_schema_max_length_is_inclusive():
    """oracles.py `len(value) > schema["maxLength"]` → `>=` / `!=` survived: no test had a string
    exactly at (or under) its maxLength."""
    from memsteward.repair.oracles import schema_errors

    schema = {"type": "string", "minLength": 2, "maxLength": 4}
    assert schema_errors("abcd", schema) == [] and schema_errors("abc", schema) == []
    assert schema_errors("abcde", schema) == ["$: longer than 4"]
    assert schema_errors("a", schema) == ["$: shorter than 2"]


def test_grounded_lists_five_unsupported_sentences_without_an_ellipsis():
    """oracles.py `" …" if len(unsupported) > 5` → `>= 5` survived: the sentence list is cut (and
    marked with " …") only past five."""
    from memsteward.repair.oracles import grounding_problems

    def text(n: int) -> str:
        return " ".join(f"Zebra{c} walks quietly here." for c in "abcdefg"[:n])

    assert grounding_problems(text(5), ["nothing relevant"], [], [], 0.5) == [
        "5 of 5 sentence(s) not grounded in retained support (sentence 1, 2, 3, 4, 5)"]
    assert grounding_problems(text(6), ["nothing relevant"], [], [], 0.5) == [
        "6 of 6 sentence(s) not grounded in retained support (sentence 1, 2, 3, 4, 5 …)"]


def _oracle_input(content, meta=None, forget=(), reference=()):
    from memsteward.repair.artifacts import Artifact
    from memsteward.repair.operators import RepairContext, Successor
    from memsteward.repair.oracles import OracleInput

    ctx = RepairContext("delete", forget=tuple(forget), reference=tuple(reference))
    return OracleInput(Artifact("s", "skill", None, 1, content, meta or {}), Successor(content, {}), ctx,
                       None)  # type: ignore[arg-type]


def test_task_regression_passes_exactly_at_min_pass():
    """oracles.py `passed / len(probes) >= min_pass − 1e-12` → `min_pass ** 1e-12` / `passed * len`
    / `min_pass | 1e-12` survived: two probes of three answered must pass min_pass 2/3 and fail 0.7."""
    from types import SimpleNamespace

    from memsteward.repair.oracles import check_task_regression

    text = "Anna lives in Oslo. Ben drives a red car. Cleo plays the cello."
    probes = [SimpleNamespace(query="where does Anna live", expect="Oslo"),
              SimpleNamespace(query="what does Ben drive", expect="red car")]
    x = _oracle_input(text, {"probes": [{"query": "what does Cleo play", "expect": "violin"}]})
    report = check_task_regression(SimpleNamespace(probes=probes, min_pass=2 / 3), x)
    assert (report.passed, report.detail) == (True, "2/3 probes pass")
    report = check_task_regression(SimpleNamespace(probes=probes, min_pass=0.7), x)
    assert (report.passed, report.detail) == (False, "2/3 probes pass")


def test_forget_reference_fails_a_successor_that_is_not_a_model():
    """oracles.py `Report("forget_reference", False, "successor is not a model")` → `True` survived."""
    from types import SimpleNamespace

    from memsteward.repair.oracles import check_forget_reference

    report = check_forget_reference(SimpleNamespace(max_forget_score=1.0, min_retained_utility=0.0),
                                    _oracle_input({"text": "not a model"}))
    assert (report.passed, report.detail) == (False, "successor is not a model")


def test_forget_reference_fails_below_the_retained_utility():
    """oracles.py `ru >= spec.min_retained_utility` → `ru is not …` survived: a model that gets
    every reference example wrong must fail a retained-utility bound it does not reach."""
    from types import SimpleNamespace

    from memsteward.repair import neural
    from memsteward.repair.artifacts import Artifact
    from memsteward.repair.oracles import check_forget_reference

    ref = [{"text": "apple pear plum", "label": "fruit"}, {"text": "carrot leek kale", "label": "vegetable"}]
    swapped = [{"text": r["text"], "label": "vegetable" if r["label"] == "fruit" else "fruit"} for r in ref]
    reference = [Artifact(f"r{k}", "record", None, 1, c, {}) for k, c in enumerate(ref)]
    good, bad = neural.train(neural.examples_of(ref)), neural.train(neural.examples_of(swapped))
    spec = SimpleNamespace(max_forget_score=1.0, min_retained_utility=0.5)
    report = check_forget_reference(spec, _oracle_input(good, reference=reference))
    assert (report.passed, report.detail) == (True, "forget score 0.00, retained utility 1.00")
    report = check_forget_reference(spec, _oracle_input(bad, reference=reference))
    assert (report.passed, report.detail) == (False, "forget score 0.00, retained utility 0.00")


def test_a_live_holder_is_told_from_a_reused_pid_by_its_start_time():
    """leases.py `_process_start`: `.split()[19]` → `[18]` survived (field 21 of /proc/pid/stat,
    always 0: every process got the same start time, so a reused pid passed for the holder), and
    `started is None or _process_start(pid) in (None, started)` → `and` survived (a live holder on
    this host with a recorded start was taken for dead). A child started after this process has a
    later start time; it is alive under its own start time and dead under another one."""
    import os
    import socket
    import subprocess
    import sys

    from memsteward.store import leases

    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        own, started = leases._process_start(os.getpid()), leases._process_start(child.pid)
        assert own is not None and started is not None and int(started) > int(own)
        host = socket.gethostname()
        assert leases._alive("another", host, child.pid, started)
        assert leases._alive("another", host, child.pid, None)
        assert not leases._alive("another", host, child.pid, own)  # the pid was reused by a later process
    finally:
        child.communicate(b"")
    assert not leases._alive("another", socket.gethostname(), child.pid, started)


def test_allocation_order_minimises_the_variance_sum_draw_by_draw():
    """stratified.py gain `w²/n − w²/(n+1)` → `w²/n − w² % (n+1)`, `− w % 2/(n+1)`, `w²/n ** w²/(n+1)`,
    `− w + 2/(n+1)` survived: no test followed the greedy past the first draw of each stratum.
    K = 5, w_s = s (strata 1, 2, 3 of 5, 10, 10 coalitions), worked by hand: after one draw each
    (3, 2, 1: an empty stratum gains ∞), the gains are 3: 9 − 4.5 = 4.5, 2: 4 − 2 = 2, 1: 0.5 → 3;
    then 3: 1.5 < 2: 2 → 2; 3: 1.5 → 3; 3: 0.75 > 2: 0.67 → 3; 2: 0.67 > 3: 0.45 → 2;
    1: 0.5 > 3: 0.45 > 2: 0.33 → 1; 3: 0.45 → 3."""
    from memsteward.clearance.stratified import allocation_order

    assert allocation_order(5, {1: 1.0, 2: 2.0, 3: 3.0}, 10) == [3, 2, 1, 3, 2, 3, 3, 2, 1, 3]


def test_allocation_order_samples_a_zero_width_stratum_last():
    """stratified.py `math.inf if widths[s] > 0 else 0.0` → `else 1.0` survived: an empty stratum of
    weight 0 gains nothing from a draw, so it waits while any other stratum still gains (here 3's
    fourth draw gains 4/3 − 1 = 0.33 and 2's second 0.5)."""
    from memsteward.clearance.stratified import allocation_order

    assert allocation_order(5, {1: 0.0, 2: 1.0, 3: 2.0}, 5) == [3, 2, 3, 3, 2]


def test_two_players_have_no_middle_stratum_even_when_the_budget_is_spent():
    """stratified.py `if k <= 2: return [], False` → `k < 2` survived: with two players there is
    nothing to sample, so nothing was cut by the budget, even one that cannot pay for M and ∅."""
    from memsteward.clearance.evaluators.table import TableEvaluator
    from memsteward.clearance.game import Game, Memory, Task
    from memsteward.clearance.stratified import stratified_sample

    game = Game(Task("q", "r", (Memory("a"), Memory("b"))), TableEvaluator({}), trials=2, call_budget=1)
    assert stratified_sample(game, 5, 0) == ([], False)


def test_a_privacy_correction_content_scans_and_a_plain_one_does_not():
    """plan.py `event.type == "correct" and event.privacy` → `event.type < "correct"` survived: only
    deletions were content-scanned in the tests. A privacy correction of the root finds the copy no
    edge records; a plain correction (no privacy) does not scan."""
    from test_repair_erasure import MARKER, _untracked_doc

    from memsteward.policy.loader import load_policy
    from memsteward.repair.artifacts import parse_store_document
    from memsteward.repair.events import parse_event
    from memsteward.repair.execute import run_event
    from memsteward.store import Store

    fixed = {"id": "r-secret", "kind": "record", "content": {"text": "The user moved away.", "label": "home"}}
    for privacy, untracked in ((True, {"sum-copied"}), (False, set())):
        store = Store()
        store.import_snapshot(parse_store_document(_untracked_doc(f"Weekly recap. The user {MARKER}. More."), "<t>"))
        ev = {"type": "correct", "roots": ["r-secret"], "replacements": [fixed], "privacy": privacy}
        plan = run_event(store, load_policy("policies/default.yaml"), parse_event(ev, store.snapshot()))
        assert set(plan.untracked) == untracked, privacy


def test_an_empty_batch_records_nothing_and_audits_nothing():
    """writepath.py `if len(batch) == 1: audit the single write` → `<= 1` survived: an empty batch is
    a valid no-op (no row, no audit entry), not a single write."""
    from memsteward.store import Store

    store = Store()
    before = len(store.audit_log())
    assert store.record_many([]) == []
    assert len(store.audit_log()) == before


def test_completing_a_stratum_gains_its_whole_term_at_any_width():
    """stratified.py completion gain `widths[s] ** 2 / n` → `widths[s] % 2 / n` survived: the test
    of the completion branch used w = 1 (1 % 2 = 1²). With w_1 = w_2 = 2 (the w = 1 case scaled,
    so the same order): after 1, 2, 1, 2, 1 the 6th draw completes stratum 1, gaining 4/3, against
    4/2 − 4/3 = 2/3 in stratum 2."""
    from memsteward.clearance.stratified import allocation_order

    assert allocation_order(4, {1: 2.0, 2: 2.0}, 6) == [1, 2, 1, 2, 1, 1]


def test_sampled_interaction_averages_the_pair_delta_over_the_permutations():
    """attribution.py `Σ Δ_ij / len(bases)` → `Σ Δ_ij ** len(bases)` survived. v̂(S) = 1 when a and b
    are in S without c: Δ_ab(∅) = 1, Δ_ab({c}) = 0. Permutations abc, cab, cba precede the pair by
    ∅, {c}, {c}: ω = (1 + 0 + 0)/3, each permutation counted (not each distinct base)."""
    from itertools import combinations

    import pytest

    from memsteward.clearance.attribution import interaction
    from memsteward.clearance.evaluators.table import TableEvaluator
    from memsteward.clearance.game import Game, Memory, Task

    ids = ("a", "b", "c")
    values = {frozenset(s): float({"a", "b"} <= set(s) and "c" not in s) for r in range(4) for s in combinations(ids, r)}
    game = Game(Task("q", "r", tuple(Memory(i) for i in ids)), TableEvaluator(values), trials=1)
    assert interaction(game, "a", "b", [("a", "b", "c"), ("c", "a", "b"), ("c", "b", "a")]) == pytest.approx(1 / 3)
    assert interaction(game, "a", "b", [("a", "b", "c"), ("c", "a", "b")]) == pytest.approx(1 / 2)


def test_the_row_after_a_sealed_head_must_carry_the_next_sequence_number():
    """auditchain.py `s != seq + 1` → `s < seq + 1` survived: a first appended row that skips numbers
    (row 5 after head 3), even with a hash that links to the head, must be refused."""
    from memsteward.repair.auditchain import row_hash, seal, sealed_head_problem

    key, binding = b"k" * 32, ("store-id", None)
    head_hash = "ab" * 32
    head = (3, head_hash, seal(key, 3, head_hash, binding))
    head_row = (3, "t3", None, "record", "a", "{}", head_hash)

    def after(s: int) -> tuple:
        return (s, "t", None, "record", "b", "{}", row_hash(head_hash, s, "t", None, "record", "b", "{}"))

    assert sealed_head_problem(key, head, [head_row, after(4)], binding, first_appended=4) is None
    for s in (5, 3):
        assert sealed_head_problem(key, head, [head_row, after(s)], binding, first_appended=4) == \
            "the row after the signed head (row 3) does not link to it"


def test_a_migrate_event_built_in_code_with_a_bad_interface_is_refused_before_the_barrier():
    """execute.py `f"migrate interface of {r!r}: {problem[1]}"` (NumberReplacer) was not covered:
    parse_event refuses a bad interface first, so only an event built in code reaches
    check_inputs' own check; it must name the root, the problem and the field."""
    import dataclasses

    import pytest

    from memsteward.errors import InputError
    from memsteward.policy.loader import load_policy
    from memsteward.repair.events import load_event
    from memsteward.repair.execute import check_inputs
    from memsteward.repair.plan import compute_plan
    from memsteward.store import Store

    store = Store.open("engine/data/repair/store.json")
    event = load_event("engine/data/repair/event-migrate.json", store.snapshot())
    plan = compute_plan(load_policy("policies/default.yaml"), store, event, "mincut", "networkx")
    bad = dataclasses.replace(event, interfaces={"api-weather-v1": {"tools": "nope"}})
    with pytest.raises(InputError) as err:
        check_inputs(store, dataclasses.replace(plan, event=bad))
    assert str(err.value) == ("migrate interface of 'api-weather-v1': 'tools' must be an object "
                              "{name: {params, required}}")
    assert err.value.field == "interface.api-weather-v1.tools"


def test_a_delete_on_a_store_opened_by_a_relative_path_leaves_its_wal_truncated(tmp_path, monkeypatch):
    """store/erasure.py `self.path != ":memory:"` → `self.path < ":memory:"` survived: every file
    store of the tests had an absolute path ("/…" sorts before ":"); a relative one ("s.db" sorts
    after) skipped the physical erasure step's checkpoints."""
    import json
    import os

    from memsteward.policy.loader import load_policy
    from memsteward.repair.artifacts import parse_store_document
    from memsteward.repair.events import parse_event
    from memsteward.repair.execute import run_event
    from memsteward.store import Store

    policy = load_policy("policies/default.yaml")  # read before leaving the repository's directory
    monkeypatch.chdir(tmp_path)
    store = Store.open("s.db", create=True)
    try:
        store.import_snapshot(parse_store_document({
            "artifacts": [{"id": "r", "kind": "record", "content": {"text": "The user is allergic to peanuts."}},
                          {"id": "keep", "kind": "record", "content": {"text": "The user lives in Berlin."}},
                          {"id": "s", "kind": "summary", "content": "Allergy and home."}],
            "edges": [{"src": "r", "dst": "s", "type": "influence"},
                      {"src": "keep", "dst": "s", "type": "influence"}]}, "<test>"))
        run_event(store, policy, parse_event({"type": "delete", "roots": ["r"]}, store.snapshot()), "mincut",
                  "networkx")
        (detail,) = [json.loads(d) for (d,) in store.conn.execute(
            "SELECT detail FROM audit WHERE action = 'physical-erasure'")]
        assert detail["checkpoint"] is True
        assert os.path.getsize("s.db-wal") == 0
    finally:
        store.close()


def test_greedy_adds_a_group_only_at_a_positive_profit():
    """closure.py greedy `Σ (w − λc) > 0` → `>= 0` survived: a group of zero profit is not added
    (the docstring's "its profit Σ (w − λc) is positive"); the min cut, too, selects nothing there."""
    from memsteward.repair.candidates import Candidate
    from memsteward.repair.closure import greedy

    even = [Candidate("a", "summary", None, "regen", "op", (), True, 1.0, 1.0),
            Candidate("b", "summary", None, "regen", "op", ("a",), True, 2.0, 3.0)]  # 1 − 1 = 0; (1 − 1) + (2 − 3) < 0
    assert greedy(even, 1.0).selected == frozenset()
    assert greedy(even, 0.5).selected == frozenset({"a", "b"})


def test_shingles_are_the_runs_of_exactly_n_words_within_each_string():
    """lineage.py `range(len(ws) − n + 1)` → `len(ws) * n + 1` survived: `untracked` only looks up
    full n-word runs, so the extra short tails it added were never matched; `shingles` itself
    promises every run of n consecutive words within one string value, and nothing shorter."""
    from memsteward.repair.lineage import shingles

    assert shingles({"a": "One two three four", "b": ["five six"]}, 3) == {("one", "two", "three"),
                                                                          ("two", "three", "four")}
    assert shingles("one two", 3) == set()


HOLDER = """
import sys
from memsteward.store import Store
s = Store.open(sys.argv[1])
print("took" if s.take_event(s.unfinished_event()[0]) else "done", flush=True)
sys.stdin.readline()
s.close()
"""


def test_a_postgresql_lease_held_by_a_live_session_in_another_process_is_not_taken(pg_url):
    """leases.py `_alive(…, row[3], row[5], conn)` → `row[4]` survived (PostgreSQL only: the run had
    no MEMSTEWARD_PG_DSN, and no PostgreSQL test had a live holder in another process): the lease's
    `acquired` time was passed as the holder's server session, which never parses as one, so a live
    holder was taken over — two writers of one event."""
    import subprocess
    import sys

    import pytest
    from test_repair_lease import ROOT, _crashed_store

    from memsteward.errors import EventHeld
    from memsteward.store import Store

    db = _crashed_store(lambda name: pg_url)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, db], cwd=ROOT, text=True, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == "took"
        s = Store.open(db)
        try:
            with pytest.raises(EventHeld):
                s.take_event(s.unfinished_event()[0])
        finally:
            s.close()
    finally:
        holder.communicate("\n", timeout=60)


def test_recover_reaches_the_executor_only_when_there_is_an_event_to_finish(tmp_path):
    """execute.py `if found is not None: prepare(executor)` → `if not found is not None` survived:
    the executors that connect (Ray: ``ray.init`` on the given address) are only tested outside the
    map. recover must connect before it takes over an unfinished event, and not when there is none."""
    from test_repair_lease import _crashed_store

    from memsteward.repair.execute import recover
    from memsteward.repair.executors import Sequential
    from memsteward.store import Store

    class Connecting(Sequential):
        def __init__(self) -> None:
            self.calls: list[bool] = []

        def connect(self) -> None:
            self.calls.append(store.unfinished_event() is not None)  # before the event is taken and finished

    db = _crashed_store(lambda name: str(tmp_path / f"{name}.db"))
    store = Store.open(db)
    try:
        executor = Connecting()
        assert recover(store, executor=executor) is not None
        assert executor.calls == [True]
        assert recover(store, executor=executor) is None  # nothing left: no connection
        assert executor.calls == [True]
    finally:
        store.close()


def test_a_new_event_gives_up_when_a_running_event_outlasts_the_write_wait(tmp_path, monkeypatch):
    """execute.py `_await_turn`: `if time.monotonic() >= deadline: raise StoreBusy` → `is deadline`
    survived (one test covers the line, and it never waited): with MEMSTEWARD_WRITE_WAIT=0 and the
    unfinished event held by a live store, a new event is refused at once with StoreBusy (the
    mutant waits as long as the holder runs; the thread below is then still waiting)."""
    import threading

    from test_repair_lease import DATA, _crashed_store

    from memsteward.errors import StoreBusy
    from memsteward.policy.loader import load_policy
    from memsteward.repair.events import load_event
    from memsteward.repair.execute import run_event
    from memsteward.store import Store

    db = _crashed_store(lambda name: str(tmp_path / f"{name}.db"))
    holder, other = Store.open(db), Store.open(db)
    outcome: list[BaseException | None] = []

    def new_event() -> None:
        try:
            run_event(other, load_policy("policies/default.yaml"),
                      load_event(str(DATA / "event-migrate.json"), other.snapshot()))
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 — the outcome is asserted below
            outcome.append(exc)

    try:
        assert holder.take_event(holder.unfinished_event()[0])  # a live holder: the event is running
        monkeypatch.setenv("MEMSTEWARD_WRITE_WAIT", "0")
        t = threading.Thread(target=new_event, daemon=True)
        t.start()
        t.join(60)
        assert not t.is_alive(), "the new event kept waiting past MEMSTEWARD_WRITE_WAIT"
        assert len(outcome) == 1 and isinstance(outcome[0], StoreBusy), outcome
    finally:
        holder.close()
        t.join(60)
        other.close()


def test_scan_reads_a_file_whole_at_the_default_chunk_size(tmp_path):
    """repair/erasure.py `CHUNK = 1 << 24` → `0 << 24` survived: a scan reading nothing finds
    nothing, and every test that reads files expects nothing to be found (the chunk-boundary test
    patches CHUNK). A needle in a file must be found, and every byte counted."""
    from memsteward.repair.erasure import scan

    path = tmp_path / "f.db"
    path.write_bytes(b"\0" * 1000 + b"Zq7-ORCHID" + b"\0" * 1000)
    report = scan([str(path)], [b"Zq7-ORCHID", b"absent"])
    assert report == {"needles": 2, "bytes": 2010, "files": ["f.db"], "found": {"f.db": 1}}


def test_bernstein_radius_worked_by_hand():
    """attribution.py `mean = sum(xs) / n` → `// n` survived. xs = (1, 0, 0): mean 1/3, sample
    variance ((2/3)² + 2·(1/3)²)/2 = 1/3; δ = 4/e makes ln(4/δ) = 1: radius √(2·(1/3)·1/3) + 14/(3·2)."""
    import math

    import pytest

    from memsteward.clearance.attribution import bernstein_radius

    assert bernstein_radius([1.0, 0.0, 0.0], 4 / math.e) == pytest.approx(math.sqrt(2 / 9) + 7 / 3)
    assert bernstein_radius([1.0], 0.05) == math.inf


def test_a_sqlite_file_store_is_located_by_its_absolute_path(tmp_path, monkeypatch):
    """leases.py `if self.backend == "postgresql": return Locator(self.url, …)` → `!=` survived (the
    executors' tests are outside the map): a worker process opens a SQLite store by its absolute
    path, an in-memory store has no locator."""
    import os

    from memsteward.store import Store

    monkeypatch.chdir(tmp_path)
    store = Store.open("w.db", create=True)
    try:
        loc = store.locator()
        assert loc is not None and tuple(loc) == (os.path.join(str(tmp_path), "w.db"), store.owner)
    finally:
        store.close()
    assert Store().locator() is None


def test_budget_lagrangian_searches_multipliers_below_one(monkeypatch):
    """closure.py `lo, hi = Fraction(0), Fraction(1)` → `Fraction(1), Fraction(1)` survived: every
    test's binding multiplier was ≥ 1. Value-to-cost ratios a 0.6 (cost 10), b 0.8, c 3 (cost 1
    each), λ = 0, β = 2: the best closure within budget, {b, c}, is chosen only for μ in [0.6, 0.8);
    at μ = 1 only c is left. Enumeration is switched off (BUDGET_EXACT_LIMIT = 0)."""
    from memsteward.repair import closure
    from memsteward.repair.candidates import Candidate

    cands = [Candidate("a", "summary", None, "regen", "op", (), True, 6.0, 10.0),
             Candidate("b", "summary", None, "regen", "op", (), True, 0.8, 1.0),
             Candidate("c", "summary", None, "regen", "op", (), True, 3.0, 1.0)]
    assert closure.budgeted_closure(cands, 0.0, 2.0).selected == frozenset({"b", "c"})  # enumeration
    monkeypatch.setattr(closure, "BUDGET_EXACT_LIMIT", 0)
    assert closure.budgeted_closure(cands, 0.0, 2.0).selected == frozenset({"b", "c"})  # Lagrangian


def test_versions_are_grouped_under_each_id_in_turn():
    """store/planning.py `_by_id`: `out[-1][0] == ident` → `out[not 1]` (= out[0]) survived: the
    tests' content scans read at most one multi-version id, the first. Each id's versions form one
    group, whichever id comes first."""
    from memsteward.store.planning import _by_id

    rows = [("a", '"a1"', "{}"), ("a", '"a2"', "{}"), ("b", '"b1"', "{}"), ("b", None, '{"m": 1}')]
    assert _by_id(rows) == [("a", [["a1", {}], ["a2", {}]]), ("b", [["b1", {}], [None, {"m": 1}]])]


def test_a_corrected_root_s_descendant_stays_in_the_forget_set():
    """candidates.py `if correct and p in reps: kept` → `correct or p in reps` survived: in a
    correction only the replaced roots are retained; an affected parent that is not a replacement
    (here the summary s of the corrected root r) is invalidated and belongs to the forget set, so
    the neural skill n (parents r and s) has both partitions."""
    from memsteward.policy.loader import load_policy
    from memsteward.repair.artifacts import Artifact
    from memsteward.repair.candidates import assign
    from memsteward.repair.events import Event
    from memsteward.repair.scope import Scope, States

    policy = load_policy("policies/default.yaml")
    arts = {"r": Artifact("r", "record", None, 1, {"t": "old"}), "s": Artifact("s", "summary", None, 1, "old."),
            "n": Artifact("n", "skill", "neural")}
    scope = Scope(("r",), frozenset({"r", "s", "n"}), [("r", "s"), ("r", "n"), ("s", "n")], arts, States())
    correct = Event("correct", ("r",), (Artifact("r", "record", None, 1, {"t": "new"}),))
    assert assign(policy, scope, correct).cells["n"].partitions


def test_a_decision_says_no_rule_only_when_no_rule_decided_it():
    """compare.py `Decision.describe`: `"" if self.rule is not None else " (no rule)"` → `if not …`
    survived: the text of a decision with and without a rule, written out."""
    from memsteward.policy.compare import Decision

    assert Decision("regen", frozenset({"schema", "grounded"}), 2).describe() == "regen[grounded,schema]"
    assert Decision("remove", frozenset(), None).describe() == "remove (no rule)"


def test_the_physical_erasure_row_counts_a_key_that_survived_destruction(tmp_path, monkeypatch):
    """store/erasure.py `"keys_destroyed": len(refs) − len(alive)` → `len(refs) | len(alive)` survived:
    the counts differ only when a key outlives destruction (the broken-variant test that keeps one
    runs on PostgreSQL only in this form). Destruction keeping the root's v1 key: destroyed = erased
    versions − 1, alive = 1, and the step is not complete."""
    import json

    from test_shred_erasure import DOC, _delete

    from memsteward.repair.artifacts import parse_store_document
    from memsteward.shred.vault import Vault
    from memsteward.store import Store

    real = Vault.destroy
    monkeypatch.setattr(Vault, "destroy", lambda self, refs: real(self, [r for r in refs if r != ("root", 1)]))
    store = Store.open(str(tmp_path / "k.db"), create=True)
    try:
        store.import_snapshot(parse_store_document(DOC, "doc"))
        _delete(store)
        (row,) = [json.loads(d) for (d,) in store.conn.execute(
            "SELECT detail FROM audit WHERE action = 'physical-erasure'")]
        assert row["keys_alive"] == 1 and row["versions"] >= 2
        assert row["keys_destroyed"] == row["versions"] - 1 and not row["complete"]
    finally:
        store.close()


def test_only_localhost_and_loopback_addresses_are_loopback():
    """endpoints.py `host.lower() == "localhost"` → `>=` survived: every host sorting after
    "localhost" ("remote.example", "m…", "z…") passed for loopback, so plain http:// to it was allowed."""
    from memsteward.policy.endpoints import is_loopback

    assert is_loopback("localhost") and is_loopback("LOCALHOST") and is_loopback("127.0.0.1") and is_loopback("[::1]")
    assert not any(is_loopback(h) for h in ("remote.example", "mallory.net", "zeta", "localhost.evil", "10.0.0.1"))


def test_schema_checks_every_item_of_an_array():
    """oracles.py `for k, item in enumerate(value)` (ZeroIterationForLoop) was not covered: no
    test had an `items` schema with a bad item; each is checked and named by its index."""
    from memsteward.repair.oracles import schema_errors

    schema = {"type": "array", "items": {"type": "string", "maxLength": 3}}
    assert schema_errors(["ab", "abc"], schema) == []
    assert schema_errors(["ab", 7, "abcd"], schema) == ["$[1]: expected string", "$[2]: longer than 3"]


def test_execution_order_computes_the_requirement_edges_when_not_given():
    """plan.py `requirement_edges(candidates) if requirements is None else requirements` → `is not
    None` survived: every caller passes the edges. Without them, b (which requires a) comes after a."""
    from memsteward.repair.candidates import Candidate
    from memsteward.repair.plan import execution_order

    cands = (Candidate("a", "summary", None, "regen", "op", (), True, 1.0, 1.0),
             Candidate("b", "summary", None, "regen", "op", ("a",), True, 1.0, 1.0),
             Candidate("c", "summary", None, "regen", "op", (), True, 1.0, 1.0))
    assert execution_order(cands, frozenset({"a", "b", "c"})) == ("a", "c", "b")


def test_an_oracle_listed_twice_on_one_side_is_compared_as_a_whole():
    """compare.py `len(a[oracle]) != 1 or len(b[oracle]) != 1` → `and` survived: an oracle that one
    decision lists once and the other twice (two validation rules) is one "changed" setting "*",
    not a per-setting comparison of the first entries."""
    import json

    from memsteward.policy.compare import Decision, oracle_changes

    def spec(v: float) -> str:
        return json.dumps({"oracle": "grounded", "min_support": v}, sort_keys=True)

    once = Decision("regen", frozenset({"grounded"}), 1, frozenset({spec(0.5)}))
    twice = Decision("regen", frozenset({"grounded"}), 1, frozenset({spec(0.5), spec(0.8)}))
    (change,) = oracle_changes(once, twice)
    assert (change["oracle"], change["setting"], change["verdict"]) == ("grounded", "*", "changed")
    (change,) = oracle_changes(twice, once)
    assert (change["setting"], change["verdict"]) == ("*", "changed")


def test_a_delete_tombstones_its_roots_only():
    """store/erasure.py `if ident in tombstone and content is not None` → `or` survived: the
    scrubbed versions of derived artifacts (here the summary s) are erased but not tombstoned —
    a tombstone refuses re-ingesting the deleted root's content, not its derivations'."""
    from memsteward.policy.loader import load_policy
    from memsteward.repair.artifacts import parse_store_document
    from memsteward.repair.events import parse_event
    from memsteward.repair.execute import run_event
    from memsteward.store import Store

    store = Store()
    store.import_snapshot(parse_store_document({
        "artifacts": [{"id": "r", "kind": "record", "content": {"text": "The user is allergic to peanuts."}},
                      {"id": "keep", "kind": "record", "content": {"text": "The user lives in Berlin."}},
                      {"id": "s", "kind": "summary", "content": "Allergy and home."}],
        "edges": [{"src": "r", "dst": "s", "type": "influence"}, {"src": "keep", "dst": "s", "type": "influence"}]},
        "<test>"))
    run_event(store, load_policy("policies/default.yaml"), parse_event({"type": "delete", "roots": ["r"]},
                                                                       store.snapshot()), "mincut", "networkx")
    assert {r for (r,) in store.conn.execute("SELECT root FROM tombstones")} == {"r"}
    assert store.conn.execute("SELECT COUNT(*) FROM tombstones").fetchone()[0] >= 1
