"""The CLI as a user meets it: help everywhere, one-line errors, no tracebacks."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from support.cli import run_cli
from support.paths import REPO

def _commands(group=None, path: tuple[str, ...] = ()) -> list[list[str]]:
    """Every command and group of `pipeline`, as the CLI itself defines them (a new one is in at once)."""
    import click

    from pipeline.interfaces.cli import main

    group = group or main
    found = [list(path)]
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += _commands(command, (*path, name))
        else:
            found.append([*path, name])
    return found


COMMANDS = _commands()


def test_the_command_list_is_every_command():
    assert {" ".join(c) for c in COMMANDS} >= {
        "", "ingest", "embed", "show", "diff", "search", "ask", "eval", "find", "acts", "sync", "remove", "doctor",
        "mcp", "serve", "db", "db upgrade", "db downgrade", "db status", "db url", "db stop", "db grant-reader"}


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "pipeline")
def test_every_command_has_help_and_is_documented(command):
    result = run_cli(*command, "--help", timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: pipeline")
    if command:  # docs/commands.md names it: the command's own line, or its group's ("db upgrade | status …")
        lines = (REPO / "docs" / "commands.md").read_text(encoding="utf-8").splitlines()
        assert any(f"pipeline {' '.join(command)}" in line or (f"pipeline {' '.join(command[:-1])} " in line
                                                              and command[-1] in line.split()) for line in lines)


def test_top_level_help_lists_the_commands():
    out = run_cli("--help", timeout=60).stdout
    for command in COMMANDS:
        if len(command) == 1:
            assert f"  {command[0]} " in out


def test_unreachable_database_is_one_clear_line():
    # The installed entry point in a process of its own: what a user's shell sees.
    result = run_cli("db", "status", env={"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}, timeout=60,
                     process=True)
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
    result = run_cli(*args, env={"DATABASE_URL": scratch_url}, timeout=120, process=True)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Error:" in result.stderr


def test_a_reader_that_leaves_the_pipe_early_ends_the_command_quietly(scratch_url):
    """`pipeline acts --json | head -c 0`: exit 1 without a word, as Python advises, rather than death by
    SIGPIPE (a disposition that would also end a command when a socket drops mid-write)."""
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "acts", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "DATABASE_URL": scratch_url}, cwd=REPO)
    proc.stdout.close()  # the reader is gone before the command writes
    stderr = proc.communicate(timeout=120)[1].decode()
    assert (proc.returncode, stderr) == (1, "")


@pytest.mark.parametrize(("args", "env", "code", "message"), [
    (["search", "urlop", "--mode", "text", "--as-of", "2025-02-30"], {}, 2,
     "Error: Invalid value for '--as-of': '2025-02-30' is not a valid date (day is out of range for month)"),
    (["search", "urlop", "--mode", "text", "--as-of", "1.06.2025"], {}, 2,
     "Error: Invalid value for '--as-of': '1.06.2025' is not a date in the form YYYY-MM-DD"),
    (["db", "upgrade", "--revision", "0099"], {}, 2, "Error: no revision '0099'; known: 0001, "),
    (["show", "DU/2025/277", "154", "--version", "1", "--as-of", "2025-06-01"], {}, 2,
     "Error: a version and a date each pick the text; give one of them (--version or --as-of)"),
    (["search", "urlop", "--mode", "text"], {"DATABASE_URL": "garbage"}, 1,
     "Error: DATABASE_URL is not a PostgreSQL URL; it should look like postgresql://user:password@host:5432/dbname"),
    (["acts"], {"DATABASE_URL": "", "PIPELINE_HOME": "{file}"}, 1, "Error: PIPELINE_HOME {file} cannot hold the embedded database: "),
], ids=["impossible date", "date in another form", "unknown revision", "version and date", "DATABASE_URL not a URL",
        "PIPELINE_HOME a file"])
def test_bad_settings_and_values_say_what_is_wrong_in_one_line(args, env, code, message, scratch_url, tmp_path):
    file = tmp_path / "home-is-a-file"
    file.write_text("")
    env = {"DATABASE_URL": scratch_url, **{k: v.replace("{file}", str(file)) for k, v in env.items()}}
    if not env["DATABASE_URL"]:
        del env["DATABASE_URL"]
    result = run_cli(*args, env=env, timeout=120)
    assert result.returncode == code, (result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(message.replace("{file}", str(file))), result.stderr
    assert "Traceback" not in result.stderr and "unexpected" not in result.stderr


def test_embedding_progress_in_a_log_is_lines_not_a_bar(monkeypatch, capsys):
    """Where stderr is no terminal (cron, CI), a progress bar draws nothing until it ends: lines instead."""
    from pipeline.interfaces.cli import render

    monkeypatch.setattr(render, "PROGRESS_LINE_SECONDS", 0.0)
    with render.progress_bar(5, "m") as advance:
        advance(2)
        advance(3)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "embedding (m): 5 text(s)"
    assert [line.split(",")[0] for line in lines[1:]] == ["embedding (m): 2/5", "embedding (m): 5/5"]
    assert "ETA" in lines[1] and "ETA" not in lines[2]


def test_a_question_or_an_id_given_as_a_dash_is_read_from_standard_input(stand_in_corpus_url, embedding_stand_in):
    """`echo "…" | pipeline ask -`: the question is what standard input says, not the text "-"; search,
    show and diff read their question or ids the same way, one argument at a time."""
    env = {"DATABASE_URL": stand_in_corpus_url, **embedding_stand_in.env()}
    question = "Ile dni urlopu na żądanie\nmogę wziąć w roku?\n"
    asked = run_cli("ask", "-", "--offline", "--json", input=question, env=env)
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout)["question"] == "Ile dni urlopu na żądanie\nmogę wziąć w roku?"
    searched = run_cli("search", "-", "--mode", "text", "--json", input="urlop na żądanie", env=env)
    named = run_cli("search", "urlop na żądanie", "--mode", "text", "--json", env=env)
    assert searched.returncode == 0 and json.loads(searched.stdout) == json.loads(named.stdout) != []
    shown = run_cli("show", "DU/2025/277", "-", "--json", input="\n167^2\n", env=env)
    assert shown.returncode == 0 and json.loads(shown.stdout)["article"] == "167^2", shown.stderr
    act = run_cli("show", "-", "154", "--json", input="DU/2025/277\n", env=env)
    assert act.returncode == 0 and json.loads(act.stdout)["act"] == "DU/2025/277", act.stderr
    both = run_cli("show", "-", "-", input="DU/2025/277\n154\n", env=env)
    assert both.returncode == 2 and "standard input already gave" in both.stderr
    empty = run_cli("ask", "-", "--offline", input="", env=env)
    assert empty.returncode == 2 and "standard input is empty" in empty.stderr
