"""Reading input files with one clear error (file, line, column) on failure."""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

from .errors import InputError

MAX_BYTES = 256 << 20
MAX_DEPTH = 128  # nesting of any JSON document memsteward reads
MAX_INT = 2**63 - 1  # integers must fit SQLite's INTEGER and convert to a finite float
MAX_INT_DIGITS = 19


STDIN = "-"
"""The file name that means standard input, wherever the CLI reads a file (``--event -``)."""


def read_stdin(max_bytes: int = MAX_BYTES) -> bytes:
    """At most ``max_bytes`` of standard input (an oversized stream is an InputError, read no further)."""
    import sys

    raw = sys.stdin.buffer.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise InputError(f"document is over the {max_bytes}-byte limit", file="<stdin>", line=1)
    return raw


def source_name(path: str | Path) -> str:
    """How an input is named in messages: ``<stdin>`` for ``"-"``, else the path."""
    return "<stdin>" if str(path) == STDIN and not isinstance(path, Path) else str(path)


def read_text(path: str | Path, max_bytes: int = MAX_BYTES, what: str = "file") -> str:
    """UTF-8 text of a file, or of standard input when ``path`` is ``"-"``; missing, unreadable,
    oversized or non-UTF-8 input is an InputError."""
    name = str(path)
    if name == STDIN and not isinstance(path, Path):
        name, raw = "<stdin>", read_stdin(max_bytes)
        return _decoded(raw, name)
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
    return _decoded(raw, name)


def _decoded(raw: bytes, name: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file=name) from None


def parse_json(text: str, name: str, line: int | None = None) -> Any:
    """Parse JSON text; errors name the line and column.

    Strict: a key given twice in one object is refused (JSON leaves it undefined; Python keeps the
    last, so ``{"type": "correct", "type": "delete"}`` would run as a delete). Bounded by
    construction: NaN/Infinity literals, numbers that overflow a float (``1e400``),
    integers beyond ±(2^63 − 1), strings holding lone surrogates (``"\\ud800"``) and nesting
    deeper than :data:`MAX_DEPTH` are all refused. ``line`` (for one line of a JSONL file) is
    reported instead of the decoder's line.
    """
    try:
        doc = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float,
                         parse_int=_bounded_int, object_pairs_hook=unique_keys)
    except DuplicateKey as exc:
        raise InputError(f"duplicate key {exc.key!r} in one object (each key may appear once)", file=name,
                         line=line, field=exc.key[:100]) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=name, line=line or exc.lineno, col=exc.colno) from None
    except ValueError as exc:
        raise InputError(str(exc), file=name, line=line) from None
    except RecursionError:
        raise InputError(f"JSON nests deeper than {MAX_DEPTH} levels", file=name, line=line) from None
    problem = tree_problem(doc)
    if problem is not None:
        where, msg = problem
        raise InputError(msg, file=name, line=line, field=where)
    return doc


class DuplicateKey(ValueError):
    """A JSON object names one key twice."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing a key given twice (:class:`DuplicateKey`)."""
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return doc


def tree_problem(doc: Any, max_depth: int = MAX_DEPTH) -> tuple[str, str] | None:
    """(field, message) of the first value no store can hold, else None (iterative walk).

    Checks nesting depth, that object keys are strings, string encodability (lone surrogates) of
    keys and values, integer bounds and float finiteness — so values built in Python are held to
    what parsing enforces.
    """
    if type(doc) is str:  # the common content: one string, no walk
        return None if _encodable(doc) else ("", "string holds a lone surrogate (not valid Unicode)")
    stack: list[tuple[Any, str, int]] = [(doc, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if len(where) > 80:
            where = where[:79] + "…"
        if depth > max_depth:
            return where, f"nests deeper than {max_depth} levels"
        if isinstance(value, str):
            if not _encodable(value):
                return where, "string holds a lone surrogate (not valid Unicode)"
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            if abs(value) > MAX_INT:
                return where, f"integer beyond ±{MAX_INT}"
        elif isinstance(value, float):
            if not math.isfinite(value):
                return where, "not a finite number"
        elif isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    return where, f"object key is not a string ({type(k).__name__})"
                if not _encodable(k):
                    return where, "object key holds a lone surrogate (not valid Unicode)"
                stack.append((v, f"{where}.{k}" if where else k, depth + 1))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))
    return None


