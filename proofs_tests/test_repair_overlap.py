"""Overlapping events: content withdrawn by an earlier delete never comes back through a later event.

Regression test: a chain procedure derived from an API spec and one trajectory is withdrawn when
the trajectory is deleted (its only procedure support is gone). A later migration of the API
reaches the chain again and rewrites chains to the new interface; the chain operator used to fall
back to the chain's *previous* calls — the withdrawn version, built from the erased trajectory —
and republished the deleted call arguments. The previous version may only be used when it was
servable before the event (``TransitionPlan.unservable``).
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

API_V1 = {"tools": {"forecast": {"params": {"city": "string"}, "required": ["city"]}}}
API_V2 = {"tools": {"get_forecast": {"params": {"city": "string"}, "required": ["city"]}},
          "renames": {"forecast": "get_forecast"}}
SECRET = "Secretville"


def _store() -> Store:
    doc = {"artifacts": [
        {"id": "api", "kind": "record", "content": API_V1},
        {"id": "traj", "kind": "record",
         "content": {"task": "trip", "calls": [{"tool": "forecast", "args": {"city": SECRET}}], "result": "ok"}},
        {"id": "chain", "kind": "skill", "arch": "chain",
         "content": {"goal": "trip", "calls": [{"tool": "forecast", "args": {"city": SECRET}}]}},
    ], "edges": [{"src": "api", "dst": "chain", "type": "influence"},
                 {"src": "traj", "dst": "chain", "type": "influence"}]}
    store = Store()
    store.import_snapshot(parse_store_document(doc, "<test>"))
    return store


def test_migration_after_delete_does_not_republish_deleted_calls():
    policy = load_policy("policies/tool-agent.yaml")
    store = _store()
    run_event(store, policy, parse_event({"type": "delete", "roots": ["traj"]}, store.snapshot()))
    assert store.states()["chain"][0] == "withdrawn"
    plan = run_event(store, policy, parse_event({"type": "migrate", "roots": ["api"], "interface": API_V2},
                                                store.snapshot()))
    served = json.dumps([a.content for a in store.serve()])
    assert SECRET not in served
    assert "chain" not in plan.republished
    assert plan.unservable == ("chain",)


def test_migration_of_a_servable_chain_still_uses_its_calls():
    policy = load_policy("policies/tool-agent.yaml")
    store = _store()
    plan = run_event(store, policy, parse_event({"type": "migrate", "roots": ["api"], "interface": API_V2},
                                                store.snapshot()))
    assert plan.unservable == ()
    assert plan.republished == ("chain",)
    assert store.get("chain").content["calls"][0]["tool"] == "get_forecast"
