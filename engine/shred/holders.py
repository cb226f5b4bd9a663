"""Which process holds a pooled data key: the holder tag a pooled key's id begins with.

A :class:`~.vault.Vault` makes its pooled keys under ids ``<host>.<pid>.<start>.<random>``: ``host``
names this machine *and* its pid namespace (a digest of the host name, the boot id and the pid
namespace's inode, so two containers never read each other's pids), ``pid`` (hex) and ``start`` (the
kernel's start time of the process, ``0`` when unknown) name the process that made the key. A pooled
key that no version names and whose holder is gone sealed nothing that can still be stored: it is an
orphan, and :meth:`memsteward.store.sealing.Sealing.collect_pool_keys` destroys it.

:func:`holder_gone` answers only for this machine's processes, and errs towards "alive": a key of
another host (or pid namespace), of this process, of a live pid, or in the format of releases before
holder tags (32 hex digits, no dots) is never taken for an orphan.
"""

from __future__ import annotations

import functools
import hashlib
import os
import socket

__all__ = ["holder_gone", "holder_tag", "process_start"]


def process_start(pid: int) -> str | None:
    """The kernel's start time of a process (Linux /proc), so a reused pid is not mistaken for it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


@functools.lru_cache(maxsize=1)
def _host() -> str:
    parts = [socket.gethostname()]
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            parts.append(fh.read().strip())
    except OSError:
        parts.append("")
    try:
        parts.append(os.readlink("/proc/self/ns/pid"))  # "pid:[<inode>]"
    except OSError:
        parts.append("")
    return hashlib.blake2b("\0".join(parts).encode("utf-8", "surrogatepass"), digest_size=5).hexdigest()


def holder_tag() -> str:
    """This process's holder tag, ``<host>.<pid>.<start>`` (computed per call: a forked child has its own)."""
    pid = os.getpid()
    return f"{_host()}.{pid:x}.{process_start(pid) or 0}"


def holder_gone(key_id: str) -> bool:
    """Whether the process that made pooled key ``key_id`` has ended (see the module docstring)."""
    parts = key_id.split(".")
    if len(parts) != 4 or parts[0] != _host():
        return False  # an older key id, or another machine's or pid namespace's: kept
    try:
        pid = int(parts[1], 16)
    except ValueError:
        return False
    if pid == os.getpid() or pid <= 0:
        return False  # this process: one of its handles may hold it, or be sealing under it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, someone else's
    return parts[2] != "0" and process_start(pid) not in (None, parts[2])  # alive unless the pid was reused
