"""What `make mutate` runs each mutant against, and which mutants it never samples.

Two pure-ish steps, kept apart from the runner (bench/mutation.py):

* **Coverage-based test selection.** One run of the test files under ``coverage`` with a per-test
  dynamic context (pytest-cov's ``--cov-context=test``) gives, for every line of the core modules,
  the test node ids that execute it. A mutant on line *l* runs only those tests, fastest first,
  with ``-x``: a test that never executes *l* cannot see the mutation (code reached only from a child
  process is the exception; the report counts such mutants apart as *not covered*).
* **Equivalence filter before sampling.** A mutation inside a type annotation, a docstring, a call
  to a logger or ``warnings.warn``, or ``__all__`` changes no behaviour a test can observe; those
  positions are dropped before the sample is drawn (how many, per module, is reported). The
  survivors of the sample are still classified by hand afterwards (bench/MUTATION.md).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

Span = tuple[tuple[int, int], tuple[int, int]]  # ((line, col), (end_line, end_col)), 1-based lines

_LOGGERS = frozenset({"log", "logger", "logging", "_log", "_logger", "warnings"})


def _span(node: ast.AST) -> Span:
    return ((node.lineno, node.col_offset),  # type: ignore[attr-defined]
            (node.end_lineno or node.lineno, node.end_col_offset or 0))  # type: ignore[attr-defined]


def _is_docstring(body: list[ast.stmt]) -> ast.AST | None:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[0]
    return None


def _is_log_call(node: ast.Call) -> bool:
    f = node.func
    while isinstance(f, ast.Attribute):
        if isinstance(f.value, ast.Name) and f.value.id in _LOGGERS:
            return True
        f = f.value
    return False


def unobservable_spans(source: str) -> list[Span]:
    """Source spans where a mutation cannot change behaviour: annotations, docstrings, logging calls,
    ``__all__``. ``from __future__ import annotations`` makes every annotation a string that is
    never evaluated, which is the project's rule (STYLE.md)."""
    spans: list[Span] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = _is_docstring(node.body)
            if doc is not None:
                spans.append(_span(doc))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.returns is not None:
                spans.append(_span(node.returns))
        elif isinstance(node, ast.arg) and node.annotation is not None:
            spans.append(_span(node.annotation))
        elif isinstance(node, ast.AnnAssign):
            spans.append(_span(node.annotation))
        elif isinstance(node, ast.Call) and _is_log_call(node):
            spans.append(_span(node))
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                  for t in node.targets):
            spans.append(_span(node))
    return spans


def inside(start: tuple[int, int], end: tuple[int, int], spans: Iterable[Span]) -> bool:
    """Whether the mutated range [start, end) lies within one of ``spans``."""
    return any(s <= start and end <= e for s, e in spans)


def coverage_map(data_file: Path, root: Path, modules: Iterable[str]) -> dict[str, dict[int, list[str]]]:
    """module → line → the test node ids (coverage contexts ``nodeid|phase``) that executed it.

    A line executed only outside any test (at import, during collection: module-level constants,
    decorators, class bodies) is mapped to every test that executes some line of its module, since a
    change there reaches whatever the module does."""
    from coverage import CoverageData

    data = CoverageData(basename=str(data_file))
    data.read()
    wanted = {str((root / m).resolve()): m for m in modules}
    out: dict[str, dict[int, list[str]]] = {m: {} for m in wanted.values()}
    for measured in data.measured_files():
        module = wanted.get(str(Path(measured).resolve()))
        if module is None:
            continue
        lines = out[module]
        at_import: list[int] = []
        for line, contexts in data.contexts_by_lineno(measured).items():
            ids = sorted({c.split("|")[0] for c in contexts if c})
            lines.setdefault(line, [])
            lines[line] = sorted(set(lines[line]) | set(ids))
            if not ids:
                at_import.append(line)
        everyone = sorted({t for ids in lines.values() for t in ids})
        for line in at_import:
            if not lines[line]:
                lines[line] = everyone
    return out


def select_tests(covering: Iterable[str], durations: Mapping[str, float], passed: set[str],
                 limit: int) -> list[str]:
    """The passing tests that execute the mutated line, fastest first, at most ``limit`` of them."""
    ok = [t for t in covering if t in passed]
    return sorted(ok, key=lambda t: (durations.get(t, 60.0), t))[:limit]


def read_outcomes(path: Path) -> tuple[dict[str, float], set[str]]:
    """The per-test durations and the set of passing node ids the plugin wrote (bench/mutation_plugin.py)."""
    rows = json.loads(path.read_text())
    return {r["nodeid"]: r["seconds"] for r in rows}, {r["nodeid"] for r in rows if r["passed"]}
