"""The evaluation archive (`clear --archive DIR`, issue 13 item 4), against a scripted server.

A cohort run is SIGKILLed part-way (a real child process); the rerun resumes from the archive and
sends no request the first run had answered (every request is counted by the server); the final
table equals an uninterrupted offline run's (the scripted agent mirrors the offline agent); other
methods and a changed τ re-score with zero calls; `--replay` works with no server at all.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from scripted_llm import ScriptedLLM

from memsteward.archive import Archive, ArchiveError, request_key
from memsteward.clearance.demo import bundled_case_path
from memsteward.cli import main

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "memsteward")


def _cohort(tmp_path: Path) -> str:
    lines = [json.dumps(json.loads(Path(bundled_case_path(n)).read_text()))
             for n in ("direct", "redundant", "joint")]
    path = tmp_path / "cohort.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _policy(tmp_path: Path, url: str | None, name: str = "p.yaml", **clearance) -> str:
    doc = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text())
    if url is not None:
        doc["clearance"]["evaluator"] = {"type": "openai", "endpoint": {
            "base_url": url, "model": "scripted", "concurrency": 1, "timeout": 5, "retries": 0}}
    doc["clearance"].update(clearance)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def _keys(requests: list[dict]) -> list[str]:
    return [request_key(r["body"]["model"], r["body"]["messages"], r["body"]["temperature"],
                        r["body"].get("seed")) for r in requests]


def _table(args: list[str]) -> dict:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_killed_cohort_resumes_without_repeating_a_call(tmp_path):
    cohort, archive = _cohort(tmp_path), str(tmp_path / "archive")
    methods = "meclear,loo"
    with ScriptedLLM() as llm:
        policy = _policy(tmp_path, llm.url)
        args = ["clear", "--cohort", cohort, "--policy", policy, "--methods", methods,
                "--archive", archive, "--json"]
        llm.hang_after = 70  # answer 70 requests, then hold the next one until the kill
        child = subprocess.Popen([CLI, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            for _ in range(1200):
                if llm.posts > 70 or child.poll() is not None:
                    break
                time.sleep(0.05)
            assert llm.posts == 71, child.stderr.read().decode() if child.poll() is not None else llm.posts
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        answered = set(_keys(llm.requests[:70]))
        assert len(answered) == 70
        llm.hang_after = None
        before = llm.posts
        resumed = _table(args)
        again = _keys(llm.requests[before:])
        assert again and not answered & set(again)  # nothing answered before is asked again
        assert len(set(again)) == len(again)
        total = len(answered) + len(again)  # every distinct request of the cohort, asked once
        # other methods, and a changed τ, are re-scored from the archive: no call at all
        posts = llm.posts
        _table(["clear", "--cohort", cohort, "--policy", policy, "--methods", "contextcite,proxyspex",
                "--archive", archive, "--json"])  # K = 5: MeClear evaluated all 2^K coalitions
        strict = _policy(tmp_path, llm.url, "strict.yaml", harm_tolerance=0.2, screen_tolerance=0.1)
        _table(["clear", "--cohort", cohort, "--policy", strict, "--methods", "meclear,loo",
                "--archive", archive, "--json"])
        assert llm.posts == posts
    offline = _table(["clear", "--cohort", cohort, "--policy", _policy(tmp_path, None, "off.yaml"),
                      "--methods", methods, "--json"])
    assert resumed["rows"] == offline["rows"]  # the resumed run is the uninterrupted result
    assert len(list(Path(archive).glob("*/*.json"))) == total
    # a reviewer replays the shipped archive with no endpoint at all (the server is gone)
    replayed = _table(["clear", "--cohort", cohort, "--policy", policy, "--methods", methods,
                       "--archive", archive, "--replay", "--json"])
    assert replayed["rows"] == resumed["rows"]


def test_replay_only_miss_is_a_clear_error(tmp_path):
    archive = tmp_path / "empty"
    archive.mkdir()
    with ScriptedLLM() as llm:
        res = CliRunner().invoke(main, ["clear", "--case", bundled_case_path("direct"), "--policy",
                                        _policy(tmp_path, llm.url), "--archive", str(archive), "--replay"])
        assert llm.posts == 0
    assert res.exit_code == 2 and "replay only" in res.output and "Traceback" not in res.output


def test_archive_entries_are_checked(tmp_path):
    archive = Archive.open(tmp_path / "a")
    key = request_key("m", [{"role": "user", "content": "q"}], 0.0, 1)
    assert key != request_key("m", [{"role": "user", "content": "q"}], 0.0, 2)  # trial seed
    assert key != request_key("m2", [{"role": "user", "content": "q"}], 0.0, 1)  # model
    assert key != request_key("m", [{"role": "user", "content": "q"}], 0.7, 1)  # decoding
    assert archive.get(key) is None
    archive.put(key, {"model": "m"}, "answer")
    assert archive.get(key) == "answer"
    path = tmp_path / "a" / key[:2] / f"{key}.json"
    path.write_text('{"key": "something else", "reply": "x"}')
    with pytest.raises(ArchiveError):
        archive.get(key)
    (tmp_path / "file").write_text("")
    with pytest.raises(ArchiveError):
        Archive.open(tmp_path / "file")
