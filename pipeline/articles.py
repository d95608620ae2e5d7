"""Look up one article of a stored act (current, as of a date, or a given version)."""
from __future__ import annotations

import datetime as dt
import re
from contextlib import closing

import psycopg
from psycopg.rows import dict_row

from . import currency
from .act_id import parse_act_id
from .errors import ArticleNotFound
from .parse.numbering import SUPERSCRIPT_DIGITS, SUPERSCRIPTS



def canonical_article(text: str) -> str:
    """'art. 151¹' / 'Art. 151^1.' / '151^1' -> '151^1'; '22¹c' -> '22^1c'."""
    s = text.strip()
    s = re.sub(r"^(art\.?|artykuł)\s*", "", s, flags=re.IGNORECASE).rstrip(".").replace(" ", "")
    s = re.sub(f"([{SUPERSCRIPTS}]+)", lambda m: "^" + m.group(1).translate(SUPERSCRIPT_DIGITS), s)
    if not re.fullmatch(r"\d+(\^\d+)?[a-z]{0,3}", s, flags=re.IGNORECASE):
        raise ArticleNotFound(f"{text!r} is not an article number (examples: 154, 151^1, 22^1c, 19a)")
    return s.lower()


def get_article(conn: psycopg.Connection, act: str, article: str, *, as_of: dt.date | None = None,
                version_no: int | None = None) -> dict:
    eli = str(parse_act_id(act))
    number = canonical_article(article)
    if version_no is not None:
        version = conn.execute("SELECT version_id FROM act_versions WHERE eli = %s AND version_no = %s",
                               (eli, version_no)).fetchone()
        if not version:
            raise ArticleNotFound(f"{eli} has no stored version {version_no}")
    else:
        # The act's text in force on the date: among all versions of its base act.
        version = conn.execute(
            "SELECT v.version_id FROM versions_as_of(%s) v "
            "WHERE v.base_eli = (SELECT base_eli FROM acts WHERE eli = %s)",
            (as_of, eli),
        ).fetchone()
        if not version:
            known = conn.execute("SELECT 1 FROM acts WHERE eli = %s", (eli,)).fetchone()
            if not known:
                raise ArticleNotFound(f"{eli} is not in the database; run: pipeline ingest --act {eli}")
            raise ArticleNotFound(f"no stored text of {eli} is in force on {as_of}")
    row = conn.cursor(row_factory=dict_row).execute(
        """
        SELECT v.eli, a.title AS act_title, ar.article, ar.heading_path, ar.repealed, ar.text, v.version_no, v.valid_from
        FROM articles ar JOIN act_versions v USING (version_id) JOIN acts a ON a.eli = v.eli
        WHERE ar.version_id = %s AND ar.article = %s
        ORDER BY ar.ordinal LIMIT 1
        """,
        (version[0], number),
    ).fetchone()
    if not row:
        raise ArticleNotFound(f"{eli} has no art. {number} in the selected text")
    cur = currency.for_acts(conn, [row["eli"]]).get(row["eli"])
    row["currency"] = cur.to_dict() if cur else None
    return row


def show(act: str, article: str, *, as_of: dt.date | None = None, version_no: int | None = None) -> dict:
    """`pipeline show`: :func:`get_article` on the current database."""
    from .schema import open_current  # alembic loads only when a command needs the database

    _, conn = open_current()
    with closing(conn):
        return get_article(conn, act, article, as_of=as_of, version_no=version_no)
