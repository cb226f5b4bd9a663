"""The LangGraph adapter on LangGraph's real stores (InMemoryStore, and SqliteStore from
langgraph-checkpoint-sqlite): fenced puts, guarded get/search, governed deletes.

The Hypothesis reference is a token model independent of memsteward: every record carries a fresh
token, a summary the tokens of its sources; after a delete of an item, none of its tokens may be
returned by get/search, nor be held anywhere in the wrapped store (read raw, around the adapter).
"""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

import memsteward
from memsteward.errors import WriteRefused
from memsteward.integrations.langgraph import GovernedStore, GovernedWriteRefused
from memsteward.repair.oracles import ORACLES

POLICY = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))
NS = ("mem", "alice")


def _sqlite_store() -> SqliteStore:
    s = SqliteStore(sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None))
    s.setup()
    return s


INNER = {"memory": InMemoryStore, "sqlite": _sqlite_store}


def _raw_texts(inner) -> list[str]:
    """Every value the wrapped store holds, read around the adapter."""
    out, offset = [], 0
    while True:
        page = inner.search(("mem",), limit=100, offset=offset)
        out += [repr(it.value) for it in page]
        if len(page) < 100:
            return out
        offset += 100


@pytest.mark.parametrize("backend", sorted(INNER))
def test_delete_hides_repairs_and_removes(backend):
    inner = INNER[backend]()
    gs = GovernedStore(inner, memsteward.open_store(), POLICY)
    gs.put(NS, "n1", {"content": "Alice lives in Paris"})
    gs.put(NS, "n2", {"content": "Alice likes tea"})
    gs.put(NS, "n3", {"content": "Alice plays chess"})
    gs.put(NS, "s1", {"content": "Alice lives in Paris. Alice likes tea",
                      "derived_from": [[list(NS), "n1"], [list(NS), "n2"]]})
    gs.put(NS, "s2", {"content": "Alice lives in Paris", "derived_from": [[list(NS), "n1"]]})
    gs.put(NS, "s3", {"content": "Alice plays chess", "derived_from": [[list(NS), "n3"]]})
    inner.put(NS, "sneaky", {"content": "written around the adapter"})
    assert {it.key for it in gs.search(NS)} == {"n1", "n2", "n3", "s1", "s2", "s3"}
    assert gs.get(NS, "sneaky") is None
    gs.delete(NS, "n1")
    plan = gs.last_plan
    assert set(plan.barrier) == {gs.ids.of(NS, k) for k in ("n1", "s1", "s2")}
    assert gs.get(NS, "n1") is None and gs.get(NS, "s2") is None
    s1 = gs.get(NS, "s1")
    assert s1.value["content"] == "Alice likes tea" and s1.value["derived_from"] == [[list(NS), "n2"]]
    assert {it.key for it in gs.search(NS)} == {"n2", "n3", "s1", "s3"}
    # gone from the wrapped store, not only hidden
    assert inner.get(NS, "n1") is None and inner.get(NS, "s2") is None
    assert not any("Paris" in t for t in _raw_texts(inner))
    # fencing: deriving from the deleted item, or putting its content again, is refused
    with pytest.raises(WriteRefused) as exc:
        gs.put(NS, "s4", {"content": "x", "derived_from": [[list(NS), "n1"]]})
    assert exc.value.reason == "fenced" and inner.get(NS, "s4") is None
    # a derived value carrying the deleted content is the leak path: refused, as a LangGraph error too
    with pytest.raises(GovernedWriteRefused) as exc:
        gs.put(NS, "s9", {"content": "Alice lives in Paris", "derived_from": [[list(NS), "n2"]]})
    assert exc.value.reason == "tombstone" and isinstance(exc.value, ValueError) and inner.get(NS, "s9") is None
    # the user saying it again first-hand is a new memory (reingest: allow, the default)
    gs.put(NS, "n9", {"content": "Alice lives in Paris"})
    assert gs.get(NS, "n9").value["content"] == "Alice lives in Paris"
    gs.delete(NS, "n9")
    # a re-created key gets a new incarnation and is served again
    gs.put(NS, "n1", {"content": "Alice lives in Lyon"})
    assert gs.get(NS, "n1").value["content"] == "Alice lives in Lyon"
    assert memsteward.attest(gs.store)["ok"]


