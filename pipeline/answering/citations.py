"""Citations: the one format ("[DU/2025/277, art. 154]"), reading them back out of an answer, and what
the reader must be told about them (made-up citations, none at all)."""
from __future__ import annotations

import re

from pipeline.answering.fragments import Answer
from pipeline.core.act_id import parse_act_id
from pipeline.core.errors import InvalidActId
from pipeline.core.numbering import TYPED, find_typed
from pipeline.core.units import CITED_WORD


def cite(act: str, article: str) -> str:
    return f"[{act}, art. {article}]"


# "[DU/2025/277, art. 154]" as the prompt asks, and what models write instead: no comma, "Art.", the
# journal form "Dz.U. 2025 poz. 277", several articles ("art. 154, 155", "art. 154 i art. 155", a range
# "art. 154-155": both ends), numbers as typed ("151¹", "151^1", "3a^1": core.numbering). A unit cited
# after the number (§ / ust. / pkt / lit.: core.units) ends the list.
_CITATION = re.compile(
    rf"(?i)\b(?:((?:DU|MP)/\d{{4}}/\d+)|((?:dz\.?\s*u\.?|m\.?\s*p\.?)\s*(?:z\s+)?\d{{4}}\s*(?:r\.)?\s*"
    rf"(?:nr\s*\d+\s*,?\s*)?poz\.?\s*\d{{1,6}}))\s*,?\s*art\.\s*"
    rf"((?:{TYPED})(?:\s*(?:,|\bi\b|\boraz\b|-|–)\s*(?:art\.\s*)?(?:{TYPED})"
    rf"(?=\s*(?:[\]),;.]|\bi\b|\boraz\b|-|–|{CITED_WORD}|$)))*)"
)


def parse_citations(text: str) -> list[tuple[str, str]]:
    """``(act, canonical article)`` pairs in order of first appearance; ``151¹`` becomes ``151^1``,
    ``Dz.U. 2025 poz. 277`` becomes ``DU/2025/277``."""
    found: list[tuple[str, str]] = []
    for m in _CITATION.finditer(text):
        eli, journal, articles = m.group(1), m.group(2), m.group(3)
        try:
            act = str(parse_act_id(eli or " ".join(journal.split())))
        except InvalidActId:
            continue
        for article in find_typed(articles):
            if (act, article) not in found:
                found.append((act, article))
    return found


_BRACKETS = re.compile(r"\[[^\[\]\n]{4,200}\]")  # a bracketed span of one line: where a citation stands


def cited_segments(text: str) -> list[tuple[str, tuple[str, str] | None]]:
    """``text`` in pieces, in order: plain text (None), and each bracketed citation with the first
    ``(act, article)`` it names (a page makes it a link)."""
    out: list[tuple[str, tuple[str, str] | None]] = []
    pos = 0
    for m in _BRACKETS.finditer(text):
        cited = parse_citations(m.group(0))
        if not cited:
            continue
        out.append((text[pos:m.start()], None))
        out.append((m.group(0), cited[0]))
        pos = m.end()
    out.append((text[pos:], None))
    return out


def foreign_citations(answer: Answer) -> list[tuple[str, str]]:
    """Citations in the answer that point at no given fragment (the model made them up)."""
    given = {(f.act, f.article) for f in answer.fragments}
    return [c for c in answer.citations if c not in given]


def answer_warnings(answer: Answer) -> list[str]:
    """What the reader of an answer must be told (Polish, one line each): it cites provisions that no
    given fragment holds (the model made them up), or a model's answer cites nothing at all."""
    warnings = []
    if foreign := foreign_citations(answer):
        warnings.append("Uwaga: odpowiedź cytuje przepisy spoza podanych fragmentów: "
                        + ", ".join(cite(a, n) for a, n in foreign))
    if answer.model is not None and not answer.refused and not answer.citations:
        warnings.append("Uwaga: odpowiedź nie cytuje żadnego przepisu z podanych fragmentów: sprawdź ją w nich.")
    return warnings
