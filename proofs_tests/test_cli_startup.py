"""Start-up (issue 11): a command imports only what it uses.

Real child processes report what they imported (``-X importtime``); no timing is asserted here (the
times are in bench/cli_startup.py). Also: the static command table of ``memsteward --help`` says
what the commands' own docstrings say, the package's lazy names resolve, and a remembered
``check`` verdict is used only for the same policy, allow-lists and code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import memsteward
from memsteward.cli import COMMANDS, main
from memsteward.errors import InputError
from memsteward.policy import loader, verdicts
from memsteward.policy.endpoints import EndpointRules
from memsteward.policy.loader import load_checked_source, load_policy

ROOT = Path(__file__).resolve().parent.parent
POLICY = ROOT / "policies" / "default.yaml"
HEAVY = {"z3", "networkx", "ortools", "numpy", "scipy", "hypothesis", "psycopg", "pydantic", "yaml", "ray"}


def imported(args: list[str], env: dict[str, str], cwd: Path) -> set[str]:
    """Every module a real ``python -X importtime -m memsteward ARGS`` process imported."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "memsteward", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


def tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, verdicts.CACHE_VAR: str(tmp_path / "cache")}


def test_help_imports_no_command_module_and_no_heavy_library(env, tmp_path):
    mods = imported(["--help"], env, tmp_path)
    assert "memsteward.cli" in mods  # the probe does see our own modules
    assert not tops(mods) & HEAVY, sorted(tops(mods) & HEAVY)
    assert not {m for m in mods if m.endswith("_cmds") or m.startswith("memsteward.repair")}, sorted(mods)
    assert "memsteward.api" not in mods


def tiny_store(tmp_path: Path, env: dict[str, str]) -> tuple[str, str]:
    doc = {"artifacts": [{"id": "r1", "kind": "record", "content": {"text": "Alice likes tea."}},
                         {"id": "r2", "kind": "record", "content": {"text": "Alice lives in Paris."}},
                         {"id": "s1", "kind": "summary", "content": "Alice likes tea. Alice lives in Paris."}],
           "edges": [{"src": "r1", "dst": "s1"}, {"src": "r2", "dst": "s1"}]}
    (tmp_path / "s.json").write_text(json.dumps(doc))
    (tmp_path / "e.json").write_text(json.dumps({"type": "delete", "roots": ["r1"]}))
    db = str(tmp_path / "tiny.db")
    subprocess.run([sys.executable, "-m", "memsteward", "store", "import", str(tmp_path / "s.json"), "--store", db],
                   check=True, capture_output=True, env=env, timeout=120)
    return db, str(tmp_path / "e.json")


def test_repair_dry_run_imports_z3_only_on_a_policys_first_run(env, tmp_path):
    db, event = tiny_store(tmp_path, env)
    args = ["repair", "--policy", str(POLICY), "--store", db, "--event", event, "--dry-run"]
    first = tops(imported(args, env, tmp_path))
    assert "z3" in first  # nothing remembered yet: the policy is checked (with Z3) before it runs
    second = imported(args, env, tmp_path)
    assert "memsteward.repair.execute" in second and "pydantic" in tops(second)
    assert "yaml" not in tops(second)  # the validated policy is remembered: its YAML is not parsed again
    assert "memsteward.policy.domain" in second and "memsteward.policy.analysis" not in second
    assert "ortools" in tops(second)  # the summary's regeneration is a candidate: the cut runs on OR-Tools
    assert not tops(second) & {"z3", "networkx", "numpy", "scipy", "hypothesis", "psycopg", "ray"}, sorted(tops(second))
    assert not {m for m in second if m.startswith(("memsteward.testing", "memsteward.clearance.attribution",
                                                   "memsteward.policy.analysis", "memsteward.specs"))}


