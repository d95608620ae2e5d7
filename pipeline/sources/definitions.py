"""An act's definitions, read from its articles, in the three ways Polish statutes write them:
- a list: "Użyte w ustawie określenia oznaczają: … 4) pacjent – osobę …" (and "Ilekroć w ustawie jest
  mowa o: 1) …"), one definition a point;
- whenever: "Ilekroć w ustawie jest mowa o lekarzu, rozumie się przez to także …";
- a defining sentence opening an article or a unit: "Pracownikiem jest osoba …".

A term is kept as printed ("lekarzu", "Pracownikiem" lowercased): the text search's Polish dictionary
finds it in other articles in any case ending (pipeline.storage.context).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from pipeline.core import units
from pipeline.core.numbering import label_end
from pipeline.sources.parse.model import Article

EXTRACTOR = "definitions 2"  # bump when the rules change: stored texts are read again (pipeline db upgrade)


@dataclass(frozen=True)
class Definition:
    article: str
    unit: str  # "ust. 1 pkt 4", "pkt 4", "§ 1", "" (the whole article)
    term: str
    text: str  # the definition as printed (the point, or the sentence)
    formula: str  # list | whenever | sentence


# The lead-in of a list of definitions: "Użyte w ustawie określenia oznaczają:", "Ilekroć w ustawie jest
# mowa o:", "W rozumieniu ustawy:", "Na potrzeby ustawy: …".
_LIST_LEAD = re.compile(
    r"(?:(?:określenia|wyrażenia|pojęcia|terminy|użyte|używane)[^:\n]{0,120}?\s+(?:oznaczają|należy\s+rozumieć|rozumie\s+się)"
    r"|ilekroć\s+(?:w\s+|przepisy\s+)[^:\n]{0,120}?\s+(?:mowa|stanowią|jest\s+mowa|używa\s+się\s+(?:określenia|wyrażenia))\s+(?:jest\s+)?o?"
    r"|w\s+rozumieniu\s+(?:niniejszej\s+)?(?:ustawy|kodeksu|rozdziału|działu)|na\s+potrzeby\s+(?:niniejszej\s+)?ustawy)"
    r"[^:\n]{0,60}:\s*$",
    re.IGNORECASE,
)
# Where a point's term ends: the words that say what it means (after the term, maybe with a dash), else
# the first dash ("4) pacjent – osobę …"); a term may hold a dash of its own ("ubezpieczonej – matce
# dziecka – należy przez to rozumieć …").
_MEANS = re.compile(r",?\s+(?:[–—-]\s+)?(?:rozumie\s+się\s+(?:przez\s+to\s+)?|odnosi\s+się\s+to\s+(?:również\s+|także\s+)?do\b"
                    r"|należy\s+przez\s+to\s+rozumieć|oznacza(?:\s+to)?\b)")
_DASH = re.compile(r"\s+[–—-]\s+")
# Several terms defined at once: "domu pomocy społecznej lub środowiskowym domu samopomocy".
_TERMS = re.compile(r",\s+|\s+lub\s+|\s+oraz\s+")
# "Przez podnoszenie kwalifikacji zawodowych rozumie się …", "przez dobę należy rozumieć …"
_PRZEZ = re.compile(r"^(?:\d+\)\s+)?[Pp]rzez\s+(?P<term>[^,:;\n]{2,100}?)\s+(?:należy\s+rozumieć|rozumie\s+się)\s+(?P<text>\S)")
# "Mobbing oznacza …", "Równe traktowanie w zatrudnieniu oznacza …"
_MEANS_SENTENCE = re.compile(r"^(?P<term>[A-ZĄĆĘŁŃÓŚŹŻ][a-ząćęłńóśźż]+(?:\s+[a-ząćęłńóśźż]+){0,5}?)\s+oznacza\s+\S")
# "Pracownikiem jest osoba …", "Czasem pracy jest czas …", "Młodocianym w rozumieniu kodeksu jest osoba …":
# a term in the instrumental opens the unit.
_SENTENCE = re.compile(
    r"^(?P<term>[A-ZĄĆĘŁŃÓŚŹŻ][a-ząćęłńóśźż]+(?:em|iem|ą|ią|ami|ymi|imi|ym|im))(?P<rest>(?:\s+[a-ząćęłńóśźż]+){0,4}?)"
    r"\s+(?:w\s+rozumieniu\s+[^,]+?\s+)?(?:jest|są)\s+(?P<text>[^\n]+)")
# Nouns that open "X is …" sentences which state a fact, not a term's meaning ("Celem ustawy jest …").
_NOT_TERMS = ("celem", "zadaniem", "obowiązkiem", "podstawą", "warunkiem", "organem", "przedmiotem",
              "wyjątkiem", "właściwym", "właściwą", "dniem", "terminem", "okresem")
_WHENEVER = re.compile(
    r"ilekroć\s+w\s+(?:niniejszej\s+)?(?:ustawie|rozdziale|dziale|kodeksie|przepisach[^,]{0,60}?)[^,:\n]{0,60}?\s+"
    r"(?:jest\s+)?mowa\s+(?:jest\s+)?o\s+(?P<term>[^,:\n]{2,120}?)\s*,\s*(?:bez\s+bliższego\s+określenia,\s*)?"
    r"(?:to\s+)?(?:należy\s+przez\s+to\s+rozumieć|rozumie\s+się\s+przez\s+to)\s+(?P<text>[^\n]+)",
    re.IGNORECASE,
)


def _point_terms(body: str) -> tuple[list[str], str] | None:
    """The terms a point defines and the rest of it, or None when it defines nothing."""
    m = _MEANS.search(body)
    head = body[:m.start()] if m else (_DASH.split(body, maxsplit=1)[0] if _DASH.search(body) else None)
    if head is None or not 0 < len(head) <= 120 or head.endswith(("(uchylony)", "(uchylona)")):
        return None
    head = head.strip().rstrip(",–—-").strip()
    several = m is not None and ("odpowiednio" in body[m.end():m.end() + 20]
                                 or (_TERMS.search(head) is not None and len(head.split()) <= 8))
    parts = _TERMS.split(head) if several else [head]
    terms = [_clean(t) for t in parts if t.strip() and not t.strip().startswith("bez ")]
    terms = [t for t in terms if t and not t.lower().startswith(("uchyl", "(uchyl"))]
    return (terms, body) if terms else None




def _clean(term: str) -> str:
    return re.sub(r"\s+", " ", term.strip(" „”\"'–—-,")).strip()


def extract(articles: Iterable[Article]) -> list[Definition]:
    out: list[Definition] = []
    for a in articles:
        if a.repealed:
            continue
        out.extend(_article_definitions(a))
    return out


def _article_definitions(a: Article) -> list[Definition]:
    out: list[Definition] = []
    paragraph = section = ""
    lead: str | None = None  # the unit whose list of definitions we are in
    parent: str | None = None  # a point defined by its letters ("6) przymusie bezpośrednim … rozumieć:")
    for raw in a.text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        unit_line = line
        opens = units.label(line, label_end(line))
        if opens is not None and opens.kind == units.PARAGRAPH:
            paragraph, section, lead, parent = opens.cited, "", None, None
            unit_line = line[opens.end:]
        elif opens is not None and opens.kind == units.SECTION:
            section, lead, parent = opens.cited, None, None
            unit_line = line[opens.end:]
        else:
            unit_line = line[label_end(line):]
        where = " ".join(u for u in (paragraph, section) if u)
        own = units.label(line)  # a point's or a letter's label opens the line itself
        point = own if own is not None and own.kind == units.POINT else None
        if lead is not None and point:
            parent = None
            unit = f"{lead} {point.cited}".strip()
            if found := _point_terms(line[point.end:]):
                out.extend(Definition(a.number, unit, term, line, "list") for term in found[0])
                if line.endswith(":"):
                    parent = unit
            elif m := _PRZEZ.match(line):
                out.append(Definition(a.number, unit, _clean(m.group("term")), line, "whenever"))
            continue
        if lead is not None and own is not None and own.kind == units.LETTER:
            if parent and (found := _point_terms(line[own.end:])):
                out.extend(Definition(a.number, f"{parent} {own.cited}", term, line, "list") for term in found[0])
            continue  # a definition's own letters
        if lead is not None and line.startswith(("–", "-")) or parent and not point:
            continue  # the closing words of a point
        if _LIST_LEAD.search(unit_line):
            lead = where
            continue
        lead = None
        for m in _WHENEVER.finditer(unit_line):
            out.append(Definition(a.number, where, _clean(m.group("term")), unit_line, "whenever"))
        if m := _PRZEZ.match(unit_line):
            out.append(Definition(a.number, where, _clean(m.group("term")), unit_line, "whenever"))
        if (m := _SENTENCE.match(unit_line)) and m.group("term").lower() not in _NOT_TERMS:
            term = m.group("term") + (m.group("rest") or "")
            out.append(Definition(a.number, where, term.lower(), unit_line, "sentence"))
        elif m := _MEANS_SENTENCE.match(unit_line):
            out.append(Definition(a.number, where, m.group("term").lower(), unit_line, "sentence"))
    return out
