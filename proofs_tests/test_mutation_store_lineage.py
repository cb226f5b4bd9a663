"""Systematic tests of the content scan (repair/lineage.py) and the store's planning reads (store/planning.py).

Written for issue 33's targeted mutation runs of the store modules (bench/mutation-targeted-store.md):
each function's branches and bounds against references worked by hand, a BLAKE2b written out
independently, and brute-force searches; the store reads on both backends.
"""

from __future__ import annotations

import hashlib
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsteward.repair import lineage as ln


def _h(*ws: str) -> int:
    """The unkeyed index key written out: the first 8 bytes of BLAKE2b of the words joined by one space,
    read as a signed big-endian integer."""
    return int.from_bytes(hashlib.blake2b(" ".join(ws).encode("utf-8"), digest_size=8).digest(), "big", signed=True)


# --------------------------------------------------------------------------- words, shingles, hashes


def test_words_are_lower_cased_runs_of_word_characters_one_list_per_string_value():
    value = {"zkey": "Hello, World_x 42!", "a": ["Ünïcode ÉTÉ", {"deep": "x"}], "n": 5, "none": None, "t": True}
    assert ln.words(value) == [["ünïcode", "été"], ["x"], ["hello", "world_x", "42"]]
    assert ln.words("") == [[]] and ln.words(7) == [] and ln.words({"Key words": 1}) == []


@pytest.mark.parametrize("n, expected", [
    (1, {("a",), ("b",), ("c",), ("d",), ("x",), ("y",)}),
    (2, {("a", "b"), ("b", "c"), ("c", "d"), ("x", "y")}),
    (3, {("a", "b", "c"), ("b", "c", "d")}),
    (4, {("a", "b", "c", "d")}),
    (5, set()),
])
def test_shingles_are_the_n_word_runs_of_each_string_never_across_strings(n, expected):
    assert ln.shingles(["A b c d", "x Y"], n) == expected


def test_shingle_hash_is_signed_blake2b_64_or_the_store_s_keyed_hash():
    assert ln.shingle_hash(["alice", "likes", "tea"]) == _h("alice", "likes", "tea")
    assert ln.shingle_hash([]) == _h()
    seen = []
    assert ln.shingle_hash(["a", "b", "c"], lambda text: seen.append(text) or -5) == -5 and seen == ["a b c"]
    # signed: a key whose first byte has its top bit set is negative
    some = [ln.shingle_hash([f"w{k}"]) for k in range(64)]
    assert min(some) < 0 < max(some) and all(-2 ** 63 <= h < 2 ** 63 for h in some)


def test_index_hashes_are_every_trigram_of_each_string():
    assert ln.index_hashes({"t": "Alice likes tea daily", "u": ["two words", "x y z"]}) == {
        _h("alice", "likes", "tea"), _h("likes", "tea", "daily"), _h("x", "y", "z")}
    assert ln.index_hashes("two words") == set()
    assert ln.index_hashes("a b c", lambda text: len(text)) == {5}


def test_windows_are_the_n_minus_two_consecutive_trigram_hashes_of_each_n_word_run():
    roots = {"r1": "a b c d e", "r2": ["p q r", "too short"]}
    t = {k: _h(*k.split()) for k in ("a b c", "b c d", "c d e", "p q r")}
    assert ln.windows(roots, 3) == {(t["a b c"],), (t["b c d"],), (t["c d e"],), (t["p q r"],)}
    assert ln.windows(roots, 4) == {(t["a b c"], t["b c d"]), (t["b c d"], t["c d e"])}
    assert ln.windows(roots, 5) == {(t["a b c"], t["b c d"], t["c d e"])}
    assert ln.windows(roots, 6) == set()
    with pytest.raises(ValueError, match="at least 3"):
        ln.windows(roots, 2)
    assert ln.INDEX_WORDS == 3 and ln.COMMON == 256


# --------------------------------------------------------------------------- untracked


def test_untracked_counts_each_shared_shingle_once_and_keeps_candidates_at_min_shared():
    roots = {"r": "one two three four five"}
    cands = [
        ("exact", "one two three"),                          # 1 shared trigram
        ("twice", "one two three. One, two THREE"),          # the same trigram twice: still 1
        ("two", "xx one two three four yy"),                 # 2
        ("none", "three two one"),
        ("empty", ""),
    ]
    assert ln.untracked(roots, cands, 3, 1) == {"exact": {"root": "r", "shared": 1}, "twice": {"root": "r", "shared": 1},
                                                "two": {"root": "r", "shared": 2}}
    assert ln.untracked(roots, cands, 3, 2) == {"two": {"root": "r", "shared": 2}}
    assert ln.untracked(roots, cands, 3, 3) == {}
    assert ln.untracked({"r": "one two"}, cands, 3, 1) == {}   # a root without an n-word run matches nothing


