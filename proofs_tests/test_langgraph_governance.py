"""The LangGraph adapter's governance rules, each on LangGraph's real InMemoryStore / SqliteStore:
whole values, meta, corrections, forget (preview digest), TTL on read, re-ingestion, O(1) get."""

from __future__ import annotations

import sqlite3
import time

import pytest
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

import memsteward
from memsteward.errors import InputError, WriteRefused
from memsteward.integrations.langgraph import GovernedStore, GovernedWriteRefused
from memsteward.integrations.langgraph.physical import raw_items
from memsteward.integrations.langgraph.ttl import expiring

POLICY = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))
NS = ("users", "alice")


def _gs(inner=None, **kw) -> GovernedStore:
    return GovernedStore(inner if inner is not None else InMemoryStore(), memsteward.open_store(), POLICY, **kw)


def _raw(gs: GovernedStore) -> str:
    return " ".join(repr(it.value) + repr(it.namespace) for it in raw_items(gs.inner))


def _profile(gs: GovernedStore) -> None:
    gs.put(NS, "home", {"content": "Alice lives at 12 Rue Cler in Paris."})
    gs.put(NS, "tea", {"content": "Alice drinks green tea."})
    gs.put(NS, "profile", {"content": "Alice drinks green tea.", "facts": ["12 Rue Cler", "green tea"],
                           "nested": {"city": "Paris"}, "age": 33,
                           "derived_from": [[list(NS), "home"], [list(NS), "tea"]]})


def test_every_string_is_governed_and_repair_rebuilds_the_whole_value():
    gs = _gs()
    _profile(gs)
    art = gs.store.get(gs.artifact_id(NS, "profile"))
    assert "12 Rue Cler" in art.content and "Paris" in art.content  # facts and nested fields are content
    gs.delete(NS, "home")
    value = gs.get(NS, "profile").value
    assert value == {"content": "Alice drinks green tea.", "derived_from": [[list(NS), "tea"]]}
    assert "Rue Cler" not in _raw(gs) and "Paris" not in _raw(gs)


def test_named_fields_govern_only_those_paths_and_keep_the_others():
    gs = _gs(fields=["content", "facts[*]"])
    _profile(gs)
    assert "Paris" not in gs.store.get(gs.artifact_id(NS, "profile")).content  # nested.city is not governed
    gs.delete(NS, "home")
    value = gs.get(NS, "profile").value
    assert "facts" not in value and value["nested"] == {"city": "Paris"} and value["age"] == 33


@pytest.mark.parametrize("fields, kept", [
    (["{content,facts}"], {"nested", "age"}),
    (["{content, facts}"], {"nested", "age"}),
    (["{facts,content}"], {"nested", "age"}),
    (["content", "{nested.city,facts[*]}"], {"age"}),
    (["{content,age}", "facts"], {"nested"}),
    (["*"], set()),
    (["content", "*.city"], set()),
])
def test_every_alternative_of_a_brace_path_is_governed_and_none_survives_a_repair(fields, kept):
    """LangGraph reads every alternative of ``{a,b}`` (and ``*`` every field): each is a governed
    head, so a repair keeps none of them — only the fields no governed path starts with."""
    gs = _gs(fields=fields)
    _profile(gs)
    gs.delete(NS, "home")
    raw = gs.inner.get(NS, "profile").value
    assert set(raw) == {"content", "derived_from"} | kept, raw
    assert "Rue Cler" not in _raw(gs)


def test_meta_passes_through_declared_keys_trusted_the_others_kept_apart():
    gs = _gs()
    gs.put(NS, "n", {"content": "x", "meta": {"transform": "concat", "source": "chat"}})
    meta = gs.store.get(gs.artifact_id(NS, "n")).meta
    assert meta["transform"] == "concat" and meta["lg_untrusted"] == {"source": "chat"} and "source" not in meta
    assert gs.get(NS, "n").value["meta"] == {"transform": "concat", "source": "chat"}
    with pytest.raises(InputError):
        gs.put(NS, "bad", {"content": "x", "meta": {"lg_address": 1}})
    assert gs.inner.get(NS, "bad") is None


