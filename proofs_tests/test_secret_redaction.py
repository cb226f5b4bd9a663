"""No DSN password, key or token in any message (issue 25, item 2).

`--store 'postgresql://…/nosuchdb?password=…'` used to print the password verbatim in the error:
only the userinfo password was redacted. Now the userinfo password and the value of every query
parameter outside a short list of harmless ones are shown as ``***``, in every InputError
(whatever module raised it) and in the CLI's own lines.
"""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from memsteward.cli import main
from memsteward.errors import InputError
from memsteward.redaction import redact

SECRET = "hunter2-s3cr3t"
PG = os.environ.get("MEMSTEWARD_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.mark.parametrize("url", [
    f"postgresql://u:{SECRET}@h:5432/db",
    f"postgresql://u@h/db?password={SECRET}",
    f"postgresql://u@h/db?schema=s&sslpassword={SECRET}",
    f"postgres://u@h/db?sslkey=/k/{SECRET}&passfile={SECRET}",
    f"postgresql://u@h/db?token={SECRET}#frag{SECRET}",
    f"postgresql://u:{SECRET}@[::1]:5/db?PASSWORD={SECRET}",
])
def test_redact_hides_userinfo_and_query_secrets(url: str):
    shown = redact(url)
    assert SECRET not in shown and "***" in shown
    assert InputError("x", file=url).render().count(SECRET) == 0


def test_redact_keeps_harmless_parts():
    assert redact("postgresql://u@h:5/db?schema=s&sslmode=require") == "postgresql://u@h:5/db?schema=s&sslmode=require"


@pytest.mark.parametrize("where", ["query", "userinfo"])
@pytest.mark.parametrize("command", [["store", "export", "--store"], ["audit", "--check", "--store"],
                                     ["store", "serve", "--store"]])
def test_no_command_prints_a_dsn_password(command: list[str], where: str):
    base = PG.split("?")[0].rsplit("/", 1)[0]
    if where == "query":
        url = f"{base}/nosuchdb_memsteward?password={SECRET}"
    else:
        url = base.replace("://", f"://postgres:{SECRET}@", 1).replace("postgres@", "", 1) + "/nosuchdb_memsteward"
    result = CliRunner().invoke(main, [*command, url])
    assert result.exit_code == 2, result.output
    assert SECRET not in result.output and "Traceback" not in result.output
