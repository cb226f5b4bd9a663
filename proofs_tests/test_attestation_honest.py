"""Honest attestations (issue 25, item 4): a check that did not look says `unverified`, never `pass`.

On PostgreSQL, `physical-erasure` passed in 22 of 22 erasure scenarios while the text was readable by
SELECT in 17: no client reads the server's files, so the byte-level claim is `unverified`. The
rendered report shows it as unverified and the overall line names it; the JSON lists it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main

DATA = Path(__file__).resolve().parent.parent / "engine" / "data" / "repair"
POLICY = str(Path(__file__).resolve().parent.parent / "policies" / "default.yaml")


def test_postgres_physical_erasure_is_unverified(store_at):
    if store_at.backend != "postgres":
        pytest.skip("the PostgreSQL claim (SQLite's scan looks: test_sqlite_scan_that_looked_passes)")
    url = store_at("honest")
    run = CliRunner()
    assert run.invoke(main, ["store", "import", "--store", url, str(DATA / "store.json")]).exit_code == 0
    r = run.invoke(main, ["repair", "--policy", POLICY, "--store", url, "--event", str(DATA / "event-delete.json")])
    assert r.exit_code == 0, r.output
    att = json.loads(run.invoke(main, ["audit", "--store", url, "--json"]).stdout)
    check = {c["check"]: c for c in att["checks"]}["physical-erasure"]
    assert check["status"] == "unverified" and "physical-erasure" in att["unverified"], check
    md = run.invoke(main, ["audit", "--store", url]).output
    line = next(ln for ln in md.splitlines() if ln.startswith("| physical\\-erasure"))
    assert "unverified" in line and "| pass |" not in line
    assert "unverified: physical\\-erasure" in md


def test_sqlite_scan_that_looked_passes(tmp_path: Path):
    db = str(tmp_path / "s.db")
    run = CliRunner()
    assert run.invoke(main, ["store", "import", "--store", db, str(DATA / "store.json")]).exit_code == 0
    assert run.invoke(main, ["repair", "--policy", POLICY, "--store", db, "--event",
                             str(DATA / "event-delete.json")]).exit_code == 0
    att = json.loads(run.invoke(main, ["audit", "--store", db, "--json"]).stdout)
    check = {c["check"]: c for c in att["checks"]}["physical-erasure"]
    assert check["status"] == "pass" and att["unverified"] == []
