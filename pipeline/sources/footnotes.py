"""What the footnotes of a consolidated text say about the units they mark, read by the rules the
Marshal of the Sejm's announcements follow ("obwieszczenie … w sprawie ogłoszenia jednolitego tekstu").

A footnote on a unit tells its history: which act (and which of its units) added it ("Dodany przez art.
161 pkt 6 ustawy …"), set its wording ("W brzmieniu ustalonym przez …"), changed it ("Ze zmianą
wprowadzoną przez …"), renumbered it ("Oznaczenie ust. 1 nadane przez …") or repealed it ("Uchylony
przez …"; on a unit printed as "(uchylony)", simply "Przez art. 26 pkt 3 ustawy …"), and from when: the
act's date ("…, która weszła w życie z dniem 1 czerwca 2025 r.", "która wejdzie w życie …"), or the
unit's own where it differs ("; wszedł w życie z dniem 22 czerwca 2025 r."). An act is named in full
once; later footnotes say "ustawy, o której mowa w odnośniku 3", and take its act and date from there.
A unit printed twice (the wording in force, and the one an amendment brings) is marked "W tym brzmieniu
obowiązuje do wejścia w życie zmiany, o której mowa w odnośniku 12": it holds until that footnote's
change. The Constitutional Tribunal's rulings ("Utracił moc z dniem …", "Z dniem … na podstawie wyroku
Trybunału Konstytucyjnego …") end a unit's force; the act's own history is in the footnotes of its last
article ("Ustawa została ogłoszona w dniu …", "Ustawa weszła w życie z dniem …, z wyjątkiem …").

A footnote is read by its form, never by its topic; one whose form is none of these is a note, kept as
printed. A date the chain of footnotes does not state stays None.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, replace

from pipeline.core import dates
from pipeline.sources.references import cited_act

EXTRACTOR = "footnotes 1"  # bump when the rules change: stored texts are read again

# The kinds of footnote (docs/results.md names them for the timeline).
ADDED, WORDING, AMENDED, REPEALED, RENUMBERED, LOSES_FORCE, UNTIL_CHANGE, ENTERS, PUBLISHED, NOTE = (
    "added", "wording", "amended", "repealed", "renumbered", "loses_force", "until_change", "enters",
    "published", "note")
# Kinds that are a change of the unit the footnote marks (an entry of its timeline).
CHANGES = (ADDED, WORDING, AMENDED, REPEALED, RENUMBERED, LOSES_FORCE)

# The part of a unit a footnote may be about: "Zdanie drugie ze zmianą …", "Wprowadzenie do wyliczenia w
# brzmieniu …", "Część wspólna …", "Rozdział dodany przez …" (on a chapter heading).
_PART = (r"(?P<part>Zdanie\s+\w+|Wprowadzenie\s+do\s+wyliczenia|Część\s+wspólna|Rozdział|Oddział|Dział|"
         r"Tytuł|Załącznik)\s+")
_FORMS: tuple[tuple[str, re.Pattern], ...] = tuple((kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in (
    (UNTIL_CHANGE, rf"^(?:{_PART})?(?:w\s+tym\s+brzmieniu\s+)?obowiązuje\s+do\s+(?:dnia\s+)?wejścia\s+w\s+życie\s+"
                   r"zmian\w*,?\s+o\s+której\s+mowa\s+w\s+odnośniku\s+(?P<ref>\d+)"),
    (ADDED, rf"^(?:{_PART})?dodan[yaeio]\s+przez\s+"),
    (WORDING, rf"^(?:{_PART})?w\s+brzmieniu\s+ustalonym\s+przez\s+"),
    (AMENDED, rf"^(?:{_PART})?ze\s+zmian(?:ą|ami)\s+wprowadzon(?:ą|ymi)\s+przez\s+"),
    (RENUMBERED, r"^oznaczenie\s+(?P<part>.+?)\s+nadane\s+przez\s+"),
    (REPEALED, rf"^(?:{_PART})?(?:(?:uchylon[yaeio]\s+)?przez\s+|zniesion[yaeio]\s+na\s+podstawie\s+)"),
    # A derogation by another act's provision: "Na podstawie art. 4 pkt 5 ustawy …, dział dwunasty nie obejmuje
    # art. 266–280.", "Na podstawie art. 170 pkt 8 ustawy …, art. 24 utracił moc w zakresie …".
    (REPEALED, r"^na\s+podstawie\s+(?:art\.|§).{5,400}?,\s+[^,]{0,60}?(?:utracił\w*\s+moc|nie\s+obejmuje)\b"),
    (PUBLISHED, r"^(?:niniejsza\s+)?ustawa\s+została\s+ogłoszona\s+w\s+dniu\s+"),
    (ENTERS, r"^(?:niniejsza\s+)?ustawa\s+weszła\s+w\s+życie\s+"),
    (LOSES_FORCE, rf"^(?:{_PART})?(?:utracił\w*\s+moc\s+z\s+dniem|z\s+dniem\s+.{{5,30}}?\s+na\s+podstawie\s+wyroku\s+"
                  r"trybunału|uznan[yaeio]\s+za\s+niezgodn\w+\s+z\s+konstytucją)"),
))
_REF = re.compile(r"o\s+któr\w+\s+mowa\s+w\s+odnośniku\s+(?P<ref>\d+)", re.IGNORECASE)
# The unit of the amending act: "przez art. 1 pkt 1 lit. a ustawy", "przez art. 87 ustawy", "przez § 2 rozporządzenia".
_SOURCE_UNIT = re.compile(r"(?:przez|podstawie)\s+(?P<unit>(?:art\.|§)\s*\d+\w*(?:\s*(?:ust\.|§|pkt|lit\.|tiret)\s*\w+)*)",
                          re.IGNORECASE)
# The amending act's date ("…, która weszła w życie z dniem 1 czerwca 2025 r.", "która wejdzie w życie …"),
# and the unit's own where it differs ("; wszedł w życie z dniem 22 czerwca 2025 r.").
_ACT_DATE = re.compile(rf"któr[aey]\s+(?:weszł[ay]|wejdzie|wejdą)\s+w\s+życie\s+z\s+dniem\s+{dates.DATE}", re.IGNORECASE)
_OWN_DATE = re.compile(rf";\s*(?:wszedł|weszł[aoy]|wejdzie|wejdą)\s+w\s+życie\s+z\s+dniem\s+{dates.DATE}", re.IGNORECASE)
_ON_DATE = re.compile(rf"z\s+dniem\s+{dates.DATE}", re.IGNORECASE)
_PARTIAL = re.compile(r"\bw\s+(?:zakresie|części)\b|\brozumian\w+\s+jako\b", re.IGNORECASE)
_IN_DAY = re.compile(rf"w\s+dniu\s+{dates.DATE}", re.IGNORECASE)


@dataclass(frozen=True)
class Reading:
    """One footnote as read: what it says of the unit it marks.

    ``date``: when the change took (or takes) effect: the unit's own date where the footnote gives one,
    else the amending act's (through the footnote that names it); for ``until_change``, the day the
    change of footnote ``ref`` takes effect; for ``loses_force`` and ``published``, the date given.
    ``act_date``: the amending act's own date (what another footnote referring to this one inherits).
    """

    number: int
    kind: str
    text: str
    part: str = ""  # "zdanie drugie", "wprowadzenie do wyliczenia", "rozdział" (lower case); "" the unit
    source_act: str | None = None  # ELI id of the act that made the change, where its citation tells
    source_title: str | None = None
    source_unit: str | None = None  # "art. 26 pkt 1 lit. a"
    date: dt.date | None = None
    act_date: dt.date | None = None
    ref: int | None = None  # "o której mowa w odnośniku N" (until_change: the change it waits for)
    future: bool = False  # worded as to come ("wejdzie w życie"): not yet in force when the text was announced
    partial: bool = False  # only "w zakresie …" / "w części …": the unit's text stays in force


def classify(number: int, text: str) -> Reading:
    """One footnote read alone (its references to other footnotes unresolved: :func:`read`)."""
    text = " ".join(text.split())
    kind, m = next(((k, m) for k, p in _FORMS if (m := p.search(text))), (NOTE, None))
    part = ""
    if m is not None and m.groupdict().get("part"):
        part = " ".join(m.group("part").split()).lower()
    ref = m.group("ref") if m is not None and "ref" in m.groupdict() and m.group("ref") else None
    if kind == NOTE:
        return Reading(number, NOTE, text)
    if kind == UNTIL_CHANGE:
        return Reading(number, kind, text, part, ref=int(ref) if ref else None)
    if kind == PUBLISHED:
        found = _IN_DAY.search(text)
        return Reading(number, kind, text, date=dates.date_of(found) if found else None)
    if kind in (ENTERS, LOSES_FORCE):
        found = _ON_DATE.search(text)
        day = dates.date_of(found) if found else None
        source, title = _ruling(text) if kind == LOSES_FORCE else (None, None)
        referred = _REF.search(text) if source is None else None  # "wyroku …, o którym mowa w odnośniku 1"
        return Reading(number, kind, text, part, source_act=source, source_title=title, date=day, act_date=day,
                       ref=int(referred.group("ref")) if referred else None, partial=bool(_PARTIAL.search(text)))
    # A change by an act: the act named here, or in the footnote referred to.
    body = text
    unit = _SOURCE_UNIT.search(body)
    referred = _REF.search(body)
    source, title = (None, None) if referred and referred.start() < _act_end(body) else cited_act(body)
    act_date = _ACT_DATE.search(body)
    own = _OWN_DATE.search(body)
    act_day = dates.date_of(act_date) if act_date else None
    own_day = dates.date_of(own) if own else None
    words = said.group(0).lower() if (said := own or act_date) else ""
    return Reading(number, kind, text, part, source_act=source, source_title=title,
                   source_unit=" ".join(unit.group("unit").split()) if unit else None,
                   date=own_day or act_day, act_date=act_day,
                   ref=int(referred.group("ref")) if referred else None, future="wejd" in words,
                   partial=kind == REPEALED and bool(_PARTIAL.search(text)))


# A ruling of the Constitutional Tribunal, announced in the journal: "wyroku Trybunału Konstytucyjnego z dnia
# 19 kwietnia 2006 r. sygn. akt K 6/06 (Dz. U. poz. 529)": the journal of the ruling's year, where none is named.
_RULING = re.compile(rf"wyrok\w*\s+Trybunału\s+Konstytucyjnego\s+z\s+dnia\s+{dates.DATE}[^()]{{0,60}}"
                     r"\(\s*Dz\.\s*U\.\s*(?:z\s+(?P<jyear>\d{4})\s*r\.\s*)?(?:Nr\s*\d+,\s*)?poz\.\s*(?P<pos>\d+)",
                     re.IGNORECASE)


def _ruling(text: str) -> tuple[str | None, str | None]:
    """The journal position of the ruling a loss of force rests on (its ELI id), and the words naming it."""
    m = _RULING.search(text)
    if m is None:
        return None, None
    return f"DU/{m.group('jyear') or m.group('year')}/{m.group('pos')}", " ".join(m.group(0).split())


def _act_end(text: str) -> int:
    """Where the first act named in ``text`` ends: a reference to another footnote before it is the act."""
    m = re.search(r"\bustaw\w*|\brozporządzeni\w*|\bdekret\w*|\bkodeks\w*", text, re.IGNORECASE)
    return m.end() + 40 if m else len(text)


def read(texts: dict[int, str]) -> dict[int, Reading]:
    """Every footnote of a text, by number, each with the act and date the chain of footnotes gives it
    ("ustawy, o której mowa w odnośniku 3": footnote 3's act, and its date unless this footnote gives the
    unit's own), and each ``until_change`` with the date of the change it waits for."""
    read_alone = {n: classify(n, t) for n, t in texts.items()}
    out: dict[int, Reading] = {}
    for n, r in read_alone.items():
        if r.kind in CHANGES and r.ref is not None and r.source_act is None:
            named = _named(read_alone, r.ref)
            if named is not None:
                r = replace(r, source_act=named.source_act, source_title=named.source_title,
                            act_date=r.act_date or named.act_date, date=r.date or r.act_date or named.act_date,
                            future=r.future or (r.date is None and named.future))
        out[n] = r
    for n, r in list(out.items()):
        if r.kind == UNTIL_CHANGE and r.ref in out:
            change = out[r.ref]
            out[n] = replace(r, date=change.date, future=change.future, source_act=change.source_act,
                             source_title=change.source_title, source_unit=change.source_unit)
    return out


def _named(readings: dict[int, Reading], number: int, depth: int = 0) -> Reading | None:
    """The footnote that names the act footnote ``number`` is about (a chain of references followed)."""
    r = readings.get(number)
    if r is None or depth > 5:
        return None
    if r.source_act is not None or r.source_title is not None:
        return r
    return _named(readings, r.ref, depth + 1) if r.ref is not None else None
