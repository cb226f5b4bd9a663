"""`compare` agrees with brute force: every differing region is found, with a real example."""

from __future__ import annotations

import itertools

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from test_policy_analysis import policies

from memsteward.cli import main
from memsteward.policy.compare import Decision, compare, decision, verdict
from memsteward.policy.domain import Cell, firing_rule, meta_points
from memsteward.policy.model import EVENTS, Policy


def _union_cells(old: Policy, new: Policy):
    kinds = list(dict.fromkeys([*old.kinds, *new.kinds]))
    for kind in kinds:
        archs = list(dict.fromkeys([*old.architectures(kind), *new.architectures(kind)]))
        pts: dict[str, set] = {}
        for p in (old, new):
            if kind in p.kinds:
                for name, values in meta_points(p, kind, [*old.modes, *new.modes]).items():
                    pts.setdefault(name, set()).update(values)
        names = sorted(pts)
        for arch, event, support, part in itertools.product(archs, EVENTS, ("sufficient", "insufficient"), (False, True)):
            for values in itertools.product(*(sorted(pts[n]) for n in names)):
                yield Cell(kind, arch, event, support, part, dict(zip(names, values)))


def _in_domain(p: Policy, c: Cell) -> bool:
    if c.kind not in p.kinds or c.arch not in p.architectures(c.kind):
        return False
    for f, mf in p.kinds[c.kind].meta.items():
        x = c.meta.get(f)
        if x is None or (mf.min is not None and x < mf.min) or (mf.max is not None and x > mf.max):
            return False
    return True


def _decide(p: Policy, c: Cell):
    rule = firing_rule(p, c) if _in_domain(p, c) else None
    return decision(p, rule, c.kind, c.arch)


def reference_verdict(old: Decision, new: Decision) -> str | None:
    """The classification of the module docstring, written again here (not compare.verdict)."""
    if old.mode == new.mode and old.oracles == new.oracles:
        return None if old.settings == new.settings else "changed"
    if new.mode == "remove":
        return "stricter"  # withdraws where the old repaired
    if old.mode == "remove":
        return "looser"
    if old.mode != new.mode:
        return "changed"
    return "stricter" if old.oracles < new.oracles else "looser" if new.oracles < old.oracles else "changed"


def _d(mode: str, *oracles: str, settings: str = "") -> Decision:
    return Decision(mode, frozenset(oracles), 1, frozenset({settings} if settings else ()))


# (old decision, new decision, verdict), written by hand from the module docstring.
VERDICTS = [
    (_d("remove"), _d("remove"), None),
    (_d("recompute", "replay"), _d("recompute", "replay"), None),
    (_d("recompute", "replay"), _d("remove"), "stricter"),
    (_d("regen"), _d("remove"), "stricter"),
    (_d("remove"), _d("recompute", "replay"), "looser"),
    (_d("remove"), _d("param"), "looser"),
    (_d("recompute", "replay"), _d("recompute", "replay", "schema"), "stricter"),
    (_d("regen"), _d("regen", "schema"), "stricter"),
    (_d("recompute", "replay", "schema"), _d("recompute", "replay"), "looser"),
    (_d("param", "forget_reference", "schema"), _d("param"), "looser"),
    (_d("recompute", "replay"), _d("recompute", "schema"), "changed"),
    (_d("recompute", "replay"), _d("regen", "replay"), "changed"),
    (_d("recompute"), _d("regen", "replay", "schema"), "changed"),
    (_d("param", "x", settings='{"oracle": "x", "s": "a"}'), _d("param", "x", settings='{"oracle": "x", "s": "b"}'), "changed"),
]


@pytest.mark.parametrize("old, new, expected", VERDICTS, ids=[f"{o.describe()}->{n.describe()}" for o, n, _ in VERDICTS])
def test_verdict_hand_table(old: Decision, new: Decision, expected: str | None):
    assert verdict(old, new) == expected
    assert reference_verdict(old, new) == expected


def _brute_changes(old: Policy, new: Policy) -> set[tuple]:
    """(verdict, old rule, new rule, kind, arch) of every cell of either policy whose decision changed,
    by deciding each cell under both policies (the reference the comparison is checked against)."""
    out = set()
    for c in _union_cells(old, new):
        a, b = _decide(old, c), _decide(new, c)
        v = reference_verdict(a, b)
        if v is not None:
            out.add((v, a.rule, b.rule, c.kind, c.arch))
    return out


