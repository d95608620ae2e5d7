"""Rebuilt wordings as searchable rows (revision 0012): for each stored text, the wordings its articles have
after it, rebuilt from the stored changes (storage.amendments.rebuilt, the rule `show` applies), each with the
period it is the law and its chunks.

A period runs from the day a change takes effect to the day the next one does (open after the last); a day on
which no change applies to the article (every one undetermined) has no row: the official text holds. The
chunks are cut as an official article's are (sources.chunk) and written to ``chunks`` with ``rebuilt_id``:
their texts go through the embedding queue and the vectors by content hash, like any chunk's, and the text
search's triggers index them. Which wording a search reads on a day is the SQL interface's (sql/search.sql).

Worked out again, per text, whenever what it depends on is stored or removed (a new text, an amending act
stored or removed, its time worked out again), or the rules changed: storage.derived says when.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import psycopg
from psycopg.types.json import Jsonb

from pipeline.core.config import settings
from pipeline.sources import chunk as chunking
from pipeline.sources import instructions
from pipeline.sources.parse.model import Article
from pipeline.storage import amendments
from pipeline.storage.db import one_row
from pipeline.storage.queue import enqueue_missing

# Which rules rebuilt a text's wordings: the instructions' reader, this module's periods, and how a target
# resolves (sql/amendments.sql; targets-2: a title matches as the act's whole name).
REBUILDER = f"{instructions.EXTRACTOR}+periods-1+targets-2+parts-1"


def periods(text: str, changes_on) -> list[tuple[dt.date, dt.date | None, str, list[dict]]]:
    """The rebuilt wordings of one article of ``text``: (from, until, wording, changes applied), in order.
    ``changes_on(day)`` gives the changes after the text listed for ``day`` (storage.amendments.changes_after)."""
    days = sorted({c["in_force_from"] for c in changes_on(dt.date.max)
                   if c["in_force_from"] is not None and not c["whole_act"]})
    found: list[list] = []
    for i, day in enumerate(days):
        changes = changes_on(day)
        wording = amendments.rebuilt(text, changes)
        until = days[i + 1] if i + 1 < len(days) else None
        if wording is None:  # nothing applies from this day: the official text holds
            continue
        applied = [{"act": c["act"], "unit": c["unit"], "operation": c["operation"], "target_unit": c["target_unit"],
                    "in_force_from": c["in_force_from"].isoformat()} for c in changes if c["applied"]]
        if found and found[-1][1] == day and found[-1][2] == wording:
            found[-1][1] = until  # the same wording goes on
        else:
            found.append([day, until, wording, applied])
    return [tuple(f) for f in found]


def _targeted(conn: psycopg.Connection, version_id: int,
              articles: list[str]) -> list[tuple[int, str, list[str], bool, str]]:
    """The rows of the text's ``articles`` (those a stored act changes: storage.amendments.changes_by_article):
    (article_id, article, heading_path, repealed, text), in the text's order."""
    return conn.execute(
        "SELECT article_id, article, heading_path, repealed, text FROM articles "
        "WHERE version_id = %s AND article = ANY(%s) ORDER BY ordinal", (version_id, articles)).fetchall()


def refresh(conn: psycopg.Connection, version_id: int) -> int:
    """Rebuild the wordings of one stored text and write them with their chunks, replacing what was there
    (inside the caller's transaction); the chunks queued for every embedding model the store knows. How many
    wordings were written. Wordings that come out as they are stored are left alone: a text is refreshed
    whenever an act it depends on is stored, and rewriting its chunks (their text-search postings) is the
    cost, not working them out."""
    title = conn.execute("SELECT a.title FROM act_versions v JOIN acts a USING (eli) WHERE v.version_id = %s",
                         (version_id,)).fetchone()
    if title is None:
        conn.execute("DELETE FROM rebuilt_articles WHERE version_id = %s", (version_id,))
        return 0
    wanted = []
    by_article = amendments.changes_by_article(conn, version_id)
    for article_id, number, headings, repealed, official in _targeted(conn, version_id, list(by_article)):
        for start, until, wording, applied in periods(official, by_article[number]):
            wanted.append((article_id, number, headings, repealed, start, until, wording, applied))
    stored = conn.execute("SELECT article_id, in_force_from, in_force_until, text, rebuilt_from FROM rebuilt_articles "
                          "WHERE version_id = %s ORDER BY rebuilt_id", (version_id,)).fetchall()
    written = 0
    if stored != [(w[0], w[4], w[5], w[6], w[7]) for w in wanted]:
        conn.execute("DELETE FROM rebuilt_articles WHERE version_id = %s", (version_id,))  # their chunks cascade
        sizes = settings()
        for article_id, number, headings, repealed, start, until, wording, applied in wanted:
            rebuilt_id = one_row(conn.execute(
                "INSERT INTO rebuilt_articles (article_id, version_id, article, in_force_from, in_force_until, "
                "text, rebuilt_from) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING rebuilt_id",
                (article_id, version_id, number, start, until, wording, Jsonb(applied))))[0]
            _write_chunks(conn, version_id, article_id, rebuilt_id,
                          Article(number, wording, list(headings or []), repealed), title[0] or "",
                          sizes.chunk_chars, sizes.chunk_overlap)
            written += 1
    conn.execute("INSERT INTO rebuilt_extractions (version_id, rebuilder) VALUES (%s, %s) ON CONFLICT (version_id) "
                 "DO UPDATE SET rebuilder = excluded.rebuilder, rebuilt_at = now()", (version_id, REBUILDER))
    if written:
        for (model,) in conn.execute("SELECT model FROM embedding_models UNION SELECT model FROM embedding_queue"
                                     ).fetchall():
            enqueue_missing(conn, model, version_id=version_id)
    return written


def _write_chunks(conn: psycopg.Connection, version_id: int, article_id: int, rebuilt_id: int, article: Article,
                  title: str, max_chars: int, overlap: int) -> None:
    """COPY a rebuilt wording's chunks and their pieces, cut as an official article's (sources.chunk)."""
    chunks = chunking.chunk_article(article, title, max_chars=max_chars, overlap=overlap)
    with conn.cursor().copy("COPY chunks (article_id, version_id, article, part, part_count, repealed, text, "
                            "embed_text, content_sha256, rebuilt_id) FROM STDIN") as copy:
        for c in chunks:
            copy.write_row((article_id, version_id, c.article, c.part, c.part_count, article.repealed, c.text,
                            c.embed_text, c.content_sha256, rebuilt_id))
    ids: dict[int, int] = dict(conn.execute("SELECT part, chunk_id FROM chunks WHERE rebuilt_id = %s", (rebuilt_id,)).fetchall())
    with conn.cursor().copy("COPY chunk_pieces (chunk_id, piece, embed_text, content_sha256) FROM STDIN") as copy:
        for c in chunks:
            for piece in chunking.chunk_pieces(c.embed_text, c.text):
                copy.write_row((ids[c.part], piece.piece, piece.embed_text, piece.content_sha256))


def versions_amended_by(conn: psycopg.Connection, elis: Iterable[str]) -> list[int]:
    """The stored texts of the acts that the stored acts ``elis`` change (their rebuilt wordings depend on them)."""
    return [r[0] for r in conn.execute(
        "SELECT v.version_id FROM act_versions v WHERE v.base_eli IN ("
        "  SELECT c.target_base_act FROM amendment_changes c WHERE c.source_act = ANY(%(e)s)"
        "  AND c.target_base_act <> ALL(%(e)s)) ORDER BY v.version_id", {"e": list(elis)})]
