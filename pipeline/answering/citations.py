"""Citations: the one format ("[DU/2025/277, art. 154]"), reading them back out of an answer, and what
the reader must be told about them (made-up citations, none at all)."""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from pipeline.answering.fragments import Answer
from pipeline.core.act_id import parse_act_id
from pipeline.core.errors import InvalidActId
from pipeline.core.codes import ABBREVIATIONS
from pipeline.core.dates import MONTHS
from pipeline.core import units
from pipeline.core.numbering import SUPERSCRIPT_DIGITS, TYPED, find_typed, label_end, printed
from pipeline.sources.record import short_title
from pipeline.core.units import CITED_WORD


def cite(act: str, article: str, unit: str = "") -> str:
    """"[DU/2025/277, art. 154]", or with the unit that says it: "[DU/2025/277, art. 154 § 1 pkt 2]"."""
    return f"[{act}, art. {article}{' ' + unit if unit else ''}]"


def polish_date(day: dt.date) -> str:
    """"26 czerwca 1974 r.": a date as an act's title writes it."""
    return f"{day.day} {MONTHS[day.month - 1]} {day.year} r."


def polish_citation(act: str, article: str, unit: str = "", *, title: str | None = None,
                    base_act: str | None = None, act_date: dt.date | None = None,
                    amended: bool = False) -> dict[str, str]:
    """A citation to paste into a letter or a brief, long and short: "art. 154 § 1 ustawy z dnia 26 czerwca
    1974 r. – Kodeks pracy (Dz. U. z 2025 r. poz. 277, z późn. zm.)", "art. 154 § 1 k.p."; numbers with
    superscripts ("art. 151¹"). ``act``: the stored text cited (its journal position), ``base_act``: the act
    it is a text of (a code's abbreviation is the base act's), ``amended``: changed after that text."""
    where = printed(f"art. {article}" + (f" {unit}" if unit else ""))
    name = short_title(title) or ""
    named = name[len("ustawa "):] if name.startswith("ustawa ") else name  # "o prawach pacjenta …" or "Kodeks pracy"
    abbreviation = ABBREVIATIONS.get(base_act or "") or ABBREVIATIONS.get(act)
    if not named:
        of = ""
    elif named.startswith("o "):
        of = f" ustawy {named}"
    else:
        of = f" ustawy – {named}"
    publisher, year, position = act.split("/")
    journal = f"({'Dz. U.' if publisher == 'DU' else 'M.P.'} z {year} r. poz. {position}{', z późn. zm.' if amended else ''})"
    dated = f" z dnia {polish_date(act_date)}" if act_date else ""
    if named.startswith("o "):
        long = f"{where} ustawy{dated} {named} {journal}"
    elif named:
        long = f"{where} ustawy{dated} – {named} {journal}"
    else:
        long = f"{where} {journal}"
    return {"long": long, "short": f"{where} {abbreviation}" if abbreviation else f"{where}{of}".strip()}


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


# The unit after a citation's article: "[DU/2025/277, art. 154 § 1 pkt 2]".
_UNIT_AFTER = re.compile(rf"\s*((?:{CITED_WORD})\s*[0-9a-z^¹²³⁴⁵⁶⁷⁸⁹⁰]+(?:\s+(?:{CITED_WORD})\s*[0-9a-z^¹²³⁴⁵⁶⁷⁸⁹⁰]+)*)",
                         re.IGNORECASE)


def unit_citations(text: str) -> list[tuple[str, str, str]]:
    """``(act, article, unit)`` for each citation that names a unit after its (single) article
    ("[DU/2025/277, art. 154 § 1 pkt 2]"), in order; the unit canonical ("§ 1^1 pkt 2")."""
    found: list[tuple[str, str, str]] = []
    for m in _CITATION.finditer(text):
        articles = find_typed(m.group(3))
        u = _UNIT_AFTER.match(text, m.end())
        if len(articles) != 1 or u is None:
            continue
        try:
            act = str(parse_act_id(m.group(1) or " ".join(m.group(2).split())))
        except InvalidActId:
            continue
        unit = " ".join(re.sub(r"([0-9a-z])[\s^]*([¹²³⁴⁵⁶⁷⁸⁹⁰]+)", lambda x: x.group(1) + "^" +
                               x.group(2).translate(SUPERSCRIPT_DIGITS), u.group(1)).split())
        if (act, articles[0], unit) not in found:
            found.append((act, articles[0], unit))
    return found


