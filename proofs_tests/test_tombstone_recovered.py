"""A delete killed after its publication destroyed the erased versions' keys, before its commit, and
finished by ``memsteward recover``, writes the tombstones an uninterrupted one writes (issue 25's
normalised digests included), on both backends.

``recover`` cannot open the roots any more (their keys are gone): it reads their normalised digests as the
event's barrier recorded them (durable before any key goes). Before, it kept only the exact content
digests, and an upper-cased copy of the deleted text written after ``recover`` was accepted and served.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from store_import import import_document

from memsteward.errors import WriteRefused
from memsteward.policy.loader import load_policy
from memsteward.repair.events import load_event, parse_event
from memsteward.repair.execute import run_event
from memsteward.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
POLICY = str(ROOT / "policies" / "default.yaml")
EVENT = str(DATA / "event-delete.json")
MEMGOV = str(Path(sys.executable).parent / "memsteward")
TEXT = "The user is allergic to peanuts and carries an epipen."  # p1's text in the bundled store
CHILD = """
import sys
from memsteward.policy.loader import load_policy
from memsteward.repair.events import load_event
from memsteward.repair.execute import run_event
from memsteward.store import Store
from memsteward.store.crashing import CrashingStore
store = CrashingStore(Store.open(sys.argv[1]), crash_at=int(sys.argv[4]))  # SIGKILLed at that checkpoint
run_event(store, load_policy(sys.argv[2]), load_event(sys.argv[3], store.snapshot()), "mincut", "ortools")
"""


def _stones(url: str) -> dict[str, int]:
    """How many tombstone digests each erased root holds."""
    s = Store.open(url)
    held = {root: len(ds) for (root, _), ds in s.erasure_state()[1].items()}
    s.close()
    return held


def _written(url: str, text: str) -> object:
    """The version a write of ``text`` got, or the reason it was refused."""
    s = Store.open(url)
    try:
        return s.record({"id": "again", "kind": "record", "content": text}, wait=0).version
    except WriteRefused as exc:
        return exc.reason
    finally:
        s.close()


def _keys_checkpoint(url: str, legacy: bool = False) -> int:
    """Run the delete uninterrupted in this process and return the checkpoint (counted from the
    event's start) that the keys' destruction passes; ``legacy``: its barrier records no digests."""
    s = Store.open(url)
    if legacy:
        s._record_erasing_digests = lambda event_id, roots: None
    start, at = s.checkpoints, []
    destroy = s._destroy_keys

    def counted(ready):  # noqa: ANN001, ANN202 — the store's own step, its checkpoint counted
        destroy(ready)
        at.append(s.checkpoints - start)
    s._destroy_keys = counted
    run_event(s, load_policy(POLICY), load_event(EVENT, s.snapshot()), "mincut", "ortools")
    s.close()
    assert len(at) == 1
    return at[0]


def test_recover_after_the_keys_went_writes_the_normalised_tombstones(store_at):
    """Uninterrupted (in this process), counting the checkpoint the keys' destruction passes; then a
    child process SIGKILLed at that checkpoint, ``memsteward recover`` (a process of its own), and an
    upper-cased and a re-spaced copy of the deleted text: refused, the tombstones as uninterrupted.
    Seen failing with the publication opening the roots instead of reading the barrier's digests
    (the copies acknowledged, p1 holding 1 digest instead of the uninterrupted run's)."""
    ref = import_document(store_at("ref"), DATA / "store.json")
    at = _keys_checkpoint(ref)
    expected = _stones(ref)
    assert expected["p1"] > 1  # the exact digest and the normalised ones

    db = import_document(store_at("killed"), DATA / "store.json")
    child = subprocess.run([sys.executable, "-c", CHILD, db, POLICY, EVENT, str(at)], cwd=ROOT,
                           env=dict(os.environ), capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr
    s = Store.open(db)
    assert s.unfinished_event() is not None  # killed before the publication committed
    s.close()
    rec = subprocess.run([MEMGOV, "recover", "--store", db], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert rec.returncode == 0, rec.stderr
    assert _stones(db) == expected
    assert [_written(db, t) for t in (TEXT.upper(), TEXT.replace(" ", "  "), TEXT)] == ["tombstone"] * 3


def test_a_root_the_barrier_recorded_no_digests_for_is_opened_and_tombstoned_alike(tmp_path):
    """A version whose normalised digests the barrier did not record (an event barriered before schema 10,
    or by a barrier that recorded some roots only) is opened by the publication, whose tombstones are then
    exactly those of a publication that read them from the barrier's records: the same digest rows per
    root, on copies of one SQLite store (same keys), for none, one and both of two roots recorded; and the
    records are gone after the publication."""
    import shutil

    base = import_document(str(tmp_path / "base.db"), DATA / "store.json")
    runs: dict[str, dict] = {}
    for name, keep in (("all", {"p1", "p2"}), ("none", set()), ("p2", {"p2"}), ("p1", {"p1"})):
        db = str(tmp_path / f"{name}.db")
        for suffix in ("", "-wal", ".keys", ".keys-wal"):  # the store and its key file, each with its WAL
            if os.path.exists(base + suffix):
                shutil.copyfile(base + suffix, db + suffix)
        s = Store.open(db)
        record = s._record_erasing_digests
        s._record_erasing_digests = lambda event_id, roots, keep=keep, record=record: record(  # type: ignore[method-assign]
            event_id, [r for r in roots if r in keep])
        run_event(s, load_policy(POLICY), parse_event({"type": "delete", "roots": ["p1", "p2"]}, s.snapshot()))
        assert s.conn.execute("SELECT count(*) FROM erasing_digests").fetchone()[0] == 0
        runs[name] = {root: sorted(ds) for (root, _), ds in s.erasure_state()[1].items()}
        s.close()
    assert set(runs["all"]) == {"p1", "p2"} and len(runs["all"]["p1"]) > 1 and len(runs["all"]["p2"]) > 1
    assert runs["none"] == runs["all"] and runs["p2"] == runs["all"] and runs["p1"] == runs["all"]


LEGACY_CHILD = CHILD.replace("store = CrashingStore(Store.open(sys.argv[1])", """inner = Store.open(sys.argv[1])
inner._record_erasing_digests = lambda event_id, roots: None  # a barrier from before schema 10: no digests
store = CrashingStore(inner""")


def test_recover_of_a_legacy_event_after_the_keys_went_reads_its_roots_as_erased(store_at):
    """An event whose barrier recorded no normalised digests (barriered before schema 10), killed after
    its publication destroyed the keys: ``recover`` opens the roots' versions to digest them, finds
    their keys gone and reads them as erased (only the exact digest is tombstoned; the normalised ones
    went with the key), and completes the event. Seed-5 survivor store/erasure.py:83
    (``shredded_as_erased=True`` → ``False``): recover then failed on the destroyed key."""
    ref = import_document(store_at("ref"), DATA / "store.json")
    at = _keys_checkpoint(ref, legacy=True)
    assert _stones(ref)["p1"] > 1  # uninterrupted, the publication opened the roots itself

    db = import_document(store_at("killed"), DATA / "store.json")
    child = subprocess.run([sys.executable, "-c", LEGACY_CHILD, db, POLICY, EVENT, str(at)], cwd=ROOT,
                           env=dict(os.environ), capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr
    rec = subprocess.run([MEMGOV, "recover", "--store", db], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert rec.returncode == 0, rec.stderr
    s = Store.open(db)
    try:
        assert s.unfinished_event() is None
    finally:
        s.close()
    assert _stones(db)["p1"] == 1  # the exact digest: the normalised forms needed the text, whose key is gone
    s = Store.open(db)
    try:  # the exact content is still refused (its digest was stored with the version)
        with pytest.raises(WriteRefused) as refused:
            s.record({"id": "again", "kind": "record", "content": {"text": TEXT, "label": "allergy"}}, wait=0)
        assert refused.value.reason == "tombstone"
    finally:
        s.close()
