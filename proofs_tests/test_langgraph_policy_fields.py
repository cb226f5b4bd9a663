"""The policy's ``adapter:`` section declares which fields of an agent store's value are governed
(scanned, repaired, re-embedded), the provenance and meta fields and the re-ingestion rule; bad input
is one clear message naming the file, line and field (exit 2 when loading, nothing changed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from langgraph.store.memory import InMemoryStore

import memsteward
from memsteward.cli import main
from memsteward.errors import InputError
from memsteward.integrations.langgraph import GovernedStore

DEFAULT = Path(memsteward.bundled_path("policies", "default.yaml")).read_text()
NS = ("users", "alice")


def _policy(tmp_path: Path, section: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(DEFAULT + "\n" + section)
    return path


def _profile(gs: GovernedStore, prov: str = "derived_from") -> None:
    gs.put(NS, "home", {"content": "Alice lives at 12 Rue Cler in Paris."})
    gs.put(NS, "tea", {"content": "Alice drinks green tea."})
    gs.put(NS, "profile", {"content": "Alice drinks green tea.", "facts": ["12 Rue Cler"], "note": "likes Paris",
                           prov: [[list(NS), "home"], [list(NS), "tea"]]})


def test_the_policy_names_the_governed_fields(tmp_path):
    policy = memsteward.load_policy(_policy(tmp_path, 'adapter:\n  fields: ["content", "facts[*]"]\n'))
    gs = GovernedStore(InMemoryStore(), memsteward.open_store(), policy)
    _profile(gs)
    content = gs.store.get(gs.artifact_id(NS, "profile")).content
    assert "12 Rue Cler" in content and "likes Paris" not in content  # `note` is declared not content
    gs.delete(NS, "home")
    value = gs.get(NS, "profile").value
    assert "facts" not in value and value["note"] == "likes Paris"


def test_default_is_the_whole_value_and_an_argument_takes_precedence(tmp_path):
    gs = GovernedStore(InMemoryStore(), memsteward.open_store(), memsteward.load_policy(_policy(tmp_path, "")))
    _profile(gs)
    assert "likes Paris" in gs.store.get(gs.artifact_id(NS, "profile")).content
    policy = memsteward.load_policy(_policy(tmp_path, 'adapter:\n  fields: ["content"]\n'))
    gs = GovernedStore(InMemoryStore(), memsteward.open_store(), policy, fields=["content", "note"])
    _profile(gs)
    assert "likes Paris" in gs.store.get(gs.artifact_id(NS, "profile")).content


def test_provenance_field_and_reingest_come_from_the_policy(tmp_path):
    section = "adapter:\n  provenance_field: sources\n  reingest: review\n"
    gs = GovernedStore(InMemoryStore(), memsteward.open_store(), memsteward.load_policy(_policy(tmp_path, section)))
    _profile(gs, prov="sources")
    assert gs.reingest == "review"
    assert set(gs.store.reach([gs.artifact_id(NS, "home")])) == {gs.artifact_id(NS, "home"),
                                                                 gs.artifact_id(NS, "profile")}


@pytest.mark.parametrize("section, field", [
    ('adapter:\n  fields: ["content", "facts[x]"]\n', "adapter.fields"),
    ('adapter:\n  fields: ["meta.sensitivity"]\n', "adapter"),
    ("adapter:\n  provenance_field: meta\n", "adapter"),
    ('adapter:\n  fields: ["{content,derived_from}"]\n', "adapter"),  # every alternative is a head
    ("adapter:\n  reingest: sometimes\n", "adapter.reingest"),
    ('adapter:\n  fields: ["a\\u001b[31m"]\n', "adapter.fields"),
])
def test_bad_adapter_sections_are_one_clear_error(tmp_path, section, field):
    path = _policy(tmp_path, section)
    with pytest.raises(InputError) as err:
        memsteward.load_policy(path)
    assert err.value.field is not None and err.value.field.startswith(field)
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    start = DEFAULT.count("\n") + 2  # the line of `adapter:`; the error names it or the line below
    assert any(f"policy.yaml:{n}:" in result.output for n in (start, start + 1)), result.output
    assert "\x1b" not in result.output
