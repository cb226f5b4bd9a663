"""bench/meclear_llm.py (``make bench-llm``) against a scripted OpenAI-compatible server on 127.0.0.1.

The real-model run takes an hour; this checks the section's plumbing on a small conversation the
test writes itself: every method is scored, the paired MeClear − baseline rows are there, the
evaluator is named, a second run is served entirely from the archive (no call reaches the server,
the same tables), and ``make bench`` without an endpoint keeps a section already written."""

from __future__ import annotations

import json
import re

import pytest
from scripted_llm import ScriptedLLM
from test_clear_locomo import conversation

import bench.meclear_llm as llm_bench


@pytest.fixture()
def sections(tmp_path, monkeypatch):
    written: dict[str, str] = {}
    monkeypatch.setattr(llm_bench, "SECTIONS", tmp_path)

    def write(name: str, md: str) -> None:
        written[name] = md
        (tmp_path / f"{name}.md").write_text(md, encoding="utf-8")

    monkeypatch.setattr(llm_bench, "write_section", write)
    return written


def tables(md: str) -> str:
    """The section without its wall-clock and call-count lines (which differ between runs)."""
    return "\n".join(line for line in md.splitlines()
                     if not line.startswith(("Wall time", "Built in")) and "Endpoint calls" not in line)


def test_llm_bench_scores_every_method_and_replays_from_its_archive(tmp_path, sections):
    data = tmp_path / "locomo"
    data.mkdir()
    (data / "conv-99.json").write_text(json.dumps(conversation()))
    with ScriptedLLM() as server:
        env = {"MEMSTEWARD_OPENAI_BASE_URL": server.url, "MEMSTEWARD_OPENAI_MODEL": "scripted",
               "MEMSTEWARD_BENCH_LLM_ARCHIVE": str(tmp_path / "archive"),
               "MEMSTEWARD_BENCH_LLM_CASES": "3", "MEMSTEWARD_BENCH_LLM_DONORS": "2", "MEMSTEWARD_BENCH_LLM_MODEL_FILE": "scripted.gguf"}
        first = llm_bench.run(quick=True, data=data, env=env)
        paid = server.posts
        second = llm_bench.run(quick=True, data=data, env=env)
        assert server.posts == paid, "a re-run must be served from the archive"
    assert paid > 0
    assert "**Evaluator: `scripted.gguf`**" in first
    for ref in llm_bench.BASELINES:
        assert re.search(rf"^\| MeClear exact − {ref} \|", first, re.M), ref
    assert "new endpoint replies this run" in first and "0 new endpoint replies" in second
    assert "coalitions got the same verdict under both" in first
    assert tables(first) == tables(second)


def test_llm_bench_without_endpoint_keeps_the_written_section(tmp_path, sections):
    (tmp_path / "meclear_llm.md").write_text("## real-model run\n", encoding="utf-8")
    assert llm_bench.run(quick=True, env={}) == "## real-model run\n"
    (tmp_path / "meclear_llm.md").unlink()
    assert "Not run yet" in llm_bench.run(quick=True, env={})
