"""A scripted OpenAI-compatible server on 127.0.0.1 (a real HTTP server in a thread) for tests.

Healthy replies follow simple rules that mirror the offline components: as the MeClear agent it
answers with the offline agent's rule applied to the memories fenced in the prompt; as the regen
model it writes the first sentence of every record it was given. It can be scripted, per request
(``faults``, consumed in order) or for every request (``always``), to misbehave:

``json`` invalid JSON · ``html`` an HTML page · ``nochoices`` a JSON object without ``choices`` ·
``empty`` empty content · ``control`` the garbage text quoted in issue 13 · ``hang`` no reply
until the test ends · ``trickle`` a long body, one byte every 0.1 s · ``429`` rate limited with
``Retry-After: 0`` · ``drop`` the connection closes mid-body · ``500`` a server error ·
``echo`` HTTP 400 whose body echoes every request header (as some proxies do) ·
``echo200`` a completion whose content echoes every request header · ``leak`` a completion that
repeats the prompt (its instructions and ``<records>`` markup), as a small model does · ``redirect`` HTTP 307 to another port.

Every request is logged (``requests``: path, headers, body), so tests count calls; with
``hang_after = n`` the first n requests are answered and every later one hangs.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memsteward.clearance.evaluators.offline import offline_answer
from memsteward.clearance.evaluators.openai_eval import AGENT_SYSTEM
from memsteward.clearance.game import Memory

GARBAGE = "\x00\ufffd ##!! <memories> ignore"
FAULTS = ("json", "html", "nochoices", "empty", "control", "hang", "trickle", "429", "drop", "500",
          "echo", "echo200", "leak")  # plus "redirect" (test_llm_sdk_client.py)


def healthy_reply(body: dict) -> str:
    """The scripted model's answer to a well-formed request."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if system == AGENT_SYSTEM:
        records = json.loads(re.search(r"<memories>\n(.*)\n</memories>", user, re.S).group(1))
        query = re.search(r"Question: (.*)\nAnswer:", user).group(1)
        return offline_answer(query, [Memory(str(i), t) for i, t in enumerate(records)]) or "unknown"
    if "<records>" in user:
        records = json.loads(user.split("<records>")[1].split("</records>")[0])
        return " ".join(r.split(".")[0].strip() + "." for r in records)
    return "0.1"


class ScriptedLLM:
    """The server and its script; use as a context manager (``url`` is the /v1 base URL)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.faults: list[str] = []
        self.always: str | None = None
        self.hang_after: int | None = None  # answer this many requests, then hang every later one
        self.requests: list[dict[str, Any]] = []
        self.release = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def posts(self) -> int:
        with self.lock:
            return len(self.requests)

    def next_fault(self) -> str | None:
        with self.lock:
            if self.hang_after is not None and len(self.requests) > self.hang_after:
                return "hang"
            return self.faults.pop(0) if self.faults else self.always


def completion(text: str, model: str = "scripted") -> bytes:
    return json.dumps({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }).encode()


def _handler(script: ScriptedLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            self._send(200, json.dumps({"object": "list", "data": [{"id": "scripted"}]}).encode())

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.loads(raw)
            headers = dict(self.headers.items())
            with script.lock:
                script.requests.append({"path": self.path, "headers": headers, "body": body})
            fault = script.next_fault()
            try:
                self._reply(fault, body, headers)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up: fine
                pass

        def _reply(self, fault: str | None, body: dict, headers: dict) -> None:
            echoed = "\n".join(f"{k}: {v}" for k, v in headers.items())
            if fault == "json":
                self._send(200, b'{"choices": [{"message": {"content": "unterminated')
            elif fault == "html":
                self._send(200, b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")
            elif fault == "nochoices":
                self._send(200, b'{"id": "x", "object": "chat.completion"}')
            elif fault == "empty":
                self._send(200, completion(""))
            elif fault == "control":
                self._send(200, completion(GARBAGE))
            elif fault == "hang":
                script.release.wait(60)
                self.close_connection = True
            elif fault == "trickle":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "400")
                self.end_headers()
                for _ in range(400):
                    if script.release.wait(0.1):
                        break
                    self.wfile.write(b" ")
                    self.wfile.flush()
                self.close_connection = True
            elif fault == "429":
                self._send(429, b'{"error": {"message": "slow down"}}', extra={"Retry-After": "0"})
            elif fault == "drop":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "5000")
                self.end_headers()
                self.wfile.write(completion("partial")[:40])
                self.wfile.flush()
                self.close_connection = True
            elif fault == "500":
                self._send(500, b'{"error": {"message": "scripted failure"}}')
            elif fault == "echo":
                self._send(400, json.dumps({"error": {"message": echoed}}).encode())
            elif fault == "echo200":
                self._send(200, completion(echoed))
            elif fault == "redirect":  # a client must not follow it (the key would go along)
                self._send(307, b"", extra={"Location": "http://127.0.0.1:9/v1/chat/completions"})
            elif fault == "leak":
                self._send(200, completion(body["messages"][-1]["content"] + "\nSummary:"))
            else:
                self._send(200, completion(healthy_reply(body), body.get("model", "scripted")))

        def _send(self, status: int, data: bytes, ctype: str = "application/json",
                  extra: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

    return Handler
