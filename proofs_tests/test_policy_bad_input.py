"""The bad-input corpus: every malformed or unsafe policy gets one clear line, naming the
file, line and field, with the documented exit code and no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memsteward.cli import main

CORPUS = Path(__file__).parent / "bad_policies"
EXPECTED = json.loads((CORPUS / "expected.json").read_text())


def test_corpus_is_large_enough():
    assert len(EXPECTED) >= 30
    assert sorted(EXPECTED) == sorted(p.name for p in CORPUS.glob("*.yaml"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_policy_reports_file_line_field(name: str):
    case = EXPECTED[name]
    path = str(CORPUS / name)
    result = CliRunner().invoke(main, ["check", path])
    assert result.exit_code == case["exit"], result.output
    assert "Traceback" not in result.output
    errors = [ln for ln in result.output.splitlines() if ": error: " in ln]
    assert errors, result.output
    first = next((ln for ln in errors if case["message"] in ln), None)
    assert first is not None, f"expected {case['message']!r} in:\n{result.output}"
    assert first.startswith(path + ":")
    if case["line"] is not None:
        assert first.startswith(f"{path}:{case['line']}:"), first
    if case["field"]:
        assert f"[{case['field']}]" in first, first


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_policy_json_findings(name: str):
    result = CliRunner().invoke(main, ["check", "--json", str(CORPUS / name)])
    assert result.exit_code == EXPECTED[name]["exit"]
    findings = json.loads(result.stdout)
    assert any(f["severity"] == "error" for f in findings)
    assert all({"file", "line", "col", "message", "field"} <= set(f) for f in findings)


def test_huge_document_is_refused(tmp_path: Path):
    big = tmp_path / "huge.yaml"
    big.write_text("version: 1\nkinds: {record: {}}\ndescription: '" + "x" * (1 << 20) + "'\n")
    result = CliRunner().invoke(main, ["check", str(big)])
    assert result.exit_code == 2
    assert "over the 1048576-byte limit" in result.output


def test_missing_file_is_exit_2(tmp_path: Path):
    result = CliRunner().invoke(main, ["check", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "file not found" in result.output


def test_real_process_prints_one_line_and_no_traceback():
    """Through a real `memsteward` process: a Python-object tag is refused, nothing executes."""
    proc = subprocess.run([sys.executable, "-m", "engine", "check", str(CORPUS / "tag_python_object_apply.yaml")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.stderr.count("error:") == 1
    assert "pwned" not in proc.stdout


def test_engine_loader_refuses_policy_with_errors():
    """Engines load policies through load_policy: analysis errors are InputErrors (exit 2)."""
    from memsteward.errors import InputError
    from memsteward.policy import load_policy

    with pytest.raises(InputError) as info:
        load_policy(CORPUS / "gap_in_mode_map.yaml")
    assert "not total" in info.value.message and info.value.line == 5


def test_special_files_are_refused_without_reading(tmp_path: Path):
    """/dev/zero would exhaust memory and a FIFO would block: both are refused up front."""
    import os

    fifo = tmp_path / "policy.fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        result = CliRunner().invoke(main, ["check", path])
        assert result.exit_code == 2 and "not a regular file" in result.output
