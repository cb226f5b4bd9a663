"""Names of a package loaded on first access (PEP 562), so importing the package imports nothing else.

``memsteward`` and ``memsteward.policy`` keep a table name → defining module and take their
module-level ``__getattr__`` and ``__dir__`` from :func:`lazy_exports`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping, MutableMapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str], namespace: MutableMapping[str, Any],
                 public: Collection[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(``__getattr__``, ``__dir__``) for ``package``: a name of ``exports`` is imported from its
    module (relative to ``package``) on first access and cached in ``namespace`` (the package's
    globals); any other name is an AttributeError."""

    def getattr_(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *public})

    return getattr_, dir_
