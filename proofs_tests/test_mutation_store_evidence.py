"""Systematic tests of the erasure evidence (repair/erasure.py) and the audit chain (repair/auditchain.py).

Written for issue 33's targeted mutation runs of the store modules (bench/mutation-targeted-store.md):
not one test per surviving mutant, but every branch of each function and both sides of each bound,
against references worked by hand or computed independently (``json.dumps``, ``hmac``, a brute-force
substring search, a fold of :func:`row_hash`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memsteward.errors import InputError
from memsteward.repair import auditchain as ac
from memsteward.repair import erasure as er

# --------------------------------------------------------------------------- windows


@pytest.mark.parametrize("text, width, expected", [
    ("", 3, [""]),
    ("abcdef", 3, ["abcdef"]),                         # exactly 2·width: the whole text
    ("abcdefg", 3, ["abc", "def", "efg"]),              # 2·width + 1: windows at 0, 3, then the last
    ("abcdefghi", 3, ["abc", "def", "ghi", "ghi"]),     # a multiple of width: the last window repeats
    ("abcdefghij", 3, ["abc", "def", "ghi", "hij"]),
    ("abcdefghijk", 3, ["abc", "def", "ghi", "ijk"]),
    ("abcdefghijkl", 3, ["abc", "def", "ghi", "jkl", "jkl"]),
    ("a" * 48, 24, ["a" * 48]),
    ("0123456789" * 5, 24, ["0123456789" * 2 + "0123", "4567890123456789" + "01234567", "6789" + "0123456789" * 2]),
])
def test_windows_worked_by_hand(text, width, expected):
    assert er.windows(text, width) == expected


def test_windows_default_width_is_the_module_s():
    assert er.WINDOW == 24 and er.MIN_LEAF == 16 and er.MAX_NEEDLES == 512 and er.CHUNK == 1 << 24
    text = "".join(chr(0x41 + k % 26) for k in range(49))  # 49 > 2·24
    assert er.windows(text) == [text[0:24], text[24:48], text[25:49]]


@given(st.text(alphabet="abcdefgh", max_size=80), st.integers(1, 9))
def test_every_copy_of_two_windows_less_one_character_holds_a_window(text, width):
    """The module's guarantee, checked by brute force: every substring of 2·width − 1 characters of a
    text longer than 2·width contains one of its windows; a short text is its own only needle. Every
    window is a substring of the text, of exactly ``width`` characters (when the text is long)."""
    ws = er.windows(text, width)
    if len(text) <= 2 * width:
        assert ws == [text]
        return
    assert all(len(w) == width and w in text for w in ws)
    assert ws[-1] == text[-width:] and ws[0] == text[:width]
    assert len(ws) == len(text) // width + 1
    span = 2 * width - 1
    for k in range(len(text) - span + 1):
        assert any(w in text[k:k + span] for w in ws), (text, width, k)


# --------------------------------------------------------------------------- fingerprints


def test_fingerprints_take_string_values_of_at_least_min_leaf_characters_longest_first():
    """Values of 15 characters are left out, of 16 taken; object keys never; longer values come
    first, equal lengths in code-point order; a value repeated is fingerprinted once."""
    sixteen = "0123456789abcdef"
    accented = "\u00e9" * 16
    long_leaf = "".join(f"{k:02d}" for k in range(25))  # 50 characters > 2·24: three windows
    doc = {"k" * 40: "x" * 15, "b": sixteen, "c": [accented, sixteen], "d": long_leaf}
    assert er.fingerprints([doc, "y" * 15]) == [
        long_leaf[0:24].encode(), long_leaf[24:48].encode(), long_leaf[26:50].encode(),
        sixteen.encode(),                                        # ASCII: its JSON body is the same bytes
        accented.encode("utf-8"), ("\\u00e9" * 16).encode("ascii"),
    ]
    assert er.fingerprints([{"a": "x" * 15}, {"q" * 30: 1}]) == []


def test_fingerprints_stop_after_the_leaf_that_reaches_the_limit():
    """The limit is checked after each whole leaf and the list cut to it: below the limit every
    needle of the leaves so far, at or past it exactly ``limit`` needles, longest leaves first."""
    a = "\u00e9" * 17   # 17 chars: two needles
    b = "b" * 16        # one needle
    c = "\u00e8" * 16   # two needles
    everything = [a.encode(), ("\\u00e9" * 17).encode(), b.encode(), c.encode(), ("\\u00e8" * 16).encode()]
    assert er.fingerprints([a, b, c]) == everything
    for limit in range(1, 7):
        assert er.fingerprints([a, b, c], limit=limit) == everything[:limit], limit
    assert er.fingerprints([], limit=0) == []


def test_fingerprints_are_at_most_512_needles_by_default():
    """The scan's bound (MAX_NEEDLES passes over the files): 600 one-needle leaves give 512 needles, the
    longest leaves first (here equal lengths, so the first 512 in code-point order); 512 leaves give all."""
    leaves = [f"erased leaf number {k:06d}" for k in range(600)]
    assert er.fingerprints(leaves) == [leaf.encode() for leaf in leaves[:512]]
    assert len(er.fingerprints(leaves[:511])) == 511 and len(er.fingerprints(leaves[:512])) == 512


# --------------------------------------------------------------------------- store_files and scan


def test_store_files_lists_the_database_its_wal_and_journal_in_that_order(tmp_path):
    db = str(tmp_path / "s.db")
    assert er.store_files(db) == []
    for suffix in ("-journal", "", "-wal"):
        open(db + suffix, "wb").close()
    open(db + "-shm", "wb").close()  # the shared-memory index holds no page images
    assert er.store_files(db) == [db, db + "-wal", db + "-journal"]
    os.remove(db + "-wal")
    assert er.store_files(db) == [db, db + "-journal"]


def test_scan_reports_needles_bytes_files_and_the_hits_of_each_file(tmp_path):
    a, b, c = tmp_path / "a.db", tmp_path / "a.db-wal", tmp_path / "a.db-journal"
    a.write_bytes(b"...ALPHA...BETA...ALPHA")
    b.write_bytes(b"GAMMA")
    c.write_bytes(b"")
    out = er.scan([str(a), str(b), str(c)], [b"ALPHA", b"BETA", b"GAMMA", b"DELTA"])
    # a needle counts once per file however often it occurs; a file without hits is not listed
    assert out == {"needles": 4, "bytes": 28, "files": ["a.db", "a.db-wal", "a.db-journal"],
                   "found": {"a.db": 2, "a.db-wal": 1}}
    assert er.scan([], [b"x"]) == {"needles": 1, "bytes": 0, "files": [], "found": {}}
    assert er.scan([str(a)], []) == {"needles": 0, "bytes": 23, "files": ["a.db"], "found": {}}


@given(data=st.binary(max_size=60), needles=st.lists(st.binary(min_size=1, max_size=6), max_size=5),
       chunk=st.integers(1, 12), noise=st.binary(min_size=0, max_size=4))
def test_scan_in_chunks_finds_exactly_what_a_whole_file_search_finds(data, needles, chunk, noise):
    """Any chunk size (patched down from 16 MiB): the needles found are those a search of the whole
    file finds (a needle straddling a chunk boundary too), and every byte is counted once."""
    body = data + (needles[0] if needles else b"") + noise
    fd, path = tempfile.mkstemp()
    try:
        os.write(fd, body)
        os.close(fd)
        saved, er.CHUNK = er.CHUNK, chunk
        try:
            out = er.scan([path], needles)
        finally:
            er.CHUNK = saved
    finally:
        os.remove(path)
    hits = len({n for n in needles if n in body})
    assert out["bytes"] == len(body) and out["needles"] == len(needles)
    assert out["found"] == ({os.path.basename(path): hits} if hits else {})


# --------------------------------------------------------------------------- the signing key


@pytest.mark.parametrize("raw, expected", [
    (None, None), ("", None),
    ("k" * 16, b"k" * 16), ("k" * 40, b"k" * 40),
    ("\u00e9" * 8, "\u00e9".encode() * 8),   # 8 characters, 16 bytes: the bound is in bytes
])
def test_signing_key_is_the_variable_s_utf8_bytes(monkeypatch, raw, expected):
    if raw is None:
        monkeypatch.delenv(ac.KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(ac.KEY_ENV, raw)
    assert ac.signing_key() == expected


@pytest.mark.parametrize("raw", ["k" * 15, "k", "\u00e9" * 7 + "a"])  # 15, 1, 15 bytes
def test_a_signing_key_under_sixteen_bytes_is_bad_input(monkeypatch, raw):
    monkeypatch.setenv(ac.KEY_ENV, raw)
    with pytest.raises(InputError) as exc:
        ac.signing_key()
    assert exc.value.field == ac.KEY_ENV and "16 bytes" in str(exc.value)


# --------------------------------------------------------------------------- seals

KEY = b"k" * 32
HEAD = "ab" * 32


def _hmac(msg: str, key: bytes = KEY) -> str:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).hexdigest()


def test_seal_formats_are_the_documented_hmacs():
    assert ac.seal(KEY, 7, HEAD, ("store-1", "acme")) == \
        "v2:" + _hmac("memsteward-audit-head/2\0store-1\0acme\x007\0" + HEAD)
    assert ac.seal(KEY, 7, HEAD, ("store-1", None)) == "v2:" + _hmac("memsteward-audit-head/2\0store-1\0\x007\0" + HEAD)
    assert ac.legacy_seal(KEY, 7, HEAD) == _hmac(f"memsteward-audit-head:7:{HEAD}")
    assert [ac.seal_format(s) for s in (None, "v2:00", "V2:00", "00" * 32, "")] == [None, 2, 1, 1, 1]


def test_a_seal_verifies_only_for_its_key_head_store_and_tenant():
    binding = ("store-1", "acme")
    v2 = ac.seal(KEY, 7, HEAD, binding)
    assert ac.seal_verifies(KEY, v2, 7, HEAD, binding)
    for key, seq, head, other in ((b"x" * 32, 7, HEAD, binding), (KEY, 8, HEAD, binding), (KEY, 7, "cd" * 32, binding),
                                  (KEY, 7, HEAD, ("store-2", "acme")), (KEY, 7, HEAD, ("store-1", None))):
        assert not ac.seal_verifies(key, v2, seq, head, other)
    v1 = ac.legacy_seal(KEY, 7, HEAD)
    assert ac.seal_verifies(KEY, v1, 7, HEAD, ("any store", None))   # format 1 binds no store
    assert not ac.seal_verifies(KEY, v1, 6, HEAD, binding)
    assert not ac.seal_verifies(KEY, "v2:" + v1, 7, HEAD, binding)


def _row(prev: str, seq: int, action: str = "record") -> tuple:
    at, event_id, artifact_id, detail = "2026-12-02T00:00:00Z", None, "a", "{}"
    return (seq, at, event_id, action, artifact_id, detail, ac.row_hash(prev, seq, at, event_id, action, artifact_id, detail))


def _signed_head_case():
    binding = ("store-1", None)
    first = _row(ac.GENESIS, 1)
    second = _row(first[6], 2)
    head = (1, first[6], ac.seal(KEY, 1, first[6], binding))
    return binding, first, second, head


def test_sealed_head_problem_every_branch():
    binding, first, second, head = _signed_head_case()
    def ok(key, head, rows, binding, first_appended=None):  # by default the row after the head is appended
        first = (head[0] + 1 if head else 1) if first_appended is None else first_appended
        return ac.sealed_head_problem(key, head, rows, binding, first_appended=first)

    # no head: fine for an empty log, or one whose row 1 is this transaction's first append; not for a
    # log with older rows (its head record removed), nor one starting elsewhere (a forged row 0)
    no_head = "the audit log has rows but no recorded head"
    assert ok(KEY, None, [], binding, 1) is None
    assert ok(KEY, None, [first], binding, 1) is None
    assert ok(KEY, (0, ac.GENESIS, None), [first], binding, 1) is None
    assert ok(KEY, None, [second], binding, 1) == no_head
    assert ok(KEY, (0, ac.GENESIS, None), [second], binding, 1) == no_head
    assert ok(KEY, None, [first, second], binding, 3) == no_head
    assert ok(KEY, (0, ac.GENESIS, None), [first], binding, 2) == no_head
    assert ok(KEY, None, [_row(ac.GENESIS, 0), first], binding, 1) == no_head
    # a sealed head, its own row, and the next row linked to it
    assert ok(KEY, head, [first], binding) is None
    assert ok(KEY, head, [first, second], binding) is None
    assert "is not signed" in ok(KEY, (1, first[6], None), [first, second], binding)
    assert "does not verify" in ok(b"x" * 32, head, [first, second], binding)
    assert "does not verify" in ok(KEY, head, [first, second], ("store-2", None))
    ends = "the audit log does not end at its signed head (row 1): rows were altered or removed"
    assert ok(KEY, head, [], binding) == ends
    assert ok(KEY, head, [second], binding) == ends                                   # another seq
    assert ok(KEY, head, [(*first[:6], "ff" * 32)], binding) == ends                  # another hash
    second_head = (2, second[6], ac.seal(KEY, 2, second[6], binding))
    assert ok(KEY, second_head, [second], binding) is None
    assert ok(KEY, second_head, [(1, *second[1:])], binding) == ends.replace("row 1", "row 2")  # an earlier seq
    assert ok(KEY, second_head, [(3, *second[1:])], binding) == ends.replace("row 1", "row 2")  # a later seq
    unlinked = "the row after the signed head (row 1) does not link to it"
    assert ok(KEY, head, [first, _row(first[6], 3)], binding) == unlinked            # seq + 2
    assert ok(KEY, head, [first, (1, *_row(first[6], 1)[1:])], binding) == unlinked  # seq, not seq + 1
    assert ok(KEY, head, [first, _row(ac.GENESIS, 2)], binding) == unlinked          # not chained to the head
    assert ok(KEY, head, [first, (*second[:5], '{"x":1}', second[6])], binding) == unlinked  # detail altered
    # rows between the head and this transaction's first row: an older signed head put back over a log
    # re-chained after it (its seal verifies, and the row after it links to it)
    assert ok(KEY, head, [first, second], binding, 3) == ends
    assert ok(KEY, head, [first], binding, 3) == ends


# --------------------------------------------------------------------------- hashes


def test_tombstone_commitment_counts_and_hashes_the_sorted_digests_one_a_line():
    assert ac.tombstone_commitment(["b2", "a1", "c3"]) == {
        "count": 3, "sha256": hashlib.sha256(b"a1\nb2\nc3\n").hexdigest()}
    assert ac.tombstone_commitment([]) == {"count": 0, "sha256": hashlib.sha256(b"").hexdigest()}
    assert ac.tombstone_commitment(iter(["x"])) == {"count": 1, "sha256": hashlib.sha256(b"x\n").hexdigest()}


_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


def _reference(prev, seq, at, event_id, action, artifact_id, detail) -> str:
    payload = json.dumps([prev, seq, at, event_id, action, artifact_id, detail], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@given(prev=_TEXT, seq=st.integers(0, 10 ** 12), at=_TEXT, event_id=st.none() | st.integers(0, 10 ** 9),
       action=_TEXT, artifact_id=st.none() | _TEXT, detail=_TEXT)
def test_row_hash_is_sha256_of_the_compact_json_array(prev, seq, at, event_id, action, artifact_id, detail):
    assert ac.row_hash(prev, seq, at, event_id, action, artifact_id, detail) == \
        _reference(prev, seq, at, event_id, action, artifact_id, detail)


@given(prev=_TEXT | st.just(ac.GENESIS), seq=st.integers(1, 10 ** 6), event_id=st.none() | st.integers(0, 99),
       ids=st.lists(st.none() | _TEXT, max_size=5), detail=_TEXT)
def test_chain_same_is_row_hash_folded_over_the_ids(prev, seq, event_id, ids, detail):
    at, action = "2026-12-02T20:00:00Z", "withdraw"
    want, link = [], prev
    for k, i in enumerate(ids):
        link = _reference(link, seq + k, at, event_id, action, i, detail)
        want.append(link)
    assert ac.chain_same(prev, seq, at, event_id, action, ids, detail) == want
    assert ac.chain([(seq + k, at, event_id, action, i, detail) for k, i in enumerate(ids)], prev) == want


def _log(n: int) -> list[tuple]:
    rows: list[tuple] = []
    for seq in range(1, n + 1):
        rows.append(_row(rows[-1][6] if rows else ac.GENESIS, seq, f"a{seq}"))
    return rows


def test_chain_defaults_to_the_genesis_link():
    rows = _log(3)
    assert ac.chain([r[:6] for r in rows]) == [r[6] for r in rows]
    assert ac.GENESIS == "0" * 64 and ac.chain([]) == []


def test_first_broken_every_branch():
    rows = _log(3)
    head = (3, rows[-1][6])
    fb = ac.first_broken
    assert fb([], None) is None
    assert fb(rows, head) is None
    assert fb(rows, None) == (3, "the store has no recorded head for its log (the head record was removed)")
    assert fb(rows[:2], head) == (3, "the log ends at row 2 but its recorded head is row 3 (rows were removed)")
    assert fb([], (1, rows[0][6])) == (1, "the log ends at row 0 but its recorded head is row 1 (rows were removed)")
    assert fb(rows, (3, rows[1][6]))[0] == 3
    # the links: a gap (the first row must be 1), a missing hash, an altered row
    assert fb(rows[1:], head) == (2, "sequence gap: expected row 1, found 2 (a row was deleted)")
    assert fb([rows[0], rows[2]], head) == (3, "sequence gap: expected row 2, found 3 (a row was deleted)")
    assert fb([rows[0], (*rows[1][:6], None), rows[2]], head) == \
        (2, "row has no hash (written outside the store, or before chaining)")
    assert fb([rows[0], (*rows[1][:5], "{}x", rows[1][6]), rows[2]], head) == \
        (2, "hash mismatch: the row (or an earlier one) was altered")
    assert fb([rows[0], rows[1], (*rows[2][:6], rows[1][6])], head)[0] == 3
    # an outside anchor: any row's hash of the log
    assert fb(rows, head, expect_head=rows[0][6]) is None and fb(rows, head, expect_head=rows[2][6]) is None
    assert fb(rows, head, expect_head="ee" * 32) == (
        3, "the expected head hash is not in the log (rewritten, or truncated before it)")


def test_first_broken_with_a_key_needs_a_head_sealed_for_this_binding():
    rows = _log(2)
    head = (2, rows[-1][6])
    binding = ("store-1", "t")
    good = ac.seal(KEY, 2, rows[-1][6], binding)
    fb = ac.first_broken
    assert fb(rows, head, head_seal=good, key=KEY, binding=binding) is None
    assert fb(rows, head, head_seal=ac.legacy_seal(KEY, 2, rows[-1][6]), key=KEY, binding=binding) is None
    assert fb(rows, head, head_seal=None, key=KEY, binding=binding) == (
        2, f"the audit head is not signed although {ac.KEY_ENV} is set (written without the key)")
    bad = (2, "the audit head's signature does not verify (rows appended, rewritten or reordered without the key, "
              "a different key, or the log of another store or tenant)")
    assert fb(rows, head, head_seal=good, key=KEY, binding=None) == bad
    assert fb(rows, head, head_seal=good, key=KEY, binding=("store-1", None)) == bad
    assert fb(rows, head, head_seal=good, key=b"y" * 32, binding=binding) == bad
    assert fb(rows, head, head_seal="garbage", key=None, binding=binding) is None  # no key: the seal is not read
    assert fb([], None, head_seal=None, key=KEY, binding=binding) is None           # an empty log has no head


@pytest.mark.parametrize("n", [1, 255, 256, 257, 300, 10_000])
def test_sealed_head_problem_at_a_head_past_row_256(n):
    """A signed head at row n and the next row n + 1 linked to it: no problem, whatever n (the next
    row's seq as read from a store is an int object of its own; n + 1 above 256 is not a cached one);
    the row after it at n + 2, or at n, does not link."""
    binding = ("store-1", None)
    prev = _row(ac.GENESIS, 1)[6]
    head_row = (n, *_row(prev, n)[1:])
    head = (int(str(n)), head_row[6], ac.seal(KEY, n, head_row[6], binding))
    nxt = _row(head_row[6], int(str(n + 1)))
    assert ac.sealed_head_problem(KEY, head, [head_row, nxt], binding, first_appended=n + 1) is None
    unlinked = f"the row after the signed head (row {n}) does not link to it"
    assert ac.sealed_head_problem(KEY, head, [head_row, _row(head_row[6], n + 2)], binding, first_appended=n + 1) == unlinked
    assert ac.sealed_head_problem(KEY, head, [head_row, _row(head_row[6], n)], binding, first_appended=n + 1) == unlinked


def test_first_broken_holds_over_a_chain_of_300_rows_and_finds_a_gap_past_row_256():
    """A chain of 300 rows (seqs as a store reads them: ints above 256 are objects of their own) holds
    up to its head; without row 280 the gap is found there, as the row it expected."""
    rows, prev = [], ac.GENESIS
    for k in range(1, 301):
        rows.append(_row(prev, int(str(k))))
        prev = rows[-1][6]
    assert ac.first_broken(rows, head=(300, prev)) is None
    assert ac.first_broken(rows[:279] + rows[280:], head=(300, prev)) == (
        281, "sequence gap: expected row 280, found 281 (a row was deleted)")
