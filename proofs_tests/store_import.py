"""Test set-up: a store filled from a JSON document by `memsteward store import`, run in-process.

The command's own code runs (CliRunner), without the start-up of a child Python process
(about 0.4 s of CPU each); the child processes the crash, lease and erasure tests start
are the ones under test, not this set-up.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from memsteward.cli import main


def import_document(db: str | Path, document: str | Path) -> str:
    """`memsteward store import --store DB DOCUMENT` (DB: a SQLite path or a postgresql:// URL)."""
    r = CliRunner().invoke(main, ["store", "import", "--store", str(db), str(document)])
    assert r.exit_code == 0, r.output
    return str(db)
