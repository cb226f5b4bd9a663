"""The README's "Use it from Python" example runs as written, and the public surface is what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import memsteward

README = Path(__file__).resolve().parent.parent / "README.md"


def _example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Use it from Python", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_readme_example_runs():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_example(), "README.md:Use it from Python", "exec"), {})
    lines = out.getvalue().splitlines()
    assert lines == ["Alice likes tea", "['n2', 's1']", "tombstone", "('m3', 'm5') True"]


def test_all_names_exist_and_are_documented():
    for name in memsteward.__all__:
        obj = getattr(memsteward, name)
        if callable(obj):
            assert obj.__doc__, name
    readme = README.read_text(encoding="utf-8")
    for name in ("apply_event", "attest", "check_policy", "clear_context", "load_policy", "open_store",
                 "verify_plan"):
        assert f"`{name}(" in readme, name
