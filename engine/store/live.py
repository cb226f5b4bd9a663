"""Writes while an event runs: the write rule (docs/store.md, "Writes during an event").

A write is ordered as if it came after the running event's barrier, and never waits for the event
unless it has to:

* its inputs must be servable. Everything the barrier withdrew (C(F)) is not, so a write naming a
  withdrawn or staged input is fenced, as before and after the event;
* a write of an id the event holds (withdrawn or staged by its barrier), or of content that the
  event's publication tombstones (a delete's roots, a privacy correction's), is ordered after the
  publication: it is refused as ``busy`` with a ``retry_after``, and :func:`retry_busy` retries it
  until a bounded deadline (after publication it lands on the republished artifact, or is refused
  as it would be then: not servable, tombstoned);
* every other write commits at once, between the event's transactions.

A write between planning and the barrier does not void the plan unless it changed the plan's scope
(:class:`~memsteward.store.api.BarrierSpec` ``unchanged``): a new version of a member of C(F), a new
derivation from one, a new untracked copy of a root's content. The barrier reads the scope again
before it takes the store's write lock, and under the lock checks only the writes committed since
(``unchanged_by``: their ids, inputs and texts), so writers are not held up while the scope is read.
"""

from __future__ import annotations

import json
import numbers
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, NamedTuple, TypeVar

from ..errors import InputError, WriteRefused
from ..repair.reingest import REINGEST_RULES
from ..repair.reingest import verdict as reingest_verdict
from ..repair.writes import content_digest
from ..textnorm import text_digests
from .connection import WRITE_WAIT_ENV, WRITE_WAIT_MAX, write_wait

__all__ = ["BUSY_RETRY_AFTER", "WRITE_WAIT_ENV", "LiveEvent", "check_write_options", "ordered_after",
           "pending_tombstones", "retry_busy", "tombstone_digests", "tombstone_hit", "write_wait"]

BUSY_RETRY_AFTER = 0.05  # seconds a busy write is told to wait before it tries again

T = TypeVar("T")


class LiveEvent(NamedTuple):
    """The unfinished event a write runs beside: its id, and whether its publication tombstones its
    roots' content (a delete, or a correction marked ``privacy``)."""

    id: int
    roots: tuple[str, ...]
    tombstoning: bool

    @classmethod
    def of(cls, event_id: int, event_text: str) -> LiveEvent:
        """From an ``events`` row's id and ``event`` JSON text."""
        doc = json.loads(event_text)
        tombstoning = doc.get("type") == "delete" or (doc.get("type") == "correct" and bool(doc.get("privacy")))
        return cls(int(event_id), tuple(doc.get("roots") or ()), tombstoning)


def tombstone_digests(value: Any) -> set[str]:
    """The digests publication keeps of an erased root's content (exact and normalised)."""
    return {content_digest(value)} | text_digests(value)


UNREADABLE = ""  # a pending tombstone's key (never a digest): a root's version that can no longer be opened


def pending_tombstones(contents: Iterable[tuple[str, Any]], unreadable: Iterable[str] = ()) -> dict[str, str]:
    """digest → root of the tombstones a running event will write: ``contents`` are (root, content)
    of every version of its roots that is not erased yet. ``unreadable``: roots with a version not
    erased yet whose key is gone (the publication, which destroys the keys under the store's write
    lock just before its commit, was killed in between): their tombstones cannot be known here, so
    :data:`UNREADABLE` → the first of them stands for them, and :func:`ordered_after` orders every
    write it would test after the publication (``recover`` completes it)."""
    out: dict[str, str] = {}
    for root, value in contents:
        if value is not None:
            out.update(dict.fromkeys(sorted(tombstone_digests(value) - out.keys()), root))
    for root in sorted(unreadable):
        out.setdefault(UNREADABLE, root)
    return out


def tombstone_hit(digests: set[str], dead: Mapping[str, str]) -> str | None:
    """The first (sorted) of a write's digests — exact content, normalised text of content and meta
    (:func:`memsteward.textnorm.text_digests`) — that a tombstone holds, else None. The one tombstone
    test of the write path."""
    return next((d for d in sorted(digests) if d in dead), None)


