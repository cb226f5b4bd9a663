"""A key store over another, changed only in memory: what ``--dry-run`` runs on.

Reads go to the base key store; keys created are kept here; a destroyed key is hidden here and stays
in the base. So a dry run of a delete, executed on an in-memory copy of the store, opens every sealed
version it needs and destroys nothing real.
"""

from __future__ import annotations

from collections.abc import Collection

from .api import KeyStore, KeyStoreError, VersionRef
from .envelope import new_dek
from .master import MasterKey


class OverlayKeyStore:
    """:class:`~.api.KeyStore` reading through ``base``, writing only to memory."""

    def __init__(self, base: KeyStore, owns: bool = False) -> None:
        self.base, self.owns = base, owns
        self.store_id = base.store_id
        self.path = "<overlay>"
        self._made: dict[VersionRef, bytes] = {}
        self._gone: set[VersionRef] = set()

    def create(self, refs: Collection[VersionRef]) -> dict[VersionRef, bytes]:
        for ref in refs:
            self._gone.discard(ref)
            self._made.setdefault(ref, new_dek())
        return {r: self._made[r] for r in refs}

    def get(self, refs: Collection[VersionRef]) -> dict[VersionRef, bytes]:
        wanted = {(str(i), int(v)) for i, v in refs} - self._gone
        out = {r: self._made[r] for r in wanted if r in self._made}
        out.update(self.base.get(wanted - set(out)))
        return out

    def destroy(self, refs: Collection[VersionRef]) -> int:
        alive = self.get(refs)
        self._gone.update(alive)
        return len(alive)

    def rotate(self, new: MasterKey) -> int:
        raise KeyStoreError("a dry run does not rotate keys")

    def index_key(self) -> bytes:
        return self.base.index_key()

    def close(self) -> None:
        """Closes the base only when it was opened for the overlay (``owns``)."""
        if self.owns:
            self.base.close()
