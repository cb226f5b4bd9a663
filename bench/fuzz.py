"""Structure fuzzing of every input format (issue 17, item 5), driven by Hypothesis.

One target per format — policy YAML, store JSON, event JSON, plan JSON, case JSON, cohort JSONL —
each fed two kinds of input: *mutations* of a valid document (a random field replaced by a random
JSON value, deleted, or the document re-serialised with a hostile scalar) and *raw bytes*. The
property is the same everywhere: the reader either accepts the input or raises
:class:`~memsteward.errors.InputError` (a policy may also yield findings); any other exception is a
finding. For events, an accepted event must also run to completion on a copy of the store (the
issue's central claim: nothing an input contains makes an event unfinishable).

``make test`` runs every target for a few examples (``proofs_tests/test_fuzz.py``); ``make fuzz``
runs ``python -m bench.fuzz --examples N`` and records executions and findings in
``bench/FUZZ.md``. (atheris is not used: it does not build for this Python here; Hypothesis
explores structure, which is what these parsers branch on.)
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsteward.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "engine" / "data"
HOSTILE_SCALARS = ["\ud800", "1e400", 1e308, -(2**63), 2**63, 2**200, "", "\x1b[2J", "a" * 5000, None, True,
                   [], {}, 0, -1, 10**8, 0.5, "three", "../../etc/passwd", "\u202e"]

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20),
                         st.sampled_from(HOSTILE_SCALARS))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)), max_leaves=12)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:8]):
            out += _paths(v, prefix + (i,))
    return out


@st.composite
def mutations(draw: Any, base: Any) -> Any:
    """A copy of ``base`` with one to three fields replaced, deleted or given an extra sibling."""
    doc = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        value = draw(json_values)
        if not path:
            doc = value
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "delete", "sibling"]))
        if action == "replace" or not isinstance(parent, (dict, list)):
            parent[path[-1]] = value
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = value
        else:
            parent.append(value)
    return doc


def _dump(doc: Any) -> str:
    """Serialise like a hostile writer would: surrogates and big numbers kept as text."""
    return json.dumps(doc, ensure_ascii=True, default=str).replace('"1e400"', "1e400")


def _dump_duplicate(doc: Any, path: tuple, value: Any) -> str:
    """``doc`` serialised with the object at ``path`` given its first key a second time (``value``)."""
    def enc(node: Any, here: tuple) -> str:
        if isinstance(node, dict):
            items = [f"{json.dumps(k)}:{enc(v, here + (k,))}" for k, v in node.items()]
            if here == path and node:
                items.append(f"{json.dumps(next(iter(node)))}:{_dump(value)}")
            return "{" + ",".join(items) + "}"
        if isinstance(node, list):
            return "[" + ",".join(enc(v, here + (i,)) for i, v in enumerate(node)) + "]"
        return _dump(node)
    return enc(doc, ())


plain_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=10)),
                            lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                    st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                            max_leaves=6)


@st.composite
def duplicated(draw: Any, base: Any) -> str:
    """``base`` with one object, at any depth, naming one of its keys twice (the second time with a
    plain value, so the duplicate is the document's only fault)."""
    doc = json.loads(json.dumps(base))
    objects = [p for p in _paths(doc) if isinstance(_at(doc, p), dict) and _at(doc, p)]
    return _dump_duplicate(doc, draw(st.sampled_from(objects)), draw(plain_values))


def _at(doc: Any, path: tuple) -> Any:
    for key in path:
        doc = doc[key]
    return doc


REINGEST_TRANSFORMS: dict[str, Callable[[str], str]] = {
    "upper": str.upper, "lower": str.lower, "title": str.title,
    "double-space": lambda t: t.replace(" ", "  "), "trailing-space": lambda t: t + " \n",
    "trailing-period": lambda t: t.rstrip(".") + ("." if not t.endswith(".") else "!"),
    "zero-width": lambda t: t.replace("e", "e\u200b", 3),
    "fullwidth": lambda t: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in t),
    "homoglyph": lambda t: t.replace("o", "\u043e").replace("a", "\u0430"),
    "wrap": lambda t: t, "meta": lambda t: t,
}


def _yaml(doc: Any) -> str:
    import yaml

    try:
        return yaml.safe_dump(doc, allow_unicode=True)
    except yaml.YAMLError:  # e.g. a lone surrogate: JSON is YAML too
        return _dump(doc)


# --------------------------------------------------------------------------- targets


