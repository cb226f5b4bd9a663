"""The deletion attestation a compliance reviewer reads (``memsteward audit``).

For one event it gathers, from the store's hash-chained audit log and version history:
when the barrier was applied and what it withdrew (MemoRepair §2.2), every republished
successor with the support it was built from, the failures still withdrawn, the roots'
erasure, the validation reports, and a list of checks — each re-derivable by anyone holding
the database:

* ``barrier-first`` — every withdrawal is logged before the first successor was staged;
* ``cascade-withdrawn`` — nothing of C(F) is servable except republished successors;
* ``support-retained`` — no successor's support is an erased root, an invalidated version, or a
  member of C(F) that was not itself republished (so none of it traces to the deleted data);
* ``validated`` — every republished successor passed all its oracles;
* ``failures-withdrawn`` — failed or blocked candidates (and so their dependents) stay withdrawn;
* ``erasure`` — every version built from a deleted root's content (the root's own versions and the
  versions of C(F) up to the event, and every version of a member not republished) is erased;
* ``physical-erasure`` — the keys of all N erased versions are destroyed (checked against the live
  key store) and the store seals every version at rest, so no plaintext of them is in the store's
  files; backups and replicas hold only ciphertext whose keys are gone (``audit --deep`` scans the
  bytes: memsteward.shred.deepscan);
* ``audit-chain`` — the audit log's hash chain verifies (tampering is detected).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import InputError
from ..store.api import Reader
from ..textsafe import markdown
from .auditchain import first_broken, signing_key, tombstone_commitment
from .execute import erasure_targets
from .plan import TransitionPlan


def attest(store: Reader, event_id: int | None = None, expect_head: str | None = None) -> dict[str, Any]:
    """The attestation of one event (the latest when ``event_id`` is None), as a JSON-ready dict."""
    ev = store.event(event_id)
    if ev is None:
        raise InputError(f"no event {event_id} in the store" if event_id is not None else "the store has no events",
                         file=store.path, field="event")
    eid, plan, event = ev["id"], ev["plan"], ev["event"]
    log = store.audit_log_of(eid)
    states = store.states()
    # the cascade is read from the hash-chained withdraw rows, not from the (unchained) plan
    cascade = sorted(r["artifact_id"] for r in log if r["action"] == "withdraw")
    roots = list(event["roots"])
    root_action = plan.get("roots", {})
    republished = [r["artifact_id"] for r in log if r["action"] == "republish"]
    staged = {r["artifact_id"]: r for r in log if r["action"] == "stage"}
    steps = {s["id"]: s for s in plan.get("executed", [])}
    successors = [_successor(i, staged.get(i), steps.get(i), states) for i in republished if i not in root_action]
    failures = [{"id": s["id"], "status": s["status"], "reason": s.get("error", ""),
                 "state_now": states.get(s["id"], ("?", 0))[0]}
                for s in plan.get("executed", []) if s["status"] in ("failed", "blocked")]
    erasure = _erasures(store, plan, cascade, republished)
    checks = [_pinned(ev, log, plan)] + _checks(store, log, plan, event, cascade, republished, successors,
                                                failures, erasure, states, expect_head)
    barrier = next((r for r in log if r["action"] == "barrier"), None)
    head = store.audit_head()
    return {
        "event": {"id": eid, "type": ev["type"], "roots": roots, "created": ev["created"], "status": ev["status"]},
        "barrier": {"at": barrier["at"] if barrier else None, "seq": barrier["seq"] if barrier else None,
                    "withdrawn": cascade},
        "policy": {"name": ev["policy"].get("name"), "tradeoff": plan.get("tradeoff"), "selector": plan.get("selector"),
                   "plugins": list(ev["policy"].get("plugins", []))},  # name + version, in the pinned digest
        "republished": successors,
        "still_withdrawn": sorted(i for i in cascade if i not in republished),
        "failures": failures,
        "roots": [{"id": r, "action": root_action.get(r, "withdrawn")} for r in roots],
        "erasure": erasure,
        "untracked": [{"id": i, **m} for i, m in sorted(plan.get("untracked", {}).items())],
        "checks": checks,
        "ok": all(c["ok"] for c in checks),
        "unverified": [c["check"] for c in checks if c.get("status") == "unverified"],
        "audit_head": head[1] if head else None,
    }


def check_records(store: Reader) -> tuple[int, str] | None:
    """(event id, problem) of the first event whose stored event, policy or plan differs from the
    SHA-256 digests its chained barrier / publish rows pin (``audit --check``); None when all match."""
    log = store.audit_log()
    by_event: dict[int, list[dict]] = {}
    for r in log:
        if r["event_id"] is not None:
            by_event.setdefault(int(r["event_id"]), []).append(r)
    for eid in store.event_ids():
        ev = store.event(eid)
        if ev is None:  # deleted between the two reads: a row the chain names is missing
            return eid, "the event's row is missing"
        result = _pinned(ev, by_event.get(eid, []), ev["plan"])
        if not result["ok"]:
            return eid, result["detail"]
    return erasure_mismatch(store, log)


def erasure_mismatch(store: Reader, log: list[dict]) -> tuple[int, str] | None:
    """(event id, problem) of the first chained ``erase`` row the store's data does not bear out: a
    version it erased holds content again or another digest, or the tombstones it pinned
    (:func:`~memsteward.repair.auditchain.tombstone_commitment`) were removed or altered. A log copied in from
    another store describes that store's erasures, not this one's (issue 25)."""
    versions, stones = store.erasure_state()
    for r in log:
        if r["action"] != "erase" or r["event_id"] is None:
            continue
        ident, eid, detail = r["artifact_id"], int(r["event_id"]), r["detail"]
        for v in detail.get("versions", []):
            if versions.get((ident, int(v["version"])), "") != v["sha256"]:
                return eid, (f"{ident!r} v{v['version']} is not erased as the chained erase row (seq {r['seq']}) "
                             "records: the store's versions differ from its audit log")
        pinned = detail.get("tombstones")
        if pinned is not None and tombstone_commitment(stones.get((ident, eid), [])) != pinned:
            return eid, (f"the tombstones of {ident!r} differ from those the chained erase row (seq {r['seq']}) "
                         "pins: a tombstone row was removed or altered")
    return None


def _pinned(ev: dict, log: list[dict], plan: dict) -> dict[str, Any]:
    """The stored event, policy and plan are the ones the chained audit rows name (SHA-256)."""
    barrier: dict[str, Any] = next((r["detail"] for r in log if r["action"] == "barrier"), {})
    publish = next((r["detail"] for r in log if r["action"] == "publish"), None)
    want_plan = (publish or barrier).get("plan_sha256")
    problems = [f"{what} differs from the one the audit log pins" for what, want in
                (("event", barrier.get("event_sha256")), ("policy", barrier.get("policy_sha256")), ("plan", want_plan))
                if want is None or ev["sha256"][what] != want]
    withdrawn = sorted(r["artifact_id"] for r in log if r["action"] == "withdraw")
    if plan.get("selector") != "no_action" and withdrawn != sorted(plan.get("barrier", [])):
        problems.append("the plan's barrier differs from the withdrawals in the audit log")
    return _check("records-pinned", not problems,
                  "event, policy and plan match the SHA-256 digests in the chained audit rows" if not problems
                  else problems[0])


def _successor(ident: str, stage: dict | None, step: dict | None, states: dict) -> dict[str, Any]:
    detail = (stage or {}).get("detail", {})
    return {"id": ident, "version": detail.get("version"), "mode": (step or {}).get("mode"),
            "support": detail.get("support", []), "forget": detail.get("forget", []),
            "validation": (step or {}).get("validation", []), "state_now": states.get(ident, ("?", 0))[0],
            "staged_at": (stage or {}).get("at")}


def _erasures(store: Reader, plan: dict, cascade: list[str], republished: list[str]) -> list[dict[str, Any]]:
    """For every artifact whose versions the event had to erase (the roots of a delete and
    everything of C(F) built from them), the versions that still hold content."""
    if plan.get("selector") == "no_action":
        return []
    tp = TransitionPlan.from_json(plan).replace(cascade=tuple(cascade))
    erase, scrub, _ = erasure_targets(tp, frozenset(republished))
    targets = {**scrub, **{r: None for r in erase}}
    held = store.versions_held(list(targets))  # one query for the event (not two per artifact)
    out = []
    for ident in sorted(targets, key=lambda i: (i not in erase, i)):
        limit = targets[ident]
        versions = [(v, e, c) for v, e, c in held.get(ident, []) if limit is None or v <= limit]
        kept = [v for v, erased, content in versions if not erased or content]
        out.append({"id": ident, "root": ident in erase or ident in tp.event.roots, "versions": len(versions),
                    "content_remaining": kept})
    return out


def _check(name: str, ok: bool, detail: str, looked: bool = True) -> dict[str, Any]:
    """One check: ``status`` is ``pass`` or ``fail`` when it looked, and ``unverified`` when it could
    not look (issue 25: a check that did not look never says pass). An unverified check does not fail
    the attestation (``ok`` stays true), but it is never shown as passing."""
    status = ("pass" if looked else "unverified") if ok else "fail"
    return {"check": name, "ok": ok, "status": status, "detail": detail}


def _checks(store: Reader, log: list[dict], plan: dict, event: dict, cascade: list[str], republished: list[str],
            successors: list[dict], failures: list[dict], erasure: list[dict], states: dict,
            expect_head: str | None = None) -> list[dict]:
    out = []
    withdraws = [r["seq"] for r in log if r["action"] == "withdraw"]
    stages = [r["seq"] for r in log if r["action"] == "stage"]
    first_stage = min(stages) if stages else None
    late = [s for s in withdraws if first_stage is not None and s > first_stage]
    out.append(_check("barrier-first", bool(withdraws or not cascade) and not late,
                      f"{len(withdraws)} withdrawals logged before the first of {len(stages)} staged successors"
                      if not late else f"withdrawal at audit row {late[0]} after staging began at row {first_stage}"))
    leaked = [i for i in cascade if states.get(i, ("?",))[0] in ("servable", "republished") and i not in republished]
    out.append(_check("cascade-withdrawn", not leaked,
                      f"none of the {len(cascade)} artifacts of C(F) is servable unless republished" if not leaked
                      else f"{leaked[0]} is servable without a validated successor"))
    out.append(_support_check(plan, event, cascade, republished, successors))
    unvalidated = [s["id"] for s in successors if not s["validation"] and s["mode"] != "root"
                   or any(not r.get("passed", False) for r in s["validation"])]
    out.append(_check("validated", not unvalidated,
                      f"{len(successors)} successors passed all their oracles" if not unvalidated
                      else f"{unvalidated[0]} was republished without passing its oracles"))
    exposed = [f["id"] for f in failures if f["state_now"] in ("servable", "republished")]
    out.append(_check("failures-withdrawn", not exposed,
                      f"{len(failures)} failed or blocked candidates stay withdrawn" if not exposed
                      else f"{exposed[0]} failed but is servable"))
    remaining = [e for e in erasure if e["content_remaining"]]
    roots_n = sum(1 for e in erasure if e["root"])
    out.append(_check("erasure", not remaining,
                      f"{roots_n} root(s) and {len(erasure) - roots_n} derived artifact(s): content removed from "
                      f"all {sum(e['versions'] for e in erasure)} versions built from the erased content"
                      if not remaining else f"{remaining[0]['id']} v{remaining[0]['content_remaining'][0]} "
                      "still holds content built from erased data"))
    out.append(_physical_check(store, log, erasure))
    broken = first_broken(store.audit_rows(), store.audit_head(), expect_head, store.audit_seal(), signing_key(),
                          store.audit_binding())
    out.append(_check("audit-chain", broken is None, "hash chain over the whole audit log verifies"
                      if broken is None else f"row {broken[0]}: {broken[1]}"))
    unborne = erasure_mismatch(store, log)
    out.append(_check("erasure-bound", unborne is None, "every chained erase row matches the store's erased "
                      "versions and tombstones" if unborne is None else f"event {unborne[0]}: {unborne[1]}"))
    return out


def _physical_check(store: Reader, log: list[dict], erasure: list[dict]) -> dict[str, Any]:
    """Crypto-shredding: the DEK of every version the event erased is gone from the key store (checked
    now, against the live key store, not only as recorded), and the store seals every version at rest,
    so no file — database, WAL, replica, backup — ever held their plaintext."""
    if not erasure:
        return _check("physical-erasure", True, "the event erased nothing")
    rows = [r["detail"] for r in log if r["action"] == "physical-erasure"]
    # one row per event since issue 25; a log from before may hold two (racing recovers): a scan that
    # found text outweighs a "not scanned" row written beside it
    row = next((d for d in rows if (d.get("scan") or {}).get("found")), rows[0] if rows else None)
    if row is None:
        return _check("physical-erasure", False, "no key destruction recorded (run `memsteward recover`)")
    if row.get("file") is False:
        return _check("physical-erasure", bool(row.get("complete")), "in-memory store: no file holds the content")
    if (row.get("scan") or {}).get("found"):  # a file scan recorded before key destruction found text
        where = ", ".join(f"{f}: {n}" for f, n in sorted(row["scan"]["found"].items()))
        return _check("physical-erasure", False, f"erased content found on disk ({where} fingerprints)")
    refs = [(r["artifact_id"], int(v["version"])) for r in log if r["action"] == "erase"
            for v in r["detail"].get("versions", [])]
    alive = store.keys_alive(refs)
    if alive:
        ident, version = alive[0]
        return _check("physical-erasure", False, f"the key of {ident} v{version} (one of {len(alive)} erased "
                      "versions) is not destroyed: its ciphertext, in any copy of the store, still decrypts")
    if row.get("key_checkpoint") is False:
        return _check("physical-erasure", False, "the key file's WAL was not checkpointed after the keys were "
                      "destroyed (a reader held it): their wrapped bytes may remain in it; run `memsteward recover`")
    if not row.get("sealed"):
        return _check("physical-erasure", False, f"the keys of all {len(refs)} erased versions are destroyed, but "
                      "the store was not sealed at rest (plaintext written before `memsteward store migrate "
                      "--encrypt` may remain in its files and backups)")
    said = (f"the keys of all {len(refs)} erased versions are destroyed; no plaintext of them is in the store's "
            f"files (sealed at rest: the database, its WAL, replicas and backups hold only ciphertext whose key "
            f"is gone; key store {row.get('key_store')})")
    if row.get("key_residue"):  # destroyed in the live key store, but copies of it are out of reach: say so
        return _check("physical-erasure", True, f"{said}; unverified: {row['key_residue']}", looked=False)
    return _check("physical-erasure", True, said)


def _shown_status(check: dict[str, Any]) -> str:
    status = check.get("status", "pass" if check["ok"] else "fail")
    return {"pass": "pass", "fail": "**FAIL**"}.get(status, "*unverified*")


def _support_check(plan: dict, event: dict, cascade: list[str], republished: list[str],
                   successors: list[dict]) -> dict[str, Any]:
    """No successor is built from deleted data: its inputs are retained artifacts outside C(F),
    fresh root versions (X_Δ, κ_e), or successors republished by this event (same version)."""
    in_cascade, roots = set(cascade), set(event["roots"])
    base = plan.get("base_versions", {})
    new_version = {s["id"]: s["version"] for s in successors}
    root_action = plan.get("roots", {})
    problems: list[str] = []
    for s in successors:
        for item in s["support"]:
            i, v = item["id"], item.get("version")
            if i in roots and root_action.get(i) == "erased":
                problems.append(f"{s['id']} was built from erased root {i}")
            elif i in roots:
                if v is None or v <= base.get(i, -1):
                    problems.append(f"{s['id']} was built from the invalidated version {v} of root {i}")
            elif i in in_cascade and (i not in republished or new_version.get(i) != v):
                problems.append(f"{s['id']} was built from {i} v{v}, an invalidated member of C(F)")
    n = sum(len(s["support"]) for s in successors)
    return _check("support-retained", not problems,
                  f"all {n} support inputs of {len(successors)} successors are retained or republished"
                  if not problems else problems[0])


# --------------------------------------------------------------------------- rendering


def render_markdown(a: dict[str, Any]) -> str:
    """The attestation as a Markdown document for a compliance review.

    Every value read from the store (ids, reasons, names, oracle reports, times) is escaped with
    :func:`memsteward.textsafe.markdown`, so it renders as inert text: an id cannot add a table
    row, a heading or a verdict, nor send terminal control sequences.
    """
    m = markdown
    e, b = a["event"], a["barrier"]
    ids = lambda xs: ", ".join(m(x) for x in xs)  # noqa: E731
    lines = [f"# Deletion attestation — event {m(e['id'])} ({m(e['type'])})", "",
             f"- **Roots (F):** {ids(e['roots'])}",
             f"- **Event recorded:** {m(e['created'])} — status {m(e['status'])}",
             f"- **Barrier applied:** {m(b['at'])} (audit row {m(b['seq'])}); withdrew {len(b['withdrawn'])} "
             f"artifacts of C(F): {ids(b['withdrawn'])}",
             f"- **Policy:** {m(a['policy']['name'])}, selector {m(a['policy']['selector'])}, "
             f"λ = {m(a['policy']['tradeoff'])}" + "".join(
                 f"; plugin {m(p.get('name'))} ({m(p.get('distribution'))} {m(p.get('version'))})"
                 for p in a["policy"].get("plugins", [])),
             f"- **Audit head:** {m(a['audit_head'])}", "",
             "## Checks", "", "| check | result | detail |", "|---|---|---|"]
    lines += [f"| {m(c['check'])} | {_shown_status(c)} | {m(c['detail'])} |" for c in a["checks"]]
    unverified = a.get("unverified") or []
    overall = ("CHECKS FAILED" if not a["ok"] else "all checks pass" if not unverified else
               f"no check failed; unverified: {', '.join(markdown(u) for u in unverified)}")
    lines += ["", f"**Overall: {overall}.**", "",
              "## Republished successors", ""]
    if not a["republished"]:
        lines.append("None: every affected artifact stays withdrawn.")
    for s in a["republished"]:
        support = ", ".join(f"{m(x['id'])}@v{m(x.get('version'))}" for x in s["support"]) or "—"
        oracles = ", ".join(f"{m(r.get('oracle'))}: {'pass' if r.get('passed') else 'fail'}"
                            for r in s["validation"]) or "—"
        forget = ", ".join(f"{m(x['id'])}@v{m(x.get('version'))}" for x in s["forget"]) or "—"
        lines += [f"- **{m(s['id'])}** v{m(s['version'])} ({m(s['mode'])}), staged {m(s['staged_at'])}, "
                  f"now {m(s['state_now'])}",
                  f"  - built from: {support}",
                  f"  - must not retain: {forget}",
                  f"  - validation: {oracles}"]
    lines += ["", "## Still withdrawn", "", ids(a["still_withdrawn"]) or "—", "", "## Failures", ""]
    lines += [f"- {m(f['id'])}: {m(f['status'])} — {m(f['reason'])} (now {m(f['state_now'])})"
              for f in a["failures"]] or ["None."]
    lines += ["", "## Roots", ""]
    lines += [f"- {m(r['id'])}: {m(r['action'])}" for r in a["roots"]]
    lines += ["", "## Untracked derivations (content scan)", ""]
    lines += [f"- {m(u['id'])}: shares {m(u.get('shared'))} word run(s) with root {m(u.get('root'))}; "
              "joined C(F) without a recorded influence edge" for u in a["untracked"]] or ["None found."]
    lines += ["", "## Erasure", ""]
    lines += [f"- {m(er['id'])}{' (root)' if er['root'] else ''}: {er['versions']} version(s) erased, content "
              f"remaining in {len(er['content_remaining'])}" for er in a["erasure"]] or ["Nothing to erase."]
    lines += ["", f"Re-check: `memsteward audit --store DB --event {int(e['id'])}` and "
              "`memsteward audit --store DB --check`."]
    return "\n".join(lines) + "\n"


Renderer = Callable[[dict[str, Any]], str]
