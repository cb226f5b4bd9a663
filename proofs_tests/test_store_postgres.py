"""The PostgreSQL backend against a real server (MEMSTEWARD_PG_DSN; CI's .ci/run always sets it).

What only PostgreSQL has: many writer processes on one store, serialised by the store's advisory
lock (the audit chain stays one total order, overlapping events never interleave), a kill -9 of a
writer recovered from another process, SQLSTATE 40001/40P01 retried, a DSN that cannot connect or a
schema that is not a store refused with exit 2, and `store copy` between the two backends. The
rest of the store suite runs on both backends through the ``store_backend`` fixture (conftest).
References are independent of the code: an audit replay for fencing, hashlib digests, the
uninterrupted run for recovery.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.policy.loader import load_policy_source
from memsteward.repair.artifacts import parse_store_document, read_json
from memsteward.repair.auditchain import first_broken
from memsteward.repair.events import load_event
from memsteward.repair.execute import run_event
from memsteward.repair.metrics import leak_pct, stale_use_pct
from memsteward.store import Store, content_digest
from memsteward.store.connection import RETRY_ATTEMPTS, retrying
from memsteward.store.queries.postgres import POSTGRES
from memsteward.store.queries.sqlite import SQLITE

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
POLICY = str(ROOT / "policies" / "default.yaml")
MEMSTEWARD = str(Path(sys.executable).parent / "memsteward")
WRITER = str(Path(__file__).resolve().parent / "pg_writer.py")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([MEMSTEWARD, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


# ----------------------------------------------------------------------------- the dialects

def _statements(queries):
    """(name, text) of every statement of a dialect's Queries (per-table ones as name[table])."""
    for f in dataclasses.fields(queries):
        value = getattr(queries, f.name)
        if isinstance(value, str):
            yield f.name, value
        elif value is not None:
            yield from ((f"{f.name}[{t}]", sql) for t, sql in value.items())


def test_each_dialect_spells_its_own_statements():
    """No statement of one dialect is written in the other's spelling (there is no translation between them)."""
    for name, sql in _statements(POSTGRES):
        assert not any(s in sql for s in ("?", "json_each", "OR IGNORE", "CROSS JOIN", "PRAGMA")), name
    for name, sql in _statements(SQLITE):
        assert "%s" not in sql and "json_array_elements" not in sql, name


def test_every_postgresql_statement_is_prepared_by_the_server(pg_url):
    """Each statement of the PostgreSQL dialect parses and type-checks against a real store's schema
    (PREPARE): a misspelt one fails here, not first when a rare path runs it."""
    store = Store.open(pg_url, create=True)
    try:
        for k, (name, sql) in enumerate(_statements(POSTGRES)):
            head, *rest = sql.split("%s")
            numbered = head + "".join(f"${j}{part}" for j, part in enumerate(rest, 1))
            try:
                store.conn.raw.execute(f"PREPARE memsteward_check_{k} AS {numbered}")
            except Exception as exc:  # noqa: BLE001 — reported with the statement's name
                pytest.fail(f"{name}: {exc}")
            store.conn.raw.execute(f"DEALLOCATE memsteward_check_{k}")
    finally:
        store.close()


def test_every_sqlite_statement_compiles(tmp_path):
    """Each statement of the SQLite dialect compiles against a real store's schema (EXPLAIN runs nothing)."""
    store = Store.open(str(tmp_path / "s.db"), create=True)
    try:
        for name, sql in _statements(SQLITE):
            try:
                store.conn.execute("EXPLAIN " + sql, (None,) * sql.count("?")).fetchall()
            except Exception as exc:  # noqa: BLE001 — reported with the statement's name
                pytest.fail(f"{name}: {exc}")
    finally:
        store.close()


