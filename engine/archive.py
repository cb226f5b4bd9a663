"""A persistent, content-addressed archive of model replies (``--archive DIR``).

Every chat call memsteward makes is a pure function of its request *as far as the archive is
concerned*: the reply recorded for a request is the reply. The key of a call is

    SHA-256 of the canonical JSON (sorted keys, UTF-8, no spaces) of
    {"format": 1, "model": <endpoint model>, "messages": <the exact messages sent>,
     "temperature": <decoding temperature>, "seed": <trial seed, or null>}

The messages hold the prompt template (system prompt and framing, so a template change is a new
key), the query and the fenced memory texts of the coalition, in context order; the seed is the
policy's seed + trial index. The endpoint URL and the key are not part of it: the same model
behind another URL replays the same archive.

Each reply is one file ``DIR/<key[:2]>/<key>.json`` holding the request and the reply text,
written to a temporary file and renamed into place, so a run killed at any point leaves only
whole entries, and a resumed run finds every reply it already paid for. ``replay_only`` makes a
miss an error instead of a call: a reviewer replays a shipped archive with no endpoint at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from threading import Lock
from typing import Any

FORMAT = 1
MAX_ENTRY = 4 << 20  # bytes: a larger file is not an archive entry


class ArchiveError(Exception):
    """The archive cannot be used (unreadable directory, corrupt entry, a miss in replay-only)."""


def request_key(model: str, messages: list[dict[str, str]], temperature: float, seed: int | None) -> str:
    """The content address of one chat call (see the module docstring)."""
    doc = {"format": FORMAT, "model": model, "messages": messages, "temperature": temperature, "seed": seed}
    canon = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


@dataclass
class Archive:
    """A directory of archived replies; ``hits`` / ``stored`` count this process's use."""

    root: Path
    replay_only: bool = False
    hits: int = 0
    stored: int = 0
    _lock: Lock = field(default_factory=Lock, repr=False)

    @classmethod
    def open(cls, path: str | os.PathLike[str], replay_only: bool = False) -> Archive:
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise ArchiveError(f"{root} is not a directory")
        if replay_only and not root.is_dir():
            raise ArchiveError(f"{root} does not exist (nothing to replay)")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ArchiveError(f"cannot create {root} ({exc.strerror})") from None
        return cls(root, replay_only)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        """The archived reply for ``key`` (None: not archived)."""
        path = self._path(key)
        try:
            if path.stat().st_size > MAX_ENTRY:
                raise ArchiveError(f"{path} is larger than {MAX_ENTRY} bytes")
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ArchiveError(f"{path} is not a readable archive entry ({type(exc).__name__})") from None
        if not isinstance(doc, dict) or doc.get("key") != key or not isinstance(doc.get("reply"), str):
            raise ArchiveError(f"{path} is not an archive entry for its key")
        with self._lock:
            self.hits += 1
        return doc["reply"]

    def put(self, key: str, request: dict[str, Any], reply: str) -> None:
        """Store one reply atomically (write a temporary file, then rename it into place)."""
        path = self._path(key)
        path.parent.mkdir(exist_ok=True)
        data = json.dumps({"key": key, "request": request, "reply": reply}, ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        with self._lock:
            self.stored += 1
