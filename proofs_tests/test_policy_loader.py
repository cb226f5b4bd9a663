"""Loading policies: safe YAML, source positions, defaults, frozen models, JSON Schema."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from memsteward.cli import main
from memsteward.policy.loader import PolicySchemaError, load_policy, load_policy_source, load_yaml
from memsteward.policy.model import Policy

SHIPPED = sorted(Path("policies").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_policies_load_and_execute(path: Path):
    policy = load_policy(path)  # raises on any schema or analysis error
    assert policy.modes and policy.kinds


def test_source_map_points_at_fields(tmp_path: Path):
    f = tmp_path / "p.yaml"
    f.write_text("version: 1\nkinds:\n  record: {}\nmodes:\n  - when: {kind: record}\n    mode: remove\n")
    src = load_policy_source(f)
    assert src.source.where(("modes", 0, "when", "kind")) == (5, 12)
    assert src.source.where(("modes", 0, "mode")) == (6, 5)
    # unknown trailing components fall back to the deepest known prefix
    assert src.source.where(("modes", 0, "mode", "function-after")) == (6, 5)


def test_policy_is_frozen_and_forbids_unknown_fields():
    p = Policy.model_validate({"kinds": {"record": {}}, "modes": [{"when": {}, "mode": "remove"}]})
    with pytest.raises(ValidationError):
        p.selection.tradeoff = 2.0  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Policy.model_validate({"kinds": {"record": {}}, "surprise": 1})


def test_scalar_or_list_in_rules():
    p = Policy.model_validate({"kinds": {"record": {}}, "modes": [{"when": {"kind": "record", "event": "delete"}, "mode": "remove"}]})
    assert p.modes[0].when.kind == ["record"] and p.modes[0].when.event == ["delete"]


def test_schema_errors_are_all_reported(tmp_path: Path):
    f = tmp_path / "p.yaml"
    f.write_text("version: 1\nkinds: {record: {}}\nselection: {tradeoff: x}\nclearance: {trials: y}\n")
    with pytest.raises(PolicySchemaError) as info:
        load_policy_source(f)
    lines = sorted(x.line for x in info.value.findings)
    assert lines == [3, 4]


def test_schema_command_prints_a_json_schema():
    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["title"] == "memsteward policy"
    assert "kinds" in doc["properties"] and doc["additionalProperties"] is False


@given(st.text(max_size=200))
def test_arbitrary_text_never_crashes_the_loader(text: str):
    """Any text is either a policy, or an InputError / PolicySchemaError — never a crash."""
    import tempfile

    from memsteward.errors import InputError
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False, encoding="utf-8") as fh:
        fh.write(text)
    try:
        load_policy_source(fh.name)
    except (InputError, PolicySchemaError):
        pass
    finally:
        Path(fh.name).unlink()


def test_load_yaml_returns_plain_data(tmp_path: Path):
    f = tmp_path / "x.yaml"
    f.write_text("a: &x [1, 2]\nb: *x\n")
    data, _ = load_yaml(f)
    assert data == {"a": [1, 2], "b": [1, 2]}


def _aliased_policy(path: Path, copies: int, size: int) -> Path:
    """One rule with a ``size``-character description, anchored and aliased ``copies`` times."""
    lines = ["version: 1", "kinds: {record: {}, summary: {}}", "modes:",
             '  - &r {when: {kind: summary}, mode: remove, description: "' + "x" * size + '"}']
    path.write_text("\n".join(lines + ["  - *r"] * copies + ["  - {when: {}, mode: remove}", ""]))
    return path


def test_alias_expansion_is_bounded_in_bytes(tmp_path: Path):
    """A 100 KB rule aliased 999 times expanded to 100 MB of policy, written into the store with every
    event (issue 25: a 1-artifact delete wrote hundreds of MB). The expanded text shares the 1 MiB cap."""
    policy = _aliased_policy(tmp_path / "alias.yaml", 999, 100_000)
    assert policy.stat().st_size < 120_000
    r = CliRunner().invoke(main, ["check", str(policy)])
    assert r.exit_code == 2 and "expands to more than" in r.output and "alias.yaml" in r.output, r.output
    db = str(tmp_path / "s.db")
    data = Path(__file__).resolve().parent.parent / "engine" / "data" / "repair"
    assert CliRunner().invoke(main, ["store", "import", "--store", db, str(data / "store.json")]).exit_code == 0
    r = CliRunner().invoke(main, ["repair", "--policy", str(policy), "--store", db,
                                  "--event", str(data / "event-delete.json")])
    assert r.exit_code == 2 and "expands to more than" in r.output, r.output
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM events").fetchone() == (0,)
    con.close()
    # a few aliases of a small rule stay fine
    ok = _aliased_policy(tmp_path / "ok.yaml", 3, 100)
    assert CliRunner().invoke(main, ["check", str(ok)]).exit_code in (0, 1)
