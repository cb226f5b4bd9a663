"""A run of puts in one ``batch()`` call: first-hand puts of distinct keys (new, or overwrites
without dependants) are recorded in ONE memsteward transaction, all or none, and written in one
wrapped batch; any other run (a derived value, a repeated key, an item with dependants) is put one
by one, with the same result as separate puts. On LangGraph's InMemoryStore."""

from __future__ import annotations

import pytest
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

import memsteward
from memsteward.integrations.langgraph import GovernedStore, GovernedWriteRefused

POLICY = memsteward.load_policy(memsteward.bundled_path("policies", "default.yaml"))
NS = ("users", "erin")


def _gs(**kw) -> tuple[GovernedStore, list[int]]:
    gs = GovernedStore(InMemoryStore(), memsteward.open_store(), POLICY, **kw)
    calls: list[int] = []
    real = gs.store.record_many

    def record_many(writes, **kwargs):
        calls.append(len(writes))
        return real(writes, **kwargs)

    gs.store.record_many = record_many  # type: ignore[method-assign]
    return gs, calls


def test_first_hand_puts_are_recorded_in_one_transaction():
    gs, calls = _gs()
    gs.batch([PutOp(NS, f"m{k}", {"content": f"Erin memory number {k}."}) for k in range(5)])
    gs.batch([PutOp(NS, "m0", {"content": "Erin memory number zero, again."}),
              PutOp(NS, "m9", {"content": "Erin memory number nine."})])
    assert calls == [5, 2]
    assert gs.get(NS, "m0").value == {"content": "Erin memory number zero, again."}
    assert {it.key for it in gs.search(NS, limit=20)} == {"m0", "m1", "m2", "m3", "m4", "m9"}
    assert gs.store.get(gs.artifact_id(NS, "m0")).version == 2


def test_other_runs_are_put_one_by_one_with_the_same_result():
    gs, calls = _gs()
    gs.batch([PutOp(NS, "a", {"content": "Erin lives in Oslo."}), PutOp(NS, "b", {"content": "Erin rows."})])
    gs.batch([PutOp(NS, "s", {"content": "Erin lives in Oslo and rows.", "derived_from": [[list(NS), "a"], [list(NS), "b"]]}),
              PutOp(NS, "c", {"content": "Erin reads."})])
    gs.batch([PutOp(NS, "a", {"content": "Erin lives in Bergen."}), PutOp(NS, "d", {"content": "Erin sings."})])
    assert calls == [2, 1, 1, 1, 1]  # a derived value; then an item with a dependant (a correct event)
    assert "Oslo" not in gs.get(NS, "s").value["content"]  # the correction repaired the summary


def test_a_refused_put_refuses_the_whole_run():
    gs, _ = _gs(reingest="refuse")
    gs.put(NS, "x", {"content": "Erin's passport number is X1234567."})
    gs.delete(NS, "x")
    with pytest.raises(GovernedWriteRefused):
        gs.batch([PutOp(NS, "ok", {"content": "Erin likes tea."}),
                  PutOp(NS, "x", {"content": "Erin's passport number is X1234567."})])
    assert gs.artifact_id(NS, "ok") is None and gs.inner.get(NS, "ok") is None and gs.inner.get(NS, "x") is None


def test_abatch_records_a_run_the_way_batch_does():
    """Found by the red team (2026-12-03): ``abatch`` put a run one by one, so in [ok, refused] the
    first put landed where ``batch()`` refuses the run whole. Now a run is one transaction in both."""
    import asyncio

    gs, calls = _gs(reingest="refuse")
    asyncio.run(gs.abatch([PutOp(NS, f"m{k}", {"content": f"Erin memory number {k}."}) for k in range(5)]))
    assert calls == [5] and gs.get(NS, "m4").value == {"content": "Erin memory number 4."}
    gs.put(NS, "x", {"content": "Erin's passport number is X1234567."})
    gs.delete(NS, "x")
    with pytest.raises(GovernedWriteRefused):
        asyncio.run(gs.abatch([PutOp(NS, "ok", {"content": "Erin likes tea."}),
                               PutOp(NS, "x", {"content": "Erin's passport number is X1234567."})]))
    assert gs.artifact_id(NS, "ok") is None and gs.inner.get(NS, "ok") is None and gs.inner.get(NS, "x") is None
    derived = [PutOp(NS, "s", {"content": "Erin's memories.", "derived_from": [[list(NS), "m0"]]}),
               PutOp(NS, "t", {"content": "Erin reads."})]
    asyncio.run(gs.abatch(derived))  # a derived value: one by one, as batch() does
    assert calls[-2:] == [1, 1] and gs.get(NS, "s") is not None and gs.get(NS, "t") is not None


@pytest.mark.parametrize("run", [1, 3])
def test_an_adelete_during_an_abatch_put_leaves_no_text_in_the_wrapped_store(run):
    """Found by a third red-team round: abatch releases the adapter's lock between a put's record and
    its awaited wrapped write; an ``adelete`` of the key landing in between ran its event and
    write-back first, then the wrapped write put the erased text back. The put now checks, after its
    write, that what it recorded is still servable, and deletes (and scrubs) the item if not."""
    import asyncio

    class Slow(InMemoryStore):  # a wrapped store with I/O latency, as AsyncPostgresStore has
        async def abatch(self, ops):
            ops = list(ops)
            if any(isinstance(o, PutOp) and o.value is not None for o in ops):
                await asyncio.sleep(0.3)
            return await super().abatch(ops)

    inner = Slow()
    gs = GovernedStore(inner, memsteward.open_store(), POLICY)
    ops = [PutOp(NS, "p", {"content": "Erin's passport number is X1234567."})]
    ops += [PutOp(NS, f"o{k}", {"content": f"Erin note {k}."}) for k in range(run - 1)]

    async def main() -> None:
        async def deleter() -> None:
            await asyncio.sleep(0.1)
            await gs.adelete(NS, "p")
        await asyncio.gather(gs.abatch(ops), deleter())

    asyncio.run(main())
    assert gs.latest([(NS, "p")])[(NS, "p")][1] == "erased"
    assert inner.get(NS, "p") is None and gs.attest()["ok"]
    assert all(inner.get(NS, f"o{k}") is not None for k in range(run - 1))
