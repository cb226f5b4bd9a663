"""Systematic tests of the write path (store/writepath.py) and of erasure at publication (store/erasure.py).

Written for issue 33's targeted mutation runs of the store modules (bench/mutation-targeted-store.md).
The write path: every refusal's field path (a single write and a batch), its audit row, the chained
``record`` row (a batch's manifest recomputed here from the stored digests), ``before_commit``. Erasure:
the physical step's counts with 0, 1 and 2 keys kept alive, the tombstone commitments when a digest is
already held by an earlier event or another root, ``erasure_state`` / ``erased_refs`` against the
stored rows, and the erased text gone from the real SQLite files. Both backends where a store is used.
"""

from __future__ import annotations

import hashlib

import pytest

from memsteward.errors import InputError, WriteRefused
from memsteward.policy.loader import load_policy
from memsteward.repair.auditchain import tombstone_commitment
from memsteward.repair.events import parse_event
from memsteward.repair.execute import run_event
from memsteward.repair.writes import canonical_json

POLICY = "policies/default.yaml"


def _event(store, ev: dict):
    return run_event(store, load_policy(POLICY), parse_event(ev, store.snapshot()))


def _stored_sha(store, ident: str, version: int) -> str:
    ph = "?" if store.backend == "sqlite" else "%s"
    (sha,) = store.conn.execute(f"SELECT sha256 FROM versions WHERE id = {ph} AND version = {ph}", (ident, version)).fetchone()
    return sha


# --------------------------------------------------------------------------- the write path


def test_a_single_write_audits_its_version_digest_inputs_and_semantic_links(store_factory):
    s = store_factory()
    s.record({"id": "a", "kind": "record", "content": "alpha"})
    s.record({"id": "b", "kind": "record", "content": "beta"})
    out = s.record({"id": "c", "kind": "summary", "content": {"t": "alpha beta"}}, inputs=["b", "a"], semantic=["a"])
    assert (out.id, out.version, out.state) == ("c", 1, "servable")
    last = s.audit_log()[-1]
    assert (last["action"], last["artifact_id"]) == ("record", "c")
    assert last["detail"] == {"version": 1, "sha256": _stored_sha(s, "c", 1), "inputs": ["b", "a"], "semantic": ["a"]}
    again = s.record({"id": "c", "kind": "summary", "content": "v2"}, inputs=["a"])
    assert again.version == 2 and s.audit_log()[-1]["detail"]["version"] == 2


def test_a_batch_audits_one_row_pinning_its_manifest(store_factory):
    s = store_factory()
    s.record({"id": "a", "kind": "record", "content": "alpha"})
    writes = [{"id": "m", "kind": "record", "content": "m one"},
              {"id": "n", "kind": "summary", "content": {"x": 1}, "inputs": ["m", "a"], "semantic": ["a"]},
              {"id": "m", "kind": "record", "content": "m two"}]
    before = len(s.audit_log())
    out = s.record_many(writes)
    assert [(a.id, a.version) for a in out] == [("m", 1), ("n", 1), ("m", 2)]
    log = s.audit_log()
    assert len(log) == before + 1
    lines = [[w["id"], v, _stored_sha(s, w["id"], v), w.get("inputs", [])] for w, v in zip(writes, (1, 1, 2))]
    manifest = hashlib.sha256(b"".join(canonical_json(line).encode("utf-8") + b"\n" for line in lines)).hexdigest()
    assert (log[-1]["action"], log[-1]["artifact_id"]) == ("record", None)
    assert log[-1]["detail"] == {"artifacts": 3, "manifest_sha256": manifest}
    # both versions of m are stored and indexed; the edges of n are its influence and semantic links
    assert [v for v, erased, _ in s.versions("m")] == [1, 2]
    ph = "?" if s.backend == "sqlite" else "%s"
    assert set(s.conn.execute(f"SELECT src, type FROM edges WHERE dst = {ph}", ("n",)).fetchall()) == \
        {("m", "influence"), ("a", "influence"), ("a", "semantic")}


