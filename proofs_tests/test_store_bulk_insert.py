"""Bulk insert is a method of every store driver (issue 26), not a guess from a statement's text.

The core says "these are new rows of this table" (:meth:`Driver.bulk_insert`); SQLite runs one
executemany, PostgreSQL one ``COPY … FROM STDIN`` from ``COPY_MIN`` rows. Checked on the real
backends: every driver has every member of the protocol; the rows read back equal what went in
(NULLs, tabs, newlines, unicode, 63-bit integers) on both sides of ``COPY_MIN``; and the PostgreSQL
server itself reports (``current_query()`` in a statement trigger) that the store's batch writes
arrived as COPY, and a small batch as INSERT.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memsteward.policy.loader import load_policy_source
from memsteward.repair.events import parse_event
from memsteward.repair.execute import run_event
from memsteward.store import Store
from memsteward.store import postgres as pg
from memsteward.store.driver import Driver

POLICY = str(Path(__file__).resolve().parent.parent / "policies" / "default.yaml")
COLUMNS = ("id", "version", "content", "meta", "event_id", "erased", "sha256")


def _rows(n: int) -> list[tuple]:
    return [(f"id{k}", k, None if k % 3 == 0 else f"té\txt \\N {k}\n", "{}", 2**62 + k if k % 2 else None, k % 2, None)
            for k in range(n)]


def _members() -> set[str]:
    return {n for n in vars(Driver) if not n.startswith("_")} | set(Driver.__annotations__)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = Store.open(str(tmp_path / "s.db"), create=True)
        yield s
        s.close()
    else:
        schemas = request.getfixturevalue("pg_schemas")
        yield schemas.store()


def test_every_driver_has_every_member_of_the_protocol(store):
    assert "bulk_insert" in _members() and "write" in _members()
    missing = sorted(n for n in _members() if not hasattr(store.driver, n))
    assert missing == [], f"{type(store.driver).__name__} lacks {missing}"


@pytest.mark.parametrize("n", [pg.COPY_MIN - 1, 3 * pg.COPY_MIN])
def test_bulk_insert_writes_the_rows_as_given(store, n):
    rows = _rows(n)
    with store.transaction():
        store.driver.bulk_insert("versions", COLUMNS, iter(rows))  # any iterable
    got = sorted(map(tuple, store.conn.execute("SELECT " + ", ".join(COLUMNS) + " FROM versions")))
    assert got == sorted(rows)


def test_a_clash_in_a_bulk_insert_rolls_the_transaction_back(store):
    store.record({"id": "a", "kind": "record", "content": "kept"})
    before = store.dump_state()
    rows = _rows(2 * pg.COPY_MIN) + [("a", 1, "x", "{}", None, 0, None)]  # (a, 1) exists
    with pytest.raises(Exception, match="(?i)unique|duplicate"):
        with store.transaction():
            store.driver.bulk_insert("versions", COLUMNS, rows)
    assert store.dump_state() == before


_SEEN = """
CREATE TABLE seen(tbl text, head text);
CREATE FUNCTION note_statement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO seen VALUES (TG_TABLE_NAME, upper(split_part(ltrim(current_query()), ' ', 1))); RETURN NULL; END $$;
CREATE TRIGGER seen_versions AFTER INSERT ON versions FOR EACH STATEMENT EXECUTE FUNCTION note_statement();
CREATE TRIGGER seen_artifacts AFTER INSERT ON artifacts FOR EACH STATEMENT EXECUTE FUNCTION note_statement();
CREATE TRIGGER seen_shingles AFTER INSERT ON shingles FOR EACH STATEMENT EXECUTE FUNCTION note_statement();
CREATE TRIGGER seen_audit AFTER INSERT ON audit FOR EACH STATEMENT EXECUTE FUNCTION note_statement();
"""


def test_the_server_sees_the_stores_batches_arrive_as_copy(pg_schemas):
    """record_many of 3·COPY_MIN new artifacts, and a delete whose barrier withdraws as many: the
    versions, artifacts, index and withdraw-audit rows reach PostgreSQL as COPY (what the server
    runs, read by a statement trigger); a 3-artifact batch's as INSERT (kept in the pipeline)."""
    s = pg_schemas.store()
    s.conn.raw.execute(_SEEN)
    n = 3 * pg.COPY_MIN

    def heads() -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for tbl, head in s.conn.execute("SELECT tbl, head FROM seen"):
            out.setdefault(tbl, set()).add(head)
        s.conn.execute("DELETE FROM seen")
        return out

    s.record_many([{"id": f"small{k}", "kind": "record", "content": f"small note {k}"} for k in range(3)])
    assert heads() == {"versions": {"INSERT"}, "artifacts": {"INSERT"}, "shingles": {"INSERT"}, "audit": {"INSERT"}}
    s.record_many([{"id": "root", "kind": "record", "content": "the root note"}])
    heads()
    s.record_many([{"id": f"b{k}", "kind": "record", "content": f"batch note {k}", "inputs": ["root"]}
                   for k in range(n)])
    seen = heads()
    assert seen["versions"] == seen["artifacts"] == seen["shingles"] == {"COPY"}, seen
    run_event(s, load_policy_source(POLICY).policy, parse_event({"type": "delete", "roots": ["root"]}, s),
              "mincut", "networkx")
    assert "COPY" in heads().get("audit", set()), "the barrier's withdraw rows as one COPY"
