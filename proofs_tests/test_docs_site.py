"""The documentation site builds with `mkdocs build --strict` (offline: no plugin fetches anything),
and its generated reference pages cover every command and every object of the policy language."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from memsteward.docgen import cli_reference, policy_reference
from memsteward.policy.model import Policy

ROOT = Path(__file__).resolve().parent.parent


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    for page in ("index.html", "tutorial/index.html", "reference/cli/index.html", "reference/policy/index.html",
                 "guarantees/index.html", "compliance/index.html", "operations/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def test_cli_reference_names_every_command_and_option() -> None:
    from memsteward.cli import main

    text = cli_reference()
    ctx = click.Context(main, info_name="memsteward")
    for name in main.list_commands(ctx):
        cmd = main.get_command(ctx, name)
        assert cmd is not None and f"## memsteward {name}\n" in text, name
        for param in cmd.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("--") and not param.hidden:  # type: ignore[attr-defined]
                    assert opt in text, (name, opt)


def test_policy_reference_covers_the_schema() -> None:
    text = policy_reference()
    schema = Policy.model_json_schema(by_alias=True)
    for name, spec in schema["$defs"].items():
        assert f"## {name}\n" in text, name
        for field in spec.get("properties", {}):
            assert f"| `{field}` |" in text, (name, field)
