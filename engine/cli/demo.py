"""`memsteward demo`: the main job on bundled data (grows as the engine grows)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import click

from ..errors import InputError
from ..policy.analysis import analyze
from ..policy.compare import compare
from ..policy.loader import load_policy_source
from .common import handle_errors


def bundled(*parts: str) -> Path:
    """Path of bundled data shipped in the package (engine/data/...)."""
    return Path(str(resources.files("memsteward").joinpath("data", *parts)))


def _section(title: str) -> None:
    click.echo("")
    click.secho(f"== {title} ", bold=True, nl=False)
    click.echo("=" * max(0, 70 - len(title)))


def demo_policies(echo: Callable[[str], None] = click.echo) -> None:
    """Check the bundled policies with Z3 and compare two of them."""
    for path in sorted(bundled("policies").glob("*.yaml")):
        src = load_policy_source(path)
        findings = analyze(src)
        errors = sum(f.severity == "error" for f in findings)
        echo(f"  memsteward check {EXPORT_DIR}/policies/{path.name:<20} {len(src.policy.modes)} rules, "
             f"{'total over the domain' if not errors else f'{errors} error(s)'}")
    old = load_policy_source(bundled("policies", "default.yaml")).policy
    new = load_policy_source(bundled("policies", "assistant.yaml")).policy
    diffs = compare(old, new)
    echo(f"  memsteward compare {EXPORT_DIR}/policies/default.yaml {EXPORT_DIR}/policies/assistant.yaml: "
         f"{len(diffs)} differing region(s), e.g.")
    for d in diffs[:3]:
        echo(f"    {d.verdict:<8} {d.cell.describe()}: {d.old.describe()} → {d.new.describe()}")


def demo_audit(echo: Callable[[str], None] = click.echo) -> None:
    """Apply the bundled delete event to a SQLite store and print its attestation's checks."""
    import os
    import shutil
    import tempfile

    from ..policy.loader import load_policy
    from ..repair.artifacts import parse_store_document, read_json
    from ..repair.attestation import attest
    from ..repair.events import load_event
    from ..repair.execute import run_event
    from ..shred.master import MASTER_KEY_ENV, MASTER_KEY_FILE_ENV, create_key_file
    from ..store.opening import open_store

    with tempfile.TemporaryDirectory(prefix="memsteward-demo-") as tmp:
        saved = {k: os.environ.pop(k, None) for k in (MASTER_KEY_ENV, MASTER_KEY_FILE_ENV)}
        os.environ[MASTER_KEY_FILE_ENV] = str(Path(tmp) / "master.key")  # the demo's own master key
        create_key_file(os.environ[MASTER_KEY_FILE_ENV])
        try:
            db = str(Path(tmp) / "demo.db")
            store = open_store(db, create=True)
            doc, text = read_json(str(bundled("repair", "store.json")))
            store.import_snapshot(parse_store_document(doc, "store.json", text))
            event = load_event(str(bundled("repair", "event-delete.json")), store)
            store.close()  # the last connection's close checkpoints the WAL into the file
            shutil.copyfile(db, str(Path(tmp) / "backup.db"))  # a backup taken before the delete
            store = open_store(db)
            run_event(store, load_policy(bundled("policies", "default.yaml")), event)
            a = attest(store)
            echo(f"  memsteward audit --store demo.db --event {a['event']['id']}   (delete of {', '.join(a['event']['roots'])})")
            for c in a["checks"]:  # the check's own status: one that could not look says so, never "pass"
                echo(f"    {shown_status(c):<10} {c['check']:<20} {c['detail']}")
            echo(f"  key destruction: {key_destruction(store, a['event']['id'])}")
            echo(f"  audit head {a['audit_head'][:16]}…  (`memsteward audit --check` re-verifies the hash chain)")
            roots = [x["content"] for x in doc["artifacts"] if x["id"] in a["event"]["roots"]]
            deep = store.deep_audit([str(Path(tmp) / "backup.db")], [json_text(r) for r in roots])
            echo(f"  memsteward audit --deep --backup backup.db: {'clean' if deep['clean'] else 'FAILED'} — "
                 f"{len(deep['decryptable'])} of the {deep['erased_versions']} erased versions decrypt from the backup "
                 f"taken before the delete; no plaintext of the deleted record in {len(deep['scan']['files'])} files "
                 f"(one pass each)" if deep["clean"] else "  memsteward audit --deep: erased content FOUND")
            store.close()
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v


