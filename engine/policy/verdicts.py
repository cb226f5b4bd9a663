"""Remembered ``memsteward check`` verdicts, so running a policy does not re-prove it each time.

An engine runs only a policy that passes ``memsteward check`` without errors
(:func:`memsteward.policy.loader.load_checked_source`). The verdict is a pure function of

    key = SHA-256(policy as canonical JSON ‖ operator's endpoint allow-lists ‖ the analysis code)

so a clean verdict is remembered as an empty marker file named by the key, and a later run of the
same policy, under the same allow-lists and the same memsteward code, skips the Z3 analysis (and
the Z3 import: ``repair`` and ``clear`` then start without it). Only clean verdicts are
remembered; a policy with errors is analysed, and refused, every time.

The validated policy itself is remembered too, so that running the same policy *file* again
does not parse its YAML (nor import ``yaml``): under

    text key = SHA-256(policy file's text ‖ operator's endpoint allow-lists ‖ the policy code)

``policies/`` holds the policy as its JSON document (``model_dump(mode="json", by_alias=True)``,
the form the store records with each event). An entry is used only when everything checks: the
format line and the key written inside it match, the document validates as a :class:`Policy`, and
that policy's clean verdict is itself remembered under ``checked/``; otherwise the file is loaded
and checked as if nothing were remembered (and the entry rewritten). An entry is written only after
a clean verdict and only when the document validates back to an equal policy, so a remembered
policy is the policy the file's text loads to. Policies with errors are never remembered: their
errors are reported, with the same message and exit code, every time.

Both live in ``$MEMSTEWARD_CACHE_DIR`` (empty: no cache), else ``$XDG_CACHE_HOME/memsteward``
(``~/.cache/memsteward``). That directory is in the operator's trust domain, like the config file
holding the allow-lists: each subdirectory is used only when owned by the current user and not
writable by group or others; anything unusable is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from functools import lru_cache
from pathlib import Path

from .endpoints import EndpointRules
from .model import Policy
from .plugins import manifest, used

CACHE_VAR = "MEMSTEWARD_CACHE_DIR"
_FORMAT = b"memsteward-check-verdict-1\0"
_POLICY_FORMAT = "memsteward-policy-1"
MAX_ENTRY_BYTES = 16 << 20  # a remembered policy document (the policy file itself is ≤ 1 MiB)


@lru_cache(maxsize=1)
def _code_digest() -> bytes:
    """SHA-256 over the policy package's sources (model, loader, encoding, analysis, …): a changed
    analysis never trusts a verdict of the old one."""
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.digest()


def verdict_key(policy: Policy, rules: EndpointRules) -> str:
    """The key of a policy's ``check`` verdict under ``rules`` (hex SHA-256)."""
    h = hashlib.sha256(_FORMAT + _code_digest())
    h.update(policy.model_dump_json().encode("utf-8") + b"\0")
    h.update(json.dumps([list(rules.key_envs), list(rules.http_hosts)]).encode("utf-8"))
    if next(used(policy), None) is not None:  # a plugin installed, removed or upgraded is another verdict
        h.update(b"\0" + json.dumps(manifest(policy), sort_keys=True).encode("utf-8"))
    return h.hexdigest()


def cache_dir(sub: str = "checked") -> Path | None:
    """Where clean verdicts (``checked``) or validated policies (``policies``) are remembered
    (None: not at all)."""
    raw = os.environ.get(CACHE_VAR)
    if raw is not None:
        return Path(raw) / sub if raw else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "memsteward" / sub


def _trusted(d: Path) -> bool:
    try:
        st = d.stat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def passed_before(key: str) -> bool:
    """Whether a clean verdict for ``key`` is remembered in a trusted cache directory."""
    d = cache_dir()
    return d is not None and _trusted(d) and (d / key).is_file()


def remember_passed(key: str) -> None:
    """Remember a clean verdict (best effort: an unwritable cache only costs the next run time)."""
    d = cache_dir()
    if d is None:
        return
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        if _trusted(d):
            (d / key).touch()
    except OSError:
        pass


# --------------------------------------------------------------------------- remembered policies


@lru_cache(maxsize=1)
def _libraries_digest() -> bytes:
    """What else decides what a policy text loads to: memsteward's and Python's versions, pydantic's
    and pydantic-core's, and PyYAML's ``__init__`` (which holds its version; read, not imported)."""
    from importlib.util import find_spec

    import pydantic_core
    from pydantic.version import VERSION

    from .. import __version__

    spec = find_spec("yaml")
    try:
        yaml_init = Path(spec.origin).read_bytes() if spec and spec.origin else b""
    except OSError:
        yaml_init = b""
    parts = [__version__, ".".join(map(str, sys.version_info[:3])), VERSION, pydantic_core.__version__]
    return hashlib.sha256("\0".join(parts).encode() + b"\0" + yaml_init).digest()


def policy_key(text: str, rules: EndpointRules) -> str:
    """The key of a policy file's validated policy under ``rules`` (hex SHA-256 of its text)."""
    h = hashlib.sha256(_POLICY_FORMAT.encode() + b"\0" + _code_digest() + _libraries_digest())
    h.update(json.dumps([list(rules.key_envs), list(rules.http_hosts)]).encode("utf-8") + b"\0")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def remembered_policy(text: str, rules: EndpointRules) -> Policy | None:
    """The policy a file with this ``text`` loads to, if remembered and still valid (else None)."""
    d = cache_dir("policies")
    if d is None or not _trusted(d):
        return None
    key = policy_key(text, rules)
    try:
        raw = _read_entry(d / key)
        entry = json.loads(raw) if len(raw) <= MAX_ENTRY_BYTES else None
        if not (isinstance(entry, dict) and entry.get("format") == _POLICY_FORMAT and entry.get("key") == key):
            return None
        policy = Policy.model_validate(entry.get("policy"))
    except (OSError, ValueError, RecursionError):  # missing, unreadable, not JSON, not a valid policy
        return None
    return policy if passed_before(verdict_key(policy, rules)) else None


def _read_entry(path: Path) -> bytes:
    """The bytes of a regular file (no symbolic link, FIFO or device: OSError), up to one over the limit."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        return fh.read(MAX_ENTRY_BYTES + 1)


def remember_policy(text: str, rules: EndpointRules, policy: Policy) -> None:
    """Remember the policy a file's ``text`` loaded to, after its clean verdict (best effort); not
    when its JSON document would read back to a different policy (e.g. a YAML date in a schema)."""
    d = cache_dir("policies")
    if d is None:
        return
    key = policy_key(text, rules)
    try:
        doc = policy.model_dump(mode="json", by_alias=True)
        if Policy.model_validate(doc) != policy:
            return
        data = json.dumps({"format": _POLICY_FORMAT, "key": key, "policy": doc}, separators=(",", ":")).encode()
    except (ValueError, TypeError, RecursionError):  # ValidationError and serialisation errors included
        return
    if len(data) > MAX_ENTRY_BYTES:
        return
    tmp = d / f".{key}.{os.getpid()}.tmp"
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _trusted(d):
            return
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, d / key)  # atomic: a reader sees the old entry, the new one or none
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass


__all__ = ["CACHE_VAR", "cache_dir", "passed_before", "policy_key", "remember_passed", "remember_policy",
           "remembered_policy", "verdict_key"]