def test_the_executable_exits_quickly_and_still_closes_its_stores(env, tmp_path):
    """``memsteward`` / ``python -m memsteward`` is :func:`memsteward.cli.run`: garbage is collected
    (finalizers run) before the rest is frozen for the interpreter's exit. A store the command leaves
    to the collector is closed, its WAL checkpointed and removed (a freeze without the collection
    leaves ``-wal``/``-shm`` behind); exit codes and messages are those of ``main``."""
    db, event = tiny_store(tmp_path, env)
    assert sorted(p.name for p in tmp_path.glob("tiny.db*")) == ["tiny.db", "tiny.db.keys"]  # and its key file
    args = ["repair", "--policy", str(POLICY), "--store", db, "--event", event]
    done = subprocess.run([sys.executable, "-m", "memsteward", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.glob("tiny.db*")) == ["tiny.db", "tiny.db.keys"]  # and its key file
    again = subprocess.run([sys.executable, "-m", "memsteward", *args], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=120)
    in_process = CliRunner().invoke(main, args, env={verdicts.CACHE_VAR: env[verdicts.CACHE_VAR]})
    assert again.returncode == in_process.exit_code == 2  # r1 was erased by the first run
    assert again.stderr == in_process.output and "erased by an earlier delete event" in again.stderr
    code = ("import atexit, sys; from memsteward import cli; calls = []; "
            "atexit.register = lambda f: calls.append(f); cli.main = lambda: None; cli.run(); "
            "print(calls == [cli._quick_exit])")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60).stdout.strip() == "True"


def test_check_still_uses_z3(env, tmp_path):
    assert "z3" in tops(imported(["check", str(POLICY)], env, tmp_path))


def test_command_table_matches_the_commands():
    ctx = click.Context(main)
    assert set(COMMANDS) == set(main.list_commands(ctx))
    for name, entry in COMMANDS.items():
        command = main.load(name)
        assert command.name == name or command.callback.__name__ in entry.target, name
        real = command.short_help or command.help or ""
        for limit in (30, 45, 60, 80, 300):
            shown = click.Command(name, help=entry.short_help).get_short_help_str(limit)
            assert shown == click.Command(name, help=real).get_short_help_str(limit), (name, limit)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_loads_and_prints_its_help(name):
    result = CliRunner().invoke(main, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert f"Usage: main {name}" in result.output or f"Usage: memsteward {name}" in result.output


def test_main_help_lists_every_command(env, tmp_path):
    out = subprocess.run([sys.executable, "-m", "memsteward", "--help"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=60).stdout
    listed = [line.split()[0] for line in out.split("Commands:", 1)[1].splitlines() if line.strip()]
    assert listed == sorted(COMMANDS)
    assert "Validate policies and analyse them with Z3." in out


def test_unknown_command_is_a_usage_error():
    result = CliRunner().invoke(main, ["nope"])
    assert result.exit_code == 2 and "No such command" in result.output


def test_package_names_are_loaded_on_first_access():
    code = ("import sys, memsteward; assert 'memsteward.api' not in sys.modules; "
            "assert 'memsteward.store.sqlstore' not in sys.modules; "
            "s = memsteward.open_store(); assert 'memsteward.api' in sys.modules; "
            "assert set(memsteward.__all__) <= set(dir(memsteward)); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
    for name in memsteward.__all__:
        assert getattr(memsteward, name) is not None
    assert memsteward.Store is memsteward.store.sqlstore.SqlStore
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        memsteward.nope  # noqa: B018


# ----------------------------------------------------------------------------- remembered verdicts

def test_a_clean_verdict_is_remembered_and_reused(monkeypatch, tmp_path):
    monkeypatch.setenv(verdicts.CACHE_VAR, str(tmp_path / "cache"))
    src = load_checked_source(POLICY)
    key = verdicts.verdict_key(src.policy, EndpointRules.from_environment())
    assert verdicts.passed_before(key)
    calls = []
    import memsteward.policy.analysis as analysis
    monkeypatch.setattr(analysis, "analyze", lambda *a, **k: calls.append(1) or [])
    load_checked_source(POLICY)
    assert calls == []  # remembered: not analysed again


def test_a_verdict_is_not_reused_under_other_allow_lists(monkeypatch, tmp_path):
    monkeypatch.setenv(verdicts.CACHE_VAR, str(tmp_path / "cache"))
    src = load_checked_source(POLICY)
    wide = EndpointRules(("OPENAI_API_KEY", "MEMSTEWARD_*", "HOME"), ("example.org",))
    assert verdicts.verdict_key(src.policy, wide) != verdicts.verdict_key(src.policy, EndpointRules())
    monkeypatch.setenv("MEMSTEWARD_ALLOWED_KEY_ENVS", "HOME")
    calls = []
    import memsteward.policy.analysis as analysis
    real = analysis.analyze
    monkeypatch.setattr(analysis, "analyze", lambda *a, **k: calls.append(1) or real(*a, **k))
    load_checked_source(POLICY)
    assert calls == [1]


def test_a_policy_with_errors_is_refused_every_time(monkeypatch, tmp_path):
    monkeypatch.setenv(verdicts.CACHE_VAR, str(tmp_path / "cache"))
    bad = tmp_path / "bad.yaml"
    bad.write_text(POLICY.read_text().replace("tradeoff: 0.3", "tradeoff: -0.3", 1))
    assert bad.read_text() != POLICY.read_text()
    load_checked_source(POLICY)  # one clean verdict remembered
    for _ in range(2):
        with pytest.raises(InputError, match="the policy has errors"):
            load_checked_source(bad)
    assert len(list((tmp_path / "cache" / "checked").iterdir())) == 1


def test_an_untrusted_cache_directory_is_ignored(monkeypatch, tmp_path):
    monkeypatch.setenv(verdicts.CACHE_VAR, str(tmp_path / "cache"))
    src = load_checked_source(POLICY)
    key = verdicts.verdict_key(src.policy, EndpointRules.from_environment())
    d = tmp_path / "cache" / "checked"
    assert (d / key).is_file() and verdicts.passed_before(key)
    d.chmod(0o777)  # anyone could plant a marker: not trusted
    assert not verdicts.passed_before(key)
    d.chmod(0o700)
    monkeypatch.setenv(verdicts.CACHE_VAR, "")  # no cache at all
    assert verdicts.cache_dir() is None and not verdicts.passed_before(key)


# ----------------------------------------------------------------------------- remembered policies

def no_yaml(monkeypatch) -> list[int]:
    """Count the policy files parsed from YAML from now on."""
    calls: list[int] = []
    real = loader.parse_yaml
    monkeypatch.setattr(loader, "parse_yaml", lambda *a: calls.append(1) or real(*a))
    return calls


def entry_path(tmp_path: Path, text: str) -> Path:
    return tmp_path / "cache" / "policies" / verdicts.policy_key(text, EndpointRules.from_environment())


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "policies").glob("*.yaml")))
def test_a_remembered_policy_is_the_policy_its_file_loads_to(monkeypatch, tmp_path, name):
    monkeypatch.setenv(verdicts.CACHE_VAR, str(tmp_path / "cache"))
    fresh = load_policy(ROOT / "policies" / name)
    assert entry_path(tmp_path, (ROOT / "policies" / name).read_text()).is_file()
    parsed = no_yaml(monkeypatch)
    again = load_policy(ROOT / "policies" / name)
    assert parsed == [] and again == fresh
    assert again.model_dump_json() == fresh.model_dump_json()
    assert again == load_checked_source(ROOT / "policies" / name).policy


