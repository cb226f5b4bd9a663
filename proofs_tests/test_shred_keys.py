"""Crypto-shredding parts: AES-GCM envelopes, the master key, the key stores (SQLite file, PostgreSQL)."""

from __future__ import annotations

import base64
import os
import sqlite3
import uuid

import pytest

from memsteward.errors import InputError
from memsteward.shred import envelope
from memsteward.shred.api import KEYFILE_FORMAT, KeyStore, KeyStoreError
from memsteward.shred.digests import content_mac, keyed_shingle_hash
from memsteward.shred.keyfile import FileKeyStore
from memsteward.shred.master import MASTER_KEY_ENV, MASTER_KEY_FILE_ENV, ephemeral, load_master


def test_envelope_round_trip_and_binding():
    dek = envelope.new_dek()
    aad = envelope.associated("s1", "a", 1, "content")
    sealed = envelope.seal_text(dek, '"The user likes green tea."', aad)
    assert envelope.is_sealed(sealed) and "green" not in sealed
    assert envelope.open_text(dek, sealed, aad) == '"The user likes green tea."'
    for other in (envelope.associated("s1", "a", 2, "content"), envelope.associated("s1", "b", 1, "content"),
                  envelope.associated("s2", "a", 1, "content"), envelope.associated("s1", "a", 1, "meta")):
        with pytest.raises(envelope.Undecryptable):
            envelope.open_text(dek, sealed, other)  # moved to another row, field or store
    with pytest.raises(envelope.Undecryptable):
        envelope.open_text(envelope.new_dek(), sealed, aad)  # another key (a destroyed one's successor)
    raw = bytearray(base64.b64decode(sealed[4:]))
    raw[-1] ^= 1
    with pytest.raises(envelope.Undecryptable):
        envelope.open_text(dek, "ms1:" + base64.b64encode(bytes(raw)).decode(), aad)


def test_batch_sealing_and_wrapping_draw_fresh_nonces_and_keys():
    """A batch sealed or wrapped at once (one ``os.urandom`` draw sliced per row) opens field by field
    as single seals do, and no nonce or DEK repeats within it."""
    w = envelope.Wrapper(envelope.new_dek(), "s1")
    refs = [("a", 1), ("a", 2), ("b", 1), ("a", 1)]
    deks, wrapped = w.fresh(refs)
    assert [(i, v) for i, v, _ in wrapped] == [("a", 1), ("a", 2), ("b", 1)] and len(set(deks.values())) == 3
    assert all(w.unwrap(i, v, blob) == deks[(i, v)] for i, v, blob in wrapped)
    assert len({blob[:envelope.NONCE] for _, _, blob in wrapped}) == 3
    rows = [("a", 1, '"tea"', '{"m":1}'), ("a", 2, None, "{}"), ("b", 1, '"tea"', '{"m":1}')]
    sealed = envelope.seal_rows("s1", rows, deks)
    nonces = []
    for (i, v, c, m), (_, _, sc, sm) in zip(rows, sealed, strict=True):
        for text, stored, part in ((c, sc, "content"), (m, sm, "meta")):
            if text is None:
                assert stored is None
                continue
            assert envelope.open_text(deks[(i, v)], stored, envelope.associated("s1", i, v, part)) == text
            nonces.append(base64.b64decode(stored[4:])[:envelope.NONCE])
    assert len(set(nonces)) == len(nonces) == 5


def test_master_key_sources(tmp_path, monkeypatch):
    monkeypatch.delenv(MASTER_KEY_ENV, raising=False)
    monkeypatch.delenv(MASTER_KEY_FILE_ENV, raising=False)
    path = str(tmp_path / "m.key")
    made = load_master(path, create=True)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert load_master(path).kid == made.kid
    os.chmod(path, 0o644)
    with pytest.raises(InputError, match="readable or writable by others"):
        load_master(path)
    with pytest.raises(InputError, match="not found"):
        load_master(str(tmp_path / "absent.key"))
    monkeypatch.setenv(MASTER_KEY_ENV, "ab" * 32)
    assert load_master(path).key == bytes.fromhex("ab" * 32)
    monkeypatch.setenv(MASTER_KEY_ENV, "not-a-key-secretvalue")
    with pytest.raises(InputError) as err:
        load_master(path)
    assert "secretvalue" not in err.value.render()  # a bad key is never echoed


def _keystores(tmp_path, request):
    """(factory(master, create) -> KeyStore, files) for the SQLite key file and, with a DSN, PostgreSQL."""
    if request.param == "file":
        path = str(tmp_path / "s.keys")
        return lambda m, create=False: FileKeyStore(path, m, "store-1" if create else None, create=create)
    from conftest import pg_dsn

    from memsteward.shred.pgkeys import PgKeyStore
    url = f"{pg_dsn()}{'&' if '?' in pg_dsn() else '?'}schema=k_{uuid.uuid4().hex[:12]}"
    request.addfinalizer(lambda: _drop_schema(url))
    return lambda m, create=False: PgKeyStore(url, m, "store-1", create=create)


