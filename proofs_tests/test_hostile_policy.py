"""Hostile policies (issue 17, item 2): a policy cannot choose where a secret goes, cannot make
`check` echo a file it was pointed at, and every number that drives work has an upper bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.policy.endpoints import EndpointRules, is_loopback
from memsteward.policy.model import Policy
from memsteward.store import Store

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data"
CASE = DATA / "cases" / "direct.json"

BASE = """version: 1
kinds: {{record: {{}}, summary: {{}}}}
modes:
  - {{when: {{kind: summary, support: sufficient}}, mode: regen}}
  - {{when: {{}}, mode: remove}}
validation:
  - {{mode: regen, oracles: [{{oracle: schema, schema: {{type: string}}}}]}}
{extra}
"""


def _policy(tmp_path: Path, extra: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(BASE.format(extra=extra))
    return path


def _evaluator(url: str, key: str = "OPENAI_API_KEY") -> str:
    return (f"clearance:\n  evaluator:\n    type: openai\n    judge: lexical\n"
            f"    endpoint: {{base_url: '{url}', model: m, api_key_env: {key}}}\n")


def _regen(url: str, key: str = "OPENAI_API_KEY") -> str:
    return f"repair:\n  regen_endpoint: {{base_url: '{url}', model: m, api_key_env: {key}}}\n"


def _embedder(url: str, key: str = "OPENAI_API_KEY") -> str:
    return (f"repair:\n  embedder:\n    type: openai\n"
            f"    endpoint: {{base_url: '{url}', model: m, api_key_env: {key}}}\n")


def _check(path: Path, env: dict[str, str] | None = None):
    result = CliRunner().invoke(main, ["check", str(path), "--json"], env=_clean_env(env))
    return result.exit_code, json.loads(result.output)


def _clean_env(env: dict[str, str] | None) -> dict[str, str | None]:
    """No allow-list from the developer's environment or config leaks into a test."""
    out: dict[str, str | None] = {"MEMSTEWARD_ALLOWED_KEY_ENVS": None, "MEMSTEWARD_ALLOWED_HTTP_HOSTS": None,
                                  "MEMSTEWARD_CONFIG": None, "XDG_CONFIG_HOME": "/nonexistent-memsteward-test"}
    out.update(env or {})
    return out


def _codes(findings: list[dict], severity: str) -> list[tuple[str, str]]:
    return [(f["code"], f["field"]) for f in findings if f["severity"] == severity]