@given(policies(), policies())
def test_compare_matches_brute_force(old: Policy, new: Policy):
    brute = _brute_changes(old, new)
    diffs = compare(old, new)
    found = [(d.verdict, d.old.rule, d.new.rule, d.cell.kind, d.cell.arch) for d in diffs]
    assert set(found) == brute and len(found) == len(brute)  # one example per region
    for d in diffs:  # each example cell really is decided as reported
        assert _decide(old, d.cell) == d.old and _decide(new, d.cell) == d.new


def test_compare_identical_policies_is_empty():
    p = Policy.model_validate({"kinds": {"record": {}}, "modes": [{"when": {}, "mode": "remove"}]})
    assert compare(p, p) == []


def test_compare_cli_on_shipped_policies():
    result = CliRunner().invoke(main, ["compare", "policies/default.yaml", "policies/assistant.yaml", "--json"])
    assert result.exit_code == 0, result.output
    import json
    doc = json.loads(result.stdout)
    assert doc["differences"], "two different shipped policies must differ somewhere"
    verdicts = {d["verdict"] for d in doc["differences"]}
    assert verdicts <= {"stricter", "looser", "changed"}
    strict = CliRunner().invoke(main, ["compare", "policies/default.yaml", "policies/assistant.yaml", "--fail-on", "looser"])
    assert strict.exit_code == (1 if doc["counts"]["looser"] else 0)


def test_check_cli_on_shipped_policies_and_gap():
    import glob
    ok = CliRunner().invoke(main, ["check", *sorted(glob.glob("policies/*.yaml"))])
    assert ok.exit_code == 0, ok.output
    gap = CliRunner().invoke(main, ["check", "proofs_tests/bad_policies/gap_in_mode_map.yaml"])
    assert gap.exit_code == 1
    assert "kind=summary" in gap.output and "support=insufficient" in gap.output


def test_oracle_settings_change_is_reported():
    base = {"kinds": {"skill": {"architectures": ["neural"]}},
            "modes": [{"when": {"partitions": True}, "mode": "param"}, {"when": {}, "mode": "remove"}]}
    strict = Policy.model_validate({**base, "validation": [{"mode": "param", "oracles": [
        {"oracle": "forget_reference", "max_forget_score": 0.1, "min_retained_utility": 0.9}]}]})
    lax = Policy.model_validate({**base, "validation": [{"mode": "param", "oracles": [
        {"oracle": "forget_reference", "max_forget_score": 1.0, "min_retained_utility": 0.0}]}]})
    (d,) = compare(strict, lax)  # a higher max_forget_score and a lower min_retained_utility: both looser
    assert d.verdict == "looser" and d.old.oracles == d.new.oracles
    assert [(c["setting"], c["old"], c["new"]) for c in d.oracle_changes] == [
        ("max_forget_score", 0.1, 1.0), ("min_retained_utility", 0.9, 0.0)]
    (back,) = compare(lax, strict)
    assert back.verdict == "stricter"


def test_each_policy_is_judged_on_its_own_ranges():
    def pol(lo, hi):
        return Policy.model_validate({"kinds": {"cache": {"replayable": True, "meta": {"age": {"min": lo, "max": hi}}}},
                                      "modes": [{"when": {}, "mode": "recompute"}],
                                      "validation": [{"mode": "recompute", "oracles": [{"oracle": "replay"}]}]})
    diffs = compare(pol(0, 10), pol(0, 20))
    assert diffs and all(d.cell.meta["age"] > 10 and d.verdict == "looser" for d in diffs)


def test_lower_tradeoff_is_a_looser_setting(tmp_path):
    text = open("policies/default.yaml").read().replace("tradeoff: 0.3", "tradeoff: 0.1")
    new = tmp_path / "new.yaml"
    new.write_text(text)
    r = CliRunner().invoke(main, ["compare", "policies/default.yaml", str(new), "--fail-on", "looser"])
    assert r.exit_code == 1 and "looser   setting selection.tradeoff" in r.output
    r = CliRunner().invoke(main, ["compare", str(new), "policies/default.yaml", "--fail-on", "looser"])
    assert r.exit_code == 0 and "stricter setting selection.tradeoff" in r.output


