"""What an answer should read beside the retrieved articles: the definitions they use and the
provisions they refer to, within a budget of characters (CONTEXT_CHARS).

A lawyer reads art. 154 with the definition of "pracownik" and art. 155^3 with art. 155^1 and 155^2;
retrieval ranks articles one by one and finds neither. Definitions come first (they change what the
words of every retrieved article mean), then the stored articles the retrieved ones cite, each in
rank order of the article that uses or cites it, each cut to ITEM_CHARS.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from pipeline.core.limits import CONTEXT_CHARS, CONTEXT_ITEM_CHARS
from pipeline.retrieval.search import Hit
from pipeline.storage import context
from pipeline.storage.db import read_only


@dataclass(frozen=True)
class ContextItem:
    act: str  # the stored text it is quoted from
    article: str
    text: str  # cut to CONTEXT_ITEM_CHARS
    role: str  # definition | reference
    used_by: str  # the retrieved article that uses the definition or cites the provision
    term: str | None = None  # a definition's term
    unit: str = ""  # where in the article: "ust. 1 pkt 4"
    in_question: bool = False  # a definition whose term the question uses


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


@read_only
def context_for(conn: psycopg.Connection, hits: list[Hit], question: str, *, budget: int = CONTEXT_CHARS,
                item_chars: int = CONTEXT_ITEM_CHARS) -> list[ContextItem]:
    """The definitions the ``hits`` use and the stored provisions they cite (internal and external),
    not already among the hits, until ``budget`` characters are spent."""
    if not hits or budget <= 0:
        return []
    have = {(h.act, h.article) for h in hits}
    versions: dict[tuple[str, int | None], Any] = {(h.act, h.version_no): conn.execute(
        "SELECT version_id FROM act_versions WHERE eli = %s AND version_no = %s", (h.act, h.version_no)).fetchone()
        for h in hits if h.version_no is not None}
    definitions: list[ContextItem] = []
    references: list[ContextItem] = []
    for h in hits:
        row = versions.get((h.act, h.version_no))
        if row is None:
            continue
        for d in context.definitions_used(conn, row[0], h.article):
            key = (d["act"], d["article"], d["unit"])
            if (d["act"], d["article"]) in have or any((i.act, i.article, i.unit) == key for i in definitions):
                continue
            definitions.append(ContextItem(d["act"], d["article"], _cut(d["text"], item_chars), "definition",
                                           h.article, d["term"], d["unit"]))
        for r in context.references_of(conn, row[0], h.article):
            if r["kind"] == "relative" or not r["stored"] or not r["article"]:
                continue
            if (r["stored"], r["article"]) in have or any((i.act, i.article) == (r["stored"], r["article"])
                                                          for i in references):
                continue
            text = conn.execute(
                "SELECT ar.text FROM articles ar JOIN versions_as_of(NULL) v USING (version_id) "
                "WHERE v.eli = %s AND ar.article = %s AND NOT ar.repealed ORDER BY ar.ordinal LIMIT 1",
                (r["stored"], r["article"])).fetchone()
            if text:
                references.append(ContextItem(r["stored"], r["article"], _cut(text[0], item_chars), "reference",
                                              h.article))
    if definitions:
        used = {t for (t,) in conn.execute(
            "SELECT term FROM unnest(%s::text[]) AS term WHERE numnode(phraseto_tsquery('polish', term)) > 0 "
            "AND to_tsvector('polish', %s) @@ phraseto_tsquery('polish', term)",
            ([d.term for d in definitions], question))}
        definitions = [ContextItem(**{**d.__dict__, "in_question": d.term in used}) for d in definitions]
        definitions.sort(key=lambda d: not d.in_question)  # the question's own terms first
    chosen: list[ContextItem] = []
    spent = 0
    for item in definitions + references:
        if spent + len(item.text) > budget:
            continue
        chosen.append(item)
        spent += len(item.text)
    return chosen
