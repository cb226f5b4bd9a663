"""Tests' own SQL behind the store's back, written once with ``?`` placeholders.

The store itself never rewrites SQL: each backend runs its own statements
(:mod:`memsteward.store.queries`). A test that pokes at a store's tables directly writes its statement
in SQLite's placeholder style and passes it through :func:`sql`, which gives psycopg's ``%s`` on a
PostgreSQL store. The statements it is used on are plain (no ``json_each``, no ``INSERT OR IGNORE``).
"""

from __future__ import annotations

from typing import Any


def sql(store: Any, text: str) -> str:
    """``text`` in the placeholder style of ``store``'s backend."""
    return text if store.backend == "sqlite" else text.replace("?", "%s")
