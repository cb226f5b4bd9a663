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
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "ms1:"
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


def seal_pair(key: bytes, ident: str, version: int, store_id: str, content: str | None,
              meta: str) -> tuple[str | None, str]:
    """A version's content (None stays None) and meta sealed under its DEK with one cipher object."""
    aead = AESGCM(key)

    def one(text: str, part: str) -> str:
        nonce = secrets.token_bytes(NONCE)
        blob = nonce + aead.encrypt(nonce, text.encode("utf-8"), associated(store_id, ident, version, part))
        return PREFIX + base64.b64encode(blob).decode("ascii")

    return (None if content is None else one(content, "content")), one(meta, "meta")


def seal_text(key: bytes, text: str, aad: bytes) -> str:
    """``ms1:`` + base64 of the sealed UTF-8 text (what a TEXT column stores)."""
    return PREFIX + base64.b64encode(seal_bytes(key, text.encode("utf-8"), aad)).decode("ascii")


def is_sealed(stored: str | None) -> bool:
    return stored is not None and stored.startswith(PREFIX)


def open_text(key: bytes, stored: str, aad: bytes) -> str:
    if not is_sealed(stored):
        raise Undecryptable("not a sealed value")
    return open_bytes(key, base64.b64decode(stored[len(PREFIX):]), aad).decode("utf-8")


class Wrapper:
    """Wraps and unwraps a store's DEKs (and its index key) under one master key.

    A wrapped DEK is nonce ‖ ciphertext ‖ tag (60 bytes) with associated data
    ``dek`` ‖ store id ‖ artifact id ‖ version; the index key's is ``index`` ‖ store id."""

    def __init__(self, master: bytes, store_id: str) -> None:
        self._aead = AESGCM(master)
        self.store_id = store_id

    def _aad(self, artifact_id: str, version: int) -> bytes:
        return b"dek|" + associated(self.store_id, artifact_id, version, "dek")

    def wrap(self, artifact_id: str, version: int, dek: bytes) -> bytes:
        nonce = secrets.token_bytes(NONCE)
        return nonce + self._aead.encrypt(nonce, dek, self._aad(artifact_id, version))

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
