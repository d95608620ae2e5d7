"""Store an act's parsed text as a version: acts row, version, articles, chunks, embedding work.

One transaction per version, under an advisory lock on the act: a version that is visible is
complete, and two ingests of one act at once end with one version, not two.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import socket
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from pipeline.sources import chunk as chunking
from pipeline.storage import context, currency
from pipeline.core.act_id import parse_act_id
from pipeline.storage.db import pid_alive
from pipeline.storage.queue import enqueue_missing
from pipeline.core.errors import IngestError
from pipeline.sources.parse.model import Article, ParsedAct


@dataclass
class StoredVersion:
    eli: str
    status: str  # "new" | "unchanged"
    version_id: int
    version_no: int
    articles: int
    chunks: int
    changes: dict[str, list[str]] = field(default_factory=dict)
    queued: int = 0  # chunk texts newly waiting for an embedding


def _date(value: Any) -> dt.date | None:
    if not value or not isinstance(value, str):
        return None
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        return None


# A record made up for a local file with no ELI metadata beside it (ingest.local_meta) says so under
# this key: "local file NAME". The mirror's rebuilt records use the same key for another note
# ("reconstructed from a partial record"), so the value, not the key, tells a local record.
LOCAL_PROVENANCE = "_provenance"
LOCAL_FILE = "local file "


def local_record(path_name: str) -> dict:
    """The provenance entry of a record made up for the local file ``path_name``."""
    return {LOCAL_PROVENANCE: LOCAL_FILE + path_name}


def is_local_record(meta: dict) -> bool:
    return str(meta.get(LOCAL_PROVENANCE, "")).startswith(LOCAL_FILE)


def base_eli(meta: dict) -> str:
    """The act a consolidated text belongs to ("Tekst jednolity dla aktu"), else the act itself."""
    refs = (meta.get("references") or {}).get("Tekst jednolity dla aktu") or []
    for ref in refs:
        if isinstance(ref, dict) and ref.get("id"):
            return str(ref["id"])
    return str(meta["ELI"])


def valid_from(meta: dict) -> dt.date | None:
    """From when a text states the law: a consolidated text's legal status date, else entry into force."""
    for key in ("legalStatusDate", "entryIntoForce", "validFrom", "announcementDate", "promulgation"):
        if d := _date(meta.get(key)):
            return d
    return None


def upsert_act(conn: psycopg.Connection, meta: dict) -> dict:
    """The publication's record, currency included: refreshed on every ingest, changed text or not.

    Returns the record in effect. One made up for a local file (:func:`is_local_record`: no ELI metadata
    beside it) never replaces a record read from the ELI API: that one is kept (its base act, dates,
    currency and the time it was checked) and returned, since the file is a text of the same publication.
    """
    local = is_local_record(meta)
    row = conn.execute(
        """
        INSERT INTO acts (eli, publisher, year, pos, title, act_type, status, in_force, base_eli,
                          announcement_date, promulgation_date, legal_status_date, entry_into_force,
                          expiration_date, meta, updated_at, amended_after, change_date, checked_at)
        VALUES (%(eli)s, %(publisher)s, %(year)s, %(pos)s, %(title)s, %(type)s, %(status)s, %(in_force)s,
                %(base)s, %(ann)s, %(prom)s, %(lsd)s, %(eif)s, %(exp)s, %(meta)s, now(),
                %(amended_after)s, %(change_date)s, CASE WHEN %(local)s THEN NULL ELSE now() END)
        ON CONFLICT (eli) DO UPDATE SET
            title = EXCLUDED.title, act_type = EXCLUDED.act_type, status = EXCLUDED.status,
            in_force = EXCLUDED.in_force, base_eli = EXCLUDED.base_eli,
            announcement_date = EXCLUDED.announcement_date, promulgation_date = EXCLUDED.promulgation_date,
            legal_status_date = EXCLUDED.legal_status_date, entry_into_force = EXCLUDED.entry_into_force,
            expiration_date = EXCLUDED.expiration_date, meta = EXCLUDED.meta, updated_at = now(),
            amended_after = EXCLUDED.amended_after, change_date = EXCLUDED.change_date,
            checked_at = EXCLUDED.checked_at
        WHERE NOT (%(local)s AND NOT coalesce(acts.meta ->> %(provenance)s LIKE %(local_file)s, false))
        RETURNING meta
        """,
        {
            "eli": meta["ELI"], "publisher": meta.get("publisher"), "year": meta.get("year"),
            "pos": meta.get("pos"), "title": meta.get("title"), "type": meta.get("type"),
            "status": meta.get("status"), "in_force": meta.get("inForce"), "base": base_eli(meta),
            "ann": _date(meta.get("announcementDate")), "prom": _date(meta.get("promulgation")),
            "lsd": _date(meta.get("legalStatusDate")), "eif": _date(meta.get("entryIntoForce")),
            "exp": _date(meta.get("expirationDate")), "meta": Jsonb(meta), **currency.columns(meta),
            "local": local, "provenance": LOCAL_PROVENANCE, "local_file": LOCAL_FILE + "%",
        },
    ).fetchone()
    if row is not None:
        return meta
    return conn.execute("SELECT meta FROM acts WHERE eli = %s", (meta["ELI"],)).fetchone()[0]


