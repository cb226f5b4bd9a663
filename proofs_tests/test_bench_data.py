"""The LoCoMo benchmarks take their data from ``--data`` or ``MEMSTEWARD_LOCOMO_DIR``, never a
hard-coded path: named without it they stop with one clear message (exit 2, no traceback)."""

from __future__ import annotations

import pytest

from bench.__main__ import main
from bench.meclear_locomo import MissingData, data_dir, require_data


def test_no_data_given_is_none_not_a_default_path():
    assert data_dir(None, env={}) is None
    with pytest.raises(MissingData, match="--data PATH .*MEMSTEWARD_LOCOMO_DIR"):
        require_data(None, env={})


def test_the_environment_variable_and_the_argument(tmp_path):
    assert require_data(None, env={"MEMSTEWARD_LOCOMO_DIR": str(tmp_path)}) == tmp_path
    assert require_data(tmp_path, env={"MEMSTEWARD_LOCOMO_DIR": "/nowhere"}) == tmp_path
    with pytest.raises(MissingData, match="'/nowhere/locomo' does not exist"):
        require_data("/nowhere/locomo", env={})


@pytest.mark.parametrize("argv", [["meclear_locomo"], ["meclear_llm", "--data", "/nowhere/locomo"]])
def test_named_without_data_exits_2_with_one_message(argv, monkeypatch, capsys):
    monkeypatch.delenv("MEMSTEWARD_LOCOMO_DIR", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert argv[0] in err and "--data PATH" in err and "MEMSTEWARD_LOCOMO_DIR" in err
    assert "Traceback" not in err
