"""Test set-up: a store filled from a JSON document as `memsteward store import` fills it, in-process.

The command's own steps (read, parse, open or create, import in one transaction), then the store is
closed (a SQLite file is checkpointed, as at the end of the command's process), without the start-up
of a child Python process (about 0.4 s of CPU each): the child processes the crash, lease and
erasure tests start are the ones under test, not this set-up.
"""

from __future__ import annotations

from pathlib import Path

from memsteward.jsonio import source_name
from memsteward.repair.artifacts import parse_store_document, read_json
from memsteward.store.opening import open_store


def import_document(db: str | Path, document: str | Path) -> str:
    """`memsteward store import --store DB DOCUMENT` (DB: a SQLite path or a postgresql:// URL)."""
    doc, text = read_json(str(document))
    snap = parse_store_document(doc, source_name(str(document)), text)
    store = open_store(str(db), create=True)
    try:
        store.import_snapshot(snap, file=source_name(str(document)))
    finally:
        store.close()
    return str(db)