def test_untracked_attributes_to_the_root_sharing_most_then_the_smaller_id():
    roots = {"rb": "alpha beta gamma delta", "ra": "alpha beta gamma", "rc": "delta epsilon zeta eta"}
    cands = [("both", "alpha beta gamma delta"),            # rb 2, ra 1: rb
             ("tie", "alpha beta gamma"),                   # ra 1, rb 1: ra (smaller id)
             ("other", "delta epsilon zeta eta theta")]     # rc 2
    assert ln.untracked(roots, cands, 3, 1) == {"both": {"root": "rb", "shared": 2}, "tie": {"root": "ra", "shared": 1},
                                                "other": {"root": "rc", "shared": 2}}


_WORDS = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=9).map(" ".join)


@given(roots=st.dictionaries(st.sampled_from(["r1", "r2", "r3"]), _WORDS, min_size=1, max_size=3),
       cands=st.lists(_WORDS, max_size=5), n=st.integers(1, 4), m=st.integers(1, 3))
def test_untracked_matches_a_brute_force_count(roots, cands, n, m):
    def runs(text: str) -> set:
        ws = text.split()
        return {tuple(ws[k:k + n]) for k in range(len(ws) - n + 1)}

    want = {}
    for k, text in enumerate(cands):
        counts = {r: len(runs(text) & runs(c)) for r, c in roots.items()}
        best = max(counts.values(), default=0)
        if best >= m and best > 0:
            want[f"c{k}"] = {"root": min(r for r, v in counts.items() if v == best), "shared": best}
    assert ln.untracked(roots, [(f"c{k}", t) for k, t in enumerate(cands)], n, m) == want


# --------------------------------------------------------------------------- candidates


class _Index:
    """An in-memory posting index (hash → ids, in id order), recording what was asked of it."""

    def __init__(self, docs: dict[str, str]) -> None:
        self.lists: dict[int, list[str]] = {}
        for ident in sorted(docs):
            for h in ln.index_hashes(docs[ident]):
                self.lists.setdefault(h, []).append(ident)
        self.calls: list[tuple[int, int | None]] = []

    def __call__(self, h: int, limit: int | None) -> list[str]:
        self.calls.append((h, limit))
        ids = self.lists.get(h, [])
        return ids if limit is None else ids[:limit]


def test_candidates_take_the_rarest_trigram_of_each_window():
    # window (abc, bcd) of the 4-word run: abc is held by 3 ids, bcd by 1: only bcd's holder is a candidate
    docs = {"x1": "a b c", "x2": "a b c", "x3": "a b c d", "y": "b c d"}
    idx = _Index(docs)
    assert ln.candidates({"r": "a b c d"}, 4, idx) == {"x3", "y"}
    assert sorted(idx.calls) == sorted([(_h("a", "b", "c"), ln.COMMON + 1), (_h("b", "c", "d"), ln.COMMON + 1)])
    # n = 3: every trigram is a window of its own, so every holder is a candidate
    assert ln.candidates({"r": "a b c d"}, 3, _Index(docs)) == {"x1", "x2", "x3", "y"}
    assert ln.candidates({"r": "a b"}, 3, _Index(docs)) == set()


def test_candidates_break_a_tie_between_equally_rare_trigrams_by_the_smaller_hash():
    docs = {"p": "a b c", "q": "b c d"}   # one holder each
    lo, hi = sorted([_h("a", "b", "c"), _h("b", "c", "d")])
    holder = {_h("a", "b", "c"): "p", _h("b", "c", "d"): "q"}
    assert ln.candidates({"r": "a b c d"}, 4, _Index(docs)) == {holder[lo]}
    assert hi != lo


@pytest.mark.parametrize("holders, whole_read", [(ln.COMMON - 1, False), (ln.COMMON, False), (ln.COMMON + 1, True),
                                                 (ln.COMMON + 2, True)])
def test_a_window_whose_rarest_trigram_is_common_reads_that_list_whole(holders, whole_read):
    """Up to COMMON holders the probe (COMMON + 1 ids) is the whole list; past it, the list is read
    whole (limit None), once per trigram however many windows share it."""
    docs = {f"id{k:04d}": "a b c d e" for k in range(holders)}
    idx = _Index(docs)
    assert ln.candidates({"r": "a b c d e"}, 4, idx) == set(docs)   # windows (abc, bcd) and (bcd, cde)
    full = [h for h, limit in idx.calls if limit is None]
    probes = [h for h, limit in idx.calls if limit == ln.COMMON + 1]
    assert sorted(probes) == sorted({_h("a", "b", "c"), _h("b", "c", "d"), _h("c", "d", "e")})
    assert len(idx.calls) == len(probes) + len(full) and len(full) == len(set(full))
    # every trigram is equally common: each window's rarest is its smaller hash
    assert set(full) == ({min(w) for w in ln.windows({"r": "a b c d e"}, 4)} if whole_read else set())