@pytest.mark.parametrize("batch", [False, True])
def test_every_refusal_names_its_field_with_the_batch_prefix_only_in_a_batch(store_factory, batch):
    s = store_factory()
    s.record({"id": "a", "kind": "record", "content": "alpha"})
    s.record({"id": "sk", "kind": "skill", "arch": "chain", "content": {"calls": []}})
    s.record({"id": "gone", "kind": "record", "content": "Quiet Mews number twelve, the secret address"})
    _event(s, {"type": "delete", "roots": ["gone"]})
    pre = "writes[1]." if batch else ""

    def attempt(write):
        if batch:
            return s.record_many([{"id": "fine", "kind": "record", "content": "fine"}, write], wait=0)
        return s.record_many([write], wait=0)

    cases = [
        ({"id": "x", "kind": "record", "content": "x", "inputs": ["a", "ghost"]}, InputError, "inputs[1]",
         "inputs names unknown artifact 'ghost'"),
        ({"id": "x", "kind": "record", "content": "x", "semantic": ["ghost"]}, InputError, "semantic[0]",
         "semantic names unknown artifact 'ghost'"),
        ({"id": "a", "kind": "summary", "content": "x"}, InputError, "kind",
         "artifact 'a' is a record; a new version keeps kind and arch"),
        ({"id": "sk", "kind": "skill", "arch": "neural", "content": "x"}, InputError, "kind",
         "artifact 'sk' is a skill/chain; a new version keeps kind and arch"),
        ({"id": "gone", "kind": "record", "content": "new text"}, WriteRefused, "id", "artifact 'gone' is erased"),
        ({"id": "x", "kind": "summary", "content": "x", "inputs": ["a", "gone"]}, WriteRefused, "inputs[1]",
         "input 'gone' is erased"),
        ({"id": "x", "kind": "record", "content": "Quiet Mews number twelve, the secret address"}, WriteRefused,
         "content", "its content was erased by a delete event (tombstone of 'gone')"),
    ]
    for write, error, field, words in cases:
        n = len(s.audit_log())
        with pytest.raises(error) as exc:
            attempt(write)
        assert (exc.value.field, words in exc.value.message) == (pre + field, True), (exc.value.field, exc.value.message)
        assert "fine" not in s.states()                      # the batch is all or nothing
        refused = isinstance(exc.value, WriteRefused) and exc.value.reason in ("fenced", "tombstone")
        assert len(s.audit_log()) == n + (1 if refused else 0)
        if refused:
            last = s.audit_log()[-1]
            assert (last["action"], last["artifact_id"]) == ("refuse", write["id"])
            assert last["detail"]["reason"] == exc.value.reason
            if exc.value.reason == "fenced":
                assert last["detail"] == {"reason": "fenced", "inputs": {"gone": "erased"}}
            else:
                assert set(last["detail"]) == {"reason", "sha256"} and len(last["detail"]["sha256"]) == 64


def test_an_input_may_name_the_id_being_written(store_factory):
    s = store_factory()
    a = s.record({"id": "self", "kind": "record", "content": "itself"}, inputs=["self"])
    assert a.version == 1 and ("self", "self") in s.snapshot().influence_edges()


def test_before_commit_runs_once_for_a_committed_write_and_never_for_a_refused_one(store_factory):
    s = store_factory()
    calls: list[int] = []
    s.record({"id": "a", "kind": "record", "content": "a"}, before_commit=lambda: calls.append(len(calls)))
    assert calls == [0]
    s.record_many([{"id": "b", "kind": "record", "content": "b"}, {"id": "c", "kind": "record", "content": "c"}],
                  before_commit=lambda: calls.append(len(calls)))
    assert calls == [0, 1]
    with pytest.raises(InputError):
        s.record({"id": "a", "kind": "summary", "content": "x"}, before_commit=lambda: calls.append(99))
    s.record({"id": "gone", "kind": "record", "content": "Quiet Mews number twelve, the secret address"})
    _event(s, {"type": "delete", "roots": ["gone"]})
    for refused in ({"id": "d", "kind": "summary", "content": "d", "inputs": ["gone"]},            # fenced
                    {"id": "d", "kind": "record", "content": "Quiet Mews number twelve, the secret address"}):
        with pytest.raises(WriteRefused):   # its refusal row commits, the write's own commit hook does not run
            s.record_many([refused], before_commit=lambda: calls.append(99))
    assert calls == [0, 1]


# --------------------------------------------------------------------------- erasure at publication


DOC = {"artifacts": [
    {"id": "root", "kind": "record", "content": "The user Zq7-ORCHID-LANTERN-4411 lives at 12 Quiet Mews."},
    {"id": "other", "kind": "record", "content": "The user likes green tea in the morning."},
    {"id": "sum", "kind": "summary", "content": "The user Zq7-ORCHID-LANTERN-4411 lives at 12 Quiet Mews. "
                                                "The user likes green tea in the morning.",
     "meta": {"transform": "extractive", "summary_sentences": 2}},
], "edges": [{"src": "root", "dst": "sum", "type": "influence"}, {"src": "other", "dst": "sum", "type": "influence"}]}


