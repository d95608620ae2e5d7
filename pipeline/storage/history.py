"""How an article changed between two stored texts of its act: a word-level diff with each text's date
(`pipeline diff`, MCP ``compare_versions``)."""
from __future__ import annotations

import datetime as dt
import difflib
import re

import psycopg

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


@read_only
def diff_article(conn: psycopg.Connection, act: str, article: str, *, from_date: dt.date | None = None,
                 to_date: dt.date | None = None) -> dict:
    """The article in two stored texts of its act: the one in force on ``to_date`` (None: the newest)
    and the one in force on ``from_date`` (None: the text before it). ``unchanged`` when the wordings
    are equal; ``ops`` the word diff (:func:`word_diff`). An article missing from one text is diffed
    against nothing, and says so in ``note``."""
    eli = str(parse_act_id(act))
    number = canonical_article(article)
    require_date(from_date)
    require_date(to_date)
    require_acts(conn, [eli])
    texts = _texts(conn, eli)
    if len(texts) < 2:
        only = texts[0] if texts else None
        raise ArticleNotFound(
            f"{eli}: one stored text ({only[1]}, {only[3] or 'no date'}), nothing to compare it with; ingest an "
            "older or newer consolidated text of the act (pipeline ingest --act ID), then diff" if only
            else f"{eli}: no stored text")
    newer = _in_force(texts, to_date) if to_date else texts[-1]
    if newer is None:
        raise ArticleNotFound(f"{eli}: no stored text is in force on {to_date} (the earliest is {texts[0][1]}, "
                              f"from {texts[0][3]})")
    if from_date:
        older = _in_force(texts, from_date)
        if older is None:
            raise ArticleNotFound(f"{eli}: no stored text is in force on {from_date} (the earliest is {texts[0][1]}, "
                                  f"from {texts[0][3]})")
    else:
        before = [t for t in texts if t is not newer and texts.index(t) < texts.index(newer)]
        if not before:
            raise ArticleNotFound(f"{eli}: {newer[1]} ({newer[3]}) is the earliest stored text; give --to a later "
                                  "date, or --from and --to")
        older = before[-1]
    if older[0] == newer[0]:
        raise ArticleNotFound(f"{eli}: the same text ({newer[1]}, {newer[3]}) is in force on both dates; choose dates "
                              f"on either side of a change (stored texts: "
                              f"{', '.join(f'{t[1]} from {t[3]}' for t in texts)})")

    def wording(version_id: int) -> str | None:
        row = conn.execute("SELECT text FROM articles WHERE version_id = %s AND article = %s ORDER BY ordinal LIMIT 1",
                           (version_id, number)).fetchone()
        return row[0] if row else None

    old_text, new_text = wording(older[0]), wording(newer[0])
    if old_text is None and new_text is None:
        raise ArticleNotFound(f"{eli}: neither {older[1]} nor {newer[1]} has art. {number}")
    note = None
    if old_text is None:
        note = f"art. {number} is not in {older[1]}: added later"
    elif new_text is None:
        note = f"art. {number} is not in {newer[1]}: removed"
    side = lambda t: {"act": t[1], "version_no": t[2], "valid_from": t[3]}  # noqa: E731
    return {"act": eli, "article": number, "from": side(older), "to": side(newer),
            "unchanged": old_text == new_text, "note": note,
            "ops": word_diff(old_text or "", new_text or "")}
