"""PostgresStore's planner statistics after a forget, on the real local server.

``ANALYZE`` (autovacuum runs it by itself after enough writes) copies column values into
``pg_statistic`` (``pg_stats.most_common_vals``, ``histogram_bounds``): the namespace prefix with the
user id and short values with their text. ``VACUUM FULL`` does not touch them, so the scrub refreshes
them (``ANALYZE``; an emptied table's rows deleted) and rewrites ``pg_statistic``'s heap, and the
attestation reads them (``wrapped-statistics``).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import pg_dsn
from langgraph.store.postgres import PostgresStore
from langgraph_pg import postgres_store
from psycopg.rows import dict_row

import memsteward
from memsteward.integrations.langgraph import GovernedStore, physical

POLICY = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))


@pytest.fixture
def pg_store():
    with postgres_store("lgs") as inner:
        yield inner


def _user() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"u{tag}x", f"Carol's PIN for the Lyon branch is {int(tag, 16) % 10**9:09d}"


def _fill(gs: GovernedStore, user: str, secret: str, others: tuple[str, ...]) -> None:
    for u in (user, *others):
        for k in range(30):
            text = secret if (u == user and k == 0) else f"memory {k} of user {u}: likes item {k}"
            gs.put(("users", u, "memories"), f"m{k}", {"content": text})
    with gs.inner._cursor() as cur:
        cur.execute("ANALYZE store")  # what autovacuum's auto-analyze does after enough writes


def _stats_text(inner) -> str:
    with inner._cursor() as cur:
        cur.execute("SELECT coalesce(string_agg(concat_ws(' ', most_common_vals::text, histogram_bounds::text), ' '), '')"
                    " AS t FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'store'")
        return cur.fetchone()["t"]


def _forget(gs: GovernedStore, user: str) -> dict:
    return gs.forget(("users", user), expect=gs.preview_forget(("users", user)).digest)["attestation"]


def _check(report: dict, name: str) -> dict:
    return next(c for c in report["checks"] if c["check"] == name)


def test_forget_refreshes_the_statistics_and_rewrites_pg_statistic(pg_store):
    gs = GovernedStore(pg_store, memsteward.open_store(), POLICY, snapshot_wait=30)
    user, secret = _user()
    _fill(gs, user, secret, ("u0001", "u0002"))
    pin = secret.rsplit(" ", 1)[1]
    before = _stats_text(pg_store)
    assert user in before and pin in before, "ANALYZE copied the user id and the erased text into pg_stats"
    report = _forget(gs, user)
    after = _stats_text(pg_store)
    assert user not in after and pin not in after
    assert "u0001" in after, "the statistics were computed again from the remaining rows"
    assert report["ok"] and _check(report, "wrapped-statistics")["status"] == "pass"
    assert gs.last_scrub["statistics"]["catalog_rewritten"]
    with psycopg.connect(pg_dsn(), autocommit=True) as admin:
        admin.execute("CHECKPOINT")
        heap = admin.execute("SELECT current_setting('data_directory') || '/' || "
                             "pg_relation_filepath('pg_catalog.pg_statistic')").fetchone()[0]
    assert user.encode() not in Path(heap).read_bytes(), "no dead tuple of pg_statistic keeps the old values"


def test_forget_of_every_row_clears_the_statistics_analyze_would_keep(pg_store):
    """ANALYZE of an empty table writes no statistics and keeps the old ones: the scrub deletes them."""
    gs = GovernedStore(pg_store, memsteward.open_store(), POLICY, snapshot_wait=30)
    user, secret = _user()
    _fill(gs, user, secret, ())
    assert user in _stats_text(pg_store)
    report = _forget(gs, user)
    assert _stats_text(pg_store) == "" and gs.last_scrub["statistics"]["cleared"] == ["store"]
    assert report["ok"] and _check(report, "wrapped-statistics")["status"] == "pass"


def test_the_statistics_check_fails_when_they_hold_erased_text(pg_store, monkeypatch):
    """The scrub's refresh skipped: the statistics ANALYZE wrote before the forget stay, and the check
    finds the erased text in them."""
    monkeypatch.setattr(physical, "_refresh_statistics", lambda cur, tables: {"analyzed": [], "cleared": [],
                                                                              "stale": []})
    gs = GovernedStore(pg_store, memsteward.open_store(), POLICY, snapshot_wait=30)
    user, secret = _user()
    _fill(gs, user, secret, ("u0001", "u0002"))
    report = _forget(gs, user)
    check = _check(report, "wrapped-statistics")
    assert check["status"] == "fail" and not report["ok"]
    assert "; 0 of " not in check["detail"]
    assert _check(report, "wrapped-files")["status"] == "pass", "the relation files alone do not show it"


def test_pg_statistic_not_rewritten_is_unverified(pg_store, monkeypatch):
    """A role that may not VACUUM FULL pg_statistic (simulated): the event does not fail, the check says so."""
    monkeypatch.setattr(physical, "_rewrite_statistics_catalog", lambda cur: False)
    gs = GovernedStore(pg_store, memsteward.open_store(), POLICY, snapshot_wait=30)
    user, secret = _user()
    _fill(gs, user, secret, ("u0001",))
    report = _forget(gs, user)
    check = _check(report, "wrapped-statistics")
    assert check["status"] == "unverified" and check["ok"] and "pg_statistic" in check["detail"]
    assert "wrapped-statistics" in report["unverified"] and report["ok"]


@contextlib.contextmanager
def _role(prefix: str, *, database: bool = False) -> Iterator[str]:
    """A login role named ``<prefix>_<random>``; the same name serves for the test's schema or, with
    ``database``, for a database the role owns. Everything is dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_dsn(), autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{name}" LOGIN')
        if database:
            admin.execute(f'CREATE DATABASE "{name}" OWNER "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(pg_dsn(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"' if database else f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
            admin.execute(f'DROP OWNED BY "{name}"')
            admin.execute(f'DROP ROLE "{name}"')


def _connect(schema: str | None = None, **conninfo: str) -> psycopg.Connection:
    """A connection as PostgresStore wants one (``conninfo``: a role, a database), in ``schema``."""
    return psycopg.connect(psycopg.conninfo.make_conninfo(pg_dsn(), **conninfo), autocommit=True, prepare_threshold=0,
                           row_factory=dict_row, options=f"-c search_path={schema}" if schema else None)


def test_a_role_that_may_not_read_the_data_directory_gets_no_files_not_an_error():
    """Found while checking the statistics with a non-superuser: ``files()`` raised
    ``InsufficientPrivilege`` reading ``data_directory``; it now names no file, so the file check is
    ``unverified``. A real role on the real server, dropped afterwards."""
    with _role("lg_np") as role:
        with psycopg.connect(pg_dsn(), autocommit=True) as admin:
            admin.execute(f'CREATE SCHEMA "{role}" AUTHORIZATION "{role}"')
        with _connect(role, user=role) as conn:
            inner = PostgresStore(conn)
            inner.setup()
            assert physical.files(inner) == []


def test_a_role_that_does_not_own_the_tables_is_told_analyze_was_skipped():
    """Found by a second red-team round: for a role that does not own the wrapped tables the server
    skips ``ANALYZE`` with a notice, yet the scrub listed the table as analyzed. It is now listed as
    ``skipped``, and the failing ``wrapped-statistics`` check says why. A real role on the real server."""
    with _role("lg_no") as role:
        with psycopg.connect(pg_dsn(), autocommit=True) as admin:
            admin.execute(f'CREATE SCHEMA "{role}"')
            admin.execute(f'GRANT USAGE ON SCHEMA "{role}" TO "{role}"')
            with _connect(role) as owner:
                PostgresStore(owner).setup()  # the tables belong to the admin
            admin.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA "{role}" TO "{role}"')
        with _connect(role, user=role) as conn:
            gs = GovernedStore(PostgresStore(conn), memsteward.open_store(), POLICY)
            user, secret = _user()
            _fill(gs, user, secret, ("u0001",))
            with psycopg.connect(pg_dsn(), autocommit=True) as admin:
                admin.execute(f'ANALYZE "{role}".store')  # as autovacuum would
            report = _forget(gs, user)
            assert gs.last_scrub["statistics"]["skipped"] == ["store"]
            assert "store" not in gs.last_scrub["statistics"]["analyzed"]
            check = _check(report, "wrapped-statistics")
            assert not check["ok"] and "skipped" in check["detail"]


def test_the_database_owner_analyzes_tables_it_does_not_own():
    """Found by a third red-team round: PostgreSQL lets a database's owner ANALYZE every table in it,
    but the scrub's check asked only for the table's owner or a superuser and skipped it, leaving
    statistics the code before had refreshed. A real role owning a real database, dropped afterwards."""
    with _role("lg_dbo", database=True) as role:
        with _connect(dbname=role) as owner:
            owner.execute("CREATE TABLE store (prefix text, key text, value jsonb)")  # the admin's table
            owner.execute("INSERT INTO store SELECT 'users.erin', 'k' || g, '{\"c\": \"Erin X1234567\"}' "
                          "FROM generate_series(1, 200) g")
            owner.execute("ANALYZE store")
            owner.execute("DELETE FROM store")
            owner.execute("INSERT INTO store VALUES ('users.bob', 'k', '{\"c\": \"Bob rows\"}')")
            owner.execute(f'GRANT ALL ON store TO "{role}"')
        with _connect(dbname=role, user=role) as conn, conn.cursor() as cur:
            report = physical._refresh_statistics(cur, ["store"])
            cur.execute("SELECT coalesce(string_agg(most_common_vals::text, ' '), '') AS v FROM pg_stats "
                        "WHERE tablename = 'store'")
            left = cur.fetchone()["v"]
        assert report["analyzed"] == ["store"] and report["skipped"] == []
        assert "users.erin" not in left