def _erasure_store(store):
    from memsteward.repair.artifacts import parse_store_document

    store.import_snapshot(parse_store_document(DOC, "doc"))
    store.record({"id": "root", "kind": "record", "content": "The user Zq7-ORCHID-LANTERN-4411 moved to 14 Quiet Mews."})
    store.record({"id": "root", "kind": "record", "content": "Zq7-ORCHID-LANTERN-4411, 16 Quiet Mews, third move."})
    return store


@pytest.mark.parametrize("kept", [0, 1, 2])
def test_the_physical_step_counts_the_keys_that_outlived_destruction(store_at, monkeypatch, kept):
    """Destruction that keeps ``kept`` of the erased versions' keys (a broken key store): the row counts
    every erased version, ``keys_alive`` the kept keys, ``keys_destroyed`` the rest, and the step is
    complete only with none kept."""
    from memsteward.shred.vault import Vault
    from memsteward.store import Store

    spared: set = set()
    real = Vault.destroy
    monkeypatch.setattr(Vault, "destroy", lambda self, refs: real(self, [r for r in refs if r not in spared]))
    s = _erasure_store(Store.open(store_at("k"), create=True))
    try:
        versions = [("root", 1), ("root", 2), ("root", 3)]
        keys = s.key_refs(versions)
        assert len(set(keys.values())) == 3   # each version under a key of its own
        spared.update(keys[v] for v in versions[:kept])
        _event(s, {"type": "delete", "roots": ["root"]})
        (row,) = [r["detail"] for r in s.audit_log() if r["action"] == "physical-erasure"]
        erased = s.erased_refs(row_event(s))
        assert set(versions) <= set(erased)
        assert row["versions"] == len(erased) and row["keys_alive"] == kept
        assert row["keys_destroyed"] == len(erased) - kept
        assert row["complete"] is (kept == 0) and row["sealed"] is True
        assert row.get("checkpoint") is (True if s.backend == "sqlite" else None)
        assert s.vault.alive(set(keys.values())) == {keys[v] for v in versions[:kept]}
    finally:
        s.close()


def row_event(s) -> int:
    (e,) = {r["event_id"] for r in s.audit_log() if r["action"] == "physical-erasure"}
    return int(e)


def test_erasure_state_and_erased_refs_are_the_stored_rows(store_at):
    from memsteward.store import Store

    s = _erasure_store(Store.open(store_at("e"), create=True))
    try:
        plan = _event(s, {"type": "delete", "roots": ["root"]})
        e = row_event(s)
        versions, stones = s.erasure_state()
        ph = "?" if s.backend == "sqlite" else "%s"
        erased_rows = {(i, int(v)): sha for i, v, sha in s.conn.execute("SELECT id, version, sha256 FROM versions "
                                                                        "WHERE erased = 1")}
        assert versions == erased_rows and {("root", 1), ("root", 2), ("root", 3)} <= set(versions)
        assert all(sha is not None and len(sha) == 64 for sha in versions.values())
        table = {}
        for d, r, ev in s.conn.execute(f"SELECT digest, root, event_id FROM tombstones WHERE event_id = {ph}", (e,)):
            table.setdefault((r, int(ev)), []).append(d)
        assert {k: sorted(v) for k, v in stones.items()} == {k: sorted(v) for k, v in table.items()}
        assert set(stones) == {("root", e)}    # only the deleted root is tombstoned
        assert sorted(s.erased_refs(e)) == sorted(versions) and s.erased_refs(e + 1) == []
        # each erase row lists its artifact's versions with their digests, the root's row its tombstones
        rows = {r["artifact_id"]: r["detail"] for r in s.audit_log_of(e) if r["action"] == "erase"}
        assert rows["root"]["versions"] == [{"version": v, "sha256": versions[("root", v)]} for v in (1, 2, 3)]
        assert rows["root"]["tombstones"] == tombstone_commitment(stones[("root", e)])
        assert all("tombstones" not in d for i, d in rows.items() if i != "root")
        assert s.pending_physical_erasure() == [] and plan.event.type == "delete"
    finally:
        s.close()


