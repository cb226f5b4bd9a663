"""``memsteward store migrate --encrypt`` and ``store rotate-key``: a plaintext store sealed in place.

Sealing (:func:`encrypt_in_place`) walks the versions still in plaintext in batches of ``batch`` rows,
each batch one transaction that seals its rows (a new DEK each, :class:`memsteward.shred.vault.Vault`)
and stores their keyed digests; killed midway, the next run starts with the rows left (a sealed row
is recognised by its ``ms1:`` prefix), so the migration is resumable. Then, once: the lineage index is
rebuilt with keyed hashes, the store is marked sealed, and the files that held the plaintext are
rewritten — SQLite ``VACUUM`` and a WAL checkpoint, PostgreSQL ``VACUUM FULL`` of ``versions`` and
``shingles`` (a one-time, whole-table step of the migration, never of a delete). It ends with the
deep scan (:func:`memsteward.shred.deepscan.deep_scan`) of the store's files for the plaintext it
sealed, with nothing counted as retained: after the migration no file may hold any content in clear.

Tombstones written before keep their plain SHA-256 digests (the erased text is gone, so they cannot
be keyed); the write path checks both forms. Backups taken before the migration hold plaintext: they
are outside what key destruction can reach, and the report says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..shred.deepscan import deep_scan
from ..shred.master import MasterKey
from .deep_audit import store_files

if TYPE_CHECKING:
    from .sqlstore import SqlStore as Store

SCAN_SAMPLE = 20_000  # plaintext contents kept for the closing scan (evenly spread over the run)


def encrypt_in_place(store: Store, batch: int = 2000,
                     progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Seal every plaintext version of ``store`` (see the module docstring); the report of the run."""
    total = int(store.conn.execute(store.q.count_plaintext).fetchone()[0])
    step = max(1, total // SCAN_SAMPLE)
    sample: dict[str, Any] = {}
    done = 0
    while True:
        with store.transaction() as c:
            rows = c.execute(store.q.plaintext_batch, (batch,)).fetchall()
            if not rows:
                break
            sealed = store.vault.seal([(i, int(v), ct, m) for i, v, ct, m in rows])
            keyed = [None if ct is None else store.vault.digest(_canonical(ct)) for _, _, ct, _ in rows]
            c.executemany(store.q.reseal_version, [(sc, sm, k, i, v) for (i, v, sc, sm), k in zip(sealed, keyed)])
        for k, (i, v, ct, _) in enumerate(rows):
            if ct is not None and (done + k) % step == 0:
                sample[f"{i}@{v}"] = json.loads(ct)
        done += len(rows)
        if progress is not None:
            progress(done, total)
    _finish(store)
    scan = deep_scan(store_files(store), sample, []) if store.driver.files() else None
    return {"store": store.path, "sealed_now": done, "sealed": True, "scan": scan,
            "clean": scan is None or scan["clean"],
            "note": "backups taken before this migration hold plaintext; destroy them or keep them apart"}


def _canonical(text: str) -> str:
    from ..repair.writes import canonical_json

    return canonical_json(json.loads(text))


def _finish(store: Store) -> None:
    """Keyed lineage index, the sealed mark, and the files rewritten without the plaintext pages."""
    with store.transaction() as c:
        store.driver.write(store.q.mark_sealed)
        store.sealed = True
        ids = [r[0] for r in c.execute(store.q.artifact_ids)]
        for start in range(0, len(ids), 20_000):
            store._reindex(ids[start:start + 20_000])
    store.driver.reclaim(("versions", "shingles"))


def rotate_key(store: Store, new: MasterKey) -> dict[str, Any]:
    """Rewrap every DEK of ``store`` and its index key under ``new`` (the data is not touched)."""
    count = store.vault.keys.rotate(new)
    return {"store": store.path, "rewrapped": count, "kid": new.kid}
