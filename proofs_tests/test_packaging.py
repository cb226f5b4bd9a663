"""The installed package stands on its own: run from a folder that is not the repository, so the
repository's `engine/` and `specs/` folders cannot be picked up from the working directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import importlib.util, memsteward, memsteward.specs.catalog
from memsteward.cli.demo import bundled
from memsteward.clearance.demo import bundled_case_path as case_path
assert importlib.util.find_spec("engine") is None, "a top-level 'engine' package is importable"
assert importlib.util.find_spec("specs") is None, "a top-level 'specs' package is importable"
assert bundled("repair", "store.json").is_file()
assert bundled("policies").is_dir()
from pathlib import Path
assert Path(case_path("redundant")).is_file()
print("ok")
"""


def test_installed_package_outside_the_repository(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_python_dash_m_memsteward(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "memsteward", "--help"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "memsteward" in out.stdout
