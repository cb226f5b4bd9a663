"""The crypto-shredding commands and their errors, through the real CLI in child processes (SQLite):
audit --deep, store migrate --encrypt (resumable), store rotate-key; a wrong master key, a missing
key file or an unreachable key store exit 2 with one line and change nothing; older code refuses."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from store_import import import_document

from memsteward.errors import InputError
from memsteward.shred.master import create_key_file
from memsteward.store.sqlstore import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
POLICY = str(ROOT / "policies" / "default.yaml")
CLI = str(Path(sys.executable).parent / "memsteward")
P1 = next(a for a in json.loads((DATA / "store.json").read_text())["artifacts"] if a["id"] == "p1")  # the deleted root


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=ROOT, env={**os.environ, **(env or {})},
                          timeout=120)


def _one_line_exit_2(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert all(w in lines[0] for w in words), lines[0]


def _files(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))


def _store(tmp_path: Path) -> Path:
    db = tmp_path / "mem.db"
    import_document(db, DATA / "store.json")
    return db


def test_audit_deep_after_a_delete(tmp_path):
    db = _store(tmp_path)
    shutil.copyfile(db, tmp_path / "before.db")  # a file copy taken before the delete
    assert _run("repair", "--policy", POLICY, "--store", str(db), "--event", str(DATA / "event-delete.json")).returncode == 0
    text = P1["content"]["text"]
    r = _run("audit", "--store", str(db), "--deep", "--backup", str(tmp_path / "before.db"), "--text", text, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["clean"] and report["decryptable"] == [] and len(report["scan"]["files"]) >= 3
    leak = tmp_path / "leak.bin"
    leak.write_bytes(b"\x00" * 100 + text.encode() + b"\x00" * 100)  # a plaintext copy somewhere
    r = _run("audit", "--store", str(db), "--deep", "--backup", str(leak), "--text", text)
    assert r.returncode == 1 and "ERASED TEXT FOUND" in r.stdout and text[:20] not in r.stdout


def test_audit_row_says_the_keys_are_destroyed(tmp_path):
    db = _store(tmp_path)
    assert _run("repair", "--policy", POLICY, "--store", str(db), "--event", str(DATA / "event-delete.json")).returncode == 0
    r = _run("audit", "--store", str(db))
    assert r.returncode == 0 and "the keys of all" in r.stdout and "erased versions are destroyed" in r.stdout


def test_key_errors_exit_2_and_change_nothing(tmp_path):
    db = _store(tmp_path)
    before = _files(db)
    other = tmp_path / "other.key"
    create_key_file(str(other))
    event = ["repair", "--policy", POLICY, "--store", str(db), "--event", str(DATA / "event-delete.json")]
    _one_line_exit_2(_run(*event, env={"MEMSTEWARD_MASTER_KEY_FILE": str(other)}), "wrong master key")
    _one_line_exit_2(_run("store", "serve", "--store", str(db), env={"MEMSTEWARD_MASTER_KEY": "00" * 32}),
                     "wrong master key")
    os.chmod(other, 0o644)
    _one_line_exit_2(_run(*event, env={"MEMSTEWARD_MASTER_KEY_FILE": str(other)}), "readable or writable by others")
    _one_line_exit_2(_run(*event, env={"MEMSTEWARD_KEYSTORE": "postgresql://u:pw@127.0.0.1:1/k"}),
                     "cannot reach the key store")
    assert _files(db) == before
    os.rename(f"{db}.keys", tmp_path / "moved.keys")
    _one_line_exit_2(_run(*event), "key file not found")
    assert _run("store", "serve", "--store", str(db)).returncode == 2
    os.rename(tmp_path / "moved.keys", f"{db}.keys")
    assert _run(*event).returncode == 0  # the next valid event succeeds


def test_rotate_key(tmp_path):
    db = _store(tmp_path)
    new = tmp_path / "new.key"
    create_key_file(str(new))
    r = _run("store", "rotate-key", "--store", str(db), "--new-key-file", str(new), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["rewrapped"] > 0
    _one_line_exit_2(_run("store", "serve", "--store", str(db)), "wrong master key")  # the old key opens nothing
    r = _run("store", "serve", "--store", str(db), "--json", env={"MEMSTEWARD_MASTER_KEY_FILE": str(new)})
    assert r.returncode == 0 and P1["id"] in r.stdout


def _legacy_plaintext(db: Path) -> None:
    """The store as a release of schema 5 left it: every version in plaintext, no store_keys, no key file."""
    s = Store.open(str(db))
    rows = s.conn.execute("SELECT id, version, content, meta FROM versions").fetchall()
    plain = s.vault.open([(i, int(v), c, m) for i, v, c, m in rows])
    s.close()
    raw = sqlite3.connect(db)
    raw.executemany("UPDATE versions SET content = ?, meta = ?, sha256 = NULL WHERE id = ? AND version = ?",
                    [(c, m, i, v) for (i, v, _, _), (c, m) in zip(rows, plain)])
    raw.execute("DROP TABLE store_keys")
    raw.execute("UPDATE memsteward_schema SET version = 5")
    raw.commit()
    raw.execute("VACUUM")
    raw.close()
    os.remove(f"{db}.keys")


def test_migrate_encrypt_is_resumable_and_ends_with_the_scan(tmp_path, monkeypatch):
    db = _store(tmp_path)
    _legacy_plaintext(db)
    marker = P1["content"]["text"]
    assert marker.encode() in _files(db)
    _one_line_exit_2(_run("store", "serve", "--store", str(db)), "schema version 5")
    s = Store.open(str(db), migrate=True)  # to schema 6: still plaintext, new writes sealed
    assert not s.sealed
    from memsteward.store import encryption as encrypt

    def interrupted(done, total):
        raise KeyboardInterrupt  # killed after the first batch committed

    with pytest.raises(KeyboardInterrupt):
        encrypt.encrypt_in_place(s, batch=3, progress=interrupted)
    left = s.conn.execute("SELECT COUNT(*) FROM versions WHERE substr(meta, 1, 4) != 'ms1:'").fetchone()[0]
    total = s.conn.execute("SELECT COUNT(*) FROM versions").fetchone()[0]
    assert 0 < left == total - 3
    s.close()
    r = _run("store", "migrate", "--store", str(db), "--encrypt", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)["encrypt"]
    assert doc["sealed_now"] == left and doc["clean"] and doc["scan"]["needles"] > 0
    assert marker.encode() not in _files(db)
    assert _run("repair", "--policy", POLICY, "--store", str(db), "--event", str(DATA / "event-delete.json")).returncode == 0
    r = _run("audit", "--store", str(db), "--json")
    checks = {c["check"]: c["ok"] for c in json.loads(r.stdout)["checks"]}
    assert r.returncode == 0 and all(checks.values()), checks


def test_older_code_refuses_an_encrypted_store(tmp_path, monkeypatch):
    """A release of schema 5 (before key stores) opening this store: refused, saying a newer release wrote it."""
    db = _store(tmp_path)
    from memsteward.store import schema as dialect
    from memsteward.store.schema import SCHEMA_VERSION
    monkeypatch.setattr(dialect, "SCHEMA_VERSION", 5)
    with pytest.raises(InputError, match=f"schema version {SCHEMA_VERSION}, written by a newer release"):
        Store.open(str(db))
