"""What `make mutate` runs each mutant against, and which mutants it never samples.

Two pure-ish steps, kept apart from the runner (bench/mutation.py):

* **Coverage-based test selection.** One run of the test files under ``coverage`` with a per-test
  dynamic context (pytest-cov's ``--cov-context=test``) gives, for every line of the core modules,
  the test node ids that execute it. A mutant on line *l* runs all those tests, fastest first,
  with ``-x``: a test that never executes *l* cannot see the mutation. Lines run at import
  (constants, signatures, decorators) are recorded only under the test that imported the module
  first, so they are mapped by what they reach instead (``import_time_lines``).
* **Equivalence filter before sampling.** A mutation inside a type annotation, a docstring, a call
  to a logger or ``warnings.warn``, or ``__all__`` changes no behaviour a test can observe; those
  positions are dropped before the sample is drawn (how many, per module, is reported). The
  survivors of the sample are still classified by hand afterwards (bench/MUTATION.md).
"""

from __future__ import annotations

import ast
import json
import re
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


def _names_bound(node: ast.stmt) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _names_any(names: Iterable[str], text: str) -> bool:
    """Whether ``text`` names any of ``names`` as a whole word."""
    return any(re.search(rf"\b{re.escape(n)}\b", text) for n in names)


def import_time_lines(source: str, elsewhere: str = "") -> dict[int, frozenset[int] | None]:
    """The lines a module executes when it is imported, each with the lines whose tests can see a
    mutation there: a module-level constant acts where it is read (the lines that load its name); a
    function's signature (its defaults) where its body runs; anything else (a decorator, a class
    body, an import, a constant read elsewhere: ``elsewhere`` is the text of the other modules and
    the tests) by whatever the module does, which is ``None``.

    Coverage records these lines once, at the first import, under whichever test (or no test, or a
    child process) imported the module first; so the map must not take their contexts at face value."""
    tree = ast.parse(source)
    loads: dict[str, set[int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loads.setdefault(node.id, set()).add(node.lineno)
    out: dict[int, frozenset[int] | None] = {}

    def span(first: int, last: int, reach: frozenset[int] | None) -> None:
        for line in range(first, last + 1):
            out[line] = reach

    def visit(body: list[ast.stmt], in_class: bool) -> None:
        for node in body:
            last = node.end_lineno or node.lineno
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for d in node.decorator_list:
                    span(d.lineno, d.end_lineno or d.lineno, None)
                body_from = node.body[0].lineno
                span(node.lineno, body_from - 1, frozenset(range(body_from, last + 1)))
            elif isinstance(node, ast.ClassDef):
                for d in node.decorator_list:
                    span(d.lineno, d.end_lineno or d.lineno, None)
                span(node.lineno, node.body[0].lineno - 1, None)
                visit(node.body, True)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and not in_class:
                names = _names_bound(node)
                used = {ln for n in names for ln in loads.get(n, ())}
                shared = _names_any(names, elsewhere)
                inner = used - set(range(node.lineno, last + 1))
                span(node.lineno, last, None if shared or not inner else frozenset(inner))
            else:
                span(node.lineno, last, None)
    visit(tree.body, False)
    # a constant read at import (``B = f(A)``, a default ``x=A``) reaches what that line reaches: say everything
    for line, reach in list(out.items()):
        if reach is not None and reach & out.keys():
            out[line] = None
    return out


def read_by_tests(source: str, tests: Mapping[str, str]) -> dict[int, frozenset[str]]:
    """Each line of a module-level assignment, with the test files whose text names what it binds
    (``tests``: a test file's path → its text). A test that reads a table of the module directly,
    with no call into it, executes none of its lines, so coverage alone never selects it."""
    out: dict[int, frozenset[str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            names = _names_bound(node)
            files = frozenset(f for f, text in tests.items() if _names_any(names, text))
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1) if files else ():
                out[line] = files
    return out


def coverage_map(data_files: Iterable[tuple[Path, Path]], modules: Iterable[str],
                 elsewhere: Mapping[str, str] | None = None, tests: Mapping[str, str] | None = None,
                 all_tests: Iterable[str] = ()) -> dict[str, dict[int, list[str]]]:
    """module → line → the test node ids (coverage contexts ``nodeid|phase``) that executed it, from
    the coverage data of one or more shards (``(data_file, root of the tree it measured)``).

    A line a module executes at import (``import_time_lines``) is mapped to the tests that execute the
    lines it reaches, or, when it reaches anything, to every test that executes some line of its module
    (and always to the tests that executed it). ``elsewhere[module]`` is the text of the other modules
    and the tests, where a module-level name read outside the module is looked for. With ``tests``
    (a test file's path → its text) and ``all_tests`` (every test node id the map ran), a module-level
    assignment also goes to every test of each file that names it (``read_by_tests``)."""
    from coverage import CoverageData

    modules = list(modules)
    out: dict[str, dict[int, set[str]]] = {m: {} for m in modules}
    for data_file, root in data_files:
        data = CoverageData(basename=str(data_file))
        data.read()
        wanted = {str((root / m).resolve()): m for m in modules}
        for measured in data.measured_files():
            module = wanted.get(str(Path(measured).resolve()))
            if module is None:
                continue
            for line, contexts in data.contexts_by_lineno(measured).items():
                ids = {c.split("|")[0] for c in contexts if c}
                out[module].setdefault(line, set()).update(ids)
    by_file: dict[str, list[str]] = {}
    for t in all_tests:
        by_file.setdefault(t.split("::")[0], []).append(t)
    result: dict[str, dict[int, list[str]]] = {}
    for module, lines in out.items():
        sources = [root / module for _, root in data_files if (root / module).exists()]
        at_import = import_time_lines(sources[0].read_text(), (elsewhere or {}).get(module, "")) if sources else {}
        everyone = {t for ids in lines.values() for t in ids}
        final: dict[int, set[str]] = {line: set(ids) for line, ids in lines.items()}
        for line, reach in at_import.items() if everyone else ():  # imported by some test: every such line ran
            wide = everyone if reach is None else {t for r in reach for t in lines.get(r, ())}
            final[line] = set(lines.get(line, ())) | wide
        for line, files in read_by_tests(sources[0].read_text(), tests).items() if sources and tests else ():
            final.setdefault(line, set()).update(t for f in files for t in by_file.get(f, ()))
        result[module] = {line: sorted(ids) for line, ids in sorted(final.items())}
    return result


def select_tests(covering: Iterable[str], durations: Mapping[str, float], passed: set[str],
                 limit: int | None = None, budget: float | None = None) -> list[str]:
    """The passing tests that execute the mutated line, fastest first (a mutant runs them with ``-x``,
    so a kill stops the run early): every one of them, or at most ``limit`` of them, or as many as
    fit in ``budget`` seconds of the map's durations (the fastest is always taken)."""
    ok = sorted((t for t in covering if t in passed), key=lambda t: (durations.get(t, 60.0), t))[:limit]
    if budget is None:
        return ok
    out: list[str] = []
    spent = 0.0
    for t in ok:
        spent += durations.get(t, 60.0)
        if out and spent > budget:
            break
        out.append(t)
    return out


def beyond_budget(covering: Iterable[str], durations: Mapping[str, float], passed: set[str],
                  limit: int | None, budget: float | None) -> list[str]:
    """The covering tests :func:`select_tests` left out under ``budget``, fastest first: what a
    survivor of the first pass runs in the second, while the run's wall-clock budget lasts."""
    every = select_tests(covering, durations, passed, limit)
    return every[len(select_tests(covering, durations, passed, limit, budget)):]


def read_outcomes(path: Path) -> tuple[dict[str, float], set[str]]:
    """The per-test durations and the set of passing node ids the plugin wrote (bench/mutation_plugin.py)."""
    rows = json.loads(path.read_text())
    return {r["nodeid"]: r["seconds"] for r in rows}, {r["nodeid"] for r in rows if r["passed"]}
