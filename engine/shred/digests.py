"""Keyed digests of content: what the tombstones and the lineage index hold instead of plain hashes.

An unkeyed SHA-256 of a short memory ("The user is allergic to peanuts.") is found again by hashing
candidate phrases; under a per-store secret key (the key store's index key) that dictionary attack
needs the key. Tombstones use HMAC-SHA256 (one per erased content); the lineage index's trigram
hashes use keyed BLAKE2b (RFC 7693 keyed mode, a MAC in its own right, in hashlib), 64 bits signed
as the index column holds, because an index write hashes every trigram of every content and keyed
BLAKE2b costs one call per trigram where HMAC costs three.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable


def content_mac(index_key: bytes, canonical: str) -> str:
    """HMAC-SHA256(index key, canonical JSON of a content), hex: the tombstone digest."""
    return hmac.digest(index_key, canonical.encode("utf-8"), "sha256").hex()  # one C call (hmac.new: pure Python)


def shingle_key(index_key: bytes) -> bytes:
    """The lineage index's BLAKE2b key, derived from the index key (domain-separated from tombstones)."""
    return hmac.new(index_key, b"memsteward-shingles", hashlib.sha256).digest()


def keyed_shingle_hash(key: bytes, text: str) -> int:
    """Keyed BLAKE2b-64 of a trigram's text, as a signed 64-bit integer."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8, key=key).digest(), "big", signed=True)


def shingle_hasher(key: bytes) -> Callable[[str], int]:
    """:func:`keyed_shingle_hash` under ``key`` as a function of the text alone: the keyed state (the key
    block hashed) is made once and copied per call, half the time of keying each hash anew."""
    keyed = hashlib.blake2b(digest_size=8, key=key)

    def h(text: str) -> int:
        state = keyed.copy()
        state.update(text.encode("utf-8"))
        return int.from_bytes(state.digest(), "big", signed=True)
    return h
