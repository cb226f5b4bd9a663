"""Fault injection as a wrapper, in the manner of SQLite's crash layer (``src/test6.c``): the store
itself has no crash switch; a test wraps it.

A store passes a *checkpoint* on each side of every COMMIT and at a few points inside its longest
transactions (the barrier, publication). :class:`CrashingStore` ``(inner, crash_at=n)`` makes the
inner store's n-th checkpoint from now on end the process — SIGKILL by default, as a power cut or an
OOM kill would, leaving the database at whatever transaction boundary it had reached — and is
otherwise the inner store (every attribute is the inner one's). :func:`crash_at_checkpoint` does the
same for every store a process opens (a command line run as a child process of a test).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

from .core import StoreCore

__all__ = ["CrashingStore", "crash_at_checkpoint", "sigkill"]


def sigkill() -> None:
    """End this process at once, as a power cut would: no finally blocks, no atexit, no flush."""
    os.kill(os.getpid(), signal.SIGKILL)


def _crash_hook(crash_at: int, crash: Callable[[], None], start: int = 0) -> Callable[[int], None]:
    """A checkpoint hook that calls ``crash`` at checkpoint number ``start + crash_at``."""
    if crash_at < 1:
        raise ValueError(f"crash_at counts checkpoints from 1, got {crash_at}")

    def hook(n: int) -> None:
        if n == start + crash_at:
            crash()
    return hook


class CrashingStore:
    """``inner`` whose ``crash_at``-th checkpoint (counted from this wrapping) calls ``crash``
    (default :func:`sigkill`; a test running in-process passes a function raising its own exception).

    >>> from memsteward.store import open_store
    >>> class Died(Exception): ...
    >>> def die() -> None: raise Died
    >>> store = CrashingStore(open_store(), crash_at=2, crash=die)
    >>> try:  # checkpoints 1 (before the COMMIT) and 2 (after it)
    ...     store.record({"id": "a", "kind": "record", "content": "x"})
    ... except Died:
    ...     print("died at checkpoint 2")
    died at checkpoint 2
    >>> store.get("a").version  # it died after the COMMIT: the record is in
    1
    """

    def __init__(self, inner: StoreCore, crash_at: int, crash: Callable[[], None] = sigkill) -> None:
        self._inner = inner
        inner.on_checkpoint = _crash_hook(crash_at, crash, inner.checkpoints)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def crash_at_checkpoint(crash_at: int, crash: Callable[[], None] = sigkill) -> None:
    """Every store this process opens from now on crashes at its ``crash_at``-th checkpoint (counted
    from its opening): for a command line run as a test's child process
    (``python -m memsteward.testing.crash N repair …``)."""
    StoreCore.on_checkpoint = staticmethod(_crash_hook(crash_at, crash))
