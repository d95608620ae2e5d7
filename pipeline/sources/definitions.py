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

from pipeline.sources.parse.model import Article

EXTRACTOR = "definitions 1"  # bump when the rules change: stored texts are read again (pipeline db upgrade)


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
# Where a point's term ends: a dash, or the words that say what it means.
_TERM_END = re.compile(r"\s+[–—-]\s+|,?\s+(?:[–—-]\s+)?(?:rozumie\s+się\s+przez\s+to|odnosi\s+się\s+to\s+do|należy\s+przez\s+to\s+rozumieć|oznacza)\s+")
_POINT = re.compile(r"^(\d+[a-z]*(?:\^\d+)?)\)\s+(.*)$")
_LETTER_POINT = re.compile(r"^[a-z]\)\s")
_WHENEVER = re.compile(
    r"ilekroć\s+w\s+(?:niniejszej\s+)?(?:ustawie|rozdziale|dziale|kodeksie|przepisach[^,]{0,60}?)[^,:\n]{0,60}?\s+"
    r"(?:jest\s+)?mowa\s+(?:jest\s+)?o\s+(?P<term>[^,:\n]{2,120}?)\s*,\s*(?:bez\s+bliższego\s+określenia,\s*)?"
    r"(?:to\s+)?(?:należy\s+przez\s+to\s+rozumieć|rozumie\s+się\s+przez\s+to)\s+(?P<text>[^\n]+)",
    re.IGNORECASE,
)
# "Pracownikiem jest osoba …", "Pracodawcą jest jednostka …": a term in the instrumental opens the unit.
_SENTENCE = re.compile(
    r"^(?P<term>[A-ZĄĆĘŁŃÓŚŹŻ][a-ząćęłńóśźż]+(?:em|iem|ą|ią|ami|ymi|imi))(?:\s+(?P<rest>[a-ząćęłńóśźż]+(?:ym|im|ą|ej|em)))?"
    r"\s+(?:w\s+rozumieniu\s+[^,]+,\s+)?(?:jest|są)\s+(?P<text>[^\n]+)")
# Unit labels at a line's start: "§ 2.", "2.", "2a."
_PARAGRAPH = re.compile(r"^(?:Art\.\s*\S+\.\s*)?§\s*(\d+[a-z]*(?:\^\d+)?)\.\s*")
_SECTION = re.compile(r"^(?:Art\.\s*\S+\.\s*)?(\d+[a-z]*(?:\^\d+)?)\.\s+")
_LABEL = re.compile(r"^Art\.\s*\S+\.\s*")


def _clean(term: str) -> str:
    return re.sub(r"\s+", " ", term.strip(" „”\"'")).strip()


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
    for raw in a.text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        unit_line = line
        if m := _PARAGRAPH.match(line):
            paragraph, section, lead = f"§ {m.group(1)}", "", None
            unit_line = line[m.end():]
        elif (m := _SECTION.match(line)) and not _POINT.match(line):
            section, lead = f"ust. {m.group(1)}", None
            unit_line = line[m.end():]
        else:
            unit_line = _LABEL.sub("", line)
        where = " ".join(u for u in (paragraph, section) if u)
        point = _POINT.match(line)
        if lead is not None and point:
            body = point.group(2)
            parts = _TERM_END.split(body, maxsplit=1)
            if len(parts) == 2 and 0 < len(parts[0]) <= 120 and not parts[0].endswith(("(uchylony)", "(uchylona)")):
                term = _clean(parts[0])
                if term and not term.lower().startswith(("uchyl", "(uchyl")):
                    out.append(Definition(a.number, f"{lead} pkt {point.group(1)}".strip(), term, line, "list"))
            continue
        if lead is not None and (_LETTER_POINT.match(line) or line.startswith(("–", "-"))):
            continue  # a definition's own letters and its closing words
        if _LIST_LEAD.search(unit_line):
            lead = where
            continue
        lead = None
        for m in _WHENEVER.finditer(unit_line):
            out.append(Definition(a.number, where, _clean(m.group("term")), unit_line, "whenever"))
        if m := _SENTENCE.match(unit_line):
            term = m.group("term") + (f" {m.group('rest')}" if m.group("rest") else "")
            out.append(Definition(a.number, where, term.lower(), unit_line, "sentence"))
    return out
