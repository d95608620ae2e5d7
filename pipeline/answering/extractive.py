"""The offline answer: no model, the sentences of the retrieved fragments that best match the question.

Each chosen sentence (or numbered unit) is printed with its citation, under a note saying that
this is not an answer written by a model.
"""
from __future__ import annotations

import re

from pipeline.answering.citations import cite
from pipeline.answering.fragments import Answer, Fragment
from pipeline.answering.prompts import refusal
from pipeline.core import units
from pipeline.core.numbering import ARTICLE_LABEL
from pipeline.sources.parse.articles import TWO_PARAGRAPH_WORDINGS, TWO_WORDINGS

EXTRACTIVE_NOTE = "(Bez modelu językowego: poniżej najtrafniejsze fragmenty przepisów, nie odpowiedź.)"

_UPPER = "A-ZĄĆĘŁŃÓŚŹŻ"
# Unit boundaries in Polish statutes: paragraphs "§ 2.", ustępy "2.", points "2)", letters "b)",
# and plain sentence ends. Each lookahead demands a real start, so "w § 1;" or "art. 5." inside
# a sentence do not split it.
_SHAPE = units.SHAPES
_BOUNDARY = re.compile(
    rf"\s*\n\s*(?=(?:{_SHAPE[units.PARAGRAPH]}|{_SHAPE[units.SECTION]}|{_SHAPE[units.POINT]}|{_SHAPE[units.LETTER]})\s)"
    rf"|(?<=[.:;])\s*\n\s*"
    rf"|(?<=[.:;])\s+(?={_SHAPE[units.PARAGRAPH]}\s+[{_UPPER}])"
    rf"|(?<=[.:;])\s+(?={_SHAPE[units.SECTION]}\s+[{_UPPER}])"
    rf"|(?<=[:;,])\s+(?={_SHAPE[units.POINT]}\s)"
    rf"|(?<=[:;,])\s+(?={_SHAPE[units.LETTER]}\s)"
    rf"|(?<=[.!?])\s+(?=[{_UPPER}])"
)
# Abbreviations of statutory citations ("Dz. U.", "Dz. Urz. UE", "str.", "z późn. zm.") and of common Polish.
_ABBREVIATION = re.compile(r"\b(?:art|ust|pkt|lit|poz|nr|dz|u|urz|str|zm|np|tj|m\.in|itp|późn|tzw)\.$",
                           re.IGNORECASE)
# A stored article begins with its label in canonical form ("Art. 3a^1.": pipeline.sources.parse.model).
_LABEL_ONLY = re.compile(rf"^(?:{ARTICLE_LABEL})?\s*(?:{_SHAPE[units.PARAGRAPH]}|{_SHAPE[units.SECTION]})?$")
_ARTICLE_LABEL = re.compile(rf"^{ARTICLE_LABEL}\s*")
_WORD = re.compile(r"[0-9]+(?:,[0-9]+)?|[^\W\d_]+")
_STOPWORDS = {
    "ile", "jak", "jaki", "jaka", "jakie", "czy", "kiedy", "gdzie", "kto", "który", "która", "które",
    "się", "nie", "jest", "są", "oraz", "lub", "albo", "dla", "przez", "przy", "pod", "nad", "ten",
    "ta", "to", "tym", "tego", "tej", "jego", "jej", "ich", "mój", "moja", "moje", "mnie", "mam",
    "być", "może", "można", "jeżeli", "jeśli", "gdy", "też", "także", "tak", "już", "ale", "ani",
}
_CONDITION = re.compile(
    r"(nie mniej niż|nie krócej niż|nie więcej niż|nie dłużej niż|co najmniej|co najwyżej|"
    r"krócej niż|dłużej niż|mniej niż|więcej niż|powyżej|poniżej|ponad)\s+(\d+(?:,\d+)?)\s+([^\W\d_]+)",
    re.IGNORECASE,
)
_COMPARE = {
    "nie mniej niż": float.__ge__, "nie krócej niż": float.__ge__, "co najmniej": float.__ge__,
    "nie więcej niż": float.__le__, "nie dłużej niż": float.__le__, "co najwyżej": float.__le__,
    "krócej niż": float.__lt__, "mniej niż": float.__lt__, "poniżej": float.__lt__,
    "dłużej niż": float.__gt__, "więcej niż": float.__gt__, "powyżej": float.__gt__, "ponad": float.__gt__,
}
_QUANTITY = re.compile(r"(\d+(?:,\d+)?)\s+([^\W\d_]+)")


