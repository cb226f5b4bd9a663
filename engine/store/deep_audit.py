"""``memsteward audit --deep``: the byte-level evidence of crypto-shredding, off the delete path.

Two questions, over the store's files (SQLite: database, WAL, journal; the key file and its WAL) and
every backup the user names (a SQLite file copy or backup-API copy, or a ``pg_dump`` plain-text dump):

1. **Does any erased version still decrypt?** Every row of ``versions`` found in a backup whose
   (id, version) the current store has erased is opened with the current key store: it must fail
   (its DEK is destroyed). One that opens is reported, and its text joins the needles of question 2.
2. **Is erased text still there in plaintext?** The needles are the texts the user names (``--text``:
   a marker, the deleted record) and the decryptable erased versions, minus every window that also
   occurs in retained content (all current, non-erased versions, opened): :func:`memsteward.shred.
   deepscan.deep_scan` reads each file once with one Aho–Corasick automaton.

The report holds ids, counts and file names, never the text. Reading every retained version costs
what the store holds; this is an audit step, run when a reviewer asks, not per delete.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..shred.deepscan import deep_scan
from ..shred.vault import Row

if TYPE_CHECKING:
    from .sqlstore import SqlStore as Store

_COPY = re.compile(r"^COPY (?:\S+\.)?versions \(([^)]*)\) FROM stdin;$")


def _unescape_copy(field: str) -> str | None:
    if field == "\\N":
        return None
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}.get(m.group(1), m.group(1)), field)


def backup_rows(path: str) -> Iterator[Row]:
    """The ``versions`` rows (id, version, content, meta) of a backup: a SQLite database, or a pg_dump text dump."""
    with open(path, "rb") as fh:
        head = fh.read(16)
    if head == b"SQLite format 3\x00":
        conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        try:
            yield from ((i, int(v), c, m) for i, v, c, m in conn.execute("SELECT id, version, content, meta FROM versions"))
        except sqlite3.DatabaseError as exc:
            raise InputError(f"cannot read the backup: {exc}", file=path) from None
        finally:
            conn.close()
        return
    cols: list[str] | None = None
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if cols is None:
                m = _COPY.match(line)
                cols = [c.strip().strip('"') for c in m.group(1).split(",")] if m else None
                continue
            if line == "\\.":
                cols = None
                continue
            f = dict(zip(cols, line.split("\t")))
            yield f["id"], int(f["version"]), _unescape_copy(f["content"]), _unescape_copy(f["meta"]) or "{}"


def store_files(store: Store) -> list[str]:
    """The files of the store and its key store that this process can read."""
    out = []
    out += store.driver.files()
    out += getattr(store.vault.keys, "files", lambda: [])()
    return out


def deep_audit(store: Store, backups: Sequence[str] = (), texts: Sequence[str] = ()) -> dict[str, Any]:
    """Both questions of the module docstring; ``clean`` when neither finds anything."""
    erased = {(i, int(v)) for i, v in store.conn.execute(store.q.erased_version_ids)}
    needles: dict[str, Any] = {f"text[{k}]": t for k, t in enumerate(texts)}
    decryptable: list[dict[str, Any]] = []
    for path in backups:
        if not os.path.exists(path):
            raise InputError("backup not found", file=path)
        rows = [r for r in backup_rows(path) if (r[0], r[1]) in erased]
        opened = set(store.vault.decryptable(rows))
        decryptable += [{"backup": path, "id": i, "version": v} for i, v in sorted(opened)]
        for (i, v, _, _), (c, _m) in zip([r for r in rows if (r[0], r[1]) in opened],
                                         store.vault.open([r for r in rows if (r[0], r[1]) in opened])):
            needles[f"{i}@{v}"] = c
    retained = (c for c, _ in _retained(store))
    scan = deep_scan([*store_files(store), *backups], needles, retained)
    return {"store": store.path, "erased_versions": len(erased), "backups": list(backups),
            "decryptable": decryptable, "scan": scan, "clean": scan["clean"] and not decryptable}


def _retained(store: Store) -> Iterator[tuple[Any, str]]:
    """(content, meta) of every version not erased, opened (streamed in batches)."""
    from itertools import islice

    it = store._stream(store.q.retained_versions)
    while part := list(islice(it, 2000)):
        for c, m in store.vault.open([(i, int(v), c, m) for i, v, c, m in part]):
            yield (_json(c), m)


def _json(text: str | None) -> Any:
    import json

    return None if text is None else json.loads(text)