def refresh_act(conn: psycopg.Connection, meta: dict) -> None:
    """Store changed metadata of an act whose text is unchanged (sync), under the act's lock."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(meta["ELI"]),))
        upsert_act(conn, meta)


def lock_key(name: str) -> int:
    """The advisory lock key for ``name`` (an act's ELI: its versions are written under it)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def store_version(
    conn: psycopg.Connection,
    meta: dict,
    parsed: ParsedAct,
    *,
    source_sha256: str,
    model: str | None,
    max_chars: int = chunking.DEFAULT_MAX_CHARS,
    overlap: int = chunking.DEFAULT_OVERLAP,
) -> StoredVersion:
    """Store ``parsed`` as the next version of the act unless its text equals the latest version's.

    Runs in its own transaction on ``conn``. ``model`` (an embedding model name) gets queue entries
    for chunk texts that have no embedding yet; None leaves embedding to a later ``pipeline embed``.
    """
    eli = meta["ELI"]
    articles = parsed.articles
    text_hash = chunking.text_sha256(articles)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(eli),))
        meta = upsert_act(conn, meta)
        latest = conn.cursor(row_factory=dict_row).execute(
            "SELECT version_id, version_no, text_sha256, article_count, chunk_count FROM act_versions "
            "WHERE eli = %s ORDER BY version_no DESC LIMIT 1",
            (eli,),
        ).fetchone()
        if latest and latest["text_sha256"] == text_hash:
            return StoredVersion(eli, "unchanged", latest["version_id"], latest["version_no"],
                                 latest["article_count"], latest["chunk_count"])

        chunks_by_article = [
            chunking.chunk_article(a, meta.get("title") or "", max_chars=max_chars, overlap=overlap) for a in articles
        ]
        n_chunks = sum(len(c) for c in chunks_by_article)
        # A new consolidated text is a new ELI: its changes are against the base act's text before it.
        previous = latest["version_id"] if latest else _previous_text(conn, base_eli(meta), eli, valid_from(meta))
        changes = _changes(conn, previous, articles) if previous else {}
        version_no = (latest["version_no"] + 1) if latest else 1
        version_id = insert_version(conn, eli, version_no, base_eli(meta), parsed.source_format, source_sha256,
                                    text_hash, valid_from(meta), len(articles), n_chunks, changes)
        ids = copy_articles(conn, version_id, ((ordinal, a.number, a.heading_path, a.repealed, a.text, _sha(a.text))
                                               for ordinal, a in enumerate(articles, start=1)))
        copy_chunks(conn, version_id, ((ids[ordinal], c.article, c.part, c.part_count, a.repealed, c.text, c.embed_text,
                                        c.content_sha256)
                                       for ordinal, (a, parts) in enumerate(zip(articles, chunks_by_article), start=1)
                                       for c in parts))
        chunk_ids = {(article_id, part): chunk_id for article_id, part, chunk_id in conn.execute(
            "SELECT article_id, part, chunk_id FROM chunks WHERE version_id = %s", (version_id,))}
        copy_pieces(conn, ((chunk_ids[ids[ordinal], c.part], c.embed_text, c.text)
                           for ordinal, parts in enumerate(chunks_by_article, start=1) for c in parts))
        # What each article refers to and the act's definitions (revision 0009), in the same transaction.
        context.write(conn, version_id, articles, base_eli(meta))
        # The BM25 statistics and postings of these chunks were written by the triggers on chunks, in
        # this transaction: no crash can leave a committed version that text search does not weigh.
        queued = enqueue_version(conn, version_id, model) if model else 0
    return StoredVersion(eli, "new", version_id, version_no, len(articles), n_chunks, changes, queued)


