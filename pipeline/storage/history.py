"""How an article changed between two dates: a word-level diff of its wording on each (`pipeline diff`, MCP
``compare_versions``, the web diff page), each side the wording `show --as-of` gives for its date: a stored
text's, or rebuilt from it with the stored changes in force by then (revision 0011), with each side's date."""
from __future__ import annotations

import datetime as dt
import difflib
import re

import psycopg
from psycopg.rows import dict_row

from pipeline.core import clock
from pipeline.core.act_id import parse_act_id
from pipeline.core.errors import ArticleNotFound
from pipeline.core.numbering import canonical_article
from pipeline.storage.articles import BASE_OF, added_later, require_acts, require_date, wording_on
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


def _on(conn: psycopg.Connection, text: tuple, number: str, wording: dict | None, day: dt.date) -> dict | None:
    """The article on ``day`` from ``wording``, its official wording in ``text`` (None: the text lacks it), as
    `show --as-of` gives it: rebuilt with the stored changes in force by ``day`` where they determine it
    (articles.wording_on), or added by a stored act (articles.added_later). None: not there on that day."""
    if wording is not None:
        return wording_on(conn, text[0], number, day, wording["text"])
    return added_later(conn, text[0], number, day)


def _official(wording: dict | None) -> dict | None:
    return None if wording is None else {"text": wording["text"], "official": True, "changes": []}


@read_only
def diff_article(conn: psycopg.Connection, act: str, article: str, *, from_date: dt.date | None = None,
                 to_date: dt.date | None = None) -> dict:
    """The article on two dates: its wording on ``to_date`` (None: the newest wording of the newest text,
    with the changes in force today) against the one on ``from_date`` (None: the wording before the newest
    change: before the newest stored change applied to it, else the first of two wordings a consolidated
    text prints, else the one of the text before). Each side is what `show --as-of` gives for its date: a
    stored text's wording (one of the two a consolidated text prints, with its dates, revision 0010), rebuilt
    with the stored changes in force by then where they determine it (``official`` false, ``changes`` the
    ones applied). ``unchanged`` when the wordings are equal; ``ops`` the word diff (:func:`word_diff`). An
    article missing on one side is diffed against nothing, and says so in ``note``."""
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
    new_got = _on(conn, newer, number, new, to_date or clock.today())
    if from_date:
        older = _in_force(texts, from_date)
        if older is None:
            raise ArticleNotFound(f"{eli}: no stored text is in force on {from_date} (the earliest is {texts[0][1]}, "
                                  f"from {texts[0][3]})")
        old = _wording_on(_wordings(conn, older[0], number), from_date)
        old_got = _on(conn, older, number, old, from_date)
    elif new_got is not None and not new_got["official"]:  # rebuilt: against the day before its newest change
        newest = max(c["in_force_from"] for c in new_got["changes"] if c["applied"])
        older, old = newer, new
        old_got = _on(conn, newer, number, new, newest - dt.timedelta(days=1))
    elif new is not None and new_rows.index(new) > 0:  # the later of two wordings: against the first
        older, old = newer, new_rows[new_rows.index(new) - 1]
        old_got = _official(old)
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
        old_got = _official(old)
    old_text, new_text = (old_got or {}).get("text"), (new_got or {}).get("text")
    if older[0] == newer[0] and (old is None or new is None or old["wording"] == new["wording"]) \
            and old_text == new_text:
        raise ArticleNotFound(f"{eli}: the same text ({newer[1]}, {newer[3]}) is in force on both dates, and no "
                              f"stored change to art. {number} between them; choose dates on either side of a change "
                              f"(stored texts: {', '.join(f'{t[1]} from {t[3]}' for t in texts)})")
    if old_text is None and new_text is None:
        raise ArticleNotFound(f"{eli}: neither {older[1]} nor {newer[1]} has art. {number}")
    note = None
    if old_text is None:
        note = f"art. {number} is not in {older[1]}: added later"
    elif new_text is None:
        note = f"art. {number} is not in {newer[1]}: removed"

    def side(t: tuple, w: dict | None, got: dict | None) -> dict:
        # official: the stored text's wording (or no wording at all); else rebuilt by the changes listed.
        applied = [{"act": c["act"], "unit": c["unit"], "in_force_from": c["in_force_from"],
                    "operation": c["operation"], "target_unit": c["target_unit"]}
                   for c in (got or {}).get("changes", []) if c["applied"]]
        return {"act": t[1], "version_no": t[2], "valid_from": t[3], "wording": (w or {}).get("wording", 0),
                "in_force_from": (w or {}).get("in_force_from"), "in_force_until": (w or {}).get("in_force_until"),
                "official": got is None or got["official"], "changes": applied}

    return {"act": eli, "article": number, "from": side(older, old, old_got), "to": side(newer, new, new_got),
            "unchanged": old_text == new_text, "note": note,
            "ops": word_diff(old_text or "", new_text or "")}
