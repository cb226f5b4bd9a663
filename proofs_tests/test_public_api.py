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


def _static_exports(module: object) -> tuple[list[str], set[str]]:
    """(``__all__`` as written, the names re-exported as ``X as X`` under TYPE_CHECKING) of a package."""
    import ast

    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))  # type: ignore[attr-defined]
    written: list[str] = []
    reexported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            assert isinstance(node.value, ast.List), "__all__ must be a literal list (type checkers read it)"
            written = [ast.literal_eval(e) for e in node.value.elts]
        if isinstance(node, ast.ImportFrom):
            reexported |= {a.name for a in node.names if a.asname == a.name}
    return written, reexported


def test_exports_are_static_and_explicit():
    import memsteward.policy

    for package, extra in ((memsteward, {"__version__"}), (memsteward.policy, set())):
        written, reexported = _static_exports(package)
        assert written == sorted(written) and len(set(written)) == len(written)
        assert set(written) == set(package._EXPORTS) | extra  # the lazy table and __all__ agree
        assert reexported == set(package._EXPORTS)  # each one re-exported explicitly for type checkers
        for name in package._EXPORTS:
            assert getattr(package, name) is not None
