"""Shared CLI plumbing: error rendering, exit codes, JSON output."""

from __future__ import annotations

import functools
import io
import json
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import click

from ..errors import EXIT_BAD_INPUT, InputError, WorkerLost, printable
from .paths import FiniteFloat, check_paths

F = TypeVar("F", bound=Callable[..., Any])


def emit_json(obj: Any) -> None:
    """Print a JSON document on stdout (ids stay strings; floats as JSON numbers)."""
    click.echo(json.dumps(obj, indent=2, sort_keys=False, default=_default))


STREAM_CHUNK = 1 << 16  # characters gathered before one write to stdout


def emit_json_stream(doc: Any, output: str | None = None) -> None:
    """:func:`emit_json` of a document whose arrays are iterators (:func:`memsteward.jsonio.write_streamed`),
    on stdout (in chunks of STREAM_CHUNK characters; an error midway leaves the document incomplete
    there, with the command's non-zero exit) or into the file ``output``, written beside and renamed
    over it (:func:`memsteward.safewrite.replace_file`: a symlink keeps pointing at it, its mode stays,
    and an export failing midway leaves the old file as it was)."""
    from ..jsonio import write_streamed
    from ..safewrite import replace_file

    if output is not None:
        with replace_file(output) as fh:
            write_streamed(fh.write, doc, default=_default)
            fh.write("\n")
        return
    parts: list[str] = []
    size = 0

    def write(text: str) -> None:
        nonlocal size
        parts.append(text)
        size += len(text)
        if size >= STREAM_CHUNK:
            click.echo("".join(parts), nl=False)
            parts.clear()
            size = 0

    write_streamed(write, doc, default=_default)
    parts.append("\n")
    click.echo("".join(parts), nl=False)


def _default(o: Any) -> Any:
    if isinstance(o, (set, frozenset)):
        return sorted(o)
    if hasattr(o, "model_dump"):
        return o.model_dump(mode="json")
    if hasattr(o, "as_dict"):
        return o.as_dict()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _lost_connection(exc: BaseException) -> bool:
    """A psycopg OperationalError (connection lost, server shut down, session terminated) — checked
    without importing psycopg (a SQLite command never loads it)."""
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(exc, psycopg.OperationalError)


def _redact(url: str) -> str:
    from ..store.connection import redact

    return redact(url)


