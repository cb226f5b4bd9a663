"""AES-256-GCM envelopes (the ``cryptography`` package's AESGCM; no hand-written crypto).

A sealed value is ``ms1:`` + base64(nonce ‖ ciphertext ‖ tag), with a fresh random 96-bit nonce per
seal (a DEK seals a handful of fields once, far below GCM's 2^32 random-nonce bound). The associated
data binds it to (store id, artifact id, version, field): a ciphertext copied to another row, another
field or another store fails authentication instead of decrypting. The prefix is not JSON, so stored
JSON text and a sealed value are never confused, and a reader that meets one it cannot open raises
rather than serving ciphertext as content.

Wrapping a DEK under the master key is the same seal with its own associated data
(``dek`` ‖ store id ‖ artifact id ‖ version), so a wrapped key moved to another ref fails too.
"""

from __future__ import annotations

import base64
import os
import secrets
from collections.abc import Collection, Mapping, Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "ms1:"
TAGGED = PREFIX + "@"  # a sealed text under a pooled key: ``ms1:@<key id>:`` + base64 (base64 has no ``@``)
NONCE = 12
DEK_BYTES = 32


class Undecryptable(Exception):
    """Authentication failed: wrong key, or the ciphertext was moved, altered or its key destroyed."""


def new_dek() -> bytes:
    return secrets.token_bytes(DEK_BYTES)


def associated(store_id: str, artifact_id: str, version: int, part: str) -> bytes:
    """The associated data of a field of a version: ``len:store id|len:artifact id|version|field``
    (length-prefixed, so no two tuples give the same bytes)."""
    s, a = store_id.encode("utf-8"), artifact_id.encode("utf-8")
    return b"%d:%s|%d:%s|%d|%s" % (len(s), s, len(a), a, int(version), part.encode("ascii"))


def seal_bytes(key: bytes, plaintext: bytes, aad: bytes) -> bytes:
    nonce = secrets.token_bytes(NONCE)
    return nonce + AESGCM(key).encrypt(nonce, plaintext, aad)


def open_bytes(key: bytes, blob: bytes, aad: bytes) -> bytes:
    if len(blob) < NONCE + 16:
        raise Undecryptable("ciphertext too short")
    try:
        return AESGCM(key).decrypt(blob[:NONCE], blob[NONCE:], aad)
    except InvalidTag:
        raise Undecryptable("authentication failed") from None


def key_tag(stored: str | None) -> str | None:
    """The pooled key id a sealed text names (``ms1:@<id>:…``), or None: the key of its own version."""
    if stored is None or not stored.startswith(TAGGED):
        return None
    end = stored.find(":", len(TAGGED))
    return stored[len(TAGGED):end] if end > 0 else None


def seal_rows(store_id: str, rows: Sequence[tuple[str, int, str | None, str]],
              deks: Mapping[tuple[str, int], bytes],
              tags: Mapping[tuple[str, int], str] | None = None) -> list[tuple[str, int, str | None, str]]:
    """(id, version, content, meta) rows with content (None stays None) and meta sealed under each
    version's DEK, as :func:`seal_text` with :func:`associated` would seal them one by one: one cipher
    object per row and the batch's nonces from one ``os.urandom`` call (a system call per nonce was a
    third of the sealing time). ``tags``: the pooled key id of a version whose DEK is a pooled key
    (:meth:`memsteward.shred.vault.Vault.seal_pooled`), written after the prefix (``ms1:@<id>:``) so
    a reader finds the key without another column."""
    s = store_id.encode("utf-8")
    head = b"%d:%s|" % (len(s), s)
    nonces = os.urandom(2 * NONCE * len(rows))
    b64, out = base64.b64encode, []
    for k, (ident, version, content, meta) in enumerate(rows):
        aead = AESGCM(deks[(ident, version)])
        a = ident.encode("utf-8")
        base = head + b"%d:%s|%d|" % (len(a), a, int(version))
        n1, n2 = nonces[2 * NONCE * k:2 * NONCE * k + NONCE], nonces[2 * NONCE * k + NONCE:2 * NONCE * (k + 1)]
        tag = PREFIX if tags is None or (ident, version) not in tags else f"{TAGGED}{tags[(ident, version)]}:"
        sealed_meta = tag + b64(n2 + aead.encrypt(n2, meta.encode("utf-8"), base + b"meta")).decode("ascii")
        sealed = None if content is None else \
            tag + b64(n1 + aead.encrypt(n1, content.encode("utf-8"), base + b"content")).decode("ascii")
        out.append((ident, version, sealed, sealed_meta))
    return out


