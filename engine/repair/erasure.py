"""Physical erasure evidence: fingerprints of erased content and a byte scan of the store's files.

Nulling a column is not erasure: SQLite keeps the old bytes in free pages, in the WAL, and in
pages a concurrent reader still sees. After publication the store checkpoints the WAL (TRUNCATE),
VACUUMs, and then — while the erased text is still in the publishing process's memory — scans the
database and WAL files for it. Only the scan's counts go into the audit, never the text.

Fingerprint: every string value of an erased version with at least :data:`MIN_LEAF` characters is
cut into non-overlapping windows of :data:`WINDOW` characters (plus its last window, and the
whole value when it is at most 2·WINDOW long). A surviving copy of any 2·WINDOW − 1 consecutive
characters of such a value contains a whole window, so it is found. Each window is searched both
as UTF-8 and as stored in JSON (``\\uXXXX`` escapes); at most :data:`MAX_NEEDLES` windows are
searched (the longest values first), which bounds the scan at MAX_NEEDLES passes over the files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

from ..textnorm import strings_of as string_leaves  # one walk of a JSON value's strings (keys left out)

WINDOW = 24
MIN_LEAF = 16
MAX_NEEDLES = 512
CHUNK = 1 << 24  # read files in 16 MiB chunks (with overlap), so memory stays bounded


def windows(text: str, width: int = WINDOW) -> list[str]:
    """Non-overlapping windows of ``width`` characters, the last window, and the whole text if short."""
    if len(text) <= 2 * width:
        return [text]
    out = [text[k:k + width] for k in range(0, len(text) - width + 1, width)]
    out.append(text[-width:])
    return out


def fingerprints(contents: Iterable[Any], limit: int = MAX_NEEDLES) -> list[bytes]:
    """Byte needles for the erased contents (see the module docstring), longest values first."""
    leaves = sorted({s for c in contents for s in string_leaves(c) if len(s) >= MIN_LEAF}, key=lambda s: (-len(s), s))
    out: list[bytes] = []
    seen: set[bytes] = set()
    for leaf in leaves:
        for w in windows(leaf):
            for needle in (w.encode("utf-8"), json.dumps(w)[1:-1].encode("ascii")):
                if needle not in seen:
                    seen.add(needle)
                    out.append(needle)
        if len(out) >= limit:
            return out[:limit]
    return out


def store_files(path: str) -> list[str]:
    """The files of a SQLite store that can hold page images: the database, its WAL and journal."""
    return [p for p in (path, path + "-wal", path + "-journal") if os.path.exists(p)]


def scan(paths: Sequence[str], needles: Sequence[bytes]) -> dict[str, Any]:
    """Count the needles found in each file (bounded memory: chunks overlapping by the longest needle)."""
    overlap = max((len(n) for n in needles), default=1) - 1
    found: dict[str, int] = {}
    total = 0
    for path in paths:
        hits: set[bytes] = set()
        with open(path, "rb") as fh:
            tail = b""
            while True:
                chunk = fh.read(CHUNK)
                if not chunk:
                    break
                data = tail + chunk
                total += len(chunk)
                hits.update(n for n in needles if n not in hits and data.find(n) >= 0)
                tail = data[-overlap:] if overlap else b""
        if hits:
            found[os.path.basename(path)] = len(hits)
    return {"needles": len(needles), "bytes": total, "files": [os.path.basename(p) for p in paths],
            "found": found}