def test_a_privacy_correction_erases_the_versions_up_to_its_base_and_keeps_the_replacement(store_at):
    from memsteward.store import Store

    s = _erasure_store(Store.open(store_at("p"), create=True))
    try:
        fixed = {"id": "root", "kind": "record", "content": "The user moved; no address kept."}
        _event(s, {"type": "correct", "roots": ["root"], "replacements": [fixed], "privacy": True})
        e = row_event(s)
        assert [(v, erased) for v, erased, _ in s.versions("root")] == [(1, True), (2, True), (3, True), (4, False)]
        assert s.get("root").content == fixed["content"]
        assert sorted(v for i, v in s.erased_refs(e) if i == "root") == [1, 2, 3]
        _, stones = s.erasure_state()
        assert ("root", e) in stones and len(stones[("root", e)]) >= 3
    finally:
        s.close()


def test_tombstone_commitments_count_only_this_event_s_rows_of_each_root(store_factory):
    """A digest held already (by another root of the same event, by another root of an earlier event, or
    by the same root in an earlier event: a privacy correction that kept a string) stays its first
    owner's, so a later ``erase`` row does not pin it: each commitment equals the tombstones table's rows
    of (root, event), and the shared normalised string is owned by the first event alone."""
    s = store_factory()
    shared = "Bob's bank PIN is 482913"            # ≥ 20 normalised characters: a tombstone of its own
    s.record({"id": "r1", "kind": "record", "content": {"t": shared, "u": "first root only"}})
    s.record({"id": "r2", "kind": "record", "content": {"t": "bob's BANK pin is 482913.", "u": "second root"}})
    s.record({"id": "r3", "kind": "record", "content": {"t": "  BOB'S bank PIN is 482913 ", "u": "third root"}})
    s.record({"id": "r4", "kind": "record", "content": {"t": "Bob's bank PIN is 482913!", "u": "fourth root"}})
    fixed = {"id": "r4", "kind": "record", "content": {"t": "Bob's bank PIN is 482913!", "u": "kept, corrected"}}
    _event(s, {"type": "correct", "roots": ["r4"], "replacements": [fixed], "privacy": True})
    _event(s, {"type": "delete", "roots": ["r1"]})
    _event(s, {"type": "delete", "roots": ["r2", "r3"]})
    _event(s, {"type": "delete", "roots": ["r4"]})   # r4's replacement holds the string its own first event owns
    _, stones = s.erasure_state()
    owners = {}
    for (root, ev), ds in stones.items():
        for d in ds:
            owners[d] = (root, ev)
    erase_rows = [r for r in s.audit_log() if r["action"] == "erase" and "tombstones" in r["detail"]]
    assert len(erase_rows) == 5   # r4 corrected; r1; r2, r3; r4 deleted
    for r in erase_rows:
        key = (r["artifact_id"], int(r["event_id"]))
        assert r["detail"]["tombstones"] == tombstone_commitment(stones.get(key, [])), key
    # the shared normalised string has one owner, r1's event; every later root holds fewer rows than it inserted
    counts = {(r["artifact_id"], int(r["event_id"])): r["detail"]["tombstones"]["count"] for r in erase_rows}
    assert len({ev for _, ev in counts}) == 4
    by_event = sorted(counts.items(), key=lambda kv: kv[0][1])
    first_root = by_event[0][0]
    assert first_root[0] == "r4" and sum(1 for o in owners.values() if o == first_root) == counts[first_root]


def test_the_erased_text_is_gone_from_the_sqlite_files(tmp_path):
    """The real bytes: after a delete on a file store, no window of any erased version's text is in the
    database, its WAL or journal (searched raw and JSON-escaped), while the kept text is."""
    from memsteward.repair.erasure import fingerprints, scan, store_files
    from memsteward.store import Store

    path = str(tmp_path / "f.db")
    s = _erasure_store(Store.open(path, create=True))
    try:
        erased_texts = [s.version_of("root", v).content for v in (1, 2, 3)] + [s.get("sum").content]
        kept = s.get("other").content
        _event(s, {"type": "delete", "roots": ["root"]})
        s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        files = store_files(path)
        assert files and files[0] == path
        assert scan(files, fingerprints(erased_texts))["found"] == {}
        if not s.sealed:
            assert scan(files, fingerprints([kept]))["found"] != {}
    finally:
        s.close()



