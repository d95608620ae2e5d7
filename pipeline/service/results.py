"""The result schemas every face gives: a hit, an article, an act, a search (an answer is
``Asked.to_dict()``).

One function per record, so that `pipeline search --json`, MCP `search_law`, the Python API and the
web page give the same keys for the same thing (docs/results.md describes them). The TypedDicts are
the schemas the MCP server publishes; ``extra="allow"`` (:data:`OPEN`) lets a key added here reach
clients at once.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import TypedDict

from pipeline.core import clock
from pipeline.answering.citations import cite, polish_citation
from pipeline.core.limits import MAX_CHECK_CITATIONS, MAX_RANGE
from pipeline.indexing.find import ActFound, ActQuery, Pick
from pipeline.retrieval.search import Hit
from pipeline.sources.provision_time import in_force_note
from pipeline.sources.record import display_title
from pipeline.storage.articles import ArticleOnDay
from pipeline.storage.currency import Currency

OPEN = {"extra": "allow"}  # pydantic's ConfigDict, without importing pydantic for every CLI command


class HitRecord(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
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
    currency: dict | None  # the act's currency: state, text_as_of, amended_after, in_force, note … (docs/results.md)
    currency_note: str | None  # the same as one Polish line
    # The article on the date searched (revision 0010): true, or null where the texts leave it undetermined
    # (false only with include_repealed); its units that are not the law that day.
    in_force: bool | None
    in_force_from: dt.date | None
    in_force_until: dt.date | None
    in_force_note: str
    units_not_in_force: list[dict]  # {unit, kind, from, until, note}
    citation_pl: dict  # {long, short}: to paste into a letter ("art. 154 § 1 k.p."), numbers with superscripts
    # Revision 0012: false where `text` is the article's wording on the date searched rebuilt from later changes,
    # not an official text; rebuilt_from: those changes ({act, unit, operation, target_unit, in_force_from}).
    official: bool
    rebuilt_from: list[dict] | None


class VersionRecord(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    act: str
    version_no: int
    valid_from: dt.date | None
    ingested_at: str | None


class ReferenceRecord(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    act: str | None  # the base act cited (null: not known, e.g. an EU regulation)
    article: str | None  # null: the whole act is cited
    unit: str  # "§ 1 pkt 2", "ust. 3"; "": the whole article
    text: str  # the reference as printed
    kind: str  # internal | relative | external
    stored: str | None  # the stored current text that holds the cited article (null: not stored)


class CitingRecord(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    act: str
    article: str


class DefinitionRecord(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    term: str
    act: str
    article: str
    unit: str
    text: str


class SourceRecord(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    act: str | None  # the act that made the change or set the date (ELI id)
    unit: str | None  # its unit: "art. 26 pkt 1 lit. a"


# One entry of an article's timeline; functional form: "from" is a Python keyword, and the key JSON gives.
TimelineRecord = TypedDict("TimelineRecord", {
    "from": dt.date | None,  # from when (null: not given; undetermined where determined is false)
    "until": dt.date | None,  # until when, not included (null: not given)
    "kind": str,  # enters | added | wording | amended | renumbered | repealed | loses_force
    "unit": str,  # "ust. 4", "§ 1 pkt 2"; "": the article
    "source": SourceRecord,
    "text": str,  # the provision or footnote it is read from
    "determined": bool,  # false: the texts do not determine its date
    "wording": int,  # the wording of the article it belongs to
})
TimelineRecord.__pydantic_config__ = OPEN  # type: ignore[attr-defined]  # pydantic's setting (a functional TypedDict)


class ChangeRecord(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    act: str  # the amending act (its stored text)
    unit: str  # where it says so: "art. 2 pkt 3 lit. a"
    operation: str  # set_wording | add | repeal | renumber | replace_words | delete_words | insert_words | add_sentence | other
    target_unit: str  # the unit of this article it changes ("ust. 2"; "" the article)
    whole_act: bool  # a change to the whole act (its repeal)
    after: str | None  # add: the unit it follows
    in_force_from: dt.date | None  # when it takes effect; null: not determined (in_force_undetermined says why)
    in_force_undetermined: str | None
    status: str  # in_force (by the date asked) | pending (later) | undetermined
    note: str  # the same as one Polish line
    applied: bool  # true: applied to the rebuilt ``text``; false: the text shown does not carry it
    why: str | None  # in force but not applied: why (an edit of words: its unit stays as the official text has it)
    text: str | None  # the wording it sets or adds
    old_words: str | None
    new_words: str | None
    new_label: str | None
    instruction: str  # the instruction's words, each wording elided


class ArticleRecord(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
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
    versions: list[VersionRecord]  # every stored text of the article's act, oldest first
    # When it is the law (revision 0010; docs/results.md "Provision time"), on the date asked (as_of, else today):
    in_force: bool | None  # null: the texts do not determine it (in_force_undetermined quotes why)
    in_force_from: dt.date | None
    in_force_until: dt.date | None  # the first day it no longer holds
    in_force_undetermined: str | None
    in_force_basis: str | None  # provisions | other_act | consolidated_text | footnote | record | undetermined
    in_force_note: str  # the same as one Polish line
    wording: int  # 0 printed once; 1 / 2 the wording in force and the one an amendment brings
    wordings: list[dict]  # every wording of the article in the text: {wording, in_force_from, in_force_until, in_force}
    timeline: list[TimelineRecord]
    units_not_in_force: list[dict]  # {unit, kind, from, until, note}: units not the law on the date
    citation_pl: dict  # {long, short}: as a Polish lawyer writes it
    # After the text (revision 0011; docs/amendments.md): the text shown is the official one, and the changes
    # stored amending acts make to this article (or the whole act) after it, none applied to it.
    official: bool  # false: ``text`` is a wording rebuilt from the official text and changes in force (never official)
    official_text: str | None  # the official text, where ``text`` is rebuilt
    changes: list[ChangeRecord]
    # What it authorises (revision 0013): {unit, organ, form, obligatory, normative, matter, guidance,
    # in_agreement_with, after_consulting, in_amended_act, text}
    delegations: list[dict]


class ActRecord(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    act: str  # the current text's ELI id (search and show take it)
    base_act: str  # the act it is a text of (a consolidated text's base act, else itself)
    title: str | None
    display_title: str | None  # the part of the title that names the act ("ustawy - Kodeks pracy")
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
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
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
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    act: str
    title: str | None
    target: str  # what ingest fetches: the newest consolidated text, or the act itself
    skip: str | None  # why it is not fetched (already stored, metadata only …)


def found_act_record(found: ActFound) -> FoundActRecord:
    return found.to_dict()  # type: ignore[return-value]  # the record, a plain dict


def pick_record(chosen: Pick) -> PickRecord:
    return chosen.to_dict()  # type: ignore[return-value]  # the record, a plain dict


def hit_record(hit: Hit, rank: int, as_of: dt.date | None = None) -> HitRecord:
    return {  # type: ignore[typeddict-item]  # mypy takes __pydantic_config__ for a key
        "rank": rank, "citation": cite(hit.act, hit.article), "act": hit.act, "act_title": hit.act_title,
        "article": hit.article, "part": hit.part, "version_no": hit.version_no, "valid_from": hit.valid_from,
        "as_of": as_of, "score": hit.score, "similarity": hit.similarity, "text_score": hit.text_score,
        "sparse_score": hit.sparse_score, "vector_rank": hit.vector_rank, "text_rank": hit.text_rank,
        "sparse_rank": hit.sparse_rank, "best_similarity": hit.best_similarity, "named": hit.named,
        "chunk_id": hit.chunk_id, "text": hit.text, "currency": hit.currency,
        "currency_note": hit.currency["note"] if hit.currency else None,
        "in_force": hit.in_force, "in_force_from": hit.in_force_from, "in_force_until": hit.in_force_until,
        "in_force_note": in_force_note(as_of or clock.today(), hit.in_force_from, hit.in_force_until, None),
        "units_not_in_force": hit.units_not_in_force or [],
        "citation_pl": citation_pl(hit.act, hit.article, "", hit.currency, hit.act_title),
        "official": hit.official, "rebuilt_from": hit.rebuilt_from,
    }


def version_record(version: dict[str, Any]) -> VersionRecord:
    """A stored version as pipeline.storage.articles.versions_of lists it."""
    return {  # type: ignore[typeddict-item]  # mypy takes __pydantic_config__ for a key
        "act": version["eli"], "version_no": version["version_no"], "valid_from": version["valid_from"],
        "ingested_at": version["ingested_at"]}


def article_record(found: ArticleOnDay, as_of: dt.date | None = None,
                   context: dict[str, list] | None = None) -> ArticleRecord:
    """An article on a day as :func:`pipeline.storage.articles.find_article` reads it, with its legal context
    (pipeline.storage.context: references, referenced_by, definitions) and its act's stored versions
    (``versions``); empty lists for what was not read."""
    context = context or {}
    return {  # type: ignore[typeddict-item]  # mypy takes __pydantic_config__ for a key
        "citation": cite(found.eli, found.article), "act": found.eli, "act_title": found.act_title,
        "article": found.article, "heading_path": list(found.heading_path), "repealed": found.repealed,
        "version_no": found.version_no, "valid_from": found.valid_from, "valid_to": found.valid_to, "as_of": as_of,
        "text": found.text, "currency": found.currency,
        "currency_note": found.currency["note"] if found.currency else None,
        "references": context.get("references", []), "referenced_by": context.get("referenced_by", []),
        "definitions": context.get("definitions", []),
        "versions": [version_record(v) for v in context.get("versions", [])],
        "in_force": found.in_force, "in_force_from": found.in_force_from, "in_force_until": found.in_force_until,
        "in_force_undetermined": found.in_force_undetermined, "in_force_basis": found.in_force_basis,
        "in_force_note": in_force_note(as_of or clock.today(), found.in_force_from, found.in_force_until,
                                       found.in_force_undetermined, found.repealed, found.in_force_basis),
        "wording": found.wording, "wordings": found.wordings, "timeline": found.timeline,
        "units_not_in_force": found.units_not_in_force,
        "citation_pl": citation_pl(found.eli, found.article, "", found.currency, found.act_title),
        "official": found.official, "official_text": found.official_text, "changes": found.changes,
        "delegations": found.delegations,
    }


def citation_pl(act: str, article: str, unit: str, currency: dict | None, title: str | None) -> dict:
    """The long and short Polish citation of a unit of a stored text, from its act's currency (its title,
    base act, own date, later amendments)."""
    currency = currency or {}
    return polish_citation(act, article, unit, title=currency.get("title") or title, base_act=currency.get("base_eli"),
                           act_date=currency.get("act_date"), amended=bool(currency.get("amended_after")))


def act_record(currency: Currency, stored: dict[str, Any] | None) -> ActRecord:
    """An act from its currency row and, for a current text, what :func:`pipeline.storage.articles.list_acts`
    counts of it (``None``: a superseded text, listed by ``pipeline acts --all``)."""
    stored = stored or {}
    facts = currency.to_dict()
    return {  # type: ignore[typeddict-item]  # mypy takes __pydantic_config__ for a key
        "act": currency.eli, "base_act": currency.base_eli, "title": (title := currency.title or stored.get("title")),
        "display_title": display_title(title),
        "act_type": stored.get("act_type"), "status": currency.status, "in_force": currency.in_force,
        "version_no": currency.version_no, "valid_from": stored.get("valid_from", currency.text_as_of),
        "article_count": stored.get("article_count"), "chunk_count": stored.get("chunk_count"),
        "versions": [version_record(v) for v in stored.get("versions") or []],
        "currency": facts, "currency_note": facts["note"],
    }


# --- what a citation check returns ----------------------------------------------------------------------

class CitationRecord(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    quote: str  # the text's own words
    start: int  # where they are in the text (characters)
    end: int
    act_as_written: str  # "k.p.", "ustawy z dnia … o …", "(Dz. U. z 2024 r. poz. 581)"
    act: str | None  # the stored base act it resolved to (or the ELI id the text gives, not stored)
    article: str  # canonical: 154, 151^1
    unit: str  # "§ 1 pkt 2"; "": the whole article
    status: str  # ok | not_found | not_in_force | undetermined | act_not_stored | ambiguous
    why: str | None  # what was found, one line (null for ok)
    note: str | None  # how the act was found where not as the words say (a position not stored, texts stored apart)
    text: str | None  # the stored text it was checked against (its ELI id)
    version_no: int | None
    valid_from: dt.date | None  # that text's date
    checked_as_of: dt.date  # the date the check is for
    in_force_from: dt.date | None
    in_force_until: dt.date | None
    sha256: str | None  # of the cited unit's wording: repeat the check later and compare
    candidates: list[str]  # ambiguous: the stored acts that fit
    ingest: str | None  # act_not_stored: the command that would add it


@dataclass
class Checked:
    """A citation check: every citation of the text, in order, up to MAX_CHECK_CITATIONS; ``not_checked``:
    how many more the text cites (``ok`` only when each one was checked and is)."""

    as_of: dt.date | None
    citations: list[CitationRecord]
    not_checked: int = 0

    @property
    def ok(self) -> bool:
        return bool(self.citations) and not self.not_checked and all(c["status"] == "ok" for c in self.citations)

    @property
    def warnings(self) -> list[str]:
        """What the check left out, one line each (every face shows it)."""
        if not self.not_checked:
            return []
        return [f"{self.not_checked} more citation(s) not checked: a check reads at most {MAX_CHECK_CITATIONS} "
                f"(a range of an act whose text is not stored, at most {MAX_RANGE} of its numbers); "
                "check the rest of the text apart"]

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for c in self.citations:
            found[c["status"]] = found.get(c["status"], 0) + 1
        return found

    def to_dict(self) -> dict:
        return {"as_of": self.as_of, "ok": self.ok, "counts": self.counts(), "not_checked": self.not_checked,
                "warnings": self.warnings, "citations": self.citations}


# --- what a search and a find return --------------------------------------------------------------------

_WORD = re.compile(r"\w+")


@dataclass
class Found:
    """A search's result: the hits in rank order, and what makes the ranking incomplete or says that
    none of the hits answers (``warnings``, one line each)."""

    query: str
    mode: str
    as_of: dt.date | None
    acts: list[str] | None
    hits: list[Hit]
    warnings: list[str] = field(default_factory=list)
    # The warning that `ask` would refuse these hits (pipeline.retrieval.refusal), one of ``warnings``;
    # None: they hold something like an answer (or the mode is not the one ask searches with).
    refusal: str | None = None

    @property
    def refused(self) -> bool:
        return self.refusal is not None

    @property
    def not_found(self) -> str:
        """The one sentence of "not in the documents", as `ask` answers a refused question."""
        from pipeline.answering.prompts import NOT_FOUND

        return NOT_FOUND

    @property
    def stems(self) -> list[str]:
        """The stems of the question's words (of four letters or more) that a page marks in the hits:
        the offline answer's crude Polish stem (pipeline.answering.extractive.stem)."""
        from pipeline.answering.extractive import stem

        return sorted({stem(w) for w in _WORD.findall(self.query) if len(w) >= 4})

    def records(self) -> list[HitRecord]:
        """The hits as every face gives them (:func:`hit_record`)."""
        return [hit_record(h, rank, self.as_of) for rank, h in enumerate(self.hits, start=1)]

    def to_dict(self) -> dict:
        return {"query": self.query, "mode": self.mode, "as_of": self.as_of, "acts": self.acts,
                "hits": self.records(), "warnings": self.warnings}


@dataclass
class FoundActs:
    """`pipeline find`'s result: the acts whose title matches, from the API or (``source`` "stored") the
    database; ``total``: the records that match, before consolidated texts are put under their act."""

    query: ActQuery
    source: str
    total: int
    acts: list[FoundActRecord]
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        q = self.query
        return {"query": {"title": q.title, "act_type": q.act_type, "in_force": q.in_force, "year": q.year,
                          "publisher": q.publisher},
                "source": self.source, "total": self.total, "acts": self.acts, "warnings": self.warnings}
