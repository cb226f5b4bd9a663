"""The fenced code blocks of the README and of docs/ (the examples the docs promise run as written).

A block is taken from every ``` fence whose info string is ``python`` or ``sh``; a fence written
``python skip`` / ``sh skip`` is shown to the reader but not run (say why next to it)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.S | re.M)


class Block(NamedTuple):
    file: str  # relative to the repository
    line: int
    lang: str
    code: str

    @property
    def name(self) -> str:
        return f"{self.file}:{self.line}"


def doc_files() -> list[Path]:
    docs = sorted((ROOT / "docs").rglob("*.md")) if (ROOT / "docs").is_dir() else []
    return [ROOT / "README.md", *docs]


def blocks(lang: str) -> list[Block]:
    """Every runnable ``lang`` block of the README and docs/, in reading order."""
    found = []
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if m.group(1) == lang and "skip" not in m.group(2).split():
                line = text.count("\n", 0, m.start()) + 1
                found.append(Block(str(path.relative_to(ROOT)), line, lang, m.group(3)))
    return found