def _lowered_min_support(tmp_path, value: str):
    """default.yaml with every grounded oracle's min_support set to ``value`` (0.75 there)."""
    from memsteward.api import bundled_path

    text = bundled_path("policies", "default.yaml").read_text(encoding="utf-8")
    assert text.count("min_support: 0.75") == 2
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(text, encoding="utf-8")
    new.write_text(text.replace("min_support: 0.75", f"min_support: {value}"), encoding="utf-8")
    return str(old), str(new)


def test_a_lowered_oracle_threshold_is_looser_and_named(tmp_path):
    """Issue 31: lowering grounded min_support 0.75 → 0.0 was "changed … [oracle settings differ]",
    with no values, and passed `--fail-on looser`. Now each change is named with both values,
    classified looser, and the gate fails."""
    import json as _json

    old, new = _lowered_min_support(tmp_path, "0.0")
    r = CliRunner().invoke(main, ["compare", old, new, "--fail-on", "looser"])
    assert r.exit_code == 1, r.output
    assert "oracle grounded min_support: 0.75 → 0.0 (looser)" in r.output
    doc = _json.loads(CliRunner().invoke(main, ["compare", old, new, "--json"]).output)
    changes = [c for d in doc["differences"] for c in d["oracle_changes"]]
    assert changes and all(c == {"oracle": "grounded", "setting": "min_support", "old": 0.75, "new": 0.0,
                                 "verdict": "looser"} for c in changes)
    assert {d["verdict"] for d in doc["differences"]} == {"looser"}
    stricter = CliRunner().invoke(main, ["compare", *_lowered_min_support(tmp_path, "0.9"), "--fail-on", "looser"])
    assert stricter.exit_code == 0 and "(stricter)" in stricter.output


def test_oracle_directions():
    from memsteward.policy.compare import oracle_changes

    def dec(**settings):
        import json as _json

        spec = {"oracle": "forget_reference", "max_forget_score": 0.2, "min_retained_utility": 0.8, **settings}
        return Decision("param", frozenset({"forget_reference"}), 1, frozenset({_json.dumps(spec, sort_keys=True)}))

    base = dec()
    assert verdict(base, dec(max_forget_score=0.5)) == "looser"
    assert verdict(base, dec(min_retained_utility=0.9)) == "stricter"
    assert verdict(base, dec(max_forget_score=0.5, min_retained_utility=0.9)) == "changed"  # both directions
    assert [c["setting"] for c in oracle_changes(base, dec(max_forget_score=0.5, min_retained_utility=0.9))] == [
        "max_forget_score", "min_retained_utility"]


# Policies read from YAML as `memsteward compare` reads them, with no kind at all (valid: nothing is
# declared, so every cell is the fallback remove) next to policies that declare some.
EDGE_POLICIES = {
    "no-kinds": "kinds: {}\n",
    "no-kinds-rules": "kinds: {}\nmodes:\n  - when: {event: [delete]}\n    mode: regen\n  - when: {}\n    mode: param\n",
    "record-skill": ("kinds:\n  record: {}\n  skill: {architectures: [prompt, chain]}\nmodes:\n"
                     "  - when: {kind: [skill], event: [delete]}\n    mode: regen\n  - when: {}\n    mode: remove\n"),
    "record-regen": "kinds:\n  record: {}\nmodes:\n  - when: {}\n    mode: regen\n",
}


@pytest.mark.parametrize("a,b", [(a, b) for a in EDGE_POLICIES for b in EDGE_POLICIES if a != b])
def test_compare_cli_with_a_policy_that_declares_no_kind_matches_brute_force(tmp_path, a, b):
    import json as _json

    paths = []
    for name in (a, b):
        path = tmp_path / f"{name}.yaml"
        path.write_text(EDGE_POLICIES[name])
        paths.append(str(path))
    r = CliRunner().invoke(main, ["compare", *paths, "--json"])
    assert r.exit_code == 0, r.output
    doc = _json.loads(r.stdout)
    old, new = (Policy.model_validate(yaml.safe_load(EDGE_POLICIES[n])) for n in (a, b))
    brute = _brute_changes(old, new)
    found = [(d["verdict"], d["old"]["rule"], d["new"]["rule"], d["cell"]["kind"], d["cell"]["arch"])
             for d in doc["differences"]]
    assert sorted(found, key=str) == sorted(brute, key=str)  # every region once, none split in two
    assert doc["equal"] == (not brute)
    assert doc["counts"] == {v: sum(f[0] == v for f in found) for v in ("stricter", "looser", "changed")}
