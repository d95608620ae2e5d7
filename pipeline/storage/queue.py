"""The embedding queue's SQL that storing needs too: queue the texts that lack a vector, count what waits.

Draining the queue (the model's work) is pipeline.indexing.embed's; putting texts on it is part of
storing a version, so it lives with storage.
"""
from __future__ import annotations

from collections.abc import Sequence

import psycopg

from pipeline.storage.db import one_row


def enqueue_missing(conn: psycopg.Connection, model: str, *, version_id: int | None = None) -> int:
    """Queue the texts of chunks and their pieces (of one version, or all: after a model switch, say)
    that have no embedding for ``model``, and, when the model has a sparse head, the chunk texts without
    its sparse vector; returns how many were queued."""
    with conn.transaction():
        cur = conn.execute(
            """
            INSERT INTO embedding_queue (content_sha256, model)
            SELECT DISTINCT t.content_sha256, %(m)s
            FROM embedding_texts t JOIN chunks c USING (chunk_id)
            WHERE (%(v)s::bigint IS NULL OR c.version_id = %(v)s)
              AND (NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.content_sha256 = t.content_sha256 AND e.model = %(m)s)
                   OR (t.content_sha256 = c.content_sha256  -- the chunk's own text, not a piece's
                       AND EXISTS (SELECT 1 FROM sparse_models s WHERE s.model = %(m)s)
                       AND NOT EXISTS (SELECT 1 FROM sparse_embeddings s
                                       WHERE s.content_sha256 = t.content_sha256 AND s.model = %(m)s)))
            ON CONFLICT DO NOTHING
            """,
            {"m": model, "v": version_id},
        )
        return cur.rowcount


# A queue row's text belongs to one of the act versions %(versions)s (NULL: any): a chunk's or a piece's.
OF_VERSIONS = """(%(versions)s::bigint[] IS NULL OR q.content_sha256 IN (
    SELECT t.content_sha256 FROM embedding_texts t JOIN chunks c ON c.chunk_id = t.chunk_id
    WHERE c.version_id = ANY (%(versions)s)))"""


def queued(conn: psycopg.Connection, model: str, versions: Sequence[int] | None = None) -> int:
    """Texts waiting for ``model``: all, or those of the act ``versions``."""
    return one_row(conn.execute(f"SELECT count(*) FROM embedding_queue q WHERE q.model = %(model)s AND {OF_VERSIONS}",
                        {"model": model, "versions": None if versions is None else list(versions)}))[0]
