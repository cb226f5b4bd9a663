"""Reports of a test run: pytest-style text, JSON, and JUnit XML for CI systems.

Untrusted text (case names, ids, values from test files) is escaped before it reaches a terminal
(control characters shown as ``\\xNN``) and written to XML by ElementTree (which escapes markup).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

from .run import CaseResult, Mismatch


def safe(text: Any) -> str:
    """Printable text: control characters (ANSI escapes, CR, …) shown as ``\\xNN`` escapes."""
    return "".join(ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
                   for ch in str(text))


def _show(value: Any) -> str:
    return safe(json.dumps(value, ensure_ascii=False, default=str))


def case_id(r: CaseResult) -> str:
    return f"{r.case.suite.file}::{r.case.name}"


def mismatch_lines(r: CaseResult, m: Mismatch) -> list[str]:
    """expected vs actual, the expectation's line, and the rule that decided the artifact."""
    out = [f"    {safe(r.case.suite.file)}:{m.line}: {safe(m.field)}",
           f"      expected: {_show(m.expected)}",
           f"      actual:   {_show(m.actual)}"]
    if m.rule is not None:
        out.append(f"      {safe(m.artifact)} decided by {safe(m.rule['name'])} → {m.rule['mode']} "
                   f"({safe(m.rule['file'])}:{m.rule['line']})")
    return out


def render_text(results: list[CaseResult], seconds: float, echo: Callable[[str], None]) -> None:
    for r in results:
        echo(f"{safe(case_id(r))} {'PASSED' if r.passed else 'FAILED'}")
    failed = [r for r in results if not r.passed]
    if failed:
        echo("")
        echo("=" * 30 + " FAILURES " + "=" * 30)
        for r in failed:
            echo(f"__ {safe(case_id(r))} (line {r.case.line}) __")
            for m in r.mismatches:
                for line in mismatch_lines(r, m):
                    echo(line)
    echo(summary(results, seconds))


def summary(results: list[CaseResult], seconds: float) -> str:
    passed = sum(r.passed for r in results)
    failed = len(results) - passed
    parts = ([f"{failed} failed"] if failed else []) + [f"{passed} passed"]
    return f"{', '.join(parts)} in {seconds:.2f}s"


def as_json(results: list[CaseResult]) -> dict[str, Any]:
    return {
        "cases": [{"file": r.case.suite.file, "name": r.case.name, "line": r.case.line,
                   "policy": r.case.suite.policy.file, "passed": r.passed, "seconds": round(r.seconds, 4),
                   "failures": [m.as_dict() for m in r.mismatches]} for r in results],
        "passed": sum(r.passed for r in results),
        "failed": sum(not r.passed for r in results),
    }


def junit_xml(results: list[CaseResult], seconds: float) -> bytes:
    """One <testsuite> per test file, one <testcase> per case, <failure> with expected vs actual."""
    root = ET.Element("testsuites", name="memsteward test", tests=str(len(results)),
                      failures=str(sum(not r.passed for r in results)), time=f"{seconds:.3f}")
    by_file: dict[str, list[CaseResult]] = {}
    for r in results:
        by_file.setdefault(r.case.suite.file, []).append(r)
    for file, rs in by_file.items():
        suite = ET.SubElement(root, "testsuite", name=safe(file), tests=str(len(rs)),
                              failures=str(sum(not r.passed for r in rs)),
                              time=f"{sum(r.seconds for r in rs):.3f}")
        for r in rs:
            tc = ET.SubElement(suite, "testcase", classname=safe(file), name=safe(r.case.name), file=safe(file),
                               line=str(r.case.line), time=f"{r.seconds:.3f}")
            if not r.passed:
                first = r.mismatches[0]
                fail = ET.SubElement(tc, "failure", message=f"{first.field}: expected {_show(first.expected)}, "
                                                            f"got {_show(first.actual)}", type="expectation")
                fail.text = "\n".join(line for m in r.mismatches for line in mismatch_lines(r, m))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
