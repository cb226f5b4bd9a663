"""The audit chain's definition, checked against a reference written here from its documented format.

A change made to the writer and the verifier alike (e.g. one action type no longer chained to the
previous hash) keeps `audit --check` green, so the definition itself is pinned twice:

* every stored link equals SHA-256 of the canonical JSON ``[h_{k-1}, seq, at, event_id, action,
  artifact_id, detail]`` computed by hand below, from h_0 = 0^64 (auditchain.py's docstring);
* rewriting any single row — and re-hashing that row with the engine's own ``row_hash``, as an
  attacker holding the code would — is caught by the verifier for every row except the last
  (which the recorded head, and `--expect-head`, anchor).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.repair import auditchain
from memsteward.store import Store

DATA = Path("engine/data/repair")


def reference_link(prev: str, row: tuple) -> str:
    """h_k from the documented row format, independently of memsteward.repair.auditchain."""
    seq, at, event_id, action, artifact_id, detail = row
    text = json.dumps([prev, seq, at, event_id, action, artifact_id, detail], ensure_ascii=False,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    """The demo store after a correct, a migrate and a delete event (every action type occurs)."""
    db = tmp_path_factory.mktemp("chain") / "mem.db"
    run = CliRunner()
    assert run.invoke(main, ["store", "import", "--store", str(db), str(DATA / "store.json")]).exit_code == 0
    for event in ("correct", "migrate", "delete"):
        r = run.invoke(main, ["repair", "--policy", "policies/default.yaml", "--store", str(db),
                              "--event", str(DATA / f"event-{event}.json")])
        assert r.exit_code == 0, r.output
    return db


def _rows(db: Path) -> list[tuple]:
    s = Store.open(str(db))
    try:
        return s.audit_rows()
    finally:
        s.close()


def test_every_link_matches_the_documented_format(demo_db: Path):
    rows = _rows(demo_db)
    actions = {r[3] for r in rows}
    assert {"import", "barrier", "withdraw", "stage", "validated", "republish", "erase", "publish"} <= actions
    prev = "0" * 64
    for row in rows:
        want = reference_link(prev, row[:6])
        assert row[6] == want, f"row {row[0]} ({row[3]}) is not chained as documented"
        prev = want
    s = Store.open(str(demo_db))
    try:
        assert s.audit_head() == (rows[-1][0], prev)
    finally:
        s.close()


def _rewrite_one_row(src: Path, dst: Path, seq: int) -> None:
    """Copy the store, change one row's detail and re-hash that row only, with the engine's hash."""
    a, b = sqlite3.connect(src), sqlite3.connect(dst)
    a.backup(b)  # the database with its WAL folded in
    a.close()
    b.close()
    con = sqlite3.connect(dst)
    rows = {r[0]: r for r in con.execute(
        "SELECT seq, at, event_id, action, artifact_id, detail, hash FROM audit ORDER BY seq")}
    prev = rows[seq - 1][6] if seq > 1 else auditchain.GENESIS
    _, at, event_id, action, artifact_id, _, _ = rows[seq]
    forged = json.dumps({"forged": True})
    link = auditchain.row_hash(prev, seq, at, event_id, action, artifact_id, forged)
    con.executescript("DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;")
    con.execute("UPDATE audit SET detail = ?, hash = ? WHERE seq = ?", (forged, link, seq))
    if seq == max(rows):
        con.execute("UPDATE audit_head SET hash = ? WHERE one = 1", (link,))
    con.commit()
    con.close()


def test_rewriting_any_row_breaks_the_chain(demo_db: Path, tmp_path: Path):
    rows = _rows(demo_db)
    last = rows[-1][0]
    head = rows[-1][6]
    one_per_action = {}
    for seq, _, _, action, *_ in rows:
        if seq < last:
            one_per_action.setdefault(action, seq)
    for action, seq in sorted(one_per_action.items()):
        db = tmp_path / f"forged-{seq}.db"
        _rewrite_one_row(demo_db, db, seq)
        r = CliRunner().invoke(main, ["audit", "--store", str(db), "--check", "--json"])
        assert r.exit_code == 1, f"a rewritten {action} row {seq} went unnoticed"
        assert json.loads(r.stdout)["first_broken"]["seq"] == seq + 1  # the next link no longer matches
    db = tmp_path / "forged-last.db"
    _rewrite_one_row(demo_db, db, last)  # the last row re-linked with a new head: only the anchor tells
    assert CliRunner().invoke(main, ["audit", "--store", str(db), "--check"]).exit_code == 0
    r = CliRunner().invoke(main, ["audit", "--store", str(db), "--check", "--expect-head", head])
    assert r.exit_code == 1 and "expected head" in r.output


def test_rows_appended_beyond_the_recorded_head_are_detected(demo_db: Path, tmp_path: Path):
    """A row correctly chained to the last one but written around the store (the head record not
    moved) is caught: the log no longer ends at its recorded head (a mutation trial found that a
    `<` in place of `!=` in that comparison survived every other test)."""
    db = tmp_path / "appended.db"
    a, b = sqlite3.connect(demo_db), sqlite3.connect(db)
    a.backup(b)
    a.close()
    b.close()
    con = sqlite3.connect(db)
    seq, prev = con.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    row = (seq + 1, "2026-01-01T00:00:00+00:00", None, "import", None, "{}")
    con.execute("INSERT INTO audit(seq, at, event_id, action, artifact_id, detail, hash) VALUES (?,?,?,?,?,?,?)",
                (*row, reference_link(prev, row)))
    con.commit()
    con.close()
    r = CliRunner().invoke(main, ["audit", "--store", str(db), "--check"])
    assert r.exit_code == 1 and "recorded head" in r.output


def test_the_barriers_one_pass_hashing_is_pinned():
    """chain_same's links, pinned to values the row-by-row implementation gave (release of schema
    version 4): a faster hashing of withdraw rows must give the same hashes (``audit --check`` on
    existing stores), and equal the documented format computed here."""
    ids = ["a", 'x"y', "é\u2028", None, "sum-7"]
    at = "2026-12-01T11:00:00.000001+00:00"
    links = auditchain.chain_same("0" * 64, 41, at, 3, "withdraw", ids, "{}")
    assert links[-1] == "8a83ca856824dc776ff607287ef55ff66dfa611d2c1d53c1db94477243b873c4"
    prev = "0" * 64
    for k, (i, link) in enumerate(zip(ids, links)):
        prev = reference_link(prev, (41 + k, at, 3, "withdraw", i, "{}"))
        assert link == prev
    many = auditchain.chain_same(auditchain.GENESIS, 1, "t", None, "withdraw", [f"cache-{k}" for k in range(1000)], "{}")
    assert many[-1] == "cb2ca9b5a4f5799465dec6aacfcf2488077f8f428643781a29c6e579053e88a4"
