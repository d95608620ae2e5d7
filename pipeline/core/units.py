"""The units of an article: the one grammar of them, beside the article numbers' (pipeline.core.numbering,
which reads a unit cited after an article's number with this grammar).

Polish statutes divide an article into paragraphs ("§ 1." in codes) or ustępy ("1."), these into points
("1)"), points into letters ("a)") and letters into tirets ("–"). A unit's line opens with its label;
running text cites a unit with a word ("§ 1", "ust. 2", "pkt 3", "lit. a"). The parsers, the chunker,
the definitions' and references' readers, the offline answer and the web page all read units with the
patterns below, and a unit is cited the one way :func:`cite` writes it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# A unit's number: digits, up to three letters, and a superscript written "^N" with letters after it:
# "1", "2a", "1^1", "5d", "2^1a". A letter's label: up to three Latin letters ("a", "b", "za").
NUMBER = r"\d+[a-z]{0,3}(?:\^\d+[a-z]{0,3})?"
LETTERS = r"[a-z]{1,3}"

PARAGRAPH, SECTION, POINT, LETTER, TIRET = "paragraph", "section", "point", "letter", "tiret"
KINDS = (PARAGRAPH, SECTION, POINT, LETTER, TIRET)  # from the largest unit to the smallest

# The label that opens a unit's line, by kind: "§ 2.", "2.", "2)", "b)", "–"; {} stands for its number.
_FORMS = {PARAGRAPH: r"§\s*{}\.", SECTION: r"{}\.", POINT: r"{}\)", LETTER: r"{}\)", TIRET: "{}"}
_NUMBERS = {PARAGRAPH: NUMBER, SECTION: NUMBER, POINT: NUMBER, LETTER: LETTERS, TIRET: "[–-]"}
# Each kind's label as a regex without groups, to compose (a label is followed by a space: its text) …
SHAPES = {kind: form.format(_NUMBERS[kind]) for kind, form in _FORMS.items()}
# … and with one group named after the kind, holding the number.
LABELS = {kind: form.format(f"(?P<{kind}>{_NUMBERS[kind]})") for kind, form in _FORMS.items()}
# Any unit's label; the unit's text follows after a space.
LABEL = "(?:" + "|".join(LABELS.values()) + r")(?=\s)"
# The ordinals that cite a sentence or a tiret of a unit, in order, as running text writes them: "zdanie drugie",
# "tiret piąte" (a tiret has no number of its own: the nth under its letter).
ORDINALS = ("pierwsze", "drugie", "trzecie", "czwarte", "piąte", "szóste", "siódme", "ósme", "dziewiąte",
            "dziesiąte", "jedenaste", "dwunaste", "trzynaste", "czternaste", "piętnaste")
# The words that cite a unit in running text, and how each kind is cited.
CITED = {PARAGRAPH: "§", SECTION: "ust.", POINT: "pkt", LETTER: "lit.", TIRET: "tiret"}
CITED_WORD = r"(?:§|ust\.|pkt|lit\.)"
# … and as a person types them in a question (the dots left out: "art. 154 par. 1" aside): "ust 2", "lit a".
TYPED_WORD = r"(?:§|ust\.?|pkt\.?|lit\.?)"

_LABEL = re.compile(LABEL)


@dataclass(frozen=True)
class Label:
    """A unit's label at the start of a line: its kind, its number ("2", "1^1", "a"; "–" for a tiret)
    and where its text begins."""

    kind: str
    number: str
    end: int

    @property
    def cited(self) -> str:
        return cite(self.kind, self.number)


def label(line: str, start: int = 0) -> Label | None:
    """The unit label ``line`` opens with at ``start`` (an article's first line opens with the article's
    own label: pipeline.core.numbering.label_end); None when the line opens no unit there."""
    m = _LABEL.match(line, start)
    if m is None:
        return None
    kind = next(k for k in KINDS if m.group(k) is not None)
    end = m.end()
    while end < len(line) and line[end].isspace():
        end += 1
    return Label(kind, m.group(kind), end)


def opens_unit(line: str, *, kinds: tuple[str, ...] = KINDS) -> bool:
    """Whether ``line`` opens a unit of one of ``kinds``."""
    found = label(line)
    return found is not None and found.kind in kinds


def label_of(cited: str) -> str | None:
    """A regex of the label that opens the unit ``cited`` names ("ust. 2" -> "2\\.", "pkt 3a" -> "3a\\)"),
    to find it in a wording; None for what has no label of its own (a tiret, a sentence)."""
    word, _, number = cited.partition(" ")
    kind = next((k for k, w in CITED.items() if w == word), None)
    if kind is None or kind == TIRET or not number:
        return None
    return _FORMS[kind].format(re.escape(number))


def shape_of(word: str) -> str | None:
    """A regex of any label of the kind running text cites with ``word`` ("ust." -> "\\d+….\\."); None for
    a word no label has."""
    kind = next((k for k, w in CITED.items() if w == word), None)
    return SHAPES[kind] if kind is not None and kind != TIRET else None


def within(path: str, unit: str) -> bool:
    """Whether a line whose path is ``path`` ("ust. 2 pkt 3") stands in ``unit`` ("ust. 2"): the unit itself or
    a unit inside it."""
    return path == unit or path.startswith(unit + " ")


def block_of(path: str) -> str:
    """The paragraph or ustęp a line's unit stands in ("ust. 2 pkt 3" -> "ust. 2", "§ 1" -> "§ 1"); "" for the
    article's own words and its points (an article without paragraphs is one block)."""
    first = " ".join(path.split(" ")[:2])
    return first if path.startswith((CITED[PARAGRAPH] + " ", CITED[SECTION] + " ")) else ""


def without_label(text: str) -> str:
    """``text`` without the unit label it opens with ("2. Minister …" -> "Minister …", "§ 3. …", "4) …")."""
    text = text.lstrip()
    found = label(text)
    return text[found.end:] if found is not None else text


def cite(kind: str, number: str) -> str:
    """A unit as running text cites it: "§ 1", "ust. 2", "pkt 3", "lit. a", "tiret"."""
    return CITED[kind] if kind == TIRET else f"{CITED[kind]} {number}"


def paths(lines: list[str], start: int = 0) -> list[str]:
    """The unit each line of an article stands in, as cited ("§ 1 pkt 2 lit. a"; "" the article itself):
    a labelled line opens its unit under the larger ones open above it, a line without a label goes on in
    the unit before it. ``start``: where the first line's own text begins (after the article's label)."""
    found: list[str] = []
    open_units: list[tuple[int, str]] = []  # (rank in KINDS, cited), largest first
    for i, line in enumerate(lines):
        opens = label(line, start if i == 0 else 0)
        if opens is not None:
            rank = KINDS.index(opens.kind)
            open_units = [(r, c) for r, c in open_units if r < rank] + [(rank, opens.cited)]
        found.append(" ".join(c for _, c in open_units))
    return found
