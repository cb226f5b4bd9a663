"""Streamed JSON output: `store export`, `store serve --json` and `store log --json` write the same
bytes as ``json.dumps(document, indent=2)`` without holding the document.

* :func:`memsteward.jsonio.write_streamed` equals ``json.dumps(…, indent=2)`` on generated documents
  (top-level arrays, objects whose values are arrays or anything else, nesting, empty arrays and
  objects, non-ASCII and line-separator characters) — the reference is the standard library's encoder;
* on every backend the three commands print exactly the reference document built from the store's
  in-memory snapshot, the audit rows and the servable artifacts (``--output`` writes the same bytes
  and leaves no partial file); PostgreSQL's server-side cursor returns every row when it fetches
  them two at a time;
* memory: exporting a store holding 60 MB of content grows the exporting process's peak by far less
  than the content (the whole document held at once grows it by about the content);
* one state: an export read while another process records an artifact and its edge holds neither
  (it imports again); a write through the same store inside the read snapshot is refused;
* ``--output`` writes beside the named file and renames over it (its mode and a symlink stay); an
  export failing midway leaves the old file as it was; on stdout the failure exits non-zero.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memsteward.jsonio import write_streamed
from memsteward.repair.artifacts import Artifact, Edge, Snapshot
from memsteward.store import Store

MEMSTEWARD = str(Path(sys.executable).parent / "memsteward")

scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=8)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                          max_size=3), max_leaves=12)


def _streamed(doc):
    """The document as write_streamed takes it: arrays (top level, or an object's values) as iterators."""
    if isinstance(doc, list):
        return iter(doc)
    return {k: iter(v) if isinstance(v, list) else v for k, v in doc.items()}


@settings(max_examples=200)
@given(st.lists(values, max_size=4) | st.dictionaries(st.text(max_size=6), st.lists(values, max_size=3) | values,
                                                      max_size=4))
def test_write_streamed_equals_json_dumps(doc):
    out: list[str] = []
    write_streamed(out.append, _streamed(doc))
    assert "".join(out) == json.dumps(doc, indent=2)


def _snapshot() -> Snapshot:
    arts = {f"a{k}": Artifact(f"a{k}", "record" if k % 3 else "skill", None if k % 3 else "chain", 1,
                              {"text": f"line {k}\nnext \u2028 é ✓", "n": k}, {"cost": 0.5 + k}, "servable")
            for k in range(7)}
    edges = tuple(Edge(f"a{k}", f"a{k + 1}") for k in range(6)) + (Edge("a0", "a6", "semantic"),)
    return Snapshot(arts, edges)


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([MEMSTEWARD, *args], capture_output=True, text=True, timeout=300)


def test_export_serve_and_log_print_the_reference_documents(store_at, tmp_path):
    loc = store_at("streamed")
    store = Store.open(loc, create=True)
    store.import_snapshot(_snapshot())
    with store.transaction() as c:  # one artifact not servable: serve leaves it out
        c.execute(store.q.set_state_withdrawn, ("a3",))
    reference_export = store.snapshot().as_dict()
    reference_serve = [a.as_dict() for a in store.snapshot().artifacts.values() if a.state == "servable"]
    reference_log = [{"seq": s, "at": at, "event_id": ev, "action": a, "artifact_id": art, "detail": json.loads(d)}
                     for s, at, ev, a, art, d, _h in store.audit_rows()]
    store.close()
    assert len(reference_serve) == 6 and reference_log
    for args, reference in ((("store", "export", "--store", loc), reference_export),
                            (("store", "serve", "--store", loc, "--json"), reference_serve),
                            (("store", "log", "--store", loc, "--json"), reference_log)):
        r = _run(*args)
        assert r.returncode == 0, r.stderr
        assert r.stdout == json.dumps(reference, indent=2) + "\n", args
    # --progress draws on stderr only: the same bytes on stdout, the bar ends at every row (7 + 7)
    r = _run("store", "export", "--store", loc, "--progress")
    assert r.returncode == 0 and r.stdout == json.dumps(reference_export, indent=2) + "\n"
    assert "14/14" in r.stderr
    out = tmp_path / "export.json"
    assert _run("store", "export", "--store", loc, "--output", str(out)).returncode == 0
    assert out.read_text(encoding="utf-8") == json.dumps(reference_export, indent=2) + "\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("export.json")) == ["export.json"]


def test_postgres_stream_fetches_in_rounds(pg_url):
    store = Store.open(pg_url, create=True)
    store.import_snapshot(_snapshot())
    rows = list(store.conn.stream("SELECT id FROM artifacts ORDER BY id", (), size=2))
    assert rows == [(f"a{k}",) for k in range(7)]
    assert list(store.conn.stream("SELECT id FROM artifacts WHERE id > %s ORDER BY id", ("a4",), size=2)) == [
        ("a5",), ("a6",)]
    store.close()


_PEAK = """
import resource, sys
from memsteward.cli import main
sys.argv = ["memsteward", "store", "export", "--store", sys.argv[1], "--output", sys.argv[2]]
try:
    main()
except SystemExit:
    pass
with open("/proc/self/status") as fh:
    print([int(line.split()[1]) // 1024 for line in fh if line.startswith("VmHWM")][0], file=sys.stderr)
"""


def _export_peak_mb(db: str, out: str) -> int:
    r = subprocess.run([sys.executable, "-c", _PEAK, db, out], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return int(r.stderr.strip().splitlines()[-1])


def test_export_memory_does_not_grow_with_the_store(tmp_path):
    small, big = str(tmp_path / "small.db"), str(tmp_path / "big.db")
    text = "x" * 20_000
    for path, n in ((small, 10), (big, 3_000)):  # big: 3,000 artifacts × 20 KB = 60 MB of content
        st_ = Store(path)
        st_.import_snapshot(Snapshot({f"a{k:05d}": Artifact(f"a{k:05d}", "record", None, 1, {"text": text + str(k)})
                                      for k in range(n)}, ()))
        st_.close()
    base = _export_peak_mb(small, str(tmp_path / "small.json"))
    peak = _export_peak_mb(big, str(tmp_path / "big.json"))
    assert os.path.getsize(tmp_path / "big.json") > 60_000_000
    assert peak - base < 20, (base, peak)  # the document held at once: about the content, 60 MB, more


def test_copy_progress_counts_every_row(tmp_path):
    src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    store = Store(src)
    store.import_snapshot(_snapshot())
    total = sum(store.row_counts().values())
    store.close()
    r = _run("store", "copy", src, dst, "--progress", "--json")
    assert r.returncode == 0, r.stderr
    assert sum(json.loads(r.stdout)["rows"].values()) == total and f"{total}/{total}" in r.stderr


def test_export_is_one_state_while_another_process_writes(store_at):
    loc = store_at("snapshot")
    store, other = Store.open(loc, create=True), None
    store.import_snapshot(_snapshot())
    before = store.export()
    try:
        other = Store.open(loc)
        with store.read_snapshot():
            doc = store.export_stream()
            arts = list(doc["artifacts"])
            other.record({"id": "z", "kind": "summary", "content": {"text": "new"}}, inputs=["a0"])
            edges = list(doc["edges"])
            assert {"artifacts": arts, "edges": edges} == before  # neither z nor its edge
            try:
                store.record({"id": "y", "kind": "summary", "content": {"text": "no"}}, inputs=["a0"])
            except Exception:  # noqa: BLE001 — refused: a write inside the read snapshot
                pass
            else:
                raise AssertionError("a write inside the read snapshot was accepted")
        assert "y" not in {a["id"] for a in store.export()["artifacts"]}
        assert "z" in {a["id"] for a in store.export()["artifacts"]}  # the snapshot ended: the write is seen
    finally:
        store.close()
        if other is not None:
            other.close()


def test_output_file_is_replaced_and_left_as_it_was_on_failure(tmp_path):
    db = str(tmp_path / "s.db")
    store = Store(db)
    store.import_snapshot(_snapshot())
    target = tmp_path / "private.json"
    target.write_text("old")
    target.chmod(0o600)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert _run("store", "export", "--store", db, "-o", str(link)).returncode == 0
    assert link.is_symlink() and oct(target.stat().st_mode & 0o777) == "0o600"
    assert json.loads(target.read_text()) == store.export()
    with store.transaction() as c:  # a damaged row midway through the artifacts
        c.execute("UPDATE versions SET meta = '{' WHERE id = 'a3'")
    store.close()
    before = target.read_bytes()
    r = _run("store", "export", "--store", db, "-o", str(target))
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert target.read_bytes() == before and oct(target.stat().st_mode & 0o777) == "0o600"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".memsteward-")) == []
    r = _run("store", "export", "--store", db)
    assert r.returncode != 0 and "Traceback" not in r.stderr
