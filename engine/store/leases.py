"""Event leases: one writer per event, a dead holder's lease taken over (``recover``).

A lease names its holder (owner token, host, pid and the kernel's start time of the pid; on
PostgreSQL the server session too). Every write of an event checks it (fencing): once another
process took the event over, the former holder's writes are refused.
"""

from __future__ import annotations

import os
import socket

from ..errors import EventHeld
from ..shred.holders import process_start as _process_start
from .api import Locator
from .core import _OPEN, _now
from .driver import Driver
from .planning import PlanningReads

__all__ = ["Leases"]


def _alive(owner: str, host: str, pid: int, started: str | None, session: str | None = None,
           driver: Driver | None = None) -> bool:
    """Whether a lease holder still runs. In this very process: while its Store is open. On
    PostgreSQL: while the server still runs the holder's session (``session``: backend pid and
    start), on any host — a killed process's session ends with its TCP connection. Otherwise (SQLite,
    or a lease from before schema version 2) by pid on this host; another host is assumed alive."""
    if host == socket.gethostname() and pid == os.getpid():
        return owner in _OPEN
    known = None if session is None or driver is None else driver.session_alive(session)
    if known is not None:
        return known
    if host != socket.gethostname():
        return True
    if pid == os.getpid():
        return owner in _OPEN
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return started is None or _process_start(pid) in (None, started)


class Leases(PlanningReads):
    """Taking, checking and handing over an event's lease."""

    def _lease(self, event_id: int) -> None:
        """Record this process as the event's one writer (inside the caller's transaction)."""
        self.driver.write(self.q.upsert_lease, (event_id, self.owner, socket.gethostname(), os.getpid(), _process_start(os.getpid()),
                           _now(), self.driver.session))

    def take_event(self, event_id: int) -> bool:
        """Become the one writer of an unfinished event (``recover``): BEGIN IMMEDIATE serialises
        contenders; a lease held by another live process refuses with :class:`EventHeld` naming it,
        a lease of a dead process (killed mid-event) is taken over. False: the event was completed
        meanwhile (by the process that held it), so there is nothing left to do."""
        with self.transaction():
            status = self.conn.execute(self.q.event_status, (event_id,)).fetchone()
            if status is None or status[0] == "done":
                return False
            row = self.conn.execute(self.q.lease_of, (event_id,)).fetchone()
            if row is not None and row[0] != self.owner and _alive(row[0], row[1], int(row[2]), row[3], row[5],
                                                                   self.driver):
                holder = {"event": event_id, "host": row[1], "pid": int(row[2]), "since": row[4]}
                raise EventHeld(f"event {event_id} is held by process {row[2]} on {row[1]} since {row[4]}; "
                                "it completes the event", holder, file=self.path)
            self._lease(event_id)
        return True

    def event_running(self, event_id: int) -> bool:
        """Whether another live process (or store object) holds the unfinished event's lease, so the
        event is being completed: a new event waits for it (False: done, or its holder died — run
        ``memsteward recover``)."""
        row = self.conn.execute(self.q.lease_running, (event_id,)).fetchone()
        return row is not None and row[0] != self.owner and _alive(row[0], row[1], int(row[2]), row[3], row[4],
                                                                   self.driver)

    def act_for(self, owner: str) -> None:
        """Write as the lease holder ``owner``: an executor's worker process staging and validating
        for the coordinator that holds the event (:mod:`memsteward.repair.executors`). Once
        ``recover`` takes the event over, the lease names another owner and this store's writes
        are refused (fencing), like the coordinator's own."""
        _OPEN.pop(self.owner, None)
        self.owner = owner

    def _check_lease(self, event_id: int) -> None:
        row = self.conn.execute(self.q.lease_check, (event_id,)).fetchone()
        if row is not None and row[0] != self.owner:
            raise EventHeld(f"event {event_id} was taken over by process {row[2]} on {row[1]} at {row[3]}",
                            {"event": event_id, "host": row[1], "pid": int(row[2]), "since": row[3]}, file=self.path)

    def locator(self) -> Locator | None:
        """(url, lease owner) a worker in another process opens this store with; None for a store
        that only this process can reach (``:memory:``)."""
        url = self.driver.locator_url(self.url)
        return None if url is None else Locator(url, self.owner)