@given(roots=st.dictionaries(st.sampled_from(["r1", "r2"]), _WORDS, min_size=1, max_size=2),
       docs=st.lists(_WORDS, max_size=6), n=st.integers(3, 5))
def test_candidates_hold_every_artifact_the_scan_matches(roots, docs, n):
    by_id = {f"d{k}": t for k, t in enumerate(docs)}
    found = ln.candidates(roots, n, _Index(by_id))
    assert set(ln.untracked(roots, by_id.items(), n, 1)) <= found <= set(by_id)


# --------------------------------------------------------------------------- the store's planning reads


def _chain_doc(length: int) -> dict:
    arts = [{"id": f"n{k:03d}", "kind": "record" if k == 0 else "summary", "content": f"node {k}"} for k in range(length)]
    edges = [{"src": f"n{k:03d}", "dst": f"n{k + 1:03d}", "type": "influence"} for k in range(length - 1)]
    return {"artifacts": arts, "edges": edges}


def _import(store, doc):
    from memsteward.repair.artifacts import parse_store_document

    store.import_snapshot(parse_store_document(doc, "<t>"))


@pytest.mark.parametrize("length", [30, 33, 34, 40])
def test_reach_of_a_chain_on_each_side_of_the_narrow_level_bound(store_factory, length):
    """A chain: one id per level, so past REACH_NARROW_LEVELS levels the recursive query finishes it.
    Every length reaches every later node, from any start."""
    from memsteward.store import planning

    assert (planning.REACH_NARROW, planning.REACH_NARROW_LEVELS) == (64, 32)
    s = store_factory()
    _import(s, _chain_doc(length))
    ids = [f"n{k:03d}" for k in range(length)]
    for start in (0, 1, length - 3):
        assert s.reach([ids[start]]) == frozenset(ids[start:]), (length, start)
    assert s.reach([]) == frozenset()
    assert s.reach(["not-stored"]) == frozenset({"not-stored"})


def test_reach_follows_influence_edges_only_and_parent_edges_are_ordered_by_child_then_parent(store_factory):
    s = store_factory()
    arts = [{"id": i, "kind": "record", "content": i} for i in ("a", "b", "c", "d", "e")]
    edges = [{"src": "b", "dst": "d", "type": "influence"}, {"src": "a", "dst": "d", "type": "influence"},
             {"src": "a", "dst": "c", "type": "influence"}, {"src": "c", "dst": "e", "type": "semantic"},
             {"src": "e", "dst": "c", "type": "influence"}]
    _import(s, {"artifacts": arts, "edges": edges})
    assert s.reach(["a"]) == frozenset({"a", "c", "d"})
    assert s.reach(["e"]) == frozenset({"e", "c"})
    assert s.parent_edges(["d", "c", "e"]) == [("a", "c"), ("e", "c"), ("a", "d"), ("b", "d")]
    assert s.parent_edges([]) == [] and s.parent_edges(["a"]) == []


@pytest.mark.parametrize("wide", [63, 64, 65])
def test_reach_of_a_fan_out_on_each_side_of_the_narrow_width_bound(store_factory, wide):
    """A root with ``wide`` children, each with a chain of 40 below it: the frontier stays wide (not
    narrow) or narrow, and every node is reached either way."""
    s = store_factory()
    arts = [{"id": "root", "kind": "record", "content": "r"}]
    edges = []
    for k in range(wide):
        arts.append({"id": f"c{k:02d}", "kind": "summary", "content": "c"})
        edges.append({"src": "root", "dst": f"c{k:02d}", "type": "influence"})
    below = [f"t{k:02d}" for k in range(36)]
    arts += [{"id": t, "kind": "summary", "content": "t"} for t in below]
    edges.append({"src": "c00", "dst": below[0], "type": "influence"})
    edges += [{"src": a, "dst": b, "type": "influence"} for a, b in itertools.pairwise(below)]
    _import(s, {"artifacts": arts, "edges": edges})
    assert s.reach(["root"]) == frozenset(a["id"] for a in arts)