def stem(word: str) -> str:
    """Crude Polish stem: the first five letters, lowercase ("urlopu" -> "urlop")."""
    return word.lower()[:5]


def _stems(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text) if w.isdigit() or (len(w) >= 3 and w.lower() not in _STOPWORDS)}


def split_units(text: str) -> list[str]:
    """Sentences and numbered units (§, ust., pkt, lit.) of an article, each with the lead-in
    of its list ("§ 1. Wymiar urlopu wynosi: … 2) 26 dni …") so it reads on its own."""
    pieces: list[str] = []
    for piece in _BOUNDARY.split(text.strip()):
        piece = piece.strip()
        if not piece:
            continue
        if pieces and (_ABBREVIATION.search(pieces[-1]) or _LABEL_ONLY.match(pieces[-1])):
            # "art." / "Dz. U." did not end a sentence; "Art. 5. § 1." labels what follows.
            pieces[-1] += " " + piece
        else:
            pieces.append(piece)
    found: list[str] = []
    lead = ""
    for piece in pieces:
        piece = _ARTICLE_LABEL.sub("", piece)
        if units.opens_unit(piece, kinds=(units.POINT, units.LETTER)):
            found.append(f"{lead} … {piece}" if lead else piece)
        else:
            found.append(piece)
            lead = piece if piece.endswith(":") else ""
    # A lead-in alone ("Wymiar urlopu wynosi:") says nothing; its points carry it.
    return [u for u in found if not u.endswith(":")]


def _condition_fit(unit: str, quantities: list[tuple[float, str]]) -> int:
    """+1 per numeric condition in the unit that the question's numbers meet, -1 per one they break.

    Statutes grade by thresholds ("krócej niż 10 lat" / "co najmniej 10 lat"); words alone
    cannot tell such points apart, the question's own number ("12 lat") can.
    """
    fit = 0
    for phrase, limit, unit_word in _CONDITION.findall(unit):
        for value, q_unit in quantities:
            if q_unit[:3] == unit_word.lower()[:3]:
                ok = _COMPARE[phrase.lower()](value, float(limit.replace(",", ".")))
                fit += 1 if ok else -1
    return fit


def _fragment_units(fragment: Fragment) -> list[str]:
    """The units of a fragment's wording in force; a later part of a long article begins with the
    previous part's overlap, cut at a word, and its first unit says so ("… ")."""
    found = split_units(_in_force(fragment.text))
    if fragment.units_out:  # an ustęp or paragraph not the law on the day asked is not quoted as law
        out = set(fragment.units_out)
        found = [u for u in found if (label := units.label(u)) is None or label.kind not in (units.PARAGRAPH,
                                                                                               units.SECTION)
                 or label.cited not in out]
    if found and fragment.part > 1 and not (found[0][:1].isupper() or found[0].startswith("§")):
        found[0] = "… " + found[0]
    return found


