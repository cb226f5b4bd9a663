"""TTL on a real PostgresStore when the wrapped store's own sweeper (``sweep_ttl``, what LangGraph's
``start_ttl_sweeper`` runs on its schedule) removed the expired rows before ``GovernedStore.sweep``
looks: the expiry is still reconciled (one delete event, the dependants repaired), and the adapter's
own ``start_ttl_sweeper`` sweeps through the adapter."""

from __future__ import annotations

import time

import pytest
from langgraph_pg import postgres_store

import memsteward
from memsteward.integrations.langgraph import GovernedStore

POLICY = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))
NS = ("users", "alice", "memories")
PROFILE = ("users", "alice", "profile")


@pytest.fixture
def gs(tmp_path):
    with postgres_store("lgttl", ttl={"default_ttl": None}) as inner:
        yield GovernedStore(inner, memsteward.open_store(tmp_path / "prov.db"), POLICY)


def _memories(gs: GovernedStore) -> None:
    gs.put(NS, "home", {"content": "Alice lives at 12 Rue Cler in Paris."}, ttl=0.01)  # 0.6 s
    gs.put(NS, "tea", {"content": "Alice drinks green tea."})
    gs.put(PROFILE, "main", {"content": "Alice lives at 12 Rue Cler in Paris. Alice drinks green tea.",
                             "derived_from": [[list(NS), "home"], [list(NS), "tea"]]})


def _served(gs: GovernedStore) -> str:
    return " ".join(repr(it.value) for it in gs.search(("users", "alice")))


def test_sweep_reconciles_an_expiry_the_wrapped_stores_own_sweeper_removed_first(gs):
    _memories(gs)
    home = gs.artifact_id(NS, "home")
    time.sleep(1.2)
    assert gs.inner.sweep_ttl() == 1  # LangGraph's sweeper ran first: the row is gone
    roots = gs.sweep()
    assert roots == [home]
    assert gs.store.unservable_of([home]) == {home: "erased"}
    assert "Rue Cler" not in _served(gs)
    assert gs.get(PROFILE, "main").value["content"] == "Alice drinks green tea."
    assert gs.get(NS, "tea") is not None  # an item without a TTL is never taken for an expiry
    assert gs.sweep() == []  # nothing left to reconcile


def test_an_item_deleted_around_the_adapter_without_ttl_is_not_an_expiry(gs):
    gs.put(NS, "tea", {"content": "Alice drinks green tea."})
    gs.inner.delete(NS, "tea")
    assert gs.sweep() == []
    assert gs.store.unservable_of([gs.artifact_id(NS, "tea")]) == {}


def test_the_adapters_ttl_sweeper_sweeps_through_the_adapter(gs):
    _memories(gs)
    home = gs.artifact_id(NS, "home")
    time.sleep(1.2)
    future = gs.start_ttl_sweeper(sweep_interval_minutes=0.005)  # every 0.3 s
    try:
        deadline = time.monotonic() + 10
        while gs.store.unservable_of([home]) != {home: "erased"} and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        assert gs.stop_ttl_sweeper(timeout=10)
    assert future.done()
    assert gs.store.unservable_of([home]) == {home: "erased"}
    assert gs.get(PROFILE, "main").value["content"] == "Alice drinks green tea."


def test_an_item_missing_before_its_deadline_is_being_written_not_expired(gs):
    """Found in review: a put is recorded before the wrapped store holds it (an ``aput`` awaits its
    wrapped put after the record), so a sweep or a ``get`` in between saw a recorded TTL item missing
    from the wrapped store and erased it. Now only an item past the deadline its put recorded is an
    expiry. Simulated here by removing the row around the adapter right after the put."""
    gs.put(NS, "home", {"content": "Alice lives at 12 Rue Cler in Paris."}, ttl=10)
    home = gs.artifact_id(NS, "home")
    gs.inner.delete(NS, "home")                      # as if its wrapped put had not landed yet
    assert gs.sweep() == [] and gs.get(NS, "home") is None
    assert gs.store.unservable_of([home]) == {}      # still recorded, not erased
    gs.put(NS, "mood", {"content": "Alice feels tired today."}, ttl=0.01)  # 0.6 s
    mood = gs.artifact_id(NS, "mood")
    time.sleep(1.2)
    gs.inner.delete(NS, "mood")
    assert gs.sweep() == [mood]                      # past its deadline: an expiry


def test_a_sweeper_stopped_mid_sweep_and_started_again_runs(tmp_path):
    """Found by a second red-team round: ``stop_ttl_sweeper(timeout)`` returned False during a long
    sweep and left the stop flag set; ``start_ttl_sweeper()`` then saw the old thread alive and started
    nothing, so no sweeper ran after the old one ended. A restart now gets a sweeper of its own."""
    import sqlite3
    import threading

    from langgraph.store.sqlite import SqliteStore

    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    inner = SqliteStore(conn, ttl={"default_ttl": None, "refresh_on_read": False, "sweep_interval_minutes": 0.002})
    inner.setup()
    gs = GovernedStore(inner, memsteward.open_store(), POLICY)
    real, calls = gs.sweep, []

    def slow_sweep() -> list[str]:
        calls.append(time.monotonic())
        time.sleep(0.5)
        return real()

    gs.sweep = slow_sweep  # type: ignore[method-assign]
    first = gs.start_ttl_sweeper()
    deadline = time.monotonic() + 10
    while not calls and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gs.stop_ttl_sweeper(timeout=0.05) is False  # mid-sweep
    second = gs.start_ttl_sweeper()
    try:
        first.result(timeout=10)                   # the old sweeper ends after its sweep
        seen = len(calls)
        deadline = time.monotonic() + 10
        while len(calls) == seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(calls) > seen and not second.done()  # the new one sweeps on
        assert [t for t in threading.enumerate() if t.name == "memsteward-ttl-sweeper"]
    finally:
        assert gs.stop_ttl_sweeper(timeout=10)
    assert second.result(timeout=10) is None


def test_concurrent_starts_run_one_sweeper_and_stop_ends_it():
    """Found by a third red-team round: start_ttl_sweeper took no lock, so 16 threads starting at
    once left 4–15 sweepers, all but one never stopped and most futures never resolved."""
    import sqlite3
    import threading

    from langgraph.store.sqlite import SqliteStore

    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    inner = SqliteStore(conn, ttl={"default_ttl": None, "refresh_on_read": False, "sweep_interval_minutes": 0.001})
    inner.setup()
    gs = GovernedStore(inner, memsteward.open_store(), POLICY)
    gate, futures = threading.Barrier(16), []

    def start() -> None:
        gate.wait()
        futures.append(gs.start_ttl_sweeper())

    import sys

    threads = [threading.Thread(target=start) for _ in range(16)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between bytecodes as often as they can: the race shows
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(switch)
    sweepers = [t for t in threading.enumerate() if t.name == "memsteward-ttl-sweeper"]
    assert len(sweepers) == 1
    assert gs.stop_ttl_sweeper(timeout=10)
    assert all(f.result(timeout=10) is None for f in futures)
    assert not [t for t in threading.enumerate() if t.name == "memsteward-ttl-sweeper"]