def test_a_posting_list_is_cut_at_its_limit_and_whole_without_one(store_factory):
    s = store_factory()
    s.record_many([{"id": f"x{k}", "kind": "record", "content": "alpha beta gamma"} for k in range(5)])
    h = next(iter(ln.index_hashes("alpha beta gamma", s._keyed)))
    assert sorted(s._posting(h, None)) == [f"x{k}" for k in range(5)]
    for limit in (1, 4, 5, 6):
        got = s._posting(h, limit)
        assert len(got) == min(limit, 5) and set(got) <= {f"x{k}" for k in range(5)}
    assert s._posting(h ^ 1, None) == []


def test_shingle_candidates_read_every_held_version_of_a_matching_artifact(store_factory):
    s = store_factory()
    s.record({"id": "m", "kind": "record", "content": "the orchid lantern glows", "meta": {"n": "a quiet lake house"}})
    s.record({"id": "m", "kind": "record", "content": "something else entirely"})
    s.record({"id": "z", "kind": "record", "content": "unrelated words only"})
    assert s.shingle_candidates({"r": "an orchid lantern glows"}, 3) == [
        ("m", [["the orchid lantern glows", {"n": "a quiet lake house"}], ["something else entirely", {}]])]
    assert [i for i, _ in s.shingle_candidates({"r": "by the quiet lake house"}, 3)] == ["m"]   # meta is indexed too
    assert s.shingle_candidates({"r": "no match here"}, 3) == []
    assert s.shingle_candidates({"r": "two words"}, 3) == []


@pytest.mark.parametrize("known", [False, True])
def test_an_index_write_of_more_than_50000_rows_keeps_every_row(store_factory, known):
    """The lineage index is written in slices of 50,000 rows: a plain INSERT (COPY) for an id new to the
    store, INSERT OR IGNORE for a known one. A content of 50,010 distinct trigrams crosses a slice
    boundary on either path; every trigram is indexed, as recomputed here."""
    s = store_factory()
    if known:
        s.record({"id": "big", "kind": "record", "content": "first small version"})
    text = " ".join(f"w{k}" for k in range(50_012))   # 50,010 trigrams, all distinct
    s.record({"id": "big", "kind": "record", "content": text})
    ph = "?" if s.backend == "sqlite" else "%s"
    (n,) = s.conn.execute(f"SELECT COUNT(*) FROM shingles WHERE id = {ph}", ("big",)).fetchone()
    assert n == 50_010 + (1 if known else 0)
    last = ln.shingle_hash(["w50009", "w50010", "w50011"], s._keyed)
    assert "big" in s._posting(last, None)


@pytest.mark.parametrize("widths, level_reads, recursive", [
    ([1] * 32, 32, 0),  # 32 narrow levels: read level by level (the last read finds nothing below)
    ([1] * 33, 32, 1),  # the 33rd narrow level is finished by one recursive query
    ([1] * 200, 32, 1),  # however long the chain
    ([63] * 40, 32, 1),  # 63 < 64 ids: narrow
    ([64] * 40, 40, 0),  # 64 ids: not narrow, every level its own read
    ([65] * 40, 40, 0),
    ([300] * 3 + [1] * 40, 35, 1),  # wide, then a narrow tail: 3 wide + 32 narrow level reads, then the tail
])
def test_reach_reads_level_by_level_until_a_long_narrow_tail_and_then_once(tmp_path, widths, level_reads, recursive):
    """The statements Store.reach issues (SQLite's trace): one per level while levels are wide (64 ids
    or more) or fewer than 33 narrow ones were read, then one recursive query for the rest: a deep
    chain costs 33 statements, not one per level. The ids reached are every node either way, and a
    semantic edge is not followed."""
    from memsteward.store import Store

    names = [[f"l{lv:03d}n{k:03d}" for k in range(w)] for lv, w in enumerate(widths)]
    arts = [{"id": i, "kind": "record", "content": "c"} for level in names for i in level]
    arts.append({"id": "sem", "kind": "summary", "content": "s"})
    edges = [{"src": names[lv][j % len(names[lv])], "dst": dst, "type": "influence"}
             for lv in range(len(names) - 1) for j, dst in enumerate(names[lv + 1])]
    edges.append({"src": names[-1][0], "dst": "sem", "type": "semantic"})
    s = Store(str(tmp_path / "reach.db"))
    try:
        _import(s, {"artifacts": arts, "edges": edges})
        issued: list[str] = []
        s.conn.set_trace_callback(issued.append)
        got = s.reach(names[0])
        s.conn.set_trace_callback(None)
        assert got == frozenset(i for level in names for i in level)
        assert (len(issued) - sum("RECURSIVE" in q for q in issued), sum("RECURSIVE" in q for q in issued)) \
            == (level_reads, recursive), issued[:3]
    finally:
        s.close()
