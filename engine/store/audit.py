"""The audit chain's writer and readers: every committed change appends hash-chained rows.

Row k's hash covers row k−1's (:func:`~memsteward.repair.auditchain.row_hash`); the head (seq,
hash) and, with a signing key, its HMAC seal are written in the transaction that appended the rows
(``audit_head``). A barrier's withdraw rows are hashed in one pass (:func:`chain_same`) and, on
SQLite, inserted by parts while the next part is hashed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import InputError
from ..repair.auditchain import (
    GENESIS,
    Binding,
    chain_same,
    chain_same_bytes,
    row_hash,
    seal,
    seal_verifies,
    sealed_head_problem,
)
from .api import AuditRow
from .core import _done, _dump, _now
from .queries import AUDIT_COLUMNS
from .sealing import Sealing

__all__ = ["WITHDRAW_PART", "AuditChain", "tail_of"]


def tail_of(rows: Sequence[Sequence[Any]]) -> tuple[int, str]:
    """(seq, hash) of the chain's last row from the ``audit_tail`` rows; (0, genesis) for an empty chain."""
    return (0, GENESIS) if not rows else (int(rows[0][0]), rows[0][1] or GENESIS)


WITHDRAW_PART = 25_000  # withdraw rows per INSERT of a barrier; larger barriers write while they pack and hash


