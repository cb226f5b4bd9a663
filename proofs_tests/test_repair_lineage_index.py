"""The lineage index (issue 11 × issue 12 item 3): the content scan without a whole-store read.

The reference is the scan as defined: :func:`~memsteward.repair.lineage.untracked` over EVERY
servable artifact (read through the retrieval view ``serve()``, not through the index). On random
stores with copies of roots' text injected at the paraphrase boundary (runs of n − 1, n and n + 1
words, changed case and punctuation), the indexed lookup finds exactly what the scan finds, on
SQLite, PostgreSQL and in-memory snapshots. The index rows always equal the trigram hashes of the
current content (recomputed independently), are written in the write's own transaction, and
disappear with erased content.
"""

from __future__ import annotations

import hashlib
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shred_helpers import to_plaintext

from memsteward.policy.loader import load_policy
from memsteward.repair import lineage
from memsteward.repair.artifacts import parse_store_document
from memsteward.repair.events import parse_event
from memsteward.repair.execute import run_event
from memsteward.repair.lineage import untracked
from memsteward.store import Store
from memsteward.store.schema import SCHEMA_VERSION

pytestmark = pytest.mark.usefixtures("store_backend")

VOCAB = ["alice", "tea", "paris", "likes", "the", "river", "walks", "on", "sundays", "poetry", "quiet", "mews",
         "orchid", "lantern", "garden", "blue", "house", "north", "coffee", "train", "winter", "lake"]


def ref_hash(ws: list[str], key: bytes = b"") -> int:
    """The index key, written out independently of lineage.shingle_hash: BLAKE2b-64, keyed in a sealed
    store with HMAC-SHA256(index key, "memsteward-shingles") (memsteward.shred.digests)."""
    return int.from_bytes(hashlib.blake2b(" ".join(ws).encode(), digest_size=8, key=key).digest(), "big", signed=True)


def ref_rows(store: Store) -> set[tuple[int, str]]:
    """What the index must hold: (hash of every 3-word run of a string, id) for each current content."""
    import hmac
    import re

    key = hmac.new(store.vault._index, b"memsteward-shingles", hashlib.sha256).digest() if store.sealed else b""
    out = set()
    values = [(i, v) for i in store.states() for v, erased, _ev in store.versions(i) if not erased]
    for ident, version in values:  # every version it holds, meta strings too (issue 25)
        a = store.version_of(ident, version)
        stack = [a.content, dict(a.meta)]
        while stack:
            v = stack.pop()
            if isinstance(v, str):
                ws = [w.lower() for w in re.findall(r"\w+", v)]
                out |= {(ref_hash(ws[k:k + 3], key), a.id) for k in range(len(ws) - 2)}
            elif isinstance(v, dict):
                stack += list(v.values())
            elif isinstance(v, list):
                stack += v
    return out


def index_rows(store: Store) -> set[tuple[int, str]]:
    return {(int(h), i) for h, i in store.conn.execute("SELECT h, id FROM shingles")}


def scan(store: Store, roots: dict, n: int, m: int) -> dict:
    """The reference: the content scan over the content and meta of every stored version of every
    servable artifact and of every one an earlier event left withdrawn (issue 25)."""
    held = [(i, [[a.content, dict(a.meta)] for v, erased, _ev in store.versions(i) if not erased
                 for a in [store.version_of(i, v)]])
            for i, (state, _v) in sorted(store.states().items())
            if state in ("servable", "republished", "withdrawn") and i not in roots]
    return untracked(roots, held, n, m)


def indexed(source, roots: dict, n: int, m: int) -> dict:
    return untracked(roots, [(i, c) for i, c in source.shingle_candidates(roots, n) if i not in roots], n, m)


def _garble(words: list[str], rng: random.Random) -> str:
    """The same words, as the scan sees them: case and punctuation changed between words."""
    seps = [" ", ", ", " - ", ". ", "; ", " ("]
    return "".join((w.upper() if rng.random() < 0.3 else w.capitalize() if rng.random() < 0.3 else w)
                   + (rng.choice(seps) if k < len(words) - 1 else "") for k, w in enumerate(words))


