"""An act's ELI record (``GET /acts/{publisher}/{year}/{pos}``, or an item of ``/acts/search``), read
once into one typed object: its ids, its dates with what each means, its relations to other acts, its
notes (``comments``) and which texts it has.

Every module that needs a fact of a record reads it from :class:`EliRecord`; the JSON itself is kept
as received (``raw``: the archive and the ``acts.meta`` column hold it). Every field is optional but
the id: the mirror's rebuilt records lack most of them, and so do many real ones (API.md).
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pipeline.core.act_id import ActId
from pipeline.core.errors import FetchError

# The relation categories of a record's "references" (API.md), by what they say of this act.
CONSOLIDATED_FOR = "Tekst jednolity dla aktu"  # on a consolidated text: the act it consolidates
CONSOLIDATED_TEXTS = "Inf. o tekście jednolitym"  # on a base act: its consolidated texts
LATER_AMENDMENTS = "Nowelizacje po tekście jednolitym"  # on the current consolidated text: what it lacks
AMENDING_ACTS = "Akty zmieniające"  # on any act: the acts that amended it
AMENDED_ACTS = "Akty zmienione"  # on an amending act: the acts it amended
REPEALING_ACTS = "Akty uchylające"  # the acts that repealed it
REPEALED_ACTS = "Akty uchylone"  # the acts it repealed
INTRODUCING_ACTS = "Przepisy wprowadzające"  # the act that introduces it (or that it introduces)
LEGAL_BASIS = "Podstawa prawna"

# What the date of a relation's entry means, where the API says (API.md): the amending act's own date
# on a consolidated text's list, the change's entry into force on a base act's.
DATED_BY_ACT = "act"
DATED_BY_ENTRY_INTO_FORCE = "entry_into_force"

# A record made up for a local file with no ELI metadata beside it says so under this key: "local file
# NAME". The mirror's rebuilt records use the same key for another note ("reconstructed from a partial
# record"), so the value, not the key, tells a local record.
PROVENANCE = "_provenance"
LOCAL_FILE = "local file "

try:
    WARSAW: dt.tzinfo = ZoneInfo("Europe/Warsaw")  # the API's timestamps carry no zone
except ZoneInfoNotFoundError:  # a system without a time zone database: CET, an hour off in summer
    WARSAW = dt.timezone(dt.timedelta(hours=1), "CET")


def record_date(value: Any) -> dt.date | None:
    """A date as the API writes it ("2025-02-14", or a timestamp's date part); None for anything else."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str) or not value:
        return None
    try:
        return dt.date.fromisoformat(value[:10])
    except ValueError:
        return None


def record_time(value: Any) -> dt.datetime | None:
    """``changeDate``: "2026-08-18T14:42:13" (records) or "2026-04-10 10:52" (/references), Warsaw time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        stamp = dt.datetime.fromisoformat(value.replace(" ", "T"))
    except ValueError:
        return None
    return stamp.replace(tzinfo=WARSAW) if stamp.tzinfo is None else stamp


@dataclass(frozen=True)
class RecordDates:
    """A record's dates, each named for what it means (API.md); None where the record has none."""

    announced: dt.date | None = None  # announcementDate: the act's own date ("ustawa z dnia …")
    published: dt.date | None = None  # promulgation: the day of its Dziennik Ustaw issue
    entry_into_force: dt.date | None = None  # entryIntoForce: the act's (main) entry into force
    valid_from: dt.date | None = None  # validFrom
    legal_status: dt.date | None = None  # legalStatusDate: a consolidated text's cut-off
    expiration: dt.date | None = None  # expirationDate: e.g. a consolidated text superseded by the next
    repealed: dt.date | None = None  # repealDate
    changed: dt.datetime | None = None  # changeDate: when the record changed; not a legal date

    def text_date(self) -> dt.date | None:
        """The day a text states the law for: a consolidated text's cut-off, else its entry into force,
        else the first date the record has (an act's own or publication date)."""
        return (self.legal_status or self.entry_into_force or self.valid_from or self.announced
                or self.published)


_DATE_KEYS = {"announced": "announcementDate", "published": "promulgation", "entry_into_force": "entryIntoForce",
              "valid_from": "validFrom", "legal_status": "legalStatusDate", "expiration": "expirationDate",
              "repealed": "repealDate"}


@dataclass(frozen=True)
class Relation:
    """One entry of a relation category: the other act, the entry's date, the provision it names."""

    eli: str
    date: dt.date | None = None
    article: str | None = None  # "art": e.g. "art. 16 ust. 1 zdanie pierwsze" (Podstawa prawna z art.)


@dataclass(frozen=True)
class Amendment:
    """An act that amended a text after it: its id, and the date the record gives with what it means."""

    eli: str
    date: dt.date | None
    date_of: str  # DATED_BY_ACT: the amending act's date; DATED_BY_ENTRY_INTO_FORCE: when the change applies
    # When the change takes effect, where what is stored tells (pipeline.storage.currency): the amending act's
    # text or record, the base act's record; None: not known. ``in_force_source`` says which.
    in_force_from: dt.date | None = None
    in_force_source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"eli": self.eli, "date": self.date.isoformat() if self.date else None, "date_of": self.date_of}


