"""Erasure by crypto-shredding: erased versions' DEKs destroyed and their ciphertext nulled at publication.

At publication the targeted versions' data keys are destroyed in the key store and their content and
metadata nulled (id, version and the content's keyed digest stay; a ``tombstones`` row keeps a deleted
root's keyed digests, never its text). Whatever a file, WAL segment, replica or backup still holds of
them is ciphertext whose key is gone, so no VACUUM runs per delete. The step after publication checks
the keys are gone and records one chained ``physical-erasure`` audit row (counts only).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

from ..errors import EventHeld
from ..repair.auditchain import tombstone_commitment as commitment
from ..shred.envelope import key_tag
from ..shred.vault import key_ref
from ..textnorm import text_digests
from .api import ErasureReport
from .core import _dump, _load, _now
from .leases import Leases, _alive

__all__ = ["Erasing", "Erasure"]


class Erasing(NamedTuple):
    """A publication's erasure, made ready before its transaction (:meth:`Erasure._erasure_of`): the
    generation it was read at, the targeted ids, the erased (id, version) refs, the versions' UPDATE
    rows, the tombstone rows, each id's erased versions and the ``erase`` rows' details (a tombstoned
    root's is made in the transaction, with its tombstones' commitment) and the keys to destroy."""

    generation: int
    ids: list[str]
    refs: list[tuple[str, int]]
    updates: list[tuple[str, str, int]]
    stones: list[tuple[str, str, int]]
    erased: dict[str, list[dict[str, Any]]]
    details: dict[str, str]
    keys: list[tuple[str, int]]  # the DEKs' key store refs, destroyed by :meth:`Erasure._destroy_keys`


def _within(version: int, limit: int | None) -> bool:
    """Whether a version is among the targeted ones (``limit`` None: every version)."""
    return limit is None or version <= limit


class Erasure(Leases):
    """Nulling erased versions and the physical-erasure step."""

    def _erasure_of(self, event_id: int, targets: Mapping[str, int | None], tombstone: frozenset[str]) -> Erasing:
        """What erasing the targeted versions writes, read and made ready before the publication takes the
        store's write lock, and the DEKs to destroy (:meth:`_destroy_keys`, under that lock: a writer that
        read the roots between their keys' destruction and the publication's commit could open neither
        them nor their tombstones, and would let a copy of erased content in). Only the event writes versions of the ids its barrier holds (the write rule,
        :mod:`memsteward.store.live`), so the rows read here are the rows the publication erases;
        :meth:`_erase_versions` reads them again if anything but agent writes committed since
        (``Erasing.generation``). The erased contents' digests are stored with the versions: no erased
        content is decrypted but a tombstoned root's (its normalised digests, opened before its key goes)."""
        generation = self.generation()
        ids = sorted(targets)
        rows: list[tuple[str, int, str | None, str | None, str | None]] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            rows += self.conn.execute(self.q.erasable_versions, (json.dumps(chunk),)).fetchall()
        erased: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
        updates: list[tuple[str, str, int]] = []
        stones: list[tuple[str, str, int]] = []
        refs: list[tuple[str, int]] = []
        keys: list[tuple[str, int]] = []  # the DEKs' key store refs (a pooled key's, or the version's own)
        rows = [r for r in rows if _within(r[1], targets[r[0]])]
        # the tombstoned versions' normalised digests, as the barrier recorded them (durable before any key
        # goes: a publication killed after the keys' destruction and run again by `recover` writes them too);
        # a version the barrier did not record (an event barriered before schema 10) is opened, in one
        # key-store lookup (not one per version)
        recorded: dict[tuple[str, int], list[str]] = {}
        if tombstone:
            for i, v, d in self.conn.execute(self.q.erasing_digests_of, (event_id,)).fetchall():
                recorded.setdefault((i, int(v)), []).append(d)
        stoned = [(i, int(v), c, "{}") for i, v, c, _, _ in rows
                  if i in tombstone and c is not None and (i, int(v)) not in recorded]
        texts = {(i, v): c for (i, v, _, _), (c, _) in zip(stoned, self.vault.open(stoned, shredded_as_erased=True))}
        for ident, version, content, stored, dek in rows:
            sha = stored if stored is not None else self.digest_of(self._open_content([(ident, version, content)])[0])
            refs.append((ident, int(version)))
            keys.append(key_ref(ident, version, dek))
            named = key_tag(content)  # the key the ciphertext names, should a row's column disagree with it
            if named is not None and named != dek:
                keys.append(key_ref(ident, version, named))
            erased[ident].append({"version": int(version), "sha256": sha})
            updates.append((sha, ident, version))
            if ident in tombstone and content is not None:
                stones.append((sha, ident, event_id))
                if (ident, int(version)) in recorded:
                    stones += [(d, ident, event_id) for d in sorted(recorded[(ident, int(version))])]
                    continue
                opened = texts[(ident, int(version))]
                if opened is not None:  # normalised digests (issue 25), keyed; gone if a crash took the key
                    stones += [(d, ident, event_id) for d in sorted(self._tomb_digests(text_digests(_load(opened)),
                                                                                      plain=False))]
        roots = {s[1] for s in stones}  # their erase rows chain the tombstones' commitment, read when written
        details = {i: _dump({"versions": erased[i]}) for i in ids if erased[i] and i not in roots}
        return Erasing(generation, ids, refs, updates, stones, erased, details, keys)

    def _record_erasing_digests(self, event_id: int, roots: Sequence[str]) -> None:
        """Record, in the barrier's (synced) transaction, the normalised-text digests (issue 25; keyed as
        ``tombstones`` holds them, never text) of every version of ``roots`` the publication may tombstone:
        it reads them from here (:meth:`_erasure_of`), so a publication killed after destroying the
        versions' keys and finished by ``recover`` tombstones what an uninterrupted one does."""
        ids = sorted(set(roots))
        rows: list[tuple[str, int, str | None, str | None, str | None]] = []
        for start in range(0, len(ids), 500):
            rows += self.conn.execute(self.q.erasable_versions, (json.dumps(ids[start:start + 500]),)).fetchall()
        stoned = [(i, int(v), c, "{}") for i, v, c, _, _ in rows if c is not None]
        out: list[tuple[int, str, int, str]] = []
        for (i, v, _, _), (c, _) in zip(stoned, self.vault.open(stoned, shredded_as_erased=True)):
            if c is not None:
                out += [(event_id, i, v, d) for d in sorted(self._tomb_digests(text_digests(_load(c)), plain=False))]
        self.conn.executemany(self.q.insert_erasing_digests, out)

    def _destroy_keys(self, ready: Erasing) -> None:
        """Destroy the erased versions' DEKs in the key store (committed there at once: cost ∝ the versions
        erased), under the store's write lock, inside the publication's transaction."""
        self.vault.destroy(ready.keys)
        self.checkpoint()  # crash point: the keys are destroyed, the publication not yet committed

    def _erase_versions(self, event_id: int, targets: Mapping[str, int | None], tombstone: frozenset[str],
                        ready: Erasing | None = None) -> Erasing:
        """Erase the targeted versions inside the caller's (publication's) transaction, by crypto-shredding:
        their ciphertext and metadata nulled (``ready``, made by :meth:`_erasure_of` before the transaction,
        else now), keeping id, version and the content's digest; one
        chained ``erase`` row per artifact. Returns what was erased; its DEKs are destroyed by the caller
        under the store's write lock (:meth:`_destroy_keys`), else here when ``ready`` is None. Killed after the keys went and before the commit, the event is
        unfinished and ``recover`` publishes it again: the destruction repeats as a no-op and the rows
        end as uninterrupted."""
        now = ready is None
        if ready is None or self.conn.execute(self.q.audit_changed_since, (ready.generation,)).fetchone() is not None:
            ready = self._erasure_of(event_id, targets, tombstone)
        if now:
            self._destroy_keys(ready)
        if self.q.erase_versions is not None:  # one statement for them all
            rows = json.dumps([{"sha": sha, "id": i, "version": v} for sha, i, v in ready.updates])
            self.driver.write(self.q.erase_versions, (rows,))
        else:
            self.conn.executemany(self.q.erase_version, ready.updates)
        self.conn.executemany(self.q.insert_tombstones, ready.stones)
        self.conn.execute(self.q.delete_erasing_digests, (event_id,))  # now held by ``tombstones``
        pinned = self._tombstone_commitments(event_id, sorted({s[1] for s in ready.stones}), {s[0] for s in ready.stones})
        self._append_audit([(_now(), event_id, "erase", i, ready.details.get(i) or _dump(
            {"versions": ready.erased[i], **pinned.get(i, {})})) for i in ready.ids if ready.erased[i]])
        return ready

    def _tombstone_commitments(self, event_id: int, roots: Sequence[str],
                               digests: Collection[str]) -> dict[str, dict[str, Any]]:
        """Each root's ``{"tombstones": commitment}`` over the rows this event wrote for it (a digest an
        earlier event already holds stays that event's): the ``erase`` row chains it."""
        if not roots:
            return {}
        held: dict[str, list[str]] = {r: [] for r in roots}
        # the rows this event wrote are among the digests it inserted: looked up by primary key (a scan of
        # ``tombstones`` by event grows with every delete the store ever ran)
        for d, r, e in self.conn.execute(self.q.tombstones_of_digests, (json.dumps(sorted(digests)),)):
            if int(e) == event_id and r in held:
                held[r].append(d)
        return {r: {"tombstones": commitment(ds)} for r, ds in held.items()}

    def erasure_state(self) -> tuple[dict[tuple[str, int], str | None], dict[tuple[str, int], list[str]]]:
        """What ``audit --check`` compares with the chained ``erase`` rows: (id, version) → content
        SHA-256 of every erased version, and (root, event id) → the tombstone digests it holds."""
        versions = {(i, int(v)): sha for i, v, sha in self._stream(self.q.erased_versions)}
        stones: dict[tuple[str, int], list[str]] = {}
        for d, r, e in self._stream(self.q.all_tombstones):
            stones.setdefault((r, int(e)), []).append(d)
        return versions, stones

    def erased_refs(self, event_id: int) -> list[tuple[str, int]]:
        """(artifact id, version) of every version an event erased, from its chained ``erase`` rows."""
        out: list[tuple[str, int]] = []
        for ident, detail in self.conn.execute(self.q.erase_rows_of_event, (event_id,)):
            out += [(ident, int(v["version"])) for v in json.loads(detail).get("versions", [])]
        return out

    def erase_physically(self, event_id: int, refs: Sequence[tuple[str, int]] | None = None) -> ErasureReport:
        """The erasure's evidence after publication: the DEKs of every version the event erased are gone
        from the key store (destroyed again if a crash left any: idempotent), and SQLite's WAL is
        checkpointed (TRUNCATE; ``secure_delete`` has zeroed the nulled ciphertext in the pages). No
        whole-file VACUUM (SQLite) or ``VACUUM FULL`` (PostgreSQL, whose autovacuum reclaims the dead
        tuples in the background, without an exclusive lock): what any file, WAL segment, replica or
        backup still holds of these versions is ciphertext whose key is gone. The byte scan is
        ``memsteward audit --deep``. One chained ``physical-erasure`` row (counts only)."""
        if not self._take_physical(event_id):
            return self._physical_row(event_id) or {}
        refs = self.erased_refs(event_id) if refs is None else list(refs)
        keys = set(self.key_refs(refs).values())
        alive = self.vault.alive(keys)
        if alive:
            self.vault.destroy(alive)
            alive = self.vault.alive(keys)
        detail: ErasureReport = {"versions": len(refs), "keys_destroyed": len(refs) - len(alive),
                                 "keys_alive": len(alive), "sealed": self.sealed,
                                 "key_store": str(getattr(self.vault.keys, "path", "?"))}
        emptied = self.driver.truncate_log(self.erase_wait)
        if emptied is not None:
            detail["checkpoint"] = emptied
        detail["key_checkpoint"] = bool(getattr(self.vault.keys, "checkpointed", True))  # the key file's WAL emptied
        residue = getattr(self.vault.keys, "residue", None)  # a key store whose files this process cannot read
        if residue:
            detail["key_residue"] = str(residue)
        detail["complete"] = not alive and self.sealed and detail["key_checkpoint"]
        # not durable on its own: the keys' destruction and the publication already are, and this row, lost to a
        # power cut, is written again by `recover` (the step is idempotent); SQLite's checkpoint below syncs it
        with self.transaction(durable=False):
            self._check_lease(event_id)  # fencing: a process that took the step over writes its row alone
            if not self._holds_lease(event_id) and self._physical_row(event_id) is not None:
                return self._physical_row(event_id) or detail
            self._audit("physical-erasure", event_id=event_id, detail=detail)
            self.driver.write(self.q.delete_lease, (event_id,))
        self.driver.truncate_log(0)  # best effort: the row just written holds digests and counts only
        return detail

    def _take_physical(self, event_id: int) -> bool:
        """Hold the event's lease for its physical step (issue 25): publication kept it for the
        publisher; ``recover`` takes it over only from a dead holder (a live one raises
        :class:`~memsteward.errors.EventHeld`: it scans and writes the row itself). False: the step's
        row is written already — the step runs exactly once.

        The row and the lease's deletion commit together, and no lease of the event is taken after it, so
        while this process holds the lease (the publisher, right after publication) the row cannot exist:
        nothing is written and the audit log is not searched for it (a scan that grows with the log)."""
        if self._holds_lease(event_id):
            return True
        with self.transaction():
            if self._physical_row(event_id) is not None:
                return False
            row = self.conn.execute(self.q.lease_of, (event_id,)).fetchone()
            if row is not None and row[0] != self.owner and _alive(row[0], row[1], int(row[2]), row[3], row[5],
                                                                   self.driver):
                raise EventHeld(f"the physical erasure of event {event_id} is being done by process {row[2]} on "
                                f"{row[1]} (since {row[4]})", {"event": event_id, "host": row[1], "pid": int(row[2]),
                                                                "since": row[4]}, file=self.path)
            self._lease(event_id)
        return True

    def _holds_lease(self, event_id: int) -> bool:
        row = self.conn.execute(self.q.lease_owner, (event_id,)).fetchone()
        return row is not None and row[0] == self.owner

    def _physical_row(self, event_id: int) -> ErasureReport | None:
        row = self.conn.execute(self.q.physical_row, (event_id,)).fetchone()
        return None if row is None else json.loads(row[0])

    def pending_physical_erasure(self) -> list[int]:
        """Events that erased versions but have no ``physical-erasure`` row (interrupted in between)."""
        return [int(r[0]) for r in self.conn.execute(self.q.pending_physical)]
