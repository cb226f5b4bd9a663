"""The LoCoMo fault-injection builder on a small conversation the test writes itself."""

from __future__ import annotations

import json

import pytest

from memsteward.clearance.case import parse_case
from memsteward.clearance.cohort import run_cohort, verified
from memsteward.clearance.evaluators import OfflineEvaluator
from memsteward.clearance.locomo import BM25, build_locomo_cohort, load_conversation
from memsteward.clearance.metrics import summary_table
from memsteward.errors import InputError
from memsteward.policy.model import ClearanceSpec


def conversation() -> dict:
    facts = [
        ("Jonas adopted a dog named Pepper.", "D1:2"),
        ("Jonas works as a nurse in Bergen.", "D1:4"),
        ("Jonas started learning the cello.", "D2:1"),
        ("Jonas visited his aunt in Tromso.", "D2:3"),
        ("Jonas cooks pasta every Friday.", "D3:1"),
        ("Jonas runs along the harbour in the morning.", "D3:2"),
        ("Jonas reads crime novels at night.", "D3:5"),
    ]
    return {
        "speaker_a": "Jonas", "speaker_b": "Ida",
        "session_1_date_time": "1:00 pm on 1 May, 2023",
        "session_1_observation": {"Jonas": [list(f) for f in facts[:2]], "Ida": []},
        "session_2_date_time": "1:00 pm on 9 May, 2023",
        "session_2_observation": {"Jonas": [list(f) for f in facts[2:4]]},
        "session_3_date_time": "1:00 pm on 20 May, 2023",
        "session_3_observation": {"Jonas": [list(f) for f in facts[4:]]},
        "qa": [
            {"question": "What is the name of the dog Jonas adopted?", "answer": "Pepper", "category": 1},
            {"question": "Which instrument did Jonas start learning?", "answer": "cello", "category": 1},
            {"question": "Where does Jonas work as a nurse?", "answer": "Bergen", "category": 1},
            {"question": "Who did Jonas visit?", "answer": "his aunt", "category": 1},
            {"question": "What is adversarial?", "adversarial_answer": "x", "category": 5},
        ],
    }


@pytest.fixture()
def data_dir(tmp_path):
    (tmp_path / "conv-99.json").write_text(json.dumps(conversation()))
    return tmp_path


def test_loader_and_retriever(data_dir):
    memories, qa = load_conversation(data_dir / "conv-99.json")
    assert len(memories) == 7 and len(qa) == 4  # category 5 dropped
    assert memories[0].meta["date"] == "1:00 pm on 1 May, 2023"
    top = BM25(memories).top("What is the name of the dog Jonas adopted?", 3)
    assert top[0].text.startswith("Jonas adopted a dog")


def test_builder_verifies_every_case(data_dir):
    ev = OfflineEvaluator()
    cases, funnel = build_locomo_cohort(data_dir, ev, trials=2, k=5)
    assert cases and funnel["verified"] == len(cases) <= funnel["proposals"]
    assert {c["structure"] for c in cases} <= {"direct", "redundant", "joint"}
    for raw in cases:
        case = parse_case(raw)
        assert len(case.task.context) == 5
        assert verified(case.structure, ev, case.task, case.faults, 2, 0)
    rows = {(r.method, r.group): r for r in summary_table(run_cohort([parse_case(c) for c in cases],
                                                                       ClearanceSpec(), ["meclear", "loo"]))}
    assert rows[("meclear", "all")].recovery >= rows[("loo", "all")].recovery


def test_builder_rejects_missing_data(tmp_path):
    with pytest.raises(InputError, match="no conv"):
        build_locomo_cohort(tmp_path, OfflineEvaluator())
    with pytest.raises(InputError, match="not found"):
        build_locomo_cohort(tmp_path / "nope", OfflineEvaluator())


def test_cli_builds_and_runs_a_locomo_cohort(data_dir, tmp_path):
    from click.testing import CliRunner

    from memsteward.cli import main

    out = tmp_path / "locomo.jsonl"
    res = CliRunner().invoke(main, ["clear", "--locomo", str(data_dir), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "verified" in res.stderr and out.read_text().count("\n") >= 1
    res = CliRunner().invoke(main, ["clear", "--cohort", str(out), "--methods", "meclear,loo", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["rows"][0]["recovery"] == 1.0


def test_builder_tries_several_wrong_answers_per_qa(data_dir):
    ev = OfflineEvaluator()
    one, f1 = build_locomo_cohort(data_dir, ev, trials=2, k=5)
    three, f3 = build_locomo_cohort(data_dir, ev, trials=2, k=5, donors=3)
    assert f3["clean_correct"] == f1["clean_correct"] and f3["proposals"] > f1["proposals"]
    names = [c["name"] for c in three]
    assert len(set(names)) == len(names) and all("-d" in n for n in names)
    for c in three:
        ids = [m["id"] for m in c["context"]]
        assert len(set(ids)) == len(ids)
        assert all(f.startswith(c["name"].rsplit("-", 1)[0] + "-f") for f in c["faults"])  # the donor's own
    assert len({c["meta"]["wrong"] for c in three}) > 1
    for raw in three:
        case = parse_case(raw)
        assert verified(case.structure, ev, case.task, case.faults, 2, 0)
    with pytest.raises(InputError, match="donors"):
        build_locomo_cohort(data_dir, ev, donors=0)


def large_conversation() -> dict:
    """The conversation above plus distractor observations, so BM25 can freeze K = 20 memories."""
    conv = conversation()
    words = ["tulips", "kayaks", "lanterns", "glaciers", "violins", "harbours", "comets", "orchards", "quartz",
             "ferries", "meadows", "pianos", "lighthouses", "puzzles", "saffron", "canyons", "beetles", "marbles",
             "cathedrals", "volcanoes"]
    filler = [(f"Jonas, {w}.", f"D4:{n}") for n, w in enumerate(words)]  # one claim each: no vote bloc
    conv["session_4_date_time"] = "1:00 pm on 2 June, 2023"
    conv["session_4_observation"] = {"Jonas": [list(f) for f in filler]}
    return conv


@pytest.mark.parametrize("k", [10, 16, 20])
def test_builder_and_generator_at_large_k(tmp_path, k):
    """K = 10 / 16 / 20: the builder's cases keep the fault structures among retrieved distractors,
    each verified (App. D.1), and the synthetic generator's too."""
    from memsteward.clearance.cohort import synthetic_cohort

    (tmp_path / "conv-98.json").write_text(json.dumps(large_conversation()))
    ev = OfflineEvaluator()
    cases, funnel = build_locomo_cohort(tmp_path, ev, trials=2, k=k)
    assert cases and {c["structure"] for c in cases} >= {"direct", "redundant"}
    for raw in cases:
        case = parse_case(raw)
        assert len(case.task.context) == k and len(set(case.faults)) == (1 if case.structure == "direct" else 2)
        assert verified(case.structure, ev, case.task, case.faults, 2, 0)
    for raw in synthetic_cohort(6, seed=k, k=k):
        case = parse_case(raw)
        assert len(case.task.context) == k
        assert verified(case.structure, SyntheticEvaluatorFor(raw), case.task, case.faults, 2, 0)


def SyntheticEvaluatorFor(raw: dict):  # noqa: N802 (reads like the evaluator it returns)
    from memsteward.clearance.case import case_evaluator

    return case_evaluator(parse_case(raw), ClearanceSpec(retrieval_budget=len(raw["context"])))
