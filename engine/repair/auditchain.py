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


def first_broken(rows: Iterable[Sequence[Any]]) -> tuple[int, str] | None:
    """(seq, reason) of the first row whose link does not verify; None when the chain holds.

    Rows are (seq, at, event_id, action, artifact_id, detail, stored_hash) in seq order.
    """
    prev, expected_seq = GENESIS, None
    for seq, at, event_id, action, artifact_id, detail, stored in rows:
        if expected_seq is not None and seq != expected_seq:
            return seq, f"sequence gap: expected row {expected_seq}, found {seq} (a row was deleted)"
        if stored is None:
            return seq, "row has no hash (written outside the store, or before chaining)"
        want = row_hash(prev, seq, at, event_id, action, artifact_id, detail)
        if want != stored:
            return seq, "hash mismatch: the row (or an earlier one) was altered"
        prev, expected_seq = stored, seq + 1
    return None
