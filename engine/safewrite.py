"""Outputs never clobber inputs: the write-beside-and-rename contract (issue 25, item 1).

An output file is written to a temporary file in the directory of its real path (symlinks
resolved, so a link keeps pointing at the file it names), with the mode of the file it replaces,
flushed and fsynced, then renamed over the target in one step. Until the rename the target holds
its old bytes, and a failure midway removes the temporary file and leaves the target as it was:
never a truncated file, never a half-written document.

Which paths a command may not write at all (its store, the store's ``-wal``/``-shm``/``-journal``,
key files, its own inputs) is decided before anything is opened, by
:func:`memsteward.cli.paths.check_paths`, with :func:`same_file`.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

#: files SQLite keeps beside a database (a rollback journal, the WAL and its shared-memory index)
#: and the key file a key store may keep beside it: writing any of them destroys the store.
SIDECARS: tuple[str, ...] = ("-wal", "-shm", "-journal", ".keys", ".key", ".keys-wal", ".keys-shm", ".keys-journal")


def same_file(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` name one file: the same real path (symlinks resolved, whether or not
    it exists yet) or the same inode (hard links)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, ValueError):
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def store_files(path: str) -> list[str]:
    """A SQLite store file and every file beside it that belongs to it (:data:`SIDECARS`)."""
    return [path] + [path + s for s in SIDECARS]


def _mode_for(target: str) -> int:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextmanager
def replace_file(path: str, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file beside ``path`` (its real path) and rename it over ``path`` when the block
    ends without an exception; on an exception the temporary file is removed and ``path`` is unchanged.
    The new file gets the old one's permission bits (a new file: 0666 less the umask)."""
    target = os.path.realpath(path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target) or ".", prefix=".memsteward-", suffix=".tmp")
    try:
        os.fchmod(fd, _mode_for(target))
        kwargs = {} if "b" in mode else {"encoding": "utf-8"}
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


__all__ = ["SIDECARS", "replace_file", "same_file", "store_files"]
