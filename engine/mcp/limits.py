"""Bounds on what one MCP request may make the server do, and the one error a tool returns.

Every number that drives work is bounded before any store read (DESIGN: "bound every number that
drives work"). A tool's arguments are walked once, iteratively (so a deeply nested document is
refused by depth, never by a ``RecursionError``):

* nesting depth ≤ :data:`MAX_DEPTH`, every string ≤ :data:`MAX_STRING` characters, every list or
  object ≤ :data:`MAX_ITEMS` members, and all of them together ≤ :data:`MAX_NODES` values;
* over HTTP the request body is capped at :data:`MAX_BODY_BYTES` by the transport (413).

:class:`ToolError` carries a message the server wrote itself: it names the argument path and the
rule, never the offending value, so an error cannot echo content or a secret back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_BODY_BYTES", "MAX_DEPTH", "MAX_ITEMS", "MAX_NODES", "MAX_RESULTS", "MAX_STRING", "ToolError",
           "check_arguments", "path_text"]

MAX_DEPTH = 16
MAX_STRING = 256 * 1024
MAX_ITEMS = 1000
MAX_NODES = 20_000
MAX_RESULTS = 1000
MAX_BODY_BYTES = 4 << 20


class ToolError(Exception):
    """A tool call refused with a message written by the server (no input is repeated in it)."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def render(self) -> str:
        return f"{self.message} [{self.field}]" if self.field else self.message


def path_text(path: tuple[str | int, ...]) -> str:
    """``("entities", 3, "name")`` → ``entities[3].name`` (keys are shown only when they are short
    identifiers; any other key is shown as ``?``, so a hostile key is never echoed).

    >>> path_text(("entities", 3, "name"))
    'entities[3].name'
    """
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = part if len(part) <= 40 and part.replace("_", "").isalnum() else "?"
            out += f".{name}" if out else name
    return out or "arguments"


def check_arguments(arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments as a dict, after checking depth, string sizes, collection sizes and total size.

    Raises
    ------
    ToolError
        naming the path of the first value over a bound (never the value).

    Examples
    --------
    >>> check_arguments({"query": "tea"})
    {'query': 'tea'}
    >>> deep: dict = {}
    >>> node = deep
    >>> for _ in range(100):
    ...     node["x"] = {}
    ...     node = node["x"]
    >>> check_arguments(deep)
    Traceback (most recent call last):
    ...
    memsteward.mcp.limits.ToolError: arguments nest deeper than 16 levels
    """
    args = dict(arguments or {})
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(args, ())]
    nodes = 0
    while stack:
        value, path = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise ToolError(f"arguments hold more than {MAX_NODES} values")
        if len(path) > MAX_DEPTH:
            raise ToolError(f"arguments nest deeper than {MAX_DEPTH} levels")
        if isinstance(value, str):
            if len(value) > MAX_STRING:
                raise ToolError(f"a string is longer than {MAX_STRING} characters", path_text(path))
        elif isinstance(value, Mapping):
            if len(value) > MAX_ITEMS:
                raise ToolError(f"an object has more than {MAX_ITEMS} members", path_text(path))
            for key, item in value.items():
                if not isinstance(key, str) or len(key) > MAX_STRING:
                    raise ToolError("an object key is not a bounded string", path_text(path))
                stack.append((item, (*path, key)))
        elif isinstance(value, (list, tuple)):
            if len(value) > MAX_ITEMS:
                raise ToolError(f"a list has more than {MAX_ITEMS} items", path_text(path))
            stack.extend((item, (*path, k)) for k, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            raise ToolError("a number is not finite", path_text(path))
    return args
