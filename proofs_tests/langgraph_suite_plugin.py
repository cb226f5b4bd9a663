"""A pytest plugin: LangGraph's own store test suite, run against ``GovernedStore``.

The suite is ``tests/test_store.py`` of the installed ``langgraph-checkpoint`` version, taken from
its source distribution on PyPI by ``make langgraph-suite`` into ``.venv/langgraph-suite`` (never
committed here). Its tests build their stores as ``InMemoryStore(...)`` from the module's globals;
this plugin rebinds that one name, in the suite's module only, to :class:`GovernedInMemoryStore`: a
``GovernedStore`` over a fresh ``InMemoryStore`` with the same arguments, a fresh in-memory memsteward
store and the bundled default policy. Every other name (``MockAsyncBatchedStore``, the embeddings)
is LangGraph's. Run as::

    PYTHONPATH=proofs_tests python -m pytest -p langgraph_suite_plugin .venv/langgraph-suite/*/tests/test_store.py

Excluded tests (each spies on the inner class's internals, which a wrapper does not have):
:data:`EXCLUDED`.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

import memsteward
from memsteward.integrations.langgraph import GovernedStore

POLICY = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))

EXCLUDED: dict[str, str] = {}
"""test name → why it cannot run against a wrapper (empty: the whole suite runs)."""


class GovernedInMemoryStore(GovernedStore):
    """``InMemoryStore(**kwargs)`` behind the governed adapter (what the suite builds instead)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(InMemoryStore(**kwargs), memsteward.open_store(), POLICY)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    patched = 0
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and getattr(module, "InMemoryStore", None) is InMemoryStore:
            module.InMemoryStore = GovernedInMemoryStore
            patched += 1
        elif module is not None and getattr(module, "InMemoryStore", None) is GovernedInMemoryStore:
            patched += 1
        reason = EXCLUDED.get(getattr(item, "originalname", item.name))
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"excluded: {reason}"))
    if items and not patched:
        raise pytest.UsageError("langgraph_suite_plugin: no collected module builds InMemoryStore; "
                                "is this LangGraph's tests/test_store.py?")
