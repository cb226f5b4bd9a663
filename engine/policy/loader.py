"""Safe YAML loading of policies with a source map (JSON path → line, column).

Only ``yaml.SafeLoader`` constructs values: tags that try to build Python objects are
errors. Duplicate keys, documents over :data:`MAX_BYTES`, nesting deeper than
:data:`MAX_DEPTH` and alias expansion beyond :data:`MAX_NODES` nodes (billion laughs) are
rejected before any value is built. Schema errors from pydantic are mapped back to the
line and column of the offending field.

``yaml`` is imported on first use: a policy whose text was checked before is read back from the
remembered validated policy (:mod:`memsteward.policy.verdicts`) without parsing YAML.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import InputError
from ..jsonio import read_text
from .findings import Finding
from .model import MAX_KIND_CHARS, ORACLES, Policy

if TYPE_CHECKING:
    import yaml

    from .endpoints import EndpointRules

MAX_BYTES = 1 << 20  # 1 MiB
MAX_DEPTH = 48
MAX_NODES = 100_000

Loc = tuple[Any, ...]


@dataclass(frozen=True)
class SourceMap:
    """Positions (1-based line, column) of every key and value of a YAML document."""

    file: str
    positions: dict[Loc, tuple[int, int]]

    def where(self, loc: Loc) -> tuple[int, int]:
        """Position of the deepest known prefix of a pydantic/JSON location."""
        best = self.positions.get((), (1, 1))
        prefix: Loc = ()
        for part in loc:
            candidate = prefix + (part,)
            if candidate in self.positions:
                prefix = candidate
                best = self.positions[candidate]
            # components pydantic adds (union tags, 'function-after', ...) are skipped
        return best


@dataclass(frozen=True)
class PolicySource:
    """A loaded policy together with where each of its fields came from."""

    policy: Policy
    source: SourceMap

    @property
    def file(self) -> str:
        return self.source.file


class PolicySchemaError(Exception):
    """The document is YAML but not a valid policy; carries one finding per problem."""

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__("; ".join(f.message for f in findings))
        self.findings = findings


# --------------------------------------------------------------------------- YAML reading


def _read_text(path: str | Path) -> tuple[str, str]:
    """A policy is read only as a regular file; a symbolic link may not lead out of its directory
    (so `check` cannot be pointed at a system file through a policy path)."""
    name = str(path)
    try:
        if os.path.islink(path):
            target = os.path.realpath(path)
            home = os.path.realpath(os.path.dirname(os.path.abspath(path)))
            if os.path.commonpath([home, target]) != home:
                raise InputError("policy file is a symbolic link leading out of its directory; "
                                 "give the real path", file=name)
    except (OSError, ValueError):
        raise InputError("cannot resolve the policy path", file=name) from None
    return name, read_text(path, MAX_BYTES, "policy file")


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}")


def shown_name(value: Any) -> str:
    """A key or value from the document, quoted only if it looks like a name: errors never echo
    arbitrary file text (a policy path may point at a file that is not a policy)."""
    if isinstance(value, str) and _NAME.fullmatch(value):
        return f"'{value}'"
    if isinstance(value, (int, float, bool)) or value is None:
        return json.dumps(value)[:24]
    return f"a {type(value).__name__}" + (f" of {len(value)} characters" if isinstance(value, str) else "")


def _mark_error(name: str, exc: yaml.MarkedYAMLError, prefix: str) -> InputError:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "invalid YAML"
    line = mark.line + 1 if mark else None
    col = mark.column + 1 if mark else None
    return InputError(f"{prefix}: {problem}", file=name, line=line, col=col)


def _walk(node: yaml.Node, loc: Loc, positions: dict[Loc, tuple[int, int]], name: str,
          depth: int, budget: list[int]) -> None:
    """Record positions, reject duplicate keys, deep nesting and alias blow-up."""
    budget[0] += 1
    if budget[0] > MAX_NODES:
        raise InputError(f"document expands to more than {MAX_NODES} nodes (aliases?)", file=name,
                         line=node.start_mark.line + 1, col=node.start_mark.column + 1,
                         field=dotted(loc))
    if node.id == "scalar":  # the expanded text shares the file's cap: an event stores the policy whole
        budget[1] += len(node.value)
        if budget[1] > MAX_BYTES:
            raise InputError(f"document expands to more than {MAX_BYTES} characters of text (aliases?)", file=name,
                             line=node.start_mark.line + 1, col=node.start_mark.column + 1, field=dotted(loc))
    if depth > MAX_DEPTH:
        raise InputError(f"nesting deeper than {MAX_DEPTH} levels", file=name,
                         line=node.start_mark.line + 1, col=node.start_mark.column + 1,
                         field=dotted(loc))
    positions.setdefault(loc, (node.start_mark.line + 1, node.start_mark.column + 1))
    if node.id == "mapping":  # yaml.MappingNode (checked by its id: no yaml import here)
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if key_node.id != "scalar" or key_node.tag != "tag:yaml.org,2002:str":
                shown = key_node.value if key_node.id == "scalar" else "a collection"
                raise InputError(f"mapping keys must be plain strings, got {shown!r}", file=name,
                                 line=key_node.start_mark.line + 1, col=key_node.start_mark.column + 1,
                                 field=dotted(loc))
            key = key_node.value
            if key in seen:
                raise InputError(f"duplicate key '{key}' (first defined on line {seen[key]})", file=name,
                                 line=key_node.start_mark.line + 1, col=key_node.start_mark.column + 1,
                                 field=dotted(loc + (key,)))
            seen[key] = key_node.start_mark.line + 1
            positions[loc + (key,)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            _walk(value_node, loc + (key,), positions, name, depth + 1, budget)
            positions[loc + (key,)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
    elif node.id == "sequence":
        for index, item in enumerate(node.value):
            _walk(item, loc + (index,), positions, name, depth + 1, budget)


def dotted(loc: Loc, limit: int = 80) -> str:
    """A JSON location as a dotted field name (``modes[0].when.kind``), cut at ``limit`` characters."""
    out = ""
    for part in loc:
        if part == "[key]":
            continue
        if not isinstance(part, int) and not _NAME.fullmatch(str(part)):
            part = "<key>"  # never echo arbitrary document text as a field name
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out if len(out) <= limit else out[: limit - 1] + "…"


def load_yaml(path: str | Path) -> tuple[Any, SourceMap]:
    """Read a YAML document safely and return (data, source map). Raises :class:`InputError`."""
    return parse_yaml(*_read_text(path))


def parse_yaml(name: str, text: str) -> tuple[Any, SourceMap]:
    """Parse the YAML text of file ``name`` safely: (data, source map). Raises :class:`InputError`."""
    import yaml

    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as exc:
        char = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        raise InputError(f"YAML syntax: {exc.reason} (character #x{char:04x} at offset {exc.position})",
                         file=name) from None
    try:
        try:
            node = loader.get_single_node()
        except yaml.composer.ComposerError as exc:
            raise _mark_error(name, exc, "YAML structure") from None
        except yaml.MarkedYAMLError as exc:
            raise _mark_error(name, exc, "YAML syntax") from None
        except yaml.YAMLError as exc:
            raise InputError(f"YAML syntax: {exc}", file=name) from None
        except RecursionError:
            raise InputError(f"nesting deeper than {MAX_DEPTH} levels", file=name) from None
        if node is None:
            raise InputError("empty document, expected a policy mapping", file=name, line=1, col=1)
        positions: dict[Loc, tuple[int, int]] = {}
        _walk(node, (), positions, name, 0, [0, 0])
        try:
            data = loader.construct_document(node)
        except yaml.constructor.ConstructorError as exc:
            raise _mark_error(name, exc, "unsafe or unknown YAML tag") from None
        except yaml.MarkedYAMLError as exc:
            raise _mark_error(name, exc, "YAML") from None
        except (ValueError, TypeError, OverflowError) as exc:
            raise InputError(f"YAML value cannot be read: {exc}", file=name) from None
    finally:
        loader.dispose()
    return data, SourceMap(name, positions)


# --------------------------------------------------------------------------- policy validation

_SECRET_FIELDS = {"api_key", "apikey", "token", "secret", "password", "openai_api_key"}


def _schema_findings(exc: ValidationError, source: SourceMap) -> list[Finding]:
    findings = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        line, col = source.where(loc)
        field = _field_of(source, loc)
        message = err["msg"].removeprefix("Value error, ")
        if loc[:1] == ("kinds",) and loc[-1:] == ("[key]",) and len(loc) == 3:
            message = (f"a kind name is an identifier (letters, digits and '_', not starting with a digit) "
                       f"of 1 to {MAX_KIND_CHARS} characters, got {shown_name(loc[1])}")
        elif err["type"] == "extra_forbidden":
            last = str(loc[-1]) if loc else ""
            if last.lower() in _SECRET_FIELDS:
                message = (f"secrets are never read from policy files; set the key in an environment "
                           f"variable and name it with 'api_key_env' (field '{last}')")
            else:
                message = f"unknown field {shown_name(last)}"
        elif err["type"] == "literal_error":
            message = f"{message}, got {shown_name(err.get('input'))}"
        elif err["type"] == "finite_number":
            message = "must be a finite number (NaN and infinity are not allowed)"
        elif err["type"] == "missing":
            message = f"missing required field '{loc[-1]}'"
        elif err["type"] == "union_tag_not_found":
            message = f"missing 'oracle': one of {', '.join(ORACLES)}"
        elif err["type"] == "union_tag_invalid":
            message = f"unknown oracle {shown_name(err.get('input', {}).get('oracle') if isinstance(err.get('input'), dict) else None)}; expected one of {', '.join(ORACLES)}"
        findings.append(Finding("error", "schema", message, source.file, line, col, field))
    return findings


def _field_of(source: SourceMap, loc: Loc) -> str:
    """Dotted field name: the known prefix of ``loc`` plus a final missing/unknown key."""
    prefix: Loc = ()
    for part in loc:
        if prefix + (part,) in source.positions:
            prefix = prefix + (part,)
    if loc and loc[-1] != (prefix[-1] if prefix else None) and isinstance(loc[-1], (str, int)):
        tail = loc[-1]
        if not (isinstance(tail, str) and tail in ORACLES):
            prefix = prefix + (tail,)
    return dotted(prefix)


def parse_policy(data: Any, source: SourceMap) -> PolicySource:
    """Validate parsed YAML as a :class:`Policy`. Raises :class:`PolicySchemaError`."""
    if not isinstance(data, dict):
        kind = type(data).__name__ if data is not None else "nothing"
        raise PolicySchemaError([Finding("error", "schema", f"a policy is a mapping, got {kind}",
                                         source.file, 1, 1, "")])
    if data and not set(data) & set(Policy.model_fields):
        raise PolicySchemaError([Finding("error", "schema", "not a memsteward policy: none of its top-level keys "
                                         "is a policy field (version, name, kinds, modes, …)", source.file, 1, 1, "")])
    try:
        policy = Policy.model_validate(data)
    except ValidationError as exc:
        raise PolicySchemaError(_schema_findings(exc, source)) from None
    except RecursionError:
        raise PolicySchemaError([Finding("error", "schema", "document nests too deeply", source.file)]) from None
    return PolicySource(policy, source)


def load_policy_source(path: str | Path) -> PolicySource:
    """Read and validate a policy file, keeping its source map.

    Raises :class:`InputError` (unreadable / not YAML) or :class:`PolicySchemaError`.
    """
    data, source = load_yaml(path)
    return parse_policy(data, source)


def load_checked_source(path: str | Path) -> PolicySource:
    """A policy with its source map, refused unless it passes ``memsteward check`` without errors.

    Any schema or analysis error is an :class:`InputError` naming the first one's file, line and field.
    A clean verdict is remembered (:mod:`memsteward.policy.verdicts`): the same policy under the
    same allow-lists and code is not analysed (nor Z3 imported) again.
    """
    return _checked_source(*_read_text(path))


def _checked_source(name: str, text: str, rules: EndpointRules | None = None) -> PolicySource:
    """:func:`load_checked_source` of text already read (``rules``: the operator's allow-lists, read
    from the environment when None)."""
    from .endpoints import EndpointRules
    from .verdicts import passed_before, remember_passed, verdict_key

    try:
        src = parse_policy(*parse_yaml(name, text))
    except PolicySchemaError as exc:
        first = exc.findings[0]
        raise InputError(first.message, file=first.file, line=first.line, col=first.col, field=first.field) from None
    rules = EndpointRules.from_environment() if rules is None else rules
    key = verdict_key(src.policy, rules)
    if passed_before(key):
        return src
    from .analysis import analyze  # local: analysis imports z3

    errors = [f for f in analyze(src, rules) if f.severity == "error"]
    if errors:
        first = errors[0]
        more = f"and {len(errors) - 1} more; " if len(errors) > 1 else ""
        raise InputError(f"the policy has errors: {first.message} ({more}run memsteward check)", file=first.file,
                         line=first.line, col=first.col, field=first.field)
    remember_passed(key)
    return src


def load_policy(path: str | Path) -> Policy:
    """Load a policy for execution (:func:`load_checked_source`, without the source map).

    Engines call this; a policy the engine runs has passed ``memsteward check`` without errors.
    The validated policy is remembered by the SHA-256 of its text (:func:`~memsteward.policy.
    verdicts.remembered_policy`): the same text under the same allow-lists and code is read back
    without parsing YAML. Anything else — a first run, a changed file, an unusable cache entry, an
    invalid config file — takes the full path, with its errors.
    """
    from .endpoints import EndpointRules
    from .verdicts import remember_policy, remembered_policy

    name, text = _read_text(path)
    try:
        rules = EndpointRules.from_environment()
    except InputError:  # reported by the full path, in its order (a policy error first)
        return _checked_source(name, text).policy
    policy = remembered_policy(text, rules)
    if policy is None:
        policy = _checked_source(name, text, rules).policy
        remember_policy(text, rules, policy)
    return policy
