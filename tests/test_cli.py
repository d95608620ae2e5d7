"""The CLI as a user meets it: help everywhere, one-line errors, no tracebacks."""
from __future__ import annotations

import pytest

from conftest import run_cli

COMMANDS = [[], ["ingest"], ["embed"], ["show"], ["search"], ["ask"], ["eval"], ["doctor"], ["db"], ["db", "upgrade"],
            ["db", "downgrade"], ["db", "status"], ["db", "url"], ["db", "stop"], ["db", "grant-reader"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "pipeline")
def test_every_command_has_help(command):
    result = run_cli(*command, "--help", timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: pipeline")


def test_top_level_help_lists_the_commands():
    out = run_cli("--help", timeout=60).stdout
    for name in ("ingest", "embed", "show", "search", "ask", "eval", "doctor", "db"):
        assert f"  {name} " in out


def test_unreachable_database_is_one_clear_line():
    result = run_cli("db", "status", env={"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}, timeout=60)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cannot connect to the database")
    assert "DATABASE_URL" in lines[0] and "Traceback" not in result.stderr


def test_password_in_database_url_is_never_printed():
    result = run_cli("db", "status", env={"DATABASE_URL": "postgresql://u:s3cret-pw@127.0.0.1:1/none"}, timeout=60)
    assert result.returncode == 1
    assert "s3cret-pw" not in result.stderr + result.stdout


@pytest.mark.parametrize("args", [["ingest"], ["ingest", "--all"], ["search", ""], ["db", "downgrade", "base"]])
def test_usage_errors_exit_2_without_traceback(args, scratch_url):
    result = run_cli(*args, env={"DATABASE_URL": scratch_url}, timeout=120)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Error:" in result.stderr
