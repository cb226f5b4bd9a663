"""The SQL store: one class over SQLite and PostgreSQL, assembled from one mixin per concept.

Artifacts keep every version (``versions``), a visibility state (servable, withdrawn, staged,
republished, erased), influence/semantic ``edges``, ``events`` with their plan, ``plan_steps``
and an append-only ``audit`` log (UPDATE/DELETE on it abort). The parts, each in its own module:

* :mod:`.core` — connection, write transactions, read snapshots;
* :mod:`.audit` — the hash-chained audit writer and its readers;
* :mod:`.reads` / :mod:`.planning` — the guard and reads; provenance reads and the lineage index;
* :mod:`.writepath` — the agent's writes with fencing;
* :mod:`.repairlog` / :mod:`.leases` — an event's transitions; one writer per event;
* :mod:`.sealing` — encryption at rest: the store id, its key store, sealed rows, keyed digests;
* :mod:`.erasure` — erased versions (crypto-shredding) and the physical-erasure step;
* :mod:`.encryption` / :mod:`.deep_audit` — ``store migrate --encrypt``, ``rotate-key``, ``audit --deep``;
* :mod:`.transfer` — import, export and copy.

Each part builds on the one before it (core → sealing → audit → reads → planning → leases → erasure →
transfer → repairlog → writepath), so every module calls only what is below it. It implements
every protocol of :mod:`.api` (:class:`~memsteward.store.api.Storage`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .writepath import Writes

if TYPE_CHECKING:
    from ..shred.master import MasterKey

__all__ = ["SqlStore", "Store"]


class SqlStore(Writes):
    """A memsteward store in one SQLite database (a file path, or ``:memory:``), or, given a
    :class:`~memsteward.store.postgres.PgConnection`, in one PostgreSQL schema.

    Examples
    --------
    >>> s = SqlStore()
    >>> _ = s.record({"id": "a", "kind": "record", "content": "x"})
    >>> s.servable(["b", "a"])
    ['a']
    """

    def capabilities(self) -> frozenset[str]:
        """Optional capabilities (:data:`~memsteward.store.api.OPTIONAL`): the lineage index and copy on
        every backend; key destruction once the store is sealed at rest (a store not yet through
        ``store migrate --encrypt`` holds plaintext that destroying keys cannot reach)."""
        return frozenset({"lineage-index", "copy"} | ({"key-destruction"} if self.sealed else set()))

    def deep_audit(self, backups: Sequence[str] = (), texts: Sequence[str] = ()) -> dict[str, Any]:
        """``memsteward audit --deep``: :func:`memsteward.store.deep_audit.deep_audit`."""
        from .deep_audit import deep_audit

        return deep_audit(self, backups, texts)

    def encrypt_in_place(self, batch: int = 2000,
                         progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """``memsteward store migrate --encrypt``: :func:`memsteward.store.encryption.encrypt_in_place`."""
        from .encryption import encrypt_in_place

        return encrypt_in_place(self, batch, progress)

    def rotate_key(self, new: MasterKey) -> dict[str, Any]:
        """``memsteward store rotate-key``: :func:`memsteward.store.encryption.rotate_key`."""
        from .encryption import rotate_key

        return rotate_key(self, new)

    @staticmethod
    def open(path: str, create: bool = False, migrate: bool = False) -> SqlStore:
        """:func:`memsteward.store.opening.open_store` (a path or URL: see there)."""
        from .opening import open_store

        return open_store(path, create=create, migrate=migrate)


Store = SqlStore  # its name before the package split (``memsteward.Store``)
