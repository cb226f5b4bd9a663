"""A store's encryption at rest: version fields sealed under per-version DEKs, keyed content digests.

Every version (artifact id, version) gets its own DEK from the store's :class:`~.api.KeyStore`; its
``content`` and ``meta`` texts (the stored JSON) are sealed with AES-256-GCM bound to (store id,
artifact id, version, field) (:mod:`.envelope`). Reads open them in batches (one key-store lookup per
batch). A stored text without the ``ms1:`` prefix is plaintext from before ``store migrate --encrypt``
and reads as it is; a sealed text whose DEK is gone raises :class:`Shredded` — ciphertext is never
served as content.

Erasure is :meth:`Vault.destroy`: the DEKs of the erased versions leave the key store, and every
copy of their ciphertext, wherever it is, stays ciphertext.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Future

from ..errors import InputError
from .api import KeyStore, VersionRef
from .digests import content_mac, keyed_shingle_hash, shingle_key
from .envelope import PREFIX, Undecryptable, associated, open_text, seal_rows

Row = tuple[str, int, str | None, str]
"""(artifact id, version, content text or None, meta text) as a ``versions`` row stores them."""


class Shredded(InputError):
    """A sealed version whose DEK is destroyed (or that does not authenticate) was asked for its text."""


class Vault:
    """Seals and opens one store's version fields; owns its key store handle."""

    def __init__(self, keys: KeyStore) -> None:
        self.keys = keys
        self.store_id = keys.store_id
        self._index = keys.index_key()
        self._shingles = shingle_key(self._index)

    # ------------------------------------------------------------------ digests

    def digest(self, canonical: str) -> str:
        """The keyed content digest (tombstones, erase rows): HMAC-SHA256 under the index key."""
        return content_mac(self._index, canonical)

    def shingle_hash(self, text: str) -> int:
        return keyed_shingle_hash(self._shingles, text)

    # ------------------------------------------------------------------ sealing

    def seal(self, rows: Sequence[Row]) -> list[Row]:
        """The rows with content and meta sealed; one new DEK per (id, version), created first (durable)."""
        if not rows:
            return []
        return seal_rows(self.store_id, rows, self.keys.create([(i, v) for i, v, _, _ in rows]))

    def seal_deferred(self, rows: Sequence[Row]) -> tuple[list[Row], Callable[[], None] | None]:
        """The rows sealed under fresh DEKs whose commit to the key store may still be running, and the
        wait for it (None: the keys are already durable, as :meth:`seal` made them). The caller must call
        the wait, and see it return, before it commits anything these rows sealed: a committed version
        always has its key. The wait raises :class:`~.api.KeyRace` when the keys could not be committed
        because another writer made a key of one of the refs (seal again with :meth:`seal`)."""
        if not rows:
            return [], None
        deferred = getattr(self.keys, "create_deferred", None)
        made: tuple[dict[VersionRef, bytes], Future[None]] | None = \
            deferred([(i, v) for i, v, _, _ in rows]) if deferred is not None else None
        if made is None:
            return self.seal(rows), None
        deks, future = made
        return seal_rows(self.store_id, rows, deks), future.result

    def open(self, rows: Iterable[Row], shredded_as_erased: bool = False) -> list[tuple[str | None, str]]:
        """(content text, meta text) of each row, opened; plaintext rows as they are. A sealed row whose
        DEK is destroyed raises :class:`Shredded`, or with ``shredded_as_erased`` reads as an erased
        version does (no content, empty meta): between the key destruction and the commit of a
        publication killed in between, ``recover`` reads the cascade it is about to erase."""
        rows = list(rows)
        sealed = {(i, int(v)) for i, v, c, m in rows if m.startswith(PREFIX) or (c is not None and c.startswith(PREFIX))}
        deks = self.keys.get(sealed) if sealed else {}
        if shredded_as_erased:
            rows = [(i, v, None, "{}") if (i, int(v)) in sealed and (i, int(v)) not in deks else (i, v, c, m)
                    for i, v, c, m in rows]
        return [(self._open(deks, i, int(v), "content", c), self._open(deks, i, int(v), "meta", m) or "{}")
                for i, v, c, m in rows]

    def _open(self, deks: dict[VersionRef, bytes], ident: str, version: int, part: str, text: str | None) -> str | None:
        if text is None or not text.startswith(PREFIX):
            return text
        dek = deks.get((ident, version))
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
        deks = self.keys.get({(i, int(v)) for i, v, _, _ in rows})
        out = []
        for i, v, c, m in rows:
            dek = deks.get((i, int(v)))
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
        return self.keys.destroy(refs)

    def alive(self, refs: Collection[VersionRef]) -> set[VersionRef]:
        """The refs whose DEK still exists."""
        return set(self.keys.get(refs))

    def close(self) -> None:
        self.keys.close()


__all__ = ["Row", "Shredded", "Vault"]