def seal_text(key: bytes, text: str, aad: bytes) -> str:
    """``ms1:`` + base64 of the sealed UTF-8 text (what a TEXT column stores)."""
    return PREFIX + base64.b64encode(seal_bytes(key, text.encode("utf-8"), aad)).decode("ascii")


def is_sealed(stored: str | None) -> bool:
    return stored is not None and stored.startswith(PREFIX)


def open_text(key: bytes, stored: str, aad: bytes) -> str:
    if not is_sealed(stored):
        raise Undecryptable("not a sealed value")
    body = stored[stored.index(":", len(TAGGED)) + 1:] if stored.startswith(TAGGED) else stored[len(PREFIX):]
    return open_bytes(key, base64.b64decode(body), aad).decode("utf-8")


class Wrapper:
    """Wraps and unwraps a store's DEKs (and its index key) under one master key.

    A wrapped DEK is nonce ‖ ciphertext ‖ tag (60 bytes) with associated data
    ``dek`` ‖ store id ‖ artifact id ‖ version; the index key's is ``index`` ‖ store id."""

    def __init__(self, master: bytes, store_id: str) -> None:
        self._aead = AESGCM(master)
        self.store_id = store_id

    def _aad(self, artifact_id: str, version: int) -> bytes:
        return b"dek|" + associated(self.store_id, artifact_id, version, "dek")

    def wrap(self, artifact_id: str, version: int, dek: bytes, nonce: bytes | None = None) -> bytes:
        nonce = secrets.token_bytes(NONCE) if nonce is None else nonce
        return nonce + self._aead.encrypt(nonce, dek, self._aad(artifact_id, version))

    def fresh(self, refs: Collection[tuple[str, int]]) -> tuple[dict[tuple[str, int], bytes],
                                                              list[tuple[str, int, bytes]]]:
        """A new DEK per ref and the (id, version, wrapped DEK) rows a key store keeps: the keys and the
        wrapping nonces from one ``os.urandom`` call for the batch."""
        ordered = list(dict.fromkeys((str(i), int(v)) for i, v in refs))
        step = DEK_BYTES + NONCE
        rnd = os.urandom(step * len(ordered))
        deks = {ref: rnd[step * k:step * k + DEK_BYTES] for k, ref in enumerate(ordered)}
        rows = [(i, v, self.wrap(i, v, deks[(i, v)], rnd[step * k + DEK_BYTES:step * (k + 1)]))
                for k, (i, v) in enumerate(ordered)]
        return deks, rows

    def unwrap(self, artifact_id: str, version: int, blob: bytes) -> bytes:
        try:
            return self._aead.decrypt(blob[:NONCE], blob[NONCE:], self._aad(artifact_id, version))
        except InvalidTag:
            raise Undecryptable(f"the DEK of {artifact_id!r} v{version} does not unwrap") from None

    def wrap_index(self, key: bytes) -> bytes:
        nonce = secrets.token_bytes(NONCE)
        return nonce + self._aead.encrypt(nonce, key, b"index|" + self.store_id.encode("utf-8"))

    def unwrap_index(self, blob: bytes) -> bytes:
        try:
            return self._aead.decrypt(blob[:NONCE], blob[NONCE:], b"index|" + self.store_id.encode("utf-8"))
        except InvalidTag:
            raise Undecryptable("the index key does not unwrap") from None
