"""Evidence that cannot be forged from inside the database (the erasure issue, item 4).

The forger here has the code and write access to the SQLite file but not the key: appended,
rewritten and reordered rows are re-chained with valid hashes (the same row_hash the store uses),
which the plain chain accepts — and the HMAC-signed head refuses, without --expect-head. Reports
escape ids, so an id carrying Markdown or ANSI escapes renders inert.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.repair.auditchain import GENESIS, row_hash
from memsteward.store.planstore import plan_text, read_plan

DATA = Path("engine/data/repair")
KEY = "k" * 32


@pytest.fixture()
def signed_db(tmp_path: Path, monkeypatch) -> str:
    monkeypatch.setenv("MEMSTEWARD_AUDIT_KEY", KEY)
    db = str(tmp_path / "m.db")
    run = CliRunner()
    assert run.invoke(main, ["store", "import", "--store", db, str(DATA / "store.json")]).exit_code == 0
    r = run.invoke(main, ["repair", "--policy", "policies/default.yaml", "--store", db,
                          "--event", str(DATA / "event-delete.json")])
    assert r.exit_code == 0, r.output
    return db


def _rechain(db: str, edit) -> None:
    """Apply ``edit`` to the row list, then rewrite the log with valid hashes and head (no key)."""
    con = sqlite3.connect(db)
    rows = [list(r) for r in con.execute("SELECT seq, at, event_id, action, artifact_id, detail FROM audit "
                                         "ORDER BY seq")]
    rows = edit(rows)
    con.executescript("DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete; DELETE FROM audit;")
    prev = GENESIS
    for k, (_, at, ev, action, art, detail) in enumerate(rows, start=1):
        prev = row_hash(prev, k, at, ev, action, art, detail)
        con.execute("INSERT INTO audit(seq, at, event_id, action, artifact_id, detail, hash) VALUES (?,?,?,?,?,?,?)",
                    (k, at, ev, action, art, detail, prev))
    con.execute("UPDATE audit_head SET seq = ?, hash = ?", (len(rows), prev))
    con.commit()
    con.close()


def _append(rows):
    return rows + [[0, rows[-1][1], None, "import", None, '{"file":"forged.json"}']]


def _rewrite(rows):
    rows[4][5] = '{"forged":true}'
    return rows


def _reorder(rows):
    rows[4], rows[5] = rows[5], rows[4]
    return rows


@pytest.mark.parametrize("forge", [_append, _rewrite, _reorder], ids=["appended", "rewritten", "reordered"])
def test_forged_rows_detected_without_expect_head(signed_db: str, forge, monkeypatch):
    run = CliRunner()
    assert run.invoke(main, ["audit", "--store", signed_db, "--check"]).exit_code == 0
    _rechain(signed_db, forge)
    bad = run.invoke(main, ["audit", "--store", signed_db, "--check", "--json"])
    assert bad.exit_code == 1 and "signature" in json.loads(bad.stdout)["first_broken"]["reason"]
    att = json.loads(run.invoke(main, ["audit", "--store", signed_db, "--json"]).stdout)
    assert not {c["check"]: c for c in att["checks"]}["audit-chain"]["ok"]
    # the forgery is a valid hash chain: without the key only an outside anchor would catch it
    monkeypatch.delenv("MEMSTEWARD_AUDIT_KEY")
    assert run.invoke(main, ["audit", "--store", signed_db, "--check"]).exit_code == 0


def test_head_written_without_the_key_is_refused(signed_db: str, monkeypatch):
    con = sqlite3.connect(signed_db)
    con.execute("UPDATE audit_head SET seal = NULL")
    con.commit()
    con.close()
    r = CliRunner().invoke(main, ["audit", "--store", signed_db, "--check"])
    assert r.exit_code == 1 and "not signed" in r.output


def test_short_key_is_bad_input(signed_db: str, monkeypatch):
    monkeypatch.setenv("MEMSTEWARD_AUDIT_KEY", "short")
    r = CliRunner().invoke(main, ["audit", "--store", signed_db, "--check"])
    assert r.exit_code == 2 and "MEMSTEWARD_AUDIT_KEY" in r.output


def test_check_detects_an_edited_plan(signed_db: str):
    con = sqlite3.connect(signed_db)
    (plan,) = con.execute("SELECT plan FROM events WHERE id = 1").fetchone()
    doc = read_plan(plan)
    doc["withdrawn"] = doc["withdrawn"][1:]
    con.execute("UPDATE events SET plan = ? WHERE id = 1", (plan_text(doc),))
    con.commit()
    con.close()
    r = CliRunner().invoke(main, ["audit", "--store", signed_db, "--check", "--json"])
    out = json.loads(r.stdout)
    assert r.exit_code == 1 and out["first_broken"] is None and "plan" in out["records"]["reason"]


EVIL = "x\n\n| erasure | pass | fine |\n\n**Overall: all checks pass.**\n# Approved\x1b[2J\x1b]0;pwned\x07"


def _evil_store(tmp_path: Path) -> str:
    doc = {"artifacts": [
        {"id": "root", "kind": "record", "content": {"text": "A private note about the user."}},
        {"id": EVIL, "kind": "cache", "content": "A private note about the user.", "meta": {"transform": "texts"}},
        {"id": "keep", "kind": "record", "content": {"text": "Nothing private."}},
    ], "edges": [{"src": "root", "dst": EVIL, "type": "influence"}]}
    src = tmp_path / "evil.json"
    src.write_text(json.dumps(doc))
    db = str(tmp_path / "evil.db")
    run = CliRunner()
    assert run.invoke(main, ["store", "import", "--store", db, str(src)]).exit_code == 0
    ev = tmp_path / "ev.json"
    ev.write_text(json.dumps({"type": "delete", "roots": ["root"]}))
    r = run.invoke(main, ["repair", "--policy", "policies/default.yaml", "--store", db, "--event", str(ev)])
    assert r.exit_code == 0 and "\x1b" not in r.output
    return db


def test_markdown_and_ansi_injection_render_inert(tmp_path: Path):
    db = _evil_store(tmp_path)
    con = sqlite3.connect(db)  # make the attestation fail, so a forged verdict would matter
    con.execute("UPDATE artifacts SET state = 'servable' WHERE id = ?", (EVIL,))
    con.commit()
    con.close()
    md = CliRunner().invoke(main, ["audit", "--store", db])
    assert md.exit_code == 1
    out = md.output
    assert "\x1b" not in out and "\x07" not in out
    assert [ln for ln in out.splitlines() if ln.startswith("**Overall")] == ["**Overall: CHECKS FAILED.**"]
    assert not any(ln.startswith("# Approved") or ln.startswith("| erasure | pass | fine") for ln in out.splitlines())
    table = [ln for ln in out.splitlines() if ln.startswith("| ")]
    assert all(ln.replace("\\|", "").count("|") == 4 for ln in table)  # no cell splits into extra columns
    serve = CliRunner().invoke(main, ["store", "serve", "--store", db])
    assert "\x1b" not in serve.output and "\\x1b" in serve.output
    log = CliRunner().invoke(main, ["store", "log", "--store", db])
    assert "\x1b" not in log.output and "\x07" not in log.output


PUT = {"id": "late-note", "kind": "record", "content": {"text": "A note written after the forgery."}}


@pytest.mark.parametrize("forge", [_append, _rewrite, _reorder], ids=["appended", "rewritten", "reordered"])
def test_a_keyed_write_never_seals_over_a_forgery(signed_db: str, forge, tmp_path: Path):
    """Issue 25: a file writer without the key rewrote a row (FAIL → pass) and re-chained the log;
    the agent's next ordinary keyed `store put` sealed the forged head, after which `audit --check`
    said "intact … signature verified" (8 of 9 tamperings). Now the keyed writer verifies the sealed
    head before it appends: exit 2 with an `audit --check` hint, nothing written, never re-sealed."""
    run = CliRunner()
    _rechain(signed_db, forge)
    before = Path(signed_db).read_bytes()
    doc = tmp_path / "put.json"
    doc.write_text(json.dumps(PUT))
    r = run.invoke(main, ["store", "put", "--store", signed_db, str(doc)])
    assert r.exit_code == 2 and "audit --check" in r.output and "Traceback" not in r.output, r.output
    con = sqlite3.connect(signed_db)
    assert con.execute("SELECT count(*) FROM artifacts WHERE id = 'late-note'").fetchone()[0] == 0
    con.close()
    bad = run.invoke(main, ["audit", "--store", signed_db, "--check", "--json"])
    assert bad.exit_code == 1 and "signature" in json.loads(bad.stdout)["first_broken"]["reason"]
    assert len(Path(signed_db).read_bytes()) == len(before)


def _raw(loc: str):
    """A raw connection to the store's database with the append-only triggers off (a file writer, or
    a database login, without the audit key), and its parameter mark."""
    if loc.startswith("postgresql://"):
        import psycopg

        dsn, schema = loc.rsplit("?schema=", 1)
        con = psycopg.connect(dsn, autocommit=True)
        con.execute(f'SET search_path TO "{schema}"')
        con.execute("ALTER TABLE audit DISABLE TRIGGER USER")
        return con, "%s"
    con = sqlite3.connect(loc, isolation_level=None)
    con.executescript("DROP TRIGGER IF EXISTS audit_no_update; DROP TRIGGER IF EXISTS audit_no_delete;")
    return con, "?"


def _forge_after(loc: str, head: tuple | None) -> None:
    """Rewrite the detail of the row after ``head`` (row 1 without one), re-chain every row after it with
    valid hashes, and put ``head`` back as the head record (None: remove the record), so that no seal
    is left to disagree with the forged hashes."""
    con, mark = _raw(loc)
    rows = [list(r) for r in con.execute("SELECT seq, at, event_id, action, artifact_id, detail, hash FROM audit "
                                         "ORDER BY seq")]
    after = 0 if head is None else head[0]
    prev = GENESIS if head is None else head[1]
    for seq, at, ev, action, art, detail, _ in rows[after:]:
        if seq == after + 1:
            detail = '{"forged":true}'
        prev = row_hash(prev, seq, at, ev, action, art, detail)
        con.execute(f"UPDATE audit SET detail = {mark}, hash = {mark} WHERE seq = {mark}", (detail, prev, seq))
    con.execute("DELETE FROM audit_head")
    if head is not None:
        con.execute(f"INSERT INTO audit_head(one, seq, hash, seal) VALUES (1, {mark}, {mark}, {mark})", head)
    con.close()


@pytest.mark.parametrize("put_back", ["no head", "an older signed head"])
def test_a_keyed_write_never_seals_a_log_whose_head_record_was_removed_or_put_back(store_at, monkeypatch,
                                                                                  put_back):
    """Found from the seed-5 mutation run (``== 1`` to ``<= 1`` in sealed_head_problem survived): the
    writer's check trusted the head record to be the latest. A forger without the key re-chained a
    rewrite and then (a) removed the head record: with no head, a log whose first row was row 1 was
    taken for a new one; or (b) put back an older signed head read from an earlier copy of the store,
    whose seal verifies and after which the next row links. Either way the agent's next ordinary
    write sealed the forged log and `audit --check` said verified. Now a write is sealed only if it
    appends right after the head (row 1 with none). Both backends; nothing is written, and `audit
    --check` still reports the tampering."""
    from memsteward.errors import InputError
    from memsteward.store import Store

    monkeypatch.setenv("MEMSTEWARD_AUDIT_KEY", KEY)
    loc = store_at()
    s = Store.open(loc, create=True)
    s.record({"id": "n1", "kind": "record", "content": "Alice likes tea"})
    con, _ = _raw(loc)
    older = tuple(con.execute("SELECT seq, hash, seal FROM audit_head").fetchone())  # an earlier copy's head
    con.close()
    s.record({"id": "n2", "kind": "record", "content": "Bob likes coffee"})
    s.record({"id": "n3", "kind": "record", "content": "Carol likes juice"})
    s.close()
    _forge_after(loc, None if put_back == "no head" else older)
    before = store_at.fingerprint(loc)
    s = Store.open(loc)
    try:
        with pytest.raises(InputError, match="no recorded head" if put_back == "no head" else "does not end at"):
            s.record({"id": "n4", "kind": "record", "content": "Dan likes milk"})
    finally:
        s.close()
    assert store_at.fingerprint(loc) == before
    bad = CliRunner().invoke(main, ["audit", "--store", loc, "--check", "--json"])
    assert bad.exit_code == 1 and json.loads(bad.stdout)["first_broken"] is not None, bad.output


def test_check_without_a_key_says_integrity_is_not_proven(signed_db: str, monkeypatch):
    """Issue 25: without the key a re-chained log was reported "intact" with no word that nothing was
    verified against a file writer."""
    _rechain(signed_db, _rewrite)
    monkeypatch.delenv("MEMSTEWARD_AUDIT_KEY")
    r = CliRunner().invoke(main, ["audit", "--store", signed_db, "--check"])
    assert r.exit_code == 0 and "NOT PROVEN" in r.output and "--expect-head" in r.output, r.output
    j = json.loads(CliRunner().invoke(main, ["audit", "--store", signed_db, "--check", "--json"]).stdout)
    assert j["integrity"] == "unverified"


def _signed_store(tmp_path: Path, name: str, event: dict) -> str:
    db = str(tmp_path / name)
    ev = tmp_path / f"{name}.event.json"
    ev.write_text(json.dumps(event))
    run = CliRunner()
    assert run.invoke(main, ["store", "import", "--store", db, str(DATA / "store.json")]).exit_code == 0
    r = run.invoke(main, ["repair", "--policy", "policies/default.yaml", "--store", db, "--event", str(ev)])
    assert r.exit_code == 0, r.output
    return db


def test_deleting_a_tombstone_row_fails_check(signed_db: str, monkeypatch):
    """`tombstones` were outside the chain and the seal: deleting one passed `audit --check` (issue 25)."""
    run = CliRunner()
    assert run.invoke(main, ["audit", "--store", signed_db, "--check"]).exit_code == 0
    con = sqlite3.connect(signed_db)
    (n,) = con.execute("SELECT COUNT(*) FROM tombstones").fetchone()
    assert n >= 2
    con.execute("DELETE FROM tombstones WHERE rowid = (SELECT MAX(rowid) FROM tombstones)")
    con.commit()
    con.close()
    for keyed in (True, False):  # the chain itself pins them: no key needed to see it
        if not keyed:
            monkeypatch.delenv("MEMSTEWARD_AUDIT_KEY")
        bad = run.invoke(main, ["audit", "--store", signed_db, "--check", "--json"])
        assert bad.exit_code == 1, bad.output
        assert "tombstone" in json.loads(bad.stdout)["records"]["reason"]


def test_swapping_in_another_stores_log_fails_check(tmp_path: Path, monkeypatch):
    """The audit log and events of another store signed with the same key passed `audit --check`: the
    log now has to describe this store's erased versions and tombstones (issue 25)."""
    monkeypatch.setenv("MEMSTEWARD_AUDIT_KEY", KEY)
    a = _signed_store(tmp_path, "a.db", {"type": "delete", "roots": ["p2"]})
    b = _signed_store(tmp_path, "b.db", {"type": "delete", "roots": ["p1"]})
    run = CliRunner()
    assert run.invoke(main, ["audit", "--store", a, "--check"]).exit_code == 0
    con = sqlite3.connect(a)
    con.execute("ATTACH ? AS b", (b,))
    con.executescript("DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;"
                      "DELETE FROM audit; INSERT INTO audit SELECT * FROM b.audit;"
                      "DELETE FROM audit_head; INSERT INTO audit_head SELECT * FROM b.audit_head;"
                      "DELETE FROM events; INSERT INTO events SELECT * FROM b.events;"
                      "DELETE FROM plan_steps; INSERT INTO plan_steps SELECT * FROM b.plan_steps;")
    con.commit()
    con.close()
    bad = run.invoke(main, ["audit", "--store", a, "--check", "--json"])
    assert bad.exit_code == 1, bad.output
    assert not json.loads(bad.stdout)["ok"]
    att = json.loads(run.invoke(main, ["audit", "--store", a, "--json"]).stdout)
    assert not att["ok"]