class Targets:
    """Each target takes a document (text) and checks the property; raises on a finding."""

    def __init__(self, workdir: Path) -> None:
        from memsteward.repair.artifacts import parse_store_document
        from memsteward.store import Store

        self.dir = workdir
        self.store_doc = json.loads((DATA / "repair" / "store.json").read_text())
        self.events = [json.loads((DATA / "repair" / f"event-{t}.json").read_text())
                       for t in ("delete", "correct", "migrate")]
        self.case_doc = json.loads((DATA / "cases" / "joint.json").read_text())
        self.policy_text = (DATA / "policies" / "tool-agent.yaml").read_text()
        self.base = Store()
        self.base.import_snapshot(parse_store_document(self.store_doc, "store.json"))
        from memsteward.policy.loader import load_policy

        self.policy = load_policy(DATA / "policies" / "tool-agent.yaml")
        from memsteward.api import apply_event

        plan = apply_event(self.base.copy_in_memory(), self.policy, self.events[0], dry_run=True)
        self.plan_doc = plan.to_json()
        self.executions = 0
        self.erased: Any = None
        self.erased_text = next(a for a in self.store_doc["artifacts"] if a["id"] == "p1")["content"]["text"]

    def _file(self, name: str, text: str | bytes) -> Path:
        path = self.dir / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
        return path

    def store(self, text: str | bytes) -> None:
        from memsteward.repair.artifacts import parse_store_document, read_json
        from memsteward.store import Store

        self.executions += 1
        try:
            doc, raw = read_json(str(self._file("store.json", text)))
            snap = parse_store_document(doc, "store.json", raw)
        except InputError:
            return
        mem = Store()
        mem.import_snapshot(snap)
        again = json.loads(json.dumps(mem.export(), allow_nan=False))  # the export re-imports
        parse_store_document(again, "export.json")
        mem.close()

    def event(self, text: str | bytes) -> None:
        from memsteward.repair.events import load_event
        from memsteward.repair.execute import run_event

        self.executions += 1
        copy = self.base.copy_in_memory()
        try:
            try:
                event = load_event(str(self._file("event.json", text)), copy.snapshot())
                plan = run_event(copy, self.policy, event)
            except InputError:
                assert copy.unfinished_event() is None  # refused before the barrier
                return
            assert plan.status == "done" and copy.unfinished_event() is None, "event left unfinished"
        finally:
            copy.close()

    def plan(self, text: str | bytes) -> None:
        from memsteward.api import verify_plan
        from memsteward.jsonio import read_json

        self.executions += 1
        try:
            verify_plan(read_json(self._file("plan.json", text)))
        except InputError:
            return

    def case(self, text: str | bytes) -> None:
        from memsteward.clearance.case import load_case

        self.executions += 1
        try:
            load_case(self._file("case.json", text))
        except InputError:
            return

    def cohort(self, text: str | bytes) -> None:
        from memsteward.clearance.case import iter_cohort

        self.executions += 1
        try:
            for _ in iter_cohort(self._file("cohort.jsonl", text)):
                pass
        except InputError:
            return

    def duplicate_keys(self, which_text: tuple[str, str]) -> None:
        """A document with a key given twice is refused by every reader, naming the key."""
        from memsteward.api import verify_plan
        from memsteward.clearance.case import load_case
        from memsteward.jsonio import read_json
        from memsteward.repair.artifacts import parse_store_document
        from memsteward.repair.events import load_event

        which, text = which_text
        self.executions += 1
        path = self._file(f"dup-{which}.json", text)
        readers: dict[str, Callable[[], Any]] = {
            "store": lambda: parse_store_document(read_json(path), "store.json"),
            "event": lambda: load_event(str(path), self.base.snapshot()),
            "plan": lambda: verify_plan(read_json(path)),
            "case": lambda: load_case(path)}
        try:
            readers[which]()
        except InputError as exc:
            assert "duplicate key" in exc.message, f"{which}: refused, but not for the duplicate key: {exc.message}"
            return
        raise AssertionError(f"{which}: a document with a duplicate key was accepted")

    def reingest(self, transforms: list[str]) -> None:
        """Erased text, re-written in any form normalisation folds (case, spacing, trailing punctuation,
        zero-width, fullwidth, homoglyphs, wrapped in an object or put in meta), is refused."""
        from memsteward.errors import WriteRefused

        self.executions += 1
        if self.erased is None:
            from memsteward.api import apply_event

            self.erased = self.base.copy_in_memory()
            apply_event(self.erased, self.policy, self.events[0])  # deletes p1
        text = self.erased_text
        for t in transforms:
            text = REINGEST_TRANSFORMS[t](text)
        content: Any = {"text": text} if "meta" not in transforms else {"text": "harmless"}
        meta = {"note": text} if "meta" in transforms else {}
        if "wrap" in transforms:
            content = {"outer": [content]}
        try:
            self.erased.record({"id": f"again-{self.executions}", "kind": "record", "content": content, "meta": meta})
        except WriteRefused as exc:
            assert exc.reason == "tombstone", exc
            return
        raise AssertionError(f"erased text re-ingested after {transforms}: {text!r}")

    def policy_yaml(self, text: str | bytes) -> None:
        from memsteward.policy.analysis import analyze
        from memsteward.policy.endpoints import EndpointRules
        from memsteward.policy.loader import PolicySchemaError, load_policy_source

        self.executions += 1
        try:
            analyze(load_policy_source(self._file("policy.yaml", text)), EndpointRules())
        except (InputError, PolicySchemaError):
            return


