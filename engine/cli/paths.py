"""Every path the CLI reads or writes is checked before it is opened (issue 17, item 4).

Opening a FIFO blocks, reading ``/dev/zero`` never ends, a directory or a ``/proc`` file is not
a document, and writing into ``/proc`` or a device is never what a user meant. So before a command
runs, each path argument is classified by name (the click parameter names used across the CLI)
and refused with one clear line (exit 2) unless it is:

* an **input** (policy, event, case, cohort, plan, store document): a regular file (or absent:
  the reader then reports "file not found"), or ``-`` for standard input (one per command);
* a **store**: a regular file, absent (where the command creates one) or ``:memory:``;
* an **output**: absent or a regular file outside ``/proc``, ``/sys`` and ``/dev``, in an
  existing directory, and never one of the command's own files: its store (or the store's
  ``-wal``/``-shm``/``-journal`` or a key file beside it), a key file named in the environment, or
  any of its inputs — compared by real path (symlinks) and by inode (hard links). Outputs are then
  written beside and renamed (:mod:`memsteward.safewrite`), so even a failure leaves the old file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Any

import click

from ..errors import InputError, printable
from ..safewrite import same_file, store_files

INPUT_PARAMS = frozenset({"policy_path", "policy", "event_path", "document", "case", "cohort",
                          "policies", "old", "new", "plan_path", "case_path", "event_files",
                          "properties_policy"})
STORE_PARAMS = frozenset({"store_path", "src", "dst", "replay_store"})  # src/dst: `store copy`
OUTPUT_PARAMS = frozenset({"output", "out", "junit_path"})
READ_ONLY_PARAMS = frozenset({"paths"})  # `test PATHS…`: files or folders, protected but not type-checked
WRITTEN_STORES = frozenset({"dst"})  # a store the command creates: it must not be another store's file
#: environment variables naming key files (master key, audit key) that no output may overwrite
KEY_FILE_VARS = ("MEMSTEWARD_MASTER_KEY_FILE", "MEMSTEWARD_AUDIT_KEY_FILE", "MEMSTEWARD_KEY_FILE")
PSEUDO_FILESYSTEMS = ("/proc", "/sys", "/dev")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot inspect the path: {getattr(exc, 'strerror', None) or exc}", file=path) from None


def _pseudo(path: str) -> bool:
    real = os.path.realpath(path)
    return any(real == p or real.startswith(p + "/") for p in PSEUDO_FILESYSTEMS)


def check_input(path: str, what: str = "input file") -> None:
    if path == "-":
        return
    st = _stat(path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputError(f"not a regular file ({_kind(st.st_mode)}), expected a {what}", file=path)
    if st is not None and _pseudo(path):
        raise InputError(f"is a file of a pseudo-filesystem (/proc, /sys, /dev), expected a {what}", file=path)


def check_store(path: str) -> None:
    """A store path or URL: a bad ``?tenant=`` is refused here; a file (a tenant's file included)
    that exists must be a regular file."""
    from ..store.opening import store_file

    file = store_file(path)
    if file is not None:  # None: a server URL (the store layer reports a DSN that cannot connect) or :memory:
        check_input(file, "store file (SQLite database or .json export)")


def check_output(path: str) -> None:
    if path == "-":
        return
    st = _stat(path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputError(f"not a regular file ({_kind(st.st_mode)}), expected a file to write", file=path)
    if _pseudo(path):
        raise InputError("cannot write into /proc, /sys or /dev", file=path)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InputError("the directory to write into does not exist", file=path)


def _values(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for name, value in params.items():
        if value is None or isinstance(value, bool):
            continue
        for v in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(v, str) and v != "-":
                out.append((name, v))
    return out


def _is_file_store(path: str) -> bool:
    return path != ":memory:" and not path.startswith(("postgresql://", "postgres://"))


def protected_files(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(file, what it is) for every file the command reads: store files and the files beside them,
    inputs, and the key files the environment names."""
    files: list[tuple[str, str]] = []
    for name, v in _values(params):
        if name in STORE_PARAMS and name not in WRITTEN_STORES and _is_file_store(v):
            files += [(f, "the store" if f == v else "a file of the store") for f in store_files(v)]
        elif name in INPUT_PARAMS or name in READ_ONLY_PARAMS:
            files.append((v, "an input of this command"))
    files += [(os.environ[var], f"the key file named by ${var}") for var in KEY_FILE_VARS if os.environ.get(var)]
    return files


def check_clobber(output: str, protected: list[tuple[str, str]]) -> None:
    """Refuse an output that is (by real path or inode) one of the ``protected`` files."""
    for path, what in protected:
        if same_file(output, path):
            raise InputError(f"refusing to write over {what} ({printable(path)[:200]}); choose another output "
                             "path", file=output)


def check_paths(params: Mapping[str, Any]) -> None:
    """Check every path-valued parameter of a command (by the parameter names above); an output
    (or a store the command creates) must not be any file the command reads; at most one input may
    be ``-`` (standard input can be read once)."""
    dashes = [name for name, value in params.items() if name in INPUT_PARAMS
              for v in (value if isinstance(value, (tuple, list)) else (value,)) if v == "-"]
    if len(dashes) > 1:
        raise InputError(f"standard input (-) can be read once, but {len(dashes)} inputs name it",
                         file="-", field=", ".join(sorted(set(dashes))))
    protected = protected_files(params)
    for name, v in _values(params):
        if name in STORE_PARAMS:
            check_store(v)
            if name in WRITTEN_STORES and _is_file_store(v):
                for f in store_files(v):
                    check_clobber(f, protected)
        elif name in OUTPUT_PARAMS:
            check_output(v)
            check_clobber(v, protected)
        elif name in INPUT_PARAMS:
            check_input(v)


class FiniteFloat(click.ParamType):
    """A float flag that must be finite and within [lo, hi] (nan, inf, 1e309 are refused)."""

    name = "number"

    def __init__(self, lo: float = 0.0, hi: float = 1e12) -> None:
        self.lo, self.hi = lo, hi

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        if isinstance(value, float):
            x = value
        else:
            text = str(value).strip()
            if len(text) > 64:
                self.fail(f"{len(text)} characters is not a number", param, ctx)
            try:
                x = float(text)
            except ValueError:
                self.fail(f"{text!r} is not a number", param, ctx)
        if x != x or not self.lo <= x <= self.hi:
            self.fail(f"must be a finite number in [{self.lo:g}, {self.hi:g}]", param, ctx)
        return x
