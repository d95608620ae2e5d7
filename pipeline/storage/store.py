"""Store an act's parsed text as a version: acts row, version, articles, chunks, embedding work.

One transaction per version, under an advisory lock on the act: a version that is visible is
complete, and two ingests of one act at once end with one version, not two.
"""
from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from pipeline.core.act_id import parse_act_id
from pipeline.core.errors import IngestError
from pipeline.sources import chunk as chunking
from pipeline.sources.chunk import Piece
from pipeline.sources.prepare import PreparedArticle, PreparedText
from pipeline.sources.record import LOCAL_FILE, PROVENANCE, EliRecord
from pipeline.storage import amendments, context, currency, derived, legal_time
from pipeline.storage.db import one_row
from pipeline.storage.queue import enqueue_missing


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


def upsert_act(conn: psycopg.Connection, record: EliRecord) -> EliRecord:
    """The publication's record, currency included: refreshed on every ingest, changed text or not.

    Returns the record in effect. One made up for a local file (:attr:`EliRecord.is_local`: no ELI
    metadata beside it) never replaces a record read from the ELI API: that one is kept (its base act,
    dates, currency and the time it was checked) and returned, since the file is a text of the same
    publication.
    """
    meta, dates = record.raw, record.dates
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
            "eli": record.eli, "publisher": meta.get("publisher"), "year": meta.get("year"),
            "pos": meta.get("pos"), "title": record.title, "type": record.act_type,
            "status": record.status, "in_force": record.in_force, "base": record.base_eli,
            "ann": dates.announced, "prom": dates.published, "lsd": dates.legal_status,
            "eif": dates.entry_into_force, "exp": dates.expiration, "meta": Jsonb(dict(meta)),
            **currency.columns(record),
            "local": record.is_local, "provenance": PROVENANCE, "local_file": LOCAL_FILE + "%",
        },
    ).fetchone()
    if row is not None:
        return record
    return EliRecord.read(one_row(conn.execute("SELECT meta FROM acts WHERE eli = %s", (record.eli,)))[0])


def record_in_effect(conn: psycopg.Connection, record: EliRecord) -> EliRecord:
    """The record a text of ``record``'s act is stored under: ``record``, unless it was made up for a local
    file and the ELI API's record of the act is stored (:func:`upsert_act` keeps that one)."""
    if not record.is_local:
        return record
    row = conn.execute("SELECT meta FROM acts WHERE eli = %s", (record.eli,)).fetchone()
    conn.rollback()
    stored = EliRecord.read(row[0], record.eli) if row else None
    return stored if stored is not None and not stored.is_local else record


