"""ruff and mypy over the package (configured in pyproject.toml): any finding fails, with the tool's report."""
from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    done = _run("ruff", "check", "--no-cache", "--output-format", "concise", "pipeline")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing() -> None:
    # The cache outside the tree, one per checkout: a cold run costs ~20 s of CPU, a warm one a few.
    cache = Path(tempfile.gettempdir()) / f"pipeline-mypy-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]}"
    done = _run("mypy", "--cache-dir", str(cache))
    assert done.returncode == 0, done.stdout + done.stderr