def test_overwrite_with_dependants_is_a_correct_event():
    gs = _gs()
    _profile(gs)
    gs.put(NS, "home", {"content": "Alice lives in Lyon."})
    assert gs.last_plan is not None and gs.last_plan.event.type == "correct"
    profile = gs.get(NS, "profile").value
    assert "Lyon" in profile["content"] and "Paris" not in repr(profile)
    assert "Rue Cler" not in _raw(gs)
    assert gs.attest()["ok"]
    gs.put(NS, "tea", {"content": "Alice drinks black tea."})  # tea has a dependant too
    gs.put(NS, "solo", {"content": "a"})
    gs.last_plan = None
    gs.put(NS, "solo", {"content": "b"})                      # no dependants: a plain write
    assert gs.last_plan is None and gs.get(NS, "solo").value == {"content": "b"}


def test_forget_a_namespace_preview_digest_and_attestation():
    gs = _gs()
    _profile(gs)
    gs.put(("users", "bob"), "n", {"content": "Bob lives in Turin."})
    gs.put(("users", "alicia"), "n", {"content": "Alicia is another user."})
    gs.inner.put(NS, "around", {"content": "written around the adapter"})
    before = gs.store.dump_state()
    preview = gs.preview_forget(("users", "alice"))
    assert len(preview.roots) == 3 and gs.store.dump_state() == before and gs.get(NS, "home") is not None
    gs.put(("users", "alice"), "late", {"content": "Alice arrived late."})
    with pytest.raises(InputError):   # the store changed since the preview: nothing happens
        gs.forget(("users", "alice"), expect=preview.digest)
    assert gs.get(NS, "home") is not None
    preview = gs.preview_forget(("users", "alice"))
    out = gs.forget(("users", "alice"), expect=preview.digest)
    assert out["roots"] == 4 and out["attestation"]["ok"] and out["digest"] == preview.digest
    assert list(gs.inner.search(NS)) == [] and "alice'" not in _raw(gs)
    assert gs.get(("users", "bob"), "n") is not None and gs.get(("users", "alicia"), "n") is not None
    erased = [r for r in gs.store.audit_log() if r["action"] == "erase"]
    assert len(erased) == 4
    for ident in preview.roots:     # the namespace labels went with the erased versions' metadata
        assert gs.store.get(ident).meta == {} and "alice" not in ident


def test_forget_executes_the_preview_plan_when_nothing_changed_since(monkeypatch):
    """The store still at the preview's generation: its plan is executed as it is (not planned
    again); after any committed write it is planned again and the digests compared."""
    from memsteward.integrations.langgraph import forget as forget_mod

    calls = []
    real = forget_mod._plan
    monkeypatch.setattr(forget_mod, "_plan", lambda gs, prefix: calls.append(prefix) or real(gs, prefix))
    gs = _gs()
    _profile(gs)
    preview = gs.preview_forget(("users", "alice"))
    out = gs.forget(("users", "alice"), expect=preview.digest)
    assert len(calls) == 1 and out["roots"] == 3 and out["attestation"]["ok"] and gs.get(NS, "tea") is None
    gs.put(NS, "late", {"content": "Alice arrived late."})
    preview = gs.preview_forget(("users", "alice"))
    gs.put(("users", "bob"), "n", {"content": "Bob lives in Turin."})  # a write elsewhere: planned again
    out = gs.forget(("users", "alice"), expect=preview.digest)
    assert len(calls) == 3 and out["digest"] == preview.digest and gs.get(NS, "late") is None


