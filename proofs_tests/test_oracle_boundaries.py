"""The offline oracles' pure checks at every boundary (issue 33: the mutation runs' survivors were
mostly a bound tested on one side only, or a branch no test took).

Each row is a value exactly at a bound, one step inside and one step outside it, so `<` for `<=`
(and the like) changes some row's result.
"""

from __future__ import annotations

import pytest

from memsteward.repair.oracles import _close, call_errors, control_chars, grounding_problems, schema_errors

ROWS = [
    # (value, schema, errors)
    ("ab", {"type": "string", "minLength": 2}, []),
    ("a", {"type": "string", "minLength": 2}, ["$: shorter than 2"]),
    ("", {"type": "string"}, []),  # no minLength: nothing is too short
    ("abc", {"type": "string", "maxLength": 3}, []),
    ("abcd", {"type": "string", "maxLength": 3}, ["$: longer than 3"]),
    (1, {"type": "number", "minimum": 1}, []),
    (0.999, {"type": "number", "minimum": 1}, ["$: below minimum"]),
    (-5, {"type": "integer"}, []),
    (5, {"type": "number", "maximum": 5}, []),
    (5.001, {"type": "number", "maximum": 5}, ["$: above maximum"]),
    ([], {"type": "array"}, []),
    ([1, 2], {"type": "array", "minItems": 2}, []),
    ([1], {"type": "array", "minItems": 2}, ["$: fewer than 2 items"]),
    ([1, 2], {"type": "array", "maxItems": 2}, []),
    ([1, 2, 3], {"type": "array", "maxItems": 2}, ["$: more than 2 items"]),
    # types: a bool is neither an integer nor a number; a list of types is any of them
    (True, {"type": "integer"}, ["$: expected integer"]),
    (True, {"type": "number"}, ["$: expected number"]),
    (True, {"type": "boolean"}, []),
    (1.5, {"type": "integer"}, ["$: expected integer"]),
    (None, {"type": ["string", "null"]}, []),
    (3, {"type": ["string", "null"]}, ["$: expected string/null"]),
    (3, {"type": "no-such-type"}, ["$: expected no-such-type"]),
    # a type mismatch stops there (no bound of another type is looked at)
    ("abcdef", {"type": "number", "maximum": 1, "maxLength": 2}, ["$: expected number"]),
    # bounds of one type do not apply to another
    ("abcdef", {"maximum": 1, "maxItems": 1}, []),
    (10, {"maxLength": 1, "minItems": 3}, []),
    ("b", {"enum": ["a", "b"]}, []),
    ("c", {"enum": ["a", "b"]}, ["$: not in enum"]),
    (0, {"const": 0}, []),
    (1, {"const": 0}, ["$: not the constant"]),
    ("x", {"enum": ["y"], "const": "y"}, ["$: not in enum", "$: not the constant"]),
    ({"a": 1}, {"type": "object", "required": ["a", "b"]}, ["$: missing 'b'"]),
    ({"a": "s"}, {"type": "object", "properties": {"a": {"type": "integer"}}}, ["$.a: expected integer"]),
    ({"b": "s"}, {"type": "object", "additionalProperties": {"type": "integer"}}, ["$.b: expected integer"]),
    ({"b": 1}, {"type": "object", "additionalProperties": {"type": "integer"}}, []),
    ({"b": 1}, {"type": "object", "additionalProperties": True}, []),
    ([1, "x", 2], {"type": "array", "items": {"type": "integer"}}, ["$[1]: expected integer"]),
    ([[1, 2, 3]], {"items": {"maxItems": 2}}, ["$[0]: more than 2 items"]),
]


@pytest.mark.parametrize("value, schema, errors", ROWS)
def test_schema_errors_at_every_bound(value, schema, errors):
    assert schema_errors(value, schema) == errors


# Values strictly inside each bound (no error), and equal values as a parse makes them: separate objects
# (strings from JSON are not interned, ints above 256 are not cached), so an `is` / `is not` for a
# comparison changes a row's result.
PARSED_ROWS = [
    '["abc", {"type": "string", "minLength": 2}, []]',
    '["ab", {"type": "string", "maxLength": 3}, []]',
    '[3, {"type": "number", "minimum": 1}, []]',
    '[3, {"type": "number", "maximum": 5}, []]',
    '[[1, 2, 3], {"type": "array", "minItems": 2}, []]',
    '[[1], {"type": "array", "maxItems": 2}, []]',
    '[1000, {"type": "integer", "minimum": 1000, "maximum": 1000}, []]',
    '[999, {"minimum": 1000}, ["$: below minimum"]]',
    '[1001, {"maximum": 1000}, ["$: above maximum"]]',
    '["a value read from a file", {"const": "a value read from a file"}, []]',
    '["a value read from a file", {"const": "another value"}, ["$: not the constant"]]',
    '[1000, {"const": 1000}, []]',
    '[{"k": "a value read from a file"}, {"const": {"k": "a value read from a file"}}, []]',
    '["a value read from a file", {"enum": ["x", "a value read from a file"]}, []]',
    '[300, {"type": "integer", "minimum": 299, "maximum": 301}, []]',
]


@pytest.mark.parametrize("row", PARSED_ROWS)
def test_schema_errors_inside_every_bound_and_on_parsed_equal_values(row):
    import json

    value, schema, errors = json.loads(row)
    assert schema_errors(value, schema) == errors


