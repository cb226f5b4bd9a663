"""A write seals under a *pooled* data key, made ahead in a batch (one durable key-store commit per
batch), and records which key in its own transaction (``versions.dek``): a write waits for one durable
commit. The version commits only once its key is durable; a process killed between taking keys and
committing leaves only unused keys, no version without its key, and an audit that passes; erasure
destroys the pooled keys, and the attestation fails when one of them is kept."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import memsteward
from memsteward.policy.loader import load_policy
from memsteward.repair.attestation import attest
from memsteward.repair.events import parse_event
from memsteward.repair.execute import run_event
from memsteward.shred.vault import Vault
from memsteward.store.sqlstore import Store

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).with_name("memsteward"))


def _deks(db: str) -> dict[tuple[str, int], str | None]:
    c = sqlite3.connect(db)
    try:
        return {(i, int(v)): d for i, v, d in c.execute("SELECT id, version, dek FROM versions")}
    finally:
        c.close()


def _key_ids(keyfile: str) -> set[tuple[str, int]]:
    c = sqlite3.connect(keyfile)
    try:
        return {(i, int(v)) for i, v in c.execute("SELECT id, version FROM deks")}
    finally:
        c.close()


def test_a_version_commits_only_once_its_pooled_key_is_durable(tmp_path):
    db = str(tmp_path / "s.db")
    store = memsteward.open_store(db)
    lock = sqlite3.connect(store.vault.keys.path, isolation_level=None)  # type: ignore[attr-defined]
    lock.execute("BEGIN IMMEDIATE")  # the key file's write lock: the pool cannot be filled
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(store.record({"id": "n1", "kind": "record",
                                                                  "content": "Alice lives in Paris"})))
    t.start()
    try:
        t.join(1.5)
        assert t.is_alive(), f"the version was committed before its key was durable: {out}"
        assert _deks(db) == {}
    finally:
        lock.execute("ROLLBACK")
        lock.close()
        t.join(30)
    assert not t.is_alive() and out and out[0].version == 1, out
    dek = _deks(db)[("n1", 1)]
    assert dek and (dek, 0) in _key_ids(db + ".keys")  # the row names its key, and the key file holds it
    store.close()
    again = memsteward.open_store(db)
    assert again.get("n1").content == "Alice lives in Paris"
    again.close()


def test_writes_take_keys_made_in_batches_and_two_handles_never_share_one(tmp_path):
    db = str(tmp_path / "s.db")
    a, b = memsteward.open_store(db), memsteward.open_store(db)
    calls: list[int] = []
    for s in (a, b):
        keys = s.vault.keys  # type: ignore[attr-defined]
        real = keys.create
        keys.create = lambda refs, real=real: calls.append(len(refs)) or real(refs)
    for k in range(40):
        (a if k % 2 else b).record({"id": f"n{k}", "kind": "record", "content": f"memory {k}"})
    assert len(calls) <= 6, calls  # per handle: batches of 8, 16 (then 32): not one key commit per write
    deks = _deks(db)
    assert len(deks) == 40 and None not in deks.values() and len(set(deks.values())) == 40
    assert {(d, 0) for d in deks.values()} <= _key_ids(db + ".keys")
    for k in range(40):
        assert b.get(f"n{k}").content == f"memory {k}" and a.get(f"n{k}").content == f"memory {k}"
    a.close()
    b.close()
    assert _key_ids(db + ".keys") == {(d, 0) for d in deks.values()}  # closing destroyed the unused pooled keys


CHILD = """
import sys, time
import memsteward
store = memsteward.open_store(sys.argv[1])
store.record({"id": "n1", "kind": "record", "content": "Alice lives in Paris"})
def hold():
    print("READY", flush=True)
    time.sleep(600)
