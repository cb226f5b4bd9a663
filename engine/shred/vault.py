"""A store's encryption at rest: version fields sealed under per-version DEKs, keyed content digests.

Every version (artifact id, version) gets its own DEK from the store's :class:`~.api.KeyStore`; its
``content`` and ``meta`` texts (the stored JSON) are sealed with AES-256-GCM bound to (store id,
artifact id, version, field) (:mod:`.envelope`). Reads open them in batches (one key-store lookup per
batch). A stored text without the ``ms1:`` prefix is plaintext from before ``store migrate --encrypt``
and reads as it is; a sealed text whose DEK is gone raises :class:`Shredded` — ciphertext is never
served as content.

Erasure is :meth:`Vault.destroy`: the DEKs of the erased versions leave the key store, and every
copy of their ciphertext, wherever it is, stays ciphertext.

The write path seals with *pooled* keys (:meth:`Vault.seal_pooled`): DEKs made ahead in batches, one
durable key-store commit per batch, under random key ids (ref ``(key id, 0)``: no artifact version is
0) that only this handle knows, so a key is reserved to exactly one handle; a forked child drops the
pool it inherited. The sealed text names its key (``ms1:@<key id>:``) and the store records the
assignment in the version's row (``versions.dek``) in the write's own transaction, so a write waits
for one durable commit, its own (a refill's key commit, when the pool runs short, runs on its own thread
while the write's transaction checks, and is waited for before its COMMIT). A reserved key that sealed nothing stored (a crash, a refused write,
the pool left at exit) encrypted nothing: it is harmless, and :meth:`Vault.close` destroys the rest of
the pool; a key id names its holder process, so one left by a process that has ended is collected
later (:mod:`.holders`, ``collect_pool_keys``). Erasure destroys a version's key by its ref (:func:`key_ref`).
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from functools import partial

from ..errors import InputError
from .api import KeyStore, VersionRef
from .digests import content_mac, shingle_hasher, shingle_key
from .envelope import PREFIX, Undecryptable, associated, key_tag, open_text, seal_rows
from .holders import holder_gone, holder_tag

Row = tuple[str, int, str | None, str]
"""(artifact id, version, content text or None, meta text) as a ``versions`` row stores them."""

POOL_FIRST, POOL_MAX = 8, 256  # pooled keys made by the first refill; a refill doubles up to the max


def key_ref(ident: str, version: int, dek: str | None) -> VersionRef:
    """The key store ref of a version's DEK: its pooled key's ``(key id, 0)``, else ``(id, version)``."""
    return (dek, 0) if dek else (ident, int(version))


def row_key_ref(row: Row) -> VersionRef:
    """:func:`key_ref` of a stored row, from the key id its sealed text names."""
    i, v, c, m = row
    return key_ref(i, v, key_tag(m) or key_tag(c))


class Shredded(InputError):
    """A sealed version whose DEK is destroyed (or that does not authenticate) was asked for its text."""


class _Commit:
    """A key store's durable commit running on its own thread (the key store's connection serialises
    it with the caller's own calls); :meth:`wait` joins it and raises what it raised."""

    def __init__(self, run: Callable[[], None]) -> None:
        self._run = run
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="memsteward-key-commit", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiter
            self._error = exc

    def wait(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


class Vault:
    """Seals and opens one store's version fields; owns its key store handle."""

    def __init__(self, keys: KeyStore) -> None:
        self.keys = keys
        self.store_id = keys.store_id
        self._index = keys.index_key()
        self._shingle_hash = shingle_hasher(shingle_key(self._index))
        # reserved keys (key id, DEK, their key store commit: None when durable already), not yet used
        self._pool: list[tuple[str, bytes, _Commit | None]] = []
        self._pool_pid = os.getpid()
        self._pool_next = POOL_FIRST
        self._pool_lock = threading.Lock()

    # ------------------------------------------------------------------ digests

    def digest(self, canonical: str) -> str:
        """The keyed content digest (tombstones, erase rows): HMAC-SHA256 under the index key."""
        return content_mac(self._index, canonical)

    def shingle_hash(self, text: str) -> int:
        return self._shingle_hash(text)

    # ------------------------------------------------------------------ sealing

    def seal(self, rows: Sequence[Row]) -> list[Row]:
        """The rows with content and meta sealed; one new DEK per (id, version), created first (durable)."""
        if not rows:
            return []
        return seal_rows(self.store_id, rows, self.keys.create([(i, v) for i, v, _, _ in rows]))

    def seal_pooled(self, rows: Sequence[Row]) -> list[Row]:
        """The rows sealed under pooled keys, each naming its key (``ms1:@<key id>:``; the store records
        it as the version's ``dek``). The keys are durable when it returns: nothing to wait for before
        the commit. A refill of the pool is one durable commit for a batch of keys."""
        sealed, durable = self.seal_pooled_deferred(rows)
        durable()
        return sealed

    def seal_pooled_deferred(self, rows: Sequence[Row]) -> tuple[list[Row], Callable[[], None]]:
        """:meth:`seal_pooled`, where a refill's durable commit runs on its own thread (a key store with
        ``stage``): the rows sealed, and the wait for their keys to be durable, which raises if their
        commit failed. **Call it before any commit that names the keys** (the store's write commits
        the versions' ``dek``): a stored version whose key never became durable would be unreadable.
        The key store's commit then overlaps the caller's own work (the write's checks)."""
        taken = self._take(len(rows), defer=True)
        refs = [(i, int(v)) for i, v, _, _ in rows]
        sealed = seal_rows(self.store_id, rows, {r: k for r, (_, k, _) in zip(refs, taken, strict=True)},
                           {r: t for r, (t, _, _) in zip(refs, taken, strict=True)})
        pending = list({id(c): c for _, _, c in taken if c is not None}.values())
        return sealed, partial(self._durable, pending)

    def _durable(self, pending: Sequence[_Commit]) -> None:
        """Wait for ``pending`` key commits; a failed one's keys leave the pool (they are not stored)."""
        for c in pending:
            try:
                c.wait()
            except BaseException:
                with self._pool_lock:
                    self._pool = [e for e in self._pool if e[2] is not c]
                raise

    def _take(self, n: int, defer: bool = False) -> list[tuple[str, bytes, _Commit | None]]:
        with self._pool_lock:
            if self._pool_pid != os.getpid():  # a forked child: the reserved keys stay its parent's
                self._pool, self._pool_pid = [], os.getpid()
            if len(self._pool) < n:
                holder = holder_tag()  # the key's id names its holder: an orphan is known by it (.holders)
                ids = [f"{holder}.{secrets.token_hex(12)}" for _ in range(max(n - len(self._pool), self._pool_next))]
                self._pool_next = min(2 * self._pool_next, POOL_MAX)
                stage = getattr(self.keys, "stage", None) if defer else None
                commit: _Commit | None = None
                if stage is not None:
                    made, run = stage([(k, 0) for k in ids])  # one durable commit for the batch, on its thread
                    commit = _Commit(run)
                else:
                    made = self.keys.create([(k, 0) for k in ids])  # one durable commit for the batch
                self._pool += [(k, made[(k, 0)], commit) for k in ids]
            taken, self._pool = self._pool[:n], self._pool[n:]
        return taken

    def open(self, rows: Iterable[Row], shredded_as_erased: bool = False) -> list[tuple[str | None, str]]:
        """(content text, meta text) of each row, opened; plaintext rows as they are. A sealed row whose
        DEK is destroyed raises :class:`Shredded`, or with ``shredded_as_erased`` reads as an erased
        version does (no content, empty meta): between the key destruction and the commit of a
        publication killed in between, ``recover`` reads the cascade it is about to erase."""
        rows = [(i, int(v), c, m) for i, v, c, m in rows]
        refs = [row_key_ref(r) if r[3].startswith(PREFIX) or (r[2] is not None and r[2].startswith(PREFIX)) else None
                for r in rows]
        wanted = {ref for ref in refs if ref is not None}
        deks = self.keys.get(wanted) if wanted else {}
        if shredded_as_erased:
            rows = [(i, v, None, "{}") if ref is not None and ref not in deks else (i, v, c, m)
                    for (i, v, c, m), ref in zip(rows, refs, strict=True)]
        out = []
        for (i, v, c, m), ref in zip(rows, refs, strict=True):
            dek = None if ref is None else deks.get(ref)
            out.append((self._open(dek, i, v, "content", c), self._open(dek, i, v, "meta", m) or "{}"))
        return out

    def _open(self, dek: bytes | None, ident: str, version: int, part: str, text: str | None) -> str | None:
        if text is None or not text.startswith(PREFIX):
            return text
        if dek is None:
            raise Shredded(f"{ident!r} v{version}: its data key is destroyed (erased content is not readable)",
                           file=self.store_id, field=part)
        try:
            return open_text(dek, text, associated(self.store_id, ident, version, part))
        except Undecryptable:
            raise Shredded(f"{ident!r} v{version}: the {part} does not authenticate under its key (moved or "
                           "altered ciphertext)", file=self.store_id, field=part) from None

    def decryptable(self, rows: Iterable[Row]) -> list[VersionRef]:
        """The sealed rows that still open under the current key store (an erased one must not)."""
        rows = [r for r in rows if r[2] is not None and r[2].startswith(PREFIX) or r[3].startswith(PREFIX)]
        deks = self.keys.get({row_key_ref(r) for r in rows})
        out = []
        for i, v, c, m in rows:
            dek = deks.get(row_key_ref((i, v, c, m)))
            if dek is None:
                continue
            text, part = (c, "content") if c is not None and c.startswith(PREFIX) else (m, "meta")
            try:
                open_text(dek, text, associated(self.store_id, i, int(v), part))
            except Undecryptable:
                continue
            out.append((i, int(v)))
        return sorted(out)

    # ------------------------------------------------------------------ erasure

    def destroy(self, refs: Collection[VersionRef]) -> int:
        """Destroy the DEKs of key refs (:func:`key_ref`)."""
        return self.keys.destroy(refs)

    def orphan_candidates(self) -> list[str]:
        """Pooled key ids whose holder process is gone (:mod:`.holders`), whether or not a version names
        one (the caller checks that under the store's write lock); [] when the key store cannot list
        its keys (``pooled_ids``: a KMS adapter need not)."""
        listed = getattr(self.keys, "pooled_ids", None)
        return [k for k in (listed() if listed is not None else []) if holder_gone(k)]

    def alive(self, refs: Collection[VersionRef]) -> set[VersionRef]:
        """The key refs (:func:`key_ref`) whose DEK still exists."""
        return set(self.keys.get(refs))

    def close(self) -> None:
        """Destroy this handle's unused pooled keys (they sealed nothing), then close the key store."""
        with self._pool_lock:
            mine = self._pool if self._pool_pid == os.getpid() else []
            self._pool = []
        left = [(k, 0) for k, _, _ in mine]
        try:
            for c in {id(c): c for _, _, c in mine if c is not None}.values():
                c.wait()  # a commit still running would store the keys after their destruction
            if left:
                self.keys.destroy(left)
        except Exception:  # noqa: BLE001 - best effort: a reserved key that sealed nothing protects nothing
            pass
        finally:
            self.keys.close()


__all__ = ["Row", "Shredded", "Vault", "key_ref", "row_key_ref"]
