"""Tenants (issue 28): each tenant's store beside the base store — its own provenance graph, event
lock, audit chain and tombstones — on SQLite (a file per tenant) and PostgreSQL (a schema per tenant
in one database). References are by hand: which ids each tenant may see, which writes must fail.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.api import open_store
from memsteward.cli import main
from memsteward.errors import InputError
from memsteward.policy.loader import load_policy_source
from memsteward.repair.auditchain import first_broken
from memsteward.repair.events import parse_event
from memsteward.repair.execute import barrier, recover, run_event
from memsteward.repair.plan import compute_plan
from memsteward.store.tenants import list_tenants

ROOT = Path(__file__).resolve().parent.parent
POLICY = str(ROOT / "policies" / "default.yaml")
TEXT = "Alice lives in Paris near the old museum with her two cats"


def _policy():
    return load_policy_source(POLICY).policy


def _url(base: str, tenant: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}tenant={tenant}"


def _fill(store, who: str) -> None:
    store.record({"id": "n1", "kind": "record", "content": f"{TEXT} ({who})" if who != "alice" else TEXT})
    store.record({"id": "s1", "kind": "summary", "content": f"summary of {who}'s notes"}, inputs=["n1"])


def test_each_tenant_is_a_store_of_its_own(store_at):
    base = store_at("base")
    alice, bob = open_store(base, tenant="alice"), open_store(_url(base, "bob"))
    try:
        _fill(alice, "alice")
        _fill(bob, "bob")
        assert (alice.tenant, bob.tenant) == ("alice", "bob")
        alice.record({"id": "a2", "kind": "record", "content": "only alice's"})
        assert bob.get("a2") is None and alice.get("a2") is not None
        with pytest.raises(InputError, match="unknown artifact 'a2'"):  # a cascade never crosses tenants
            bob.record({"id": "x", "kind": "summary", "content": "from alice"}, inputs=["a2"])
        # events and tombstones are per tenant: alice's delete leaves bob's n1 and the text free there
        run_event(alice, _policy(), parse_event({"type": "delete", "roots": ["n1"]}, alice))
        assert alice.states()["n1"][0] == "erased" and bob.states()["n1"][0] == "servable"
        assert bob.record({"id": "b9", "kind": "record", "content": TEXT}).version == 1
        assert alice.audit_head() != bob.audit_head()
        for s in (alice, bob):
            assert first_broken(s.audit_rows(), s.audit_head(), None) is None
        assert list_tenants(base) == ["alice", "bob"]
    finally:
        alice.close()
        bob.close()
    again = open_store(base, tenant="alice", create=False)  # the same tenant store, reopened
    assert again.states()["n1"][0] == "erased"
    again.close()


def test_one_tenants_event_and_write_lock_never_hold_up_another(store_at):
    base = store_at("locks")
    alice, bob, bob2 = (open_store(_url(base, t)) for t in ("alice", "bob", "bob"))
    try:
        _fill(alice, "alice")
        _fill(bob, "bob")
        policy = _policy()
        plan = compute_plan(policy, alice, parse_event({"type": "delete", "roots": ["n1"]}, alice))
        barrier(alice, policy, plan, alice.generation())  # alice's event stays unfinished meanwhile
        run_event(bob, policy, parse_event({"type": "delete", "roots": ["n1"]}, bob))  # not refused
        assert bob.unfinished_event() is None and alice.unfinished_event() is not None
        done: list[int] = []
        with alice.transaction() as conn:  # alice's write lock held
            conn.execute("SELECT COUNT(*) FROM artifacts").fetchone()
            t = threading.Thread(target=lambda: done.append(bob2.record(
                {"id": "b2", "kind": "record", "content": "bob goes on"}).version))
            t.start()
            t.join(timeout=60)
        assert done == [1]
        recover(alice)
    finally:
        for s in (alice, bob, bob2):
            s.close()


def test_the_tenants_command_lists_them(store_at):
    base = store_at("cli")
    for t in ("carol", "alice"):
        open_store(base, tenant=t).close()
    r = CliRunner().invoke(main, ["store", "tenants", "--store", base])
    assert r.exit_code == 0 and r.output.split() == ["alice", "carol"]
    r = CliRunner().invoke(main, ["store", "tenants", "--store", base, "--json"])
    assert json.loads(r.output) == ["alice", "carol"]
    r = CliRunner().invoke(main, ["store", "put", "--store", _url(base, "carol"), "-"],
                           input=json.dumps({"id": "c1", "kind": "record", "content": "carol's"}))
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["store", "serve", "--store", _url(base, "carol"), "--json"])
    assert [a["id"] for a in json.loads(r.output)] == ["c1"]


@pytest.mark.parametrize("bad", ["", "x" * 33, "../etc", "a;drop", "Alice", "a b", "a__b", "a'b", "a/b", "_a"])
def test_a_bad_tenant_name_exits_2_and_creates_nothing(store_at, bad):
    base = store_at("bad")
    open_store(base).close()
    before = list_tenants(base)
    for args in (["store", "serve", "--store", f"{base}{'&' if '?' in base else '?'}tenant={bad}"],
                 ["store", "put", "--store", f"{base}{'&' if '?' in base else '?'}tenant={bad}", "-"]):
        r = CliRunner().invoke(main, args, input='{"id": "x", "kind": "record", "content": "y"}')
        assert r.exit_code == 2, r.output
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and "tenant" in lines[0] and "Traceback" not in r.output
    with pytest.raises(InputError):
        open_store(base, tenant=bad)
    assert list_tenants(base) == before
    assert not Path(str(base) + ".tenants").exists()
