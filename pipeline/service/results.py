"""The result schemas every face gives: a hit, an article, an act (an answer is ``Asked.to_dict()``).

One function per record, so that `pipeline search --json`, MCP `search_law`, the Python API and the
web page give the same keys for the same thing (docs/results.md describes them). The TypedDicts are
the schemas the MCP server publishes; ``extra="allow"`` lets a key added here reach clients at once.
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from typing_extensions import TypedDict

from pipeline.answering.citations import cite
from pipeline.indexing.find import ActFound, Pick
from pipeline.retrieval.search import Hit
from pipeline.storage.currency import Currency

_OPEN = {"extra": "allow"}  # pydantic's ConfigDict, without importing pydantic for every CLI command


class HitRecord(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    rank: int
    citation: str  # "[DU/2025/277, art. 154]": what an answer should quote
    act: str  # the ELI id of the text the hit is from
    act_title: str | None
    article: str  # canonical: 154, 151^1, 3a^1
    part: int  # the part of a long article (1: its beginning)
    version_no: int | None  # the stored version of `act`
    valid_from: dt.date | None  # the text's date: it states the law as of this day
    as_of: dt.date | None  # the date searched (null: today's law)
    score: float  # the fused score
    similarity: float | None  # the vector arm's cosine similarity (null: not among its candidates)
    text_score: float | None  # the full-text arm's BM25
    sparse_score: float | None  # the local model's sparse term arm
    vector_rank: int | None
    text_rank: int | None
    sparse_rank: int | None
    best_similarity: float | None  # the vector arm's best, whatever made the fused top k
    named: bool  # the question names this article ("art. 52 kp"): put first
    chunk_id: int
    text: str
    currency: dict | None  # the act's currency: text_as_of, amended_after, in_force, note … (docs/results.md)
    currency_note: str | None  # the same as one Polish line


class ReferenceRecord(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    act: str | None  # the base act cited (null: not known, e.g. an EU regulation)
    article: str | None  # null: the whole act is cited
    unit: str  # "§ 1 pkt 2", "ust. 3"; "": the whole article
    text: str  # the reference as printed
    kind: str  # internal | relative | external
    stored: str | None  # the stored current text that holds the cited article (null: not stored)


class CitingRecord(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    act: str
    article: str


class DefinitionRecord(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    term: str
    act: str
    article: str
    unit: str
    text: str


class ArticleRecord(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    citation: str
    act: str
    act_title: str | None
    article: str
    heading_path: list[str]
    repealed: bool
    version_no: int
    valid_from: dt.date | None
    valid_to: dt.date | None  # when a newer stored text takes over; null: the newest stored
    as_of: dt.date | None
    text: str
    currency: dict | None
    currency_note: str | None
    references: list[ReferenceRecord]  # what the article refers to, in the text's order
    referenced_by: list[CitingRecord]  # the stored articles that cite it
    definitions: list[DefinitionRecord]  # the act's definitions whose terms it uses


class VersionRecord(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    act: str
    version_no: int
    valid_from: dt.date | None
    ingested_at: str | None


class ActRecord(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    act: str  # the current text's ELI id (search and show take it)
    base_act: str  # the act it is a text of (a consolidated text's base act, else itself)
    title: str | None
    act_type: str | None
    status: str | None
    in_force: str | None
    version_no: int | None
    valid_from: dt.date | None  # the text's date: it states the law as of this day
    article_count: int | None
    chunk_count: int | None
    versions: list[VersionRecord]
    currency: dict | None
    currency_note: str | None


class FoundActRecord(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    act: str  # the act found (a consolidated text is listed under its base act)
    title: str | None
    act_type: str | None
    status: str | None
    in_force: str | None
    announcement_date: str | None  # the act's date ("z dnia …")
    display_address: str | None  # "Dz.U. 1974 nr 24 poz. 141"
    has_text: bool | None  # its record lists a text (null: the API has no record of it)
    newest: str | None  # its newest consolidated text (null: none)
    matched: list[str]  # the records of the search listed under this act
    stored: bool
    stored_act: str | None  # the stored text search and show use now


class PickRecord(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    act: str
    title: str | None
    target: str  # what ingest fetches: the newest consolidated text, or the act itself
    skip: str | None  # why it is not fetched (already stored, metadata only …)


def found_act_record(found: ActFound) -> FoundActRecord:
    return found.to_dict()  # type: ignore[return-value]


def pick_record(chosen: Pick) -> PickRecord:
    return chosen.to_dict()  # type: ignore[return-value]


def hit_record(hit: Hit, rank: int, as_of: dt.date | None = None) -> HitRecord:
    return {
        "rank": rank, "citation": cite(hit.act, hit.article), "act": hit.act, "act_title": hit.act_title,
        "article": hit.article, "part": hit.part, "version_no": hit.version_no, "valid_from": hit.valid_from,
        "as_of": as_of, "score": hit.score, "similarity": hit.similarity, "text_score": hit.text_score,
        "sparse_score": hit.sparse_score, "vector_rank": hit.vector_rank, "text_rank": hit.text_rank,
        "sparse_rank": hit.sparse_rank, "best_similarity": hit.best_similarity, "named": hit.named,
        "chunk_id": hit.chunk_id, "text": hit.text, "currency": hit.currency,
        "currency_note": hit.currency["note"] if hit.currency else None,
    }


def article_record(found: dict[str, Any], as_of: dt.date | None = None,
                   context: dict[str, list] | None = None) -> ArticleRecord:
    """An article as :func:`pipeline.storage.articles.get_article` reads it, with its legal context
    (pipeline.storage.context: references, referenced_by, definitions; empty lists when not read)."""
    context = context or {}
    return {
        "citation": cite(found["eli"], found["article"]), "act": found["eli"], "act_title": found["act_title"],
        "article": found["article"], "heading_path": list(found["heading_path"] or []),
        "repealed": found["repealed"], "version_no": found["version_no"], "valid_from": found["valid_from"],
        "valid_to": found.get("valid_to"), "as_of": as_of, "text": found["text"], "currency": found.get("currency"),
        "currency_note": found["currency"]["note"] if found.get("currency") else None,
        "references": context.get("references", []), "referenced_by": context.get("referenced_by", []),
        "definitions": context.get("definitions", []),
    }


def act_record(currency: Currency, stored: dict[str, Any] | None) -> ActRecord:
    """An act from its currency row and, for a current text, what :func:`pipeline.storage.articles.list_acts`
    counts of it (``None``: a superseded text, listed by ``pipeline acts --all``)."""
    stored = stored or {}
    facts = currency.to_dict()
    return {
        "act": currency.eli, "base_act": currency.base_eli, "title": currency.title or stored.get("title"),
        "act_type": stored.get("act_type"), "status": currency.status, "in_force": currency.in_force,
        "version_no": currency.version_no, "valid_from": stored.get("valid_from", currency.text_as_of),
        "article_count": stored.get("article_count"), "chunk_count": stored.get("chunk_count"),
        "versions": [{"act": v["eli"], "version_no": v["version_no"], "valid_from": v["valid_from"],
                      "ingested_at": v["ingested_at"]} for v in stored.get("versions") or []],
        "currency": facts, "currency_note": facts["note"],
    }
