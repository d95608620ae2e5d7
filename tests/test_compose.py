"""docker-compose.yml is accepted by Compose (whichever CLI this machine has)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from support.paths import REPO


def _compose() -> list[str] | None:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_compose_file_is_valid_and_names_the_services():
    cmd = _compose()
    if cmd is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    result = subprocess.run([*cmd, "-f", str(REPO / "docker-compose.yml"), "config"], capture_output=True, text=True,
                            cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "pgvector/pgvector:pg17" in result.stdout
    assert "ollama/ollama" in result.stdout
    assert "capabilities" in result.stdout and "gpu" in result.stdout
