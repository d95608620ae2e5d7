"""A parsed text made ready to store: its articles' chunks and pieces, and its legal context (what each
article refers to, the act's definitions). Done before storage is called, so that storage only writes.
"""
from __future__ import annotations

import hashlib
import re
import datetime as dt
from dataclasses import dataclass, field

from pipeline.core.limits import DEFAULT_MAX_CHARS, DEFAULT_OVERLAP
from pipeline.sources import chunk as chunking
from pipeline.sources import definitions as definitions_rules
from pipeline.sources import references as references_rules
from pipeline.sources.instructions import Change
from pipeline.sources.instructions import read_all as read_amendments
from pipeline.sources.chunk import Chunk, Piece
from pipeline.sources.definitions import Definition
from pipeline.sources.parse.model import Article, Footnote, ParsedAct
from pipeline.core.dates import parse_date
from pipeline.sources.record import EliRecord, consolidated_subject
from pipeline.sources.references import Reference

# Which rules read a text's legal context: a stored version read by other rules is read again.
CONTEXT_EXTRACTOR = f"{references_rules.EXTRACTOR}; {definitions_rules.EXTRACTOR}"


@dataclass(frozen=True)
class LegalContext:
    """What a text's articles refer to and the definitions they give, read by ``extractor``'s rules."""

    references: list[Reference]
    definitions: list[Definition]
    extractor: str = CONTEXT_EXTRACTOR


def legal_context(articles: list[Article], base_act: str) -> LegalContext:
    """The references (to ``base_act`` itself, relative, or to other acts) and the definitions of ``articles``."""
    return LegalContext(references_rules.extract(articles, base_act), definitions_rules.extract(articles))


@dataclass(frozen=True)
class PreparedArticle:
    article: Article
    text_sha256: str
    chunks: list[Chunk]
    pieces: list[list[Piece]]  # per chunk: its pieces (none for a short chunk)


@dataclass(frozen=True)
class PreparedText:
    """One text of an act, ready to be stored as a version (pipeline.storage.store.store_version)."""

    record: EliRecord  # as received: stored unless it is a local file's and the API's record is stored
    source_format: str  # pdf | html
    source_sha256: str
    text_sha256: str  # of the parsed articles: the same wording gives the same hash, whatever the file
    articles: list[PreparedArticle]
    context: LegalContext
    # What the text says of time that its articles' text does not keep (pipeline.storage.legal_time):
    notes: list[Footnote] = field(default_factory=list)  # footnotes marked outside the articles
    printed_date: dt.date | None = None  # the date the text prints: a Dz. U. PDF's masthead, an announcement's date
    consolidated: bool = False  # a consolidated text, by its record or its own title (a local file's record may not say)
    act_date: dt.date | None = None  # the act's own date as the text's title names it ("USTAWA z dnia 26 czerwca 1974 r.")
    amendments: list[Change] = field(default_factory=list)  # the changes it makes to other acts (sources.instructions)

    @property
    def chunk_count(self) -> int:
        return sum(len(a.chunks) for a in self.articles)


def prepare(record: EliRecord, parsed: ParsedAct, *, source_sha256: str, max_chars: int = DEFAULT_MAX_CHARS,
            overlap: int = DEFAULT_OVERLAP, stored_under: EliRecord | None = None) -> PreparedText:
    """``parsed`` (a text of the act ``record`` describes) split into chunks and pieces, with its legal
    context. ``stored_under``: the record the text will be stored under when it is not ``record`` (a
    local file of an act whose ELI record is stored: pipeline.storage.store.record_in_effect); the
    chunks' title and the references' own act are its."""
    under = stored_under or record
    title = under.title or ""
    articles = []
    for a in parsed.articles:
        chunks = chunking.chunk_article(a, title, max_chars=max_chars, overlap=overlap)
        articles.append(PreparedArticle(a, text_sha256(a.text), chunks,
                                        [chunking.chunk_pieces(c.embed_text, c.text) for c in chunks]))
    announced = consolidated_subject(parsed.title) is not None  # "Obwieszczenie … jednolitego tekstu …"
    printed = dt.date.fromisoformat(parsed.published) if parsed.published else \
        parse_date(parsed.title or "") if announced else None
    return PreparedText(record, parsed.source_format, source_sha256, chunking.text_sha256(parsed.articles),
                        articles, legal_context(parsed.articles, under.base_eli), list(parsed.notes), printed,
                        under.is_consolidated_text or announced,
                        parse_date(parsed.title or "") if _ACT_TITLE.match(parsed.title or "") else None,
                        read_amendments(parsed.articles))


# A title that names the act itself with its date ("USTAWA z dnia 26 czerwca 1974 r. Kodeks pracy"), not an
# announcement of it.
_ACT_TITLE = re.compile(r"^\s*(?:ustawa|kodeks|dekret|rozporządzenie)\b[^\n]{0,80}?\bz\s+dnia\s+\d", re.IGNORECASE)


def text_sha256(text: str) -> str:
    """An article's wording as a hash: the articles of two versions are compared by it."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
