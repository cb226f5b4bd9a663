"""Reading JSON inputs with one clear error (file, line, column) on failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import InputError

MAX_BYTES = 256 << 20


def read_json(path: str | Path) -> Any:
    """Parse a JSON file; any problem is an :class:`InputError` naming file, line and column."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", file=name) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a JSON file", file=name) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=name) from None
    if len(raw) > MAX_BYTES:
        raise InputError(f"file is {len(raw)} bytes, over the {MAX_BYTES}-byte limit", file=name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=name) from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=name, line=exc.lineno, col=exc.colno) from None
    except ValueError as exc:
        raise InputError(str(exc), file=name) from None
    except RecursionError:
        raise InputError("JSON nests too deeply", file=name) from None


def _reject_constant(token: str) -> float:
    raise ValueError(f"invalid JSON: {token} is not a number (NaN/Infinity are not allowed)")
