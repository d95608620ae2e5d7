"""How an article changed between two stored texts of its act: a word-level diff with each text's date
(`pipeline diff`, MCP ``compare_versions``)."""
from __future__ import annotations

import datetime as dt
import difflib
import re

import psycopg
from psycopg.rows import dict_row

from pipeline.core.act_id import parse_act_id
from pipeline.core.errors import ArticleNotFound
from pipeline.core.numbering import canonical_article
from pipeline.storage.articles import BASE_OF, require_acts, require_date
from pipeline.storage.db import read_only

_TOKEN = re.compile(r"\s+|[^\s]+")


def word_diff(old: str, new: str) -> list[dict]:
    """``[{op: equal|delete|insert, text}]`` turning ``old`` into ``new`` word by word (whitespace kept
    with the words, so joining the equal and insert parts gives ``new``)."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    ops: list[dict] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            _add(ops, "equal", "".join(a[i1:i2]))
        else:
            if i2 > i1:
                _add(ops, "delete", "".join(a[i1:i2]))
            if j2 > j1:
                _add(ops, "insert", "".join(b[j1:j2]))
    return ops


def _add(ops: list[dict], op: str, text: str) -> None:
    if ops and ops[-1]["op"] == op:
        ops[-1]["text"] += text
    else:
        ops.append({"op": op, "text": text})


def _texts(conn: psycopg.Connection, eli: str) -> list[tuple]:
    """The stored texts of ``eli``'s base act, oldest first: (version_id, eli, version_no, valid_from)."""
    return conn.execute(
        f"SELECT version_id, eli, version_no, valid_from FROM act_versions WHERE base_eli = {BASE_OF} "
        "ORDER BY valid_from NULLS FIRST, version_id", {"e": eli}).fetchall()


def _in_force(texts: list[tuple], on: dt.date) -> tuple | None:
    """The text in force on ``on``: the newest whose date is on or before it (as versions_as_of picks)."""
    dated = [t for t in texts if t[3] is None or t[3] <= on]
    return dated[-1] if dated else None


def _wordings(conn: psycopg.Connection, version_id: int, number: str) -> list[dict]:
    """The article's wordings in one stored text (two where a consolidated text prints two), in order."""
    return conn.cursor(row_factory=dict_row).execute(
        "SELECT ar.wording, ar.text, t.in_force_from, t.in_force_until FROM articles ar "
        "LEFT JOIN article_times t USING (article_id) WHERE ar.version_id = %s AND ar.article = %s ORDER BY ar.ordinal",
        (version_id, number)).fetchall()


def _wording_on(rows: list[dict], day: dt.date | None) -> dict | None:
    """Of a text's wordings of an article, the one in force on ``day`` (None: the last printed, the newest)."""
    if not rows:
        return None
    if day is None:
        return rows[-1]
    current = [r for r in rows if (r["in_force_from"] is None or r["in_force_from"] <= day)
               and (r["in_force_until"] is None or day < r["in_force_until"])]
    return current[0] if current else rows[0]


@read_only
def diff_article(conn: psycopg.Connection, act: str, article: str, *, from_date: dt.date | None = None,
                 to_date: dt.date | None = None) -> dict:
    """The article on two dates: its wording in force on ``to_date`` (None: the newest wording of the newest
    text) against the one in force on ``from_date`` (None: the wording before it: the first of two a
    consolidated text prints, else the one of the text before). A wording is a stored text's, or one of
    the two a consolidated text prints for a unit, each with its dates (revision 0010). ``unchanged`` when
    the wordings are equal; ``ops`` the word diff (:func:`word_diff`). An article missing from one text is
    diffed against nothing, and says so in ``note``."""
    eli = str(parse_act_id(act))
    number = canonical_article(article)
    require_date(from_date)
    require_date(to_date)
    require_acts(conn, [eli])
    texts = _texts(conn, eli)
    if not texts:
        raise ArticleNotFound(f"{eli}: no stored text")
    newer = _in_force(texts, to_date) if to_date else texts[-1]
    if newer is None:
        raise ArticleNotFound(f"{eli}: no stored text is in force on {to_date} (the earliest is {texts[0][1]}, "
                              f"from {texts[0][3]})")
    new_rows = _wordings(conn, newer[0], number)
    new = _wording_on(new_rows, to_date)
    if from_date:
        older = _in_force(texts, from_date)
        if older is None:
            raise ArticleNotFound(f"{eli}: no stored text is in force on {from_date} (the earliest is {texts[0][1]}, "
                                  f"from {texts[0][3]})")
        old = _wording_on(_wordings(conn, older[0], number), from_date)
    elif new is not None and new_rows.index(new) > 0:  # the later of two wordings: against the first
        older, old = newer, new_rows[new_rows.index(new) - 1]
    else:
        before = [t for t in texts if texts.index(t) < texts.index(newer)]
        if not before:
            only = f"{newer[1]} ({newer[3] or 'no date'})"
            raise ArticleNotFound(
                f"{eli}: {only} is the earliest stored text and prints one wording of art. {number}; nothing to "
                "compare it with: ingest an older or newer consolidated text of the act (pipeline ingest --act ID), "
                "or give --to a later date, or --from and --to" if len(texts) > 1 or new is None or len(new_rows) < 2
                else f"{eli}: give --from and --to on either side of the change")
        older = before[-1]
        old = _wording_on(_wordings(conn, older[0], number), None)
    if older[0] == newer[0] and (old is None or new is None or old["wording"] == new["wording"]):
        raise ArticleNotFound(f"{eli}: the same text ({newer[1]}, {newer[3]}) is in force on both dates; choose dates "
                              f"on either side of a change (stored texts: "
                              f"{', '.join(f'{t[1]} from {t[3]}' for t in texts)})")
    old_text, new_text = (old or {}).get("text"), (new or {}).get("text")
    if old_text is None and new_text is None:
        raise ArticleNotFound(f"{eli}: neither {older[1]} nor {newer[1]} has art. {number}")
    note = None
    if old_text is None:
        note = f"art. {number} is not in {older[1]}: added later"
    elif new_text is None:
        note = f"art. {number} is not in {newer[1]}: removed"

    def side(t: tuple, w: dict | None) -> dict:
        return {"act": t[1], "version_no": t[2], "valid_from": t[3], "wording": (w or {}).get("wording", 0),
                "in_force_from": (w or {}).get("in_force_from"), "in_force_until": (w or {}).get("in_force_until")}

    return {"act": eli, "article": number, "from": side(older, old), "to": side(newer, new),
            "unchanged": old_text == new_text, "note": note,
            "ops": word_diff(old_text or "", new_text or "")}
