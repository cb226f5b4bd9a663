"""G6 erasure: a delete erases what was derived from the deleted root, keeps digests and tombstones.

A unique marker is written into a root and into content derived from it (directly and two hops
away); after the delete no version row, export or served artifact holds it. The reference is the
marker itself searched in raw SQL rows and CLI output, independent of the engine's bookkeeping.
The logical tests run on SQLite and PostgreSQL; the bytes-on-disk tests are SQLite's (PostgreSQL's
physical step is VACUUM FULL, its files live on the server).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sql_dialect import sql

from memsteward.cli import main
from memsteward.policy.loader import load_policy
from memsteward.repair.artifacts import parse_store_document
from memsteward.repair.events import parse_event
from memsteward.repair.execute import run_event
from memsteward.store import Store, content_digest

DATA = Path("engine/data/repair")
MARKER = "Zq7-ORCHID-LANTERN-4411 lives at 12 Quiet Mews"
PADDING = " ".join(f"Note {k}: {MARKER} keeps a diary." for k in range(120))


def marker_doc() -> dict:
    """A root holding the marker, a summary and a cache derived from it, a summary of the summary,
    and retained records that let the summaries be regenerated without the root."""
    return {"artifacts": [
        # long enough to spill into overflow pages, which become free pages when the content is erased
        {"id": "r-secret", "kind": "record", "content": {"text": f"The user {MARKER}. " + PADDING, "label": "home"}},
        {"id": "r-keep", "kind": "record", "content": {"text": "The user likes long walks by the river.",
                                                       "label": "hobby"}},
        {"id": "r-keep2", "kind": "record", "content": {"text": "The user reads poetry on Sundays.",
                                                        "label": "hobby"}},
        {"id": "sum-home", "kind": "summary", "content": f"Home: {MARKER}. Walks by the river."},
        {"id": "cache-home", "kind": "cache", "content": f"The user {MARKER}.", "meta": {"transform": "texts"}},
        {"id": "sum-digest", "kind": "summary", "content": f"Digest: {MARKER}; poetry on Sundays."},
    ], "edges": [
        {"src": "r-secret", "dst": "sum-home", "type": "influence"},
        {"src": "r-keep", "dst": "sum-home", "type": "influence"},
        {"src": "r-secret", "dst": "cache-home", "type": "influence"},
        {"src": "sum-home", "dst": "sum-digest", "type": "influence"},
        {"src": "r-keep2", "dst": "sum-digest", "type": "influence"},
    ]}


def marker_store(path: str = ":memory:") -> Store:
    store = Store() if path == ":memory:" else Store.open(path, create=True)  # Store(): per backend (store_backend)
    store.import_snapshot(parse_store_document(marker_doc(), "<test>"))
    return store


def _raw_rows(store: Store) -> str:
    """Every cell of every table, as text (the reference: no engine code interprets it)."""
    out = []
    catalog = ("SELECT name FROM sqlite_master WHERE type = 'table'" if store.backend == "sqlite" else
               "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")
    for (table,) in store.conn.execute(catalog).fetchall():
        out += [repr(r) for r in store.conn.execute(f"SELECT * FROM {table}")]
    return "\n".join(out)


BOTH = pytest.mark.usefixtures("store_backend")  # `Store()` is a fresh store of each backend


def _tamper(loc: str, sql: str) -> None:
    """Change a store behind the engine's back (SQLite file or PostgreSQL schema)."""
    if loc.startswith("postgresql://"):
        import psycopg

        dsn, schema = loc.rsplit("?schema=", 1)
        with psycopg.connect(dsn, autocommit=True) as con:
            con.execute(f'SET search_path TO "{schema}"')
            con.execute(sql)
        return
    con = sqlite3.connect(loc)
    con.execute(sql)
    con.commit()
    con.close()


@BOTH
def test_delete_erases_the_root_and_every_version_derived_from_it():
    store = marker_store()
    policy = load_policy("policies/default.yaml")
    plan = run_event(store, policy, parse_event({"type": "delete", "roots": ["r-secret"]}, store.snapshot()))
    assert set(plan.cascade) == {"r-secret", "sum-home", "cache-home", "sum-digest"}
    assert MARKER not in _raw_rows(store)
    assert MARKER not in json.dumps(store.export())
    assert MARKER not in json.dumps([a.as_dict() for a in store.serve()])
    # structure stays auditable: ids, kinds, version numbers and a digest of every erased version
    for ident in plan.cascade:
        for version, erased, _ in store.versions(ident):
            if ident in plan.republished and version == store.get(ident).version:
                assert not erased
            else:
                assert erased
                (sha,) = store.conn.execute(sql(store, "SELECT sha256 FROM versions WHERE id = ? AND version = ?"),
                                            (ident, version)).fetchone()
                assert sha is not None and len(sha) == 64
    # the regenerated summaries were rebuilt from retained support and are served again
    assert {"sum-home", "sum-digest"} <= set(plan.republished)


