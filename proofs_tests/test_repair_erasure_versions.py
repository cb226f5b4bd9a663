"""Deleting a root that was corrected before erases every version of it, not only the latest.

A root corrected twice has three stored versions (the original and two corrections); deleting it
must leave none of the three holding its content. The reference is the texts this test wrote
itself, looked for in every stored version and in the export.
"""

from __future__ import annotations

import json

import pytest

from memsteward.policy.loader import load_policy
from memsteward.repair.artifacts import parse_store_document
from memsteward.repair.events import parse_event
from memsteward.repair.execute import run_event
from memsteward.store import Store

pytestmark = pytest.mark.usefixtures("store_backend")  # the store suite runs on SQLite and PostgreSQL

ORIGINAL = "The user is allergic to peanuts."
FIRST_FIX = "The user is allergic to cashews."
SECOND_FIX = "The user is allergic to almonds."


def _store() -> Store:
    store = Store()
    store.import_snapshot(parse_store_document({
        "artifacts": [
            {"id": "r", "kind": "record", "content": {"text": ORIGINAL, "label": "allergy"}},
            {"id": "keep", "kind": "record", "content": {"text": "The user lives in Berlin.", "label": "home"}},
            {"id": "s", "kind": "summary", "content": "Allergy and home."},
        ],
        "edges": [{"src": "r", "dst": "s", "type": "influence"},
                  {"src": "keep", "dst": "s", "type": "influence"}],
    }, "<test>"))
    return store


def _event(store: Store, doc: dict) -> None:
    run_event(store, load_policy("policies/default.yaml"), parse_event(doc, store.snapshot()), "mincut", "networkx")


def _texts_held(store: Store, ident: str) -> list[tuple[int, str]]:
    """(version, text) for every stored version of ``ident`` whose content still holds a text."""
    out = []
    for version, _, _ in store.versions(ident):
        art = store.version_of(ident, version)
        if art.content is not None:
            out.append((version, json.dumps(art.content)))
    return out


def test_delete_after_two_corrections_erases_every_version():
    store = _store()
    for text in (FIRST_FIX, SECOND_FIX):
        _event(store, {"type": "correct", "roots": ["r"], "replacements": [
            {"id": "r", "kind": "record", "content": {"text": text, "label": "allergy"}, "meta": {}}]})
    held = _texts_held(store, "r")
    assert len(held) == 3 and [ORIGINAL in t or FIRST_FIX in t or SECOND_FIX in t for _, t in held] == [True] * 3
    _event(store, {"type": "delete", "roots": ["r"]})
    assert len(store.versions("r")) == 3, "the rows stay (ids and version numbers), only their content goes"
    assert all(erased for _, erased, _ in store.versions("r"))
    assert _texts_held(store, "r") == [], "a version of the deleted root still holds content"
    exported = json.dumps(store.export())
    for text in (ORIGINAL, FIRST_FIX, SECOND_FIX):
        assert text not in exported
    assert "r" not in {a.id for a in store.serve()}
    assert store.get("keep").content["text"] == "The user lives in Berlin."  # the other root is untouched


def test_deleted_derived_artifact_is_not_resurrected_by_a_later_cascade():
    """Found by the G5 machine: deleting s, then its root r, must not repair (and republish) s."""
    store = _store()
    _event(store, {"type": "delete", "roots": ["s"]})
    assert _texts_held(store, "s") == []
    _event(store, {"type": "delete", "roots": ["r"]})
    assert store.states()["s"][0] == "erased" and "s" not in {a.id for a in store.serve()}
    assert _texts_held(store, "s") == [] and _texts_held(store, "r") == []
    assert [v for v, _, _ in store.versions("s")] == [1]
