"""Operators and oracles as plugins (issue 34), installed for real with pip from local folders.

The example plugin (examples/memsteward-example-plugin: one operator, one oracle) and a package of
plugins that misbehave on purpose (proofs_tests/plugins/broken) are pip-installed into this venv,
offline and without build isolation (flit_core is in the test extra). A policy declaring a
``profile`` kind then runs check → test --coverage → repair → audit through the command line on a
real SQLite store; the broken plugins are check errors with file:line and field, or fail only their
own candidate at repair time.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.policy.loader import load_policy_source
from memsteward.policy.plugins import installed
from memsteward.repair import plugins as repair_plugins
from memsteward.repair.embedding import HashEmbedder, digest
from memsteward.repair.execute import policy_document

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "memsteward-example-plugin"
BROKEN = Path(__file__).resolve().parent / "plugins" / "broken"


def _pip_install(folder: Path, tmp: Path) -> None:
    work = tmp / folder.name  # build from a copy: the source folder stays clean
    shutil.copytree(folder, work, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
                    "--no-index", "--disable-pip-version-check", str(work)], check=True, capture_output=True,
                   timeout=300)


@pytest.fixture(scope="module", autouse=True)
def plugins_installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plugins")
    for folder in (EXAMPLE, BROKEN):
        _pip_install(folder, tmp)
    importlib.invalidate_caches()
    repair_plugins.load_operator.cache_clear()
    repair_plugins.load_oracle.cache_clear()


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_plugins_lists_what_is_installed_with_versions():
    r = run("plugins", "--json")
    assert r.exit_code == 0, r.output
    rows = {(p["group"], p["name"]): p for p in json.loads(r.output)}
    assert rows[("memsteward.operators", "profile-merge")]["version"] == "0.1.0"
    assert rows[("memsteward.oracles", "profile-check")]["distribution"] == "memsteward-example-plugin"
    text = run("plugins").output
    assert "profile-merge  memsteward-example-plugin 0.1.0" in text


def test_example_plugin_end_to_end(tmp_path):
    policy = str(EXAMPLE / "profile-policy.yaml")
    r = run("check", policy)
    assert r.exit_code == 0 and "0 error(s)" in r.output, r.output
    r = run("test", "--coverage", str(EXAMPLE / "tests"))
    assert r.exit_code == 0 and "2 passed" in r.output, r.output
    assert "oracles 2/2" in r.output and "rules 2/2" in r.output
    store = str(tmp_path / "profiles.db")
    assert run("store", "import", "--store", store, str(EXAMPLE / "store.json")).exit_code == 0
    r = run("repair", "--policy", policy, "--store", store, "--event", str(EXAMPLE / "delete-f3.json"), "--json")
    assert r.exit_code == 0, r.output
    r = run("audit", "--store", store, "--json")
    audit = json.loads(r.output)
    assert [(p["name"], p["version"]) for p in audit["policy"]["plugins"]] == [
        ("profile-merge", "0.1.0"), ("profile-check", "0.1.0")]
    checks = {c["check"]: c["ok"] for c in audit["checks"]}
    assert checks["records-pinned"] and checks["validated"] and checks["support-retained"]
    (succ,) = audit["republished"]
    assert succ["id"] == "profile-anna"
    exported = json.loads(run("store", "export", "--store", store).output)
    profile = next(a for a in exported["artifacts"] if a["id"] == "profile-anna")
    bio = profile["content"]["bio"]
    assert bio == "Anna lives in Berlin. Anna is vegetarian."  # the plugin's successor: retained facts only
    record = profile["meta"]["embedding"]  # re-embedded from the republished text, not carried over
    assert record["text_sha256"] == digest(bio) and record["vector"] == HashEmbedder(32).embed(bio)


def test_policy_digest_covers_each_plugins_name_and_version(monkeypatch):
    policy = load_policy_source(EXAMPLE / "profile-policy.yaml").policy
    before = json.dumps(policy_document(policy), sort_keys=True)
    assert {(p["name"], p["version"]) for p in policy_document(policy)["plugins"]} == {
        ("profile-merge", "0.1.0"), ("profile-check", "0.1.0")}
    real = installed

    def upgraded(group):
        return {n: p.__class__(p.group, p.name, p.target, p.distribution, "0.2.0") for n, p in real(group).items()}

    monkeypatch.setattr("memsteward.policy.plugins.installed", upgraded)
    assert json.dumps(policy_document(policy), sort_keys=True) != before


def _policy(tmp_path, operator: str | None = None, oracle: str | None = None) -> Path:
    doc = yaml.safe_load((EXAMPLE / "profile-policy.yaml").read_text())
    if operator is not None:
        doc["kinds"]["profile"]["operators"] = {"regen": operator}
    if oracle is not None:
        doc["validation"][0]["oracles"][0]["plugin"] = oracle
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _line_of(path: Path, needle: str) -> int:
    return next(k for k, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln)


@pytest.mark.parametrize("operator,oracle,words,field,needle", [
    ("no-such-op", None, "unknown operator plugin 'no-such-op'", "kinds.profile.operators.regen", "no-such-op"),
    ("missing", None, "cannot be imported: ModuleNotFoundError", "kinds.profile.operators.regen", "missing"),
    ("not-an-operator", None, "is a str, not an operator", "kinds.profile.operators.regen", "not-an-operator"),
    (None, "not-an-oracle", "is a str, not an oracle", "validation[0].oracles[0].plugin", "not-an-oracle"),
    (None, "nope", "unknown oracle plugin 'nope'", "validation[0].oracles[0].plugin", "nope"),
])
def test_unusable_plugins_are_check_errors_naming_file_line_field(tmp_path, operator, oracle, words, field, needle):
    path = _policy(tmp_path, operator, oracle)
    r = run("check", str(path))
    assert r.exit_code == 1 and "Traceback" not in r.output
    line = next(ln for ln in r.output.splitlines() if words in ln)
    assert line.startswith(f"{path}:{_line_of(path, needle)}:") and f"[{field}]" in line, line
    # an engine refuses it too: bad input, exit 2, nothing in the store changes
    store = str(tmp_path / "s.db")
    run("store", "import", "--store", store, str(EXAMPLE / "store.json"))
    before = run("store", "export", "--store", store).output
    r = run("repair", "--policy", str(path), "--store", store, "--event", str(EXAMPLE / "delete-f3.json"))
    assert r.exit_code == 2 and words in r.output and "Traceback" not in r.output
    assert run("store", "export", "--store", store).output == before


@pytest.mark.parametrize("operator,oracle,stage", [
    ("explodes", None, "ZeroDivisionError"),
    ("exits", None, "called exit"),
    ("bad-check", None, "plugin check raised KeyError"),
    (None, "explodes", "RuntimeError"),
])
def test_a_plugins_exception_fails_only_its_candidate(tmp_path, operator, oracle, stage):
    path = _policy(tmp_path, operator, oracle)
    assert run("check", str(path)).exit_code == 0
    doc = json.loads((EXAMPLE / "store.json").read_text())
    doc["artifacts"].append({"id": "vec-2", "kind": "vector", "content": [1.0]})
    doc["edges"].append({"src": "f3", "dst": "vec-2"})
    store_doc = tmp_path / "store.json"
    store_doc.write_text(json.dumps(doc))
    store = str(tmp_path / "s.db")
    run("store", "import", "--store", store, str(store_doc))
    r = run("repair", "--policy", str(path), "--store", store, "--event", str(EXAMPLE / "delete-f3.json"), "--json")
    assert r.exit_code == 0, r.output
    plan = json.loads(r.output)
    text = json.dumps(plan)
    assert stage in text
    served = run("store", "serve", "--store", store).output
    assert "profile-anna" not in served  # its candidate failed: it stays withdrawn
    assert "f1" in served and "vec-2" not in served  # the rest of the event completed
    # the event is not wedged: the next valid event runs
    (tmp_path / "e2.json").write_text(json.dumps({"type": "delete", "roots": ["f2"]}))
    assert run("repair", "--policy", str(path), "--store", store, "--event", str(tmp_path / "e2.json")).exit_code == 0
