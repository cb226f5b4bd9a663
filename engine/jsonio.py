"""Reading input files with one clear error (file, line, column) on failure."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from .errors import InputError

MAX_BYTES = 256 << 20


def read_text(path: str | Path, max_bytes: int = MAX_BYTES, what: str = "file") -> str:
    """UTF-8 text of a file; missing, unreadable, oversized or non-UTF-8 input is an InputError."""
    name = str(path)
    try:
        mode = os.stat(path).st_mode  # before open(): opening a FIFO would block
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(name)
        if not stat.S_ISREG(mode):
            raise InputError(f"not a regular file, expected a {what}", file=name)
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise InputError("file not found", file=name) from None
    except IsADirectoryError:
        raise InputError(f"is a directory, expected a {what}", file=name) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=name) from None
    if len(raw) > max_bytes:
        raise InputError(f"document is over the {max_bytes}-byte limit", file=name, line=1)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=name) from None


def parse_json(text: str, name: str) -> Any:
    """Parse JSON text; errors name the line and column. NaN/Infinity are refused."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=name, line=exc.lineno, col=exc.colno) from None
    except ValueError as exc:
        raise InputError(str(exc), file=name) from None
    except RecursionError:
        raise InputError("JSON nests too deeply", file=name) from None


def read_json(path: str | Path, max_bytes: int = MAX_BYTES) -> Any:
    """Parse a JSON file; any problem is an :class:`InputError` naming file, line and column."""
    return parse_json(read_text(path, max_bytes, "JSON file"), str(path))


def _reject_constant(token: str) -> float:
    raise ValueError(f"invalid JSON: {token} is not a finite number (NaN and Infinity are not allowed)")
