"""Command-line start-up (issue 11): what a command costs before it does its work.

Rows, each against the bare interpreter (``python -c pass``) measured in the same run:

* ``memsteward --help`` (commands listed from a static table, no command module imported);
* ``memsteward repair --dry-run`` of a delete on a tiny store (a record and its summary), with the
  policy remembered (its clean ``check`` verdict and its validated document,
  :mod:`memsteward.policy.verdicts`: the usual case) and with an empty cache (the first run of a
  policy: YAML parsing and the Z3 analysis included);
* the same dry run on the bundled demo store, whose cascade retrains a neural skill (numpy);
* the remembered dry run again without cached bytecode for memsteward's own modules (an editable
  checkout under ``PYTHONDONTWRITEBYTECODE=1``: each run compiles them from source).

Every other row runs with cached bytecode, as an installed package has it (pip compiles it at
install time): ``PYTHONPYCACHEPREFIX`` points into the run's temporary directory (written during
the warm-ups; the checkout is left alone) and ``PYTHONDONTWRITEBYTECODE`` is dropped.

Timed with hyperfine when it is installed (``-N``, warm-up runs), else by repeated runs; the mean
wall time and the mean CPU time (user + system: what the command costs when it has a core to
itself on this shared machine) are reported. The heavy libraries each command imported are read
from a ``-X importtime`` run of the same command.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

from .common import table, write_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAVY = ("z3", "networkx", "ortools", "numpy", "scipy", "hypothesis", "psycopg", "pydantic", "yaml", "ray")


def _tiny_store(tmp: str, exe: str) -> tuple[str, str]:
    store_json = os.path.join(tmp, "store.json")
    with open(store_json, "w") as fh:
        json.dump({"artifacts": [{"id": "r1", "kind": "record", "content": {"text": "Alice likes tea."}},
                                 {"id": "s1", "kind": "summary", "content": "Alice likes tea."}],
                   "edges": [{"src": "r1", "dst": "s1"}]}, fh)
    db = os.path.join(tmp, "tiny.db")
    subprocess.run([exe, "store", "import", store_json, "--store", db], check=True, capture_output=True)
    event = os.path.join(tmp, "event.json")
    with open(event, "w") as fh:
        json.dump({"type": "delete", "roots": ["r1"]}, fh)
    return db, event


def _demo_store(tmp: str, exe: str) -> tuple[str, str]:
    data = os.path.join(ROOT, "engine", "data", "repair")
    db = os.path.join(tmp, "demo.db")
    subprocess.run([exe, "store", "import", os.path.join(data, "store.json"), "--store", db], check=True,
                   capture_output=True)
    return db, os.path.join(data, "event-delete.json")


def _hyperfine(cmds: dict[str, list[str]], runs: int, env: dict[str, str], prepare: dict[str, str]) -> dict:
    out: dict[str, dict[str, float]] = {}
    with tempfile.NamedTemporaryFile(suffix=".json") as res:
        for name, cmd in cmds.items():
            args = ["hyperfine", "-N", "--warmup", "2", "--runs", str(runs), "--export-json", res.name]
            if name in prepare:
                args += ["--prepare", prepare[name]]
            subprocess.run([*args, subprocess.list2cmdline(cmd)], check=True, capture_output=True, env=env)
            r = json.load(open(res.name))["results"][0]
            out[name] = {"wall": r["mean"], "cpu": r["user"] + r["system"], "sd": r["stddev"]}
    return out


def _repeated(cmds: dict[str, list[str]], runs: int, env: dict[str, str], prepare: dict[str, str]) -> dict:
    out: dict[str, dict[str, float]] = {}
    for name, cmd in cmds.items():
        walls, cpus = [], []
        for k in range(runs + 2):
            if name in prepare:
                subprocess.run(prepare[name], shell=True, check=True, env=env)
            before = os.times()
            t = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, env=env)
            wall = time.perf_counter() - t
            after = os.times()
            if k >= 2:  # two warm-up runs, as with hyperfine
                walls.append(wall)
                cpus.append(after.children_user - before.children_user + after.children_system
                            - before.children_system)
        mean = sum(walls) / len(walls)
        sd = (sum((w - mean) ** 2 for w in walls) / max(1, len(walls) - 1)) ** 0.5
        out[name] = {"wall": mean, "cpu": sum(cpus) / len(cpus), "sd": sd}
    return out


def _imported(cmd: Sequence[str], env: dict[str, str]) -> list[str]:
    """The heavy top-level packages a command imports (from ``-X importtime``)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "memsteward", *cmd[1:]], capture_output=True,
                          text=True, env=env)
    names = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in proc.stderr.splitlines()
             if line.startswith("import time:")}
    return sorted(n for n in HEAVY if n in names)