def _drop_schema(url: str) -> None:
    import psycopg

    from memsteward.shred.pgkeys import _split
    dsn, schema, _ = _split(url)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["file", "postgres"])
def keystore_factory(tmp_path, request):
    return _keystores(tmp_path, request)


def test_keystore_contract(keystore_factory):
    m = ephemeral()
    ks = keystore_factory(m, create=True)
    assert isinstance(ks, KeyStore)
    made = ks.create([("a", 1), ("a", 2), ("b", 1)])
    assert set(made) == {("a", 1), ("a", 2), ("b", 1)} and all(len(k) == 32 for k in made.values())
    assert ks.create([("a", 1)]) == {("a", 1): made[("a", 1)]}  # an existing ref keeps its DEK
    assert ks.destroy([("a", 1), ("zz", 9)]) == 1
    assert ks.destroy([("a", 1)]) == 0  # idempotent (recover repeats it)
    assert ks.get([("a", 1), ("a", 2), ("b", 1)]) == {("a", 2): made[("a", 2)], ("b", 1): made[("b", 1)]}
    index = ks.index_key()
    ks.close()
    ks = keystore_factory(m)
    assert ks.index_key() == index and ks.get([("a", 2)]) == {("a", 2): made[("a", 2)]}
    ks.close()
    with pytest.raises(KeyStoreError, match="wrong master key"):
        keystore_factory(ephemeral())
    fresh = ephemeral()
    ks = keystore_factory(m)
    assert ks.rotate(fresh) == 2
    ks.close()
    with pytest.raises(KeyStoreError, match="wrong master key"):
        keystore_factory(m)  # the old master key opens nothing any more
    ks = keystore_factory(fresh)
    assert ks.get([("a", 2), ("b", 1)]) == {("a", 2): made[("a", 2)], ("b", 1): made[("b", 1)]}
    assert ks.index_key() == index  # rotation rewraps; it changes no key the data depends on
    mixed = ks.create([("a", 2), ("c", 1)])  # one ref with a key already, one new
    assert mixed[("a", 2)] == made[("a", 2)] and len(mixed[("c", 1)]) == 32
    assert ks.get([("c", 1)]) == {("c", 1): mixed[("c", 1)]}
    ks.close()


def test_destroyed_key_leaves_no_bytes_in_the_key_file_or_its_wal(tmp_path):
    """secure_delete + the WAL checkpoint: the wrapped DEK's bytes are in neither file after destroy."""
    path = str(tmp_path / "s.keys")
    ks = FileKeyStore(path, ephemeral(), "store-1", create=True)
    ks.create([(f"id{k}", 1) for k in range(50)])
    ks.checkpoint()
    raw = sqlite3.connect(path)
    blob = raw.execute("SELECT wrapped FROM deks WHERE id = 'id7'").fetchone()[0]
    raw.close()
    files = lambda: b"".join(open(p, "rb").read() for p in (path, path + "-wal") if os.path.exists(p))  # noqa: E731
    assert blob in files()
    assert ks.destroy([("id7", 1)]) == 1
    assert blob not in files()
    assert ks.get([("id8", 1)])  # the others live on
    ks.close()


def test_key_file_errors(tmp_path):
    m = ephemeral()
    with pytest.raises(KeyStoreError, match="key file not found"):
        FileKeyStore(str(tmp_path / "none.keys"), m)
    bad = tmp_path / "bad.keys"
    bad.write_bytes(b"this is not sqlite at all, not even close" * 10)
    with pytest.raises(KeyStoreError, match="cannot open the key file"):
        FileKeyStore(str(bad), m)
    path = str(tmp_path / "s.keys")
    FileKeyStore(path, m, "store-1", create=True).close()
    with pytest.raises(KeyStoreError, match="belongs to store 'store-1'"):
        FileKeyStore(path, m, "store-2")
    raw = sqlite3.connect(path)
    raw.execute("UPDATE keyfile SET format = ?", (KEYFILE_FORMAT + 1,))
    raw.commit()
    raw.close()
    with pytest.raises(KeyStoreError, match=f"format {KEYFILE_FORMAT + 1}, written by a newer release"):
        FileKeyStore(path, m)


def test_unreachable_pg_key_store():
    from memsteward.shred.pgkeys import PgKeyStore
    with pytest.raises(KeyStoreError, match="cannot reach the key store") as err:
        PgKeyStore("postgresql://u:hunter2@127.0.0.1:1/keys", ephemeral(), "s", create=True)
    assert "hunter2" not in err.value.render()


def test_keyed_digests_need_the_key():
    k1, k2 = envelope.new_dek(), envelope.new_dek()
    assert content_mac(k1, '"peanuts"') == content_mac(k1, '"peanuts"') != content_mac(k2, '"peanuts"')
    assert keyed_shingle_hash(k1, "likes green tea") != keyed_shingle_hash(k2, "likes green tea")