def insert_version(conn: psycopg.Connection, eli: str, version_no: int, base: str, source_format: str | None,
                   source_sha256: str, text_sha256: str, valid_from: dt.date | None, article_count: int,
                   chunk_count: int, changes: dict[str, list[str]]) -> int:
    """The act_versions row of a new version; its version_id."""
    return conn.execute(
        """
        INSERT INTO act_versions (eli, version_no, base_eli, source_format, source_sha256, text_sha256,
                                  valid_from, article_count, chunk_count, changes)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING version_id
        """,
        (eli, version_no, base, source_format, source_sha256, text_sha256, valid_from, article_count, chunk_count,
         Jsonb(changes)),
    ).fetchone()[0]


def copy_articles(conn: psycopg.Connection, version_id: int, rows: Iterable[tuple]) -> dict[int, int]:
    """COPY a version's articles given as (ordinal, article, heading_path, repealed, text, text_sha256);
    their article_id by ordinal."""
    with conn.cursor().copy(
        "COPY articles (version_id, ordinal, article, heading_path, repealed, text, text_sha256) FROM STDIN"
    ) as copy:
        for row in rows:
            copy.write_row((version_id, *row))
    return dict(conn.execute("SELECT ordinal, article_id FROM articles WHERE version_id = %s", (version_id,)).fetchall())


def copy_chunks(conn: psycopg.Connection, version_id: int, rows: Iterable[tuple]) -> None:
    """COPY a version's chunks given as (article_id, article, part, part_count, repealed, text, embed_text,
    content_sha256): the triggers on chunks keep the text search's statistics and postings."""
    with conn.cursor().copy(
        "COPY chunks (article_id, version_id, article, part, part_count, repealed, text, embed_text, content_sha256) "
        "FROM STDIN"
    ) as copy:
        for article_id, *rest in rows:
            copy.write_row((article_id, version_id, *rest))


def copy_pieces(conn: psycopg.Connection, chunks: Iterable[tuple[int, str, str]]) -> int:
    """COPY the pieces (pipeline.sources.chunk.chunk_pieces) of ``chunks`` given as (chunk_id, embed_text, text);
    returns how many were written."""
    written = 0
    with conn.cursor().copy("COPY chunk_pieces (chunk_id, piece, embed_text, content_sha256) FROM STDIN") as copy:
        for chunk_id, embed_text, text in chunks:
            for piece in chunking.chunk_pieces(embed_text, text):
                copy.write_row((chunk_id, piece.piece, piece.embed_text, piece.content_sha256))
                written += 1
    return written