def extractive_answer(question: str, fragments: list[Fragment], max_sentences: int = 3) -> Answer:
    """Offline answer: the sentences of the best fragments that share most words with the question."""
    retrieved = [f for f in fragments if f.role == "retrieved"]
    if not retrieved:
        return refusal(fragments)
    # A definition of a term the question uses (pipeline.retrieval.context): quoted first, as a lawyer
    # reads the provision with it.
    defined = [(f.text.strip(), f) for f in fragments if f.role == "definition" and f.in_question][:1]
    if retrieved[0].named:
        # "art. 52 kp": the article asked about, from its beginning (its words need not be the question's).
        best = retrieved[0]
        return _answer([(u, best) for u in _fragment_units(best)[:max_sentences]] + defined, fragments)
    fragments_all, fragments = fragments, retrieved
    wanted = _stems(question)
    quantities = [(float(v.replace(",", ".")), u.lower()) for v, u in _QUANTITY.findall(question)]
    scored: list[tuple[float, int, int, str, Fragment]] = []
    for rank, fragment in enumerate(fragments[:5]):
        for position, unit in enumerate(_fragment_units(fragment)):
            overlap = len(wanted & _stems(unit))
            if overlap == 0:
                continue
            score = overlap + 2 * _condition_fit(unit, quantities)
            scored.append((score, rank, position, unit, fragment))
    # Best score first; ties go to the better-ranked fragment, then to the earlier sentence.
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    chosen = [(unit, f) for score, _, _, unit, f in scored if score > 0][:max_sentences]
    if not chosen:
        # Nothing shares a word with the question (a vector-only hit): show where the best fragment begins.
        best = fragments[0]
        chosen = [(u, best) for u in _fragment_units(best)[:max_sentences]]
    return _answer(defined + chosen, fragments_all)


def _cited_unit(quoted: str) -> str:
    """The unit a quoted sentence stands in, as cited ("§ 1 pkt 2"), from its label and its list's lead-in
    ("§ 1. Wymiar urlopu wynosi: … 2) 26 dni"); "" when it opens with no label (the article's own text)."""
    path: list[str] = []
    for part in quoted.split(" … ", 1):
        found = units.label(part.strip())
        if found is None:
            continue
        if found.kind in (units.PARAGRAPH, units.SECTION):
            path = [found.cited]
        else:
            path.append(found.cited)
    return " ".join(path)


def _answer(chosen: list[tuple[str, Fragment]], fragments: list[Fragment]) -> Answer:
    """The quoted units, each with its citation, under the note; a line for each article quoted in the
    first of two wordings."""
    lines = [EXTRACTIVE_NOTE, ""]
    citations: list[tuple[str, str]] = []
    later: list[str] = []
    for unit, fragment in chosen:
        if fragment.role == "definition":  # said as one, with where it is defined
            unit = f"Definicja ({' '.join(filter(None, ('art. ' + fragment.article, fragment.unit)))}): {unit}"
        cited = _cited_unit(unit) if fragment.role != "definition" else fragment.unit
        lines.append(f"- {unit} {cite(fragment.act, fragment.article, cited)}")
        if (fragment.act, fragment.article) not in citations:
            citations.append((fragment.act, fragment.article))
            if TWO_WORDINGS in fragment.text or TWO_PARAGRAPH_WORDINGS in fragment.text:
                later.append(cite(fragment.act, fragment.article))
    for fragment in {(f.act, f.article): f for _, f in chosen if f.time_notes}.values():
        lines.append(f"Uwaga: {cite(fragment.act, fragment.article)}: {'; '.join(fragment.time_notes)}.")
    for citation in later:
        # "The wording in force on the text's date", not "the current one": with --as-of, or once the
        # amendment is in force, the later wording may be the one that applies.
        lines.append(f"Uwaga: {citation} ma w tekście jednolitym dwa brzmienia; zacytowano pierwsze, obowiązujące "
                     "w dniu, według którego sporządzono tekst jednolity. Późniejsze obowiązuje od wejścia w życie "
                     "zmiany i może być tym, które stosuje się w danej sprawie (pełny tekst: pipeline show).")
    return Answer(text="\n".join(lines), fragments=fragments, model=None, citations=citations)


_LATER_PARAGRAPH = re.compile(re.escape(TWO_PARAGRAPH_WORDINGS) + r"\n.*?(?=\n§|\Z)", re.DOTALL)


def _in_force(text: str) -> str:
    """The wording in force on the text's date, when a consolidated text gives two of the article
    (TWO_WORDINGS: the first) or of a paragraph (TWO_PARAGRAPH_WORDINGS: the later one left out)."""
    return _LATER_PARAGRAPH.sub("", text.partition(TWO_WORDINGS)[0])
