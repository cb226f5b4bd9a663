"""Every path the CLI reads or writes is checked before it is opened (issue 17, item 4).

Opening a FIFO blocks, reading ``/dev/zero`` never ends, a directory or a ``/proc`` file is not
a document, and writing into ``/proc`` or a device is never what a user meant. So before a command
runs, each path argument is classified by name (the click parameter names used across the CLI)
and refused with one clear line (exit 2) unless it is:

* an **input** (policy, event, case, cohort, plan, store document): a regular file (or absent:
  the reader then reports "file not found"), or ``-`` for standard input (one per command);
* a **store**: a regular file, absent (where the command creates one) or ``:memory:``;
* an **output**: absent or a regular file outside ``/proc``, ``/sys`` and ``/dev``, in an
  existing directory.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Any

import click

from ..errors import InputError

INPUT_PARAMS = frozenset({"policy_path", "policy", "event_path", "document", "case", "cohort",
                          "policies", "old", "new", "plan_path"})
STORE_PARAMS = frozenset({"store_path", "src", "dst"})  # src/dst: `store copy`
OUTPUT_PARAMS = frozenset({"output", "out"})
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
    if path == ":memory:" or path.startswith(("postgresql://", "postgres://")):
        return  # a server URL: the store layer reports a DSN that cannot connect
    check_input(path, "store file (SQLite database or .json export)")


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


def check_paths(params: Mapping[str, Any]) -> None:
    """Check every path-valued parameter of a command (by the parameter names above); at most one
    input may be ``-`` (standard input can be read once)."""
    dashes = [name for name, value in params.items() if name in INPUT_PARAMS
              for v in (value if isinstance(value, (tuple, list)) else (value,)) if v == "-"]
    if len(dashes) > 1:
        raise InputError(f"standard input (-) can be read once, but {len(dashes)} inputs name it",
                         file="-", field=", ".join(sorted(set(dashes))))
    for name, value in params.items():
        if value is None or isinstance(value, bool):
            continue
        for v in value if isinstance(value, (tuple, list)) else (value,):
            if not isinstance(v, str):
                continue
            if name in STORE_PARAMS:
                check_store(v)
            elif name in OUTPUT_PARAMS:
                check_output(v)
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
