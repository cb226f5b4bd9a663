"""Schema versions, foreign databases and lost connections, on both backends (``store_at``).

* A store written by an older release (schema version 1) is refused by every command with one line
  naming ``memsteward store migrate``, exit 2, nothing changed; ``store migrate`` upgrades it in one
  transaction, after which the next event succeeds. A newer version and a database with foreign
  tables are refused the same way. References: the bytes / rows of the store (``store_fingerprint``)
  and the columns of a store created fresh.
* PostgreSQL: the server terminates a writer's session (``pg_terminate_backend``, the fault a server
  restart causes, injected without restarting the shared server) in the middle of an event → exit 2
  with a clear message (not 3), the event not begun or recoverable, ``recover`` ends in the result of
  an uninterrupted run.
* Lease liveness across hosts: a lease whose holder's PostgreSQL session is gone is taken over even
  when it names another host; one whose session lives is respected.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from conftest import store_fingerprint
from store_import import import_document

from memsteward.store import Store
from memsteward.store.schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
POLICY = str(ROOT / "policies" / "default.yaml")
CLI = str(Path(sys.executable).with_name("memsteward"))


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)


def _crash_run(at: int, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The command line whose stores are killed at their ``at``-th checkpoint (memsteward.testing.crash)."""
    return subprocess.run([sys.executable, "-m", "memsteward.testing.crash", str(at), *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300, env=env)


def _sql(loc: str, *statements: str) -> list:
    """Run statements on the store's database behind the engine's back; the last one's rows."""
    rows: list = []
    if loc.startswith("postgresql://"):
        import psycopg

        dsn, schema = loc.rsplit("?schema=", 1)
        with psycopg.connect(dsn, autocommit=True) as con:
            con.execute(f'SET search_path TO "{schema}"')
            for st in statements:
                cur = con.execute(st)
                rows = cur.fetchall() if cur.description else []
        return rows
    con = sqlite3.connect(loc, isolation_level=None)
    for st in statements:
        rows = con.execute(st).fetchall()
    con.close()
    return rows


def _columns(loc: str, table: str) -> list[str]:
    if loc.startswith("postgresql://"):
        return [c for (c,) in _sql(loc, "SELECT column_name FROM information_schema.columns WHERE "
                                         f"table_schema = current_schema() AND table_name = '{table}' ORDER BY ordinal_position")]
    return [r[1] for r in _sql(loc, f"PRAGMA table_info({table})")]


def _imported(loc: str) -> str:
    return import_document(loc, DATA / "store.json")


def _downgrade_to_v1(loc: str) -> None:
    """The store as release 1 left it: no session column in event_lease; SQLite without the version table;
    every version in plaintext and no key store (encryption at rest came with schema version 6)."""
    from shred_helpers import to_plaintext

    from memsteward.store.sqlstore import Store
    to_plaintext(Store.open(loc))
    if loc.startswith("postgresql://"):
        _sql(loc, "ALTER TABLE event_lease DROP COLUMN session", "UPDATE memsteward_schema SET version = 1")
    else:
        _sql(loc, "ALTER TABLE event_lease DROP COLUMN session", "DROP TABLE memsteward_schema")


def _one_line_exit_2(r: subprocess.CompletedProcess, *words: str) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def test_older_schema_is_refused_until_migrated(store_at, tmp_path):
    loc = _imported(store_at("old"))
    fresh_columns = _columns(loc, "event_lease")
    _downgrade_to_v1(loc)
    assert "session" not in _columns(loc, "event_lease")
    before = store_fingerprint(loc)
    for args in (["store", "serve", "--store", loc], ["recover", "--store", loc],
                 ["repair", "--policy", POLICY, "--store", loc, "--event", str(DATA / "event-delete.json")],
                 ["store", "import", "--store", loc, str(DATA / "store.json")]):
        _one_line_exit_2(_run(*args), f"memsteward store migrate --store {loc}", "schema version 1")
        assert store_fingerprint(loc) == before, args
    r = _run("store", "migrate", "--store", loc, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"store": loc, "from": 1, "to": SCHEMA_VERSION, "migrated": True}
    assert _columns(loc, "event_lease") == fresh_columns  # reference: a store created by this release
    r = _run("store", "migrate", "--store", loc)
    assert r.returncode == 0 and "already at schema version" in r.stdout
    r = _run("repair", "--policy", POLICY, "--store", loc, "--event", str(DATA / "event-delete.json"))
    assert r.returncode == 0, r.stderr
    assert _run("audit", "--store", loc, "--check").returncode == 0


def _edge_indexes(loc: str) -> dict[str, str]:
    if loc.startswith("postgresql://"):  # indexdef names the schema: left out
        return {n: d.replace(f" {schema}.edges ", " edges ") for n, d, schema in _sql(
            loc, "SELECT indexname, indexdef, schemaname FROM pg_indexes WHERE schemaname = current_schema() "
                 "AND tablename = 'edges' AND indexname NOT LIKE '%pkey'")}
    return dict(_sql(loc, "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'edges' "
                          "AND sql IS NOT NULL"))


def test_version_4_store_gets_the_covering_parents_index(store_at):
    """Schema 5: ``edges_parents`` ON edges(dst, type, src) replaces ``edges_dst``; a version-4 store is
    refused until migrated, then has exactly the index set of a fresh store and plans the same."""
    fresh = _imported(store_at("fresh"))
    loc = _imported(store_at("v4"))
    expected = _edge_indexes(fresh)
    assert set(expected) == {"edges_parents"}
    _sql(loc, "DROP INDEX edges_parents", "CREATE INDEX edges_dst ON edges(dst)",
         "UPDATE memsteward_schema SET version = 4")
    args = ("repair", "--policy", POLICY, "--dry-run", "--json", "--event", str(DATA / "event-migrate.json"))
    _one_line_exit_2(_run(*args[:-2], "--store", loc, *args[-2:]), "schema version 4")
    r = _run("store", "migrate", "--store", loc, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"store": loc, "from": 4, "to": SCHEMA_VERSION, "migrated": True}
    assert _edge_indexes(loc) == expected
    plans = [_run(*args[:-2], "--store", s, *args[-2:]) for s in (fresh, loc)]
    assert all(p.returncode == 0 for p in plans), [p.stderr for p in plans]
    assert json.loads(plans[0].stdout) == json.loads(plans[1].stdout)


def test_version_6_store_keeps_its_inline_policies_and_stores_new_ones_by_digest(store_at):
    """Schema 7: ``policies`` holds each policy once by its SHA-256 and ``events.policy`` the digest. A
    version-6 store (its events' policies inline) is refused until migrated; its old events still read
    and verify, and a new event under the same policy stores it once in ``policies``."""
    loc = _imported(store_at("v6"))
    r = _run("repair", "--policy", POLICY, "--store", loc, "--event", str(DATA / "event-delete.json"))
    assert r.returncode == 0, r.stderr
    policy = _sql(loc, "SELECT policy FROM policies")[0][0]
    _sql(loc, "UPDATE events SET policy = (SELECT p.policy FROM policies p WHERE p.digest = events.policy)",
         "DROP TABLE policies", "UPDATE memsteward_schema SET version = 6")  # as a release of version 6 wrote it
    _one_line_exit_2(_run("audit", "--store", loc, "--check"), "schema version 6")
    r = _run("store", "migrate", "--store", loc, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"store": loc, "from": 6, "to": SCHEMA_VERSION, "migrated": True}
    assert _sql(loc, "SELECT policy FROM events") == [(policy,)]  # kept inline
    assert _run("audit", "--store", loc, "--check").returncode == 0
    r = _run("repair", "--policy", POLICY, "--store", loc, "--event", str(DATA / "event-correct.json"))
    assert r.returncode == 0, r.stderr
    assert [tuple(r) for r in _sql(loc, "SELECT digest, policy FROM policies")] == [
        (_sql(loc, "SELECT policy FROM events WHERE id = 2")[0][0], policy)]
    checked = _run("audit", "--store", loc, "--check", "--json")
    assert checked.returncode == 0 and json.loads(checked.stdout)["ok"], checked.stdout


def _event_plans(loc: str) -> list[str]:
    """The query plans of the unfinished-event lookups (``recover``'s and every write's), as text."""
    from memsteward.store.queries.postgres import POSTGRES
    from memsteward.store.queries.sqlite import SQLITE

    pg = loc.startswith("postgresql://")
    q = POSTGRES if pg else SQLITE
    return [" ".join(str(c) for row in _sql(loc, ("EXPLAIN " if pg else "EXPLAIN QUERY PLAN ") + sql) for c in row)
            for sql in (q.unfinished_event, q.live_event)]


def test_version_7_store_gets_the_unfinished_events_index(store_at):
    """Schema 8: the unfinished event is found through ``events_unfinished``, a partial index of the events not
    yet done, not by a scan of every event. A version-7 store is refused until migrated, then has the index of a
    fresh store, and both lookups use it; ``recover`` still finds an unfinished event (one left by a crash)."""
    fresh = _imported(store_at("fresh"))
    index = "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'events_unfinished'" \
        if fresh.startswith("postgresql://") else "SELECT sql FROM sqlite_master WHERE name = 'events_unfinished'"
    expected = _sql(fresh, index)
    assert len(expected) == 1 and ("status <> 'done'" in str(expected) or "status != 'done'" in str(expected))
    assert all("events_unfinished" in plan for plan in _event_plans(fresh)), _event_plans(fresh)
    loc = _imported(store_at("v7"))
    _sql(loc, "DROP INDEX events_unfinished", "UPDATE memsteward_schema SET version = 7")
    assert not any("events_unfinished" in plan for plan in _event_plans(loc))
    _one_line_exit_2(_run("recover", "--store", loc), "schema version 7")
    r = _run("store", "migrate", "--store", loc, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"store": loc, "from": 7, "to": SCHEMA_VERSION, "migrated": True}
    assert [str(d).replace(_schema_of(loc), "S") for d in _sql(loc, index)] == \
        [str(d).replace(_schema_of(fresh), "S") for d in expected]
    assert all("events_unfinished" in plan for plan in _event_plans(loc)), _event_plans(loc)
    crashed = _crash_run(6, "repair", "--policy", POLICY, "--store", loc, "--event", str(DATA / "event-delete.json"))
    assert crashed.returncode < 0, crashed.stderr  # killed at checkpoint 6: after the barrier
    assert [tuple(r) for r in _sql(loc, "SELECT count(*) FROM events WHERE status != 'done'")] == [(1,)]
    r = _run("recover", "--store", loc)
    assert r.returncode == 0, r.stderr
    assert _sql(loc, "SELECT id FROM events WHERE status != 'done'") == []


def _schema_of(loc: str) -> str:
    return loc.rsplit("?schema=", 1)[1] if loc.startswith("postgresql://") else "\0"


def test_version_8_store_gets_the_pooled_key_column(store_at):
    """Schema 9: ``versions.dek`` names the pooled key a write sealed its version under. A version-8 store
    (no such column; every version under its own key) is refused until migrated; then its versions read,
    new writes record their pooled key, and a delete destroys both kinds of key (audit passes)."""
    loc = _imported(store_at("v8"))
    fresh = _columns(loc, "versions")
    _sql(loc, "DROP INDEX versions_dek", "DROP TABLE erasing_digests",  # schema 10's, on the column or after it
         "ALTER TABLE versions DROP COLUMN dek", "UPDATE memsteward_schema SET version = 8")
    _one_line_exit_2(_run("audit", "--store", loc, "--check"), "schema version 8")
    r = _run("store", "migrate", "--store", loc, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"store": loc, "from": 8, "to": SCHEMA_VERSION, "migrated": True}
    assert _columns(loc, "versions") == fresh and fresh[-1] == "dek"
    assert {d for (d,) in _sql(loc, "SELECT dek FROM versions")} == {None}
    assert _sql(loc, "SELECT count(*) FROM erasing_digests") == [(0,)]
    s = Store.open(loc)
    index = ("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'versions_dek'"
             if loc.startswith("postgresql://") else "SELECT name FROM sqlite_master WHERE name = 'versions_dek'")
    assert _sql(loc, index) == [("versions_dek",)]
    s.record({"id": "p9", "kind": "record", "content": "a new memory after the migration"}, inputs=["p1"])
    s.close()
    (dek,) = _sql(loc, "SELECT dek FROM versions WHERE id = 'p9'")[0]
    assert dek
    r = _run("repair", "--policy", POLICY, "--store", loc, "--event", str(DATA / "event-delete.json"), "--json")
    assert r.returncode == 0, r.stderr
    assert ("p9", 1, 1) in {tuple(x) for x in _sql(loc, "SELECT id, version, erased FROM versions")}
    for args in (("audit", "--store", loc, "--json"), ("audit", "--store", loc, "--check", "--json")):
        checked = _run(*args)
        assert checked.returncode == 0 and json.loads(checked.stdout)["ok"], checked.stdout + checked.stderr


def test_newer_schema_and_foreign_tables_are_refused(store_at):
    loc = _imported(store_at("new"))
    _sql(loc, "UPDATE memsteward_schema SET version = 99")
    before = store_fingerprint(loc)
    for args in (["store", "serve", "--store", loc], ["store", "migrate", "--store", loc]):
        _one_line_exit_2(_run(*args), "schema version 99", "newer release")
    assert store_fingerprint(loc) == before
    foreign = store_at("foreign")
    if foreign.startswith("postgresql://"):
        import psycopg

        dsn, schema = foreign.rsplit("?schema=", 1)
        with psycopg.connect(dsn, autocommit=True) as con:
            con.execute(f'CREATE SCHEMA "{schema}"')
            con.execute(f'CREATE TABLE "{schema}".users(id INTEGER)')
    else:
        _sql(foreign, "CREATE TABLE users(id INTEGER)")
    before = store_fingerprint(foreign)
    for args in (["store", "serve", "--store", foreign], ["store", "migrate", "--store", foreign],
                 ["store", "import", "--store", foreign, str(DATA / "store.json")]):
        _one_line_exit_2(_run(*args), "not a memsteward store")
    assert store_fingerprint(foreign) == before


# ----------------------------------------------------------------------------- PostgreSQL faults

def _pg_exec(pg_schemas, sql: str, args=()) -> list:
    import psycopg

    with psycopg.connect(pg_schemas.dsn, autocommit=True) as con:
        cur = con.execute(sql, args)
        return cur.fetchall() if cur.description else []


def _final(loc: str) -> dict:
    s = Store.open(loc)
    d = s.dump_state()
    s.close()
    return {"artifacts": d["artifacts"], "versions": d["versions"]}


def test_terminated_session_mid_event_exits_2_and_is_recoverable(pg_schemas):
    """The server ends the writer's session (as a restart does) at random points of an event: the
    CLI exits 2 naming `memsteward recover`, nothing of C(F) is servable, no version is lost, and
    recover from another process ends exactly where an uninterrupted run ends."""
    ref = _imported(pg_schemas.url())
    assert _run("repair", "--policy", POLICY, "--store", ref, "--event", str(DATA / "event-delete.json")).returncode == 0
    expected = _final(ref)
    rng = random.Random("pg-terminate")
    outcomes = []
    for trigger in ["barrier", "barrier", "delay", "delay"]:
        loc = _imported(pg_schemas.url())
        s = Store.open(loc)
        before = {(i, v) for i in s.states() for v, _, _ in s.versions(i)}
        s.close()
        child = subprocess.Popen([CLI, "repair", "--policy", POLICY, "--store", loc, "--event",
                                  str(DATA / "event-delete.json")], cwd=ROOT, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        name = f"memsteward:{child.pid}"
        deadline = time.monotonic() + 60
        while child.poll() is None and time.monotonic() < deadline:
            if trigger == "barrier":  # wait until the barrier committed: the event is under way
                if _sql(loc, "SELECT COUNT(*) FROM events")[0][0]:
                    break
            elif _pg_exec(pg_schemas, "SELECT 1 FROM pg_stat_activity WHERE application_name = %s", (name,)):
                time.sleep(rng.uniform(0.0, 1.0))
                break
            time.sleep(0.01)
        killed = _pg_exec(pg_schemas, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                      "WHERE application_name = %s", (name,))
        out, err = child.communicate(timeout=120)
        if child.returncode == 0:
            outcomes.append("finished first")
        else:
            _one_line_exit_2(subprocess.CompletedProcess([], child.returncode, out, err),
                             "PostgreSQL connection failed", f"memsteward recover --store {loc}")
            outcomes.append("terminated")
        assert killed or child.returncode == 0
        s = Store.open(loc)
        assert before <= {(i, v) for i in s.states() for v, _, _ in s.versions(i)}  # no version lost
        pending = s.unfinished_event()
        if pending is not None:
            assert not (set(pending[3]["cascade"]) & {a.id for a in s.serve()})  # the barrier holds
        began = s.event() is not None
        s.close()
        r = _run("recover", "--store", loc)
        assert r.returncode == 0, r.stderr
        if began:
            assert _final(loc) == expected, trigger
    assert "terminated" in outcomes, outcomes  # the fault really hit an event under way


def _crashed(loc: str) -> str:
    _imported(loc)
    env = dict(os.environ)  # killed at checkpoint 6: after the barrier, while staging successors
    r = _crash_run(6, "repair", "--policy", POLICY, "--store", loc, "--event", str(DATA / "event-delete.json"), env=env)
    assert r.returncode < 0, r.stderr
    return loc


def test_lease_liveness_follows_the_postgres_session_across_hosts(pg_schemas):
    """The lease names another host (a pid check is impossible there): a lease whose session the
    server no longer runs is taken over; one whose session is alive makes recover stand down."""
    import psycopg

    loc = _crashed(pg_schemas.url())
    holder = psycopg.connect(pg_schemas.dsn, autocommit=True)  # stands for the writer on the other host
    pid, start = holder.execute("SELECT pid, backend_start::text FROM pg_stat_activity "
                                "WHERE pid = pg_backend_pid()").fetchone()
    _sql(loc, f"UPDATE event_lease SET host = 'other-host.example', pid = 4242, session = '{pid}@{start}'")
    r = _run("recover", "--store", loc, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["recovered"] is False, r.stdout
    assert json.loads(r.stdout)["held_by"]["host"] == "other-host.example"
    holder.close()  # the other host's process dies: the server ends its session
    for _ in range(100):
        if not _pg_exec(pg_schemas, "SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)):
            break
        time.sleep(0.05)
    r = _run("recover", "--store", loc, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["recovered"] is True, r.stdout
    assert Store.open(loc).unfinished_event() is None
