"""How an article changed between two dates: a word-level diff of its wording on each (`pipeline diff`, MCP
``compare_versions``, the web diff page), each side the wording `show --as-of` gives for its date: a stored
text's, or rebuilt from it with the stored changes in force by then (revision 0011), with each side's date."""
from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Callable
import re

import psycopg

from pipeline.core import clock
from pipeline.core.act_id import parse_act_id
from pipeline.core.errors import ArticleNotFound
from pipeline.core.numbering import canonical_article
from pipeline.storage.articles import BASE_OF, ArticleOnDay, article_on, require_acts, require_date
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


def _newest(rows: list[dict], day: dt.date) -> dict:
    """The newest wording a text prints (the later of two): what `diff` without ``--to`` compares."""
    return rows[-1]


def _on(conn: psycopg.Connection, text: tuple, number: str, day: dt.date | None, *,
        pick: Callable[[list[dict], dt.date], dict] | None = None, rebuild: bool = True) -> ArticleOnDay | None:
    """The article in ``text`` on ``day`` as `show --as-of` gives it (articles.article_on: the wording in force,
    rebuilt with the stored changes in force by then where they determine it, or added by a stored act);
    ``day`` None: the newest wording the text prints, with the changes in force today. None: not there."""
    if day is None:
        return article_on(conn, text[0], number, clock.today(), pick=pick or _newest, rebuild=rebuild)
    return article_on(conn, text[0], number, day, pick=pick, rebuild=rebuild)


def _printed(found: ArticleOnDay) -> int:
    """Which of the text's printed wordings of the article ``found`` is (0: the first)."""
    return [w["wording"] for w in found.wordings].index(found.wording) if found.wordings else 0


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
    new = _on(conn, newer, number, to_date)
    if from_date:
        older = _in_force(texts, from_date)
        if older is None:
            raise ArticleNotFound(f"{eli}: no stored text is in force on {from_date} (the earliest is {texts[0][1]}, "
                                  f"from {texts[0][3]})")
        old = _on(conn, older, number, from_date)
    elif new is not None and not new.official:  # rebuilt: against the day before its newest change
        newest = max(c["in_force_from"] for c in new.changes if c["applied"])
        older = newer
        same = new.wording
        old = _on(conn, newer, number, newest - dt.timedelta(days=1),
                  pick=lambda rows, _day: next(r for r in rows if r["wording"] == same))
    elif new is not None and _printed(new) > 0:  # the later of two wordings: against the first
        older, before_it = newer, new.wordings[_printed(new) - 1]["wording"]
        old = _on(conn, newer, number, to_date, rebuild=False,
                  pick=lambda rows, _day: next(r for r in rows if r["wording"] == before_it))
    else:
        before = [t for t in texts if texts.index(t) < texts.index(newer)]
        if not before:
            only = f"{newer[1]} ({newer[3] or 'no date'})"
            raise ArticleNotFound(
                f"{eli}: {only} is the earliest stored text and prints one wording of art. {number}; nothing to "
                "compare it with: ingest an older or newer consolidated text of the act (pipeline ingest --act ID), "
                "or give --to a later date, or --from and --to" if len(texts) > 1 or new is None or len(new.wordings) < 2
                else f"{eli}: give --from and --to on either side of the change")
        older = before[-1]
        old = _on(conn, older, number, None, rebuild=False)
    old_text, new_text = (old.text if old else None), (new.text if new else None)
    if older[0] == newer[0] and (old is None or new is None or old.wording == new.wording) \
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

    def side(t: tuple, got: ArticleOnDay | None) -> dict:
        # official: the stored text's wording (or no wording at all); else rebuilt by the changes listed.
        applied = [{"act": c["act"], "unit": c["unit"], "in_force_from": c["in_force_from"],
                    "operation": c["operation"], "target_unit": c["target_unit"]}
                   for c in (got.changes if got else []) if c["applied"]]
        return {"act": t[1], "version_no": t[2], "valid_from": t[3], "wording": got.wording if got else 0,
                "in_force_from": got.in_force_from if got else None,
                "in_force_until": got.in_force_until if got else None,
                "official": got is None or got.official, "changes": applied}

    return {"act": eli, "article": number, "from": side(older, old), "to": side(newer, new),
            "unchanged": old_text == new_text, "note": note,
            "ops": word_diff(old_text or "", new_text or "")}
