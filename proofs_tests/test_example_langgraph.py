"""examples/langgraph_memory.py run as a test: a LangGraph StateGraph writes memories and a derived
profile with extra fields, corrects one, forgets a user and lets a TTL expire; afterwards no deleted
string remains in any value, vector or file of the wrapped store, and every attestation passes.

Backends: LangGraph's SqliteStore on a file (values, files, TTL), PostgresStore on the real local
server in a fresh schema (values, relation files after CHECKPOINT, TTL) and InMemoryStore with a
vector index (values, vectors). The negative control breaks the repair's whole-value rebuild (the
old ``facts`` field kept) and checks that the same inspection catches it.
"""

from __future__ import annotations

import importlib.util
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import pg_dsn

from memsteward.integrations.langgraph import events as governed

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "langgraph_memory.py"


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("langgraph_memory_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ex = _example()


def _assert_clean(report: dict[str, Any], expired: int) -> None:
    assert report["leftovers"] == {"values": [], "vectors": [], "files": []}, report["leftovers"]
    assert report["failed_checks"] == [] and all(report["attest"].values()), report["failed_checks"]
    assert report["forget_roots"] == 3 and report["expired"] == expired
    profile = report["profile"]  # rebuilt whole from the repaired successor: the new address, no old field
    assert "3 Quai Voltaire" in profile["content"] and "facts" not in profile and "city" not in profile
    assert profile["meta"] == {"sensitivity": 2, "source": "graph"}


def test_example_on_sqlite_store(tmp_path):
    _assert_clean(ex.run(ex.sqlite_store(str(tmp_path / "memory.db"))), expired=1)


def test_example_on_in_memory_store_with_vectors():
    inner = ex.memory_store()
    report = ex.run(inner)
    _assert_clean(report, expired=0)
    assert ex.vector_rows(inner), "the index holds vectors"


@pytest.fixture
def pg_schema_conn():
    import psycopg
    from psycopg.rows import dict_row

    dsn, name = pg_dsn(), f"lg_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{name}"')
    conn = psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                           options=f"-c search_path={name}")
    yield conn
    conn.close()
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


# The claim holds deterministically: a session holding a snapshot older than the deletes made VACUUM
# FULL keep erased rows in one CI run (test_langgraph_pg_files.py reproduces it); the scrub now waits
# for such snapshots to end, and the attestation fails naming them when they outlive the wait.
def test_example_on_postgres_store(pg_schema_conn):
    from langgraph.store.postgres import PostgresStore

    inner = PostgresStore(pg_schema_conn, ttl={"default_ttl": None, "refresh_on_read": False})
    inner.setup()
    assert ex.files(inner), "the relation files of the store's tables are read"
    _assert_clean(ex.run(inner), expired=1)


def test_the_inspection_fails_when_a_field_is_left_unrepaired(monkeypatch):
    """A broken rebuild that keeps the old value's ``facts`` field: the deleted address survives in
    the wrapped store's profile and in its re-embedded vectors, and the example's check says so."""
    real = governed.rebuilt

    def keeps_facts(old, content, meta, spec, keep_source, text_field="content"):
        value = real(old, content, meta, spec, keep_source, text_field)
        if old is not None and "facts" in old:
            value["facts"] = old["facts"]
        return value

    monkeypatch.setattr(governed, "rebuilt", keeps_facts)
    report = ex.run(ex.memory_store())
    assert "Alice lives at 12 Rue Cler in Paris." in report["leftovers"]["values"]
    assert not report["attest"]["correct"]
    assert any(c["check"] == "wrapped-values" for c in report["failed_checks"])