def test_retry_reruns_real_serialization_failures_boundedly(pg_url):
    """The server itself raises SQLSTATE 40001 / 40P01; the retry re-runs, then gives up at the bound."""
    store = Store.open(pg_url, create=True)
    calls = []

    @retrying
    def flaky(fail: int, code: str) -> int:
        calls.append(code)
        if len(calls) <= fail:
            store.conn.raw.execute(f"DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '{code}'; END $$")
        return len(calls)

    assert flaky(2, "40001") == 3
    calls.clear()
    assert flaky(1, "40P01") == 2
    calls.clear()
    with pytest.raises(Exception) as info:
        flaky(RETRY_ATTEMPTS + 5, "40001")
    assert getattr(info.value, "sqlstate", None) == "40001" and len(calls) == RETRY_ATTEMPTS
    calls.clear()
    with pytest.raises(Exception) as info:  # any other error is not retried
        flaky(5, "23505")
    assert len(calls) == 1
    store.close()


# ----------------------------------------------------------------------------- bad input

def test_unreachable_dsn_is_exit_2_without_traceback():
    r = _run("store", "serve", "--store", "postgresql://nobody:secret@127.0.0.1:1/none")
    assert r.returncode == 2 and "cannot connect to PostgreSQL" in r.stderr and "Traceback" not in r.stderr
    assert "secret" not in r.stderr  # the password is never echoed


def test_foreign_schema_is_refused_and_left_unchanged(pg_schemas):
    import psycopg

    url = pg_schemas.url()
    name = url.rsplit("schema=", 1)[1]
    with psycopg.connect(pg_schemas.dsn, autocommit=True) as con:
        con.execute(f'CREATE SCHEMA "{name}"')
        con.execute(f'CREATE TABLE "{name}".users(id INTEGER)')
        r = _run("store", "import", "--store", url, str(DATA / "store.json"))
        assert r.returncode == 2 and "not a memsteward store" in r.stderr and "Traceback" not in r.stderr
        tables = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                                            (name,))}
        assert tables == {"users"}


def test_missing_store_is_exit_2_and_creates_nothing(pg_schemas):
    import psycopg

    url = pg_schemas.url()
    r = _run("store", "serve", "--store", url)
    assert r.returncode == 2 and "no memsteward store" in r.stderr
    with psycopg.connect(pg_schemas.dsn, autocommit=True) as con:
        name = url.rsplit("schema=", 1)[1]
        assert con.execute("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = %s",
                           (name,)).fetchone() == (0,)


# ----------------------------------------------------------------------------- store copy

def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