def tampered(doc: dict) -> dict:
    return {**doc, "policy": {**doc["policy"], "selection": {**doc["policy"]["selection"], "tradeoff": 0.9}}}


@pytest.mark.parametrize("damage", ["tampered", "other key", "garbage", "truncated", "not a policy", "format",
                                    "symlink", "fifo", "directory"])
def test_an_unusable_entry_changes_nothing(monkeypatch, tmp_path, damage):
    monkeypatch.setenv(verdicts.CACHE_VAR, str(tmp_path / "cache"))
    fresh = load_policy(POLICY)
    entry = entry_path(tmp_path, POLICY.read_text())
    raw = entry.read_bytes()
    doc = json.loads(raw)
    entry.unlink()
    if damage == "tampered":  # a valid policy, but not one a clean verdict is remembered for
        entry.write_text(json.dumps(tampered(doc)))
    elif damage == "other key":
        entry.write_text(json.dumps({**doc, "key": "0" * 64}))
    elif damage == "garbage":
        entry.write_bytes(b"\xff\x00not json")
    elif damage == "truncated":
        entry.write_bytes(raw[: len(raw) // 2])
    elif damage == "not a policy":
        entry.write_text(json.dumps({**doc, "policy": {"kinds": "nope"}}))
    elif damage == "format":
        entry.write_text(json.dumps({**doc, "format": "memsteward-policy-0"}))
    elif damage == "symlink":
        (tmp_path / "elsewhere").write_bytes(raw)
        entry.symlink_to(tmp_path / "elsewhere")
    elif damage == "fifo":
        os.mkfifo(entry)  # never opened for a blocking read
    else:
        entry.mkdir()
    parsed = no_yaml(monkeypatch)
    assert load_policy(POLICY) == fresh and parsed == [1]  # read and checked as if nothing were remembered
    if damage not in ("fifo", "directory"):
        assert json.loads(entry.read_bytes()) == doc  # and remembered again, correctly
        parsed.clear()
        assert load_policy(POLICY) == fresh and parsed == []


def test_an_edited_entry_whose_policy_was_never_checked_is_not_run(monkeypatch, tmp_path):
    """The entry's policy must have a remembered verdict of its own: an edited entry whose policy was
    never checked is not run (the file is loaded instead)."""
    monkeypatch.setenv(verdicts.CACHE_VAR, str(tmp_path / "cache"))
    load_policy(POLICY)
    entry = entry_path(tmp_path, POLICY.read_text())
    entry.write_text(json.dumps(tampered(json.loads(entry.read_bytes()))))
    assert load_policy(POLICY).selection.tradeoff == 0.3


def test_a_changed_file_or_a_bad_policy_is_never_read_from_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv(verdicts.CACHE_VAR, str(tmp_path / "cache"))
    path = tmp_path / "p.yaml"
    path.write_text(POLICY.read_text())
    assert load_policy(path).selection.tradeoff == 0.3
    path.write_text(POLICY.read_text().replace("tradeoff: 0.3", "tradeoff: 0.5", 1))
    assert load_policy(path).selection.tradeoff == 0.5
    assert len(list((tmp_path / "cache" / "policies").iterdir())) == 2
    errors = []
    for text in (POLICY.read_text().replace("tradeoff: 0.3", "tradeoff: -0.3", 1),  # a `check` error
                 POLICY.read_text().replace("tradeoff: 0.3", "tradeoff: [0.3]", 1),  # a schema error
                 "kinds: {record: {}}\nkinds: {}\n"):  # a YAML error (duplicate key)
        path.write_text(text)
        for _ in range(2):
            with pytest.raises(InputError) as exc:
                load_policy(path)
            errors.append(exc.value.render())
    assert errors[0] == errors[1] and errors[2] == errors[3] and errors[4] == errors[5], errors
    assert "the policy has errors" in errors[0] and "duplicate key" in errors[4]
    assert len(list((tmp_path / "cache" / "policies").iterdir())) == 2


def test_remembered_policies_follow_the_allow_lists_and_the_cache_settings(monkeypatch, tmp_path):
    monkeypatch.setenv(verdicts.CACHE_VAR, str(tmp_path / "cache"))
    load_policy(POLICY)
    parsed = no_yaml(monkeypatch)
    monkeypatch.setenv("MEMSTEWARD_ALLOWED_KEY_ENVS", "HOME")
    load_policy(POLICY)
    assert parsed == [1]  # other allow-lists: another key
    d = tmp_path / "cache" / "policies"
    d.chmod(0o777)  # anyone could plant an entry: not trusted
    load_policy(POLICY)
    assert parsed == [1, 1]
    d.chmod(0o700)
    monkeypatch.setenv(verdicts.CACHE_VAR, "")  # no cache at all
    load_policy(POLICY)
    assert parsed == [1, 1, 1] and verdicts.cache_dir("policies") is None


def test_a_policy_whose_document_reads_back_differently_is_not_remembered(monkeypatch, tmp_path):
    """A YAML date inside a schema oracle's JSON Schema is a ``date`` in the policy but a string in
    its JSON document: remembering the document would change the policy, so it is not remembered."""
    monkeypatch.setenv(verdicts.CACHE_VAR, str(tmp_path / "cache"))
    path = tmp_path / "p.yaml"
    path.write_text(POLICY.read_text().replace("schema: {type: string, minLength: 1}",
                                               "schema: {type: string, minLength: 1, examples: [2024-01-01]}", 1))
    policy = load_policy(path)
    assert policy != load_policy(POLICY)
    assert not entry_path(tmp_path, path.read_text()).exists()
    parsed = no_yaml(monkeypatch)
    assert load_policy(path) == policy and parsed == [1]


def test_a_config_error_is_reported_as_before(monkeypatch, tmp_path):
    monkeypatch.setenv(verdicts.CACHE_VAR, str(tmp_path / "cache"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("kinds: {record: {}}\nmodes: nope\n")
    (tmp_path / "config.toml").write_text("not toml [")
    monkeypatch.setenv("MEMSTEWARD_CONFIG", str(tmp_path / "config.toml"))
    with pytest.raises(InputError) as policy_first:  # the policy's own error comes first
        load_policy(bad)
    assert policy_first.value.file == str(bad)
    with pytest.raises(InputError, match="invalid TOML"):
        load_policy(POLICY)
