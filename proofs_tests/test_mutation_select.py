"""`make mutate`'s test selection (bench/mutation_select.py, bench/mutation.py): a mutant must run
against every test that could kill it.

The seed-1 run lost kills three ways: at most 60 covering tests per mutant, a module-level line
credited only to the test that happened to import its module, and a map made without PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path

from coverage import CoverageData

from bench.mutation import _shards, fits_budget, postgresql_problem, run_timeout
from bench.mutation_select import beyond_budget, coverage_map, import_time_lines, select_tests

SOURCE = '''\
A = 3
B = A + 1
def f(x, k=A):
    return x * k
@decorate
def g():
    return LIMIT
LIMIT = 5
SHARED = 7
class C:
    field: int = 0
    def m(self):
        return SHARED
def unused(y=2):
    return y
'''


def test_a_constant_reaches_the_lines_that_read_it_and_a_signature_its_body():
    lines = import_time_lines(SOURCE, elsewhere="from m import SHARED")
    assert lines[8] == frozenset({7})  # LIMIT = 5 is read by g's body only
    assert lines[3] == frozenset({4})  # f's default acts where f's body runs
    assert lines[14] == frozenset({15})
    # read at import (B = A + 1, a default k=A), read by another module, a decorator, a class body:
    # each reaches whatever the module does
    assert lines[1] is None and lines[2] is None
    assert lines[9] is None
    assert lines[5] is None
    assert lines[10] is None and lines[11] is None
    assert 4 not in lines and 7 not in lines and 13 not in lines  # function bodies run when called


def _data(tmp_path: Path, executed: dict[str, list[int]]) -> Path:
    """A real coverage data file in which test ``t`` executed ``executed[t]`` of engine/m.py."""
    (tmp_path / "engine").mkdir()
    module = tmp_path / "engine" / "m.py"
    module.write_text(SOURCE)
    data = CoverageData(basename=str(tmp_path / ".coverage"))
    for test, lines in executed.items():
        data.set_context(test)
        data.add_lines({str(module): lines})
    data.write()
    return tmp_path / ".coverage"


def test_module_level_lines_are_credited_to_the_tests_that_reach_them_not_to_the_first_importer(tmp_path):
    # t_import imported the module inside its body, so coverage records every import-time line
    # under it alone; t_limit calls g (reads LIMIT); t_f calls f; nobody calls unused
    data = _data(tmp_path, {"t_import|run": [1, 2, 3, 5, 6, 8, 9, 10, 11, 12, 14],
                            "t_limit|call": [7], "t_f|call": [4], "": []})
    cov = coverage_map([(data, tmp_path)], ["engine/m.py"])["engine/m.py"]
    assert cov[8] == ["t_import", "t_limit"]  # LIMIT = 5: not t_f, which never reads it
    assert cov[3] == ["t_f", "t_import"]
    assert cov[1] == cov[5] == cov[11] == ["t_f", "t_import", "t_limit"]
    assert cov[14] == ["t_import"]  # unused's default: no test runs its body
    assert cov[7] == ["t_limit"] and cov[4] == ["t_f"]


def test_a_line_imported_outside_any_test_goes_to_every_test_of_the_module(tmp_path):
    data = _data(tmp_path, {"": [1, 2, 3, 5, 6, 8, 9, 10, 11, 12, 14], "t_f|call": [4], "t_m|call": [13]})
    cov = coverage_map([(data, tmp_path)], ["engine/m.py"])["engine/m.py"]
    assert cov[10] == ["t_f", "t_m"]
    assert cov[9] == ["t_m"]  # SHARED is read only by C.m here


def test_every_passing_covering_test_is_selected_fastest_first():
    covering = [f"t{k}" for k in range(200)]
    durations = {t: (k % 7) + k / 1000 for k, t in enumerate(covering)}
    chosen = select_tests(covering, durations, passed=set(covering) - {"t3"})
    assert len(chosen) == 199 and "t3" not in chosen
    assert [durations[t] for t in chosen] == sorted(durations[t] for t in chosen)
    assert select_tests(covering, durations, set(covering), limit=5) == chosen[:5]


def test_a_time_budget_takes_the_fastest_tests_that_fit_and_always_one():
    durations = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 50.0}
    assert select_tests(list(durations), durations, set(durations), budget=6.0) == ["a", "b", "c"]
    assert select_tests(list(durations), durations, set(durations), budget=5.9) == ["a", "b"]
    assert select_tests(["d", "c"], durations, {"c", "d"}, budget=1.0) == ["c"]
    assert select_tests(list(durations), durations, set(durations), budget=None) == ["a", "b", "c", "d"]


def test_the_second_pass_runs_exactly_the_covering_tests_the_budget_left_out():
    durations = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 50.0, "e": 0.5}
    passing = set(durations) - {"e"}
    assert beyond_budget(list(durations), durations, passing, None, 6.0) == ["d"]
    assert beyond_budget(list(durations), durations, passing, None, 5.9) == ["c", "d"]
    assert beyond_budget(list(durations), durations, passing, None, None) == []
    assert beyond_budget(list(durations), durations, passing, 3, 1.0) == ["b", "c"]
    first = select_tests(list(durations), durations, passing, None, 2.5)
    assert first + beyond_budget(list(durations), durations, passing, None, 2.5) == \
        select_tests(list(durations), durations, passing)


def test_a_rerun_starts_only_if_its_whole_timeout_ends_by_the_deadline():
    """The timeout and second passes add nothing past the deadline: a rerun that could run past it is
    not started (seed 5 started reruns up to the deadline; they ended 3.6 minutes past it). A run's
    timeout is a minute plus the factor times the tests' mapped durations (10 s for an unmapped one)."""
    assert run_timeout(["a", "x"], {"a": 2.0}) == 60.0 + 3 * 12.0
    assert run_timeout(["a"], {"a": 2.0}, 10) == 80.0
    assert fits_budget(100.0, 50.0, 150.0)
    assert not fits_budget(100.0, 50.5, 150.0)
    assert not fits_budget(151.0, 0.0, 150.0)


