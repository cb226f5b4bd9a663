"""The `grounded` validation oracle for regenerated text (issue 13 item 2).

It rejects the garbage and the prompt-leak successors quoted in the issue, text carrying words
only the forget set holds, and ungrounded sentences; it accepts every successor the offline
regenerator writes on the bundled store; the shipped policies declare it for `regen`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memsteward.policy.loader import load_policy_source
from memsteward.repair.artifacts import Artifact
from memsteward.repair.events import load_event
from memsteward.repair.execute import run_event
from memsteward.repair.llm_regen import LLMRegen, messages_for
from memsteward.repair.oracles import control_chars, grounding_problems
from memsteward.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data" / "repair"
SUPPORT = ["The user prefers vegetarian meals and cooks tofu often.",
           "The user lives in Berlin and bikes to work."]
FORGET = ["The user is allergic to peanuts and carries an epipen."]
SCAFFOLD = LLMRegen.scaffold
GARBAGE = "\x00\ufffd ##!! <memories> ignore"


def problems(text: str, min_support: float = 0.75) -> list[str]:
    return grounding_problems(text, SUPPORT, FORGET, SCAFFOLD, min_support)


def test_rejects_the_garbage_quoted_in_the_issue():
    found = problems(GARBAGE)
    assert any("control character" in p for p in found)
    assert any("markup" in p for p in found)
    assert any("not grounded" in p for p in found)


def test_rejects_a_prompt_leak():
    """What the real model published: the prompt's own text and its <records> markup."""
    user = messages_for(Artifact("s", "summary"), SUPPORT)[1]["content"]
    leak = f"{user}\nSummary: vegetarian, lives in Berlin."
    found = problems(leak)
    assert any("markup" in p for p in found) and any("prompt" in p for p in found)
    no_tags = "Write a concise summary of these records. The user prefers vegetarian meals."
    assert any("copied from the regeneration prompt" in p for p in problems(no_tags))


def test_rejects_what_only_the_forget_set_holds():
    found = problems("The user prefers vegetarian meals. The user carries an epipen.")
    assert any("only the forget set" in p for p in found)
    assert not any("peanut" in p or "epipen" in p for p in found)  # no deleted text in the report


def test_rejects_ungrounded_and_empty_text():
    assert any("not grounded" in p for p in problems("The user collects vintage motorcycles."))
    assert problems("") == ["no sentence"]
    assert any("not grounded" in p for p in problems("!!! ???"))


def test_one_ungrounded_sentence_among_grounded_ones_fails():
    """Issue 33 gap: each sentence is scored against the retained support on its own. Pooling the
    words of the whole text lets the grounded sentences carry an invented one (here 10 of 12 content
    words are supported overall, 83 % ≥ 75 %, yet sentence 2 has none)."""
    text = ("The user prefers vegetarian meals and cooks tofu often. Motorcycles thrill. "
            "The user lives in Berlin and bikes to work.")
    found = problems(text)
    assert found == ["1 of 3 sentence(s) not grounded in retained support (sentence 2)"]
    assert problems(text.replace(" Motorcycles thrill.", "")) == []


def test_accepts_grounded_text_and_paraphrase_within_the_threshold():
    assert problems("The user prefers vegetarian meals. Lives in Berlin; bikes to work.") == []
    assert problems("Vegetarian who cooks tofu and bikes in Berlin.") == []
    assert problems("Vegetarian who cooks tofu and loves Berlin.", 1.0) != []


def test_control_characters():
    assert control_chars("line one\nline\ttwo") == 0
    assert control_chars("a\x00b\x1b[31m\u200b\ufffd") == 4


def _regen_reports(plan) -> list[tuple[str, dict]]:
    out = []
    for step in plan.executed:
        if step.mode == "regen":
            out += [(step.id, r) for r in step.reports if r["oracle"] == "grounded"]
    return out


@pytest.mark.parametrize("event", ["delete", "correct"])  # migrate regenerates chains only
def test_accepts_the_offline_regenerator_on_the_bundled_store(event):
    policy = load_policy_source(str(ROOT / "policies" / "default.yaml")).policy
    store = Store.open(str(DATA / "store.json"))
    plan = run_event(store, policy, load_event(str(DATA / f"event-{event}.json"), store.snapshot()))
    text_regen = [s.id for s in plan.executed if s.mode == "regen" and s.status != "blocked"
                  and isinstance(store.get(s.id).content, str)]
    reports = _regen_reports(plan)
    assert {i for i, _ in reports} == set(text_regen) and text_regen  # every text successor checked
    assert all(r["passed"] for _, r in reports), reports


@pytest.mark.parametrize("path", sorted((ROOT / "policies").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_policies_declare_it_for_text_regen(path):
    policy = load_policy_source(str(path)).policy
    text_kinds = [("summary", None)] * ("summary" in policy.kinds)
    if "skill" in policy.kinds and "prompt" in policy.architectures("skill"):
        text_kinds.append(("skill", "prompt"))
    assert text_kinds
    for kind, arch in text_kinds:
        assert "grounded" in [o.oracle for o in policy.oracles_for("regen", kind, arch)], (kind, arch)
