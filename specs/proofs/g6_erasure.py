"""G6 erasure: after a delete, no version built from the deleted roots' content keeps it.

Content taint as a fixed point over the provenance DAG (artifacts numbered in topological order,
so every definition below is a function of lower-numbered artifacts):

    old_i   = root_i ∨ ∃ u < i: (inf_{u,i} ∨ hid_{u,i}) ∧ old_u            (content at the base version)
    C_i     = root_i ∨ ∃ u < i: (inf_{u,i} ∨ hid_{u,i} ∧ found_{u,i}) ∧ C_u  (cascade: influence edges plus
                                                                           untracked copies the content scan found)
    new_i   = rep_i ∧ ∃ u < i: (inf_{u,i} ∨ hid_{u,i}) ∧ (¬C_u ∧ old_u ∨ C_u ∧ rep_u ∧ new_u)
                                                                          (a republished successor built from retained
                                                                           support: inputs outside C(F), or successors)
    erased  = {old version of i : C_i} ∪ {new version of i : C_i ∧ ¬rep_i}  (the engine's rule, execute.erasure_targets)

``hid`` are derivations written without an influence edge (missing provenance); ``found`` says the
content scan matched them. Claim: ∀ i: (old_i ⇒ C_i) ∧ ¬new_i — every tainted version is erased —
under the assumption that the scan finds every untracked copy (``hid ⇒ found``).

Key destruction (crypto-shredding). Every version is sealed under its own DEK; a copy of its
ciphertext — the database, its WAL, a replica, a backup taken before the delete — decrypts iff the
DEK is alive. The engine destroys the DEK of every version it erases, in the publication
(``key_i = ¬erased(old version of i)``). Claim, second part: ∀ i: old_i ⇒ ¬key_i — no copy of a
tainted version decrypts, wherever it is.

Broken variants (each refuted): ``broken-roots-only`` erases the roots' versions only (the bug the
erasure issue reported); ``broken-no-scan`` drops the content scan (found = false);
``broken-kept-dek`` keeps the DEK of one erased version (any one: ``kept`` is free).
"""

from __future__ import annotations

import itertools

import z3

from .result import ProofResult, check_unsat, run

CLAIM = ("∀ i: old_i ⇒ erased(old version of i) ∧ its DEK destroyed (no copy of it decrypts, backups included); "
         "no republished successor carries root content")


def obligation(n: int, variant: str | None = None) -> tuple[z3.BoolRef, dict]:
    inf = {(u, v): z3.Bool(f"inf_{u}_{v}") for u, v in itertools.combinations(range(n), 2)}
    hid = {(u, v): z3.Bool(f"hid_{u}_{v}") for u, v in itertools.combinations(range(n), 2)}
    found = {(u, v): z3.Bool(f"found_{u}_{v}") for u, v in itertools.combinations(range(n), 2)}
    root = [z3.Bool(f"root_{i}") for i in range(n)]
    rep = [z3.Bool(f"rep_{i}") for i in range(n)]
    old, cas, new = [], [], []
    for i in range(n):
        ins = [u for u in range(i)]
        old.append(z3.Or(root[i], *[z3.And(z3.Or(inf[u, i], hid[u, i]), old[u]) for u in ins]))
        scanned = [z3.And(hid[u, i], found[u, i]) for u in ins] if variant != "broken-no-scan" else [False] * i
        cas.append(z3.Or(root[i], *[z3.And(z3.Or(inf[u, i], scanned[u]), cas[u]) for u in ins]))
        new.append(z3.And(rep[i], z3.Or(False, *[z3.And(z3.Or(inf[u, i], hid[u, i]),
                                                         z3.Or(z3.And(z3.Not(cas[u]), old[u]),
                                                               z3.And(cas[u], rep[u], new[u]))) for u in ins])))
    erased_old = root if variant == "broken-roots-only" else cas
    rules = [z3.Implies(rep[i], z3.Not(root[i])) for i in range(n)]  # a deleted root is never republished
    rules += [z3.Implies(rep[i], cas[i]) for i in range(n)]  # only candidates of C(F) are republished
    scan = [z3.Implies(hid[e], found[e]) for e in hid]  # the assumption: the scan finds untracked copies
    kept = z3.Int("kept")  # broken-kept-dek: the one erased version whose DEK destruction skips
    key = [z3.Or(z3.Not(erased_old[i]), z3.And(kept == i, variant == "broken-kept-dek")) for i in range(n)]
    claim = z3.And(*[z3.And(z3.Implies(old[i], z3.And(erased_old[i], z3.Not(key[i]))), z3.Not(new[i]))
                     for i in range(n)])
    return z3.And(*rules, *scan, z3.Not(claim)), {"root": root, "rep": rep, "inf": inf, "hid": hid, "old": old,
                                                  "key": key}


def _witness(syms: dict, n: int):
    def decode(m: z3.ModelRef) -> dict:
        val = lambda b: z3.is_true(m.eval(b, model_completion=True))  # noqa: E731
        return {"roots": [i for i in range(n) if val(syms["root"][i])],
                "influence": [f"{u}->{v}" for (u, v), b in syms["inf"].items() if val(b)],
                "untracked": [f"{u}->{v}" for (u, v), b in syms["hid"].items() if val(b)],
                "republished": [i for i in range(n) if val(syms["rep"][i])],
                "tainted": [i for i in range(n) if val(syms["old"][i])],
                "dek_alive": [i for i in range(n) if val(syms["key"][i])]}
    return decode


def prove(artifacts: int = 6, variant: str | None = None) -> ProofResult:
    def body() -> int:
        for n in range(1, artifacts + 1):
            negated, syms = obligation(n, variant)
            check_unsat(negated, f"n={n}", witness=_witness(syms, n))
        return artifacts

    return run("G6", CLAIM, f"every DAG (influence + untracked edges), roots and republished set on ≤ {artifacts} "
                            "artifacts", body)
