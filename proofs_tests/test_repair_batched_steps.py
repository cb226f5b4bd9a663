"""An event's steps committed in batches (``RepairLog.defer_steps`` / ``flush_steps``), on SQLite and PostgreSQL.

Run sequentially, an event stages and records its candidates ``STEP_BATCH`` at a time, one transaction per
batch instead of two per candidate (writers share the store's write lock with it). What must still hold:
a write naming a successor that is staged, or whose step is done but not committed yet (withdrawn in the
store), is fenced; a crash inside a batch's transaction commits none of it, and ``recover`` reaches the
state of an uninterrupted run.
"""

from __future__ import annotations

import pytest

from memsteward.api import apply_event, bundled_path, load_policy
from memsteward.errors import WriteRefused
from memsteward.repair import execute as execute_mod
from memsteward.repair.auditchain import first_broken
from memsteward.repair.execute import recover
from memsteward.store import Store

N = 6
IDS = [f"d{k}" for k in range(N)]


class Died(BaseException):
    """The process 'dies' here (thrown out of the engine): what was committed stays."""


def _seed(url: str) -> Store:
    s = Store.open(url, create=True)
    s.record({"id": "r", "kind": "record", "content": "root fact about alice"})
    s.record({"id": "n", "kind": "record", "content": "Bob likes jazz"})
    for i in IDS:
        s.record({"id": i, "kind": "summary", "content": f"root fact about alice. Bob likes jazz. ({i})"},
                 inputs=["r", "n"])
    return s


def _delete(s: Store, **kw):
    return apply_event(s, load_policy(bundled_path("policies", "default.yaml")), {"type": "delete", "roots": ["r"]}, **kw)


def test_batched_steps_fence_writes_naming_staged_or_queued_successors(store_at, monkeypatch):
    """With batches of 2, after the 3rd outcome two successors are staged in the store and the 3rd is
    still withdrawn (its step queued); a write naming any of them as an input is fenced."""
    monkeypatch.setattr(execute_mod, "STEP_BATCH", 2)
    url = store_at("fence")
    s = _seed(url)
    other = Store.open(url)
    seen: dict[int, dict[str, str]] = {}

    def progress(done: int, total: int) -> None:
        if not 0 < done < total:
            return
        states = other.states()
        seen[done] = {i: states[i][0] for i in IDS}
        for i in IDS:
            with pytest.raises(WriteRefused) as exc:
                other.record({"id": f"x{done}-{i}", "kind": "summary", "content": f"note {done} {i}"},
                             inputs=["n", i], wait=0)
            assert exc.value.reason == "fenced", (done, i)
    plan = _delete(s, progress=progress)
    assert [r.status for r in plan.executed] == ["republished"] * N
    # after outcome 3: the first batch (2) committed and staged, the 3rd done but queued (still withdrawn)
    assert list(seen[3].values()).count("staged") == 2 and list(seen[3].values()).count("withdrawn") == N - 2, seen[3]
    assert set(seen[2].values()) == {"withdrawn"}  # outcome 2 fills the batch, committed after its progress call
    assert {i: s.states()[i][0] for i in IDS} == dict.fromkeys(IDS, "republished")
    assert first_broken(s.audit_rows(), s.audit_head(), None) is None
    other.close()
    s.close()


def _final(url: str) -> dict:
    s = Store.open(url)
    out = {"artifacts": s.dump_state()["artifacts"], "versions": s.dump_state()["versions"]}
    s.close()
    return out