@st.composite
def stores(draw):
    rng = random.Random(draw(st.integers(0, 2 ** 32)))
    n = draw(st.integers(3, 6))
    m = draw(st.integers(1, 3))
    vocab = VOCAB[:draw(st.integers(4, len(VOCAB)))]
    roots = {}
    arts = []
    for k in range(draw(st.integers(1, 2))):
        words = [rng.choice(vocab) for _ in range(rng.randint(0, 16))]
        content = (" ".join(words) if k % 2 == 0 else
                   {"text": " ".join(words[: len(words) // 2]), "more": [" ".join(words[len(words) // 2:])]})
        roots[f"root{k}"] = content
        arts.append({"id": f"root{k}", "kind": "record", "content": content})
    leaves = [ws for c in roots.values() for ws in lineage.words(c) if ws]
    for k in range(draw(st.integers(0, 14))):
        text = [rng.choice(vocab) for _ in range(rng.randint(0, 12))]
        if leaves and rng.random() < 0.7:  # inject a copy of a root's run: n − 1, n or n + 1 words, or longer
            ws = rng.choice(leaves)
            size = min(len(ws), max(1, n + rng.choice((-1, -1, 0, 0, 1, 4))))
            start = rng.randrange(0, len(ws) - size + 1)
            at = rng.randint(0, len(text))
            text[at:at] = ws[start:start + size]
        body = _garble(text, rng)
        content = body if rng.random() < 0.6 else {"summary": body, "tags": [rng.choice(vocab)]}
        state = rng.choice(("servable", "servable", "servable", "republished", "withdrawn", "erased"))
        arts.append({"id": f"a{k}", "kind": "summary", "content": content, "state": state})
    return {"artifacts": arts, "edges": []}, roots, n, m


@settings(max_examples=150, deadline=None)
@given(case=stores(), common=st.sampled_from([lineage.COMMON, 0, 1, 2]))
def test_indexed_lookup_finds_exactly_what_the_scan_finds(case, common):
    doc, roots, n, m = case
    old = lineage.COMMON
    lineage.COMMON = common  # 0–2: every window is "common", so the full-list path runs too
    try:
        store = Store()
        store.import_snapshot(parse_store_document(doc, "<test>"))
        expected = scan(store, roots, n, m)
        assert indexed(store, roots, n, m) == expected
        assert indexed(store.snapshot(), roots, n, m) == expected
        assert index_rows(store) == ref_rows(store)
        assert {i for i, _ in store.shingle_candidates(roots, n)} <= {
            i for i, (state, _v) in store.states().items() if state != "erased"}
    finally:
        lineage.COMMON = old


def test_the_boundary_is_the_scans_own():
    """n words of a root match (whatever the case and punctuation); n − 1 do not."""
    root = {"r": "The user zq7 orchid lantern 4411 lives at 12 quiet mews"}
    store = Store()
    store.import_snapshot(parse_store_document({"artifacts": [
        {"id": "r", "kind": "record", "content": root["r"]},
        {"id": "eight", "kind": "summary", "content": "Recap: USER, Zq7 orchid; lantern 4411 - lives AT 12 twelve"},
        {"id": "seven", "kind": "summary", "content": "user zq7 orchid lantern 4411 lives at"},
        {"id": "nested", "kind": "summary", "content": {"x": ["a", {"y": "zq7 orchid lantern 4411 lives at 12 quiet mews"}]}},
    ], "edges": []}, "<test>"))
    assert set(indexed(store, root, 8, 1)) == {"eight", "nested"} == set(scan(store, root, 8, 1))
    assert set(indexed(store, root, 7, 1)) == {"eight", "seven", "nested"} == set(scan(store, root, 7, 1))
    assert set(indexed(store, root, 8, 2)) == {"nested"} == set(scan(store, root, 8, 2))  # min_shared


def test_the_index_follows_writes_versions_and_erasure():
    policy = load_policy("policies/default.yaml")
    store = Store()
    store.record({"id": "r-secret", "kind": "record", "content": {"text": "Zq7 orchid lantern 4411 lives at 12 "
                                                                          "Quiet Mews with a blue door"}})
    store.record({"id": "r-keep", "kind": "record", "content": {"text": "The user reads poetry on Sundays."}})
    store.record({"id": "copy", "kind": "summary",
                  "content": "Recap: zq7 orchid lantern 4411 lives at 12 quiet mews."})  # no influence edge
    store.record({"id": "other", "kind": "summary", "content": "the user reads poetry on sundays by the lake"},
                 inputs=["r-keep"])
    assert index_rows(store) == ref_rows(store)
    store.record({"id": "other", "kind": "summary", "content": "a new version about the winter train"})
    assert index_rows(store) == ref_rows(store)  # the old version's trigrams stay: it still holds the text
    assert "other" in {i for i, _ in store.shingle_candidates({"q": "reads poetry on sundays by the lake"}, 3)}
    plan = run_event(store, policy, parse_event({"type": "delete", "roots": ["r-secret"]}, store.snapshot()))
    assert set(plan.untracked) == {"copy"}
    assert index_rows(store) == ref_rows(store)
    ids = {i for _, i in index_rows(store)}
    assert "r-secret" not in ids and "copy" not in ids  # erased content leaves no row
    secret = lineage.index_hashes("Zq7 orchid lantern 4411 lives at 12 Quiet Mews with a blue door", store._keyed)
    assert not {h for h, _ in index_rows(store)} & secret


def test_store_migrate_builds_the_index_of_a_store_from_before_it(tmp_path, store_backend, request):
    from memsteward.errors import InputError

    url = str(tmp_path / "old.db") if store_backend == "sqlite" else request.getfixturevalue("pg_schemas").url()
    store = Store.open(url, create=True)
    store.record({"id": "a", "kind": "record", "content": "alice likes tea in paris on sundays"})
    store.record({"id": "b", "kind": "summary", "content": {"t": ["Tea in Paris, on Sundays", "x"]}}, inputs=["a"])
    store.record({"id": "a", "kind": "record", "content": "alice now likes coffee in the winter"})
    assert index_rows(store) == ref_rows(store)
    store.conn.execute("DROP TABLE shingles")  # as written by a release of schema version 2 (in plaintext)
    store.conn.execute("UPDATE memsteward_schema SET version = 2 WHERE one = 1")
    to_plaintext(store)
    with pytest.raises(InputError, match="store migrate"):
        Store.open(url)
    again = Store.open(url, migrate=True)
    try:
        assert again.migrated == (2, SCHEMA_VERSION) and not again.sealed
        expected = index_rows(again)  # built by the migration, unkeyed until `migrate --encrypt`
        assert expected and expected == ref_rows(again)
        roots = {"r": "she likes tea in paris on sundays"}
        assert indexed(again, roots, 5, 1) == scan(again, roots, 5, 1) != {}
        from memsteward.store.encryption import encrypt_in_place
        encrypt_in_place(again)  # sealed: the index is rebuilt keyed, and finds the same
        assert again.sealed and index_rows(again) == ref_rows(again) and not index_rows(again) & expected
        assert indexed(again, roots, 5, 1) == scan(again, roots, 5, 1) != {}
    finally:
        again.close()


def test_the_index_is_written_in_the_writes_transaction():
    """A write refused part-way (a later item of the batch names an unknown input) leaves no index row."""
    from memsteward.errors import InputError

    store = Store()
    with pytest.raises(InputError):
        store.record_many([{"id": "a", "kind": "record", "content": "alice likes tea in paris"},
                           {"id": "b", "kind": "summary", "content": "tea in paris", "inputs": ["nope"]}])
    assert index_rows(store) == set()


def test_no_policy_can_ask_for_runs_shorter_than_the_index_unit():
    from annotated_types import Ge

    from memsteward.policy.model import LineageSpec

    bounds = [m.ge for m in LineageSpec.model_fields["shingle_words"].metadata if isinstance(m, Ge)]
    assert bounds == [lineage.INDEX_WORDS]
    with pytest.raises(ValueError, match="at least 3"):
        lineage.windows({"r": "a b c d"}, 2)


def test_the_scan_reads_meta_older_versions_and_withdrawn_artifacts():
    """Issue 25: the content scan missed copies in another artifact's meta, in an older version, and in
    an artifact outside C(F) an earlier event left withdrawn. Each is now an untracked member of C(F)
    and erased with the delete."""
    policy = load_policy("policies/default.yaml")
    secret = "Zq7 orchid lantern 4411 lives at 12 Quiet Mews with a blue door"
    store = Store()
    store.record({"id": "r-secret", "kind": "record", "content": {"text": secret}})
    store.record({"id": "in-meta", "kind": "summary", "content": "harmless", "meta": {"note": secret.lower()}})
    store.record({"id": "old-version", "kind": "summary", "content": f"Recap: {secret}."})
    store.record({"id": "old-version", "kind": "summary", "content": "a newer, harmless version"})
    store.record({"id": "src", "kind": "record", "content": "something else entirely"})
    store.record({"id": "left-withdrawn", "kind": "summary", "content": f"copied: {secret}"}, inputs=["src"])
    store.conn.execute("UPDATE artifacts SET state = 'withdrawn' WHERE id = 'left-withdrawn'")  # an earlier event's
    plan = run_event(store, policy, parse_event({"type": "delete", "roots": ["r-secret"]}, store.snapshot()))
    assert {"in-meta", "old-version", "left-withdrawn"} <= set(plan.untracked), plan.untracked
    for ident in ("in-meta", "old-version", "left-withdrawn"):
        for version, erased, _ev in store.versions(ident):
            held = store.version_of(ident, version)
            assert erased or "orchid" not in json.dumps([held.content, dict(held.meta)]).lower(), (ident, version)


def test_an_untracked_copy_is_attributed_to_the_root_it_shares_most_with_ties_by_id():
    roots = {"r2": "alpha beta gamma delta epsilon", "r1": "alpha beta gamma delta zeta"}
    # shares "alpha beta gamma" and "beta gamma delta" with both roots: a tie, the smaller id wins
    assert lineage.untracked(roots, [("c", "alpha beta gamma delta")], 3, 2) == {"c": {"root": "r1", "shared": 2}}
    # one more run of r2's: r2 now shares the most; a repeated run counts once
    copy = "alpha beta gamma delta epsilon. alpha beta gamma"
    assert lineage.untracked(roots, [("c", copy)], 3, 3) == {"c": {"root": "r2", "shared": 3}}
    assert lineage.untracked(roots, [("c", copy)], 3, 4) == {}
    assert lineage.untracked({"r": "too short"}, [("c", "too short")], 3, 1) == {}
