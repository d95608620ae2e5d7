"""The delegations of stored texts (revision 0013; read from the text by pipeline.sources.delegations): every
unit that authorises an organ to issue an act, per text. Worked out per text, as storage.derived says when."""
from __future__ import annotations

from collections.abc import Iterable

import psycopg
from psycopg.rows import dict_row

from pipeline.sources.delegations import READER, Delegation, read_all
from pipeline.sources.parse.model import Article

_COLUMNS = ("article", "unit", "organ", "form", "obligatory", "normative", "matter", "guidance", "in_agreement_with",
            "after_consulting", "in_amended_act", "text")


def write(conn: psycopg.Connection, version_id: int, found: Iterable[Delegation]) -> int:
    """Store a text's delegations (inside the caller's transaction), replacing what was there; how many."""
    conn.execute("DELETE FROM version_delegations WHERE version_id = %s", (version_id,))
    n = 0
    with conn.cursor().copy(f"COPY version_delegations (version_id, ordinal, {', '.join(_COLUMNS)}) FROM STDIN") as copy:
        for n, d in enumerate(found, start=1):
            copy.write_row((version_id, n, *(getattr(d, c) for c in _COLUMNS)))
    conn.execute("INSERT INTO delegation_extractions (version_id, reader) VALUES (%s, %s) ON CONFLICT (version_id) "
                 "DO UPDATE SET reader = excluded.reader, extracted_at = now()", (version_id, READER))
    return n


def refresh(conn: psycopg.Connection, version_id: int) -> int:
    """Read a stored text's delegations again from its stored articles (one wording of each)."""
    articles = [Article(number, text, list(headings or []), repealed, wording=wording)
                for number, text, headings, repealed, wording in conn.execute(
                    "SELECT article, text, heading_path, repealed, wording FROM articles WHERE version_id = %s "
                    "ORDER BY ordinal", (version_id,))]
    return write(conn, version_id, read_all(articles))


def of_article(conn: psycopg.Connection, version_id: int, article: str) -> list[dict]:
    """The delegations of one article of a stored text, in its order: {unit, organ, form, obligatory, normative,
    matter, guidance, in_agreement_with, after_consulting, in_amended_act, text} (docs/results.md)."""
    return conn.cursor(row_factory=dict_row).execute(
        f"SELECT {', '.join(c for c in _COLUMNS if c != 'article')} FROM version_delegations "
        "WHERE version_id = %s AND article = %s ORDER BY ordinal", (version_id, article)).fetchall()
