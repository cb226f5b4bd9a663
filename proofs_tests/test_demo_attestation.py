"""`memsteward demo`'s attestation section: each check shown with its own status (an unverified one is
never printed as passing) and the key destruction of the delete shown, checked against the key store."""

from __future__ import annotations

import re

import memsteward.repair.attestation as attestation
from memsteward.cli.demo import demo_audit


def _demo() -> str:
    lines: list[str] = []
    demo_audit(lines.append)
    return "\n".join(lines)


def test_the_demo_shows_the_key_destruction():
    text = _demo()
    assert re.search(r"^ +pass +physical-erasure +the keys of all 9 erased versions are destroyed", text, re.M)
    assert re.search(r"key destruction: 9 data keys destroyed in demo\.db\.keys at publication \(its WAL "
                     r"checkpointed\); 0 of the 9 erased versions' keys exist now", text)


def test_an_unverified_check_is_not_printed_as_passing(monkeypatch):
    real = attestation.attest

    def residue(store, *args, **kwargs):  # as when copies of the key store are out of this process's reach
        a = real(store, *args, **kwargs)
        for c in a["checks"]:
            if c["check"] == "physical-erasure":
                c["status"] = "unverified"
        return a
    monkeypatch.setattr(attestation, "attest", residue)
    text = _demo()
    assert re.search(r"^ +unverified +physical-erasure", text, re.M)
    assert not re.search(r"^ +pass +physical-erasure", text, re.M)
