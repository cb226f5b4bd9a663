"""Tests for gaps the seed-5 whole-core mutation run (``bench/mutation-seed5.json``) found: each
docstring names the survivor it kills; each was seen failing with that mutant planted."""

from __future__ import annotations

import dataclasses
import os
import socket

import pytest

from memsteward.errors import EventHeld, InputError


def test_a_correct_event_built_in_code_with_a_bad_replacement_names_the_problem():
    """execute.py `f"replacement {a.id!r}: {problem[1]}"` → `problem[0]` survived: parse_event refuses
    a bad replacement first, so only an event built in code reaches check_inputs' own check; the
    message must say what is wrong (not the field again), and the field must name it."""
    from memsteward.policy.loader import load_policy
    from memsteward.repair.events import load_event
    from memsteward.repair.execute import check_inputs
    from memsteward.repair.plan import compute_plan
    from memsteward.store import Store

    store = Store.open("engine/data/repair/store.json")
    event = load_event("engine/data/repair/event-correct.json", store.snapshot())
    plan = compute_plan(load_policy("policies/default.yaml"), store, event, "mincut", "networkx")
    bad = dataclasses.replace(event, replacements=(event.replacements[0]._replace(meta={"corrected": float("nan")}),))
    with pytest.raises(InputError) as err:
        check_inputs(store, dataclasses.replace(plan, event=bad))
    assert str(err.value) == "replacement 'traj-lyon': not a finite number"
    assert err.value.field == "replacements[0].meta.corrected"


def test_the_physical_step_is_held_by_another_open_store_of_this_process(tmp_path):
    """store/erasure.py `_alive(row[0], …)` → `_alive(row[1], …)` survived: a lease held by another
    Store object of this very process is alive while that store is open (its owner id in the
    process's open set), so ``erase_physically`` through a second store must refuse it; with the
    host name passed as the owner it took the step over. Once the holder is closed, it may."""
    from test_mutation_store_leases import _event, _physical_rows, _set_lease

    from memsteward.store import Store

    path = str(tmp_path / "s.db")
    holder = Store.open(path, create=True)
    other = Store.open(path)
    try:
        e = _event(holder, "done")
        _set_lease(holder, e, holder.owner, socket.gethostname(), os.getpid(), None)
        with pytest.raises(EventHeld):
            other.erase_physically(e, [])
        assert _physical_rows(other, e) == []
        holder.close()
        assert other.erase_physically(e, [])["versions"] == 0 and len(_physical_rows(other, e)) == 1
    finally:
        holder.close()
        other.close()


def test_reindexing_more_than_50000_rows_of_known_ids_writes_every_row(tmp_path):
    """store/planning.py `for start in range(0, len(other), 50_000)` → step 50001 survived: the
    index rows of ids the store already holds go in by slices of 50,000, and no test wrote more than
    one slice, so a step past the slice size (every 50,001st row skipped) passed. 50,010 rows of
    known ids, then every one of them is in the lineage index."""
    from memsteward.repair.lineage import index_hashes
    from memsteward.store import Store

    s = Store.open(str(tmp_path / "s.db"), create=True)
    try:
        ids = [f"a{k}" for k in range(10)]
        texts = {i: " ".join(f"w{k}x{j}" for j in range(5_003)) for k, i in enumerate(ids)}
        s.record_many([{"id": i, "kind": "record", "content": "x"} for i in ids])
        want = sorted({(h, i) for i, c in texts.items() for h in index_hashes(c, s._keyed)})
        assert len(want) > 50_000
        with s.transaction():
            s._index(texts)
        got = sorted((int(h), i) for h, i in s.conn.execute("SELECT h, id FROM shingles"))
        assert set(want) <= set(got)
    finally:
        s.close()


@pytest.mark.parametrize(("word", "stem"), [("making", "making"), ("walking", "walk"), ("asked", "asked"),
                                          ("mapped", "mapp"), ("boxes", "boxe"), ("mashes", "mash"),
                                          ("cats", "cats"), ("plans", "plan")])