def test_schema_lengths_and_item_counts_above_256_at_their_bounds():
    """300 items / characters against bounds of 300 parsed from JSON (len() and the parse make two int
    objects): at the bound no error, one under or over the bound's error."""
    import json

    bound = json.loads('{"type": "array", "minItems": 300, "maxItems": 300}')
    many = [0] * 300
    assert schema_errors(many, bound) == []
    assert schema_errors(many[:-1], bound) == ["$: fewer than 300 items"]
    assert schema_errors([*many, 0], bound) == ["$: more than 300 items"]
    bound = json.loads('{"type": "string", "minLength": 300, "maxLength": 300}')
    assert schema_errors("x" * 300, bound) == []
    assert schema_errors("x" * 299, bound) == ["$: shorter than 300"]
    assert schema_errors("x" * 301, bound) == ["$: longer than 300"]


def test_replay_comparison_is_exact_outside_numbers_and_within_the_tolerance_on_them():
    assert _close(1.0, 1.5, 0.5) and _close(1.5, 1.0, 0.5) and not _close(1.0, 1.5000001, 0.5)
    assert _close([1, {"a": 2.0}], [1, {"a": 2.05}], 0.1)
    assert not _close([1, 2], [1, 2, 3], 10) and not _close([1, 2, 3], [1, 2], 10)
    assert not _close({"a": 1}, {"a": 1, "b": 1}, 10) and not _close({"a": 1}, {"b": 1}, 10)
    assert not _close("1", 1, 10) and _close("a", "a", 0) and not _close("a", "b", 10)


INTERFACE = {"tools": {"search": {"params": {"q": "string", "k": "integer", "any": "no-such-type"},
                                  "required": ["q"]}}}


@pytest.mark.parametrize("calls, allow_extra, errors", [
    ([{"tool": "search", "args": {"q": "x"}}], False, []),
    ([{"tool": "search", "args": {"q": "x", "k": 3, "any": [1]}}], False, []),  # an unknown type accepts anything
    ([], False, ["no calls"]),
    ({"tool": "search"}, False, ["no calls"]),
    (["search"], False, ["call 0: unknown tool None"]),
    ([{"tool": "search", "args": {"q": "x"}}, {"tool": "other"}], False, ["call 1: unknown tool 'other'"]),
    ([{"tool": "search", "args": {}}], False, ["call 0: search misses required 'q'"]),
    ([{"tool": "search", "args": {"q": "x", "k": "3"}}], False, ["call 0: search.k is not integer"]),
    ([{"tool": "search", "args": {"q": "x", "z": 1}}], False, ["call 0: search has no parameter 'z'"]),
    ([{"tool": "search", "args": {"q": "x", "z": 1}}], True, []),
    ([{"tool": "search"}], True, ["call 0: search misses required 'q'"]),
])
def test_sandbox_call_errors(calls, allow_extra, errors):
    assert call_errors(calls, INTERFACE, allow_extra) == errors


def test_control_characters_count_each_class_and_allow_only_newline_and_tab():
    assert control_chars("") == 0 and control_chars("\n\t") == 0
    assert control_chars("\r") == 1  # Cc other than newline and tab
    assert control_chars("\u200b\ue000\ufffd") == 3  # Cf, Co, U+FFFD


SUPPORT = ["Alice visited Paris in May with Bob."]


def test_grounded_lists_at_most_five_unsupported_sentences_then_an_ellipsis():
    five = " ".join(f"Zebra{k} quokka{k} marmot." for k in range(5))
    problems = grounding_problems(five, SUPPORT, [], [], 0.5)
    assert problems == ["5 of 5 sentence(s) not grounded in retained support (sentence 1, 2, 3, 4, 5)"]
    six = " ".join(f"Zebra{k} quokka{k} marmot." for k in range(6))
    assert grounding_problems(six, SUPPORT, [], [], 0.5) == [
        "6 of 6 sentence(s) not grounded in retained support (sentence 1, 2, 3, 4, 5 …)"]


def test_grounded_needs_a_sentence_and_names_words_only_the_forget_set_holds():
    assert grounding_problems("", SUPPORT, [], [], 0.5) == ["no sentence"]
    assert grounding_problems("Alice visited Paris.", SUPPORT, ["Paris secret"], [], 0.5) == []
    assert grounding_problems("Alice visited Paris secretly.", SUPPORT, ["Alice secretly left"], [], 0.5) == [
        "1 word(s) only the forget set contains"]


def test_the_schema_report_names_at_most_three_errors_and_takes_the_kind_s_own_schema():
    from memsteward.policy.model import SchemaOracle
    from memsteward.repair.artifacts import Artifact
    from memsteward.repair.operators import RepairContext, Successor
    from memsteward.repair.oracles import OracleInput, check_schema

    spec = SchemaOracle.model_validate({"oracle": "schema", "schema": {"type": "object", "required": ["a"]},
                                        "by_kind": {"summary": {"items": {"type": "integer"}}}})

    def report(kind: str, content):
        x = OracleInput(Artifact("n", kind, None, 1, content, {}), Successor(content, {}), RepairContext("delete"),
                        None)  # type: ignore[arg-type]
        return check_schema(spec, x)

    four = report("summary", ["a", "b", "c", "d"])
    assert not four.passed and four.detail == "; ".join(f"$[{k}]: expected integer" for k in range(3))
    assert report("summary", [1, 2]).passed  # the kind's schema, not the default
    assert report("record", {"b": 1}).detail == "$: missing 'a'"


def test_characters_past_the_replacement_character_are_not_control_characters():
    assert control_chars("\uffff") == 0 and control_chars("😀 ✓ é") == 0 and control_chars("\ufffd\ufffd") == 2