def shown_status(check: dict[str, Any]) -> str:
    """``pass``, ``FAIL`` or ``unverified`` (a check that did not look is not shown as passing)."""
    return {"pass": "pass", "fail": "FAIL"}.get(check.get("status", "pass" if check["ok"] else "fail"), "unverified")


def key_destruction(store: Any, event_id: int) -> str:
    """What the event's ``physical-erasure`` row recorded of the key destruction, and the erased versions'
    keys checked again now against the live key store."""
    log = store.audit_log_of(event_id)
    row = next((r["detail"] for r in log if r["action"] == "physical-erasure"), None)
    if row is None:
        return "no key destruction recorded (run `memsteward recover`)"
    refs = [(r["artifact_id"], int(v["version"])) for r in log if r["action"] == "erase"
            for v in r["detail"].get("versions", [])]
    alive = store.keys_alive(refs)
    where = Path(str(row.get("key_store", "?"))).name
    wal = "its WAL checkpointed" if row.get("key_checkpoint") else "its WAL NOT checkpointed"
    return (f"{row.get('keys_destroyed', 0)} data keys destroyed in {where} at publication ({wal}); "
            f"{len(alive)} of the {len(refs)} erased versions' keys exist now")


def json_text(value: object) -> str:
    """A content's longest string (the text a reviewer would search for)."""
    from ..shred.deepscan import string_leaves

    return max(string_leaves(value), key=len, default="")


def demo_verify(echo: Callable[[str], None] = click.echo) -> None:
    """Prove the guarantee catalog with Z3 (the same run as `memsteward verify`)."""
    from memsteward.specs import CATALOG
    from memsteward.specs.verify import verify

    names = {g.id: g.name for g in CATALOG}
    for r in verify():
        echo(f"  {r.guarantee} {names[r.guarantee]:<26} {r.status:<8} {r.seconds:5.2f}s  {r.bound}")


# Later sections register here: (title, "module:function"), each function takes `echo`.
SECTIONS: list[tuple[str, str]] = [
    ("Policies: validation and Z3 analysis", "memsteward.cli.demo:demo_policies"),
    ("MemoRepair: barrier-first cascade repair (delete, correct, migrate)", "memsteward.repair.demo:run_repair_demo"),
    ("LangGraph: a governed agent memory store (memsteward.integrations.langgraph)",
     "memsteward.integrations.demo:run_langgraph_demo"),
    ("MeClear: query-scoped clearance of harmful memories", "memsteward.clearance.demo:run_clearance_demo"),
    ("Compliance: deletion attestation (memsteward audit)", "memsteward.cli.demo:demo_audit"),
    ("Guarantees: Z3 proofs (memsteward verify)", "memsteward.cli.demo:demo_verify"),
]


EXPORT_DIR = "demo-data"
"""Where the demo's hints expect the bundled data (``memsteward demo --export demo-data`` puts it there)."""
EXPORTED = ("policies", "repair", "cases")


def export_data(target: Path) -> list[Path]:
    """Copy the bundled policies, repair store/events and clearance cases into ``target`` (created if
    missing); an existing file is never overwritten (InputError, nothing copied)."""
    import shutil

    pairs = [(src, target / part / src.relative_to(bundled(part)))
             for part in EXPORTED for src in sorted(bundled(part).rglob("*")) if src.is_file()]
    clash = next((dst for _src, dst in pairs if dst.exists() or dst.is_symlink()), None)
    if clash is not None:
        raise InputError("already exists; export into a new or empty folder", file=str(clash))
    for src, dst in pairs:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    return [dst for _src, dst in pairs]


@click.command()
@click.option("--export", "export_dir", default=None, metavar="DIR",
              help="Copy the bundled policies, store, events and cases into DIR instead of running the demo "
                   f"(the demo's hints use DIR = {EXPORT_DIR}).")
@handle_errors
def demo(export_dir: str | None) -> None:
    """Run memsteward end to end on the bundled policies and data (no network needed)."""
    if export_dir is not None:
        files = export_data(Path(export_dir))
        click.echo(f"copied {len(files)} files into {export_dir}/ ({', '.join(EXPORTED)})")
        return
    click.echo("memsteward demo — bundled policies and data, offline evaluator and operators")
    for title, target in SECTIONS:
        module, func = target.split(":")
        _section(title)
        getattr(importlib.import_module(module), func)(click.echo)
    click.echo("")
    click.echo(f"done. Next: `memsteward demo --export {EXPORT_DIR}` (the data above, as files), then "
               f"`memsteward check {EXPORT_DIR}/policies/*.yaml`; `memsteward policy show default > my-policy.yaml` "
               "starts your own; `memsteward --help`.")
