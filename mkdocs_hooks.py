"""MkDocs hooks: the reference pages are generated at build time from the code (memsteward.docgen)."""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File, Files

from memsteward.docgen import cli_reference, policy_reference

GENERATED = {"reference/policy.md": policy_reference, "reference/cli.md": cli_reference}


def on_files(files: Files, config: Any) -> Files:
    for uri, build in GENERATED.items():
        files.append(File.generated(config, uri, content=build()))
    return files
