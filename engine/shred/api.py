"""The key store protocol: where the data keys (DEKs) of a store's versions live, apart from the data.

A DEK is 32 random bytes, one per artifact version (:data:`VersionRef` = (artifact id, version)).
The key store keeps each DEK *wrapped* (AES-256-GCM under the master key, :mod:`.envelope`) and hands
it out unwrapped. Destroying a version's DEK is its erasure: every copy of its ciphertext — in the
database, its WAL, a replica, a backup — becomes undecryptable at once, so erasure costs what the
cascade costs, not what the store holds (crypto-shredding).

Contract (every implementation):

* ``create(refs)`` makes and stores a fresh DEK per ref (an existing ref keeps its DEK) and returns
  them; the new keys are durable when it returns.
* ``get(refs)`` returns the DEKs that exist; a destroyed or never-created ref is simply absent.
* ``destroy(refs)`` removes the refs' DEKs so that no file of the key store still holds them
  (returns how many existed); destroying an absent ref is a no-op (idempotent: ``recover`` repeats it).
* ``rotate(new)`` rewraps every DEK and the index key under a new master key, without touching data.
* ``index_key()`` is the store's key for its content digests (:mod:`.digests`).

The write path does not call ``create`` per write: a store's :class:`~.vault.Vault` keeps a pool of
keys made ahead with one ``create`` per batch, under random refs ``(key id, 0)`` only it knows, and
a version's row names the pooled key it was sealed under (:mod:`.vault`). An implementation needs
nothing for it: a pooled key is a ref like any other.

A cloud KMS or Vault transit adapter implements the same five methods: ``create`` asks the KMS to
generate a data key (or wraps a local one with ``encrypt``), keeps the *wrapped* key in any table,
``get`` unwraps through the KMS's ``decrypt``, ``destroy`` deletes the wrapped row, ``rotate`` is the
KMS's own key rotation plus a rewrap (Vault: ``transit/rewrap``). See docs/erasure.md.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol, runtime_checkable

from ..errors import InputError
from .master import MasterKey

VersionRef = tuple[str, int]
"""(artifact id, version): the unit a DEK encrypts."""

KEYFILE_FORMAT = 2
"""The key store's format version (1 was the plaintext store, which had none). A key store of a
newer format is refused with a message naming it; a store that needs one is refused by releases
that predate key stores (its schema version is newer than theirs)."""


class KeyStoreError(InputError):
    """A key store that cannot be used: wrong master key, missing or unreadable key file, an
    unreachable key database, a newer format. Exit 2, and nothing was changed."""


@runtime_checkable
class KeyStore(Protocol):
    """Where the DEKs of one store live (see the module docstring for the contract)."""

    store_id: str

    def create(self, refs: Collection[VersionRef]) -> dict[VersionRef, bytes]: ...

    def get(self, refs: Collection[VersionRef]) -> dict[VersionRef, bytes]: ...

    def destroy(self, refs: Collection[VersionRef]) -> int: ...

    def rotate(self, new: MasterKey) -> int: ...

    def index_key(self) -> bytes: ...

    def close(self) -> None: ...