@dataclass(frozen=True)
class EliRecord:
    """An act's record as the API (or an archive) gave it, read once."""

    raw: Mapping[str, Any] = field(repr=False)
    eli: str
    title: str | None = None
    act_type: str | None = None  # "Ustawa", "Obwieszczenie", "Rozporządzenie" … (other/types.json)
    status: str | None = None  # Polish: "obowiązujący", "akt posiada tekst jednolity", "wygaśnięcie aktu" …
    in_force: str | None = None  # IN_FORCE | NOT_IN_FORCE | UNKNOWN
    display_address: str | None = None  # "Dz.U. 2025 poz. 277"
    dates: RecordDates = RecordDates()
    relations: Mapping[str, tuple[Relation, ...]] | None = None  # None: the record has no "references"
    comments: str | None = None  # the API's note, often on staggered entry into force
    has_html: bool = False
    has_pdf: bool = False

    @classmethod
    def read(cls, raw: Mapping[str, Any], act_id: ActId | str | None = None) -> EliRecord:
        """``raw`` read; ``act_id`` stands in for a record without an ``ELI`` field."""
        eli = raw.get("ELI") or (str(act_id) if act_id is not None else None)
        if not eli:
            raise FetchError("an ELI record without an ELI id")
        refs = raw.get("references")
        relations = None
        if isinstance(refs, Mapping):
            relations = {str(category): tuple(Relation(str(e["id"]), record_date(e.get("date")),
                                                       _text(e.get("art")))
                                              for e in entries if isinstance(e, Mapping) and e.get("id"))
                         for category, entries in refs.items() if isinstance(entries, list)}
        dates = RecordDates(**{name: record_date(raw.get(key)) for name, key in _DATE_KEYS.items()},
                            changed=record_time(raw.get("changeDate")))
        return cls(raw, str(eli), _text(raw.get("title")), _text(raw.get("type")), _text(raw.get("status")),
                   _text(raw.get("inForce")), _text(raw.get("displayAddress")), dates, relations,
                   _text(raw.get("comments")), bool(raw.get("textHTML")), bool(raw.get("textPDF")))

    @classmethod
    def for_local_file(cls, act_id: ActId, title: str | None, file_name: str) -> EliRecord:
        """The record made up for a local file that has no ELI metadata beside it."""
        return cls.read({"ELI": str(act_id), "publisher": act_id.publisher, "year": act_id.year, "pos": act_id.pos,
                         "title": title, PROVENANCE: LOCAL_FILE + file_name})

    # --- relations ---------------------------------------------------------------------------------

    def related(self, category: str) -> tuple[Relation, ...]:
        """The entries of one relation category, in the record's order (none when it has none)."""
        return (self.relations or {}).get(category, ())

    @property
    def base_eli(self) -> str:
        """The act a consolidated text belongs to, else the act itself."""
        of = self.related(CONSOLIDATED_FOR)
        return of[0].eli if of else self.eli

    @property
    def consolidates(self) -> bool:
        """A consolidated text (tekst jednolity) of another act, by its record's relation."""
        return self.base_eli != self.eli

    @property
    def is_consolidated_text(self) -> bool:
        """A consolidated text, by its record's relation or, where the record has none (as rebuilt records
        lack), by its title ("Obwieszczenie … w sprawie ogłoszenia jednolitego tekstu …")."""
        return self.consolidates or consolidated_subject(self.title) is not None

    def amendments_after(self) -> list[Amendment] | None:
        """The acts that amended this text after it, oldest first, each once; None when the record has no
        relations at all (nothing can be said). A consolidated text lists what it lacks; any other act
        every act that amended it, dated by when the change takes effect."""
        if self.relations is None:
            return None
        if self.consolidates:
            found, date_of = self.related(LATER_AMENDMENTS), DATED_BY_ACT
        else:
            found, date_of = self.related(AMENDING_ACTS), DATED_BY_ENTRY_INTO_FORCE
        amendments = {r.eli: Amendment(r.eli, r.date, date_of) for r in found}
        return sorted(amendments.values(), key=lambda a: (a.date or dt.date.min, a.eli))

    def amendments_after_text(self, text_date: dt.date | None = None) -> list[Amendment] | None:
        """:meth:`amendments_after` cut to those after the text: a consolidated text's list is all after it;
        any other act's "Akty zmieniające" whose change takes effect after ``text_date`` (None: the record's
        own), each of them when there is no date (none can be ruled out). None when the record lists none."""
        listed = self.amendments_after()
        if listed is None:
            return None
        cut = None if self.consolidates else text_date or self.text_date
        return [a for a in listed if a.eli != self.eli and (cut is None or a.date is None or a.date > cut)]

    # --- what the record says of its text ----------------------------------------------------------

    @property
    def has_text(self) -> bool:
        return self.has_html or self.has_pdf

    @property
    def text_date(self) -> dt.date | None:
        return self.dates.text_date()

    @property
    def is_local(self) -> bool:
        """Made up for a local file (:meth:`for_local_file`), not read from the ELI API."""
        return str(self.raw.get(PROVENANCE, "")).startswith(LOCAL_FILE)

    @property
    def is_announcement(self) -> bool:
        """An Obwieszczenie: a consolidated text, or another announcement that holds no act's articles."""
        return (self.act_type or "").casefold() == "obwieszczenie"

    @property
    def announces_consolidated_text(self) -> bool:
        """A consolidated text, by its relation or by its title ("… ogłoszenia jednolitego tekstu …")."""
        return self.consolidates or _OF_CONSOLIDATION.search(self.title or "") is not None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# --- titles ------------------------------------------------------------------------------------------

