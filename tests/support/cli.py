"""Running `pipeline` in a test as a user would: its stdout, stderr and exit status."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys

from support.paths import REPO


def run_cli(*args: str, env: dict | None = None, input: str | None = None, timeout: float = 600,
            process: bool = False) -> subprocess.CompletedProcess:
    """Run `pipeline` with these arguments, as a user would: its stdout, stderr and exit status.

    By default in this process, through click's test runner: the same ``main`` with the same
    arguments, environment (``env`` on top of this process's), working folder and stdin, without the
    ~0.3 CPU-s that starting an interpreter and importing the package costs a child process (the
    suite runs `pipeline` a few hundred times). An exception that escapes the command's own handling
    is printed to stderr as the interpreter would print it, so "never a traceback" is still seen, and
    a command that outlives ``timeout`` ends this worker with every thread's stack (faulthandler)
    rather than hanging the suite. ``process=True`` starts the installed entry point in a child
    process instead: for what only a process shows (its start, signals, kill -9, its exit).
    """
    if process:
        return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True,
                              env={**os.environ, **(env or {})}, input=input, timeout=timeout, cwd=REPO)
    import faulthandler
    import traceback

    from click.testing import CliRunner

    from pipeline.interfaces.cli import main

    faulthandler.dump_traceback_later(timeout, exit=True)
    try:
        with contextlib.chdir(REPO):
            result = CliRunner().invoke(main, list(args), input=input, env=env, prog_name="pipeline")
    finally:
        faulthandler.cancel_dump_traceback_later()
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["pipeline", *args], result.exit_code, result.stdout, stderr)
