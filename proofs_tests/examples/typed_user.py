"""A small user script written against the public API only, type-checked with ``mypy --strict``
(proofs_tests/test_typed_examples.py) and run from the installed wheel (test_wheel_examples.py).

It is what a typed user writes: every name comes from ``memsteward`` itself, every value keeps its
declared type, and the errors are caught by their public classes.
"""

from __future__ import annotations

from pathlib import Path

import memsteward
from memsteward import Artifact, ClearancePlan, InputError, Policy, Store, TransitionPlan, WriteRefused


def load(path: Path) -> Policy:
    errors = [f for f in memsteward.check_policy(path) if f.severity == "error"]
    if errors:
        raise SystemExit(f"{path}: {len(errors)} error(s)")
    return memsteward.load_policy(path)


def forget(store: Store, policy: Policy, root: str) -> TransitionPlan:
    preview: TransitionPlan = memsteward.apply_event(store, policy, {"type": "delete", "roots": [root]},
                                                     dry_run=True)
    plan = memsteward.apply_event(store, policy, {"type": "delete", "roots": [root]})
    assert preview.republished == plan.republished
    return plan


def main() -> int:
    policy = load(memsteward.bundled_path("policies", "default.yaml"))
    store = memsteward.open_store(":memory:")
    first: Artifact = store.record({"id": "n1", "kind": "record", "content": "Alice lives in Paris"})
    store.record({"id": "n2", "kind": "record", "content": "Alice likes tea"})
    store.record({"id": "s1", "kind": "summary", "content": "Alice lives in Paris. Alice likes tea"},
                 inputs=[first.id, "n2"])
    plan = forget(store, policy, "n1")
    summary = store.get("s1")
    assert summary is not None and summary.content == "Alice likes tea"
    servable: list[str] = store.servable(["n1", "n2", "s1"])
    try:
        store.record({"id": "again", "kind": "record", "content": "Alice lives in Paris"})
    except WriteRefused as exc:
        reason: str = exc.reason
    try:
        memsteward.load_policy("no-such-policy.yaml")
    except InputError as exc:
        message: str = exc.render()
    ok = all(clause.ok for clause in memsteward.verify_plan(plan)) and bool(memsteward.attest(store)["ok"])
    clearance: ClearancePlan = memsteward.clear_context(memsteward.bundled_path("cases", "redundant.json"))
    print(plan.republished, servable, reason, "file not found" in message, ok, clearance.removed)
    return 0 if ok and clearance.recovered else 1


if __name__ == "__main__":
    raise SystemExit(main())