# (policy block, env, expected error (code, field) list) — a hand table
CASES = {
    "https-default-key": (_evaluator("https://api.example.com/v1"), {}, []),
    "foreign-key": (_evaluator("https://api.example.com/v1", "AWS_SECRET_ACCESS_KEY"), {},
                    [("secret", "clearance.evaluator.endpoint.api_key_env")]),
    "foreign-key-allowed-by-env": (_evaluator("https://api.example.com/v1", "AWS_SECRET_ACCESS_KEY"),
                                   {"MEMSTEWARD_ALLOWED_KEY_ENVS": "OPENAI_API_KEY, AWS_*"}, []),
    # issue 25: the default names exact variables, never the MEMSTEWARD_* prefix
    "memsteward-prefix-default": (_evaluator("https://api.example.com/v1", "MEMSTEWARD_LLM_KEY"), {},
                                  [("secret", "clearance.evaluator.endpoint.api_key_env")]),
    "memsteward-llm-key-default": (_evaluator("https://api.example.com/v1", "MEMSTEWARD_LLM_API_KEY"), {}, []),
    "audit-key-default": (_evaluator("https://api.example.com/v1", "MEMSTEWARD_AUDIT_KEY"), {},
                          [("secret", "clearance.evaluator.endpoint.api_key_env")]),
    "audit-key-allowed-by-star": (_regen("https://api.example.com/v1", "MEMSTEWARD_AUDIT_KEY"),
                                  {"MEMSTEWARD_ALLOWED_KEY_ENVS": "*"}, [("secret", "repair.regen_endpoint.api_key_env")]),
    "dsn-allowed-by-name": (_regen("https://api.example.com/v1", "MEMSTEWARD_PG_DSN"),
                            {"MEMSTEWARD_ALLOWED_KEY_ENVS": "MEMSTEWARD_PG_DSN"},
                            [("secret", "repair.regen_endpoint.api_key_env")]),
    "master-key-allowed-by-prefix": (_regen("https://api.example.com/v1", "MEMSTEWARD_MASTER_KEY"),
                                     {"MEMSTEWARD_ALLOWED_KEY_ENVS": "MEMSTEWARD_*"},
                                     [("secret", "repair.regen_endpoint.api_key_env")]),
    "pgpassword-allowed-by-name": (_regen("https://api.example.com/v1", "PGPASSWORD"),
                                   {"MEMSTEWARD_ALLOWED_KEY_ENVS": "PGPASSWORD"},
                                   [("secret", "repair.regen_endpoint.api_key_env")]),
    "empty-env-list-allows-none": (_evaluator("https://api.example.com/v1"), {"MEMSTEWARD_ALLOWED_KEY_ENVS": ""},
                                   [("secret", "clearance.evaluator.endpoint.api_key_env")]),
    "env-list-replaces-default": (_evaluator("https://api.example.com/v1"), {"MEMSTEWARD_ALLOWED_KEY_ENVS": "MY_KEY"},
                                  [("secret", "clearance.evaluator.endpoint.api_key_env")]),
    "plain-http-remote": (_evaluator("http://203.0.113.5:8080/v1"), {},
                          [("endpoint", "clearance.evaluator.endpoint.base_url")]),
    "plain-http-remote-allowed": (_evaluator("http://203.0.113.5:8080/v1"),
                                  {"MEMSTEWARD_ALLOWED_HTTP_HOSTS": "203.0.113.5"}, []),
    "plain-http-loopback": (_evaluator("http://127.0.0.1:8765/v1"), {}, []),
    "plain-http-localhost": (_evaluator("http://localhost:8765/v1"), {}, []),
    "plain-http-ipv6-loopback": (_evaluator("http://[::1]:8765/v1"), {}, []),
    "credentials-in-url": (_evaluator("https://user:pw@api.example.com/v1"), {},
                           [("endpoint", "clearance.evaluator.endpoint.base_url")]),
    "not-http": (_evaluator("file:///etc/passwd"), {}, [("endpoint", "clearance.evaluator.endpoint.base_url")]),
    "regen-foreign-key-and-http": (_regen("http://evil.example.com/v1", "HOME"), {},
                                   [("endpoint", "repair.regen_endpoint.base_url"),
                                    ("secret", "repair.regen_endpoint.api_key_env")]),
    # an embedding endpoint receives memory text too: the same allow-lists
    "embedder-https-default-key": (_embedder("https://api.example.com/v1"), {}, []),
    "embedder-foreign-key-and-http": (_embedder("http://evil.example.com/v1", "HOME"), {},
                                      [("endpoint", "repair.embedder.endpoint.base_url"),
                                       ("secret", "repair.embedder.endpoint.api_key_env")]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_endpoint_allow_lists(tmp_path: Path, name: str):
    block, env, errors = CASES[name]
    code, findings = _check(_policy(tmp_path, block), env)
    assert sorted(_codes(findings, "error")) == sorted(errors), findings
    assert code == (1 if errors else 0)
    infos = [f for f in findings if f["severity"] == "info" and f["code"] == "endpoint"]
    assert len(infos) == 1 and "sends memory text to" in infos[0]["message"]
    assert "pw@" not in json.dumps(findings)  # credentials in a URL are never shown


def test_an_endpoint_is_shown_by_scheme_host_port_and_path_only():
    from memsteward.policy.endpoints import shown_url

    assert shown_url("https://user:pw@api.example.com:8443/v1?key=s#f") == "https://api.example.com:8443/v1"
    assert shown_url("https://api.example.com/v1") == "https://api.example.com/v1"  # no port: no colon
    long = "https://api.example.com/" + "p" * 400
    assert shown_url(long) == long[:200]  # at most 200 characters
    assert shown_url("http://[::1") == "<invalid URL>"


def test_config_file_sets_the_allow_lists(tmp_path: Path):
    policy = _policy(tmp_path, _evaluator("http://10.1.2.3/v1", "CORP_LLM_TOKEN"))
    config = tmp_path / "config.toml"
    config.write_text('[endpoints]\nallowed_key_envs = ["CORP_*"]\nallowed_http_hosts = ["10.1.2.3"]\n')
    code, findings = _check(policy, {"MEMSTEWARD_CONFIG": str(config)})
    assert code == 0 and not _codes(findings, "error"), findings
    xdg = tmp_path / "xdg"
    (xdg / "memsteward").mkdir(parents=True)
    (xdg / "memsteward" / "config.toml").write_text(config.read_text())
    code, _ = _check(policy, {"XDG_CONFIG_HOME": str(xdg)})
    assert code == 0
    config.write_text("[endpoints]\nallowed_key_envs = 5\n")
    result = CliRunner().invoke(main, ["check", str(policy)], env=_clean_env({"MEMSTEWARD_CONFIG": str(config)}))
    assert result.exit_code == 2 and str(config) in result.output and "Traceback" not in result.output


def test_empty_config_list_allows_none(tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text("[endpoints]\nallowed_key_envs = []\n")
    code, findings = _check(_policy(tmp_path, _evaluator("https://api.example.com/v1")),
                            {"MEMSTEWARD_CONFIG": str(config)})
    assert code == 1 and _codes(findings, "error") == [("secret", "clearance.evaluator.endpoint.api_key_env")]


def test_own_secret_is_never_a_bearer_token(monkeypatch):
    """Even past `check` (the Python API builds a client directly), the audit key is never sent."""
    from memsteward.chat import ChatClient, EndpointError
    from memsteward.policy.model import Endpoint

    monkeypatch.setenv("MEMSTEWARD_AUDIT_KEY", "audit-key-0123456789abcdef")
    ep = Endpoint(base_url="http://127.0.0.1:9/v1", model="m", api_key_env="MEMSTEWARD_AUDIT_KEY")
    with pytest.raises(EndpointError, match="own secrets"):
        ChatClient(ep)


def test_rules_from_environment_reference():
    rules = EndpointRules.from_environment({"MEMSTEWARD_ALLOWED_KEY_ENVS": "A,B_*"})
    assert rules.key_env_allowed("A") and rules.key_env_allowed("B_1")
    assert not rules.key_env_allowed("OPENAI_API_KEY") and not rules.key_env_allowed("a")
    default = EndpointRules.from_environment({})
    assert default.key_env_allowed("OPENAI_API_KEY") and not default.key_env_allowed("MEMSTEWARD_X")
    assert not default.key_env_allowed("PATH")
    assert [is_loopback(h) for h in ("127.0.0.2", "::1", "localhost", "127.example.com", "10.0.0.1")] == \
        [True, True, True, False, False]


def test_clear_and_repair_refuse_a_policy_that_would_exfiltrate(tmp_path: Path):
    env = _clean_env({"AWS_SECRET_ACCESS_KEY": "s3cr3t-value"})
    clear_policy = _policy(tmp_path, _evaluator("https://api.example.com/v1", "AWS_SECRET_ACCESS_KEY"), "c.yaml")
    result = CliRunner().invoke(main, ["clear", "--policy", str(clear_policy), "--case", str(CASE)], env=env)
    assert result.exit_code == 2 and "api_key_env" in result.output and "s3cr3t" not in result.output
    db = tmp_path / "s.db"
    store = Store.open(str(db), create=True)
    store.import_snapshot(Store.open(str(DATA / "repair" / "store.json")).snapshot())
    before = store.dump_state()
    store.close()
    repair_policy = _policy(tmp_path, _regen("http://evil.example.com/v1"), "r.yaml")
    ev = tmp_path / "e.json"
    ev.write_text('{"type": "delete", "roots": ["p1"]}')
    result = CliRunner().invoke(main, ["repair", "--policy", str(repair_policy), "--store", str(db),
                                       "--event", str(ev)], env=env)
    assert result.exit_code == 2 and "plain http://" in result.output
    assert Store.open(str(db)).dump_state() == before


def test_symlink_out_of_the_policy_directory_is_refused(tmp_path: Path):
    outside = tmp_path / "secret.txt"
    outside.write_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n")
    inner = tmp_path / "policies"
    inner.mkdir()
    (inner / "p.yaml").symlink_to(outside)
    result = CliRunner().invoke(main, ["check", str(inner / "p.yaml")], env=_clean_env(None))
    assert result.exit_code == 2 and "symbolic link" in result.output and "root:x" not in result.output
    real = _policy(inner, "", "real.yaml")
    (inner / "alias.yaml").symlink_to(real)  # a link within the directory is fine
    assert CliRunner().invoke(main, ["check", str(inner / "alias.yaml")], env=_clean_env(None)).exit_code == 0


def test_a_file_that_is_not_a_policy_is_never_echoed(tmp_path: Path):
    lines = ["root:x:0:0:root:/root:/bin/bash", "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
             "api_token: hunter2-very-secret"]
    for n, body in enumerate(["\n".join(f"{ln}: 1" for ln in lines), "kinds: {record: {}}\n" +
                              "\n".join(f"'{ln}': 1" for ln in lines)]):
        path = tmp_path / f"n{n}.yaml"
        path.write_text(body + "\n")
        result = CliRunner().invoke(main, ["check", str(path), "--json"], env=_clean_env(None))
        assert result.exit_code in (1, 2), result.output  # 2: not even YAML
        for ln in lines:
            assert ln.split(":")[0] + ":x" not in result.output and "hunter2" not in result.output


BOUNDS = {  # field → a value beyond its documented upper bound
    ("clearance", "permutations"): 100_000_000,
    ("clearance", "trials"): 100_000_000,
    ("clearance", "retrieval_budget"): 1000,
    ("clearance", "adaptive", "max_permutations"): 10**9,
    ("clearance", "call_budget"): 10**12,
    ("clearance", "baselines", "samples"): 10**9,
    ("clearance", "evaluator", "endpoint", "timeout"): 10**6,
    ("clearance", "evaluator", "endpoint", "retries"): 20,
    ("clearance", "evaluator", "endpoint", "concurrency"): 10_000,
}


def _nested(path: tuple, value) -> dict:
    doc = {"version": 1, "kinds": {"record": {}}, "modes": [{"when": {}, "mode": "remove"}],
           "clearance": {"evaluator": {"type": "openai", "endpoint": {"base_url": "https://x.example", "model": "m"}}}}
    target = doc
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value
    return doc


@pytest.mark.parametrize("path", sorted(BOUNDS))
def test_every_work_driver_has_an_upper_bound(tmp_path: Path, path: tuple):
    doc = _nested(path, BOUNDS[path])
    p = tmp_path / "p.yaml"
    p.write_text(json.dumps(doc))
    code, findings = _check(p)
    assert code == 1 and any(f["field"] == ".".join(path) for f in findings if f["severity"] == "error"), findings
    # and the bound is documented in the JSON Schema (`memsteward schema`)
    schema = Policy.model_json_schema(by_alias=True)
    assert str(path[-1]) in json.dumps(schema) and '"maximum"' in json.dumps(schema)


def test_exact_shapley_bounds_k(tmp_path: Path):
    p = tmp_path / "p.yaml"
    p.write_text(json.dumps(_nested(("clearance", "exact"), "always")
                            | {"clearance": {"exact": "always", "retrieval_budget": 64}}))
    code, findings = _check(p)
    assert code == 1 and ("cost", "clearance.exact") in _codes(findings, "error")
    p.write_text(json.dumps(_nested(("clearance", "exact"), "always")
                            | {"clearance": {"exact": "always", "retrieval_budget": 16}}))
    assert _check(p)[0] == 0


def test_many_rules_are_analysed_and_the_limit_is_a_finding(tmp_path: Path):
    from memsteward.policy.analysis import MAX_RULES

    rules = [{"when": {"kind": "record", "event": "delete"}, "mode": "remove"}] * 3 + [{"when": {}, "mode": "remove"}]
    p = tmp_path / "p.yaml"
    p.write_text(json.dumps({"version": 1, "kinds": {"record": {}}, "modes": rules}))
    code, findings = _check(p)
    assert code == 0 and sorted(f["related"]["rule"] for f in findings if f["code"] == "shadowed") == [2, 3]
    p.write_text(json.dumps({"version": 1, "kinds": {"record": {}}, "modes": [{"when": {}, "mode": "remove"}]
                             * (MAX_RULES + 1)}))
    code, findings = _check(p)
    assert code == 1 and [f["code"] for f in findings if f["severity"] == "error"] == ["limit"]



def test_deadline_is_at_most_600_seconds(tmp_path: Path):
    """Issue 25: `deadline: 86400` was allowed, so a trickling regen endpoint held an event (and every
    write) for up to a day per call. The policy, the flag and the client all stop at 600 s."""
    from memsteward.chat import ChatClient
    from memsteward.policy.model import Endpoint

    block = _regen("https://api.example.com/v1").replace("api_key_env: OPENAI_API_KEY}", "api_key_env: OPENAI_API_KEY, deadline: 601}")
    code, findings = _check(_policy(tmp_path, block))
    assert code == 1 and any(f["field"] == "repair.regen_endpoint.deadline" for f in findings), findings
    result = CliRunner().invoke(main, ["clear", "--case", str(CASE), "--deadline", "86400"])
    assert result.exit_code == 2 and "--deadline" in result.output, result.output
    slow = Endpoint(base_url="https://api.example.com/v1", model="m", timeout=300, retries=8)
    assert ChatClient(slow).total == 600 and ChatClient(slow, deadline=5000).total == 600


def _meta_rules(n: int, per_rule: int) -> dict:
    """The worst shape measured for `check` (issue 25): n rules on one kind, each with ``per_rule``
    numeric meta conditions with overlapping ranges (docs/security.md has the times)."""
    import random

    rng = random.Random(0)
    fields = [f"f{j}" for j in range(per_rule)]
    rules = [{"when": {"kind": "cache", "meta": {f: {"gt": rng.randint(0, 5000), "le": rng.randint(5000, 10000)}
                                                 for f in fields}}, "mode": "remove"} for _ in range(n)]
    return {"version": 1, "kinds": {"record": {}, "cache": {"meta": {f: {"min": 0, "max": 10000} for f in fields}}},
            "modes": rules + [{"when": {}, "mode": "remove"}]}


def test_meta_conditions_are_limited_to_what_check_answers(tmp_path: Path):
    """Issue 25: 5,000 rules of 3 meta conditions (within the documented rule limit) kept `check` busy
    for more than 25 minutes. Meta conditions are limited (MAX_META_CONDITIONS): beyond it the policy
    is refused at once with the finding `limit`; the worst shape at the limit is analysed."""
    from memsteward.policy.analysis import MAX_META_CONDITIONS

    p = tmp_path / "p.yaml"
    p.write_text(json.dumps(_meta_rules(1000, 3)))  # the issue had 5,000; 1,000 keeps the test fast
    code, findings = _check(p)
    assert code == 1 and [f["code"] for f in findings if f["severity"] == "error"] == ["limit"]
    p.write_text(json.dumps(_meta_rules(MAX_META_CONDITIONS // 3 + 1, 3)))
    assert [f["code"] for f in _check(p)[1] if f["severity"] == "error"] == ["limit"]
    p.write_text(json.dumps(_meta_rules(MAX_META_CONDITIONS // 30, 30)))  # at the limit: analysed
    code, findings = _check(p)
    assert "limit" not in [f["code"] for f in findings], findings


def _kindless_rules(n: int, kinds: int, seed: int = 0) -> dict:
    """n mode rules that name no kind (each is analysed in every part (kind, arch, event) of the domain)
    over ``kinds`` declared kinds, a quarter of them skills: the worst shape of `check` found for
    issue 25 (5,000 rules over 256 kinds ran for more than 400 s without an answer)."""
    import random

    rng = random.Random(seed)
    roles = ("root", "skill", "replayable", "text")
    kinds_doc = {f"k{i}": {"role": roles[i % 4], **({"architectures": ["neural", "prompt", "chain"]}
                                                     if i % 4 == 1 else {})} for i in range(kinds)}
    rules = []
    for _ in range(n):
        when: dict = {}
        if rng.random() < 0.7:
            when["event"] = rng.sample(["delete", "correct", "migrate"], rng.randint(1, 2))
        if rng.random() < 0.5:
            when["support"] = rng.choice(["sufficient", "insufficient"])
        rules.append({"when": when, "mode": "remove"})
    return {"version": 1, "kinds": kinds_doc, "modes": rules + [{"when": {}, "mode": "remove"}],
            "validation": [{"mode": m, "oracles": [{"oracle": "schema", "schema": {}}]}
                           for m in ("recompute", "regen", "param")]}


def test_part_work_counts_the_rules_of_every_part():
    """``part_work`` (one matrix product) is Σ over the parts of n_p (n_p + 2K), n_p counted rule by rule
    with the analysis' own ``admits`` (a rule of c meta conditions weighs 1 + c); kind lists, arch lists and
    events all narrow a rule's parts."""
    import random

    from memsteward.policy.model import EVENTS
    from memsteward.policy.rulesolver import KIND_WEIGHT, admits, part_work

    rng = random.Random(1)
    doc = _kindless_rules(60, 13)
    for rule in doc["modes"][:40]:
        if rng.random() < 0.5:
            rule["when"]["kind"] = rng.sample(sorted(doc["kinds"]), rng.randint(1, 4))
        if rng.random() < 0.3:
            rule["when"]["arch"] = rng.sample(["neural", "prompt", "chain"], rng.randint(1, 2))
    doc["kinds"]["k0"]["meta"] = {"age": {"min": 0, "max": 100}}
    doc["kinds"]["k0"]["meta"]["size"] = {"min": 0}
    for k, rule in enumerate(doc["modes"][::7]):
        rule["when"]["meta"] = {"age": {"gt": 10}, **({"size": {"le": 5}} if k % 2 else {})}
    policy = Policy.model_validate(doc)
    n = [sum(1 + len(r.when.meta) for r in policy.modes if admits(r.when, (k, a, e)))
         for k in policy.kinds for a in policy.architectures(k) for e in EVENTS]
    want = sum(x * (x + KIND_WEIGHT * len(policy.kinds)) for x in n)
    assert part_work(policy) == want > 0


def test_rule_analysis_work_is_limited_to_what_check_answers(tmp_path: Path, monkeypatch):
    """Issue 25 (every documented limit is one `check` answers within 60 s): 5,000 rules (within
    MAX_RULES) that name no kind, over 256 kinds (within MAX_KINDS), kept `check` busy for more than
    400 s. The rule analysis' work Σ n_p² is limited (MAX_PART_WORK): beyond it the policy is refused at
    once with the finding `limit`, at or below it the analysis runs."""
    from memsteward.policy import analysis
    from memsteward.policy.rulesolver import part_work

    p = tmp_path / "p.yaml"
    small = _kindless_rules(12, 4)
    p.write_text(json.dumps(small))
    work = part_work(Policy.model_validate(small))
    with monkeypatch.context() as m:
        m.setattr(analysis, "MAX_PART_WORK", work - 1)
        assert "limit" in [f["code"] for f in _check(p)[1]]
        m.setattr(analysis, "MAX_PART_WORK", work)
        assert "limit" not in [f["code"] for f in _check(p)[1]]
    p.write_text(json.dumps(_kindless_rules(1000, 256)))
    code, findings = _check(p)
    assert code == 1 and [f["code"] for f in findings if f["severity"] == "error"] == ["limit"], findings


def test_a_config_file_of_64_kib_is_read_and_one_byte_more_is_refused(tmp_path: Path):
    from memsteward.errors import InputError

    config = tmp_path / "config.toml"
    head = '[endpoints]\nallowed_key_envs = ["CORP_*"]\n'
    config.write_text(head + "#" * (64 * 1024 - len(head) - 1) + "\n")
    assert config.stat().st_size == 64 * 1024
    assert EndpointRules.from_environment({"MEMSTEWARD_CONFIG": str(config)}).key_env_allowed("CORP_X")
    config.write_text(head + "#" * (64 * 1024 - len(head)) + "\n")
    with pytest.raises(InputError):
        EndpointRules.from_environment({"MEMSTEWARD_CONFIG": str(config)})