def test_the_grounding_stem_strips_a_suffix_only_from_a_word_longer_than_it_by_four(word, stem):
    """oracles.py `len(token) > len(suffix) + 3` → `+ 2` survived: the stem's length bound was never
    tested at its edge. A word three letters longer than a suffix keeps it, four letters longer loses
    it (``boxes`` is too short for ``es`` and loses only the ``s``), so the grounded oracle does not
    take ``cats`` for ``cat``."""
    from memsteward.repair.oracles import _stem

    assert _stem(word) == stem


def test_unique_sorted_drops_equal_ids_that_are_distinct_objects():
    """scope.py `n != ordered[k - 1]` → `is not` survived: ids read from a store are distinct string
    objects, so an id listed twice must be dropped by equality, as ``sorted(set(nodes))`` does."""
    from memsteward.repair.scope import _unique_sorted

    twice = ["".join(["n", str(k)]) for k in (2, 1, 2, 1)]
    assert twice[0] is not twice[2]
    assert _unique_sorted(twice) == sorted(set(twice)) == ["n1", "n2"]


def test_an_unreachable_default_config_location_means_the_defaults(tmp_path):
    """endpoints.py `except OSError:` (around the default location's ``is_file``) was not covered: a
    default config path the system cannot even stat (here a name longer than NAME_MAX: ENAMETOOLONG,
    which ``is_file`` raises rather than answering False) is optional, so the rules are the defaults;
    only a path named by MEMSTEWARD_CONFIG must be readable."""
    from memsteward.policy.endpoints import EndpointRules, _config

    unreachable = str(tmp_path / ("x" * 300))
    with pytest.raises(OSError):
        (tmp_path / ("x" * 300) / "memsteward" / "config.toml").is_file()
    assert _config({"XDG_CONFIG_HOME": unreachable}) == ("", {})
    assert EndpointRules.from_environment({"XDG_CONFIG_HOME": unreachable}) == EndpointRules.from_environment({})


def test_a_tag_only_the_support_holds_is_not_a_leak():
    """oracles.py `set(tags of text) - support_tags` → `^` survived: a markup tag is prompt scaffolding
    only when the text has it and no retained input does. A retained input with a tag the successor
    does not repeat is no problem; the successor repeating it is none either; a tag of its own is."""
    from memsteward.repair.oracles import grounding_problems

    support = ["<note>Alice lives in Lyon</note> and likes green tea"]
    for text in ("Alice lives in Lyon and likes green tea.", "<note>Alice lives in Lyon</note> and likes green tea."):
        assert grounding_problems(text, support, [], [], 0.5) == [], text
    assert "markup tags from the prompt" in grounding_problems("<records>Alice lives in Lyon.", support, [], [], 0.5)


def test_a_physical_step_taken_over_while_it_scanned_does_not_write_a_second_row(tmp_path):
    """store/erasure.py `self._physical_row(event_id) is not None` → `is None` survived: a store whose
    physical step was taken over while it scanned (its lease made to look dead: it names an exited
    pid) by a second store that then finished the step (its row written, the lease gone) must, on
    reaching its own final transaction, return that row and not write one of its own. Both stores are
    in this process, the take-over run from inside the first one's step; the lease logic is the
    same for a second process (test_mutation_store_leases races real ones)."""
    import subprocess
    import sys

    from test_mutation_store_leases import _event, _physical_rows, _set_lease

    from memsteward.store import Store

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    path = str(tmp_path / "s.db")
    slow, taker = Store.open(path, create=True), Store.open(path)
    try:
        e = _event(slow, "done")
        real = slow.driver.truncate_log
        taken = []

        def meanwhile(wait):  # noqa: ANN001, ANN202 — the slow process's own step, the take-over in between
            if not taken:
                _set_lease(slow, e, "publisher", socket.gethostname(), gone.pid, None)  # the holder looks dead
                taken.append(taker.erase_physically(e, []))
            return real(wait)

        slow.driver.truncate_log = meanwhile
        got = slow.erase_physically(e, [])
        assert len(taken) == 1 and got == taken[0]
        assert _physical_rows(slow, e) == [taken[0]]
    finally:
        slow.close()
        taker.close()
