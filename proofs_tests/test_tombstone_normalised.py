"""Tombstones that match what users mean (issue 25, item 5).

Deleted content came back through a trailing space, double spaces, lower case, a trailing period,
NFD, fullwidth or homoglyph forms, a zero-width space, wrapping it in ``{"text": …}`` or putting it in
``meta``. The tombstone now also holds digests of the normalised text (:mod:`memsteward.textnorm`),
and a write is refused when its content or meta says the erased text again, in any of those forms.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.textnorm import normalise

DATA = Path(__file__).resolve().parent.parent / "engine" / "data" / "repair"
POLICY = str(Path(__file__).resolve().parent.parent / "policies" / "default.yaml")
TEXT = "The user is allergic to peanuts and carries an epipen."  # p1's text in the bundled store

VARIANTS = {
    "trailing-space": {"text": TEXT + " ", "label": "allergy"},
    "double-spaces": {"text": TEXT.replace(" ", "  "), "label": "allergy"},
    "lower-case": {"text": TEXT.lower(), "label": "allergy"},
    "no-trailing-period": {"text": TEXT.rstrip("."), "label": "allergy"},
    "nfd": {"text": unicodedata.normalize("NFD", TEXT.replace("epipen", "épipen")), "label": "allergy"},
    "fullwidth": {"text": "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in TEXT), "label": "allergy"},
    "homoglyph": {"text": TEXT.replace("a", "\u0430").replace("o", "\u043e"), "label": "allergy"},
    "zero-width": {"text": TEXT.replace("peanuts", "pea\u200bnuts"), "label": "allergy"},
    "wrapped": {"note": {"text": TEXT}},
    "bare-string": TEXT,
    # found by a red team (2026-12-03): invisible characters beyond the zero-width ones, Hangul fillers
    # drawn as spaces, the text as an object key, as one line of several, in quotes
    "lrm": {"text": TEXT.replace("peanuts", "pea\u200enuts"), "label": "allergy"},
    "cgj": {"text": TEXT.replace("peanuts", "pea\u034fnuts"), "label": "allergy"},
    "invisible-times": {"text": TEXT.replace("peanuts", "pea\u2062nuts"), "label": "allergy"},
    "variation-selector": {"text": TEXT.replace("peanuts", "pea\ufe0fnuts"), "label": "allergy"},
    "bidi-override": {"text": "\u202d" + TEXT + "\u202c", "label": "allergy"},
    "tag-characters": {"text": TEXT.replace("peanuts", "pea\U000e0041nuts"), "label": "allergy"},
    "hangul-filler-spaces": {"text": TEXT.replace(" ", "\u3164"), "label": "allergy"},
    "object-key": {"facts": {TEXT: True}},
    "one-line-of-several": {"text": "Summary of the week.\n" + TEXT + "\nNothing else."},
    "quoted": {"text": "\u201c" + TEXT + "\u201d", "label": "allergy"},
}


@pytest.fixture
def erased(tmp_path: Path) -> str:
    db = str(tmp_path / "s.db")
    run = CliRunner()
    assert run.invoke(main, ["store", "import", "--store", db, str(DATA / "store.json")]).exit_code == 0
    r = run.invoke(main, ["repair", "--policy", POLICY, "--store", db, "--event", str(DATA / "event-delete.json")])
    assert r.exit_code == 0, r.output
    return db


def _put(db: str, tmp_path: Path, doc: dict) -> object:
    path = tmp_path / "put.json"
    path.write_text(json.dumps(doc, ensure_ascii=False))
    return CliRunner().invoke(main, ["store", "put", "--store", db, str(path)])


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_erased_text_is_refused_in_every_form(erased: str, tmp_path: Path, name: str):
    if name == "nfd":  # the tombstone is of the original text: NFD of a text with an accent composes back
        pytest.skip("covered by test_normalise_folds_forms (the bundled text has no accent)")
    r = _put(erased, tmp_path, {"id": "again", "kind": "record", "content": VARIANTS[name]})
    assert r.exit_code == 2 and "tombstone" in r.output, (name, r.output)


def test_erased_text_in_meta_is_refused(erased: str, tmp_path: Path):
    r = _put(erased, tmp_path, {"id": "again", "kind": "record", "content": {"text": "harmless"},
                               "meta": {"note": TEXT.upper()}})
    assert r.exit_code == 2 and "tombstone" in r.output, r.output


def test_unrelated_text_and_short_labels_still_go_in(erased: str, tmp_path: Path):
    r = _put(erased, tmp_path, {"id": "new", "kind": "record", "content": {"text": "The user likes green tea.",
                                                                         "label": "allergy"}})
    assert r.exit_code == 0, r.output


def test_normalise_folds_forms():
    base = normalise("Crème brûlée at Zoë's.")
    for form in ("NFD", "NFKD", "NFKC"):
        assert normalise(unicodedata.normalize(form, "Crème brûlée at Zoë's.")) == base
    assert normalise("CRÈME  BRÛLÉE\u200b at zoë's") == base


def test_every_default_ignorable_code_point_is_removed():
    """Independent of the table: every format character (category Cf) and every variation selector
    Python's own Unicode database knows is dropped, except the visible format marks (prepended
    concatenation marks such as ARABIC NUMBER SIGN, and the interlinear annotation characters, which
    are not default-ignorable), and the Hangul fillers become a space."""
    import sys

    visible = {0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605, 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD,
               0x110CD, 0xFFF9, 0xFFFA, 0xFFFB, *range(0x13430, 0x13460)}
    base = normalise("the user keeps a spare key under the mat")
    missed = []
    for cp in range(sys.maxunicode + 1):
        c = chr(cp)
        if cp in visible or not (unicodedata.category(c) == "Cf" or "VARIATION SELECTOR" in unicodedata.name(c, "")):
            continue
        if normalise(f"the user keeps a spare k{c}ey under the mat") != base:
            missed.append(f"U+{cp:04X}")
    assert not missed, missed
    for filler in "\u115f\u1160\u3164\uffa0":
        assert normalise("the user keeps a spare key under the mat".replace(" ", filler)) == base


def test_quotes_and_lines_and_keys_are_what_a_write_says():
    from memsteward.textnorm import digest_of, said_text_digests, text_digests

    assert normalise('"Bob\'s PIN"') == normalise("«bob's pin»") == normalise("(Bob's PIN.)") == "bob's pin"
    erased = text_digests("Alice lives at 12 Rue Cler in Paris.")
    # a short line or key is not checked: it would match every short erased value's whole text ("yes")
    assert not text_digests("PIN 4829") & said_text_digests("Bob's card\nPIN 4829")
    assert not text_digests("yes") & said_text_digests({"likes tea": "daily", "yes": 1})
    assert erased & said_text_digests("Alice drinks green tea.\nAlice lives at 12 Rue Cler in Paris")
    assert erased & said_text_digests({"x": {"Alice lives at 12 Rue Cler in Paris": 1}})
    # a tombstone holds no key's digest: a value's schema does not block later values of its shape
    assert digest_of("a rather long field name for facts") not in text_digests({"a rather long field name for facts": "x"})


def _state(db: str) -> dict:
    from memsteward.store import Store

    store = Store.open(db)
    try:
        return store.dump_state()
    finally:
        store.close()


def test_store_import_refuses_erased_text(erased: str, tmp_path: Path):
    """`store import` checked no tombstone: the erased text came back in a bulk import (issue 25)."""
    doc = tmp_path / "again.json"
    doc.write_text(json.dumps({"artifacts": [
        {"id": "fine", "kind": "record", "content": {"text": "The user likes green tea.", "label": "tea"}, "meta": {}},
        {"id": "back", "kind": "record", "content": {"text": TEXT.lower() + "  ", "label": "allergy"}, "meta": {}},
    ], "edges": []}))
    before = _state(erased)
    r = CliRunner().invoke(main, ["store", "import", "--store", erased, str(doc)])
    assert r.exit_code == 2 and "tombstone" in r.output and "'back'" in r.output, r.output
    assert "Traceback" not in r.output
    after = _state(erased)
    assert {k: v for k, v in before.items() if k != "audit"} == {k: v for k, v in after.items() if k != "audit"}


def test_correct_replacement_of_another_root_refuses_erased_text(erased: str, tmp_path: Path):
    """A `correct` replacement of another root carried the erased text back into a servable root."""
    ev = tmp_path / "correct.json"
    ev.write_text(json.dumps({"type": "correct", "roots": ["p2"], "replacements": [
        {"id": "p2", "kind": "record", "content": {"text": TEXT.upper(), "label": "allergy"}, "meta": {}}]}))
    before = _state(erased)
    r = CliRunner().invoke(main, ["repair", "--policy", POLICY, "--store", erased, "--event", str(ev)])
    assert r.exit_code == 2 and "tombstone" in r.output and "'p2'" in r.output, r.output
    after = _state(erased)
    assert {k: v for k, v in before.items() if k != "audit"} == {k: v for k, v in after.items() if k != "audit"}


def test_store_import_waits_for_an_unfinished_event(tmp_path: Path):
    """`store import` wrote into a store whose event was unfinished; it is fenced like `put`."""
    from memsteward.policy.loader import load_policy_source
    from memsteward.repair.events import parse_event
    from memsteward.repair.execute import policy_document
    from memsteward.repair.plan import compute_plan
    from memsteward.store import Store
    from memsteward.store.api import BarrierSpec

    db = str(tmp_path / "s.db")
    assert CliRunner().invoke(main, ["store", "import", "--store", db, str(DATA / "store.json")]).exit_code == 0
    store = Store.open(db)
    policy = load_policy_source(POLICY).policy
    plan = compute_plan(policy, store.snapshot(), parse_event({"type": "delete", "roots": ["p1"]}, store.snapshot()))
    store.barrier(BarrierSpec(plan.to_json(), policy_document(policy), {}))
    store.close()
    doc = tmp_path / "more.json"
    doc.write_text(json.dumps({"artifacts": [{"id": "x", "kind": "record", "content": {"text": "hello there",
                                                                                     "label": "x"}, "meta": {}}],
                               "edges": []}))
    before = _state(db)
    r = CliRunner().invoke(main, ["store", "import", "--store", db, str(doc)])
    assert r.exit_code == 2 and "unfinished event" in r.output, r.output
    assert _state(db) == before
