"""Systematic tests of the event lease (store/leases.py), with real processes as holders.

Written for issue 33's targeted mutation runs of the store modules (bench/mutation-targeted-store.md):
every branch of ``_alive`` (this process, a server session, another host, a dead pid, a reused
pid), and ``take_event`` / ``event_running`` / ``_check_lease`` / ``act_for`` for each kind of
holder, on both backends. A lease row names its holder; the rows here are written with the
store's own statements, the holders are child processes that run or have exited.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from memsteward.errors import EventHeld
from memsteward.store import leases


@pytest.fixture
def child():
    """A live child process (its pid and kernel start time), and one that has exited."""
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        yield live.pid, leases._process_start(live.pid), gone.pid
    finally:
        live.communicate(b"")


def test_process_start_is_field_22_of_proc_stat(child):
    live, started, gone = child
    with open(f"/proc/{live}/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()  # fields 3… of proc(5); starttime is field 22
    assert started == fields[19].decode() and started.isdigit() and int(started) > 0
    assert leases._process_start(os.getpid()) is not None and int(leases._process_start(os.getpid())) <= int(started)
    assert leases._process_start(gone) is None


def test_alive_for_each_kind_of_holder(child):
    from memsteward.store import Store

    live, started, gone = child
    host = socket.gethostname()
    me = os.getpid()
    s = Store()
    try:
        # this very process: alive while the owner's store is open, whatever the pid's start time
        assert leases._alive(s.owner, host, me, "0")
        assert not leases._alive("closed-owner", host, me, leases._process_start(me))
        # another host: assumed alive (its pids mean nothing here), even a pid that is dead here
        assert leases._alive("x", host + ".elsewhere", gone, None)
        assert leases._alive("x", host + ".elsewhere", me, None)
        # … whether its name sorts after this host's or before it (a proper prefix, an upper-case name),
        # with this process's pid or a dead one, and with an owner no store here has open
        for elsewhere in (host[:-1], host.upper() if host != host.upper() else host.lower(), "~" + host):
            assert elsewhere != host
            for pid in (me, gone):
                assert leases._alive("closed-owner", elsewhere, pid, None), (elsewhere, pid)
                assert leases._alive("closed-owner", elsewhere, pid, "0", "123@2026-01-01", s.driver), (elsewhere, pid)
        # this host, another pid: alive while it runs under its recorded start time
        assert leases._alive("x", host, live, started)
        assert leases._alive("x", host, live, None)
        assert not leases._alive("x", host, live, str(int(started) + 1))   # the pid was reused
        assert not leases._alive("x", host, gone, None)
        assert not leases._alive("x", host, gone, started)
        # a lower pid than this process's (init: pid 1, alive since boot) is judged by its pid too
        assert 1 < me and leases._alive("x", host, 1, leases._process_start(1))
        assert not leases._alive("x", host, 1, str(int(leases._process_start(1)) + 1))
        assert leases._alive("x", host, 1, None)
        # SQLite cannot tell a session: the pid decides
        assert not leases._alive("x", host, gone, None, "123@2026-01-01", s.driver)
        assert leases._alive("x", host, live, started, "123@2026-01-01", s.driver)
    finally:
        s.close()


def test_alive_asks_the_server_for_a_postgresql_session(child, pg_url):
    """On PostgreSQL the session decides, on any host and whatever the pid: a session the server runs
    is alive, one it does not run is dead."""
    from memsteward.store import Store

    live, started, gone = child
    host = socket.gethostname()
    s = Store.open(pg_url, create=True)
    other = Store.open(pg_url)
    try:
        session = other.driver.session
        assert session is not None and "@" in session
        assert leases._alive("x", host, gone, None, session, s.driver)             # dead pid, live session
        assert leases._alive("x", "elsewhere", gone, None, session, s.driver)
        dead_session = session.split("@")[0] + "@1999-01-01 00:00:00+00"
        assert not leases._alive("x", host, live, started, dead_session, s.driver)  # live pid, dead session
        assert not leases._alive("x", "elsewhere", live, None, dead_session, s.driver)
        assert not leases._alive("x", "elsewhere", live, None, "not-a-session", s.driver)
        assert leases._alive("x", "elsewhere", live, None, None, s.driver)          # no session: the host rule
        assert leases._alive(s.owner, host, os.getpid(), None, dead_session, s.driver)  # this process: its open stores
        assert not leases._alive("closed", host, os.getpid(), None, session, s.driver)
    finally:
        other.close()
        s.close()


# --------------------------------------------------------------------------- take_event and friends


def _event(s, status: str = "running") -> int:
    with s.transaction():
        (event_id,) = s.conn.execute(s.q.insert_event, ("delete", "{}", "policy", "{}", status, "2026-12-02")).fetchone()
    return int(event_id)


def _set_lease(s, event_id: int, owner: str, host: str, pid: int, started: str | None,
               acquired: str = "2026-12-02T20:00:00Z", session: str | None = None) -> None:
    with s.transaction():
        s.driver.write(s.q.upsert_lease, (event_id, owner, host, pid, started, acquired, session))


def _lease(s, event_id: int):
    return s.conn.execute(s.q.lease_of, (event_id,)).fetchone()


def _mine(s, row) -> bool:
    return (row[0], row[1], int(row[2]), row[3], row[5]) == (
        s.owner, socket.gethostname(), os.getpid(), leases._process_start(os.getpid()), s.driver.session)


def test_take_event_of_a_missing_or_done_event_takes_nothing(store_factory):
    s = store_factory()
    assert s.take_event(1) is False
    done = _event(s, "done")
    assert s.take_event(done) is False and _lease(s, done) is None
    running = _event(s)
    assert s.take_event(running) is True and _mine(s, _lease(s, running))
    assert s.take_event(running) is True  # its own lease: taken again


def test_take_event_refuses_a_live_holder_and_takes_a_dead_one(store_factory, child):
    live, started, gone = child
    s = store_factory()
    host = socket.gethostname()
    e = _event(s)
    _set_lease(s, e, "holder", host, live, started, "2026-12-02T19:00:00Z")
    with pytest.raises(EventHeld) as exc:
        s.take_event(e)
    assert exc.value.holder == {"event": e, "host": host, "pid": live, "since": "2026-12-02T19:00:00Z"}
    assert f"event {e} is held by process {live} on {host} since 2026-12-02T19:00:00Z" in str(exc.value)
    assert _lease(s, e)[0] == "holder"                       # unchanged
    assert s.event_running(e) is True
    for dead in ((gone, None), (live, str(int(started) + 7))):  # an exited pid; a pid reused by another process
        _set_lease(s, e, "holder", host, *dead)
        assert s.event_running(e) is False
        assert s.take_event(e) is True and _mine(s, _lease(s, e))
        assert s.event_running(e) is False                    # held by this store itself


def test_event_running_without_a_lease_is_false(store_factory):
    s = store_factory()
    e = _event(s)
    assert s.event_running(e) is False
    assert s.event_running(e + 1) is False


def test_check_lease_fences_every_owner_but_the_holder(store_factory, child):
    live, started, _ = child
    s = store_factory()
    e = _event(s)
    s._check_lease(e)  # no lease: nothing to fence
    assert s.take_event(e)
    s._check_lease(e)  # its own
    _set_lease(s, e, "recoverer", "h2", 4242, None, "2026-12-02T21:00:00Z")
    with pytest.raises(EventHeld) as exc:
        s._check_lease(e)
    assert exc.value.holder == {"event": e, "host": "h2", "pid": 4242, "since": "2026-12-02T21:00:00Z"}
    assert str(exc.value).startswith(f"event {e} was taken over by process 4242 on h2 at 2026-12-02T21:00:00Z")


def test_act_for_writes_as_the_holder_and_stops_counting_as_open(store_factory):
    s = store_factory()
    e = _event(s)
    before = s.owner
    assert leases._alive(before, socket.gethostname(), os.getpid(), None)
    s.act_for("coordinator")
    assert s.owner == "coordinator"
    assert not leases._alive(before, socket.gethostname(), os.getpid(), None)   # the old owner is gone from _OPEN
    _set_lease(s, e, "coordinator", "h", 1, None)
    s._check_lease(e)                                       # the coordinator's lease: this store may write
    _set_lease(s, e, "someone-else", "h", 1, None)
    with pytest.raises(EventHeld):
        s._check_lease(e)


def test_on_postgresql_the_holder_s_session_decides_take_event_and_event_running(child, pg_url):
    """The lease's session column (row[5] of ``lease_of``, row[4] of ``lease_running``) is what the
    server is asked about: a live session holds the event even under a dead pid; a dead session
    loses it even under a live pid."""
    from memsteward.store import Store

    live, started, gone = child
    host = socket.gethostname()
    s = Store.open(pg_url, create=True)
    other = Store.open(pg_url)
    try:
        e = _event(s)
        dead_session = other.driver.session.split("@")[0] + "@1999-01-01 00:00:00+00"
        _set_lease(s, e, "holder", host, gone, None, session=other.driver.session)
        assert s.event_running(e) is True
        with pytest.raises(EventHeld):
            s.take_event(e)
        _set_lease(s, e, "holder", host, live, started, session=dead_session)
        assert s.event_running(e) is False
        assert s.take_event(e) is True and _mine(s, _lease(s, e))
    finally:
        other.close()
        s.close()


# --------------------------------------------------------------------------- the physical step's lease (store/erasure.py)


def _physical_rows(s, event_id: int) -> list[dict]:
    return [r["detail"] for r in s.audit_log_of(event_id) if r["action"] == "physical-erasure"]


def test_the_physical_step_runs_once_under_the_event_s_lease_for_each_kind_of_holder(store_factory, child):
    """``erase_physically`` (here of an event that erased nothing: the lease logic alone) takes the
    event's lease from nobody or from a dead holder, refuses a live one with ``EventHeld`` naming it,
    runs under its own lease without asking, writes its row once and then returns that row."""
    live, started, gone = child
    host = socket.gethostname()
    s = store_factory()
    free, held, dead, own = (_event(s, "done") for _ in range(4))
    _set_lease(s, held, "publisher", host, live, started, "2026-12-02T19:30:00Z")
    with pytest.raises(EventHeld) as exc:
        s.erase_physically(held, [])
    assert exc.value.holder == {"event": held, "host": host, "pid": live, "since": "2026-12-02T19:30:00Z"}
    assert str(exc.value).startswith(f"the physical erasure of event {held} is being done by process {live} on {host} "
                                     "(since 2026-12-02T19:30:00Z)")
    assert _physical_rows(s, held) == [] and _lease(s, held)[0] == "publisher"
    _set_lease(s, dead, "publisher", host, gone, None)
    _set_lease(s, own, s.owner, host, os.getpid(), None)
    for e in (free, dead, own):
        first = s.erase_physically(e, [])
        assert (first["versions"], first["keys_destroyed"], first["keys_alive"]) == (0, 0, 0), e
        assert _physical_rows(s, e) == [first] and _lease(s, e) is None      # the row and the lease's end commit together
        assert s.erase_physically(e, []) == first and len(_physical_rows(s, e)) == 1
    assert s.pending_physical_erasure() == []


def test_on_postgresql_the_physical_step_asks_the_server_about_the_holder_s_session(child, pg_url):
    """``_take_physical`` reads the holder's session (``row[5]`` of ``lease_of``): a live session holds
    the step even under an exited pid; a dead one loses it under a live pid."""
    from memsteward.store import Store

    live, started, gone = child
    host = socket.gethostname()
    s = Store.open(pg_url, create=True)
    other = Store.open(pg_url)
    try:
        e = _event(s, "done")
        _set_lease(s, e, "publisher", host, gone, None, session=other.driver.session)
        with pytest.raises(EventHeld):
            s.erase_physically(e, [])
        _set_lease(s, e, "publisher", host, live, started, session=other.driver.session.split("@")[0] + "@1999-01-01")
        assert s.erase_physically(e, [])["versions"] == 0 and len(_physical_rows(s, e)) == 1
    finally:
        other.close()
        s.close()
