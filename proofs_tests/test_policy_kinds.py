"""Kinds a policy declares itself, by role (issue 34): check, compare, coverage and the schema range over them.

Each analysis test runs twice: on the real analysis, and on one that ignores declared kinds (its
Z3 encoding keeps only the four paper kinds). The finding must be there in the first run and
missing in the second, so the test shows it depends on declared kinds being analysed.
"""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.policy import encoding
from memsteward.policy.analysis import analyze
from memsteward.policy.compare import compare
from memsteward.policy.loader import load_policy_source
from memsteward.policy.model import KINDS, Policy

KINDS_DOC = {
    "record": {},
    "episode": {"role": "root", "description": "a conversation episode"},
    "profile": {"role": "text", "fields": ["$.bio"], "meta": {"confidence": {"min": 0, "max": 1}}},
    "tool_skill": {"role": "skill", "architectures": ["chain", "neural"]},
    "vector": {"role": "opaque"},
}
VALIDATION = [{"mode": "regen", "oracles": [{"oracle": "grounded"}]},
              {"mode": "regen", "arch": "chain", "oracles": [{"oracle": "sandbox"}]},
              {"mode": "param", "oracles": [{"oracle": "forget_reference"}]}]


def _write(tmp_path, modes, kinds=None, name="p.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"version": 1, "kinds": kinds or KINDS_DOC, "modes": modes,
                                    "validation": VALIDATION}, sort_keys=False))
    return path


@pytest.fixture(params=["declared kinds analysed", "declared kinds ignored"])
def analysis(request, monkeypatch):
    """The real analysis, or one whose encoding drops every kind but the paper's four."""
    if request.param == "declared kinds ignored":
        real = encoding.Encoding.__init__

        def paper_only(self, policies):
            real(self, policies)
            self.kinds = [k for k in self.kinds if k in KINDS]

        monkeypatch.setattr(encoding.Encoding, "__init__", paper_only)
    return request.param == "declared kinds analysed"


def test_check_finds_a_shadowed_rule_over_declared_kinds(tmp_path, analysis):
    path = _write(tmp_path, [
        {"name": "profiles-regenerate", "when": {"kind": "profile", "support": "sufficient"}, "mode": "regen"},
        {"name": "profiles-deleted", "when": {"kind": "profile", "event": "delete", "support": "sufficient",
                                              "meta": {"confidence": {"ge": 0.5}}}, "mode": "remove"},
        {"when": {}, "mode": "remove"},
    ])
    findings = analyze(load_policy_source(path))
    shadowed = [f for f in findings if f.code == "shadowed"]
    if analysis:
        line = path.read_text().splitlines().index("- name: profiles-deleted") + 1
        assert [(f.field, f.line, f.related["shadowed_by"]) for f in shadowed] == [("modes[1]", line, [1])]
        assert "profiles-deleted" in shadowed[0].message
    else:
        assert shadowed == []  # the ignoring analysis sees no profile cell: the rule looks vacuous


def test_check_finds_an_uncovered_cell_over_declared_kinds(tmp_path, analysis):
    path = _write(tmp_path, [
        {"when": {"kind": ["record", "episode", "vector"]}, "mode": "remove"},
        {"when": {"kind": "profile", "support": "sufficient"}, "mode": "regen"},
        {"when": {"kind": "profile", "support": "insufficient"}, "mode": "remove"},
        {"when": {"kind": "tool_skill", "arch": "neural", "partitions": True}, "mode": "param"},
        {"when": {"kind": "tool_skill", "arch": "chain"}, "mode": "regen"},
    ])
    gaps = [f for f in analyze(load_policy_source(path)) if f.code == "totality"]
    if analysis:
        assert [(g.cell["kind"], g.cell["arch"], g.cell["partitions"]) for g in gaps] == [("tool_skill", "neural", False)]
        assert gaps[0].field == "modes" and gaps[0].severity == "error"
    else:
        assert gaps == []  # "total" only because the declared kinds were never looked at


def test_declared_roles_drive_type_safety(tmp_path):
    path = _write(tmp_path, [
        {"when": {"kind": "vector"}, "mode": "regen"},
        {"when": {"kind": "profile", "arch": "neural"}, "mode": "param"},
        {"when": {"kind": "tool_skill", "arch": "neural", "partitions": True}, "mode": "param"},
        {"when": {"kind": "episode"}, "mode": "recompute"},
        {"when": {}, "mode": "remove"},
    ])
    by_rule = {f.related.get("rule"): f.message for f in analyze(load_policy_source(path)) if f.code == "type"}
    assert "role 'opaque' is never regenerated" in by_rule[1]
    assert 3 not in by_rule  # param on a neural skill of a declared skill kind is fine
    assert "not replayable" in by_rule[4]


def test_compare_ranges_over_declared_kinds(tmp_path):
    old = _write(tmp_path, [{"when": {"kind": "profile", "support": "sufficient"}, "mode": "regen"},
                            {"when": {}, "mode": "remove"}], name="old.yaml")
    new = _write(tmp_path, [{"when": {}, "mode": "remove"}], name="new.yaml")
    diffs = compare(load_policy_source(old).policy, load_policy_source(new).policy)
    assert {(d.verdict, d.cell.kind) for d in diffs} == {("stricter", "profile")}
    r = CliRunner().invoke(main, ["compare", str(old), str(new)])
    assert "kind=profile" in r.output


def test_paper_kinds_keep_their_meaning():
    """A paper policy is the same policy: roles by default, replayable only where it says so."""
    p = load_policy_source("policies/default.yaml").policy
    assert {k: p.role(k) for k in p.kinds} == {"record": "root", "cache": "replayable", "summary": "text",
                                               "skill": "skill"}
    assert Policy.model_validate({"kinds": {"cache": {}}}).kinds["cache"].replayable is False
    assert Policy.model_validate({"kinds": {"c": {"role": "replayable"}}}).kinds["c"].replayable is True


def test_schema_describes_kind_names_and_roles():
    r = CliRunner().invoke(main, ["schema"])
    doc = json.loads(r.output)
    kinds = doc["properties"]["kinds"]
    assert kinds["propertyNames"]["pattern"] == "^[A-Za-z_][A-Za-z0-9_]*$"
    assert kinds["propertyNames"]["maxLength"] == 64
    role = doc["$defs"]["KindSpec"]["properties"]["role"]
    assert {"root", "replayable", "text", "skill", "opaque"} <= set(json.dumps(role).replace('"', " ").split())
