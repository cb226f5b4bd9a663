"""The oracles' reports (repair/oracles.py): each check's verdict and its detail text, passing and failing.

Written for issue 33's targeted mutation runs (bench/mutation-targeted-store.md): the pure checks'
bounds are pinned in test_oracle_boundaries.py; here every ``check_*`` function's Report is compared
whole (oracle name, verdict, detail) on inputs worked by hand, and ``validate`` on the all-must-pass rule.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from memsteward.repair.artifacts import Artifact
from memsteward.repair.operators import OperatorError, RepairContext, Successor
from memsteward.repair.oracles import (
    ORACLES,
    OracleInput,
    Report,
    check_embedding,
    check_grounded,
    check_replay,
    check_sandbox,
    check_schema,
    check_task_regression,
    validate,
)


def _x(content, kind="summary", meta=None, inputs=(), forget=(), interface=None, operator=None):
    ctx = RepairContext("delete", inputs=tuple(inputs), forget=tuple(forget), interface=interface or {})
    return OracleInput(Artifact("s", kind, None, 1, content, meta or {}), Successor(content, {}), ctx,
                       operator)  # type: ignore[arg-type]


def _art(ident, content):
    return Artifact(ident, "record", None, 1, content, {})


INTERFACE = {"tools": {"search": {"params": {"q": "string"}, "required": ["q"]}}}


def test_sandbox_reports_how_many_calls_type_check_or_the_first_three_errors():
    two = {"calls": [{"tool": "search", "args": {"q": "a"}}, {"tool": "search", "args": {"q": "b"}}]}
    assert check_sandbox(SimpleNamespace(allow_extra_args=False), _x(two, "skill", interface=INTERFACE)) == \
        Report("sandbox", True, "2 calls type-check")
    bad = {"calls": [{"tool": "x"}, {"tool": "y"}, {"tool": "search", "args": {}}, {"tool": "z"}]}
    assert check_sandbox(SimpleNamespace(allow_extra_args=False), _x(bad, "skill", interface=INTERFACE)) == \
        Report("sandbox", False, "call 0: unknown tool 'x'; call 1: unknown tool 'y'; call 2: search misses required 'q'")
    for content in ("not a chain", {"calls": []}, {"other": 1}):
        assert check_sandbox(SimpleNamespace(allow_extra_args=True), _x(content, "skill", interface=INTERFACE)) == \
            Report("sandbox", False, "no calls")


def test_task_regression_counts_policy_and_artifact_probes():
    spec = SimpleNamespace(probes=[SimpleNamespace(query="where does alice live", expect="paris")], min_pass=1.0)
    text = "Alice lives in Paris. Bob likes chess."
    meta = {"probes": [{"query": "what does bob like", "expect": "CHESS"}, {"query": 1, "expect": "x"},
                       {"query": "q"}, "not a probe", {"query": "who plays", "expect": "tennis"}]}
    assert check_task_regression(spec, _x(text, meta=meta)) == Report("task_regression", False, "2/3 probes pass")
    spec.min_pass = 2 / 3
    assert check_task_regression(spec, _x(text, meta=meta)).passed
    assert check_task_regression(spec, _x(text)) == Report("task_regression", True, "1/1 probes pass")
    none = SimpleNamespace(probes=[], min_pass=1.0)
    assert check_task_regression(none, _x(text, meta={"probes": None})) == Report("task_regression", True, "no probes")


def test_replay_reports_agreement_or_the_first_failing_run():
    runs = []

    def op(artifact, ctx):
        runs.append(1)
        if len(runs) == 2:
            raise OperatorError("boom")
        return Successor({"v": 1.0}, {})

    spec = SimpleNamespace(runs=3, tolerance=0.0)
    assert check_replay(spec, _x({"v": 1.0}, operator=op)) == Report("replay", False, "replay 2 failed: boom")
    runs.clear()
    spec.runs = 1
    assert check_replay(spec, _x({"v": 1.0}, operator=op)) == Report("replay", True, "1 replays agree")
    assert check_replay(SimpleNamespace(runs=1, tolerance=0.0), _x({"v": 2.0}, operator=lambda a, c: Successor({"v": 2.5}, {}))) == \
        Report("replay", False, "replay 1 differs from the staged successor")
    assert check_replay(SimpleNamespace(runs=0, tolerance=0.0), _x(1, operator=op)) == Report("replay", True, "0 replays agree")


def test_grounded_reports_its_sentences_or_its_problems():
    support = [_art("in", "Alice lives in Paris. Alice likes green tea.")]
    spec = SimpleNamespace(min_support=1.0)
    assert check_grounded(spec, _x("Alice lives in Paris. Alice likes tea.", inputs=support)) == \
        Report("grounded", True, "2 sentence(s) grounded in retained support")
    assert check_grounded(spec, _x({"t": "x"}, inputs=support)) == Report("grounded", False, "successor is not text")
    report = check_grounded(spec, _x("Alice lives in Paris. Bob sails boats.", inputs=support))
    assert report == Report("grounded", False, "1 of 2 sentence(s) not grounded in retained support (sentence 2)")
    forget = [_art("gone", "Alice lives in Lyon")]
    report = check_grounded(spec, _x("Alice lives in Lyon.", inputs=support, forget=forget))
    assert not report.passed and report.detail.endswith("1 word(s) only the forget set contains")


def test_schema_takes_the_kind_s_schema_and_else_the_default():
    spec = SimpleNamespace(by_kind={"summary": {"type": "string"}}, schema_={"type": "object"})
    assert check_schema(spec, _x("text")) == Report("schema", True, "")
    assert check_schema(spec, _x({"a": 1})) == Report("schema", False, "$: expected string")
    assert check_schema(spec, _x({"a": 1}, kind="profile")) == Report("schema", True, "")
    assert check_schema(spec, _x("text", kind="profile")) == Report("schema", False, "$: expected object")


def test_embedding_needs_a_reembedding_operator():
    assert check_embedding(SimpleNamespace(tolerance=0.0), _x("t", operator=None)) == Report(
        "embedding", False, "no re-embedding operator built this successor (declare 'embed' on the kind)")


def test_validate_passes_only_when_every_assigned_oracle_passes_and_reports_each_in_order():
    seen = []

    def fixed(passed):
        def check(spec, x):
            seen.append(spec.oracle)
            return Report(spec.oracle, passed, "")
        return check

    registry = {**ORACLES, "yes": fixed(True), "no": fixed(False)}
    specs = [SimpleNamespace(oracle=o) for o in ("yes", "no", "yes")]
    ok, reports = validate(specs, _x("t"), registry)
    assert (ok, [r.oracle for r in reports], [r.passed for r in reports]) == (False, ["yes", "no", "yes"], [True, False, True])
    assert seen == ["yes", "no", "yes"]   # every oracle runs: the report lists them all
    assert validate([SimpleNamespace(oracle="yes")] * 2, _x("t"), registry)[0] is True
    assert validate([], _x("t"), registry) == (True, [])
    with pytest.raises(KeyError):
        validate([SimpleNamespace(oracle="yes")], _x("t"))   # the default registry has no "yes"
    assert Report("o", True, "d").as_dict() == {"oracle": "o", "passed": True, "detail": "d"}


@pytest.mark.parametrize("n", [0, 1, 2, 256, 257, 300, 1000])
def test_replay_compares_lists_of_any_length_element_by_element(n):
    """Lists agree when their lengths are equal (compared as numbers: two lengths above 256 are equal
    ints, not the same object) and every element is close; one element more or one off fails."""
    from memsteward.repair.oracles import _close

    xs = [float(k) for k in range(n)]
    assert _close(list(xs), list(xs), 0.0) and _close({"v": list(xs)}, {"v": list(xs)}, 0.0)
    assert not _close(xs, [*xs, 0.0], 0.0) and not _close([*xs, 0.0], xs, 0.0)
    if n:
        assert _close(xs, [*xs[:-1], xs[-1] + 0.5], 0.5) and not _close(xs, [*xs[:-1], xs[-1] + 0.5], 0.49)
    spec = SimpleNamespace(runs=2, tolerance=0.0)
    assert check_replay(spec, _x({"v": list(xs)}, operator=lambda a, c: Successor({"v": list(xs)}, {}))).passed


# --------------------------------------------------------------------------- answer / task regression / forget

def test_the_offline_answer_is_the_sentence_sharing_most_words_with_the_query_first_on_ties():
    """``answer``: a text's sentence with the most query tokens in common, the first of equals; no
    sentence answers ""; a content that is not text (a record's dict or list, a number) is read as its
    Python text, split at the same sentence ends (worked by hand from ``str(content)``)."""
    from memsteward.repair.oracles import answer

    text = "Alice lives in Paris. Bob likes chess! Carol likes chess too?\nDan rows."
    assert answer(text, "what does bob like") == "Bob likes chess!"   # bob, likes (2) beats likes (1)
    assert answer(text, "who likes chess") == "Bob likes chess!"      # 2 each: the first
    assert answer(text, "carol") == "Carol likes chess too?"
    assert answer(text, "dan") == "Dan rows."                         # a newline ends a sentence too
    assert answer(text, "nothing in common") == "Alice lives in Paris."
    assert answer("", "alice") == "" and answer("   \n ", "alice") == ""
    record = {"note": "Alice lives in Paris. Bob likes chess."}
    assert answer(record, "what does bob like") == "Bob likes chess.'}"
    assert answer(record, "where does alice live") == "{'note': 'Alice lives in Paris."
    # a list's items end in a quote, not a sentence end: its text is one sentence
    assert answer(["Alice lives in Paris.", "Bob likes chess."], "bob") == "['Alice lives in Paris.', 'Bob likes chess.']"
    assert answer(42, "anything") == "42"
    spec = SimpleNamespace(probes=[SimpleNamespace(query="what does bob like", expect="CHESS")], min_pass=1.0)
    assert check_task_regression(spec, _x(record, kind="record")) == Report("task_regression", True, "1/1 probes pass")
    spec.probes[0].expect = "paris"
    assert check_task_regression(spec, _x(record, kind="record")) == Report("task_regression", False, "0/1 probes pass")


def _model():
    """A hand-made bow-softmax model of dim 1: a text with a token has features [1, 1] (its one hashed
    count, L2-normalised, and the bias), a text without one [0, 1]; labels A (weights 2, 0) and B (0, 1)
    score 2 vs 1 for the first (A wins) and 0 vs 1 for the second (B wins)."""
    return {"model": "bow-softmax", "dim": 1, "labels": ["A", "B"], "weights": [[2.0, 0.0], [0.0, 1.0]]}


def _records(*pairs):
    return tuple(_art(f"r{k}", {"text": t, "label": y}) for k, (t, y) in enumerate(pairs))


@pytest.mark.parametrize(("max_fs", "min_ru", "passed"), [
    (0.5, 0.75, True),       # both exactly at their bound
    (0.4999, 0.75, False),   # the forget score one step above its bound
    (0.5, 0.7501, False),    # the retained utility one step below its bound
    (0.5001, 0.7499, True),  # both one step inside
    (0.4999, 0.7501, False),
])
def test_forget_reference_passes_at_both_bounds_and_fails_one_step_past_either(max_fs, min_ru, passed):
    """``check_forget_reference``: forget score = the share of forget examples with a label no reference
    example carries that the model still predicts: 1 of 2 ("alpha" -> A; "..." has no token -> B; "zeta"
    is labelled B, which the reference carries, so it is not counted; a record without a label is no
    example); retained utility = the reference accuracy, 3 of 4 (the token-less texts -> B, "eps" -> A, not
    C). It passes when the score is at most ``max_forget_score`` and the utility at least
    ``min_retained_utility``."""
    from memsteward.repair.oracles import check_forget_reference

    forget = _records(("alpha", "A"), ("...", "A"), ("zeta", "B"), ("no label", None))
    reference = _records(("!!", "B"), ("??", "B"), ("--", "B"), ("eps", "C"))
    x = _x(_model(), kind="model")
    x = OracleInput(x.artifact, x.successor, RepairContext("delete", forget=forget, reference=reference), None)
    spec = SimpleNamespace(max_forget_score=max_fs, min_retained_utility=min_ru)
    assert check_forget_reference(spec, x) == Report("forget_reference", passed, "forget score 0.50, retained utility 0.75")


def test_forget_reference_with_nothing_exclusive_to_forget_and_no_reference_and_a_non_model():
    """No forget example with a label the reference lacks: score 0.0, which passes a bound of 0.0; no
    reference example: utility 1.0, which passes a bound of 1.0; a successor that is not a bow-softmax
    model fails without scoring."""
    from memsteward.repair.oracles import check_forget_reference

    spec = SimpleNamespace(max_forget_score=0.0, min_retained_utility=1.0)
    x = _x(_model(), kind="model")
    ctx = RepairContext("delete", forget=_records(("alpha", "B")), reference=())
    assert check_forget_reference(spec, OracleInput(x.artifact, x.successor, ctx, None)) == Report(
        "forget_reference", True, "forget score 0.00, retained utility 1.00")
    ctx = RepairContext("delete", forget=_records(("alpha", "A")), reference=())
    assert check_forget_reference(spec, OracleInput(x.artifact, x.successor, ctx, None)) == Report(
        "forget_reference", False, "forget score 1.00, retained utility 1.00")
    for content in ({**_model(), "model": "other"}, "a text", None):
        assert check_forget_reference(spec, _x(content, kind="model")) == Report(
            "forget_reference", False, "successor is not a model")


@pytest.mark.parametrize("n", [0, 499, 500, 501, 1000])
def test_a_plugin_oracle_s_report_is_renamed_its_verdict_made_a_bool_and_its_detail_cut_at_500(monkeypatch, n):
    """``check_plugin`` (the plugin itself is looked up by entry point, end to end in test_plugins.py; here
    the loader hands back a callable): the report is named ``plugin:<name>``, a truthy or falsy verdict
    becomes True or False, the detail (any object, as its text) keeps its first 500 characters, and a
    return that is not a Report fails with OperatorError naming its type."""
    from memsteward.repair import plugins
    from memsteward.repair.oracles import check_plugin

    seen = []

    def oracle(settings, x):
        seen.append((settings, x.successor.content))
        return Report("whatever", settings["verdict"], settings["detail"])

    monkeypatch.setattr(plugins, "load_oracle", lambda name: oracle if name == "mine" else None)
    detail = "".join(chr(ord("a") + k % 26) for k in range(n))
    for verdict, passed in ((1, True), ([], False), ("yes", True), (0, False)):
        spec = SimpleNamespace(plugin="mine", settings={"verdict": verdict, "detail": detail})
        report = check_plugin(spec, _x("text"))
        assert report == Report("plugin:mine", passed, detail[:500]) and report.passed is passed
        assert len(report.detail) == min(n, 500)
    spec = SimpleNamespace(plugin="mine", settings={"verdict": True, "detail": 12345})
    assert check_plugin(spec, _x("text")) == Report("plugin:mine", True, "12345")
    assert seen[0] == ({"verdict": 1, "detail": detail}, "text")
    monkeypatch.setattr(plugins, "load_oracle", lambda name: lambda settings, x: {"passed": True})
    with pytest.raises(OperatorError, match=r"^oracle plugin:mine returned a dict, not a Report$"):
        check_plugin(SimpleNamespace(plugin="mine", settings={}), _x("text"))
