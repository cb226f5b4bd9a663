"""A hash chain over the append-only audit log, so tampering with any row is detectable.

h_0 = 0^64;  h_k = SHA-256( canonical JSON of [h_{k−1}, seq, at, event_id, action, artifact_id, detail] ).
Each row stores h_k. Changing, inserting or deleting a row breaks every later link;
:func:`first_broken` names the first row whose stored hash does not match.

With ``MEMSTEWARD_AUDIT_KEY`` the head is sealed: HMAC-SHA-256 under the key over the head and the
store it belongs to (:func:`seal`, format 2: ``v2:`` + hex). The store id (``store_keys``) and the
tenant name are bound in, so the signed log of another store (or tenant) written under the same key
does not verify here (issue 25). Format 1 (64 hex characters, before this release) sealed (seq, h_seq)
only: it still verifies, is reported as format 1 by ``audit --check``, and the next keyed write
replaces it with a format-2 seal.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable, Iterable, Sequence
from json.encoder import encode_basestring as _string  # JSON string literal, ensure_ascii=False
from typing import Any

from ..errors import InputError

GENESIS = "0" * 64
KEY_ENV = "MEMSTEWARD_AUDIT_KEY"
MIN_KEY_BYTES = 16


def signing_key() -> bytes | None:
    """The audit-head HMAC key from ``MEMSTEWARD_AUDIT_KEY`` (None when unset).

    The key never enters the database: whoever can write the database but does not hold the key
    cannot sign a head, so an appended, rewritten or reordered row is detected without an
    outside anchor. The variable's name is fixed (a policy cannot point it elsewhere).
    """
    raw = os.environ.get(KEY_ENV)
    if not raw:
        return None
    key = raw.encode("utf-8")
    if len(key) < MIN_KEY_BYTES:
        raise InputError(f"{KEY_ENV} must hold at least {MIN_KEY_BYTES} bytes", field=KEY_ENV)
    return key


Binding = tuple[str, str | None]
"""What a seal binds besides the head: (the store's id, its tenant name or None for the base store)."""

SEAL_V2 = "v2:"


def seal(key: bytes, seq: int, head_hash: str, binding: Binding) -> str:
    """The format-2 seal: ``v2:`` + HMAC-SHA-256 over the audit head (seq, h_seq), the store id and the
    tenant (fields joined by NUL, which neither a hex id, a tenant name nor a hash can hold)."""
    store_id, tenant = binding
    msg = "\0".join(("memsteward-audit-head/2", store_id, tenant or "", str(seq), head_hash))
    return SEAL_V2 + hmac.digest(key, msg.encode("utf-8"), "sha256").hex()


def legacy_seal(key: bytes, seq: int, head_hash: str) -> str:
    """The format-1 seal of releases before the store id was bound: HMAC-SHA-256 over (seq, h_seq)."""
    return hmac.new(key, f"memsteward-audit-head:{seq}:{head_hash}".encode(), hashlib.sha256).hexdigest()


def seal_format(stored: str | None) -> int | None:
    """2 for a seal that binds the store, 1 for an older one, None for no seal."""
    return None if stored is None else 2 if stored.startswith(SEAL_V2) else 1


def seal_verifies(key: bytes, stored: str, seq: int, head_hash: str, binding: Binding) -> bool:
    """Whether ``stored`` seals (seq, head_hash) under ``key``: a format-2 seal for this store and
    tenant, or a format-1 seal (which binds no store: :func:`seal_format` tells them apart)."""
    want = seal(key, seq, head_hash, binding) if seal_format(stored) == 2 else legacy_seal(key, seq, head_hash)
    return hmac.compare_digest(stored, want)


def sealed_head_problem(key: bytes, head: tuple[int, str, str | None] | None,
                        rows: Sequence[Sequence[Any]], binding: Binding, *, first_appended: int) -> str | None:
    """Why a keyed writer must not extend this log (None: it may), checked before it seals.

    ``head`` is the stored (seq, hash, seal) before this transaction's appends (None: no head
    recorded); ``rows`` are the stored rows from ``head``'s seq on (the head row, then the first
    appended one); ``first_appended`` is the seq of this transaction's first appended row.
    Without a recorded head the log must have been empty: its first row is row 1 and this
    transaction appended it. A log with older rows and no head lost its head record (a file writer
    removed it after rewriting rows): sealing a new head over it would launder the rewrite, as
    ``audit --check`` reports a missing head as tampering. With a head, this transaction's first
    row must come right after it: an older signed head put back over rows re-chained after it (its
    seal still verifies) would otherwise be sealed over too.
    The head must be sealed under ``key``, be the row it names, and the first appended row must link
    to it. A file writer without the key who rewrote rows and re-chained them changed the head hash,
    so its seal no longer verifies: the writer refuses instead of sealing the forgery (the laundering
    of issue 25). Rows before the head that were altered without re-chaining stay broken for
    ``audit --check`` (the chain is verified there in full); no later write can seal them valid.
    """
    if head is None or head[0] == 0:
        empty_before = first_appended == 1 and (not rows or rows[0][0] == 1)
        return None if empty_before else "the audit log has rows but no recorded head"
    seq, stored_hash, stored_seal = head
    if stored_seal is None:
        return (f"the audit head (row {seq}) is not signed although {KEY_ENV} is set: it was written without the "
                "key (a file writer, or a writer without the key)")
    if not seal_verifies(key, stored_seal, seq, stored_hash, binding):
        return (f"the audit head's signature (row {seq}) does not verify: the log was rewritten without the key, "
                "or it is another store's log")
    if not rows or rows[0][0] != seq or rows[0][6] != stored_hash or first_appended != seq + 1:
        # (first_appended past seq + 1: rows lie between the head and this transaction's appends, as when a
        # file writer put back an older signed head over rows it re-chained after it)
        return f"the audit log does not end at its signed head (row {seq}): rows were altered or removed"
    if len(rows) > 1:
        s, at, event_id, action, artifact_id, detail, stored = rows[1]
        if s != seq + 1 or stored != row_hash(stored_hash, s, at, event_id, action, artifact_id, detail):
            return f"the row after the signed head (row {seq}) does not link to it"
    return None


def tombstone_commitment(digests: Iterable[str]) -> dict[str, Any]:
    """What an ``erase`` audit row pins of the tombstones it wrote for a root: their number and the
    SHA-256 over their sorted digests, one a line. ``audit --check`` recomputes it from the
    ``tombstones`` table, so a removed or altered tombstone row breaks the chained evidence."""
    ds = sorted(digests)
    return {"count": len(ds), "sha256": hashlib.sha256("".join(d + "\n" for d in ds).encode("utf-8")).hexdigest()}


def row_hash(prev: str, seq: int, at: str, event_id: int | None, action: str, artifact_id: str | None,
             detail: str) -> str:
    """h_k for one audit row (``detail`` is the stored JSON text, hashed as stored).

    The payload is the compact JSON array ``json.dumps([...], ensure_ascii=False,
    separators=(",", ":"))`` written directly: the same bytes (a test compares them) without the
    encoder's per-call set-up, since a barrier hashes one row per withdrawn artifact.
    """
    payload = "[%s,%d,%s,%s,%s,%s,%s]" % (
        _string(prev), seq, _string(at), "null" if event_id is None else "%d" % event_id, _string(action),
        "null" if artifact_id is None else _string(artifact_id), _string(detail))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def chain_same(prev: str, seq: int, at: str, event_id: int | None, action: str,
               artifact_ids: Sequence[str | None], detail: str) -> list[str]:
    """:func:`row_hash` of rows seq, seq+1, … that differ only in ``artifact_id`` (a barrier's
    withdraw rows), continuing from ``prev``; see :func:`chain_same_bytes`."""
    return [h.decode("ascii") for h in chain_same_bytes(prev, seq, at, event_id, action, artifact_ids, detail)]


def chain_same_bytes(prev: str, seq: int, at: str, event_id: int | None, action: str,
                     artifact_ids: Sequence[str | None], detail: str) -> list[bytes]:
    """:func:`chain_same` as ASCII bytes. A row's payload is ``["`` + h_{k−1} + the rest, and the rest
    (``",seq,at,event_id,action,artifact_id,detail]``) does not depend on the chain: every rest is
    encoded up front in one pass, and each link is a copy of the hash state after ``["`` fed the
    previous link and the rest — no text is built per row. A link is quoted without the encoder (a
    hex digest needs no escaping; the first ``prev``, read from the store, is escaped as
    :func:`row_hash` does)."""
    shared = ",%s,%s,%s," % (_string(at), "null" if event_id is None else "%d" % event_id, _string(action))
    tail = ",%s]" % _string(detail)
    quote: Callable[[Any], str] = _string if None not in artifact_ids else _quote
    rests = [('",%d%s%s%s' % (k, shared, q, tail)).encode("utf-8")
             for k, q in enumerate(map(quote, artifact_ids), seq)]
    opening = hashlib.sha256(b'["')
    out: list[bytes] = []
    append = out.append
    link = _string(prev)[1:-1].encode("utf-8")
    for rest in rests:
        h = opening.copy()
        h.update(link)
        h.update(rest)
        link = h.hexdigest().encode("ascii")
        append(link)
    return out


def _quote(artifact_id: str | None) -> str:
    return "null" if artifact_id is None else _string(artifact_id)


def chain(rows: Iterable[Sequence[Any]], prev: str = GENESIS) -> list[str]:
    """Hashes for rows (seq, at, event_id, action, artifact_id, detail), continuing from ``prev``."""
    out = []
    for seq, at, event_id, action, artifact_id, detail in rows:
        prev = row_hash(prev, seq, at, event_id, action, artifact_id, detail)
        out.append(prev)
    return out


def first_broken(rows: Iterable[Sequence[Any]], head: tuple[int, str] | None = None,
                 expect_head: str | None = None, head_seal: str | None = None,
                 key: bytes | None = None, binding: Binding | None = None) -> tuple[int, str] | None:
    """(seq, reason) of the first row whose link does not verify; None when the chain holds.

    Rows are (seq, at, event_id, action, artifact_id, detail, stored_hash) in seq order. ``head``
    is the (seq, hash) the store recorded with its last append: a truncated tail no longer
    reaches it. ``expect_head`` is a hash published elsewhere (e.g. in an attestation): whoever
    can rewrite the database can recompute every link, so only an outside anchor proves the
    log was not rewritten wholesale. With ``key`` (:func:`signing_key`), the head must carry a
    valid ``head_seal`` for ``binding`` (this store's id and tenant, :func:`seal`): a row appended,
    rewritten or reordered by someone without the key fails, and so does another store's signed log.
    """
    rows = list(rows)
    broken = _links(rows)
    if broken is not None:
        return broken
    last = (rows[-1][0], rows[-1][6]) if rows else (0, GENESIS)
    if head is None and rows:
        return last[0], "the store has no recorded head for its log (the head record was removed)"
    if head is not None and (last[0], last[1]) != head:
        return head[0], f"the log ends at row {last[0]} but its recorded head is row {head[0]} (rows were removed)"
    if key is not None and head is not None:
        if head_seal is None:
            return head[0], f"the audit head is not signed although {KEY_ENV} is set (written without the key)"
        if binding is None or not seal_verifies(key, head_seal, head[0], head[1], binding):
            return head[0], "the audit head's signature does not verify (rows appended, rewritten or reordered " \
                            "without the key, a different key, or the log of another store or tenant)"
    if expect_head is not None and not any(r[6] == expect_head for r in rows):
        return last[0], "the expected head hash is not in the log (rewritten, or truncated before it)"
    return None


def _links(rows: Sequence[Sequence[Any]]) -> tuple[int, str] | None:
    prev, expected_seq = GENESIS, None
    for seq, at, event_id, action, artifact_id, detail, stored in rows:
        if (expected_seq if expected_seq is not None else 1) != seq:
            return seq, f"sequence gap: expected row {expected_seq or 1}, found {seq} (a row was deleted)"
        if stored is None:
            return seq, "row has no hash (written outside the store, or before chaining)"
        want = row_hash(prev, seq, at, event_id, action, artifact_id, detail)
        if want != stored:
            return seq, "hash mismatch: the row (or an earlier one) was altered"
        prev, expected_seq = stored, seq + 1
    return None