def refresh_act(conn: psycopg.Connection, record: EliRecord) -> None:
    """Store the changed record of an act whose text is unchanged (sync), under the act's lock, with what is
    derived from it (its texts' time, the wordings its list of amending acts decides: storage.derived)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(record.eli),))
        upsert_act(conn, record)
        derived.refresh(conn, [record.eli])


def lock_key(name: str) -> int:
    """The advisory lock key for ``name`` (an act's ELI: its versions are written under it)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _latest(conn: psycopg.Connection, eli: str) -> dict | None:
    return conn.cursor(row_factory=dict_row).execute(
        "SELECT version_id, version_no, text_sha256, article_count, chunk_count FROM act_versions "
        "WHERE eli = %s ORDER BY version_no DESC LIMIT 1", (eli,)).fetchone()


def _unchanged(eli: str, latest: dict) -> StoredVersion:
    return StoredVersion(eli, "unchanged", latest["version_id"], latest["version_no"], latest["article_count"],
                         latest["chunk_count"])


def store_unchanged(conn: psycopg.Connection, record: EliRecord, text_sha256: str) -> StoredVersion | None:
    """The act's latest version when its wording is ``text_sha256`` already, with the act's record refreshed
    (as every ingest refreshes it) and what is derived from it; None when the text is new: prepare it and call
    :func:`store_version`. Saves preparing a text that is stored (a re-ingest, a sync of an unchanged act). Its
    own transaction."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(record.eli),))
        latest = _latest(conn, record.eli)
        if latest is None or latest["text_sha256"] != text_sha256:
            return None
        before = conn.execute("SELECT meta FROM acts WHERE eli = %s", (record.eli,)).fetchone()
        upsert_act(conn, record)
        if before is None or before[0] != dict(record.raw):
            # A new record may date or list what the derived data reads; the same text and record change nothing
            # (an identical rerun of the whole mirror spent 22 of its 29 s working its wordings out again).
            derived.refresh(conn, [record.eli])
        return _unchanged(record.eli, latest)


def store_version(conn: psycopg.Connection, text: PreparedText, *, model: str | None) -> StoredVersion:
    """Store ``text`` as the next version of its act unless its wording equals the latest version's.

    Runs in its own transaction on ``conn``. ``model`` (an embedding model name) gets queue entries
    for chunk texts that have no embedding yet; None leaves embedding to a later ``pipeline embed``.
    """
    eli = text.record.eli
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(eli),))
        record = upsert_act(conn, text.record)
        base, since = record.base_eli, record.text_date
        latest = _latest(conn, eli)
        if latest and latest["text_sha256"] == text.text_sha256:  # stored meanwhile by another ingest
            return _unchanged(eli, latest)

        articles = text.articles
        # A new consolidated text is a new ELI: its changes are against the base act's text before it.
        previous = latest["version_id"] if latest else _previous_text(conn, base, eli, since)
        changes = _changes(conn, previous, articles) if previous else {}
        version_no = (latest["version_no"] + 1) if latest else 1
        version_id = insert_version(conn, eli, version_no, base, text.source_format, text.source_sha256,
                                    text.text_sha256, since, len(articles), text.chunk_count, changes)
        ids = copy_articles(conn, version_id, ((ordinal, p.article.number, p.article.heading_path,
                                                p.article.repealed, p.article.text, p.text_sha256, p.article.wording)
                                               for ordinal, p in enumerate(articles, start=1)))
        copy_chunks(conn, version_id, ((ids[ordinal], c.article, c.part, c.part_count, p.article.repealed, c.text,
                                        c.embed_text, c.content_sha256)
                                       for ordinal, p in enumerate(articles, start=1) for c in p.chunks))
        chunk_ids = {(article_id, part): chunk_id for article_id, part, chunk_id in conn.execute(
            "SELECT article_id, part, chunk_id FROM chunks WHERE version_id = %s", (version_id,))}
        copy_pieces(conn, ((chunk_ids[ids[ordinal], c.part], piece)
                           for ordinal, p in enumerate(articles, start=1)
                           for c, pieces in zip(p.chunks, p.pieces, strict=True) for piece in pieces))
        # What each article refers to and the act's definitions (revision 0009), in the same transaction.
        context.write(conn, version_id, text.context)
        # What only the text says of time (revision 0010): its footnotes, the date it prints.
        legal_time.write_sources(conn, version_id, (p.article for p in articles), text.notes, text.printed_date, since,
                                 text.consolidated, text.act_date)
        # The changes it makes to other acts (revision 0011); resolved to stored acts when read.
        amendments.write(conn, version_id, text.amendments)
        # What is worked out from it and the other stored texts, in the same transaction: its time and that of
        # the texts it dates or repeals, the wordings rebuilt after it and after the texts it amends (queued below).
        derived.refresh(conn, [eli])
        # The BM25 statistics and postings of these chunks were written by the triggers on chunks, in
        # this transaction: no crash can leave a committed version that text search does not weigh.
        queued = enqueue_version(conn, version_id, model) if model else 0
    return StoredVersion(eli, "new", version_id, version_no, len(articles), text.chunk_count, changes, queued)


def insert_version(conn: psycopg.Connection, eli: str, version_no: int, base: str, source_format: str | None,
                   source_sha256: str, text_sha256: str, valid_from: dt.date | None, article_count: int,
                   chunk_count: int, changes: dict[str, list[str]]) -> int:
    """The act_versions row of a new version; its version_id."""
    return one_row(conn.execute(
        """
        INSERT INTO act_versions (eli, version_no, base_eli, source_format, source_sha256, text_sha256,
                                  valid_from, article_count, chunk_count, changes)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING version_id
        """,
        (eli, version_no, base, source_format, source_sha256, text_sha256, valid_from, article_count, chunk_count,
         Jsonb(changes)),
    ))[0]


def copy_articles(conn: psycopg.Connection, version_id: int, rows: Iterable[tuple]) -> dict[int, int]:
    """COPY a version's articles given as (ordinal, article, heading_path, repealed, text, text_sha256, wording);
    their article_id by ordinal."""
    with conn.cursor().copy(
        "COPY articles (version_id, ordinal, article, heading_path, repealed, text, text_sha256, wording) FROM STDIN"
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


def copy_pieces(conn: psycopg.Connection, pieces: Iterable[tuple[int, Piece]]) -> int:
    """COPY pieces (pipeline.sources.chunk.chunk_pieces) given as (chunk_id, piece); how many were written."""
    written = 0
    with conn.cursor().copy("COPY chunk_pieces (chunk_id, piece, embed_text, content_sha256) FROM STDIN") as copy:
        for chunk_id, piece in pieces:
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
        written += copy_pieces(conn, ((chunk_id, piece) for chunk_id, embed_text, text in rows
                                      for piece in chunking.chunk_pieces(embed_text, text)))
        last = rows[-1][0]
    return written


def enqueue_version(conn: psycopg.Connection, version_id: int, model: str) -> int:
    """Queue the chunk and piece texts of a version that have no embedding for ``model``; returns how
    many were queued."""
    return enqueue_missing(conn, model, version_id=version_id)


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


def _changes(conn: psycopg.Connection, previous_version: int,
             articles: list[PreparedArticle]) -> dict[str, list[str]]:
    """Articles added, changed (text differs) and removed relative to the previous version."""
    old: dict[str, str] = dict(conn.execute("SELECT article, text_sha256 FROM articles WHERE version_id = %s "
                                            "ORDER BY ordinal", (previous_version,)).fetchall())
    new = {p.article.number: p.text_sha256 for p in articles}
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


def stored_texts(conn: psycopg.Connection, elis: list[str]) -> set[str]:
    """The ids among ``elis`` that have a stored version: a published text does not change, so
    one stored is not fetched again (pipeline sync re-checks records and newer texts)."""
    rows = conn.execute("SELECT DISTINCT eli FROM act_versions WHERE eli = ANY(%s)", (elis,)).fetchall()
    return {r[0] for r in rows}


def remove_act(conn: psycopg.Connection, act: str) -> Removed:
    """Delete an act with every stored text of it (the base act and its consolidated texts, all their
    versions), in one transaction. The search statistics follow by the chunks' triggers; the vectors
    stay (keyed by text, they cost nothing to keep and spare the embedding if the act comes back);
    queue rows left with no text are dropped; ingest_runs keep their history. Raises ActNotFound."""
    from pipeline.storage.articles import ActNotFound

    eli = str(parse_act_id(act))
    with conn.transaction():
        if not one_row(conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (SYNC_LOCK,)))[0]:
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
        versions, chunks = one_row(conn.execute(
            "SELECT count(DISTINCT v.version_id), count(c.chunk_id) FILTER (WHERE c.rebuilt_id IS NULL) "
            "FROM act_versions v LEFT JOIN chunks c USING (version_id) WHERE v.eli = ANY(%s)", (elis,)))
        touched = derived.touched(conn, elis)  # the texts it dated, repealed or amended: known only before the delete
        conn.execute("DELETE FROM acts WHERE eli = ANY(%s)", (elis,))  # versions, articles, chunks cascade
        # Their time and wordings without it: a repeal or a date it brought goes with it, and what it added.
        derived.refresh(conn, before=touched)
        conn.execute("DELETE FROM embedding_queue q WHERE NOT EXISTS "
                     "(SELECT 1 FROM embedding_texts t WHERE t.content_sha256 = q.content_sha256)")
    return Removed(eli, base, elis, versions, chunks)