# A consolidated text's record is titled "Obwieszczenie Marszałka Sejmu … w sprawie ogłoszenia
# jednolitego tekstu ustawy – Kodeks pracy"; some records append their first footnote ("… 1) Niniejsza
# ustawa wdraża …"). What names the act is the rest.
_ANNOUNCEMENT = re.compile(r"^Obwieszczenie\b.*?\bjednolitego tekstu\s+", re.IGNORECASE | re.DOTALL)
_FOOTNOTE = re.compile(r"\s+1\)\s.*$", re.DOTALL)
_OF_CONSOLIDATION = re.compile(r"jednolitego\s+tekstu\s+\w+\s*", re.IGNORECASE)  # "...tekstu ustawy - Kodeks pracy"
_ACT_AND_DATE = re.compile(r"^\s*\w+\s+z\s+dnia\s+\d{1,2}\s+\w+\s+\d{4}\s*r\.\s*")


def display_title(title: str | None) -> str | None:
    """The part of a record's title that names the act, for a list a person reads ("ustawy – Kodeks pracy")."""
    if not title:
        return None
    return _FOOTNOTE.sub("", _ANNOUNCEMENT.sub("", " ".join(title.split()))) or title


def consolidated_subject(title: str | None) -> str | None:
    """'Obwieszczenie … w sprawie ogłoszenia jednolitego tekstu ustawy - Kodeks pracy' -> 'Kodeks pracy';
    None for a title that announces no consolidated text."""
    m = _OF_CONSOLIDATION.search(title or "")
    return ((title or "")[m.end():].strip(" -–.") or None) if m else None


def short_title(title: str | None) -> str | None:
    """The name a lawyer uses for an act: "Kodeks pracy", "ustawa o ochronie danych osobowych"; an
    announcement of a consolidated text takes the title of the act it announces. None without a title."""
    if not title:
        return None
    subject = consolidated_subject(title)
    name = subject if subject is not None else act_name(display_title(title))
    name = re.sub(r"^[–—-]\s*", "", name.strip().rstrip("."))  # "Ustawa z dnia … r. - Prawo komunikacji …"
    return f"ustawa {name}" if name.startswith("o ") else name or None


def act_name(title: str | None) -> str:
    """'Ustawa z dnia 26 czerwca 1974 r. Kodeks pracy.' -> 'Kodeks pracy': the title without the act's
    kind and date (what a consolidated text's title repeats, and what a person types)."""
    return _ACT_AND_DATE.sub("", title or "").strip().rstrip(".").strip()