def strategies(t: Targets) -> dict[str, tuple[Callable[[Any], None], st.SearchStrategy]]:
    """target name → (function, strategy of inputs)."""
    import yaml

    policy_doc = yaml.safe_load(t.policy_text)
    cohort_lines = st.lists(st.one_of(mutations(t.case_doc).map(_dump), st.text(max_size=40)), max_size=3)
    return {
        "store": (t.store, st.one_of(mutations(t.store_doc).map(_dump), st.binary(max_size=200))),
        "event": (t.event, st.one_of(st.sampled_from(t.events).flatmap(mutations).map(_dump), st.binary(max_size=100))),
        "plan": (t.plan, st.one_of(mutations(t.plan_doc).map(_dump), st.binary(max_size=100))),
        "case": (t.case, st.one_of(mutations(t.case_doc).map(_dump), st.binary(max_size=100))),
        "cohort": (t.cohort, st.one_of(cohort_lines.map("\n".join), st.binary(max_size=200))),
        "policy": (t.policy_yaml, st.one_of(mutations(policy_doc).map(_yaml), st.binary(max_size=200))),
        "reingest": (t.reingest, st.lists(st.sampled_from(sorted(REINGEST_TRANSFORMS)), min_size=1, max_size=4)),
        "duplicate-keys": (t.duplicate_keys, st.one_of(
            *(duplicated(doc).map(lambda text, w=which: (w, text)) for which, doc in (
                ("store", t.store_doc), ("event", t.events[1]), ("plan", t.plan_doc), ("case", t.case_doc))))),
    }


def run_target(name: str, examples: int, workdir: Path, derandomize: bool = True) -> dict[str, Any]:
    """Fuzz one target for ``examples`` inputs; returns executions, time and the finding (if any).
    ``derandomize``: the same inputs every run (tests); ``make fuzz`` explores afresh each time."""
    t = Targets(workdir)
    fn, strategy = strategies(t)[name]
    finding: str | None = None

    @settings(max_examples=examples, deadline=None, derandomize=derandomize, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def check(doc: Any) -> None:
        fn(doc)

    start = time.perf_counter()
    try:
        check()
    except Exception as exc:  # noqa: BLE001 — a finding, reported with its minimal input
        finding = f"{type(exc).__name__}: {exc}"[:500]
    return {"target": name, "executions": t.executions, "seconds": time.perf_counter() - start, "finding": finding}


TARGETS = ("policy", "store", "event", "plan", "case", "cohort", "duplicate-keys", "reingest")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("--examples", type=int, default=500, help="inputs per target")
    ap.add_argument("targets", nargs="*", default=list(TARGETS))
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.targets:
            work = Path(tmp) / name
            work.mkdir()
            r = run_target(name, args.examples, work, derandomize=False)
            print(f"[fuzz] {name}: {r['executions']} executions in {r['seconds']:.1f}s; "
                  f"finding: {r['finding'] or 'none'}", flush=True)
            rows.append(r)
    from .common import machine, table

    m = machine()
    md = ("# Fuzzing record\n\n"
          f"`make fuzz` (`python -m bench.fuzz --examples {args.examples}`), commit `{m['commit']}`, {m['date']}. "
          "Hypothesis structure fuzzing (mutations of valid documents and raw bytes; `bench/fuzz.py`). "
          "A finding is any exception other than a clean `InputError`, or an accepted event that does not "
          "complete.\n\n"
          + table(["target", "executions", "seconds", "finding"],
                  [[r["target"], r["executions"], f"{r['seconds']:.1f}", r["finding"] or "none"] for r in rows])
          + "\n")
    path = Path(__file__).parent / "FUZZ.md"
    history = ""
    if path.exists():
        old = path.read_text()
        history = old[old.index("## Findings fixed"):] if "## Findings fixed" in old else ""
    path.write_text(md + ("\n" + history if history else ""))
    return 1 if any(r["finding"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
