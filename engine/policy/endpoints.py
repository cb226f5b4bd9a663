"""Where a policy may send memory text, and which secret goes with it.

A policy is untrusted input: it names an endpoint (``base_url``) and the environment variable
holding its API key (``api_key_env``), and an LLM call sends both memory text and that variable's
value as a Bearer token. So the operator of the tool — never the policy — decides:

* which environment variables a policy may name as ``api_key_env``: the list in
  ``MEMSTEWARD_ALLOWED_KEY_ENVS`` (comma-separated names or shell patterns), else
  ``allowed_key_envs`` in the user config file, else :data:`DEFAULT_KEY_ENVS` — exact names
  (``OPENAI_API_KEY``, ``MEMSTEWARD_LLM_API_KEY``), never a prefix. An empty list allows none.
  memsteward's own secrets (:func:`own_secret`: the audit key, the store DSN, the master and index
  keys, key files, libpq's password variables) are refused under any configuration, so a
  policy can never have one sent as a Bearer token;
* which hosts may be reached over plain ``http://``: loopback always; others only when listed in
  ``MEMSTEWARD_ALLOWED_HTTP_HOSTS`` or ``allowed_http_hosts`` in the config file.

The config file is ``$MEMSTEWARD_CONFIG``, else ``$XDG_CONFIG_HOME/memsteward/config.toml``
(``~/.config/...``), a TOML table ``[endpoints]`` with those two lists. ``memsteward check``
reports every endpoint as an ``info`` finding and violations as errors; ``clear`` and
``repair`` refuse a policy with errors.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import InputError, printable
from ..jsonio import read_text
from .model import Endpoint, Policy

KEY_ENVS_VAR = "MEMSTEWARD_ALLOWED_KEY_ENVS"
HTTP_HOSTS_VAR = "MEMSTEWARD_ALLOWED_HTTP_HOSTS"
CONFIG_VAR = "MEMSTEWARD_CONFIG"
DEFAULT_KEY_ENVS: tuple[str, ...] = ("OPENAI_API_KEY", "MEMSTEWARD_LLM_API_KEY")
#: memsteward's own secrets and settings: never an ``api_key_env``, whatever the allow-list says
OWN_SECRET_PATTERNS: tuple[str, ...] = (
    "MEMSTEWARD_AUDIT_KEY*", "MEMSTEWARD_*DSN*", "MEMSTEWARD_MASTER_KEY*", "MEMSTEWARD_*INDEX_KEY*",
    "MEMSTEWARD_*KEY_FILE*", "MEMSTEWARD_*KEYSTORE*", "MEMSTEWARD_ALLOWED_*", "MEMSTEWARD_CONFIG",
    "PGPASSWORD", "PGPASSFILE", "PGSERVICEFILE", "DATABASE_URL")


def own_secret(name: str) -> bool:
    """True when ``name`` is one of memsteward's own secret (or security-setting) variables."""
    return any(fnmatch.fnmatchcase(name.upper(), p) for p in OWN_SECRET_PATTERNS)
MAX_CONFIG_BYTES = 64 << 10


@dataclass(frozen=True)
class EndpointRules:
    """The operator's allow-lists (see the module docstring for where they come from)."""

    key_envs: tuple[str, ...] = DEFAULT_KEY_ENVS
    http_hosts: tuple[str, ...] = ()
    source: str = "default"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> EndpointRules:
        env = os.environ if environ is None else environ
        config = _config(env)
        key_envs, key_src = _setting(env, KEY_ENVS_VAR, config, "allowed_key_envs", DEFAULT_KEY_ENVS)
        hosts, host_src = _setting(env, HTTP_HOSTS_VAR, config, "allowed_http_hosts", ())
        return cls(key_envs, tuple(h.lower() for h in hosts), f"{key_src}; {host_src}")

    def key_env_allowed(self, name: str) -> bool:
        if own_secret(name):
            return False
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.key_envs)

    def url_problem(self, url: str) -> str | None:
        """Why this base URL may not be used (None: it may)."""
        try:
            parts = urlsplit(url)
            host = parts.hostname or ""
        except ValueError:
            return "base_url is not a valid URL"
        if parts.scheme not in ("http", "https") or not host:
            return "base_url must be an http:// or https:// URL with a host"
        if parts.username is not None or parts.password is not None:
            return "base_url must not carry credentials (user:password@); name the key with api_key_env"
        if parts.scheme == "http" and not is_loopback(host) and host.lower() not in self.http_hosts:
            return (f"plain http:// to a non-loopback host sends memory text and the API key unencrypted; "
                    f"use https://, or allow the host in {HTTP_HOSTS_VAR} or the memsteward config file")
        return None


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def shown_url(url: str) -> str:
    """The URL as shown to a user: scheme, host, port and path only (no credentials or query)."""
    try:
        p = urlsplit(url)
        host = p.hostname or ""
        port = f":{p.port}" if p.port else ""
        return printable(f"{p.scheme}://{host}{port}{p.path}")[:200]
    except ValueError:
        return "<invalid URL>"


def endpoints(policy: Policy) -> Iterator[tuple[tuple, Endpoint]]:
    """(location, endpoint) of every endpoint a policy declares."""
    ev = policy.clearance.evaluator
    if ev.type == "openai" and ev.endpoint is not None:
        yield ("clearance", "evaluator", "endpoint"), ev.endpoint
    if policy.repair.regen_endpoint is not None:
        yield ("repair", "regen_endpoint"), policy.repair.regen_endpoint
    embedder = policy.repair.embedder
    if embedder.type == "openai" and embedder.endpoint is not None:
        yield ("repair", "embedder", "endpoint"), embedder.endpoint


def _split(value: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in value.split(",") if x.strip())


def _config_path(env: Mapping[str, str]) -> Path | None:
    if env.get(CONFIG_VAR):
        return Path(env[CONFIG_VAR])
    base = env.get("XDG_CONFIG_HOME") or (str(Path(env["HOME"]) / ".config") if env.get("HOME") else "")
    return Path(base) / "memsteward" / "config.toml" if base else None


def _config(env: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    path = _config_path(env)
    if path is None:
        return "", {}
    if not env.get(CONFIG_VAR):  # the default location is optional (absent or unreachable: defaults)
        try:
            if not path.is_file():
                return "", {}
        except OSError:
            return "", {}
    text = read_text(path, MAX_CONFIG_BYTES, "memsteward config file (TOML)")
    import tomllib  # only when there is a config file

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", file=str(path)) from None
    table = doc.get("endpoints", {})
    if not isinstance(table, dict):
        raise InputError("'endpoints' must be a table", file=str(path), field="endpoints")
    for key, value in table.items():
        if key not in ("allowed_key_envs", "allowed_http_hosts"):
            raise InputError("unknown setting (expected allowed_key_envs, allowed_http_hosts)", file=str(path),
                             field=f"endpoints.{key}" if key.isidentifier() else "endpoints")
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise InputError("must be a list of strings", file=str(path), field=f"endpoints.{key}")
    return str(path), table


def _setting(env: Mapping[str, str], var: str, config: tuple[str, dict[str, Any]], key: str,
             default: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    if var in env:
        return _split(env[var]), f"{key} from ${var}"
    path, table = config
    if key in table:
        return tuple(table[key]), f"{key} from {path}"
    return default, f"{key}: default"
