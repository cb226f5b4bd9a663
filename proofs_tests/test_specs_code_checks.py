"""Code-level checks (memsteward.specs.code_checks): they hold on the engine, and they reach it.

Three layers, each able to fail: the check holds on the real engine functions; the broken variant
shipped with each check is refuted with a counterexample input; and a bug planted *inside the
engine module itself* (monkeypatched, the way a one-line edit would change it) is refuted by the
unmodified check — so the check runs the engine's code, not a copy of it.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memsteward.clearance import attribution, selection
from memsteward.cli import main
from memsteward.repair import closure
from memsteward.repair import execute as execute_mod
from memsteward.specs.code_checks import CHECKS, run_check
from memsteward.store import Store

IDS = sorted(CHECKS)


@pytest.mark.parametrize("gid", IDS)
def test_code_check_holds_on_the_engine(gid: str):
    r = run_check(gid)
    assert r.proved and r.counterexample is None and r.inputs > 0, r.counterexample


@pytest.mark.parametrize("gid", IDS)
def test_broken_variant_is_refuted_with_a_counterexample(gid: str):
    r = run_check(gid, broken=True)
    assert not r.proved and r.counterexample


def _shapley_weight_off_by_one(monkeypatch):
    real = attribution.shapley_weight
    monkeypatch.setattr(attribution, "shapley_weight", lambda size, k: real(max(size - 1, 0), k))


def _select_last_tie(monkeypatch):
    def select(gain, admissible_set):
        best = max(gain[j] for j in admissible_set)
        return max(j for j in admissible_set if gain[j] >= best - selection.EPS)
    monkeypatch.setattr(selection, "select", select)


def _loo_sign(monkeypatch):
    real = attribution.loo
    monkeypatch.setattr(attribution, "loo", lambda game: {i: -d - 1.0 for i, d in real(game).items()})


def _closure_ignores_executability(monkeypatch):
    real = closure.max_weight_closure

    def mwc(cands, tradeoff, backend="networkx", **kw):
        return real([c.__class__(c.id, c.kind, c.arch, c.mode, c.operator, c.prerequisites, True, c.value, c.cost)
                     for c in cands], tradeoff, backend, **kw)
    monkeypatch.setattr(closure, "max_weight_closure", mwc)


def _publish_unvalidated(monkeypatch):
    real = execute_mod.validate
    monkeypatch.setattr(execute_mod, "validate", lambda *a, **k: (True, real(*a, **k)[1]))


def _erase_roots_only(monkeypatch):
    real = execute_mod.erasure_targets
    monkeypatch.setattr(execute_mod, "erasure_targets", lambda plan, rep: (real(plan, rep)[0], {}, real(plan, rep)[2]))


def _recover_ignores_a_published_event(monkeypatch):
    from memsteward.store.leases import Leases

    real = Leases.take_event
    monkeypatch.setattr(Leases, "take_event", lambda self, event_id: real(self, event_id) or True)


def _file_step_only_for_erased_roots(monkeypatch):
    from memsteward.store.erasure import Erasure

    real = Erasure.erase_physically

    def erase_physically(self, event_id, needles, *a, **k):
        ev = self.event()
        if ev is not None and ev["event"]["type"] == "correct":
            return None  # the bug: the file step runs for deletes only
        return real(self, event_id, needles, *a, **k)
    monkeypatch.setattr(Erasure, "erase_physically", erase_physically)


@pytest.mark.parametrize("gid, plant", [
    ("G1", _shapley_weight_off_by_one), ("G2", _loo_sign), ("G3", _select_last_tie),
    ("G4", _closure_ignores_executability), ("G5", _publish_unvalidated),
    ("G5-lease", _recover_ignores_a_published_event), ("G6", _erase_roots_only),
    ("G6-files", _file_step_only_for_erased_roots)],
    ids=["G1-weights", "G2-loo", "G3-ties", "G4-executability", "G5-publish-unvalidated",
         "G5-lease-retaken", "G6-roots-only", "G6-files-no-file-step-for-corrections"])
def test_bug_planted_in_the_engine_is_refuted(monkeypatch, gid: str, plant):
    plant(monkeypatch)
    r = run_check(gid)
    assert not r.proved and r.counterexample, f"{gid}'s code check did not notice a bug in the engine"


def test_g5_check_exercises_crashes_and_failures(monkeypatch):
    """The bounded G5 run is not vacuous: crashes happen, recoveries run, oracles reject."""
    seen = {"recover": 0, "failed": 0}
    orig_recover, orig_record = execute_mod.recover, Store.record_step

    def recover(*a, **k):
        seen["recover"] += 1
        return orig_recover(*a, **k)

    def record_step(self, event_id, ident, status, report):
        seen["failed"] += status == "failed"
        return orig_record(self, event_id, ident, status, report)
    monkeypatch.setattr(execute_mod, "recover", recover)
    monkeypatch.setattr(Store, "record_step", record_step)
    assert run_check("G5").proved
    assert seen["recover"] >= 20 and seen["failed"] >= 20, seen



def test_verify_cli_reports_model_and_code():
    r = CliRunner().invoke(main, ["verify", "-g", "G3", "--json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert row["result"] == "proved" and row["code"]["result"] == "proved" and row["code"]["inputs"] > 0
    assert row["code"]["broken_variant"]["refuted"] and row["code"]["broken_variant"]["counterexample"]
    text = CliRunner().invoke(main, ["verify", "-g", "G2"])
    assert text.exit_code == 0 and "code:  proved" in text.output and "broken variant" in text.output
    model_only = CliRunner().invoke(main, ["verify", "-g", "G2", "--model-only", "--json"])
    assert json.loads(model_only.stdout)[0]["code"] is None


def test_verify_json_lists_every_code_check_of_a_guarantee():
    r = CliRunner().invoke(main, ["verify", "-g", "G5", "--json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    checks = {c["guarantee"]: c for c in row["code_checks"]}
    assert set(checks) == {"G5", "G5-lease"} and row["code"] == checks["G5"]
    lease = checks["G5-lease"]
    assert lease["result"] == "proved" and "schedules" in lease["bound"] and lease["broken_variant"]["refuted"]


def test_verify_cli_fails_when_the_engine_is_broken(monkeypatch):
    _select_last_tie(monkeypatch)
    r = CliRunner().invoke(main, ["verify", "-g", "G3"])
    assert r.exit_code == 1 and "code counterexample" in r.output and "failed: G3" in r.output
