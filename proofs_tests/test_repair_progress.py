"""Progress of long repairs: ``progress(done, total)`` counts every step outcome once (fresh and
resumed events, every executor), and the CLI draws it on stderr only when asked or on a terminal.
Human output of a large plan lists LIST_LIMIT lines per list and counts the rest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from store_import import import_document

from memsteward.api import apply_event, load_policy
from memsteward.cli import repair_cmds
from memsteward.repair.events import load_event
from memsteward.repair.execute import recover, run_event
from memsteward.repair.operators import operators_for
from memsteward.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
POLICY = ROOT / "policies" / "default.yaml"
EXE = str(Path(sys.executable).parent / "memsteward")


def _store(tmp_path: Path) -> Store:
    db = tmp_path / "s.db"
    import_document(db, DATA / "store.json")
    return Store.open(str(db))


def _counts_each_outcome_once(calls: list[tuple[int, int]], start: int, total: int) -> None:
    assert calls[0] == (start, total)
    assert calls[-1] == (total, total)
    assert [d for d, _ in calls] == list(range(start, total + 1))  # one call per outcome, none skipped
    assert {t for _, t in calls} == {total}


@pytest.mark.parametrize("event", ["delete", "correct", "migrate"])
@pytest.mark.parametrize("executor", ["sequential", "pool:2"])
def test_progress_counts_every_step_outcome_once(tmp_path, event, executor):
    store = _store(tmp_path)
    calls: list[tuple[int, int]] = []
    plan = apply_event(store, load_policy(str(POLICY)), load_event(str(DATA / f"event-{event}.json"), store),
                       executor=executor, progress=lambda d, t: calls.append((d, t)))
    assert len(plan.order) == len(plan.executed) > 0
    _counts_each_outcome_once(calls, 0, len(plan.order))


class Interrupt(BaseException):
    """Stands for a kill in the middle of the repair steps."""


class InterruptingOperators:
    """The policy's operators, but an operator call on the ``after``+1-th distinct artifact raises
    :class:`Interrupt` (an oracle may call the operator again on the same artifact)."""

    def __init__(self, inner, after: int) -> None:
        self.inner, self.after, self.seen = inner, after, set()

    def find(self, mode, kind, arch):
        op = self.inner.find(mode, kind, arch)
        if op is None:
            return None
        outer = self

        class Wrapped:
            name = op.name

            def check(self, artifact):
                return op.check(artifact)

            def __call__(self, artifact, ctx):
                outer.seen.add(artifact.id)
                if len(outer.seen) > outer.after:
                    raise Interrupt()
                return op(artifact, ctx)

        return Wrapped()


def test_a_resumed_event_starts_at_the_outcomes_already_recorded(tmp_path):
    store = _store(tmp_path)
    policy = load_policy(str(POLICY))
    event = load_event(str(DATA / "event-delete.json"), store)
    with pytest.raises(Interrupt):
        run_event(store, policy, event, "mincut", "ortools", InterruptingOperators(operators_for(policy), 2))
    pending = store.unfinished_event()
    assert pending is not None
    recorded = sum(1 for s in store.steps(pending[0]).values() if s.status in ("validated", "failed", "blocked"))
    assert recorded == 2
    calls: list[tuple[int, int]] = []
    plan = recover(store, progress=lambda d, t: calls.append((d, t)))
    assert plan is not None and plan.status == "done"
    _counts_each_outcome_once(calls, recorded, len(plan.order))


def _cli(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    tmp_path.mkdir()
    _store(tmp_path).close()
    return subprocess.run([EXE, "repair", "--policy", str(POLICY), "--store", str(tmp_path / "s.db"),
                           "--event", str(DATA / "event-delete.json"), "--json", *flags],
                          capture_output=True, text=True)


def test_cli_draws_progress_on_stderr_only_when_asked(tmp_path):
    import json

    shown = _cli(tmp_path / "a", "--progress")
    assert shown.returncode == 0, shown.stderr
    n = len(json.loads(shown.stdout)["order"])
    assert "repair" in shown.stderr and f"{n}/{n}" in shown.stderr  # stdout stays pure JSON
    for flags in ((), ("--no-progress",)):  # stderr is a pipe here, not a terminal: no bar by default
        quiet = _cli(tmp_path / f"b{len(flags)}", *flags)
        assert quiet.returncode == 0 and quiet.stderr == ""
        assert len(json.loads(quiet.stdout)["order"]) == n


def test_human_output_lists_a_bounded_number_of_lines(tmp_path, monkeypatch):
    store = _store(tmp_path)
    plan = apply_event(store, load_policy(str(POLICY)), load_event(str(DATA / "event-delete.json"), store))
    assert len(plan.candidates) >= 2 and len(plan.executed) >= 2
    monkeypatch.setattr(repair_cmds, "LIST_LIMIT", 1)
    lines: list[str] = []
    repair_cmds.describe_plan(plan, lines.append)
    assert sum(1 for line in lines if line.startswith("  q ")) == 1
    assert sum(1 for line in lines if line.startswith("  run ")) == 1
    more = [line for line in lines if "more steps of" in line]
    assert len(more) == 1 and f"{len(plan.executed) - 1} more steps of {len(plan.executed)}" in more[0]
    tally = more[0].split("— ")[1].split(" (")[0]
    assert sum(int(part.split()[-1]) for part in tally.split(", ")) == len(plan.executed)
    assert any(f"{len(plan.candidates) - 1} more candidates of {len(plan.candidates)}" in line for line in lines)