def _units_of(text: str) -> set[str]:
    """Every unit an article's text holds ("§ 1", "§ 1 pkt 2", …)."""
    lines = text.split("\n")
    return {p for p in units.paths(lines, label_end(lines[0]) if lines else 0) if p}


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


# Told next to a citation of a rebuilt wording (revision 0012): the answer must not pass it off as an official text.
REBUILT_MARK = "(brzmienie odtworzone ze zmian, nie tekst urzędowy)"


def rebuilt_citations(answer: Answer) -> set[tuple[str, str]]:
    """The (act, article) of the fragments whose text is a rebuilt wording, not an official text."""
    return {(f.act, f.article) for f in answer.fragments if not f.official}


def mark_rebuilt(text: str, rebuilt: set[tuple[str, str]]) -> str:
    """``text`` with :data:`REBUILT_MARK` after each bracketed citation of a rebuilt wording (once: a citation
    already marked is left as it is)."""
    if not rebuilt:
        return text
    out, pos = [], 0
    for m in _BRACKETS.finditer(text):
        if not set(parse_citations(m.group(0))) & rebuilt or text.startswith(REBUILT_MARK, m.end() + 1):
            continue
        out.append(text[pos:m.end()] + " " + REBUILT_MARK)
        pos = m.end()
    return "".join(out) + text[pos:]


class StreamMarker:
    """:func:`mark_rebuilt` on an answer as it streams: a bracketed span is held until it closes, then passed on
    marked where it cites a rebuilt wording; call :meth:`flush` when the stream ends."""

    def __init__(self, emit: Callable[[str], None], rebuilt: set[tuple[str, str]]) -> None:
        self.emit, self.rebuilt, self.held = emit, rebuilt, ""

    def __call__(self, token: str) -> None:
        out = []
        for ch in token:
            if not self.held:
                if ch == "[":
                    self.held = ch
                else:
                    out.append(ch)
                continue
            self.held += ch
            if ch == "]":
                out.append(mark_rebuilt(self.held, self.rebuilt))
                self.held = ""
            elif ch in "[\n" or len(self.held) > 202:  # no citation span (_BRACKETS): passed on as it is
                out.append(self.held[:-1] if ch == "[" else self.held)
                self.held = "[" if ch == "[" else ""
        if out:
            self.emit("".join(out))

    def flush(self) -> None:
        if self.held:
            self.emit(self.held)
            self.held = ""


def foreign_citations(answer: Answer) -> list[tuple[str, str]]:
    """Citations in the answer that point at no given fragment (the model made them up)."""
    given = {(f.act, f.article) for f in answer.fragments}
    return [c for c in answer.citations if c not in given]


def missing_units(answer: Answer) -> list[tuple[str, str, str]]:
    """Unit citations ("[DU/2025/277, art. 154 § 7]") of articles given in full whose text has no such unit."""
    texts: dict[tuple[str, str], str] = {}
    for f in answer.fragments:
        texts[(f.act, f.article)] = texts.get((f.act, f.article), "") + "\n" + f.text if (f.act, f.article) in texts \
            else f.text
    return [(a, n, u) for a, n, u in unit_citations(answer.text)
            if (a, n) in texts and u not in _units_of(texts[(a, n)])]


def answer_warnings(answer: Answer) -> list[str]:
    """What the reader of an answer must be told (Polish, one line each): it cites provisions that no
    given fragment holds (the model made them up), units the cited article does not have, or a model's
    answer cites nothing at all."""
    warnings = []
    if foreign := foreign_citations(answer):
        warnings.append("Uwaga: odpowiedź cytuje przepisy spoza podanych fragmentów: "
                        + ", ".join(cite(a, n) for a, n in foreign))
    if missing := missing_units(answer):
        warnings.append("Uwaga: odpowiedź cytuje jednostki, których nie ma w podanych artykułach: "
                        + ", ".join(cite(a, n, u) for a, n, u in missing))
    if answer.model is not None and not answer.refused and not answer.citations:
        warnings.append("Uwaga: odpowiedź nie cytuje żadnego przepisu z podanych fragmentów: sprawdź ją w nich.")
    return warnings
