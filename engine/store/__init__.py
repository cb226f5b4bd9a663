"""memsteward.store: everything about persistence, behind the protocols of :mod:`.api`.

Planning and execution take the protocols (:class:`~memsteward.store.api.Provenance`,
:class:`~memsteward.store.api.RepairLog`, :class:`~memsteward.store.api.Reader`, …), never the
concrete class; :func:`open_store` is the one edge that picks a backend from a path or URL.
Names load on first use (PEP 562), so importing the package imports no database driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazyexports import lazy_exports

# name → the module (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
    "MemoryStore": ".memory_log",
    "SqlStore": ".sqlstore",
    "Store": ".sqlstore",
    "content_digest": "..repair.writes",
    "db_errors": ".connection",
    "digest": ".core",
    "open_store": ".opening",
    "redact": ".connection",
}

__all__ = ["MemoryStore", "SqlStore", "Store", "content_digest", "db_errors", "digest", "open_store", "redact"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), __all__)


if TYPE_CHECKING:  # static analysers see the eager imports, re-exported explicitly (`X as X`)
    from ..repair.writes import content_digest as content_digest
    from .connection import db_errors as db_errors
    from .connection import redact as redact
    from .core import digest as digest
    from .memory_log import MemoryStore as MemoryStore
    from .opening import open_store as open_store
    from .sqlstore import SqlStore as SqlStore
    from .sqlstore import Store as Store