def test_barrier_hides_the_cascade_from_other_readers_during_the_event(tmp_path):
    """While the delete event validates its successors (after the barrier, before publication), a
    second adapter on the same provenance database and wrapped store sees none of the cascade,
    although the wrapped store still holds it, and cannot derive from it; its unrelated writes go on."""
    inner = _sqlite_store_at(str(tmp_path / "lg.db"))
    seen: list[dict] = []

    def observing_schema(spec, x):
        reader = GovernedStore(_sqlite_store_at(str(tmp_path / "lg.db")),
                               memsteward.open_store(str(tmp_path / "prov.db")), POLICY)
        keys = ("n1", "n2", "s1", "s2")
        try:
            reader.put(NS, "late", {"content": "late", "derived_from": [[list(NS), "s1"]]})
            refused = None
        except WriteRefused as exc:
            refused = exc.reason
        seen.append({"get": {k: reader.get(NS, k) is not None for k in keys},
                     "search": sorted(it.key for it in reader.search(NS) if it.key != "other"),
                     "held": {k: reader.inner.get(NS, k) is not None for k in keys}, "refused": refused})
        reader.put(NS, "other", {"content": "Bob likes jazz", "derived_from": [[list(NS), "n2"]]})
        reader.store.close()
        return ORACLES["schema"](spec, x)

    gs = GovernedStore(inner, memsteward.open_store(str(tmp_path / "prov.db")), POLICY,
                       oracles={**ORACLES, "schema": observing_schema})
    gs.put(NS, "n1", {"content": "Alice lives in Paris"})
    gs.put(NS, "n2", {"content": "Alice likes tea"})
    gs.put(NS, "s1", {"content": "Alice lives in Paris. Alice likes tea",
                      "derived_from": [[list(NS), "n1"], [list(NS), "n2"]]})
    gs.put(NS, "s2", {"content": "Alice likes tea. Alice lives in Paris",
                      "derived_from": [[list(NS), "n1"], [list(NS), "n2"]]})
    gs.delete(NS, "n1")
    assert seen, "the oracle ran during the event"
    for view in seen:
        assert view["get"] == {"n1": False, "n2": True, "s1": False, "s2": False}
        assert view["search"] == ["n2"]
        assert all(view["held"].values())       # hidden by the barrier, not yet removed
        assert view["refused"] == "fenced"
    assert {it.key for it in gs.search(NS)} == {"n2", "s1", "s2", "other"}


def _sqlite_store_at(path: str) -> SqliteStore:
    s = SqliteStore(sqlite3.connect(path, check_same_thread=False, isolation_level=None))
    s.setup()
    return s


def test_search_keeps_limit_and_offset_over_servable_items():
    inner = InMemoryStore()
    gs = GovernedStore(inner, memsteward.open_store(), POLICY)
    for k in range(30):
        gs.put(NS, f"k{k:02d}", {"content": f"fact {k}"})
    for k in range(0, 30, 2):
        inner.put(NS, f"z{k:02d}", {"content": "unrecorded"})   # not servable: never recorded
    got = [it.key for it in gs.search(NS, limit=7, offset=5)]
    assert got == [f"k{k:02d}" for k in range(30)][5:12]


def test_async_methods():
    inner = InMemoryStore()
    gs = GovernedStore(inner, memsteward.open_store(), POLICY)

    async def scenario():
        await gs.aput(NS, "n1", {"content": "Bob lives in Rome"})
        await gs.aput(NS, "n2", {"content": "Bob likes jazz"})
        await gs.aput(NS, "s", {"content": "Bob lives in Rome. Bob likes jazz",
                                "derived_from": [[list(NS), "n1"], [list(NS), "n2"]]})
        await gs.adelete(NS, "n1")
        return await gs.aget(NS, "n1"), await gs.aget(NS, "s"), await gs.asearch(NS)

    n1, s, found = asyncio.run(scenario())
    assert n1 is None and s.value["content"] == "Bob likes jazz"
    assert {it.key for it in found} == {"n2", "s"}
    assert inner.get(NS, "n1") is None


