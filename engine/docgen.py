"""Reference pages generated from the code, so they cannot drift from it: the policy language
from its JSON Schema (:meth:`Policy.model_json_schema`) and the command line from the click
commands. The documentation site builds them at build time (``mkdocs_hooks.py``); nothing
generated is kept in the repository."""

from __future__ import annotations

import inspect
import json
from typing import Any

import click

_CONSTRAINTS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
                "minItems", "maxItems", "maxProperties", "pattern", "const")


def _type(spec: dict[str, Any]) -> str:
    """A short type for one schema node: a link for a ``$ref``, ``A | B`` for alternatives."""
    if "$ref" in spec:
        name = spec["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    for key in ("anyOf", "oneOf"):
        if key in spec:
            return " \\| ".join(_type(s) for s in spec[key])
    if "enum" in spec:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in spec["enum"])
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list of {_type(spec.get('items', {}))}"
    if kind == "object":
        inner = spec.get("additionalProperties") or next(iter(spec.get("patternProperties", {}).values()), None)
        return f"map of {_type(inner)}" if isinstance(inner, dict) else "object"
    return f"`{kind}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def _fields(schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", ()))
    rows = ["| field | type | default | constraints | description |", "|---|---|---|---|---|"]
    for name, spec in schema.get("properties", {}).items():
        default = f"`{json.dumps(spec['default'])}`" if "default" in spec else ("required" if name in required else "")
        bounds = ", ".join(f"{k} {json.dumps(spec[k])}" for k in _CONSTRAINTS if k in spec)
        rows.append(f"| `{name}` | {_type(spec)} | {_cell(default)} | {_cell(bounds)} | "
                    f"{_cell(spec.get('description', ''))} |")
    return rows


def policy_reference() -> str:
    """Markdown of every object of the policy language, from the JSON Schema ``memsteward schema`` prints."""
    from .policy.model import Policy

    schema = Policy.model_json_schema(by_alias=True)
    out = ["# Policy reference", "",
           "Generated from the JSON Schema of the policy language (`memsteward schema` prints it). "
           "A policy is a YAML document whose top level is a [Policy](#policy); unknown fields are errors.", "",
           "## Policy", "", _cell(schema.get("description", "")), "", *_fields(schema), ""]
    for name, spec in sorted(schema.get("$defs", {}).items()):
        out += [f"## {name}", "", _cell(spec.get("description", "")), ""]
        out += [*_fields(spec), ""] if "properties" in spec else [f"Type: {_type(spec)}", ""]
    return "\n".join(out)


def _commands(group: click.Group, ctx: click.Context, prefix: str) -> list[tuple[str, click.Command, click.Context]]:
    found = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        sub = click.Context(cmd, info_name=name, parent=ctx)
        found.append((f"{prefix} {name}", cmd, sub))
        if isinstance(cmd, click.Group):
            found += _commands(cmd, sub, f"{prefix} {name}")
    return found


def cli_reference() -> str:
    """Markdown of every command and option, from the click commands themselves."""
    from .cli import main

    root = click.Context(main, info_name="memsteward")
    out = ["# Command-line reference", "",
           "Generated from the commands (`memsteward COMMAND --help` prints the same). Exit codes: 0 ok; "
           "1 the input was read and has errors or violations; 2 bad input; 3 internal error.", ""]
    for path, cmd, ctx in _commands(main, root, "memsteward"):
        usage = " ".join(cmd.collect_usage_pieces(ctx))
        out += [f"## {path}", "", "```text", f"{path} {usage}".rstrip(), "```", "",
                inspect.cleandoc(cmd.help or "").replace("\b\n", "").strip(), ""]
        options = [rec for p in cmd.get_params(ctx) if (rec := p.get_help_record(ctx))]
        if options:
            out += ["| option | meaning |", "|---|---|"]
            out += [f"| `{_cell(flag)}` | {_cell(text)} |" for flag, text in options]
            out.append("")
    return "\n".join(out)
