"""The LLM ``regen`` operator against a local OpenAI-compatible fake server (no network):
prompts carry only post-event support (never the deleted record), transient errors are retried,
and a failing endpoint fails the candidate, which stays withdrawn."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from memsteward.policy.loader import load_policy_source
from memsteward.policy.model import Endpoint, RepairSpec
from memsteward.repair.events import parse_event
from memsteward.repair.execute import run_event
from memsteward.store import Store

DELETED = "allergic to peanuts"


class FakeLLM(BaseHTTPRequestHandler):
    requests: list[dict] = []
    fail_first = 0

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeLLM.requests.append(body)
        if FakeLLM.fail_first > 0:
            FakeLLM.fail_first -= 1
            self.send_response(503)
            self.end_headers()
            return
        user = body["messages"][-1]["content"]
        records = json.loads(user.split("<records>")[1].split("</records>")[0])
        text = "LLM: " + " ".join(r.split(".")[0] + "." for r in records)
        out = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
               "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": text}}],
               "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    httpd = HTTPServer(("127.0.0.1", 0), FakeLLM)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    FakeLLM.requests = []
    FakeLLM.fail_first = 0
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def _policy(base_url: str, retries: int = 2):
    pol = load_policy_source("policies/default.yaml").policy
    ep = Endpoint(base_url=base_url, model="fake", retries=retries, timeout=5)
    return pol.model_copy(update={"repair": RepairSpec(regen_endpoint=ep)})


def test_llm_regen_uses_retained_support_only(server):
    store = Store.open("engine/data/repair/store.json")
    plan = run_event(store, _policy(server), parse_event({"type": "delete", "roots": ["p1"]}, store.snapshot()))
    ops = {c.id: c.operator for c in plan.candidates}
    assert ops["sum-profile"] == "regen:llm" and ops["prompt-chef"] == "regen:llm"
    assert "sum-profile" in plan.republished
    assert store.get("sum-profile").content.startswith("LLM: ")
    assert FakeLLM.requests and all(DELETED not in json.dumps(r) for r in FakeLLM.requests)
    assert all(r["temperature"] == 0.0 and r["seed"] == 0 for r in FakeLLM.requests)


def test_transient_errors_are_retried(server):
    FakeLLM.fail_first = 2
    store = Store.open("engine/data/repair/store.json")
    plan = run_event(store, _policy(server, retries=2),
                     parse_event({"type": "delete", "roots": ["p1"]}, store.snapshot()))
    assert "sum-profile" in plan.republished


def test_failing_endpoint_keeps_candidate_withdrawn(server):
    FakeLLM.fail_first = 10**6
    store = Store.open("engine/data/repair/store.json")
    plan = run_event(store, _policy(server, retries=0),
                     parse_event({"type": "delete", "roots": ["p1"]}, store.snapshot()))
    status = {s.id: s.status for s in plan.executed}
    assert status["sum-profile"] == "failed" and status["prompt-chef"] == "failed"
    assert "neural-prefs" in plan.republished  # other operators proceed
    served = {a.id for a in store.serve()}
    assert not ({"sum-profile", "prompt-chef", "sum-digest"} & served)
