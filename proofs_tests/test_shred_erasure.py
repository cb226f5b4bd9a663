"""Erasure by key destruction (issue 27's Done-when), on SQLite and on PostgreSQL: a backup taken before
the delete holds no plaintext marker and none of its erased versions decrypts with the current key
store; the current files hold no marker; the attestation passes. With one DEK kept, it fails."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess

import pytest
from store_import import import_document

from memsteward.policy.loader import load_policy
from memsteward.repair.attestation import attest
from memsteward.repair.events import parse_event
from memsteward.repair.execute import run_event
from memsteward.shred.vault import Shredded, Vault
from memsteward.store.deep_audit import backup_rows, deep_audit
from memsteward.store.sqlstore import Store

MARKER = "Zq7-ORCHID-LANTERN-4411 lives at 12 Quiet Mews"
OTHER = "The user likes green tea in the morning."
DOC = {"artifacts": [
    {"id": "root", "kind": "record", "content": f"The user {MARKER}."},
    {"id": "other", "kind": "record", "content": OTHER},
    {"id": "sum", "kind": "summary", "content": f"The user {MARKER}. {OTHER}",
     "meta": {"transform": "extractive", "summary_sentences": 2}},
], "edges": [{"src": "root", "dst": "sum", "type": "influence"}, {"src": "other", "dst": "sum", "type": "influence"}]}


def _open(backend: str, tmp_path, pg_schemas) -> tuple[Store, str]:
    if backend == "sqlite":
        path = str(tmp_path / "mem.db")
        return Store.open(path, create=True), path
    from conftest import pg_dsn
    pg_dsn()
    url = pg_schemas.url()
    return Store.open(url, create=True), url


def _backup(store: Store, where: str, tmp_path) -> list[str]:
    """SQLite: a file copy (database and WAL as they are) and a backup-API copy; PostgreSQL: pg_dump."""
    if store.backend == "sqlite":
        copy = tmp_path / "copy.db"
        shutil.copyfile(where, copy)
        if (tmp_path / "mem.db-wal").exists():
            shutil.copyfile(tmp_path / "mem.db-wal", tmp_path / "copy.db-wal")
        api = tmp_path / "api.db"
        dst = sqlite3.connect(api)
        store.conn.backup(dst)
        dst.close()
        raw = sqlite3.connect(copy)  # fold the copied WAL into the copy, as a restore would
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        raw.close()
        return [str(copy), str(api)]
    from memsteward.shred.pgkeys import _split
    dsn, schema, _ = _split(where)
    dump = tmp_path / "dump.sql"
    subprocess.run(["pg_dump", "--no-owner", "-n", schema, "-f", str(dump), dsn], check=True, timeout=60)
    return [str(dump)]


def _delete(store: Store) -> None:
    run_event(store, load_policy("policies/default.yaml"), parse_event({"type": "delete", "roots": ["root"]},
                                                                         store.snapshot()))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_backup_before_delete_holds_nothing_readable(backend, tmp_path, pg_schemas, monkeypatch):
    store, where = _open(backend, tmp_path, pg_schemas)
    from memsteward.repair.artifacts import parse_store_document
    store.import_snapshot(parse_store_document(DOC, "doc"))
    backups = _backup(store, where, tmp_path)
    assert all(MARKER.encode() not in open(b, "rb").read() for b in backups)  # sealed before the delete too
    assert any(r[0] == "root" and r[2] is not None for r in backup_rows(backups[0]))  # the ciphertext is there
    _delete(store)
    erased = {(i, v) for i, v in store.conn.execute("SELECT id, version FROM versions WHERE erased = 1")}
    assert ("root", 1) in erased and ("sum", 1) in erased
    for b in backups:
        rows = [r for r in backup_rows(b) if (r[0], r[1]) in erased]
        assert rows and store.vault.decryptable(rows) == []  # none of its erased versions decrypts
        with pytest.raises(Shredded):
            store.vault.open(rows)  # and a read raises rather than serving ciphertext
        assert MARKER.encode() not in open(b, "rb").read()
    report = deep_audit(store, backups, [MARKER])
    assert report["clean"], report
    if backend == "sqlite":
        current = b"".join(open(p, "rb").read() for p in report["scan"]["files"] and
                           [f["file"] for f in report["scan"]["files"]])
        assert MARKER.encode() not in current and len(report["scan"]["files"]) >= 3  # db, key file (+ WALs), backups
    checks = {c["check"]: c for c in attest(store)["checks"]}
    assert checks["physical-erasure"]["ok"], checks["physical-erasure"]
    assert "the keys of all 2 erased versions are destroyed" in checks["physical-erasure"]["detail"]
    assert MARKER not in json.dumps(store.export())
    store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_one_kept_dek_fails(backend, tmp_path, pg_schemas, monkeypatch):
    """The broken variant: destruction keeps the DEK of one erased version (the root's)."""
    real = Vault.destroy

    def keep_one(self, refs):
        return real(self, [r for r in refs if r != ("root", 1)])

    monkeypatch.setattr(Vault, "destroy", keep_one)
    store, where = _open(backend, tmp_path, pg_schemas)
    from memsteward.repair.artifacts import parse_store_document
    store.import_snapshot(parse_store_document(DOC, "doc"))
    backups = _backup(store, where, tmp_path)
    _delete(store)
    checks = {c["check"]: c for c in attest(store)["checks"]}
    assert not checks["physical-erasure"]["ok"] and "root v1" in checks["physical-erasure"]["detail"]
    report = deep_audit(store, backups, [MARKER])
    assert not report["clean"] and {d["id"] for d in report["decryptable"]} == {"root"}
    store.close()


# ----------------------------------------------------------------------------- kill -9 after the keys went

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
CHILD = """
import sys
from memsteward.policy.loader import load_policy_source
from memsteward.repair.events import load_event
from memsteward.repair.execute import run_event
from memsteward.store.sqlstore import Store
store = Store.open(sys.argv[1])
if len(sys.argv) > 4:
    from memsteward.store.crashing import CrashingStore
    store = CrashingStore(store, crash_at=int(sys.argv[4]))
run_event(store, load_policy_source(sys.argv[2]).policy, load_event(sys.argv[3], store.snapshot()), "mincut", "ortools")
"""


def _after_key_destruction() -> int:
    """The store checkpoint right after the publication destroyed the erased versions' keys (counted on
    an in-memory copy of the demo store; the child passes the same checkpoints)."""
    from memsteward.repair.events import load_event

    store = Store.open(str(DATA / "store.json"))
    start, seen = store.checkpoints, []
    real = Vault.destroy

    def spy(self, refs):
        seen.append(store.checkpoints - start)
        return real(self, refs)

    Vault.destroy = spy
    try:
        run_event(store, load_policy("policies/default.yaml"), load_event(str(DATA / "event-delete.json"),
                                                                          store.snapshot()), "mincut", "ortools")
    finally:
        Vault.destroy = real
    store.close()
    return seen[0] + 1


def _run_child(db: str, crash_at: int | None) -> int:
    import os
    import sys
    env = dict(os.environ)
    crash = [str(crash_at)] if crash_at else []
    return subprocess.run([sys.executable, "-c", CHILD, db, str(ROOT / "policies" / "default.yaml"),
                           str(DATA / "event-delete.json"), *crash], cwd=ROOT, env=env, capture_output=True,
                          timeout=120).returncode


def _fresh(store_at, name: str) -> str:
    return import_document(str(store_at(name)), DATA / "store.json")


def test_kill_between_key_destruction_and_publication_recovers(store_at):
    import signal
    import sys
    ref = _fresh(store_at, "ref")
    assert _run_child(ref, None) == 0
    s = Store.open(ref)
    expected = s.dump_state()
    s.close()
    db = _fresh(store_at, "killed")
    assert _run_child(db, _after_key_destruction()) == -signal.SIGKILL
    s = Store.open(db)
    pending = s.unfinished_event()
    assert pending is not None  # the publication did not commit ...
    cascade = set(pending[3]["cascade"])
    erased = [("p1", v) for v, _, _ in s.versions("p1")]
    assert erased and not s.vault.alive(erased)  # ... but the keys are gone
    assert not cascade & {a.id for a in s.serve()}  # and nothing of C(F) is served (no ciphertext either)
    s.close()
    memsteward = str(__import__("pathlib").Path(sys.executable).parent / "memsteward")
    rec = subprocess.run([memsteward, "recover", "--store", db], capture_output=True, text=True, cwd=ROOT)
    assert rec.returncode == 0, rec.stderr
    s = Store.open(db)
    got = s.dump_state()
    checks = {c["check"]: c["ok"] for c in attest(s)["checks"]}
    s.close()
    assert {k: got[k] for k in ("artifacts", "versions")} == {k: expected[k] for k in ("artifacts", "versions")}
    assert all(checks.values()), checks