class AuditChain(Sealing):
    """Appending to the hash-chained ``audit`` table and reading it back."""

    def _audit(self, action: str, artifact_id: str | None = None, event_id: int | None = None,
               detail: Mapping[str, Any] | None = None) -> None:
        self._append_audit([(_now(), event_id, action, artifact_id, _dump(detail or {}))])

    _held_rows: list[tuple[str, int | None, str, str | None, str]] | None = None  # a lock_late transaction's

    @contextmanager
    def transaction(self, lock_late: bool = False, durable: bool = True,
                    locked: Callable[[], None] | None = None) -> Iterator[Any]:
        """:meth:`~memsteward.store.core.StoreCore.transaction`. ``lock_late``: on PostgreSQL the body runs
        without the store's write lock and the audit rows it appends are kept; at its end the lock is
        taken, ``locked()`` runs (what must be checked or written under the lock) and the rows are
        chained. For a body that reads and changes only rows no other writer may change meanwhile."""
        if not lock_late:
            with super().transaction(durable=durable) as c:
                yield c
            return
        with super().transaction(lock_late=True, durable=durable) as c:
            held: list[tuple[str, int | None, str, str | None, str]] = []
            self._held_rows = held
            try:
                yield c
            finally:
                self._held_rows = None
            self.lock_writes()
            if locked is not None:
                locked()
            self._append_audit(held)

    def _append_audit(self, rows: Sequence[tuple[str, int | None, str, str | None, str]]) -> None:
        """Append (at, event_id, action, artifact_id, detail) rows, each chained to the last hash (inside
        a ``lock_late`` transaction: kept, chained at its end)."""
        if self._held_rows is not None:
            self._held_rows.extend(rows)
            return
        seq, prev = self._audit_tail()
        out = []
        for at, event_id, action, artifact_id, detail in rows:
            seq += 1
            prev = row_hash(prev, seq, at, event_id, action, artifact_id, detail)
            out.append((seq, at, event_id, action, artifact_id, detail, prev))
        self._write_audit(out)

    def _append_withdrawals(self, event_id: int, ids: Sequence[str], ids_text: str) -> None:
        """One chained ``withdraw`` row per id, all at one time, hashed in one pass (:func:`chain_same`).

        SQLite: the rows go in by parts of ``WITHDRAW_PART`` rows, each part's INSERT running on a
        thread while the next part is hashed (:meth:`_insert_withdrawals`); PostgreSQL: one COPY
        (:class:`~memsteward.store.postgres.PgConnection`)."""
        seq, prev = self._audit_tail()
        at = _now()
        if self.q.insert_withdrawals_part is None or not ids:
            texts = chain_same(prev, seq + 1, at, event_id, "withdraw", ids, "{}")
            self._write_audit([(seq + 1 + k, at, event_id, "withdraw", i, "{}", h)
                               for k, (i, h) in enumerate(zip(ids, texts))])
            return
        written = _done
        try:
            for start in range(0, len(ids), WITHDRAW_PART):
                hashes = chain_same_bytes(prev, seq + 1 + start, at, event_id, "withdraw",
                                          ids[start:start + WITHDRAW_PART], "{}")
                written()  # the previous part's rows are in
                written = self._concurrently(len(ids) > WITHDRAW_PART, self._insert_withdrawals, seq + 1, at,
                                             event_id, ids_text, start, hashes)
                prev = hashes[-1].decode("ascii")
        finally:
            written()  # never leave a statement running into the rollback
        self._write_head(seq + len(ids), prev, seq + 1)

    def _insert_withdrawals(self, first: int, at: str, event_id: int, ids_text: str, start: int,
                            hashes: Sequence[bytes]) -> None:
        """The withdraw rows of the ids at positions start, start + 1, … of the JSON array ``ids_text``
        (the one the UPDATE read), row k as audit row ``first + k``: one INSERT … SELECT, each row's
        hash cut out of one BLOB of the part's concatenated 64-character hashes (a BLOB's ``substr`` is
        by byte offset; a TEXT's would count characters from its start)."""
        part = self.q.insert_withdrawals_part
        assert part is not None  # called only where the dialect has it (_append_withdrawals)
        self.driver.write(part, (first, at, event_id, b"".join(hashes), start, ids_text, start,
                           start + len(hashes)))

    _tail_hint: tuple[int, str] | None = None
    """The chain's tail as the open write transaction read it under the write lock (the write path reads
    it with its checks); taken by the next append, cleared when the transaction ends."""

    def _audit_tail(self) -> tuple[int, str]:
        hint, self._tail_hint = self._tail_hint, None
        return hint if hint is not None else tail_of(self.conn.execute(self.q.audit_tail).fetchall())

    def _write_audit(self, out: Sequence[tuple[int, str, int | None, str, str | None, str, str]]) -> None:
        self.driver.bulk_insert("audit", AUDIT_COLUMNS, out)  # PostgreSQL: one COPY for a barrier's withdraw rows
        if out:
            self._write_head(out[-1][0], out[-1][6], out[0][0])

    def _write_head(self, seq: int, head: str, first: int) -> None:
        """Record (and, with the key, seal) the chain's head in the transaction that appended it.

        A keyed writer first checks the head it extends (:func:`~memsteward.repair.auditchain.sealed_head_problem`):
        a log rewritten and re-chained by someone without the key is refused (InputError, the write
        rolled back), never sealed over. ``first`` is the seq of the first row this call appended."""
        if self._audit_key is not None:
            self._check_sealed_head(self._audit_key, first)
        sealed = None if self._audit_key is None else seal(self._audit_key, seq, head, self.audit_binding())
        self.driver.write(self.q.upsert_audit_head, (seq, head, sealed))

    def _check_sealed_head(self, key: bytes, first: int) -> None:
        """Before sealing: the previous head must carry a valid seal and be the row this transaction's
        first appended row links to (rows appended since are this transaction's own); with no head
        recorded, the log must have been empty (``first``, this call's first appended row, is row 1)."""
        old = self.conn.execute(self.q.audit_head_sealed).fetchone()
        rows = self.conn.execute(self.q.audit_rows_from, (int(old[0]) if old else 0,)).fetchall()
        problem = sealed_head_problem(key, None if old is None else (int(old[0]), old[1], old[2]),
                                      [tuple(r) for r in rows], self.audit_binding(), first_appended=first)
        if problem is not None:
            raise InputError(f"refusing to write: {problem}; nothing was written. Run `memsteward audit --check "
                             f"--store {self.path}` and restore the store from a trusted copy", file=self.path)

    def _reseal_copied_head(self, source: Binding) -> None:
        """A copied log's head sealed for this store (inside the copy's transaction): a seal binds its
        store, so the source's seal (checked first under ``source``) does not verify here. Without the
        key the seal is copied as it is (it then verifies nowhere but in the source)."""
        key = self._audit_key
        row = self.conn.execute(self.q.audit_head_sealed).fetchone()
        if key is None or row is None or row[2] is None:
            return
        if not seal_verifies(key, row[2], int(row[0]), row[1], source):
            raise InputError("the source's audit head signature does not verify under MEMSTEWARD_AUDIT_KEY "
                             "(nothing was copied)", file=self.path, field="audit_head")
        self.driver.write(self.q.reseal_head, (seal(key, int(row[0]), row[1], self.audit_binding()),))

    def audit_head(self) -> tuple[int, str] | None:
        """(seq, hash) of the last row, as recorded in the same transaction as the row."""
        row = self.conn.execute(self.q.audit_head).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def audit_binding(self) -> Binding:
        """What the audit head's seal binds besides the head: this store's id and its tenant."""
        return self._store_id, self.tenant

    def audit_seal(self) -> str | None:
        """The HMAC of the audit head (None when the last writer held no key)."""
        row = self.conn.execute(self.q.audit_seal).fetchone()
        return None if row is None else row[0]

    def audit_rows(self) -> list[AuditRow]:
        """Raw audit rows (seq, at, event_id, action, artifact_id, detail, hash) in order."""
        return [tuple(r) for r in self.conn.execute(self.q.audit_rows)]

    def audit_log(self) -> list[dict[str, Any]]:
        return list(self.audit_log_stream())

    def audit_log_stream(self) -> Iterator[dict[str, Any]]:
        """:meth:`audit_log` as the rows come (``memsteward store log --json``)."""
        return ({"seq": s, "at": at, "event_id": ev, "action": a, "artifact_id": art, "detail": json.loads(d)}
                for s, at, ev, a, art, d in self._stream(self.q.audit_log))

    def audit_log_of(self, event_id: int) -> list[dict[str, Any]]:
        """:meth:`audit_log`'s rows of one event (the attestation's: the rest of the log is not decoded)."""
        return [{"seq": s, "at": at, "event_id": ev, "action": a, "artifact_id": art, "detail": json.loads(d)}
                for s, at, ev, a, art, d in self.conn.execute(self.q.audit_log_of_event, (event_id,))]

    def generation(self) -> int:
        """A counter that grows with every committed change (the last audit sequence number)."""
        (seq,) = self.conn.execute(self.q.generation).fetchone()
        return int(seq)