def _put(db: str, ident: str, text: str) -> None:
    doc = json.dumps({"id": ident, "kind": "record", "content": text})
    r = CliRunner().invoke(main, ["store", "put", "--store", db], input=doc)
    assert r.exit_code == 0, r.output


def _check_json(db: str) -> tuple[int, dict]:
    r = CliRunner().invoke(main, ["audit", "--store", db, "--check", "--json"])
    return r.exit_code, json.loads(r.stdout)


def test_the_seal_binds_the_store_id(tmp_path: Path, monkeypatch):
    """Issue 25: the seal covered (seq, head) only, so the signed log of another store written under
    the same key passed `audit --check` once copied in (audit rows and head; no event to cross-check).
    The seal binds the store id now: the copied head's signature does not verify here."""
    monkeypatch.setenv("MEMSTEWARD_AUDIT_KEY", KEY)
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    for db, text in ((a, "the agent's note"), (b, "another store's note")):
        run = CliRunner()
        assert run.invoke(main, ["store", "import", "--store", db, str(DATA / "store.json")]).exit_code == 0
        _put(db, "n1", text)
    assert _check_json(a)[0] == 0 and _check_json(b)[0] == 0
    con = sqlite3.connect(a)
    con.execute("ATTACH ? AS b", (b,))
    con.executescript("DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;"
                      "DELETE FROM audit; INSERT INTO audit SELECT * FROM b.audit;"
                      "DELETE FROM audit_head; INSERT INTO audit_head SELECT * FROM b.audit_head;")
    con.commit()
    con.close()
    code, doc = _check_json(a)
    assert code == 1 and "another store" in doc["first_broken"]["reason"], doc
    with pytest.raises(AssertionError):  # … and the keyed writer refuses to extend it
        _put(a, "n2", "more")