def quiet_broken_pipe() -> NoReturn:
    """Exit 0 without a word once the reader of stdout has gone (``memsteward store serve | head``),
    as ``cat`` and ``grep`` do. Output files are regular files (:mod:`.paths`), so a broken pipe is
    always stdout (or stderr). Stdout is pointed at /dev/null first, so the interpreter's final
    flush of what is still buffered does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass  # stdout is not a file descriptor (an in-process test runner)
    sys.exit(0)


def _unusable() -> type[Exception]:
    """What a SQLite file that cannot be used raises (corrupt page, read-only, locked, not a database)."""
    from ..store.connection import UNUSABLE_DATABASE

    return UNUSABLE_DATABASE


def handle_errors(fn: F) -> F:
    """Turn :class:`InputError` into one line on stderr and exit code 2 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            check_paths(kwargs)  # before anything is opened: FIFOs, devices, directories, /proc
            return fn(*args, **kwargs)
        except InputError as exc:
            click.echo(exc.render(), err=True)
            sys.exit(exc.exit_code)
        except _unusable() as exc:  # corrupt page, read-only file, not a database, locked
            store = kwargs.get("store_path") or "<store>"
            click.echo(InputError(f"the store cannot be used: {exc} (corrupt, read-only, locked or not a "
                                  "memsteward database)", file=str(store)).render(), err=True)
            sys.exit(EXIT_BAD_INPUT)
        except BrokenPipeError:  # the reader of stdout went away (`store serve | head`): not an error
            quiet_broken_pipe()
        except OSError as exc:  # writing an output (full disk, permissions, a pseudo-file)
            where = getattr(exc, "filename", None) or kwargs.get("out") or kwargs.get("output") or "<output>"
            click.echo(InputError(f"cannot read or write: {exc.strerror or exc}", file=str(where)).render(),
                       err=True)
            sys.exit(EXIT_BAD_INPUT)
        except WorkerLost as exc:  # a worker died mid-event: like a crash, the event is recoverable
            click.echo(f"memsteward: {printable(exc.message)}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # an engine bug: say so plainly, traceback on request
            if _lost_connection(exc):  # not a bug: the server went away (exit 2, recoverable)
                store = _redact(str(kwargs.get("store_path") or kwargs.get("src") or "<store>"))
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
                click.echo(InputError(f"the PostgreSQL connection failed: {first} (server restarted, session "
                                      "terminated or network lost); an event it interrupted is recoverable: run "
                                      f"`memsteward recover --store {store}`", file=store).render(), err=True)
                sys.exit(EXIT_BAD_INPUT)
            if os.environ.get("MEMSTEWARD_DEBUG"):
                traceback.print_exc()
            click.echo(f"memsteward: internal error: {type(exc).__name__}: {printable(str(exc))} "
                       "(set MEMSTEWARD_DEBUG=1 for a traceback; please report it)", err=True)
            sys.exit(3)

    return wrapper  # type: ignore[return-value]


executor_option = click.option(
    "--executor", "executor", default="sequential", show_default=True,
    metavar="sequential|pool[:N]|ray[:N]|ray://HOST:PORT[:N]",
    help="Where operators and oracles run: sequential, a local pool of N workers (threads; processes "
         "for param retraining), or Ray (memsteward[ray]); N ≤ 256. A successor starts only after its "
         "prerequisites validated; publication stays one transaction.")

def progress_flag(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--progress/--no-progress``: a progress bar of ``what`` on stderr (default: when stderr is a terminal)."""
    return click.option("--progress/--no-progress", "progress", default=None,
                        help=f"A progress bar of {what} on stderr [default: when stderr is a terminal].")


progress_option = progress_flag("the repair steps")


@contextmanager
def step_progress(enabled: bool | None, desc: str, unit: str = "step") -> Iterator[Callable[[int, int], None] | None]:
    """A ``progress(done, total)`` callback drawing a tqdm bar on stderr (None when disabled;
    ``enabled`` None: only when stderr is a terminal). tqdm is imported only when drawing."""
    if not (sys.stderr.isatty() if enabled is None else enabled):
        yield None
        return
    from tqdm import tqdm

    bar: Any = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, initial=done, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True)
        else:
            bar.update(done - bar.n)

    try:
        yield update
    finally:
        if bar is not None:
            bar.close()


MAX_DEADLINE = 600.0  # = policy.model.MAX_DEADLINE_S: a trickling endpoint holds an event at most this long per call

deadline_option = click.option(
    "--deadline", "deadline", type=FiniteFloat(0.001, MAX_DEADLINE),  # nan / inf refused
    default=None, metavar="SECONDS",
    help="Total time per model call (connect + read + retries + backoff); overrides the policy "
         "endpoint's `deadline`.")


def with_deadline(endpoint: Any, deadline: float | None) -> Any:
    """An endpoint (or None) with its per-call ``deadline`` replaced when one is given."""
    if endpoint is None or deadline is None:
        return endpoint
    return endpoint.model_copy(update={"deadline": deadline})


def policy_with_deadline(policy: Any, deadline: float | None) -> Any:
    """A policy whose model endpoints (clearance evaluator, repair regen) use ``deadline``."""
    if deadline is None:
        return policy
    ev = policy.clearance.evaluator
    clearance = policy.clearance.model_copy(update={
        "evaluator": ev.model_copy(update={"endpoint": with_deadline(ev.endpoint, deadline)})})
    repair = policy.repair.model_copy(update={
        "regen_endpoint": with_deadline(policy.repair.regen_endpoint, deadline)})
    return policy.model_copy(update={"clearance": clearance, "repair": repair})


__all__ = ["EXIT_BAD_INPUT", "FiniteFloat", "deadline_option", "emit_json", "handle_errors", "policy_with_deadline",
           "with_deadline"]


from ..textsafe import markdown, terminal  # noqa: E402  (re-exported for the commands)

__all__ += ["markdown", "terminal"]