def test_reingest_allow_refuse_review():
    for rule, served in (("allow", True), ("review", False)):
        gs = _gs(reingest=rule)
        gs.put(NS, "n", {"content": "Alice lives in Paris."})
        gs.delete(NS, "n")
        gs.put(NS, "again", {"content": "Alice lives in Paris."})
        assert (gs.get(NS, "again") is not None) is served
        if rule == "review":
            gs.approve(NS, "again")
            assert gs.get(NS, "again") is not None
    gs = _gs(reingest="refuse")
    gs.put(NS, "n", {"content": "Alice lives in Paris."})
    gs.delete(NS, "n")
    with pytest.raises(GovernedWriteRefused) as exc:
        gs.put(NS, "again", {"content": "Alice lives in Paris."})
    assert isinstance(exc.value, WriteRefused) and isinstance(exc.value, ValueError)
    gs.put(NS, "next", {"content": "Alice lives in Lyon."})  # the next valid put succeeds


@pytest.mark.parametrize("value", [
    {"content": "Alice lives at 12 Rue Cler in Paris.", "facts": ["green tea"]},   # beside a second field
    {"content": ["Alice drinks green tea.", "Alice lives at 12 Rue Cler in Paris."]},  # one list item of two
    {"content": "Alice drinks green tea.", "x": {"Alice lives at 12 Rue Cler in Paris.": 1}},  # an object key
    {"content": "Alice drinks green tea.", "Alice lives at 12 Rue Cler in Paris": "yes"},  # a top-level key
    {"content": "\u201cAlice lives\u200e at 12 Rue Cler in Paris\u201d"},  # quoted, a direction mark inside
], ids=["second-field", "list-item", "nested-key", "top-level-key", "quoted-invisible"])
def test_a_derived_put_carrying_deleted_text_is_refused_wherever_it_sits(value):
    """Found by a red team (2026-12-03): the governed strings are joined into one text, so a second
    field on either side defeated the per-string tombstone, and keys were never checked. Each form is
    refused, and nothing of it reaches the wrapped store."""
    gs = _gs()
    gs.put(NS, "home", {"content": "Alice lives at 12 Rue Cler in Paris.", "note": "her flat"})
    gs.put(NS, "tea", {"content": "Alice drinks green tea."})
    gs.delete(NS, "home")
    with pytest.raises(GovernedWriteRefused) as exc:
        gs.put(NS, "profile", {**value, "derived_from": [[list(NS), "tea"]]})
    assert exc.value.reason == "tombstone"
    assert gs.get(NS, "profile") is None and "Rue Cler" not in _raw(gs)
    gs.put(NS, "profile", {"content": "Alice drinks green tea.", "derived_from": [[list(NS), "tea"]]})


def test_a_short_deleted_value_does_not_refuse_later_lines_or_keys_that_say_it():
    """Found by a second red-team round: with every line and key checked at any length, a deleted
    "yes" (its whole text is tombstoned, however short) refused every later derived put with a field,
    a line or a key "yes". Lines and keys are checked from 20 characters, like strings."""
    gs = _gs()
    gs.put(NS, "answer", {"content": "yes"})
    gs.put(NS, "tea", {"content": "Alice drinks green tea."})
    gs.delete(NS, "answer")
    src = [[list(NS), "tea"]]
    gs.put(NS, "p1", {"content": "Alice drinks green tea.", "likes_tea": "yes", "derived_from": src})
    gs.put(NS, "p2", {"content": "Alice drinks green tea.\nyes", "derived_from": src})
    gs.put(NS, "p3", {"content": "Alice drinks green tea.", "x": {"home address": "yes"}, "derived_from": src})
    assert all(gs.get(NS, k) is not None for k in ("p1", "p2", "p3"))


