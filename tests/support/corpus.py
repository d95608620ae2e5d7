"""Acts as the tests store them: mirror texts parsed once per session, stored or ingested through the
product's own stages (pipeline.sources.prepare, pipeline.storage.store, pipeline.indexing.ingest), and
embedded in bulk."""
from __future__ import annotations

import functools
import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from support.database import create_database, once
from support.paths import CORPUS_ACTS, mirror_meta, mirror_text, require_mirror


@functools.cache
def parsed_act(act: str):
    """A mirror act's text, parsed once per session (the Labour Code PDF alone takes ~16 CPU-seconds)."""
    from pipeline.sources.parse.read import parse_text

    fmt, data = mirror_text(act)
    return parse_text(data, fmt)


def store_text(conn: psycopg.Connection, meta: dict, parsed: Any, *, source_sha256: str | None = None,
               model: str | None = None, max_chars: int = 1200, overlap: int = 200):
    """Store ``parsed`` (a ParsedAct) as the next version of the act ``meta`` (an ELI record) describes,
    as ingest stores it (prepared, then written): the StoredVersion."""
    from pipeline.sources.prepare import prepare
    from pipeline.sources.record import EliRecord
    from pipeline.storage import store

    text = prepare(EliRecord.read(meta), parsed, source_sha256=source_sha256 or "0" * 64, max_chars=max_chars,
                   overlap=overlap)
    return store.store_version(conn, text, model=model)


def store_mirror_act(conn: psycopg.Connection, act: str, *, model: str | None = None):
    """A mirror act stored as ingest stores it (its record, its text parsed once per session)."""
    fmt, data = mirror_text(act)
    return store_text(conn, mirror_meta(act), parsed_act(act), source_sha256=hashlib.sha256(data).hexdigest(),
                      model=model)


@contextmanager
def ingestion(conn: psycopg.Connection, url: str, *, model: str | None = None, archive_dir: Path | None = None,
              client: Any = None) -> Iterator[Any]:
    """An ingestion (pipeline.indexing.ingest.Ingestion) on ``conn``, its run log on its own connection to
    ``url``: ``.act(id, source_dir=…)``, ``.file(path)``, ``.document(record, data, fmt)``."""
    from pipeline.indexing.ingest import Ingestion
    from pipeline.storage.runs import RunLog

    with RunLog(url) as runs:
        yield Ingestion(conn, runs, model, archive_dir or Path(tempfile.mkdtemp(prefix="pl-archive-")), client=client)


def embed_in_bulk(conn: psycopg.Connection, embedder: Any, batch: int = 256) -> None:
    """Every stored text embedded by ``embedder``, its vectors written before the model's HNSW indexes
    exist, which are then built over them in bulk. What `pipeline embed` stores, built the way pgvector
    advises for a first load: a graph built from loaded rows costs the server a fraction of the same
    rows inserted into it batch by batch (~2 s against ~30 s for the corpus's sparse vectors). The
    queue is left empty."""
    from pipeline.embedders import sparse_head
    from pipeline.indexing import embed

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


def corpus_text(server_url: str) -> str:
    """The corpus acts stored without vectors, once for the run: the template the embedded corpora are
    copied from."""
    require_mirror()
    from pipeline.storage import db

    def build() -> str:
        url = create_database(server_url, "corpus_text")
        with db.connect(url) as c:
            for act in CORPUS_ACTS:
                assert store_mirror_act(c, act).status == "new"
        return url

    return once("corpus_text", build)


def embedded_copy(server_url: str, template_url: str, name: str, embedder: Any) -> str:
    """A copy of the template database with every chunk text embedded by ``embedder``."""
    from pipeline.indexing import embed
    from pipeline.storage import db

    url = create_database(server_url, name, copy_of=template_url)
    with db.connect(url) as c:
        embed_in_bulk(c, embedder)
        assert c.execute("SELECT count(*) FROM embeddings").fetchone()[0] > 800
        assert embed.enqueue_missing(c, embedder.name) == 0
    return url
