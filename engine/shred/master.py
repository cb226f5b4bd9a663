"""The master key: 32 bytes that wrap every DEK and the index key of a store (never stored beside them).

Taken, in this order, from ``MEMSTEWARD_MASTER_KEY`` (the key itself, base64 or 64 hex digits), from
the file named by ``MEMSTEWARD_MASTER_KEY_FILE``, or from the store's default key file (``<store>.master``,
created with mode 0600 with a new store). A key file readable or writable by group or others is refused,
as ssh refuses such a private key. The key id (``kid``) is a keyed digest of the key, so a key store
can say "wrong master key" without holding anything that helps recover it.

``MEMSTEWARD_MASTER_KEY`` and ``MEMSTEWARD_MASTER_KEY_FILE`` are memsteward's own secret variables: a
policy can never name them (e.g. as an evaluator's ``api_key_env``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass, field

from ..errors import InputError

MASTER_KEY_ENV = "MEMSTEWARD_MASTER_KEY"
MASTER_KEY_FILE_ENV = "MEMSTEWARD_MASTER_KEY_FILE"
SECRET_ENVS = frozenset({MASTER_KEY_ENV, MASTER_KEY_FILE_ENV})
KEY_BYTES = 32


@dataclass(frozen=True)
class MasterKey:
    """A 256-bit wrapping key and where it came from (``source`` names an env var or a file, never the key)."""

    key: bytes = field(repr=False)
    source: str

    @property
    def kid(self) -> str:
        """A 16-hex-digit key id: HMAC-SHA256(key, "memsteward-master-kid"), truncated."""
        return hmac.new(self.key, b"memsteward-master-kid", hashlib.sha256).hexdigest()[:16]


def parse_key(text: str, source: str) -> MasterKey:
    """32 bytes from 64 hex digits or base64 (standard or URL-safe); InputError otherwise (the text is never echoed)."""
    raw = text.strip()
    key: bytes | None = None
    if len(raw) == 2 * KEY_BYTES:
        try:
            key = bytes.fromhex(raw)
        except ValueError:
            key = None
    if key is None:
        try:
            key = base64.b64decode(raw.replace("-", "+").replace("_", "/") + "=" * (-len(raw) % 4), validate=True)
        except (binascii.Error, ValueError):
            key = None
    if key is None or len(key) != KEY_BYTES:
        raise InputError("the master key must be 32 bytes, as 64 hex digits or base64 (the value is not shown)",
                         file=source, field="master_key")
    return MasterKey(key, source)


def read_key_file(path: str) -> MasterKey:
    """A master key file: must exist, be a regular file of the current user, mode 0600 or stricter."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError("master key file not found (set MEMSTEWARD_MASTER_KEY or MEMSTEWARD_MASTER_KEY_FILE)",
                         file=path, field="master_key") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError("the master key file is not a regular file", file=path, field="master_key")
    if st.st_mode & 0o077:
        raise InputError(f"the master key file is readable or writable by others (mode {stat.S_IMODE(st.st_mode):04o}); "
                         "chmod 600 it", file=path, field="master_key")
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read(1024)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the master key file ({type(exc).__name__})", file=path,
                         field="master_key") from None
    return parse_key(text, path)


def create_key_file(path: str) -> MasterKey:
    """Write a new random master key to ``path`` (mode 0600), atomically: written to a private temporary
    file, then linked into place, which fails if the path exists (another process made it first: its key
    is read instead)."""
    key = secrets.token_bytes(KEY_BYTES)
    tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(base64.b64encode(key).decode("ascii") + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.link(tmp, path)
    except FileExistsError:
        return read_key_file(path)
    finally:
        os.unlink(tmp)
    return MasterKey(key, path)


def default_key_file() -> str:
    """The user's master key file: ``$XDG_CONFIG_HOME/memsteward/master.key`` (``~/.config/…``), its folder 0700."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    folder = os.path.join(base, "memsteward")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return os.path.join(folder, "master.key")


def load_master(default_file: str | None, create: bool = False) -> MasterKey:
    """The master key (see the module docstring); ``create`` makes ``default_file`` when nothing names a key."""
    env = os.environ.get(MASTER_KEY_ENV)
    if env:
        return parse_key(env, MASTER_KEY_ENV)
    named = os.environ.get(MASTER_KEY_FILE_ENV)
    if named:
        return read_key_file(named)
    if default_file is None:
        raise InputError("no master key: set MEMSTEWARD_MASTER_KEY or MEMSTEWARD_MASTER_KEY_FILE",
                         field="master_key")
    if create and not os.path.exists(default_file):
        return create_key_file(default_file)
    return read_key_file(default_file)


def ephemeral() -> MasterKey:
    """A random master key that lives in memory only (an in-memory store's)."""
    return MasterKey(secrets.token_bytes(KEY_BYTES), "<memory>")
