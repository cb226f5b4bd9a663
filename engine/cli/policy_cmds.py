"""`memgov schema`, `memgov check`, `memgov compare`."""

from __future__ import annotations

import json

import click

from ..policy.model import Policy
from . import main
from .common import handle_errors


@main.command()
@handle_errors
def schema() -> None:
    """Print the JSON Schema of the policy language (for editor autocompletion)."""
    doc = Policy.model_json_schema(by_alias=True)
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    doc["title"] = "memgov policy"
    click.echo(json.dumps(doc, indent=2))
