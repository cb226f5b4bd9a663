"""`mypy --strict` accepts the README's and the docs' Python examples and a small typed user script
(proofs_tests/examples/typed_user.py): the public API is typed as a strict user sees it — the
exports are explicit (static ``__all__``, ``from .x import Y as Y``) and ``py.typed`` ships.

The repository keeps its folder ``engine/`` while the package is ``memsteward``, and an editable
install maps one to the other with an import hook that mypy cannot follow; so the check puts a
folder ``memsteward/`` made of symbolic links on MYPYPATH. Errors inside memsteward's own modules
are not this test's subject (``follow_imports = silent`` for them): only what a user's code sees."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from doc_blocks import ROOT, blocks

CONFIG = """[mypy]
strict = True
warn_unused_configs = False

[mypy-memsteward.*]
follow_imports = silent
"""


def _shim(where: Path) -> Path:
    """``where/memsteward`` → the repository's engine/ entries, with ``specs`` → specs/."""
    pkg = where / "memsteward"
    pkg.mkdir(parents=True)
    for entry in (ROOT / "engine").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    (pkg / "specs").symlink_to(ROOT / "specs")
    return where


def run_mypy(files: list[Path], tmp: Path) -> subprocess.CompletedProcess[str]:
    config = tmp / "mypy.ini"
    config.write_text(CONFIG, encoding="utf-8")
    cache = ROOT / ".venv" / ".mypy_cache_examples"  # kept between runs: a re-run takes seconds
    env = {**os.environ, "MYPYPATH": str(_shim(tmp / "shim"))}
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", str(cache),
                           "--no-error-summary", *map(str, files)], cwd=tmp, env=env, capture_output=True,
                          text=True, timeout=600)


def example_files(tmp: Path) -> dict[str, str]:
    """Each python block as its own module (``ex_<n>.py``) → the README/docs place it came from."""
    names = {}
    for n, block in enumerate(blocks("python")):
        path = tmp / f"ex_{n}.py"
        path.write_text(block.code, encoding="utf-8")
        names[path.name] = block.name
    names["typed_user.py"] = "proofs_tests/examples/typed_user.py"
    (tmp / "typed_user.py").write_text((ROOT / "proofs_tests/examples/typed_user.py").read_text(encoding="utf-8"))
    return names


def test_examples_pass_mypy_strict(tmp_path: Path) -> None:
    names = example_files(tmp_path)
    assert len(names) >= 3  # the README's Python example, the LangGraph one, the user script
    out = run_mypy([tmp_path / n for n in names], tmp_path)
    report = out.stdout + out.stderr
    for short, origin in names.items():
        report = report.replace(short, f"{short} ({origin})")
    assert out.returncode == 0, report
