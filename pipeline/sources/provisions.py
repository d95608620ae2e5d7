"""When each unit of an act comes into force, read from its final provisions by the rules of Polish
legislative technique: "Ustawa wchodzi w życie po upływie 14 dni od dnia ogłoszenia, z wyjątkiem:
1) art. 125 ust. 4, który wchodzi w życie z dniem następującym po dniu ogłoszenia; 2) art. 8–18 oraz
rozdziałów 3–5, 8 i 9, które wchodzą w życie po upływie 3 miesięcy od dnia ogłoszenia."

A provision is read as: the act it is about (this act, or another act named by date, title and Dz. U.
position: "Ustawa z dnia 12 lipca 2024 r. – Prawo komunikacji elektronicznej (Dz. U. poz. 1221)
wchodzi w życie …" in the act that introduces it), the verb ("wchodzi w życie", or "stosuje się od"),
when (a period after publication, the day after publication, publication, a date, the term another
act sets, an event), and the exceptions, each a list of units (articles, ustępy, points, letters,
chapters and sections) with a "when" of its own. What is not read by these rules is kept as a rule
whose "when" is unknown, with its words: a date is never guessed.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass

from pipeline.core import dates, units
from pipeline.core.dates import Period
from pipeline.sources.parse.model import Article
from pipeline.sources.references import cited_act, cited_units

EXTRACTOR = "provisions 2"  # bump when the rules change: stored texts are read again

# The kinds of "when".
PERIOD, NEXT_DAY, PUBLICATION, DATE, OTHER_ACT, EVENT, UNKNOWN = (
    "period", "next_day", "publication", "date", "other_act", "event", "unknown")
# Counted from publication to a calendar day: "z pierwszym dniem miesiąca następującego po miesiącu
# ogłoszenia" (or after a period: "… po upływie 14 dni od dnia ogłoszenia"), "z dniem 1 stycznia roku
# następującego po roku, w którym ustawa została ogłoszona".
NEXT_MONTH, NEXT_YEAR = "next_month", "next_year"
KINDS = (PERIOD, NEXT_DAY, PUBLICATION, DATE, OTHER_ACT, EVENT, UNKNOWN, NEXT_MONTH, NEXT_YEAR)


@dataclass(frozen=True)
class When:
    """When a rule's units take effect, as the provision says it."""

    kind: str
    text: str  # the words as printed ("po upływie 14 dni od dnia ogłoszenia")
    period: Period | None = None
    date: dt.date | None = None
    act: str | None = None  # OTHER_ACT: the act whose provisions set the term (ELI id, where cited)
    act_title: str | None = None
    day_month: tuple[int, int] | None = None  # NEXT_YEAR: the day and month of the year after publication

    def on(self, published: dt.date | None) -> dt.date | None:
        """The day it names, given the act's publication date; None where the text does not determine it."""
        if self.kind == DATE:
            return self.date
        if published is None:
            return None
        if self.kind == PERIOD and self.period is not None:
            return self.period.after(published)
        if self.kind == NEXT_DAY:
            return published + dt.timedelta(days=1)
        if self.kind == PUBLICATION:
            return published
        if self.kind == NEXT_MONTH:
            # The first day of the month after publication, or after the last day of the period.
            last = self.period.end(published) if self.period is not None else published
            return dt.date(last.year + last.month // 12, last.month % 12 + 1, 1)
        if self.kind == NEXT_YEAR and self.day_month is not None:
            try:
                return dt.date(published.year + 1, self.day_month[1], self.day_month[0])
            except ValueError:
                return None
        return None


@dataclass(frozen=True)
class Rule:
    """One "unit → when" of an act's final provisions. ``article`` None: the act as a whole (the main
    rule); ``chapter``: a chapter or section, whose articles the rule covers."""

    when: When
    clause: str  # the provision as printed: what is quoted where the date is undetermined
    source_article: str  # the article that states it
    article: str | None = None
    unit: str = ""  # "ust. 4", "ust. 1 pkt 1 lit. a tiret piąte"; "" the whole article
    chapter: str | None = None  # "Rozdział 3", "DZIAŁ II"
    scope: str | None = None  # "w zakresie art. 16a ust. 4 pkt 2c i 2d": the rule covers the unit only so far
    act: str | None = None  # another act the rule is for (ELI id where cited); None: the act itself
    act_title: str | None = None
    verb: str = "enters"  # enters ("wchodzi w życie") | applies ("stosuje się od")

    @property
    def target(self) -> str:
        """The unit as a lawyer would name it: "art. 125 ust. 4", "rozdział 3", "the act"."""
        if self.chapter:
            return self.chapter.lower()
        if self.article is None:
            return "the act"
        return f"art. {self.article}" + (f" {self.unit}" if self.unit else "")


# --- the grammar ----------------------------------------------------------------------------------------

# "wchodzi w życie", and as a consolidated text's footnote tells the past: "weszła", "wszedł", "weszły".
_ENTERS = r"(?:wchodzi|wchodzą|weszła|weszło|weszły|wszedł)\s+w\s+życie"
# The act a provision is about: this one ("Ustawa", "Kodeks", "Niniejsza ustawa" …), or one named by its
# date and title ("Ustawa z dnia 12 lipca 2024 r. – Prawo komunikacji elektronicznej (Dz. U. poz. 1221)").
_SUBJECT = re.compile(
    r"^(?P<subject>(?:Niniejsza\s+)?(?:Ustawa|Kodeks|Rozporządzenie|Dekret|Obwieszczenie)"
    r"(?P<named>\s+z\s+dnia\s+.+?(?:\(\s*Dz\.\s*U\.[^)]*\)|(?=\s+wchodz)))?)"
    rf"\s+{_ENTERS}\s+(?P<rest>.+)$", re.DOTALL)
# A provision whose subject is units of the act: "Art. 12 i art. 15 wchodzą w życie …", "Przepisy art. 3–5
# oraz rozdziału 4 stosuje się od dnia …", "Rozdział 3 wchodzi w życie …".
_UNITS_SUBJECT = re.compile(
    r"^(?P<units>(?:Przepis\w*\s+)?(?:art\.|rozdzia\w*|dzia\w*|oddzia\w*)\s*\S.*?)"
    rf"\s+(?:{_ENTERS}|(?P<applies>stosuje\s+się))\s+(?P<when>(?:z\s+dniem|od\s+dnia|po\s+upływie|w\s+terminie|z\s+pierwszym).+)$",
    re.IGNORECASE | re.DOTALL)
_WHEN_PERIOD = re.compile(rf"^po\s+upływie\s+(?P<period>{dates.PERIOD})\s+od\s+dnia\s+(?:jej\s+|jego\s+)?ogłoszenia",
                          re.IGNORECASE)
_WHEN_NEXT_DAY = re.compile(r"^z\s+dniem\s+następującym\s+po\s+dniu\s+(?:jej\s+|jego\s+)?ogłoszenia", re.IGNORECASE)
_WHEN_PUBLICATION = re.compile(r"^z\s+dniem\s+(?:jej\s+|jego\s+)?ogłoszenia(?:\s+ustawy)?", re.IGNORECASE)
_WHEN_DATE = re.compile(rf"^(?:z\s+dniem|od\s+dnia)\s+{dates.DATE}", re.IGNORECASE)
_WHEN_NEXT_MONTH = re.compile(
    r"^z\s+(?:pierwszym\s+dniem|dniem\s+1(?:\.|-go)?)\s+miesiąca\s+następującego\s+po\s+(?:"
    rf"upływie\s+(?P<period>{dates.PERIOD})\s+od\s+dnia\s+(?:jej\s+|jego\s+)?ogłoszenia"
    r"|miesiącu,?\s+w\s+którym\s+(?:upłynął\s+(?P<period2>" + dates.PERIOD + r")\s+od\s+dnia\s+)?"
    r"(?:(?:jej|jego)\s+)?(?:ustaw\w+\s+|rozporządzeni\w+\s+)?(?:został\w*\s+ogłoszon\w+|ogłoszenia)"
    r"|miesiącu\s+(?:jej\s+|jego\s+)?ogłoszenia)", re.IGNORECASE)
_WHEN_NEXT_YEAR = re.compile(
    rf"^z\s+dniem\s+(?P<day>\d{{1,2}})\s+(?P<month>{dates.MONTH})\s+roku\s+następującego\s+po\s+roku,?\s+"
    r"(?:w\s+którym\s+(?:ustaw\w+\s+|rozporządzeni\w+\s+)?(?:został\w*\s+ogłoszon\w+)|(?:jej\s+|jego\s+)?ogłoszenia)",
    re.IGNORECASE)
_WHEN_OTHER_ACT = re.compile(r"^w\s+terminie\s+(?:i\s+na\s+zasadach\s+)?określon\w+\s+(?:w\s+)?(?P<act>.+)", re.IGNORECASE)
_WHEN_ENTRY_OF = re.compile(r"^z\s+dniem\s+wejścia\s+w\s+życie\s+(?P<act>.+)", re.IGNORECASE)
_EXCEPT = re.compile(r",?\s*z\s+wyjątkiem\s*:?\s*", re.IGNORECASE)
# An exception: its units, then "który/która/które wchodzi/wchodzą w życie …" or "… stosuje się od …".
_EXCEPTION = re.compile(
    rf"^(?P<units>.+?),?\s+(?:któr[yaeą]|które)\s+(?:{_ENTERS}|(?P<applies>stosuje\s+się))\s+(?P<when>.+)$",
    re.IGNORECASE | re.DOTALL)
_ITEM = re.compile(r"(?:^|;\s*|:\s*)\d+\)\s+")  # "1) …; 2) …"
# A chapter or section named among the units: "rozdziału 6", "rozdziałów 3–5, 8 i 9", "działu II".
_CHAPTERS = re.compile(r"\b(?P<kind>rozdzia\w*|dzia\w*|oddzia\w*)\s+(?P<list>[0-9IVXLC]+[a-z]?(?:\s*(?:[–-]|,|\s+i\s+|\s+oraz\s+)\s*[0-9IVXLC]+[a-z]?)*)",
                       re.IGNORECASE)
_QUALIFIER = re.compile(r"\s+(?P<q>(?:zdanie|tiret)\s+\w+|w\s+zakresie\s+.+?)(?=,\s*(?:art\.|ust\.|pkt|§|rozdzia)|\s+(?:oraz|i)\s+(?:art\.|rozdzia)|$)",
                        re.IGNORECASE)
_QUOTED = re.compile(r"„[^„”]*”")
_CHAPTER_WORD = {"rozdzia": "Rozdział", "dzia": "DZIAŁ", "oddzia": "Oddział"}


def when(text: str) -> When:
    """What a provision's words after "wchodzi w życie" say of when ("po upływie 14 dni od dnia ogłoszenia")."""
    text = " ".join(text.split()).rstrip(" .;")
    if m := _WHEN_PERIOD.match(text):
        return When(PERIOD, text, period=Period.parse(m.group("period")))
    if _WHEN_NEXT_DAY.match(text):
        return When(NEXT_DAY, text)
    if m := _WHEN_NEXT_MONTH.match(text):
        period = m.group("period") or m.group("period2")
        return When(NEXT_MONTH, text, period=Period.parse(period) if period else None)
    if m := _WHEN_NEXT_YEAR.match(text):
        return When(NEXT_YEAR, text, day_month=(int(m.group("day")), dates.MONTHS.index(m.group("month").lower()) + 1))
    if m := _WHEN_DATE.match(text):
        return When(DATE, text, date=dates.date_of(m))
    if _WHEN_PUBLICATION.match(text):
        return When(PUBLICATION, text)
    if (m := _WHEN_OTHER_ACT.match(text)) or (m := _WHEN_ENTRY_OF.match(text)):
        act, title = cited_act(m.group("act"))
        return When(OTHER_ACT, text, act=act, act_title=title or " ".join(m.group("act").split()))
    if text.lower().startswith(("od dnia", "z dniem")):
        return When(EVENT, text)
    return When(UNKNOWN, text)


def _chapter_names(kind: str, listed: str) -> list[str]:
    word = next(v for k, v in _CHAPTER_WORD.items() if kind.lower().startswith(k))
    names: list[str] = []
    parts = re.split(r"\s*(?:,|\s+i\s+|\s+oraz\s+)\s*", listed.strip())
    for part in parts:
        if m := re.fullmatch(r"(\d+)\s*[–-]\s*(\d+)", part):
            names.extend(f"{word} {n}" for n in range(int(m.group(1)), int(m.group(2)) + 1))
        elif part:
            names.append(f"{word} {part}")
    return names


def _targets(units: str, known: list[str]) -> list[tuple[str | None, str, str | None, str | None]]:
    """(article, unit, chapter, scope) for each unit an exception names."""
    units = " ".join(units.split())
    found: list[tuple[str | None, str, str | None, str | None]] = []
    for m in _CHAPTERS.finditer(units):
        found.extend((None, "", name, None) for name in _chapter_names(m.group("kind"), m.group("list")))
    plain = _CHAPTERS.sub("", units)
    # "zdanie trzecie", "tiret piąte", "w zakresie …": said of the unit before them.
    qualifiers: list[tuple[int, str]] = []
    for q in _QUALIFIER.finditer(plain):
        qualifiers.append((len(cited_units(plain[:q.start()], known)), q.group("q")))
    listed = cited_units(_QUALIFIER.sub("", plain), known)
    for i, (article, unit) in enumerate(listed):
        said = [q for n, q in qualifiers if n == i + 1]
        scope = next((q for q in said if q.lower().startswith("w zakresie")), None)
        more = " ".join(q for q in said if q is not scope)
        found.append((article, f"{unit} {more}".strip(), None, scope))
    return found


def _sentences(article: Article) -> Iterable[tuple[str, str]]:
    """(unit, text) for each ustęp or paragraph of an article (the whole article where it has none), its
    points and letters joined to it: a provision that may say when an act comes into force."""
    text = _QUOTED.sub("„…”", article.text)  # a quoted provision is another act's, being amended
    label = re.match(r"^Art\.\s*\S+\.\s*", text)
    body = text[label.end():] if label else text
    current = ""
    lines: list[str] = []
    for line in body.split("\n"):
        opens = units.label(line.strip())
        if opens is not None and opens.kind in (units.PARAGRAPH, units.SECTION):
            if lines:
                yield current, " ".join(lines)
            current, lines = opens.cited, [line.strip()[opens.end:]]
        else:
            lines.append(line.strip())
    if lines:
        yield current, " ".join(lines)


def read(articles: list[Article]) -> list[Rule]:
    """The entry-into-force rules the articles state (the act's own, and any it states for another act)."""
    known = [a.number for a in articles]
    rules: list[Rule] = []
    seen: set[str] = set()
    for article in articles:
        if article.repealed:
            continue
        for _unit, sentence in _sentences(article):
            clause = " ".join(sentence.split())
            m = _SUBJECT.match(clause)
            if m is None and (u := _UNITS_SUBJECT.match(clause)) is not None:
                rules.extend(_units_rules(u, clause, article.number, known))
                continue
            if not m or clause in seen:
                continue
            seen.add(clause)
            rules.extend(_rules(m, clause, article.number, known))
    return rules


def _units_rules(m: re.Match, clause: str, source: str, known: list[str]) -> list[Rule]:
    """The rules of a provision whose subject is units ("Art. 12 wchodzi w życie z dniem …"). A provision
    that names no date form (one that applies other provisions "odpowiednio", say) is no rule."""
    said = when(m.group("when"))
    if said.kind in (UNKNOWN, EVENT) and m.group("applies"):
        return []
    verb = "applies" if m.group("applies") else "enters"
    listed = m.group("units")
    # "Przepisy art. 4, art. 17–19 …, w zakresie w jakim dotyczą umowy …, stosuje się od …": the scope after
    # the list is said of every unit in it.
    common = re.search(r",\s*(?P<scope>w\s+zakresie\b.*?),?\s*$", listed, re.IGNORECASE)
    if common:
        listed = listed[:common.start()]
    return [Rule(said, clause, source, article=article, unit=unit, chapter=chapter,
                 scope=" ".join(common.group("scope").split()) if common else scope, verb=verb)
            for article, unit, chapter, scope in _targets(listed, known)]


def read_clause(text: str, source_article: str = "", known: list[str] | None = None) -> list[Rule]:
    """The rules one provision states ("Ustawa weszła w życie z dniem 5 czerwca 2009 r., z wyjątkiem art.
    41–46 …, które weszły w życie z dniem 21 maja 2009 r." in a consolidated text's footnote); [] when it
    is not one."""
    clause = " ".join(text.split())
    m = _SUBJECT.match(clause)
    return _rules(m, clause, source_article, known or []) if m else []


def _rules(m: re.Match, clause: str, source: str, known: list[str]) -> list[Rule]:
    act = act_title = None
    if m.group("named"):
        act, act_title = cited_act(m.group("subject"))
        act_title = act_title or " ".join(m.group("subject").split())
    rest = " ".join(m.group("rest").split())
    parts = _EXCEPT.split(rest, maxsplit=1)
    main = parts[0]
    rules = [Rule(when(main), clause, source, act=act, act_title=act_title)]
    if len(parts) == 1:
        return rules
    items = [i for i in _ITEM.split(parts[1]) if i.strip()] if _ITEM.search(parts[1]) else [parts[1]]
    for item in items:
        e = _EXCEPTION.match(item.strip().rstrip(".;"))
        if not e:
            rules.append(Rule(When(UNKNOWN, item.strip()), clause, source, article="?", act=act, act_title=act_title))
            continue
        said = when(e.group("when"))
        verb = "applies" if e.group("applies") else "enters"
        for article, unit, chapter, scope in _targets(e.group("units"), known if act is None else []):
            rules.append(Rule(said, clause, source, article=article, unit=unit, chapter=chapter, scope=scope,
                              act=act, act_title=act_title, verb=verb))
    return rules
