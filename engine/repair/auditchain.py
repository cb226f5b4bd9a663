"""A hash chain over the append-only audit log, so tampering with any row is detectable.

h_0 = 0^64;  h_k = SHA-256( canonical JSON of [h_{k−1}, seq, at, event_id, action, artifact_id, detail] ).
Each row stores h_k. Changing, inserting or deleting a row breaks every later link;
:func:`first_broken` names the first row whose stored hash does not match.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable, Sequence

GENESIS = "0" * 64


def row_hash(prev: str, seq: int, at: str, event_id: int | None, action: str, artifact_id: str | None,
             detail: str) -> str:
    """h_k for one audit row (``detail`` is the stored JSON text, hashed as stored)."""
    payload = json.dumps([prev, seq, at, event_id, action, artifact_id, detail], ensure_ascii=False,
                         separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def chain(rows: Iterable[Sequence[Any]], prev: str = GENESIS) -> list[str]:
    """Hashes for rows (seq, at, event_id, action, artifact_id, detail), continuing from ``prev``."""
    out = []
    for seq, at, event_id, action, artifact_id, detail in rows:
        prev = row_hash(prev, seq, at, event_id, action, artifact_id, detail)
        out.append(prev)
    return out


def first_broken(rows: Iterable[Sequence[Any]], head: tuple[int, str] | None = None,
                 expect_head: str | None = None) -> tuple[int, str] | None:
    """(seq, reason) of the first row whose link does not verify; None when the chain holds.

    Rows are (seq, at, event_id, action, artifact_id, detail, stored_hash) in seq order. ``head``
    is the (seq, hash) the store recorded with its last append: a truncated tail no longer
    reaches it. ``expect_head`` is a hash published elsewhere (e.g. in an attestation): whoever
    can rewrite the database can recompute every link, so only an outside anchor proves the
    log was not rewritten wholesale.
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
