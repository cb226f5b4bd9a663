"""What both backends share at the connection level: URLs (which backend, redacted for messages),
the database errors as one ``except`` clause, and the bounded retry of aborted PostgreSQL
transactions (serialization failures and deadlocks)."""

from __future__ import annotations

import functools
import os
import random
import sqlite3
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import InputError
from ..redaction import redact

__all__ = ["WRITE_WAIT_ENV", "WRITE_WAIT_MAX", "write_wait", "RETRY_ATTEMPTS", "UNUSABLE_DATABASE", "SQLSTATE_RETRY", "db_errors", "is_postgres_url", "redact", "retrying"]

WRITE_WAIT_ENV = "MEMSTEWARD_WRITE_WAIT"
WRITE_WAIT_DEFAULT, WRITE_WAIT_MAX = 30.0, 3600.0
SQLSTATE_RETRY = frozenset({"40001", "40P01"})  # serialization_failure, deadlock_detected
RETRY_ATTEMPTS, RETRY_BASE, RETRY_CAP = 6, 0.02, 1.0


def db_errors() -> tuple[type[BaseException], ...]:
    """The store errors (not a candidate's fault: ``execute.guarded`` lets them through), as an
    ``except`` clause: sqlite3's, and psycopg's once psycopg is imported (it is imported only to
    open a PostgreSQL store, so a SQLite command never pays for it; before that no psycopg error
    can be raised)."""
    psycopg = sys.modules.get("psycopg")
    return (sqlite3.Error,) if psycopg is None else (sqlite3.Error, psycopg.Error)



UNUSABLE_DATABASE: type[Exception] = sqlite3.DatabaseError
"""What a SQLite file that cannot be used raises: a corrupt page, a read-only file, not a database, locked
(the command line reports it as bad input, exit 2)."""

T = TypeVar("T")


def retrying(fn: Callable[..., T]) -> Callable[..., T]:
    """Re-run a whole write (one transaction) when PostgreSQL aborts it with SQLSTATE 40001/40P01.

    At most ``RETRY_ATTEMPTS`` runs; before run k+1 it sleeps uniform(0, min(CAP, BASE·2^k))
    seconds ("full jitter"), so competing writers spread out. The aborted transaction was rolled
    back whole, so re-running it is safe. Other errors, and SQLite's, pass through unchanged.
    """
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> T:
        for attempt in range(RETRY_ATTEMPTS):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                if getattr(exc, "sqlstate", None) not in SQLSTATE_RETRY or attempt == RETRY_ATTEMPTS - 1:
                    raise
                time.sleep(random.uniform(0, min(RETRY_CAP, RETRY_BASE * 2 ** attempt)))
        raise AssertionError("unreachable")
    return run



def is_postgres_url(path: str) -> bool:
    return path.startswith(("postgresql://", "postgres://"))


def write_wait() -> float:
    """Seconds a busy write is retried, or a new event waits for a running one, by default
    (``MEMSTEWARD_WRITE_WAIT``, bounded): :mod:`.live`, :func:`memsteward.repair.execute.run_event`."""
    raw = os.environ.get(WRITE_WAIT_ENV, "")
    try:
        value = float(raw) if raw else WRITE_WAIT_DEFAULT
    except ValueError:
        raise InputError(f"{WRITE_WAIT_ENV} must be a number of seconds, got {raw[:40]!r}",
                         field=WRITE_WAIT_ENV) from None
    if not 0 <= value <= WRITE_WAIT_MAX:
        raise InputError(f"{WRITE_WAIT_ENV} must be between 0 and {WRITE_WAIT_MAX:g} seconds", field=WRITE_WAIT_ENV)
    return value
