"""audit --deep's scanner: erased text that is not also retained, found in one pass per file."""

from __future__ import annotations

import json

import pytest

from memsteward.shred.deepscan import build_needles, deep_scan, windows

ROOT = "MARKER-7f3a: the user's bank PIN is 4921 and their sister lives at 12 Elm Street."
OTHER = "The user likes green tea in the morning."
OLD_SUMMARY = ROOT + " " + OTHER       # an extractive summary of both
NEW_SUMMARY = OTHER                    # correctly regenerated from `other` alone


def _store_file(tmp_path, *texts: str) -> str:
    """A file holding texts as a store would: JSON rows, plus raw bytes between."""
    p = tmp_path / "mem.db"
    p.write_bytes(b"\x00SQLite format 3\x00" + b"\x00\x01".join(json.dumps(t).encode() for t in texts) + b"\xff" * 64)
    return str(p)


def test_extractive_summary_passes_when_erasure_is_correct(tmp_path):
    """The issue's false FAIL: what is left on disk is `other` and the new summary, shared with the
    erased summary but rightly retained — the scan passes."""
    path = _store_file(tmp_path, OTHER, NEW_SUMMARY)
    report = deep_scan([path], {"root@1": ROOT, "summary@1": OLD_SUMMARY}, [OTHER, NEW_SUMMARY])
    assert report["clean"], report
    assert report["retained_windows"] > 0  # the shared windows were dropped, not missed


def test_one_erased_sentence_left_behind_fails(tmp_path):
    sentence = "their sister lives at 12 Elm Street."
    path = _store_file(tmp_path, OTHER, NEW_SUMMARY, "note: " + sentence)
    report = deep_scan([path], {"root@1": ROOT, "summary@1": OLD_SUMMARY}, [OTHER, NEW_SUMMARY])
    assert not report["clean"]
    assert set(report["files"][0]["found"]) <= {"root@1", "summary@1"}
    assert "Elm" not in json.dumps(report)  # the report names versions, never their text


def test_every_escaping_is_found(tmp_path):
    """Text dense in escaped characters is found raw, escaped with \\uXXXX, or escaped otherwise."""
    text = 'Zoë said "meet me at the café" —\nthen left; the code word was "blue-heron-omega-77".'
    erased = {"a@1": text}
    for stored in (text.encode(), json.dumps(text).encode(), json.dumps(text, ensure_ascii=False).encode(),
                   json.dumps(text).replace("\\u00eb", "\\u00EB").replace("/", "\\/").encode()):
        p = tmp_path / "f.bin"
        p.write_bytes(b"prefix" + stored + b"suffix")
        assert not deep_scan([str(p)], erased, [])["clean"], stored


def test_a_surviving_run_is_found_at_any_offset(tmp_path):
    """Any WINDOW + STRIDE − 1 consecutive characters of an erased leaf contain a whole window."""
    text = "".join(chr(ord("a") + (k * 7) % 26) for k in range(200))
    for start in range(0, 160, 5):
        part = text[start:start + 31]
        p = tmp_path / "f.bin"
        p.write_bytes(b"xx" + part.encode() + b"yy")
        assert not deep_scan([str(p)], {"a@1": text}, [])["clean"], start


def test_chunk_boundaries(tmp_path, monkeypatch):
    import memsteward.shred.deepscan as ds
    monkeypatch.setattr(ds, "CHUNK", 7)
    p = tmp_path / "f.bin"
    p.write_bytes(b"." * 5 + ROOT.encode() + b"." * 5)
    assert not deep_scan([str(p)], {"root@1": ROOT}, [])["clean"]


def test_a_run_is_found_at_any_file_offset_across_parts_and_chunks(tmp_path, monkeypatch):
    """Hashing every other block (stride 2: the needles are 24-byte windows) and splitting a file
    among threads miss nothing: a surviving run is found at every byte offset, across chunk and part
    boundaries."""
    import memsteward.shred.deepscan as ds
    monkeypatch.setattr(ds, "CHUNK", 64)
    monkeypatch.setattr(ds, "PART", 100)
    monkeypatch.setattr(ds, "WORKERS", 3)
    text = "".join(chr(ord("a") + (k * 7) % 26) for k in range(200))
    assert ds.ByteMatcher(build_needles({"a@1": text}, []).words).stride == 2
    run = text[41:72].encode()  # WINDOW + STRIDE - 1 characters
    p = tmp_path / "f.bin"
    for pad in range(0, 280):
        p.write_bytes(b"." * pad + run + b"." * (300 - pad))
        report = deep_scan([str(p)], {"a@1": text}, [])
        assert not report["clean"] and report["files"][0]["bytes"] == 300 + len(run), pad
    p.write_bytes(b"." * 331)
    assert deep_scan([str(p)], {"a@1": text}, [])["clean"]


def test_no_needle_budget():
    """Thousands of erased leaves are all searched (the old scan stopped at 512 needles)."""
    erased = {f"a{k}@1": f"record number {k:05d} says something unique about item {k * 7919}" for k in range(3000)}
    assert len(build_needles(erased, []).words) > 3000 * 3
    assert windows("short") == set()


@pytest.mark.parametrize("lengths", [(15, 16, 23, 40, 97), (23, 24, 40, 97)])
def test_the_matcher_finds_a_needle_at_every_alignment(lengths):
    """Only the blocks at needle offsets below 8·S are indexed (S: the stride, 1 when a needle has
    fewer than 23 bytes, else 2; an occurrence's first hashed block starts there): a needle is found
    whatever its position modulo 8·S."""
    from memsteward.shred.deepscan import BLOCK, ByteMatcher

    needles = [bytes((k * 37 + n) % 251 + 1 for k in range(n)) for n in lengths]
    matcher = ByteMatcher(needles)
    assert matcher.stride == (1 if min(lengths) < 23 else 2)
    assert len(matcher.keys) == BLOCK * matcher.stride * len(needles)  # distinct: no (block, offset, length) repeats
    for w in needles:
        for pad in range(2 * BLOCK * matcher.stride):
            found: set[bytes] = set()
            matcher.find(memoryview(b"\x00" * pad + w + b"\x00" * 3), found)
            assert found == {w}, (len(w), pad)


def test_needles_sharing_blocks_cost_one_lookup_per_offset_and_length():
    """Windows of similar records share most blocks: the index keeps one entry per distinct
    (block, offset, length), so it stays small however many needles share a block."""
    from memsteward.shred.deepscan import ByteMatcher

    erased = {f"a{k}": f"memory {k} of user one: detail {k * 7919 % 10007}" for k in range(1200)}
    words = build_needles(erased, []).words
    matcher = ByteMatcher(words)
    found: set[bytes] = set()
    matcher.find(memoryview("zz".join(erased[f"a{k}"] for k in range(0, 1200, 7)).encode()), found)
    assert found and found <= set(words)
    assert len(matcher.keys) < 8 * matcher.stride * len(words)