def test_the_seal_binds_the_tenant(tmp_path: Path, monkeypatch):
    """A tenant's whole store file (its store id included) copied over another tenant's passed
    `audit --check` there: the seal binds the tenant name, which comes from the URL, not the file."""
    monkeypatch.setenv("MEMSTEWARD_AUDIT_KEY", KEY)
    base = str(tmp_path / "m.db")
    for tenant in ("alice", "bob"):
        _put(f"{base}?tenant={tenant}", "n1", f"{tenant}'s note")
    alice, bob = (f"{base}.tenants/{t}.db" for t in ("alice", "bob"))
    assert _check_json(f"{base}?tenant=bob")[0] == 0
    src, dst = sqlite3.connect(alice), sqlite3.connect(bob)
    src.backup(dst)
    src.close()
    dst.close()
    assert _check_json(f"{base}?tenant=alice")[0] == 0
    code, doc = _check_json(f"{base}?tenant=bob")
    assert code == 1 and "another store or tenant" in doc["first_broken"]["reason"], doc


def test_a_format_1_seal_still_verifies_and_is_replaced(signed_db: str):
    """Stores signed before the store id was bound keep opening: a format-1 head seal verifies, is
    reported as such, and the next keyed write seals the head in format 2."""
    from memsteward.repair.auditchain import legacy_seal

    con = sqlite3.connect(signed_db)
    seq, head = con.execute("SELECT seq, hash FROM audit_head").fetchone()
    con.execute("UPDATE audit_head SET seal = ?", (legacy_seal(KEY.encode(), seq, head),))
    con.commit()
    con.close()
    code, doc = _check_json(signed_db)
    assert (code, doc["ok"], doc["seal_format"]) == (0, True, 1), doc
    r = CliRunner().invoke(main, ["audit", "--store", signed_db, "--check"])
    assert r.exit_code == 0 and "seal format 1" in r.output
    _put(signed_db, "n9", "a later note")
    code, doc = _check_json(signed_db)
    assert (code, doc["ok"], doc["seal_format"]) == (0, True, 2), doc


def test_a_keyed_copy_is_sealed_for_its_destination(signed_db: str, tmp_path: Path):
    """`store copy` gives the copy a new store id: with the key, its head is sealed for the copy."""
    dst = str(tmp_path / "copy.db")
    r = CliRunner().invoke(main, ["store", "copy", signed_db, dst])
    assert r.exit_code == 0, r.output
    code, doc = _check_json(dst)
    assert (code, doc["ok"], doc["seal_format"]) == (0, True, 2), doc