def run(quick: bool = False) -> None:
    exe = os.path.join(os.path.dirname(sys.executable), "memsteward")
    runs = 10 if quick else 30
    policy = os.path.join(ROOT, "policies", "default.yaml")
    with tempfile.TemporaryDirectory(prefix="memsteward-startup-") as tmp:
        cache = os.path.join(tmp, "cache")
        plain = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
        env = {**plain, "MEMSTEWARD_CACHE_DIR": cache, "PYTHONPYCACHEPREFIX": os.path.join(tmp, "pycache")}
        no_bytecode = {**plain, "MEMSTEWARD_CACHE_DIR": cache, "PYTHONDONTWRITEBYTECODE": "1"}
        compiled = any(os.path.isdir(os.path.join(d, "__pycache__"))
                       for d, _, _ in os.walk(os.path.join(ROOT, "engine")))
        tiny, tiny_event = _tiny_store(tmp, exe)
        demo, demo_event = _demo_store(tmp, exe)
        dry = [exe, "repair", "--policy", policy, "--store", tiny, "--event", tiny_event, "--dry-run"]
        cmds = {
            "bare": [sys.executable, "-c", "pass"],
            "help": [exe, "--help"],
            "dry": dry,
            "cold": dry,
            "demo": [exe, "repair", "--policy", policy, "--store", demo, "--event", demo_event, "--dry-run"],
        }
        prepare = {"cold": f"rm -rf {cache}"}
        tool = "hyperfine" if shutil.which("hyperfine") else "repeated runs"
        timings = (_hyperfine if tool == "hyperfine" else _repeated)(cmds, runs, env, prepare)
        timings.update((_hyperfine if tool == "hyperfine" else _repeated)({"source": dry}, runs, no_bytecode, {}))
        subprocess.run(dry, check=True, capture_output=True, env=env)  # a remembered verdict for the warm rows
        imports = {name: _imported(cmd, env) for name, cmd in cmds.items() if name not in ("bare", "cold")}
        shutil.rmtree(cache, ignore_errors=True)
        imports["cold"] = _imported(dry, env)
        imports["source"] = imports["dry"]
    load = os.getloadavg()[0]
    bare = timings["bare"]
    labels = {"help": "`memsteward --help`",
              "dry": "`repair --dry-run`, tiny store (record + summary), policy remembered",
              "cold": "same, first run of the policy (YAML parsed, Z3 `check` runs: cache empty)",
              "demo": "`repair --dry-run`, bundled demo store (retrains a neural skill)",
              "source": "tiny store, policy remembered, memsteward's modules compiled each run"
                        + (" (but `engine/` had `__pycache__`: not measured as labelled)" if compiled else "")}
    rows = [["`python -c pass` (reference)", f"{bare['wall'] * 1e3:.0f} ± {bare['sd'] * 1e3:.0f}",
             f"{bare['cpu'] * 1e3:.0f}", "—", "—", "—"]]
    for name, label in labels.items():
        t = timings[name]
        rows.append([label, f"{t['wall'] * 1e3:.0f} ± {t['sd'] * 1e3:.0f}", f"{t['cpu'] * 1e3:.0f}",
                     f"{(t['wall'] - bare['wall']) * 1e3:.0f}", f"{(t['cpu'] - bare['cpu']) * 1e3:.0f}",
                     ", ".join(imports[name]) or "none"])
    md = (
        "## Command-line start-up (`bench/cli_startup.py`)\n\n"
        "What a command costs before it does its work (issue 11 target: `memsteward --help` and `repair "
        "--dry-run` on a tiny store ≤ 0.3 s over the bare interpreter; ≈ 1.0 s before this work, when "
        "`import memsteward` loaded the whole engine and every command module). Commands are imported on "
        "use (`memsteward.cli.lazy.LazyGroup`), the package's names on first access (PEP 562), Z3 only "
        "for `check`/`verify` or a policy's first run, YAML only on a policy file's first run (the clean "
        "verdict and the validated policy, keyed by the file's SHA-256, are remembered: "
        "`memsteward.policy.verdicts`), OR-Tools only when selecting (numpy only for cuts over "
        "1,024 arcs), networkx only in the reference paths, psycopg only for PostgreSQL stores. What "
        "remains of the remembered dry run is mostly pydantic: importing it and building a first model "
        "(≈ 125 ms CPU, any model: its internals, plugin discovery through importlib.metadata) and the "
        "policy's 26 model classes (≈ 25 ms); then the repair engine's modules and the command (≈ 55 ms), "
        "click (≈ 25 ms) and the run itself (≈ 15 ms; measured in-process, quiet machine). The "
        "executable (`memsteward.cli.run`) collects the garbage once at exit and freezes the rest, "
        "sparing the interpreter's final full collections (≈ 20–35 ms).\n\n"
        f"Timed with {tool}: {runs} runs after 2 warm-ups, mean ± sd; the reference row is the same "
        f"interpreter in the same run. Load average {load:.1f} on {os.cpu_count()} cores (shared machine): "
        "the CPU columns (user + system of the command) are what it costs with a core to itself. "
        "Bytecode is cached (see the module docstring) except in the last row.\n\n"
        + table(["command", "wall ms", "CPU ms", "wall over bare, ms", "CPU over bare, ms",
                 "heavy libraries imported"], rows) + "\n"
    )
    write_section("cli_startup", md)
    print(md)


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
