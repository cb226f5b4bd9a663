"""Planning reads content only where a check may need it (MemoRepair §2.3: a mode decision reads
kind, arch, metadata and states): the roots (the content scan) and the members whose operators'
checks read content (``param``'s model check). Plans are the same as with every content read."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest

from memsteward.policy.loader import load_policy
from memsteward.repair.artifacts import Artifact
from memsteward.repair.events import load_event
from memsteward.repair.operators import default_operators
from memsteward.repair.plan import compute_plan
from memsteward.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"


class ContentSpy:
    """A store whose reads are recorded: which ids were read with their content."""

    def __init__(self, store: Store) -> None:
        self.store, self.with_content = store, set()

    def artifacts_of(self, ids: Collection[str], content: bool = True) -> dict[str, Artifact]:
        if content:
            self.with_content.update(ids)
        return self.store.artifacts_of(ids, content)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.fixture
def store(tmp_path) -> Store:
    s = Store(str(tmp_path / "s.db"))
    from memsteward.repair.artifacts import parse_store_document, read_json

    doc, text = read_json(str(DATA / "store.json"))
    s.import_snapshot(parse_store_document(doc, "store.json", text))
    return s


@pytest.mark.parametrize("event_name", ["delete", "correct", "migrate"])
def test_content_is_read_for_roots_and_content_checks_only(store, event_name):
    policy = load_policy(str(ROOT / "policies" / "default.yaml"))  # param retrains neural skills
    event = load_event(str(DATA / f"event-{event_name}.json"), store.snapshot())
    spy = ContentSpy(store)
    plan = compute_plan(policy, spy, event, "mincut", "ortools")
    neural = {i for i in plan.cascade if store.get(i).arch == "neural"}
    if event_name == "delete":
        assert neural, "the delete's cascade has a neural skill (its param check reads the model)"
    assert len(plan.cascade) > len(spy.with_content), "some members' content was not read"
    untracked_roots = set(plan.untracked)  # found by the content scan: read as roots of their own scope
    assert spy.with_content == set(event.roots) | neural | untracked_roots
    # the same plan as from a source that always holds every content
    assert plan.to_json() == compute_plan(policy, store.snapshot(), event, "mincut", "ortools").to_json()


def test_a_check_that_does_not_declare_itself_sees_the_stored_content(store):
    policy = load_policy(str(ROOT / "policies" / "default.yaml"))
    event = load_event(str(DATA / "event-delete.json"), store.snapshot())
    seen: dict[str, Any] = {}

    class Curious:  # a pluggable operator: no ``checks_content``, so its check may read content
        name = "regen:curious"

        def check(self, artifact: Artifact) -> str | None:
            seen[artifact.id] = artifact.content
            return None

        def __call__(self, artifact, ctx):
            raise AssertionError("not run when planning")

    ops = default_operators()
    ops.register("regen", Curious(), kind="summary")
    plan = compute_plan(policy, store, event, "mincut", "ortools", ops)
    summaries = [c.id for c in plan.candidates if c.kind == "summary" and c.mode == "regen"]
    assert summaries and set(summaries) <= set(seen)
    for i in summaries:
        assert seen[i] is not None and seen[i] == store.get(i).content