def test_ttl_expiry_on_read_is_a_delete_event(tmp_path):
    conn = sqlite3.connect(str(tmp_path / "lg.db"), check_same_thread=False, isolation_level=None)
    inner = SqliteStore(conn, ttl={"default_ttl": None, "refresh_on_read": False})
    inner.setup()
    gs = _gs(inner)
    gs.put(NS, "mood", {"content": "Alice feels exhausted today."}, ttl=1 / 60)
    gs.put(NS, "sum", {"content": "Alice feels exhausted today.", "derived_from": [[list(NS), "mood"]]})
    deadline = time.monotonic() + 30
    while not expiring(inner) and time.monotonic() < deadline:
        time.sleep(0.25)
    assert gs.get(NS, "mood") is None                      # the read reconciles the expiry
    assert gs.last_plan is not None and gs.last_plan.event.type == "delete"
    assert gs.get(NS, "sum") is None and "exhausted" not in _raw(gs)
    assert gs.store.get(gs.artifact_id(NS, "mood")).state == "erased"


def test_get_is_one_probe_whatever_the_incarnations():
    gs = _gs()
    for k in range(30):
        gs.put(NS, "k", {"content": f"fact {k}"})
        gs.delete(NS, "k")
    gs.put(NS, "k", {"content": "last"})
    assert gs.ids.incarnation(gs.artifact_id(NS, "k")) == 31
    calls = []
    real = gs.store.last_with_prefix
    gs.store.last_with_prefix = lambda prefixes: calls.append(list(prefixes)) or real(prefixes)  # type: ignore[method-assign]
    assert gs.get(NS, "k").value == {"content": "last"}
    assert len(calls) == 1 and len(calls[0]) == 1


def test_list_namespaces_serves_only_namespaces_holding_a_servable_item():
    """InMemoryStore keeps a namespace's entry after its last item is deleted: the adapter must not
    list an erased user's labels, and offsets and limits count the namespaces it lists."""
    import asyncio

    gs = _gs()
    carol = ("users", "carol-7731", "diagnosis-hiv")
    gs.put(carol, "n1", {"content": "Carol was diagnosed in March."})
    gs.put(("users", "dave", "memories"), "n1", {"content": "Dave likes chess."})
    gs.put(("users", "erin"), "n1", {"content": "Erin plays go."})
    gs.put(("users", "erin", "deep", "er"), "n1", {"content": "Erin reads."})
    gs.put(("users", "fay", "memories"), "n1", {"content": "Fay swims."})
    gs.forget(("users", "carol-7731"), expect=gs.preview_forget(("users", "carol-7731")).digest)
    gs.delete(("users", "erin"), "n1")  # ("users", "erin") is empty; ("users", "erin", "deep", "er") is not
    assert carol in gs.inner.list_namespaces()  # the wrapped store still lists it
    live = [("users", "dave", "memories"), ("users", "erin", "deep", "er"), ("users", "fay", "memories")]
    assert gs.list_namespaces() == live
    assert asyncio.run(gs.alist_namespaces()) == live
    assert gs.list_namespaces(prefix=("users", "carol-7731")) == []
    assert gs.list_namespaces(suffix=("diagnosis-hiv",)) == []
    assert gs.list_namespaces(max_depth=2) == [("users", "dave"), ("users", "erin"), ("users", "fay")]
    assert gs.list_namespaces(limit=1, offset=1) == [("users", "erin", "deep", "er")]
    assert asyncio.run(gs.alist_namespaces(limit=2, offset=1)) == live[1:]
    assert gs.list_namespaces(limit=1, offset=3) == []


def test_a_key_that_normalising_lengthens_is_checked():
    """Found by a third red-team round: keys were filtered by their raw length, so an erased
    'Maßstraße 123 Köln' (18 characters, 20 once ß folds to ss) got through as a key."""
    gs = _gs()
    gs.put(NS, "addr", {"content": "Maßstraße 123 Köln"})
    gs.put(NS, "tea", {"content": "Alice drinks green tea."})
    gs.delete(NS, "addr")
    with pytest.raises(GovernedWriteRefused):
        gs.put(NS, "p", {"content": "Alice drinks green tea.", "Maßstraße 123 Köln": True,
                         "derived_from": [[list(NS), "tea"]]})