def test_erasure_reads_and_erases_its_targets_in_slices_of_500_ids(store_factory):
    """Publication erases its targets' versions reading them 500 ids at a time (and looks their keys
    up 500 ids at a time): 1,001 targets, two of them limited to their first version, cross two slice
    boundaries; every targeted version is nulled, its key destroyed and listed in an ``erase`` row, and
    nothing else is."""
    from memsteward.repair.artifacts import parse_store_document

    s = store_factory()
    ids = [f"t{k:04d}" for k in range(1001)]
    s.import_snapshot(parse_store_document({"artifacts": [{"id": i, "kind": "record", "content": f"text of {i}"}
                                                          for i in ids + ["keep"]], "edges": []}, "<t>"))
    for i in ("t0000", "t0500", "t1000"):
        s.record({"id": i, "kind": "record", "content": f"second text of {i}"})
    keys = s.key_refs([(i, 1) for i in ids + ["keep"]] + [(i, 2) for i in ("t0000", "t0500", "t1000")])
    with s.transaction():
        (e,) = s.conn.execute(s.q.insert_event, ("delete", "{}", "p", "{}", "running", "now")).fetchone()
    targets: dict = {i: None for i in ids}
    targets["t0500"] = targets["t1000"] = 1     # only their first version
    with s.transaction():
        refs = s._erase_versions(int(e), targets, frozenset()).refs
    want = {(i, 1) for i in ids} | {("t0000", 2)}
    assert set(refs) == want and len(refs) == len(want)
    assert {(i, v) for i in ids + ["keep"] for v, erased, _ in s.versions(i) if erased} == want
    assert sorted(s.erased_refs(int(e))) == sorted(want)
    assert s.vault.alive({keys[r] for r in want}) == set()
    assert s.vault.alive({keys[("keep", 1)], keys[("t0500", 2)], keys[("t1000", 2)]}) == \
        {keys[("keep", 1)], keys[("t0500", 2)], keys[("t1000", 2)]}


CELLS = [("record", None, "a record"), ("summary", None, "a summary"), ("profile", None, {"name": "x"}),
         ("skill", "prompt", "You answer briefly."), ("skill", "chain", {"calls": []})]


def test_a_new_version_keeps_kind_and_arch_whichever_way_they_would_change(store_factory):
    """Every ordered pair of (kind, arch) cells: the same cell records version 2; any other is refused
    (InputError on ``kind``, naming the stored kind and arch), whether the new cell sorts before or
    after the stored one."""
    s = store_factory()
    for k, (kind, arch, content) in enumerate(CELLS):
        for j, (kind2, arch2, content2) in enumerate(CELLS):
            ident = f"c{k}{j}"
            s.record({"id": ident, "kind": kind, "arch": arch, "content": content})
            again = {"id": ident, "kind": kind2, "arch": arch2, "content": content2}
            if (kind, arch) == (kind2, arch2):
                assert s.record(again).version == 2
                continue
            with pytest.raises(InputError) as exc:
                s.record(again)
            shown = kind + ("/" + arch if arch else "")
            assert (exc.value.field, exc.value.message) == (
                "kind", f"artifact {ident!r} is a {shown}; a new version keeps kind and arch"), (kind, arch, kind2, arch2)
            assert [v for v, _, _ in s.versions(ident)] == [1]


def test_every_written_version_is_sealed_ahead_under_a_pooled_key(store_factory):
    """A write seals its versions before its transaction, under pooled keys made ahead (no key-store
    commit while the store's write lock is held), at the version each will get: the first version of
    an id, every later one, and an id written twice in one batch. Each version names its own pooled
    key (``versions.dek``), and opens to what was written."""
    s = store_factory()
    s.record({"id": "a", "kind": "record", "content": "a1"})
    for k in range(2, 5):
        s.record({"id": "a", "kind": "record", "content": f"a{k}"})
    s.record_many([{"id": "a", "kind": "record", "content": "a5"}, {"id": "b", "kind": "record", "content": "b1"},
                   {"id": "a", "kind": "record", "content": "a6"}])
    deks = {(i, int(v)): d for i, v, d in s.conn.execute("SELECT id, version, dek FROM versions")}
    assert sorted(deks) == [("a", v) for v in range(1, 7)] + [("b", 1)]
    assert all(d is not None for d in deks.values()), deks          # none sealed late under a key of its own
    assert len(set(deks.values())) == len(deks)
    assert [s.version_of("a", v).content for v in range(1, 7)] == [f"a{v}" for v in range(1, 7)]
