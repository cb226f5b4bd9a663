"""Remembered ``memsteward check`` verdicts, so running a policy does not re-prove it each time.

An engine runs only a policy that passes ``memsteward check`` without errors
(:func:`memsteward.policy.loader.load_checked_source`). The verdict is a pure function of

    key = SHA-256(policy as canonical JSON ‖ operator's endpoint allow-lists ‖ the analysis code)

so a clean verdict is remembered as an empty marker file named by the key, and a later run of the
same policy, under the same allow-lists and the same memsteward code, skips the Z3 analysis (and
the Z3 import: ``repair`` and ``clear`` then start without it). Only clean verdicts are
remembered; a policy with errors is analysed, and refused, every time.

The markers live in ``$MEMSTEWARD_CACHE_DIR`` (empty: no cache), else
``$XDG_CACHE_HOME/memsteward`` (``~/.cache/memsteward``), under ``checked/``. That directory is
in the operator's trust domain, like the config file holding the allow-lists: it is used only when
owned by the current user and not writable by group or others; anything unusable is ignored (the
policy is then analysed as if nothing were remembered).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from .endpoints import EndpointRules
from .model import Policy

CACHE_VAR = "MEMSTEWARD_CACHE_DIR"
_FORMAT = b"memsteward-check-verdict-1\0"


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
    return h.hexdigest()


def cache_dir() -> Path | None:
    """Where clean verdicts are remembered (None: not at all)."""
    raw = os.environ.get(CACHE_VAR)
    if raw is not None:
        return Path(raw) / "checked" if raw else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "memsteward" / "checked"


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


__all__ = ["CACHE_VAR", "cache_dir", "passed_before", "remember_passed", "verdict_key"]
