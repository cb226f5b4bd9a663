"""What memsteward raises on purpose, under one base :class:`MemstewardError`.

* :class:`InputError` (and :class:`WriteRefused`, :class:`EventHeld`): bad input or a refused
  write — one clear line naming file, line and field; exit code 2.
* :class:`StoreError` (and :class:`StoredPlanDamaged`): the store itself cannot serve what it
  holds; exit code 3 (nothing was wrong with what the user gave).
* :class:`WorkerLost`: an executor's worker died mid-task; exit code 3.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1  # the input was read, and it has errors (check) or violations (verify)
EXIT_BAD_INPUT = 2  # the input cannot be read or parsed, or names things that do not exist


class MemstewardError(Exception):
    """Base of everything memsteward raises on purpose (``except MemstewardError`` catches them all)."""

    exit_code = 3


class InputError(MemstewardError):
    """Bad input: rendered as ``file:line:col: error: message [field]`` and exit code 2."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, file: str = "<input>", line: int | None = None,
                 col: int | None = None, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.file = shown_location(file) if "://" in file else file  # never a DSN's password
        self.line = line
        self.col = col
        self.field = field

    def render(self) -> str:
        loc = self.file
        if self.line is not None:
            loc += f":{self.line}"
            if self.col is not None:
                loc += f":{self.col}"
        where = f" [{self.field}]" if self.field else ""
        return printable(f"{loc}: error: {self.message}{where}")

    def as_dict(self) -> dict:
        return {"severity": "error", "code": "bad-input", "message": self.message,
                "file": self.file, "line": self.line, "col": self.col, "field": self.field}


from .redaction import shown_location  # noqa: E402  (after the exit codes it has no need of)


def printable(text: str) -> str:
    """Untrusted text made inert for a terminal (:func:`memsteward.textsafe.terminal`)."""
    from .textsafe import terminal

    return terminal(text)


class WriteRefused(InputError):
    """A write the store refuses on purpose (write fencing, a tombstoned content, a write that has to
    wait for a running event): exit code 2 like other bad input; fenced and tombstoned refusals are
    audited. ``reason == "busy"`` is the one retryable refusal: the write is ordered after the
    running event's publication, and ``retry_after`` (seconds) says when to try again."""

    def __init__(self, message: str, reason: str, file: str = "<store>", field: str = "",
                 retry_after: float | None = None) -> None:
        super().__init__(message, file=file, field=field)
        self.reason = reason
        self.retry_after = retry_after

    def as_dict(self) -> dict:
        out = {**super().as_dict(), "code": "write-refused", "reason": self.reason}
        if self.retry_after is not None:
            out["retry_after"] = self.retry_after
        return out


class StoreBusy(InputError):
    """An event's barrier found the store busy: another event is unfinished, or the store changed
    within the plan's scope since it was planned. :func:`memsteward.repair.execute.run_event` waits
    for a running event and plans again (bounded); nothing was written."""


class EventHeld(InputError):
    """Another live process holds the event (its lease in the store): this one does nothing.
    ``recover`` reports it and exits 0 (the holder completes the event); ``repair`` exits 2."""

    def __init__(self, message: str, holder: dict, file: str = "<store>") -> None:
        super().__init__(message, file=file, field="event")
        self.holder = holder


class StoreError(MemstewardError):
    """The store holds something this release cannot use (damaged rows, an impossible state): not
    the user's input and not a candidate's fault. Exit code 3."""

    exit_code = 3

    def __init__(self, message: str, file: str = "<store>") -> None:
        super().__init__(message)
        self.message = message
        self.file = file


class StoredPlanDamaged(StoreError):
    """A stored plan (``events.plan``) that does not decode: a damaged row, not a ValueError of the caller."""


class WorkerLost(MemstewardError):
    """An executor's worker died mid-task (killed, out of memory, its node lost). The event is
    left unfinished, exactly like a crash of the whole process: run ``memsteward recover``.
    Exit code 3 (not bad input: nothing was wrong with what the user gave)."""

    exit_code = 3

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
