"""The embedding queue's SQL that storing needs too: queue the texts that lack a vector, count what waits;
and the background worker's lock, which tells whether the queue is being drained now.

Draining the queue (the model's work) is pipeline.indexing.embed's; putting texts on it is part of
storing a version, so it lives with storage.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import asdict, dataclass

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


# The background embedding worker (pipeline.indexing.worker) holds this session-level advisory lock for
# its life: one worker a database, and any session can see whether one runs (pg_locks) and since when.
# The two-int form: pg_locks shows it as classid / objid with objsubid 2.
WORKER_LOCK = (int.from_bytes(b"embd", "big"), 1)


@dataclass(frozen=True)
class Worker:
    """The background embedding worker at work on this database: its server process, when it took the
    lock, and its progress read from the vectors it wrote since (their ``created_at``)."""

    pid: int  # the worker's backend (pg_stat_activity.pid), not its operating-system process
    since: dt.datetime
    embedded: int  # vectors written since ``since``
    queued: int  # texts waiting, every model's
    texts_per_second: float | None  # None before its first batch is in
    expected_end: dt.datetime | None

    def to_dict(self) -> dict:
        return asdict(self)


def try_worker_lock(conn: psycopg.Connection) -> bool:
    """Take the worker lock for ``conn``'s session (False: another worker holds it)."""
    return bool(one_row(conn.execute("SELECT pg_try_advisory_lock(%s, %s)", WORKER_LOCK))[0])


def release_worker_lock(conn: psycopg.Connection) -> None:
    conn.execute("SELECT pg_advisory_unlock(%s, %s)", WORKER_LOCK)


def _holder(conn: psycopg.Connection) -> tuple[int, dt.datetime, dt.datetime] | None:
    """The worker lock's holder in this database: its backend's pid, when it connected, and now."""
    return conn.execute(
        """
        SELECT l.pid, a.backend_start, clock_timestamp() FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s AND l.objsubid = 2
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        """, WORKER_LOCK).fetchone()


def worker(conn: psycopg.Connection) -> Worker | None:
    """The background embedding worker of this database, with its progress; None when none runs."""
    if (row := _holder(conn)) is None:
        return None
    pid, since, now = row
    # A batch's vectors carry its transaction's start: n vectors over the time from the first batch's start.
    embedded, first = one_row(conn.execute("SELECT count(*), min(created_at) FROM embeddings WHERE created_at >= %s",
                                           (since,)))
    waiting = one_row(conn.execute("SELECT count(*) FROM embedding_queue"))[0]
    seconds = (now - first).total_seconds() if first is not None else 0.0
    rate = round(embedded / seconds, 2) if embedded and seconds > 0 else None
    end = now + dt.timedelta(seconds=waiting / rate) if rate else None
    return Worker(pid, since, embedded, waiting, rate, end)


def embedding_now(conn: psycopg.Connection) -> bool:
    """A background worker holds the lock: the texts without vectors are being embedded now, not forgotten."""
    return _holder(conn) is not None