def test_the_run_needs_postgresql_unless_told_otherwise():
    problem = postgresql_problem({}, without=False)
    assert problem is not None and "MEMSTEWARD_PG_DSN" in problem and "--no-postgresql" in problem
    assert postgresql_problem({"MEMSTEWARD_PG_DSN": "postgresql://x"}, without=False) is None
    assert postgresql_problem({}, without=True) is None


def test_the_map_shards_balance_the_files_by_cost():
    weights = {"a": 10.0, "b": 6.0, "c": 5.0, "d": 1.0}
    shards = _shards(list(weights), weights, 2)
    assert sorted(map(sorted, shards)) == [["a", "d"], ["b", "c"]]
    assert _shards(["a"], weights, 2) == [["a"]]


def test_a_resumed_run_keeps_the_earlier_rows_and_runs_only_the_rest_of_the_same_sample(tmp_path):
    from types import SimpleNamespace

    import pytest

    from bench.mutation import resumable, still_to_run

    def mutant(module: str, line: int, op: str, occ: int) -> SimpleNamespace:
        return SimpleNamespace(module_path=tmp_path / module, start_pos=(line, 4),
                               operator_name=f"core/{op}", occurrence=occ)

    plan = [mutant("engine/a.py", 3, "AddNot", 0), mutant("engine/a.py", 3, "AddNot", 1),
            mutant("engine/b.py", 9, "NumberReplacer", 0), mutant("engine/a.py", 7, "AddNot", 0)]
    done = [{"module": "engine/a.py", "line": 3, "operator": "AddNot", "occurrence": 1, "outcome": "killed"},
            {"module": "engine/b.py", "line": 9, "operator": "NumberReplacer", "occurrence": 0, "outcome": "survived"}]
    assert still_to_run(plan, done, tmp_path) == [plan[0], plan[3]]  # the sample's order, occurrence told apart
    assert still_to_run(plan, [], tmp_path) == plan
    earlier = {"seed": 4, "size": 560, "mutants": done}
    assert resumable(earlier, 4, 560, "b20f293") == done  # no commit recorded: taken on the caller's word
    assert resumable({**earlier, "commit": "b20f293"}, 4, 560, "b20f293") == done
    for seed, size, commit in ((5, 560, "b20f293"), (4, 561, "b20f293")):
        with pytest.raises(SystemExit, match="another sample"):
            resumable(earlier, seed, size, commit)
    with pytest.raises(SystemExit, match="commit 'b20f293' != 'abc1234'"):
        resumable({**earlier, "commit": "b20f293"}, 4, 560, "abc1234")


def test_a_kill_by_timeout_is_confirmed_or_undone_by_the_longer_rerun():
    from bench.mutation import after_recheck, score

    row = {"module": "engine/a.py", "line": 3, "operator": "AddNot", "occurrence": 0,
           "outcome": "killed", "killed_by": "timeout"}
    passed = after_recheck(row, {"outcome": "survived", "seconds": 40.0})
    assert passed["outcome"] == "survived" and "killed_by" not in passed  # the first timeout was the machine
    failed = after_recheck(row, {"outcome": "killed", "killed_by": "FAILED t.py::x", "seconds": 3.0})
    assert (failed["outcome"], failed["killed_by"]) == ("killed", "FAILED t.py::x")
    hung = after_recheck(row, {"outcome": "killed", "killed_by": "timeout", "seconds": 600.0})
    assert (hung["outcome"], hung["killed_by"]) == ("killed", "timeout (confirmed)")
    assert row["killed_by"] == "timeout"  # the run's own row is replaced, not edited in place
    s = score({"mutants": [row, passed, failed, hung]})
    assert (s["killed"], s["survived"], s["timeouts_unconfirmed"]) == (3, 1, 1)


def test_a_table_a_test_reads_directly_selects_that_test_file(tmp_path):
    # t_table only reads the module's table (no line of the module runs under it); t_f calls f
    data = _data(tmp_path, {"": [1, 2, 3, 5, 6, 8, 9, 10, 11, 12, 14], "proofs_tests/test_f.py::t_f|call": [4]})
    all_tests = ["proofs_tests/test_f.py::t_f", "proofs_tests/test_table.py::t_table[1]",
                 "proofs_tests/test_table.py::t_other", "proofs_tests/test_else.py::t_else"]
    tests = {"proofs_tests/test_table.py": "from m import SHARED\nassert SHARED == 7\n",
             "proofs_tests/test_f.py": "f(2)\n", "proofs_tests/test_else.py": "UNSHARED = 1\n"}
    cov = coverage_map([(data, tmp_path)], ["engine/m.py"], None, tests, all_tests)["engine/m.py"]
    assert cov[9] == ["proofs_tests/test_table.py::t_other", "proofs_tests/test_table.py::t_table[1]"]  # SHARED = 7
    assert cov[1] == ["proofs_tests/test_f.py::t_f"]  # A is named in no test file
    assert cov[4] == ["proofs_tests/test_f.py::t_f"]  # a function's line: coverage alone
    assert coverage_map([(data, tmp_path)], ["engine/m.py"])["engine/m.py"][9] == []  # without the texts