def ordered_after(event: LiveEvent, ident: str, state: str | None, said: set[str], first_hand: bool,
                  reingest: str, held: Callable[[], Collection[str]], dead: Callable[[], Mapping[str, str]],
                  file: str, where: str = "") -> WriteRefused | None:
    """The ``busy`` refusal of a write (id ``ident`` in state ``state``, None: new; digests ``said``)
    that has to wait for ``event``'s publication, else None. ``held`` (the barrier's ids) and
    ``dead`` (:func:`pending_tombstones`) are read only when needed."""
    if state in ("withdrawn", "staged") and ident in held():
        return WriteRefused(f"write of {ident!r} waits: event {event.id} holds it until it is published",
                            "busy", file, f"{where}id", BUSY_RETRY_AFTER)
    if event.tombstoning and reingest_verdict(reingest, first_hand, True) != "write":
        pending = dead()
        if UNREADABLE in pending:  # the publication's keys are gone: its tombstones are not readable here
            return WriteRefused(f"write of {ident!r} waits: event {event.id} is erasing its roots' content "
                                f"(root {pending[UNREADABLE]!r}), whose keys are destroyed already; it is "
                                "tested against its tombstones once they are published", "busy", file,
                                f"{where}content", BUSY_RETRY_AFTER)
        hit = tombstone_hit(said, pending)
        if hit is not None:
            return WriteRefused(f"write of {ident!r} waits: event {event.id} is erasing this content "
                                f"(root {dead()[hit]!r}); after it is published the write is refused",
                                "busy", file, f"{where}content", BUSY_RETRY_AFTER)
    return None


def check_write_options(reingest: Any, wait: Any, file: str = "<record>") -> None:
    """Refuse a bad ``reingest`` (one of :data:`~memsteward.repair.reingest.REINGEST_RULES`) or
    ``wait`` (None, or a number of seconds from 0 to ``WRITE_WAIT_MAX``) of a write: an InputError
    naming the argument, before anything is read or written (whether a tombstone matches or not).

    Examples
    --------
    >>> check_write_options("review", 0.5)
    >>> check_write_options("bogus", None)
    Traceback (most recent call last):
    ...
    memsteward.errors.InputError: reingest must be one of allow, refuse, review, got 'bogus'
    >>> check_write_options("allow", "1")
    Traceback (most recent call last):
    ...
    memsteward.errors.InputError: wait must be None or a number of seconds from 0 to 3600, got '1'
    """
    if not isinstance(reingest, str) or reingest not in REINGEST_RULES:
        raise InputError(f"reingest must be one of {', '.join(REINGEST_RULES)}, got {reingest!r:.40}", file=file,
                         field="reingest")
    if wait is not None and (isinstance(wait, bool) or not isinstance(wait, numbers.Real)
                             or not 0 <= float(wait) <= WRITE_WAIT_MAX):  # NaN compares False: refused too
        raise InputError(f"wait must be None or a number of seconds from 0 to {WRITE_WAIT_MAX:g}, got {wait!r:.40}",
                         file=file, field="wait")


def retry_busy(attempt: Callable[[], T], wait: float | None = None) -> T:
    """``attempt()``, run again while it raises a ``busy`` :class:`WriteRefused`, sleeping its
    ``retry_after`` each time, for at most ``wait`` seconds (None: :func:`write_wait`); then the last
    ``busy`` refusal is raised. Every other error passes through at once."""
    limit = write_wait() if wait is None else wait
    if not 0 <= limit <= WRITE_WAIT_MAX:
        raise InputError(f"wait must be between 0 and {WRITE_WAIT_MAX:g} seconds", field="wait")
    deadline = time.monotonic() + limit
    while True:
        try:
            return attempt()
        except WriteRefused as exc:
            left = deadline - time.monotonic()
            if exc.reason != "busy" or left <= 0:
                raise
            time.sleep(min(exc.retry_after or BUSY_RETRY_AFTER, left))
