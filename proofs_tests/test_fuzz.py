"""The fuzz targets of bench/fuzz.py on a small budget (``make fuzz`` runs them longer).

Each target's property: the reader accepts the input or raises InputError — nothing else; an
accepted event runs to completion. A finding here is a bug to fix and a corpus entry to add.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.fuzz import TARGETS, run_target

EXAMPLES = int(os.environ.get("MEMSTEWARD_FUZZ_EXAMPLES", "8"))


@pytest.mark.parametrize("name", TARGETS)
def test_fuzz_target(tmp_path: Path, name: str):
    result = run_target(name, EXAMPLES, tmp_path)
    assert result["finding"] is None, result["finding"]
    assert result["executions"] >= EXAMPLES  # the target really ran


def test_a_broken_reader_is_a_finding(tmp_path: Path, monkeypatch):
    """The harness can fail: a reader that raises something other than InputError is reported."""
    import memsteward.clearance.case as case

    def broken(path):
        raise KeyError("bug")

    monkeypatch.setattr(case, "load_case", broken)
    result = run_target("case", 3, tmp_path)
    assert result["finding"] is not None and "KeyError" in result["finding"]