class GovernedMachine(RuleBasedStateMachine):
    """Random put / derive / delete / search sequences; tokens are the independent reference:
    each put carries a fresh token, a summary its own token plus its sources' text; a delete must
    make every token the item ever introduced disappear from reads and from the wrapped store."""

    backend = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.inner = INNER[self.backend]()
        self.gs = GovernedStore(self.inner, memsteward.open_store(), POLICY)
        self.fresh = 0
        self.live: dict[str, set[str]] = {}     # key → tokens it was put with (the model)
        self.deleted: set[str] = set()          # tokens of deleted items

    def _token(self) -> str:
        self.fresh += 1
        return f"tok{self.fresh}"

    @rule(key=st.sampled_from(["a", "b", "c", "d", "e"]))
    def put_record(self, key):
        tok = self._token()
        self.gs.put(NS, key, {"content": f"Fact {tok}."})
        self.live.setdefault(key, set()).add(tok)

    @precondition(lambda self: self.live)
    @rule(key=st.sampled_from(["s", "t", "u"]), data=st.data())
    def put_summary(self, key, data):
        visible = sorted(k for k in self.live if self.gs.get(NS, k) is not None and k != key)
        if not visible:
            return
        sources = data.draw(st.lists(st.sampled_from(visible), min_size=1, max_size=3, unique=True))
        tok = self._token()
        text = " ".join([f"Note {tok}."] + [self.gs.get(NS, k).value["content"] for k in sources])
        current = self.gs.artifact_id(NS, key)
        below = self.gs.store.reach([current]) if current and self.gs.get(NS, key) is not None else frozenset()
        cycle = any(self.gs.artifact_id(NS, k) in below for k in sources)
        try:
            self.gs.put(NS, key, {"content": text, "derived_from": [[list(NS), k] for k in sources]})
        except GovernedWriteRefused as exc:  # deriving an item from its own dependant is refused
            assert cycle and exc.reason == "cycle", exc
            return
        assert not cycle
        self.live.setdefault(key, set()).add(tok)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def delete(self, data):
        key = data.draw(st.sampled_from(sorted(self.live)))
        self.deleted |= self.live.pop(key)
        self.gs.delete(NS, key)

    @rule(key=st.sampled_from(["x", "y"]))
    def put_around_the_adapter(self, key):
        self.inner.put(NS, key, {"content": "never recorded"})

    @rule(query=st.sampled_from([None, "Fact"]))
    def search(self, query):
        for it in self.gs.search(NS, query=query, limit=50):
            assert not any(f"{t}." in repr(it.value) for t in self.deleted), it
            assert it.key not in ("x", "y"), it

    @invariant()
    def nothing_deleted_is_served_or_held(self):
        assert self.gs.get(NS, "x") is None and self.gs.get(NS, "y") is None
        for key in ("a", "b", "c", "d", "e", "s", "t", "u"):
            it = self.gs.get(NS, key)
            if it is not None:
                assert not any(f"{t}." in it.value["content"] for t in self.deleted), (key, it.value)
                ident = self.gs.artifact_id(NS, key)
                assert self.gs.store.states()[ident][0] in ("servable", "republished")
        raw = " ".join(_raw_texts(self.inner))  # the wrapped store itself, around the adapter
        assert not any(f"{t}." in raw for t in self.deleted), raw


class SqliteGovernedMachine(GovernedMachine):
    backend = "sqlite"


@pytest.mark.parametrize("machine", [GovernedMachine, SqliteGovernedMachine], ids=["memory", "sqlite"])
def test_governed_store_never_serves_or_keeps_deleted_content(machine):
    run_state_machine_as_test(machine, settings=settings(max_examples=25, stateful_step_count=15, deadline=None,
                                                         suppress_health_check=[HealthCheck.too_slow]))
