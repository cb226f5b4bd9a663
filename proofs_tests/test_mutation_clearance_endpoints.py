"""The endpoint policy (``endpoints.py``) function by function, without the CLI in between.

Written for issue 33's targeted mutation runs (bench/mutation-targeted-clearance.md): every
refusal of ``url_problem`` and the case that just passes it, every own-secret pattern and a near
miss of each, the precedence of the three sources of the allow-lists (an empty list included),
and every refusal of the config file, each with the field it names.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memsteward.errors import InputError
from memsteward.policy.endpoints import (
    DEFAULT_KEY_ENVS,
    EndpointRules,
    _config,
    _config_path,
    _setting,
    _split,
    endpoints,
    is_loopback,
    own_secret,
    shown_url,
)
from memsteward.policy.model import Policy

OWN = ["MEMSTEWARD_AUDIT_KEY", "MEMSTEWARD_AUDIT_KEY_FILE", "MEMSTEWARD_PG_DSN", "MEMSTEWARD_DSN",
       "MEMSTEWARD_MASTER_KEY", "MEMSTEWARD_MASTER_KEY_2", "MEMSTEWARD_INDEX_KEY", "MEMSTEWARD_LINEAGE_INDEX_KEY",
       "MEMSTEWARD_KEY_FILE", "MEMSTEWARD_DEK_KEY_FILE", "MEMSTEWARD_KEYSTORE", "MEMSTEWARD_ALLOWED_KEY_ENVS",
       "MEMSTEWARD_ALLOWED_HTTP_HOSTS", "MEMSTEWARD_CONFIG", "PGPASSWORD", "PGPASSFILE", "PGSERVICEFILE",
       "DATABASE_URL", "memsteward_audit_key", "pgpassword"]
NOT_OWN = ["MEMSTEWARD_LLM_API_KEY", "MEMSTEWARD_AUDIT", "MEMSTEWARD_CONFIG_X", "XMEMSTEWARD_AUDIT_KEY",
           "OPENAI_API_KEY", "PGPASSWORDS", "DATABASE_URL_2", "PGUSER", "MEMSTEWARD_ALLOWED"]


@pytest.mark.parametrize("name", OWN)
def test_own_secrets_are_refused_under_any_allow_list(name):
    assert own_secret(name)
    assert not EndpointRules(key_envs=("*",)).key_env_allowed(name)
    assert not EndpointRules(key_envs=(name,)).key_env_allowed(name)


@pytest.mark.parametrize("name", NOT_OWN)
def test_near_misses_are_not_own_secrets(name):
    assert not own_secret(name)
    assert EndpointRules(key_envs=("*",)).key_env_allowed(name)


def test_key_env_patterns_are_exact_and_case_sensitive():
    default = EndpointRules()
    assert default.key_envs == DEFAULT_KEY_ENVS == ("OPENAI_API_KEY", "MEMSTEWARD_LLM_API_KEY")
    assert default.key_env_allowed("OPENAI_API_KEY") and default.key_env_allowed("MEMSTEWARD_LLM_API_KEY")
    for name in ("openai_api_key", "OPENAI_API_KEY_2", "OPENAI_API_KE", "HOME"):
        assert not default.key_env_allowed(name), name
    assert EndpointRules(key_envs=("CORP_*",)).key_env_allowed("CORP_TOKEN")
    assert not EndpointRules(key_envs=("CORP_*",)).key_env_allowed("corp_token")
    assert not EndpointRules(key_envs=()).key_env_allowed("OPENAI_API_KEY")


@pytest.mark.parametrize("url,problem", [
    ("https://api.example.com/v1", None),
    ("https://api.example.com:8443/v1", None),
    ("HTTPS://api.example.com/v1", None),  # urlsplit lowers the scheme
    ("http://127.0.0.1:8765/v1", None),
    ("http://localhost/v1", None),
    ("http://LOCALHOST/v1", None),
    ("http://[::1]:8000/", None),
    ("http://127.9.9.9/", None),
    ("http://intranet.corp/v1", "plain http://"),
    ("http://10.0.0.1/", "plain http://"),
    ("http://[::2]/", "plain http://"),
    ("ftp://api.example.com/", "must be an http:// or https:// URL"),
    ("file:///etc/passwd", "must be an http:// or https:// URL"),
    ("https:///v1", "must be an http:// or https:// URL"),
    ("api.example.com/v1", "must be an http:// or https:// URL"),
    ("https://user@api.example.com/", "must not carry credentials"),
    ("https://:pw@api.example.com/", "must not carry credentials"),
    ("https://user:pw@api.example.com/", "must not carry credentials"),
    ("http://user:pw@127.0.0.1/", "must not carry credentials"),
    ("http://[::1/", "not a valid URL"),
])
def test_url_problems(url, problem):
    got = EndpointRules().url_problem(url)
    if problem is None:
        assert got is None
    else:
        assert got is not None and problem in got, got


def test_an_allowed_http_host_is_matched_without_case_and_only_that_host():
    rules = EndpointRules.from_environment({"MEMSTEWARD_ALLOWED_HTTP_HOSTS": "Intranet.Corp, 10.0.0.1"})
    assert rules.http_hosts == ("intranet.corp", "10.0.0.1")
    assert rules.url_problem("http://intranet.corp/v1") is None
    assert rules.url_problem("http://INTRANET.corp:81/v1") is None
    assert rules.url_problem("http://10.0.0.1/") is None
    assert rules.url_problem("http://10.0.0.2/") is not None
    assert rules.url_problem("http://other.corp/") is not None
    assert "MEMSTEWARD_ALLOWED_HTTP_HOSTS" in (EndpointRules().url_problem("http://intranet.corp/") or "")


def test_loopback_hosts():
    assert [is_loopback(h) for h in ("localhost", "LocalHost", "127.0.0.1", "127.255.255.254", "::1", "[::1]")] == [True] * 6
    assert [is_loopback(h) for h in ("localhost.evil.com", "128.0.0.1", "0.0.0.0", "::", "[::2]", "", "10.0.0.1")] == [False] * 7


@pytest.mark.parametrize("url,shown", [
    ("https://user:pw@api.example.com:8443/v1?key=s#f", "https://api.example.com:8443/v1"),
    ("https://api.example.com/v1", "https://api.example.com/v1"),
    ("http://localhost:1/", "http://localhost:1/"),
    ("http://localhost:0/x", "http://localhost/x"),  # port 0 is no port
    ("https://API.Example.com/V1", "https://api.example.com/V1"),
    ("https://h:99999/", "<invalid URL>"),
    ("http://[::1", "<invalid URL>"),
])
def test_shown_url(url, shown):
    assert shown_url(url) == shown


def test_shown_url_is_cut_at_200_characters_and_made_printable():
    base = "https://api.example.com/"
    for n in (199, 200, 201, 400):
        url = base + "p" * (n - len(base))
        assert shown_url(url) == url[:200], n
    assert "\x1b" not in shown_url("https://api.example.com/\x1b[2J")


def test_endpoints_lists_every_endpoint_that_receives_memory_text():
    ep = {"base_url": "https://a.example/v1", "model": "m"}
    bare = Policy.model_validate({"kinds": {"record": {}}, "modes": [{"when": {}, "mode": "remove"}]})
    assert list(endpoints(bare)) == []
    full = Policy.model_validate({
        "kinds": {"record": {}}, "modes": [{"when": {}, "mode": "remove"}],
        "clearance": {"evaluator": {"type": "openai", "judge": "lexical", "endpoint": ep}},
        "repair": {"regen_endpoint": {**ep, "base_url": "https://b.example/v1"},
                   "embedder": {"type": "openai", "endpoint": {**ep, "base_url": "https://c.example/v1"}}}})
    assert [(loc, e.base_url) for loc, e in endpoints(full)] == [
        (("clearance", "evaluator", "endpoint"), "https://a.example/v1"),
        (("repair", "regen_endpoint"), "https://b.example/v1"),
        (("repair", "embedder", "endpoint"), "https://c.example/v1")]
    # an offline evaluator or embedder sends nothing: an endpoint it carries is not listed (nor checked)
    idle = Policy.model_validate({
        "kinds": {"record": {}}, "modes": [{"when": {}, "mode": "remove"}],
        "clearance": {"evaluator": {"type": "offline", "endpoint": {**ep, "base_url": "http://evil.example/v1"}}},
        "repair": {"embedder": {"type": "offline", "endpoint": {**ep, "base_url": "http://evil.example/v2"}}}})
    assert list(endpoints(idle)) == []
    regen_only = Policy.model_validate({"kinds": {"record": {}}, "modes": [{"when": {}, "mode": "remove"}],
                                        "repair": {"regen_endpoint": ep}})
    assert [loc for loc, _ in endpoints(regen_only)] == [("repair", "regen_endpoint")]


# ------------------------------------------------------------------ where the allow-lists come from


def test_split_drops_blanks_and_spaces():
    assert _split("A, B_* ,,  ,C") == ("A", "B_*", "C")
    assert _split("") == () and _split(" , ") == ()


def test_config_path_precedence(tmp_path: Path):
    assert _config_path({"MEMSTEWARD_CONFIG": "/x/c.toml", "XDG_CONFIG_HOME": "/y", "HOME": "/h"}) == Path("/x/c.toml")
    assert _config_path({"MEMSTEWARD_CONFIG": "", "XDG_CONFIG_HOME": "/y", "HOME": "/h"}) == Path("/y/memsteward/config.toml")
    assert _config_path({"XDG_CONFIG_HOME": "", "HOME": "/h"}) == Path("/h/.config/memsteward/config.toml")
    assert _config_path({"HOME": ""}) is None and _config_path({}) is None


def test_a_missing_default_config_means_defaults_but_a_named_one_must_exist(tmp_path: Path):
    assert _config({"XDG_CONFIG_HOME": str(tmp_path)}) == ("", {})  # absent
    (tmp_path / "memsteward" / "config.toml").mkdir(parents=True)  # not a file
    assert _config({"XDG_CONFIG_HOME": str(tmp_path)}) == ("", {})
    with pytest.raises(InputError):
        _config({"MEMSTEWARD_CONFIG": str(tmp_path / "absent.toml")})
    assert _config({}) == ("", {})


def write(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return {"MEMSTEWARD_CONFIG": str(path)}


@pytest.mark.parametrize("text,message,field", [
    ("[endpoints\n", "invalid TOML", ""),
    ("endpoints = 5\n", "must be a table", "endpoints"),
    ("[endpoints]\nallowed = []\n", "unknown setting", "endpoints.allowed"),
    ('[endpoints]\n"not a name" = []\n', "unknown setting", "endpoints"),
    ('[endpoints]\nallowed_key_envs = "A"\n', "must be a list of strings", "endpoints.allowed_key_envs"),
    ('[endpoints]\nallowed_http_hosts = ["a", 1]\n', "must be a list of strings", "endpoints.allowed_http_hosts"),
])
def test_config_refusals_name_the_file_and_the_field(tmp_path: Path, text, message, field):
    env = write(tmp_path, text)
    with pytest.raises(InputError) as exc:
        EndpointRules.from_environment(env)
    assert message in exc.value.message and exc.value.file == env["MEMSTEWARD_CONFIG"]
    assert exc.value.field == field


def test_a_config_without_an_endpoints_table_and_a_valid_one(tmp_path: Path):
    env = write(tmp_path, "[other]\nx = 1\n")
    assert _config(env) == (env["MEMSTEWARD_CONFIG"], {})
    env = write(tmp_path, '[endpoints]\nallowed_key_envs = ["A"]\nallowed_http_hosts = []\n')
    assert _config(env) == (env["MEMSTEWARD_CONFIG"], {"allowed_key_envs": ["A"], "allowed_http_hosts": []})


def test_setting_precedence_environment_then_config_then_default():
    config = ("/c.toml", {"allowed_key_envs": ["FROM_FILE"]})
    assert _setting({"V": "A,B"}, "V", config, "allowed_key_envs", ("D",)) == (("A", "B"), "allowed_key_envs from $V")
    assert _setting({"V": ""}, "V", config, "allowed_key_envs", ("D",)) == ((), "allowed_key_envs from $V")
    assert _setting({}, "V", config, "allowed_key_envs", ("D",)) == (("FROM_FILE",), "allowed_key_envs from /c.toml")
    assert _setting({}, "V", ("/c.toml", {"allowed_key_envs": []}), "allowed_key_envs", ("D",)) == (
        (), "allowed_key_envs from /c.toml")
    assert _setting({}, "V", ("", {}), "allowed_key_envs", ("D",)) == (("D",), "allowed_key_envs: default")


def test_rules_from_environment_and_their_source(tmp_path: Path):
    env = write(tmp_path, '[endpoints]\nallowed_key_envs = ["CORP_*"]\nallowed_http_hosts = ["Box.Corp"]\n')
    rules = EndpointRules.from_environment(env)
    path = env["MEMSTEWARD_CONFIG"]
    assert rules == EndpointRules(("CORP_*",), ("box.corp",),
                                  f"allowed_key_envs from {path}; allowed_http_hosts from {path}")
    over = EndpointRules.from_environment({**env, "MEMSTEWARD_ALLOWED_KEY_ENVS": "X"})
    assert over.key_envs == ("X",) and over.http_hosts == ("box.corp",)
    assert over.source == f"allowed_key_envs from $MEMSTEWARD_ALLOWED_KEY_ENVS; allowed_http_hosts from {path}"
    empty = EndpointRules.from_environment({})
    assert empty == EndpointRules(DEFAULT_KEY_ENVS, (), "allowed_key_envs: default; allowed_http_hosts: default")
    none = EndpointRules.from_environment(write(tmp_path, "[endpoints]\nallowed_key_envs = []\n"))
    assert none.key_envs == () and not none.key_env_allowed("OPENAI_API_KEY")


def test_rules_read_the_process_environment_when_none_is_given(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("MEMSTEWARD_ALLOWED_KEY_ENVS", "ONLY_THIS")
    monkeypatch.setenv("MEMSTEWARD_ALLOWED_HTTP_HOSTS", "H")
    monkeypatch.delenv("MEMSTEWARD_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    rules = EndpointRules.from_environment()
    assert rules.key_envs == ("ONLY_THIS",) and rules.http_hosts == ("h",)


def test_the_config_file_is_read_up_to_64_kib_and_refused_beyond(tmp_path: Path):
    body = '[endpoints]\nallowed_key_envs = ["CORP_*"]\n'
    for size in (65_535, 65_536, 65_537, 131_072):
        env = write(tmp_path, body + "#" * (size - len(body) - 1) + "\n")
        assert (tmp_path / "config.toml").stat().st_size == size
        if size <= 65_536:
            assert EndpointRules.from_environment(env).key_envs == ("CORP_*",), size
        else:
            with pytest.raises(InputError, match="65536-byte limit"):
                EndpointRules.from_environment(env)
