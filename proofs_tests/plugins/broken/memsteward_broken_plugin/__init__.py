"""memsteward plugins that misbehave on purpose (for memsteward's own tests)."""

from __future__ import annotations

import sys
from typing import Any

__version__ = "0.0.1"

NOT_A_PLUGIN = "a string is neither an operator nor an oracle"


class Explodes:
    name = "explodes"
    checks_content = False

    def check(self, artifact: Any) -> str | None:
        return None

    def __call__(self, artifact: Any, ctx: Any) -> Any:
        return 1 // 0


class Exits(Explodes):
    name = "exits"

    def __call__(self, artifact: Any, ctx: Any) -> Any:
        sys.exit(3)


class BadCheck(Explodes):
    name = "bad-check"

    def check(self, artifact: Any) -> str | None:
        raise KeyError("boom")


def explode(settings: Any, x: Any) -> Any:
    raise RuntimeError("the oracle plugin failed")