def write_pieces(conn: psycopg.Connection, *, batch: int = 5000) -> int:
    """Write the pieces of every chunk that has none yet (chunks stored before revision 0006; ingest
    writes a version's pieces with its chunks); returns how many were written. Call it inside a
    transaction. Two `pipeline embed` workers back-filling at once go one after the other."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("chunk_pieces backfill"),))
    written = 0
    last = 0
    while rows := conn.execute(
        """
        SELECT c.chunk_id, c.embed_text, c.text FROM chunks c
        WHERE c.chunk_id > %s AND length(c.text) > %s
          AND NOT EXISTS (SELECT 1 FROM chunk_pieces p WHERE p.chunk_id = c.chunk_id)
        ORDER BY c.chunk_id LIMIT %s
        """,
        (last, chunking.PIECE_CHARS, batch),
    ).fetchall():
        written += copy_pieces(conn, rows)
        last = rows[-1][0]
    return written


def enqueue_version(conn: psycopg.Connection, version_id: int, model: str) -> int:
    """Queue the chunk and piece texts of a version that have no embedding for ``model``; returns how
    many were queued."""
    return enqueue_missing(conn, model, version_id=version_id)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _previous_text(conn: psycopg.Connection, base: str, eli: str, since: dt.date | None) -> int | None:
    """The stored version of another text of act ``base`` (its original, an earlier consolidated text)
    that a text of ``eli`` dated ``since`` follows: the newest dated on or before it (undated: any)."""
    row = conn.execute(
        """SELECT version_id FROM act_versions
           WHERE base_eli = %(base)s AND eli <> %(eli)s
             AND (%(since)s::date IS NULL OR valid_from IS NULL OR valid_from <= %(since)s)
           ORDER BY valid_from DESC NULLS LAST, version_id DESC LIMIT 1""",
        {"base": base, "eli": eli, "since": since}).fetchone()
    return row[0] if row else None


def _changes(conn: psycopg.Connection, previous_version: int, articles: list[Article]) -> dict[str, list[str]]:
    """Articles added, changed (text differs) and removed relative to the previous version."""
    old = dict(conn.execute("SELECT article, text_sha256 FROM articles WHERE version_id = %s ORDER BY ordinal",
                            (previous_version,)).fetchall())
    new = {a.number: _sha(a.text) for a in articles}
    return {
        "added": [n for n in new if n not in old],
        "changed": [n for n in new if n in old and old[n] != new[n]],
        "removed": [n for n in old if n not in new],
    }


# --- removal -------------------------------------------------------------------------------------

# `pipeline sync` holds this lock while it runs. Any constant key works; this one is "pipeline sync"
# read as bytes, apart from the per-act keys (lock_key).
SYNC_LOCK = int.from_bytes(b"pl-sync!", "big", signed=True)


class RemoveBusy(IngestError):
    """A sync runs: it could ingest the act again from the list it read before the removal."""


@dataclass
class Removed:
    act: str  # as asked for (canonical id)
    base: str  # the act removed, with every text of it (as sync's reports name it)
    acts: list[str]  # the ELI ids removed: the base act and its consolidated texts that were stored
    versions: int
    chunks: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def remove_act(conn: psycopg.Connection, act: str) -> Removed:
    """Delete an act with every stored text of it (the base act and its consolidated texts, all their
    versions), in one transaction. The search statistics follow by the chunks' triggers; the vectors
    stay (keyed by text, they cost nothing to keep and spare the embedding if the act comes back);
    queue rows left with no text are dropped; ingest_runs keep their history. Raises ActNotFound."""
    from pipeline.storage.articles import ActNotFound

    eli = str(parse_act_id(act))
    with conn.transaction():
        if not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (SYNC_LOCK,)).fetchone()[0]:
            raise RemoveBusy("a pipeline sync is running and could ingest the act again; "
                             "remove it when the sync has finished")
        row = conn.execute("SELECT base_eli FROM acts WHERE eli = %(e)s OR base_eli = %(e)s LIMIT 1",
                           {"e": eli}).fetchone()
        if row is None:
            raise ActNotFound(f"{eli} is not in the database (pipeline acts --all lists what is)")
        base = row[0]
        elis = [r[0] for r in conn.execute("SELECT eli FROM acts WHERE base_eli = %s ORDER BY eli", (base,))]
        for e in sorted({base, *elis}):  # as ingest takes them: no version of the act is being written
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(e),))
        versions, chunks = conn.execute(
            "SELECT count(DISTINCT v.version_id), count(c.chunk_id) FROM act_versions v "
            "LEFT JOIN chunks c USING (version_id) WHERE v.eli = ANY(%s)", (elis,)).fetchone()
        conn.execute("DELETE FROM acts WHERE eli = ANY(%s)", (elis,))  # versions, articles, chunks cascade
        conn.execute("DELETE FROM embedding_queue q WHERE NOT EXISTS "
                     "(SELECT 1 FROM embedding_texts t WHERE t.content_sha256 = q.content_sha256)")
    return Removed(eli, base, elis, versions, chunks)


# --- ingest run log (autocommit: a failed ingest still leaves its record) ---------------------

def start_run(url: str, eli: str | None, source: str) -> int:
    host = socket.gethostname()
    with psycopg.connect(url, autocommit=True) as conn:
        # Runs of this host whose process is gone (kill -9, power loss) never finished: say so.
        for run_id, pid in conn.execute(
            "SELECT run_id, pid FROM ingest_runs WHERE status = 'running' AND host = %s", (host,)
        ).fetchall():
            if pid and pid != os.getpid() and not pid_alive(pid):
                conn.execute(
                    "UPDATE ingest_runs SET status = 'failed', finished_at = now(), "
                    "message = 'process ended before the run finished (killed?)' "
                    "WHERE run_id = %s AND status = 'running'",
                    (run_id,),
                )
        return conn.execute(
            "INSERT INTO ingest_runs (eli, source, host, pid) VALUES (%s, %s, %s, %s) RETURNING run_id",
            (eli, source, host, os.getpid()),
        ).fetchone()[0]


def finish_run(url: str, run_id: int, status: str, *, version_id: int | None = None, message: str | None = None,
               stats: dict | None = None) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE ingest_runs SET finished_at = now(), status = %s, version_id = %s, message = %s, stats = %s "
            "WHERE run_id = %s",
            (status, version_id, message, Jsonb(json.loads(json.dumps(stats or {}, default=str))), run_id),
        )