def test_a_crash_inside_a_batch_commits_none_of_it_and_recover_completes(store_at, monkeypatch):
    """Killed at the checkpoint before the COMMIT of the second batch: the first batch's steps are in
    the store, none of the second's; the cascade stays withdrawn or staged (nothing servable), and
    ``recover`` (a restarted process) ends where an uninterrupted run ends."""
    monkeypatch.setattr(execute_mod, "STEP_BATCH", 2)
    ref = _seed(store_at("ref"))
    _delete(ref)
    ref.close()
    url = store_at("crash")
    s = _seed(url)
    flushes = {"n": 0}
    flush = type(s).flush_steps

    def counting(self):  # noqa: ANN001, ANN202 — the store's own method
        flushes["n"] += bool(self._deferred)
        if flushes["n"] == 2:  # the second batch: its transaction's first checkpoint is before its COMMIT
            self.on_checkpoint = lambda _n: (_ for _ in ()).throw(Died())
        return flush(self)
    monkeypatch.setattr(type(s), "flush_steps", counting)
    with pytest.raises(Died):
        _delete(s)
    monkeypatch.setattr(type(s), "flush_steps", flush)
    s.on_checkpoint = None
    s.close()
    after = Store.open(url)
    event = after.unfinished_event()
    assert event is not None
    steps = after.steps(event.id)
    done = [i for i, st in steps.items() if st.status != "pending"]
    assert len(done) == 2 and all(steps[i].status == "validated" for i in done), steps  # the first batch only
    assert not {a.id for a in after.serve()} & {"r", *IDS}
    after.close()
    again = Store.open(url)
    recover(again)
    again.close()
    assert _final(url) == _final(store_at("ref"))


class Stop(BaseException):
    """Thrown out of a progress callback: the run is interrupted there (as Ctrl-C would)."""


def _recorded(url: str) -> tuple[int, dict[str, str]]:
    """The unfinished event's id and its steps' statuses, read by another connection (what is committed)."""
    other = Store.open(url)
    try:
        event = other.unfinished_event()
        assert event is not None
        return event.id, {i: st.status for i, st in other.steps(event.id).items()}
    finally:
        other.close()


@pytest.mark.parametrize("executor", [None, "pool:2"])
@pytest.mark.parametrize("stop", [1, 4])
def test_an_interrupted_run_keeps_every_outcome_it_reported(store_at, executor, stop):
    """Interrupted after its ``stop``-th outcome: sequentially the queued outcomes (fewer than STEP_BATCH)
    are committed on the way out; with a pool each outcome was committed as it came. Either way every
    reported outcome is in the store (a pool's other in-flight candidate may be too), and recover
    runs only the rest and ends where an uninterrupted run ends."""
    ref = _seed(store_at("ref"))
    _delete(ref)
    ref.close()
    url = store_at("stop")
    s = _seed(url)

    def progress(done: int, total: int) -> None:
        if done == stop:
            raise Stop

    with pytest.raises(Stop):
        _delete(s, executor=executor, progress=progress)
    assert s._deferred is None  # deferral is off again whatever the executor
    _event_id, steps = _recorded(url)
    done = sorted(i for i, st in steps.items() if st != "pending")
    assert stop <= len(done) <= (stop if executor is None else stop + 1), steps
    assert all(steps[i] == "validated" for i in done)
    if executor is None:
        assert done == IDS[:stop]  # plan order
    s.close()
    again = Store.open(url)
    seen: list[tuple[int, int]] = []
    recover(again, progress=lambda d, t: seen.append((d, t)))
    again.close()
    assert seen[0] == (len(done), N) and seen[-1] == (N, N) and len(seen) == N - len(done) + 1
    assert _final(url) == _final(store_at("ref"))


def test_a_pool_run_after_a_sequential_one_on_the_same_store_commits_each_outcome_as_it_comes(store_at):
    """The sequential run defers its steps and turns deferral off when it ends: the next event on the
    same store object, run by a pool, commits each outcome before it is reported (another connection
    sees it at every progress call), and an interruption loses none of them."""
    url = store_at("two")
    s = _seed(url)
    s.record({"id": "q", "kind": "record", "content": "another root"})
    s.record({"id": "e", "kind": "summary", "content": "another root. Bob likes jazz."}, inputs=["q", "n"])
    first = apply_event(s, load_policy(bundled_path("policies", "default.yaml")), {"type": "delete", "roots": ["q"]})
    assert [r.status for r in first.executed] == ["republished"]
    committed: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        if done:
            _id, steps = _recorded(url)
            committed.append((done, sum(st != "pending" for st in steps.values())))
        if done == 3:
            raise Stop

    with pytest.raises(Stop):
        _delete(s, executor="pool:2", progress=progress)
    assert [d for d, _ in committed] == [1, 2, 3] and all(c >= d for d, c in committed), committed
    _id, steps = _recorded(url)
    assert sum(st != "pending" for st in steps.values()) >= 3
    s.close()