def _encodable(s: str) -> bool:
    if s.isascii():
        return True
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _finite_float(token: str) -> float:
    if len(token) > 400:  # float() is linear, but nobody writes a 400-character number
        raise ValueError(f"invalid JSON: a number of {len(token)} characters")
    value = float(token)
    if not math.isfinite(value):
        raise ValueError(f"invalid JSON: {token[:40]} overflows a 64-bit float")
    return value


def _bounded_int(token: str) -> int:
    digits = len(token.lstrip("-"))
    if digits > MAX_INT_DIGITS or abs(value := int(token)) > MAX_INT:
        raise ValueError(f"invalid JSON: integer {token[:24]}{'…' if len(token) > 24 else ''} is "
                         f"beyond ±{MAX_INT}")
    return value


def read_json(path: str | Path, max_bytes: int = MAX_BYTES) -> Any:
    """Parse a JSON file; any problem is an :class:`InputError` naming file, line and column."""
    return parse_json(read_text(path, max_bytes, "JSON file"), source_name(path))


def _reject_constant(token: str) -> float:
    raise ValueError(f"invalid JSON: {token} is not a finite number (NaN and Infinity are not allowed)")


_DECIMAL_EXPONENT = re.compile(r"[eE]([+-]?\d+)\s*$")
MAX_RATIONAL_CHARS = 200
MAX_DECIMAL_EXPONENT = 400


def bounded_fraction(value: Any) -> Fraction:
    """``Fraction(value)`` for a rational written as text (``"3/4"``, ``"-1.25e-3"``) or a number,
    bounded so that parsing cannot run away: at most 200 characters and a decimal exponent within
    ±400 (``Fraction("1e100000000")`` would build a 10^8-digit integer). ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError("a rational, not a boolean")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("not a finite number")
        return Fraction(value)
    if not isinstance(value, str) or len(value) > MAX_RATIONAL_CHARS:
        raise ValueError(f"a rational is a string of at most {MAX_RATIONAL_CHARS} characters")
    m = _DECIMAL_EXPONENT.search(value)
    if m and abs(int(m.group(1)[:8])) > MAX_DECIMAL_EXPONENT:
        raise ValueError(f"decimal exponent beyond ±{MAX_DECIMAL_EXPONENT}")
    return Fraction(value)


def write_streamed(write: Callable[[str], Any], doc: Any, default: Callable[[Any], Any] | None = None) -> None:
    """Write ``doc`` as ``json.dumps(doc, indent=2, default=default)`` writes it, byte for byte, without
    holding it: ``doc`` is an iterator (a top-level array) or a dict whose values may be iterators
    (arrays), and each element is encoded and written on its own. A store of 10^6 artifacts exports
    through a few megabytes instead of its whole document (``memsteward store export``, ``serve
    --json``, ``log --json``). Other values are encoded whole."""
    if isinstance(doc, dict):
        if not doc:
            write("{}")
            return
        sep = "{"
        for key, value in doc.items():
            write(f"{sep}\n  {json.dumps(key)}: ")
            _write_value(write, value, "  ", default)
            sep = ","
        write("\n}")
        return
    _write_value(write, doc, "", default)


def _write_value(write: Callable[[str], Any], value: Any, pad: str, default: Callable[[Any], Any] | None) -> None:
    if not isinstance(value, Iterator):
        write(json.dumps(value, indent=2, default=default).replace("\n", "\n" + pad))
        return
    inner = pad + "  "
    sep = "["
    for item in value:
        write(f"{sep}\n{inner}" + json.dumps(item, indent=2, default=default).replace("\n", "\n" + inner))
        sep = ","
    write("[]" if sep == "[" else f"\n{pad}]")
