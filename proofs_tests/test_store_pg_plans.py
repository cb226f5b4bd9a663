"""PostgreSQL plans a freshly imported store's id-list statements through its indexes (issue 27).

Right after a bulk import the tables have no planner statistics (autovacuum comes up to a minute later).
A statement that joined the JSON id list to ``versions`` then seq-scanned the table in parallel and
spilled a sort: 130 ms instead of 0.1 ms at 2·10^5 artifacts, three such statements per delete. Each
statement of the dialect that takes an id list must use an index on a store without statistics
(EXPLAIN on a real server, autovacuum off for the store's tables so nothing analyses them meanwhile),
and a large import leaves the tables analysed.
"""

from __future__ import annotations

import psycopg
import pytest

from memsteward.repair.artifacts import Artifact, Edge, Snapshot
from memsteward.store import Store
from memsteward.store import driver as store_driver
from memsteward.store.queries.postgres import POSTGRES

N = 20_000  # artifacts (and influence edges) in one import: enough for a plan with no statistics to seq-scan
BIG = ("artifacts", "versions", "edges", "shingles")


def _stats(store) -> dict[str, float]:
    """reltuples of the big tables (-1: never analysed)."""
    return dict(store.conn.raw.execute("SELECT relname, reltuples FROM pg_class WHERE relnamespace = "
                                       "current_schema()::regnamespace AND relname = ANY(%s)", (list(BIG),)).fetchall())


def _snapshot(lo: int, hi: int) -> Snapshot:
    arts = {f"f{k}": Artifact(f"f{k}", "record", None, 1, f"filler {k} words of record number {k % 97}", {}, "servable")
            for k in range(lo, hi)}
    return Snapshot(arts, tuple(Edge(f"f{k}", f"f{k + 1}", "influence") for k in range(lo, hi - 1)))


def _id_list_statements():
    """(name, text) of every PostgreSQL statement that reads a JSON id list (``%s::json``)."""
    return [(k, v) for k, v in vars(POSTGRES).items() if isinstance(v, str) and "%s::json" in v]


def test_id_list_statements_use_an_index_on_a_store_without_statistics(pg_url, monkeypatch):
    monkeypatch.setattr(store_driver, "ANALYZE_MIN_ROWS", 10 ** 12)  # this import leaves no statistics
    store = Store.open(pg_url, create=True)
    try:
        for table in BIG:
            store.conn.raw.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        store.import_snapshot(_snapshot(0, N))
        assert set(_stats(store).values()) == {-1.0}, "precondition: the tables were never analysed"
        ids = '["f1", "f17", "f99", "f12345", "f19998"]'
        checked = []
        for name, sql in _id_list_statements():
            args = [ids if part.startswith("::json") else 1 for part in sql.split("%s")[1:]]
            plan = "\n".join(r[0] for r in store.conn.raw.execute("EXPLAIN (COSTS OFF) " + sql, args).fetchall())
            for table in BIG:
                assert f"Seq Scan on {table}" not in plan, f"{name} scans {table}:\n{plan}"
            checked.append(name)
        assert {"reindex_versions", "delete_shingles", "erasable_versions", "artifacts_of", "parent_edges",
                "unservable_of", "max_versions"} <= set(checked)
    finally:
        store.close()


def test_a_large_import_leaves_the_tables_analysed(pg_url):
    store = Store.open(pg_url, create=True)
    try:
        for table in BIG:
            store.conn.raw.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        store.import_snapshot(_snapshot(0, store_driver.ANALYZE_MIN_ROWS // 2))  # small: left to autovacuum
        assert set(_stats(store).values()) == {-1.0}
        store.import_snapshot(_snapshot(store_driver.ANALYZE_MIN_ROWS, 3 * store_driver.ANALYZE_MIN_ROWS))
        stats = _stats(store)
        assert stats["artifacts"] == pytest.approx(2.5 * store_driver.ANALYZE_MIN_ROWS, rel=0.05), stats
        assert stats["versions"] == pytest.approx(2.5 * store_driver.ANALYZE_MIN_ROWS, rel=0.05), stats
        assert stats["shingles"] > stats["versions"] and stats["edges"] > 0, stats
        with psycopg.connect(store.conn.raw.info.dsn, autocommit=True) as other:  # what any session plans with
            seen = other.execute("SELECT count(*) FROM pg_stats WHERE schemaname = %s AND tablename = 'versions' "
                                 "AND attname = 'id'", (store.conn.schema,)).fetchone()
        assert seen == (1,)
    finally:
        store.close()