store.record({"id": "n2", "kind": "record", "content": "Bob lives in Lyon"}, before_commit=hold)
"""


def test_kill_9_between_taking_a_pooled_key_and_the_commit(tmp_path):
    """A real child takes a key from its pool, seals a version and is killed (SIGKILL) inside the
    version's transaction: the version is not stored, every stored version's key exists, and the
    audit passes (after a delete, which destroys the pooled key); the keys the child reserved stay in the key file, sealing nothing stored."""
    db = str(tmp_path / "s.db")
    memsteward.open_store(db).close()
    child = subprocess.Popen([sys.executable, "-c", CHILD, db], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "READY"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(30)
    assert child.returncode == -signal.SIGKILL
    deks = _deks(db)
    assert list(deks) == [("n1", 1)] and deks[("n1", 1)]
    held = _key_ids(db + ".keys")
    assert (deks[("n1", 1)], 0) in held and len(held) > 1  # unused reserved keys, harmless
    s = Store.open(db)
    assert s.get("n1").content == "Alice lives in Paris" and s.get("n2") is None
    every = [(i, v) for i, v in deks]
    assert s.keys_alive(every) == every  # no stored version without its key
    s.record({"id": "n2", "kind": "record", "content": "Bob lives in Lyon"})  # the write goes through now
    run_event(s, load_policy("policies/default.yaml"), parse_event({"type": "delete", "roots": ["n1"]}, s.snapshot()))
    assert s.keys_alive([("n1", 1)]) == [] and s.get("n2").content == "Bob lives in Lyon"
    s.close()
    for args in (("audit", "--store", db, "--check", "--json"), ("audit", "--store", db, "--json")):
        r = subprocess.run([CLI, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert r.returncode == 0 and json.loads(r.stdout)["ok"], r.stdout + r.stderr


def _open(backend: str, tmp_path: Path, pg_schemas: Any) -> Store:
    if backend == "sqlite":
        return Store.open(str(tmp_path / "mem.db"), create=True)
    from conftest import pg_dsn
    pg_dsn()
    return Store.open(pg_schemas.url(), create=True)


def _write_and_delete(store: Store) -> str:
    """Root, other and a summary of both, written through the write path (pooled keys); the root
    deleted. Returns the root's pooled key id."""
    store.record({"id": "root", "kind": "record", "content": "The user lives at 12 Quiet Mews."})
    store.record({"id": "other", "kind": "record", "content": "The user likes green tea."})
    store.record({"id": "sum", "kind": "summary", "content": "The user lives at 12 Quiet Mews and likes green tea.",
                  "meta": {"transform": "extractive", "summary_sentences": 2}}, inputs=["root", "other"])
    (dek,) = store.conn.execute("SELECT dek FROM versions WHERE id = 'root'").fetchone()
    assert dek and store.vault.alive([(dek, 0)])
    run_event(store, load_policy("policies/default.yaml"),
              parse_event({"type": "delete", "roots": ["root"]}, store.snapshot()))
    return str(dek)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_erasure_destroys_the_pooled_keys(backend, tmp_path, pg_schemas):
    store = _open(backend, tmp_path, pg_schemas)
    dek = _write_and_delete(store)
    erased = [(i, int(v), d) for i, v, d in store.conn.execute("SELECT id, version, dek FROM versions WHERE erased = 1")]
    assert {(i, v) for i, v, _ in erased} >= {("root", 1), ("sum", 1)} and all(d for _, _, d in erased)
    assert (dek, 0) in {(d, 0) for _, _, d in erased}
    assert not store.vault.alive([(d, 0) for _, _, d in erased])  # the pooled keys are gone
    assert store.keys_alive([(i, v) for i, v, _ in erased]) == []
    checks = {c["check"]: c for c in attest(store)["checks"]}
    assert checks["physical-erasure"]["ok"], checks["physical-erasure"]
    assert store.get("other").content == "The user likes green tea."  # a kept version's key is kept
    store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_kept_pooled_key_fails_the_attestation(backend, tmp_path, pg_schemas, monkeypatch):
    """The broken variant: destruction keeps the root's pooled key."""
    real, kept = Vault.destroy, []

    def keep_pooled(self: Vault, refs: Any) -> int:
        refs = list(refs)
        kept.extend(r for r in refs if r[1] == 0)
        return real(self, [r for r in refs if r[1] != 0])

    monkeypatch.setattr(Vault, "destroy", keep_pooled)
    store = _open(backend, tmp_path, pg_schemas)
    _write_and_delete(store)
    assert kept
    checks = {c["check"]: c for c in attest(store)["checks"]}
    assert not checks["physical-erasure"]["ok"], checks["physical-erasure"]
    assert "is not destroyed" in checks["physical-erasure"]["detail"]
    assert store.keys_alive([("root", 1)]) == [("root", 1)]
    store.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_never_takes_a_key_its_parent_reserved(tmp_path):
    """A pre-fork server opens the store, then forks workers: the pool the child inherits stays the
    parent's (the child makes its own keys), so no key ever seals versions of two processes."""
    store = memsteward.open_store(str(tmp_path / "s.db"))
    store.record({"id": "n1", "kind": "record", "content": "Alice lives in Paris"})  # fills the pool
    vault = store.vault  # type: ignore[attr-defined]
    reserved = {k for k, *_ in vault._pool}
    assert reserved
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its refill is answered without the inherited SQLite connection
        try:
            vault.keys.create = lambda refs: {r: b"\0" * 32 for r in refs}
            taken = [k for k, *_ in vault._take(3)]
            os.write(write, json.dumps(taken).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        taken = json.loads(fh.read() or "[]")
    os.waitpid(pid, 0)
    assert len(taken) == 3 and not set(taken) & reserved, (taken, reserved)
    assert {k for k, *_ in vault._pool} == reserved  # the parent's pool is untouched
    store.close()


def _in_key_wait(t: threading.Thread) -> bool:
    """Whether thread ``t`` is waiting for a key store commit (the vault's ``_durable``)."""
    f = sys._current_frames().get(t.ident or -1)
    while f is not None:
        if f.f_code.co_name == "_durable" and f.f_code.co_filename.endswith("vault.py"):
            return True
        f = f.f_back
    return False


def test_a_batch_commits_only_after_its_overlapped_key_commit_on_postgres(pg_schemas):
    """On PostgreSQL a refill's key commit runs while the batch's transaction checks; the store's COMMIT
    waits for it. The key table is locked so that the key commit cannot finish: the batch must not reach
    its COMMIT (``before_commit``, just before it, sees every key of the batch durable)."""
    import time

    import psycopg
    from conftest import pg_dsn
    from psycopg import sql

    dsn = pg_dsn()
    store = Store.open(pg_schemas.url(), create=True)
    keys: Any = store.vault.keys
    count = sql.SQL("SELECT count(*) FROM {}.deks WHERE store_id = %s AND version = 0").format(
        sql.Identifier(keys.schema))
    with psycopg.connect(dsn, autocommit=True) as lock, psycopg.connect(dsn, autocommit=True) as look:
        pooled = look.execute(count, (keys.store_id,)).fetchone()[0]
        seen: list[int] = []
        out: list[Any] = []
        lock.execute("BEGIN")
        lock.execute(sql.SQL("LOCK TABLE {}.deks IN EXCLUSIVE MODE").format(sql.Identifier(keys.schema)))
        t = threading.Thread(target=lambda: out.append(store.record_many(
            [{"id": f"n{k}", "kind": "record", "content": f"note {k}"} for k in range(300)],
            before_commit=lambda: seen.append(look.execute(count, (keys.store_id,)).fetchone()[0]))))
        t.start()
        try:
            # until the writer waits for its keys (kept order) or has reached its COMMIT (order broken)
            while not seen and not _in_key_wait(t) and t.is_alive():
                time.sleep(0.01)
            waiting_on = look.execute(count, (keys.store_id,)).fetchone()[0]
        finally:
            lock.execute("ROLLBACK")
            t.join(60)
    assert not t.is_alive() and out and len(out[0]) == 300, out
    assert waiting_on == pooled, "the key commit had finished before the store's transaction: nothing overlapped"
    assert seen and seen[0] >= pooled + 300, f"the store's COMMIT came before its keys were durable: {seen}"
    stored = store.conn.execute("SELECT count(*) FROM versions WHERE dek IS NOT NULL").fetchone()[0]
    assert stored == 300
    assert store.get("n299").content == "note 299"
    store.close()


def test_a_batch_whose_key_commit_fails_stores_nothing_on_postgres(pg_schemas):
    """The overlapped key commit fails (its key server connection is ended while it waits on a lock):
    the batch is refused with the error and stores nothing, and its keys are not kept for later writes."""
    import time

    import psycopg
    from conftest import pg_dsn
    from psycopg import sql

    dsn = pg_dsn()
    store = Store.open(pg_schemas.url(), create=True)
    keys: Any = store.vault.keys
    store.record_many([{"id": f"a{k}", "kind": "record", "content": f"first {k}"} for k in range(8)])
    assert store.vault._pool == []  # the first refill made 8: the next one makes 16 for a batch of 2
    errors: list[BaseException] = []

    def write() -> None:
        try:
            store.record_many([{"id": f"n{k}", "kind": "record", "content": f"note {k}"} for k in range(2)])
        except BaseException as exc:  # noqa: BLE001 - looked at below
            errors.append(exc)
    with psycopg.connect(dsn, autocommit=True) as lock:
        lock.execute("BEGIN")
        lock.execute(sql.SQL("LOCK TABLE {}.deks IN EXCLUSIVE MODE").format(sql.Identifier(keys.schema)))
        t = threading.Thread(target=write)
        t.start()
        try:
            while not _in_key_wait(t) and t.is_alive():
                time.sleep(0.01)
            lock.execute("SELECT pg_terminate_backend(%s)", (keys.conn.info.backend_pid,))
        finally:
            lock.execute("ROLLBACK")
            t.join(60)
    assert not t.is_alive() and errors, "the batch committed though its keys never became durable"
    assert store.conn.execute("SELECT count(*) FROM versions").fetchone()[0] == 8
    assert store.conn.execute("SELECT count(*) FROM artifacts WHERE id LIKE 'n%'").fetchone()[0] == 0
    assert store.vault._pool == []  # the failed commit's keys are not handed to a later write
    store.close()


@pytest.mark.parametrize("column", [None, "", "other"])
def test_erasure_destroys_the_key_the_ciphertext_names_when_the_row_s_column_disagrees(tmp_path, column):
    """The sealed text names its pooled key (``ms1:@<id>:``); erasure destroys that key even when the row's
    ``dek`` column lost it (NULL or empty, as a row restored without the column reads) or names another
    key ("other": the other root's key, which it destroys too, with both roots deleted), so no erased
    version stays readable under its own key."""
    store = Store.open(str(tmp_path / "mem.db"), create=True)
    store.record({"id": "root", "kind": "record", "content": "The user lives at 12 Quiet Mews."})
    store.record({"id": "root2", "kind": "record", "content": "The user was born on 3 May 1990."})
    store.record({"id": "kept", "kind": "record", "content": "The user likes green tea."})
    deks = {i: str(d) for i, d in store.conn.execute("SELECT id, dek FROM versions")}
    assert len(set(deks.values())) == 3 and store.vault.alive([(deks["root"], 0)])
    with store.transaction():
        store.conn.execute("UPDATE versions SET dek = ? WHERE id = 'root'",
                           (deks["root2"] if column == "other" else column,))
    roots = ["root", "root2"] if column == "other" else ["root"]
    run_event(store, load_policy("policies/default.yaml"), parse_event({"type": "delete", "roots": roots}, store.snapshot()))
    assert {(i, int(v)) for i, v in store.conn.execute("SELECT id, version FROM versions WHERE erased = 1")} == \
        {(r, 1) for r in roots}
    assert store.vault.alive([(deks[r], 0) for r in roots]) == set()   # the named keys are gone
    assert store.vault.alive([(deks["kept"], 0)]) == {(deks["kept"], 0)}
    assert store.get("kept").content == "The user likes green tea."
    store.close()
