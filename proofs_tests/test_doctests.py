"""The runnable examples in the public API's docstrings (each one is executed as a test)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["memsteward", "memsteward.api", "memsteward.repair.writes", "memsteward.store.sqlstore", "memsteward.store.reads",
           "memsteward.store.writepath", "memsteward.store.live", "memsteward.store.memory_log", "memsteward.store.crashing",
           "memsteward.store.postgres", "memsteward.store.pg_connect", "memsteward.store.driver",
           "memsteward.mcp.tenant", "memsteward.mcp.limits", "memsteward.mcp.memory", "memsteward.mcp.transports",
           "memsteward.repair.reingest", "memsteward.repair.schemas", "memsteward.integrations.langgraph.store",
           "memsteward.integrations.langgraph.values", "memsteward.integrations.langgraph.identity"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
