"""Encryption at rest (crypto-shredding, issue 27): the store's id, its key store and sealed rows.

Content and meta of every version are sealed (AES-GCM envelopes, :mod:`memsteward.shred.vault`)
under a per-version DEK kept in a key store apart from the data; erasing a version destroys its DEK.
Digests a sealed store keeps of content (tombstones, version rows, the lineage index) are keyed
(HMAC-SHA256 under the index key), so a phrase's digest needs the key.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..repair.artifacts import Artifact
from ..repair.writes import canonical_json
from ..shred.keystores import open_keys
from ..shred.vault import Vault, key_ref
from .core import StoreCore, _load
from .postgres import PgConnection

__all__ = ["OPEN_BATCH", "OPEN_BYTES", "Sealing", "batches"]

OPEN_BATCH = 2000  # rows opened per key-store lookup when a read streams sealed versions
OPEN_BYTES = 1 << 20  # … or fewer: a batch stops once its stored texts reach this many characters


def batches(rows: Iterable[Sequence[Any]], limit: int = OPEN_BATCH,
            text_at: tuple[int, ...] = ()) -> Iterator[list[Sequence[Any]]]:
    """``rows`` in lists of at most ``limit`` rows, a list ending early once the texts at ``text_at``
    (stored content, meta) reach :data:`OPEN_BYTES` characters: a read that streams large contents
    holds about a megabyte of them at once, whatever the store holds (``test_json_streamed``)."""
    part: list[Sequence[Any]] = []
    size = 0
    for r in rows:
        part.append(r)
        size += sum(len(r[k] or "") for k in text_at)
        if len(part) >= limit or size >= OPEN_BYTES:
            yield part
            part, size = [], 0
    if part:
        yield part


class Sealing(StoreCore):
    """The store's vault: sealing on write, opening on read, keyed digests."""

    def __init__(self, path: str = ":memory:", conn: PgConnection | None = None, migrate: bool = False) -> None:
        super().__init__(path, conn, migrate)
        self._vault: Vault | None = None
        try:
            self._store_id = self._ensure_store_id()
        except BaseException:
            self.conn.close()
            raise
        self.sealed = bool(self.conn.execute(self.q.store_sealed).fetchone()[0])

    def _ensure_store_id(self) -> str:
        """The store's id from ``store_keys``. A store without the row (new, or just migrated) gets an id
        and a new key store first (opened now), then the row; an existing store's key store is opened
        when first needed (:attr:`vault`), so commands that read no content (``audit --check``) need no key."""
        row = self.conn.execute(self.q.store_id).fetchone()
        if row is not None:
            return str(row[0])
        # under the store's write lock (no checkpoint: not a change of the store's content): of processes
        # opening a new store at once, one makes the id and its key store, the others read that id
        self.driver.begin_write()
        try:
            row = self.conn.execute(self.q.store_id).fetchone()
            store_id = secrets.token_hex(16) if row is None else str(row[0])
            if row is None:
                self._vault = Vault(open_keys(self.url, self._schema(), store_id, create=True))
                empty = self.conn.execute(self.q.version_count).fetchone()[0] == 0
                self.driver.write(self.q.insert_store_keys, (store_id, int(empty)))
        except BaseException:
            self.driver.rollback()
            raise
        self.driver.commit()
        return store_id

    def _schema(self) -> str | None:
        return self.driver.schema

    def close(self) -> None:
        super().close()
        if self._vault is not None:
            self._vault.close()

    @property
    def vault(self) -> Vault:
        """The store's encryption at rest (memsteward.shred.vault): its key store, opened on first use
        (a wrong master key, a missing key file, an unreachable key store: KeyStoreError, exit 2)."""
        if self._vault is None:
            self._vault = Vault(open_keys(self.url, self._schema(), self._store_id, create=False))
        return self._vault

    @vault.setter
    def vault(self, value: Vault) -> None:
        self._vault = value

    @property
    def _keyed(self) -> Callable[[str], int] | None:
        """The lineage index's trigram hash: keyed under the index key once the store is sealed."""
        return self.vault.shingle_hash if self.sealed else None

    def collect_pool_keys(self) -> int:
        """Destroy the orphaned pooled keys, and return how many: keys taken into a pool that no version
        names (erased versions included) and whose holder process has ended (a crash, or a refused
        write's key left by a process that has exited; :mod:`memsteward.shred.holders`). The versions are
        read under the store's write lock, so a write that had sealed under one of them has committed
        (and names it) or never will (its process is gone). A live process's pool, this process's
        keys, another host's and keys made before holder tags are kept. ``recover`` runs it."""
        candidates = self.vault.orphan_candidates()
        if not candidates:
            return 0
        with self.transaction():
            named = {str(r[0]) for r in self.conn.execute(self.q.named_deks, (json.dumps(candidates),))}
            orphans = [(k, 0) for k in candidates if k not in named]
            return self.vault.destroy(orphans) if orphans else 0

    def keys_alive(self, refs: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
        """The (id, version) of ``refs`` whose data key is still in the key store (checked now, live)."""
        keys = self.key_refs(refs)
        alive = self.vault.alive(set(keys.values()))
        return sorted(r for r, k in keys.items() if k in alive)

    def key_refs(self, refs: Iterable[tuple[str, int]]) -> dict[tuple[str, int], tuple[str, int]]:
        """(id, version) → the key store ref of its DEK (:func:`memsteward.shred.vault.key_ref`): the
        pooled key its row names (``versions.dek``, kept when the version is erased), else its own."""
        wanted = {(str(i), int(v)) for i, v in refs}
        ids = sorted({i for i, _ in wanted})
        deks: dict[tuple[str, int], str] = {}
        for start in range(0, len(ids), 500):
            deks.update(((i, int(v)), d) for i, v, d in
                        self.conn.execute(self.q.version_deks, (json.dumps(ids[start:start + 500]),)))
        return {r: key_ref(r[0], r[1], deks.get(r)) for r in wanted}

    def _opened(self, rows: Iterable[Sequence[Any]], shredded_as_erased: bool = False) -> Iterator[Artifact]:
        """Rows (id, kind, arch, version, state, content, meta) as artifacts, their sealed fields opened
        (:meth:`memsteward.shred.vault.Vault.open`, one key-store lookup per :func:`batches` list)."""
        for part in batches(rows, text_at=(5, 6)):
            opened = self.vault.open([(r[0], r[3], r[5], r[6]) for r in part], shredded_as_erased)
            for (i, k, ar, ver, st, _, _), (c, m) in zip(part, opened, strict=True):
                yield Artifact(i, k, ar, ver, _load(c), _load(m), st)

    def _open_content(self, rows: Iterable[Sequence[Any]]) -> list[Any]:
        """The contents of (id, version, stored content) rows, opened and parsed."""
        return [_load(c) for c, _ in self.vault.open([(r[0], int(r[1]), r[2], "{}") for r in rows])]

    def _digest_text(self, canonical: str) -> str:
        """A content's digest for tombstones, version rows and audit rows: keyed (HMAC-SHA256 under the
        index key, memsteward.shred.digests) in a sealed store, plain SHA-256 in one not yet migrated."""
        return self.vault.digest(canonical) if self.sealed else hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def _tomb_digests(self, digests: set[str], plain: bool = True) -> set[str]:
        """Normalised-text digests (memsteward.textnorm) as a sealed store keeps them: HMAC-SHA256 of each
        under the index key (so a phrase's digest needs the key), plus, with ``plain``, the digests as they
        are (what a tombstone written before the store was sealed holds)."""
        if not self.sealed:
            return set(digests)
        keyed = {self.vault.digest(d) for d in digests}
        return keyed | set(digests) if plain else keyed

    def digest_of(self, value: Any) -> str:
        """The digest this store keeps of a content (tombstones, erase rows): :meth:`_digest_text` of its
        canonical JSON."""
        return self._digest_text(canonical_json(value))
