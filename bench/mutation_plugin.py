"""A pytest plugin for `make mutate`'s coverage run: each test's duration and outcome, as JSON.

Loaded with ``-p bench.mutation_plugin``; the file named by ``MEMSTEWARD_MUTATE_OUTCOMES`` receives
``[{"nodeid", "seconds", "passed"}, …]`` at the end of the session.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

_rows: dict[str, dict[str, Any]] = {}


def pytest_runtest_logreport(report: Any) -> None:
    row = _rows.setdefault(report.nodeid, {"nodeid": report.nodeid, "seconds": 0.0, "passed": True})
    row["seconds"] += report.duration
    if report.failed or report.skipped:
        row["passed"] = False


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    out = os.environ.get("MEMSTEWARD_MUTATE_OUTCOMES")
    if out:
        Path(out).write_text(json.dumps(sorted(_rows.values(), key=lambda r: r["nodeid"])))