def test_store_copy_round_trip_sqlite_postgres_sqlite(tmp_path, pg_url):
    db, back = tmp_path / "a.db", tmp_path / "b.db"
    assert _cli("store", "import", "--store", str(db), str(DATA / "store.json")).exit_code == 0
    assert _cli("repair", "--policy", POLICY, "--store", str(db), "--event", str(DATA / "event-delete.json")).exit_code == 0
    r = _cli("store", "copy", str(db), pg_url, "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    # an event on the PostgreSQL side after the copy continues the same chain and event ids
    r = _cli("repair", "--policy", POLICY, "--store", pg_url, "--event", str(DATA / "event-correct.json"))
    assert r.exit_code == 0, r.output
    r = _cli("store", "copy", pg_url, str(back), "--json")
    assert r.exit_code == 0, r.output
    a, p, b = Store.open(str(db)), Store.open(pg_url), Store.open(str(back))
    assert report["rows"]["audit"] == len(a.audit_rows())
    assert p.dump_state() == b.dump_state()
    assert p.audit_rows() == b.audit_rows() and first_broken(b.audit_rows(), b.audit_head()) is None
    assert p.audit_rows()[:len(a.audit_rows())] == a.audit_rows()  # the copy kept every original row
    assert [e["id"] for e in (b.event(1), b.event(2))] == [1, 2]
    assert _cli("audit", "--store", str(back), "--check").exit_code == 0
    # copying onto a non-empty store is refused and changes nothing
    before = p.dump_state()
    r = _cli("store", "copy", str(db), pg_url)
    assert r.exit_code == 2 and "not empty" in r.output
    assert p.dump_state() == before
    for s in (a, p, b):
        s.close()


def test_store_copy_streams_in_batches_both_ways(tmp_path, pg_url, monkeypatch):
    """copy_into reads each table as it writes it, ``batch`` rows at a time, the PostgreSQL side
    flushing its pipelined writes per batch: with batches of 3 (and of 1) the copies in both
    directions hold every row of the source, and the PostgreSQL queue never holds more than a batch."""
    from memsteward.store.postgres import PgConnection

    src = tmp_path / "src.db"
    assert _cli("store", "import", "--store", str(src), str(DATA / "store.json")).exit_code == 0
    assert _cli("repair", "--policy", POLICY, "--store", str(src), "--event", str(DATA / "event-delete.json")).exit_code == 0
    sent: list[int] = []
    send = PgConnection._send
    monkeypatch.setattr(PgConnection, "_send", lambda self, batch: (sent.append(len(batch)), send(self, batch))[1])
    a, p = Store.open(str(src)), Store.open(pg_url, create=True)
    counts = a.copy_into(p, batch=3)
    assert counts["audit"] == len(a.audit_rows()) > 3 and counts["versions"] > 3
    assert max(sent) <= 3  # per round trip at most the BEGIN, the lock and one batch's INSERT
    back = Store(str(tmp_path / "back.db"))
    p.copy_into(back, batch=1)
    assert a.dump_state() == p.dump_state() == back.dump_state()
    assert a.audit_rows() == p.audit_rows() == back.audit_rows()
    for s in (a, p, back):
        s.close()


# ----------------------------------------------------------------------------- many writers

def _seed(url: str, topics: int) -> None:
    s = Store.open(url, create=True)
    for t in range(topics):
        s.record({"id": f"n{t}a", "kind": "record", "content": f"topic {t} fact a"})
        s.record({"id": f"n{t}b", "kind": "record", "content": f"topic {t} fact b"})
        s.record({"id": f"s{t}", "kind": "summary", "content": f"topic {t} fact a. topic {t} fact b"},
                 inputs=[f"n{t}a", f"n{t}b"])
    s.record({"id": "g", "kind": "summary", "content": "all topics"}, inputs=[f"s{t}" for t in range(topics)])
    s.close()


def _replay(rows: list[tuple], events: dict[int, dict]) -> tuple[dict, list, dict]:
    """Replay the audit log: (state per id as it evolves, record rows with non-servable inputs,
    each event's pre-barrier versions of its cascade). An independent reading of the audit order."""
    state: dict[str, str] = {}
    version: dict[str, int] = {}
    bad_records, base = [], {}
    for seq, _at, event_id, action, art, detail_text, _h in rows:
        detail = json.loads(detail_text)
        if action == "record" and art is not None:
            bad_records += [(seq, art, i) for i in detail.get("inputs", []) if state.get(i) not in ("servable", "republished")]
            state[art], version[art] = "servable", detail["version"]
        elif action == "barrier":
            base[event_id] = {x: version.get(x) for x in events[event_id]["plan"]["cascade"]}
        elif action == "withdraw" or action in ("failed", "blocked"):
            state[art] = "withdrawn"
        elif action == "stage":
            state[art] = "staged"
        elif action == "republish":
            state[art], version[art] = "republished", detail.get("version", version.get(art))
        elif action == "publish":
            state.update({k: "withdrawn" for k, v in state.items() if v == "staged"})
    return state, bad_records, base


def test_four_writer_processes_on_one_postgres_store(pg_url):
    """≥ 4 processes record artifacts and apply overlapping delete/correct events (every cascade
    reaches the global summary g). After they finish: no event unfinished, Leak = 0 and Stale-use = 0
    for every event, every recorded version still there with its digest, the audit chain intact, and
    every fenced write refused (the audit replay finds no recorded write with a non-servable input)."""
    _seed(pg_url, topics=4)
    procs = [subprocess.Popen([sys.executable, WRITER, pg_url, str(i), "6", str(1000 + i)], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]
        reports.append(json.loads(out))
    s = Store.open(pg_url)
    assert s.unfinished_event() is None
    rows = s.audit_rows()
    assert first_broken(rows, s.audit_head()) is None
    events = {i: s.event(i) for (i,) in s.conn.execute("SELECT id FROM events ORDER BY id")}
    applied = sum(len(r["events"]) for r in reports)
    assert applied == len(events) >= 2 and all(e["status"] == "done" for e in events.values())
    # the barrier → publish spans of different events never interleave in the one audit order
    spans = [(a, ev) for _, _, ev, a, *_ in rows if a in ("barrier", "publish")]
    assert [a for a, _ in spans] == ["barrier", "publish"] * len(events)
    assert all(spans[2 * k][1] == spans[2 * k + 1][1] for k in range(len(events)))
    _, bad_records, base = _replay(rows, events)
    assert bad_records == []
    served = {a.id: a.version for a in s.serve()}
    for e, versions in base.items():
        assert leak_pct(list(versions), versions, served) == 0.0, e
    invalidated = {(x, v) for versions in base.values() for x, v in versions.items() if v is not None}
    assert stale_use_pct([set(served.items())], invalidated) == 0.0
    for r in reports:  # no lost version: each recorded (id, version) holds its content or its erased digest
        for wid, version, digest, _inputs in r["recorded"]:
            row = s.conn.execute("SELECT erased, sha256 FROM versions WHERE id = %s AND version = %s",
                                 (wid, version)).fetchone()
            assert row is not None, (wid, version)
            erased, sha = row
            if erased:  # its keyed digest is kept (HMAC under the store's index key), not the plain SHA-256
                assert sha is not None and len(sha) == 64
            else:
                assert content_digest(s.version_of(wid, version).content) == digest
        for wid, _inputs in r["fenced"]:
            assert any(a == "refuse" and art == wid and json.loads(d)["reason"] == "fenced"
                       for _, _, _, a, art, d, _ in rows)
    assert sum(len(r["recorded"]) for r in reports) >= 4
    s.close()


# ----------------------------------------------------------------------------- crash and recover

CHILD = """
import sys
from memsteward.policy.loader import load_policy_source
from memsteward.repair.events import load_event
from memsteward.repair.execute import run_event
from memsteward.store import Store
store = Store.open(sys.argv[1])
if len(sys.argv) > 4:  # fault injection: killed at this checkpoint
    from memsteward.store.crashing import CrashingStore
    store = CrashingStore(store, crash_at=int(sys.argv[4]))
run_event(store, load_policy_source(sys.argv[2]).policy, load_event(sys.argv[3], store.snapshot()), "mincut", "networkx")
"""


def _child(url: str, crash_at: int | None) -> subprocess.Popen:
    env = dict(os.environ)
    crash = [str(crash_at)] if crash_at else []
    return subprocess.Popen([sys.executable, "-c", CHILD, url, POLICY, str(DATA / "event-delete.json"), *crash], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _state(url: str) -> dict:
    s = Store.open(url)
    d = s.dump_state()
    s.close()
    return {"artifacts": d["artifacts"], "versions": d["versions"]}


def _imported(url: str) -> Store:
    s = Store.open(url, create=True)
    doc, text = read_json(str(DATA / "store.json"))
    s.import_snapshot(parse_store_document(doc, str(DATA / "store.json"), text))
    return s


def test_kill9_writer_then_recover_from_another_process(pg_schemas):
    """A writer SIGKILLed inside or between its transactions (crash points and a random delay):
    the server rolls back its open transaction and releases its lock; nothing of C(F) is servable,
    no version is lost, and `memsteward recover` run by another process ends in the uninterrupted result."""
    ref = _imported(pg_schemas.url())
    run_event(ref, load_policy_source(POLICY).policy, load_event(str(DATA / "event-delete.json"), ref.snapshot()),
              "mincut", "networkx")
    expected = _state(ref.path)
    ref.close()
    rng = random.Random("pg-crash")
    for point in [1, rng.randrange(2, 12), "delay"]:
        s = _imported(pg_schemas.url())
        url = s.path  # the test DSN has no password, so the shown URL is the URL
        before = {(i, v) for i in s.states() for v, _, _ in s.versions(i)}
        s.close()
        if point == "delay":
            p = _child(url, None)
            time.sleep(rng.uniform(1.0, 3.0))
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=60)
        else:
            p = _child(url, point)
            assert p.wait(timeout=300) in (0, -signal.SIGKILL), p.stderr.read().decode()
        s = Store.open(url)
        assert before <= {(i, v) for i in s.states() for v, _, _ in s.versions(i)}
        pending = s.unfinished_event()
        if pending is not None:
            assert not (set(pending[3]["cascade"]) & {a.id for a in s.serve()})
        started = s.event() is not None
        s.close()
        r = _run("recover", "--store", url)
        assert r.returncode == 0, r.stderr
        if started:
            assert _state(url) == expected, f"crash point {point}"


# ----------------------------------------------------------------------------- queued writes, COPY

def _records(store: Store, n: int) -> None:
    for k in range(n):
        store.record({"id": f"q{k}", "kind": "record", "content": f"note {k} ✓ \x00-free"}, inputs=[f"q{k - 1}"] if k else [])


def _rows(store: Store) -> dict:
    out = {t: sorted(map(tuple, store.conn.execute(f"SELECT * FROM {t}")), key=repr)
           for t in ("artifacts", "edges", "tombstones")}
    out["versions"] = store.dump_state()["versions"]  # opened: ciphertext differs run to run (fresh keys, nonces)
    out["audit"] = [(r[0], r[2], r[3], r[4], r[5]) for r in store.audit_rows()]  # all but the time (and hash)
    return out


def test_pipelined_writes_equal_one_statement_at_a_time(pg_schemas, monkeypatch):
    """The reference: the same writes sent one statement per round trip (PIPELINE = False)."""
    from memsteward.store.postgres import PgConnection

    fast = Store.open(pg_schemas.url(), create=True)
    _records(fast, 12)
    fast.record_many([{"id": f"b{k}", "kind": "record", "content": f"batch {k}", "inputs": ["q3"]} for k in range(5)])
    monkeypatch.setattr(PgConnection, "PIPELINE", False)
    slow = Store.open(pg_schemas.url(), create=True)
    slow.vault.keys.adopt_index_key(fast.vault.keys.index_key())  # one index key: the keyed digests compare
    slow.vault = type(slow.vault)(slow.vault.keys)
    _records(slow, 12)
    slow.record_many([{"id": f"b{k}", "kind": "record", "content": f"batch {k}", "inputs": ["q3"]} for k in range(5)])
    assert _rows(fast) == _rows(slow)
    for s in (fast, slow):
        assert first_broken(s.audit_rows(), s.audit_head()) is None
        s.close()


def test_an_error_in_a_queued_write_rolls_the_transaction_back(pg_url):
    """A queued INSERT that violates a key fails at its flush (a read, or COMMIT); the whole
    transaction is rolled back and the connection serves the next write."""
    import psycopg

    s = Store.open(pg_url, create=True)
    _records(s, 2)
    before = s.dump_state()
    for flush_by_read in (True, False):
        with pytest.raises(psycopg.errors.UniqueViolation):
            with s.transaction() as c:
                s.driver.write("UPDATE artifacts SET state = 'withdrawn' WHERE id = 'q0'")
                s.driver.write("INSERT INTO versions(id, version, content, meta) VALUES (%s,%s,%s,%s)", ("q0", 1, "x", "{}"))
                if flush_by_read:
                    c.execute("SELECT COUNT(*) FROM versions").fetchone()
        assert s.dump_state() == before
    _records(s, 3)  # the connection is usable: the next write commits
    assert s.get("q2") is not None and s.get("q0").state == "servable"
    s.close()