@BOTH
def test_erase_rows_chain_the_digest_of_every_erased_version():
    doc = marker_doc()
    store = marker_store()
    run_event(store, load_policy("policies/default.yaml"),
              parse_event({"type": "delete", "roots": ["r-secret"]}, store.snapshot()))
    erased = {r["artifact_id"]: r["detail"]["versions"] for r in store.audit_log() if r["action"] == "erase"}
    # the reference digest is computed here, independently, from the imported document
    for a in doc["artifacts"]:
        if a["id"] in ("r-secret", "cache-home"):
            text = json.dumps(a["content"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            keyed = hmac.new(store.vault._index, text.encode(), hashlib.sha256).hexdigest()  # under the index key
            assert erased[a["id"]][0] == {"version": 1, "sha256": keyed}
            assert keyed != hashlib.sha256(text.encode()).hexdigest()  # a dictionary attack needs the key
    republish = [r for r in store.audit_log() if r["action"] == "republish"]
    assert republish and all(store.digest_of(store.get(r["artifact_id"]).content) == r["detail"]["sha256"]
                             for r in republish)


@BOTH
def test_tombstone_holds_the_digest_of_the_deleted_root_only():
    doc = marker_doc()
    store = marker_store()
    run_event(store, load_policy("policies/default.yaml"),
              parse_event({"type": "delete", "roots": ["r-secret"]}, store.snapshot()))
    secret = doc["artifacts"][0]["content"]
    rows = store.conn.execute("SELECT digest, root, event_id FROM tombstones").fetchall()
    held = {r[0] for r in rows}
    assert store.digest_of(secret) in held
    assert content_digest(secret) not in held  # keyed: the plain SHA-256 is not what it holds
    assert store.tombstone_of(secret) in held  # asked with the text, answered with the keyed digest
    assert store.tombstone_of(doc["artifacts"][1]["content"]) is None
    assert store.tombstone_of(doc["artifacts"][3]["content"]) is None  # derived, not a root
    from memsteward.textnorm import text_digests  # issue 25: plus digests of the normalised text, keyed

    keyed = {hmac.new(store.vault._index, d.encode(), hashlib.sha256).hexdigest() for d in text_digests(secret)}
    assert sorted(rows) == sorted((d, "r-secret", 1) for d in {store.digest_of(secret)} | keyed)


def test_content_digest_is_sha256_of_canonical_json():
    content = {"b": "é", "a": [1, 2]}
    assert content_digest(content) == hashlib.sha256('{"a":[1,2],"b":"é"}'.encode()).hexdigest()


@BOTH
@pytest.mark.parametrize("privacy", [False, True])
def test_privacy_correction_erases_superseded_content(privacy: bool):
    store = marker_store()
    fixed = {"id": "r-secret", "kind": "record", "content": {"text": "The user moved away.", "label": "home"}}
    ev = {"type": "correct", "roots": ["r-secret"], "replacements": [fixed]}
    if privacy:
        ev["privacy"] = True
    plan = run_event(store, load_policy("policies/default.yaml"), parse_event(ev, store.snapshot()))
    assert plan.roots == {"r-secret": "replaced"}
    assert store.get("r-secret").content == fixed["content"]
    assert MARKER not in _raw_rows(store)  # sealed at rest either way
    old = store.version_of("r-secret", 1)
    assert (old is not None and old.content is not None and MARKER in json.dumps(old.content)) is not privacy
    assert (store.tombstone_of(marker_doc()["artifacts"][0]["content"]) is not None) is privacy


@BOTH
def test_migration_erases_nothing():
    store = Store()
    store.import_snapshot(Store.open(str(DATA / "store.json")).snapshot())
    before = {i: store.versions(i) for i in store.states()}
    run_event(store, load_policy("policies/default.yaml"),
              parse_event(json.loads((DATA / "event-migrate.json").read_text()), store.snapshot()))
    assert all(not e for i, vs in before.items() for _, e, _ in store.versions(i) if i in before)
    assert store.conn.execute("SELECT COUNT(*) FROM tombstones").fetchone() == (0,)


def test_privacy_flag_is_for_corrections_only(tmp_path: Path):
    store = marker_store()
    from memsteward.errors import InputError
    with pytest.raises(InputError, match="privacy"):
        parse_event({"type": "delete", "roots": ["r-secret"], "privacy": True}, store.snapshot())
    with pytest.raises(InputError, match="privacy"):
        parse_event({"type": "correct", "roots": ["r-secret"], "privacy": "yes",
                     "replacements": [{"id": "r-secret", "kind": "record", "content": {}}]}, store.snapshot())


@pytest.mark.parametrize("event", ["delete", "correct", "migrate"])
def test_every_shipped_demo_event_passes_its_own_audit(store_at, event: str):
    db = store_at("m")
    run = CliRunner()
    assert run.invoke(main, ["store", "import", "--store", db, str(DATA / "store.json")]).exit_code == 0
    r = run.invoke(main, ["repair", "--policy", "policies/default.yaml", "--store", db,
                          "--event", str(DATA / f"event-{event}.json")])
    assert r.exit_code == 0, r.output
    a = run.invoke(main, ["audit", "--store", db, "--json"])
    doc = json.loads(a.stdout)
    assert a.exit_code == 0 and doc["ok"], [c for c in doc["checks"] if not c["ok"]]


def test_correction_evidence_names_the_version_the_replacement_got(store_at):
    db = store_at("m")
    run = CliRunner()
    run.invoke(main, ["store", "import", "--store", db, str(DATA / "store.json")])
    run.invoke(main, ["repair", "--policy", "policies/default.yaml", "--store", db,
                      "--event", str(DATA / "event-correct.json")])
    store = Store.open(db)
    (root_version,) = [v for v, _, ev in store.versions("traj-lyon") if ev == 1]
    assert root_version == 2
    support = [x for r in store.audit_log() if r["action"] == "stage" for x in r["detail"]["support"]
               if x["id"] == "traj-lyon"]
    assert support and all(x["version"] == root_version for x in support)


@pytest.mark.parametrize("erased", [0, 1])  # restored as live, or content back in a row still marked erased
def test_erasure_check_fails_when_a_derived_version_keeps_content(store_at, erased):
    db = store_at("m")
    store = marker_store(db)
    run_event(store, load_policy("policies/default.yaml"),
              parse_event({"type": "delete", "roots": ["r-secret"]}, store.snapshot()))
    store.close()
    _tamper(db, f"UPDATE versions SET content = '\"restored\"', erased = {erased} WHERE id = 'cache-home'")
    r = CliRunner().invoke(main, ["audit", "--store", db, "--json"])
    checks = {c["check"]: c for c in json.loads(r.stdout)["checks"]}
    assert r.exit_code == 1 and not checks["erasure"]["ok"] and "cache-home" in checks["erasure"]["detail"]


# --------------------------------------------------------------------------- bytes on disk (item 2)

READER = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN")
con.execute("SELECT COUNT(*), MAX(content) FROM versions").fetchone()  # a read snapshot of the WAL
print("ready", flush=True)
if sys.argv[2] == "until-told":
    sys.stdin.read()
else:
    time.sleep(float(sys.argv[2]))
con.execute("COMMIT")
con.close()
"""


def _reader(db: Path, hold: float | None) -> subprocess.Popen:
    """A process holding a read snapshot of ``db`` for ``hold`` seconds, or (None) until its stdin is closed."""
    proc = subprocess.Popen([sys.executable, "-c", READER, str(db), "until-told" if hold is None else str(hold)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _file_bytes(db: Path) -> bytes:
    """The raw bytes of the database and every side file (read as they are, nothing checkpointed)."""
    return b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))


def _delete_marker_root(db: Path) -> Store:
    store = marker_store(str(db))
    # stage a successor and publish, so that old pages with the marker sit in the WAL and the file
    run_event(store, load_policy("policies/default.yaml"),
              parse_event({"type": "delete", "roots": ["r-secret"]}, store.snapshot()))
    return store


def _assert_marker_gone(db: Path, store: Store, root_deleted: bool = True) -> None:
    needle = MARKER.encode()
    assert needle not in _file_bytes(db), "marker still in the database file or WAL"
    assert needle[:24] not in _file_bytes(db) and needle[-24:] not in _file_bytes(db)
    # the lineage index (trigram hashes of current content): no row of the erased text, and no copy of
    # its keys left on disk either (SQLite stores them as 8-byte big-endian integers)
    from memsteward.repair.lineage import index_hashes

    keys = index_hashes(MARKER)
    assert keys and not keys & {int(h) for (h,) in store.conn.execute("SELECT h FROM shingles")}
    if root_deleted:  # a corrected root is indexed again, by its new text
        assert store.conn.execute("SELECT COUNT(*) FROM shingles WHERE id = 'r-secret'").fetchone() == (0,)
    raw = _file_bytes(db)
    assert not [h for h in keys if h.to_bytes(8, "big", signed=True) in raw], "index keys of the erased text on disk"
    assert MARKER not in json.dumps(store.export()) and MARKER not in json.dumps([a.as_dict() for a in store.serve()])
    r = CliRunner().invoke(main, ["store", "export", "--store", str(db)])
    assert r.exit_code == 0 and MARKER not in r.output
    a = CliRunner().invoke(main, ["audit", "--store", str(db), "--json"])
    checks = {c["check"]: c for c in json.loads(a.stdout)["checks"]}
    assert a.exit_code == 0 and checks["physical-erasure"]["ok"], checks["physical-erasure"]


def test_marker_gone_from_database_file_and_wal(tmp_path: Path):
    db = tmp_path / "m.db"
    store = _delete_marker_root(db)
    _assert_marker_gone(db, store)
    row = [r for r in store.audit_log() if r["action"] == "physical-erasure"][-1]["detail"]
    assert row["complete"] and row["keys_alive"] == 0 and row["keys_destroyed"] == row["versions"] > 0


def test_privacy_correction_marker_gone_from_database_file_and_wal(tmp_path: Path):
    """Issue 33 gap: a correction marked ``privacy`` erases the old text physically too (its root
    is replaced, not erased: only the scrubbed versions call for the file step)."""
    db = tmp_path / "m.db"
    store = marker_store(str(db))
    fixed = {"id": "r-secret", "kind": "record", "content": {"text": "The user moved away.", "label": "home"}}
    ev = {"type": "correct", "roots": ["r-secret"], "replacements": [fixed], "privacy": True}
    run_event(store, load_policy("policies/default.yaml"), parse_event(ev, store.snapshot()))
    assert store.get("r-secret").content == fixed["content"]
    _assert_marker_gone(db, store, root_deleted=False)
    row = [r for r in store.audit_log() if r["action"] == "physical-erasure"][-1]["detail"]
    assert row["complete"] and row["keys_alive"] == 0 and row["keys_destroyed"] == row["versions"] > 0


def test_marker_gone_with_a_concurrent_reader(tmp_path: Path):
    db = tmp_path / "m.db"
    store = marker_store(str(db))
    reader = _reader(db, 1.5)  # a real process holding a read snapshot while the delete publishes
    run_event(store, load_policy("policies/default.yaml"),
              parse_event({"type": "delete", "roots": ["r-secret"]}, store.snapshot()))
    assert reader.wait(timeout=30) == 0
    _assert_marker_gone(db, store)


def test_marker_gone_when_secure_delete_is_off_by_default(tmp_path: Path, monkeypatch):
    """Emulate an SQLite build without SECURE_DELETE: every new connection starts with it off."""
    import memsteward.store.sqlite as store_mod

    real = sqlite3.connect

    def connect(*args, **kwargs):
        con = real(*args, **kwargs)
        con.execute("PRAGMA secure_delete = OFF")
        return con

    monkeypatch.setattr(store_mod.sqlite3, "connect", connect)
    db = tmp_path / "m.db"
    store = _delete_marker_root(db)
    assert store.conn.execute("PRAGMA secure_delete").fetchone() == (1,)  # the store turned it on
    _assert_marker_gone(db, store)


def test_reader_holding_the_wal_past_the_bound_does_not_stop_erasure(tmp_path: Path):
    """The data file's WAL checkpoint cannot run while a reader holds it, but what it holds of the
    erased versions is ciphertext whose keys are destroyed: the erasure is complete and attested."""
    db = tmp_path / "m.db"
    store = marker_store(str(db))
    store.erase_wait = 0.2
    reader = _reader(db, None)  # holds its snapshot for the whole event, released only after it
    try:
        run_event(store, load_policy("policies/default.yaml"),
                  parse_event({"type": "delete", "roots": ["r-secret"]}, store.snapshot()))
    finally:
        reader.stdin.close()
        assert reader.wait(timeout=30) == 0
    row = [r for r in store.audit_log() if r["action"] == "physical-erasure"][-1]["detail"]
    assert row["complete"] is True and row["checkpoint"] is False and row["keys_alive"] == 0
    a = CliRunner().invoke(main, ["audit", "--store", str(db), "--json"])
    checks = {c["check"]: c for c in json.loads(a.stdout)["checks"]}
    assert a.exit_code == 0 and checks["physical-erasure"]["ok"]
    _assert_marker_gone(db, store)


def test_fingerprints_catch_every_long_surviving_substring():
    from memsteward.repair.erasure import WINDOW, fingerprints

    leaf = "".join(chr(0x61 + (k * 7) % 26) for k in range(150)) + " ünïcode tail ✓"
    needles = fingerprints([{"a": [leaf]}])
    span = 2 * WINDOW - 1
    for k in range(len(leaf) - span + 1):  # brute force over every surviving span
        piece = leaf[k:k + span]
        assert any(n in piece.encode() or n in json.dumps(piece).encode() for n in needles), k
    assert fingerprints(["short"]) == []  # values under MIN_LEAF characters are not fingerprinted


# --------------------------------------------------------------------------- untracked derivations (item 3)

def _untracked_doc(copy: str) -> dict:
    doc = marker_doc()
    doc["artifacts"].append({"id": "sum-copied", "kind": "summary", "content": copy})  # no influence edge
    doc["artifacts"].append({"id": "cache-of-copy", "kind": "cache", "content": 1, "meta": {"transform": "count"}})
    doc["edges"].append({"src": "sum-copied", "dst": "cache-of-copy", "type": "influence"})
    return doc


def _delete(doc: dict, policy):
    store = Store()
    store.import_snapshot(parse_store_document(doc, "<test>"))
    plan = run_event(store, policy, parse_event({"type": "delete", "roots": ["r-secret"]}, store.snapshot()))
    return store, plan


@BOTH
def test_content_scan_finds_an_untracked_copy_and_its_descendants():
    copy = f"Weekly recap. The user {MARKER}. More notes follow."
    store, plan = _delete(_untracked_doc(copy), load_policy("policies/default.yaml"))
    assert set(plan.untracked) == {"sum-copied"} and plan.untracked["sum-copied"]["root"] == "r-secret"
    assert {"sum-copied", "cache-of-copy"} <= set(plan.cascade)
    assert MARKER not in json.dumps([a.as_dict() for a in store.serve()])
    assert MARKER not in _raw_rows(store)
    from memsteward.repair.attestation import attest  # the attestation lists it
    att = attest(store)
    assert [u["id"] for u in att["untracked"]] == ["sum-copied"] and att["ok"]


@BOTH
def test_without_the_content_scan_the_untracked_copy_stays_servable():
    policy = load_policy("policies/default.yaml")
    policy = policy.model_copy(update={"lineage": policy.lineage.model_copy(update={"content_scan": False})})
    store, plan = _delete(_untracked_doc(f"Weekly recap. The user {MARKER}."), policy)
    assert plan.untracked == {}
    assert MARKER in json.dumps([a.as_dict() for a in store.serve()])


def test_a_span_shorter_than_the_shingle_is_not_a_match():
    # 7 consecutive words of the root ("the user zq7 orchid lantern 4411 lives"), then different words
    store, plan = _delete(_untracked_doc("the user Zq7 ORCHID LANTERN 4411 lives elsewhere entirely now"),
                          load_policy("policies/default.yaml"))
    assert plan.untracked == {}


def test_untracked_matches_brute_force_reference():
    import random

    from memsteward.repair.lineage import untracked

    rng = random.Random(7)
    vocab = [f"w{k}" for k in range(6)]
    for _ in range(200):
        root = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 14)))
        others = {f"a{k}": " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 14))) for k in range(4)}
        n, m = rng.randint(3, 5), rng.randint(1, 3)
        got = untracked({"r": root}, others.items(), n, m)
        rw = root.split()
        runs = {" ".join(rw[k:k + n]) for k in range(len(rw) - n + 1)}
        for ident, text in others.items():  # reference: distinct n-word runs of the text also in the root
            tw = text.split()
            shared = len({" ".join(tw[k:k + n]) for k in range(len(tw) - n + 1)} & runs)
            assert (ident in got) == (shared >= m), (root, text, n, m)
            if ident in got:
                assert got[ident]["shared"] == shared
