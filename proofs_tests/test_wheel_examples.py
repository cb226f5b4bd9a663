"""The wheel, installed into a fresh virtual environment in a temporary folder outside the
repository, runs the demo, the demo's hints and every `sh` and `python` block of the README and of
docs/ (blocks marked `skip` need a clone, a server or the network).

Kept fast: the wheel is built once per session with pip's cache (``pip wheel --no-deps``) and
installed with ``--no-deps``; the new environment sees the test environment's dependencies through
a ``.pth`` line naming its site-packages — a plain path, so the editable install's import hook there
is not activated and ``memsteward`` comes from the wheel (checked). The bundled data is exported
once and copied into each page's folder; the Python blocks (and the typed user script) run in one
child process of the wheel's interpreter, each in its own fresh folder, namespace and environment
(its outcome reported per block); the module has one fresh verdict cache, so a run neither reads nor
fills the user's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from doc_blocks import ROOT, Block, blocks

pytestmark = pytest.mark.slow


PY = blocks("python")
TYPED_USER = ROOT / "proofs_tests" / "examples" / "typed_user.py"
RUNNER = """
import builtins, json, os, sys, traceback
jobs_file, out_file = sys.argv[1:3]
jobs = json.load(open(jobs_file, encoding="utf-8"))
out, environ = {}, dict(os.environ)
for job in jobs:
    os.chdir(job["cwd"])
    sys.argv = ["-c"]
    try:
        exec(compile(job["code"], job["name"], "exec"), {"__name__": "__main__", "__builtins__": builtins})
        out[job["name"]] = None
    except SystemExit as exc:
        out[job["name"]] = None if exc.code in (None, 0) else f"SystemExit({exc.code!r})"
    except BaseException:
        out[job["name"]] = traceback.format_exc()[-3000:]
    os.environ.clear()
    os.environ.update(environ)
    sys.stdout.flush()
json.dump(out, open(out_file, "w", encoding="utf-8"))
"""


def _sh(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A fresh venv with only the wheel installed; returns the environment to run it with."""
    where = tmp_path_factory.mktemp("wheel")
    built = _sh([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(where / "dist"), str(ROOT)])
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (where / "dist").glob("memsteward-*.whl")
    env_dir = where / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    bindir = env_dir / "bin"
    py = bindir / "python"
    site = _sh([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    Path(site, "_memsteward_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    inst = _sh([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "--quiet",
                str(wheel)])
    assert inst.returncode == 0, inst.stderr[-3000:]
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(env_dir),
           "MEMSTEWARD_CACHE_DIR": str(where / "cache")}
    env.pop("PYTHONPATH", None)
    where_from = _sh([str(py), "-c", "import memsteward; print(memsteward.__file__)"], env=env, cwd=where)
    assert where_from.stdout.startswith(site), where_from.stdout + where_from.stderr  # the wheel, not the clone
    return env


@pytest.fixture(scope="module")
def demo_data(wheel_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled data, exported once by the wheel's CLI (each page gets a copy)."""
    where = tmp_path_factory.mktemp("demo")
    out = _sh(["memsteward", "demo", "--export", "demo-data"], env=wheel_env, cwd=where)
    assert out.returncode == 0, out.stderr[-3000:]
    return where / "demo-data"


@pytest.fixture(scope="module")
def python_outcomes(wheel_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | None]:
    """Every Python block and the typed user script, run by one child process of the wheel's
    interpreter: block name → None (it ran) or what went wrong."""
    where = tmp_path_factory.mktemp("python")
    jobs = [{"name": b.name, "code": b.code, "cwd": str(_folder(where, b.name))} for b in PY]
    jobs.append({"name": "typed_user.py", "code": TYPED_USER.read_text(encoding="utf-8"),
                 "cwd": str(_folder(where, "typed_user"))})
    (where / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    run = _sh(["python", "-c", RUNNER, str(where / "jobs.json"), str(where / "out.json")], env=wheel_env, cwd=where)
    assert run.returncode == 0, run.stderr[-3000:]
    outcomes: dict[str, str | None] = json.loads((where / "out.json").read_text(encoding="utf-8"))
    assert set(outcomes) == {j["name"] for j in jobs}
    return outcomes


def _folder(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name.replace("/", "_").replace(":", "_")
    path.mkdir()
    assert ROOT not in path.parents
    return path


def test_the_wheel_holds_every_module(wheel_env: dict[str, str], tmp_path: Path) -> None:
    listing = _sh(["python", "-c", "import memsteward, pathlib; p = pathlib.Path(memsteward.__file__).parent; "
                   "print('\\n'.join(sorted(str(f.relative_to(p)) for f in p.rglob('*.py'))))"],
                  env=wheel_env, cwd=tmp_path)
    shipped = set(listing.stdout.split())
    expected = {str(f.relative_to(ROOT / "engine")) for f in (ROOT / "engine").rglob("*.py") if "__pycache__" not in f.parts}
    expected |= {f"specs/{f.relative_to(ROOT / 'specs')}" for f in (ROOT / "specs").rglob("*.py")
                 if "__pycache__" not in f.parts}
    assert expected <= shipped, sorted(expected - shipped)


def test_demo_and_its_hints_run_from_the_wheel(wheel_env: dict[str, str], tmp_path: Path) -> None:
    demo = _sh(["memsteward", "demo"], env=wheel_env, cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr[-3000:]
    hints = [line.strip() for line in demo.stdout.splitlines() if line.strip().startswith("- memsteward repair")]
    assert hints and "`memsteward demo --export demo-data`" in demo.stdout
    assert _sh(["memsteward", "demo", "--export", "demo-data"], env=wheel_env, cwd=tmp_path).returncode == 0
    for hint in hints:
        out = _sh(["bash", "-c", hint[2:] + " --dry-run"], env=wheel_env, cwd=tmp_path)
        assert out.returncode == 0, (hint, out.stderr)
    check = _sh(["bash", "-c", "memsteward check demo-data/policies/*.yaml && "
                 "memsteward policy show default > my-policy.yaml && memsteward check my-policy.yaml"],
                env=wheel_env, cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr


def _by_file(lang: str) -> dict[str, list[Block]]:
    grouped: dict[str, list[Block]] = {}
    for block in blocks(lang):
        grouped.setdefault(block.file, []).append(block)
    return grouped


SH = _by_file("sh")


@pytest.mark.parametrize("file", sorted(SH))
def test_sh_blocks_run_from_the_wheel(wheel_env: dict[str, str], demo_data: Path, tmp_path: Path, file: str) -> None:
    """The blocks of one page run in order in one fresh folder (a page builds on its earlier blocks);
    the bundled data is there first unless the page exports it itself."""
    cwd = _folder(tmp_path, file)
    if not any("demo --export demo-data" in b.code for b in SH[file]):
        shutil.copytree(demo_data, cwd / "demo-data")
    for block in SH[file]:
        out = _sh(["bash", "-euo", "pipefail", "-c", block.code], env=wheel_env, cwd=cwd)
        assert out.returncode == 0, f"{block.name}\n{block.code}\nstdout: {out.stdout[-2000:]}\nstderr: {out.stderr[-2000:]}"


@pytest.mark.parametrize("block", PY, ids=[b.name for b in PY])
def test_python_blocks_run_from_the_wheel(python_outcomes: dict[str, str | None], block: Block) -> None:
    assert python_outcomes[block.name] is None, f"{block.name}\n{python_outcomes[block.name]}"


def test_typed_user_script_runs_from_the_wheel(python_outcomes: dict[str, str | None]) -> None:
    assert python_outcomes["typed_user.py"] is None, python_outcomes["typed_user.py"]
