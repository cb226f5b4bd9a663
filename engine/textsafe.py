"""Escaping untrusted text (ids, reasons, names read from a store or a file) before it is printed.

:func:`terminal` makes text inert on a terminal: C0/C1 control characters (ESC, CR, BEL, …),
DEL, lone surrogates and Unicode line/paragraph separators and bidi overrides become visible ``\\xNN`` / ``\\uNNNN``
escapes, so an id cannot move the cursor, clear the screen, recolour or hide output.
:func:`markdown` additionally backslash-escapes every Markdown/HTML metacharacter and the table pipe,
so an id cannot start a heading, a table row, emphasis, a link or a code span in a report.

Examples
--------
>>> terminal("ok\\x1b[2J")
'ok\\\\x1b[2J'
>>> markdown("| erasure | pass |")
'\\\\| erasure \\\\| pass \\\\|'
"""

from __future__ import annotations

import re
from typing import Any

# … and lone surrogates (``"\\ud800"`` from JSON, undecodable bytes in file names), which no
# terminal encoding can print
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~&:])")


def _escape_control(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def terminal(value: Any) -> str:
    """``str(value)`` with every control or bidi character shown as an escape."""
    return _CONTROL.sub(_escape_control, str(value))


def markdown(value: Any) -> str:
    """``terminal(value)`` with Markdown metacharacters backslash-escaped (safe in text and tables)."""
    return _MARKDOWN.sub(r"\\\1", terminal(value))
