"""Parse a Dziennik Ustaw PDF into articles.

pypdf's visitor gives each text run with its font size and position; from that we
rebuild lines, recover superscripts (the text layer reads "Art. 151^1." as
"Art. 1511."), drop page furniture, set the footnotes (small print at a page's foot)
apart from the text with the lines their marks stand on, then split the act into
top-level articles.
"""
from __future__ import annotations

import io
import itertools
import logging
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pypdf import PdfReader
from pypdf.errors import PdfReadError, PyPdfError

from pipeline.sources.parse.articles import is_repealed, split_wordings
from pipeline.core import dates
from pipeline.sources.parse.model import Article, Footnote, ParsedAct, ParseError, looks_like_pdf
from pipeline.core import units
from pipeline.core.numbering import NUMBER, expand_range, is_canonical, label_end, split_range
from pipeline.sources.parse.text import join_hyphenated, join_lines, normalize_spaces


@contextmanager
def _pypdf_quiet() -> Iterator[None]:
    """pypdf logs every recoverable oddity of a PDF as a warning; they are noise here. Quiet while
    this module parses only: the pypdf logger of the process that imports the library stays its own."""
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


_SUP_MAX_RATIO = 0.85  # a run smaller than this fraction of its line is a superscript
_FOOTNOTE_RATIO = 0.93  # lines smaller than this fraction of the body size are footnotes

_HEADER = re.compile(r"^Dziennik Ustaw\s*[–-]\s*\d+\s*[–-]\s*Poz\.\s*\d+$")
_ART = re.compile(rf"^Art(\.?)\s*({NUMBER})\s*\.\s*")
_ART_RANGE = re.compile(rf"^Art\.\s*({NUMBER})\s*[–-]\s*({NUMBER})\s*\.\s*")
_UNIT_REPEALED = re.compile(r"\(zawierający art\.\s*(.+?)\s*[–-]\s*uchylon[ya]\)")
_HEADING = re.compile(r"^(KSIĘGA|TYTUŁ|DZIAŁ|Rozdział|Oddział)\s+\S+(?:\s|$)")
_LEVELS = {"KSIĘGA": 0, "TYTUŁ": 1, "DZIAŁ": 2, "Rozdział": 3, "Oddział": 4}
_ANNEX_OF_NOTICE = re.compile(r"^Załącznik do obwieszczenia")
_SIGNATURE = re.compile(
    r"^(Marszałek Sejmu|Prezydent Rzeczypospolitej Polskiej|Prezes Rady Ministrów):"
)
_ANNEX = re.compile(r"^Załącznik(?:i)?(?: nr \d+)? do ustawy")
# A paragraph starts with an article's label or a unit's (pipeline.core.units): "§ 2.", "2.", "3)", "a)", "–".
_MARKER = re.compile(rf"^(?:Art\.|{units.LABEL})")
_FOOTNOTE_MARK = re.compile(r"^\d+\)(?:,\s*\d+\))*,?$")
_FOOTNOTE_START = re.compile(r"^(\d+)\)\s+(.*)$")  # a footnote's own line: "12) W brzmieniu ustalonym przez …"
_MASTHEAD_DATE = re.compile(rf"^Warszawa, dnia\s+{dates.DATE}")


@dataclass
class _Token:
    text: str
    x: float
    y: float
    size: float
    bold: bool
    sup: bool = False


@dataclass
class _Line:
    text: str
    x: float
    y: float
    size: float
    bold: bool
    page: int
    gap: float = 0.0  # distance from the previous line's baseline on the same page (0 = first)
    marks: list[int] = field(default_factory=list)  # the footnotes whose marks stand on the line
    raised_start: bool = False  # it opens with a raised number ("12)"): a footnote's own first line
    label_marks: list[int] = field(default_factory=list)  # marks right after an article's label: the article's


@dataclass
class _Block:
    """An article being collected."""

    number: str
    lines: list[str] = field(default_factory=list)
    heading_path: list[str] = field(default_factory=list)
    marks: list[list[int]] = field(default_factory=list)  # per paragraph of ``lines``: its footnote marks
    heading_marks: list[tuple[str, int]] = field(default_factory=list)  # (heading, number): a chapter's footnotes
    label_marks: list[int] = field(default_factory=list)  # marks on the article's label: about the whole article


def parse_pdf(data: bytes) -> ParsedAct:
    """Parse the bytes of a Dziennik Ustaw PDF into its top-level articles."""
    with _pypdf_quiet():
        return _parse_pdf(data)


def _parse_pdf(data: bytes) -> ParsedAct:
    reader = _open(data)
    pages = len(reader.pages)
    lines: list[_Line] = []
    raw_pages: list[list[_Line]] = []
    try:
        for index, page in enumerate(reader.pages):
            raw_pages.append(_page_lines(page, index))
    except (PyPdfError, ValueError, KeyError, TypeError) as exc:
        raise ParseError(f"cannot read PDF text: {exc}") from exc
    body = _body_size(raw_pages)
    notes: dict[int, str] = {}
    for page_lines in raw_pages:
        kept, small_print = _drop_furniture(page_lines, body)
        lines.extend(kept)
        _read_footnotes(small_print, notes)
    parsed = _build_act(lines, pages, body, notes)
    parsed.published = _published(raw_pages[0] if raw_pages else [])
    return parsed


def _published(first_page: list[_Line]) -> str | None:
    """The day of publication a Dziennik Ustaw PDF prints on its first page ("Warszawa, dnia 18 lutego
    2026 r."), ISO; None for another kind of document."""
    for line in first_page[:8]:
        if (m := _MASTHEAD_DATE.match(line.text)) and (day := dates.date_of(m)):
            return day.isoformat()
    return None


def _read_footnotes(small_print: list[_Line], notes: dict[int, str]) -> None:
    """Footnotes from a page's small print: "12) W brzmieniu …" opens one, the lines after it go on."""
    current: int | None = None
    for line in small_print:
        m = _FOOTNOTE_START.match(line.text) if line.raised_start else None
        if m and (current is None or int(m.group(1)) != current):
            current = int(m.group(1))
            notes[current] = m.group(2)
        elif current is not None:
            notes[current] = join_lines([notes[current], line.text])


def _open(data: bytes) -> PdfReader:
    if not looks_like_pdf(data):
        raise ParseError("not a PDF file (missing %PDF header)")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ParseError("PDF is encrypted")
        if len(reader.pages) == 0:
            raise ParseError("PDF has no pages")
    except ParseError:
        raise
    except (PyPdfError, PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ParseError(f"corrupt PDF: {exc}") from exc
    return reader


# --- lines from text runs -------------------------------------------------------


def _page_lines(page, index: int) -> list[_Line]:
    tokens: list[_Token] = []

    def visit(text: str, cm, tm, font, size) -> None:
        if not text or text == "\n":
            return
        a, b, c, d, e, f = tm
        ca, cb, cc, cd, ce, cf = cm
        x = e * ca + f * cc + ce
        y = e * cb + f * cd + cf
        scale = (abs(a * d - b * c) * abs(ca * cd - cb * cc)) ** 0.5
        name = str(font.get("/BaseFont", "")) if font else ""
        tokens.append(_Token(text.replace("\n", " "), x, y, size * scale, "Bold" in name))

    page.extract_text(visitor_text=visit)
    return _group_lines(tokens, index)


def _group_lines(tokens: list[_Token], page: int) -> list[_Line]:
    # Cluster tokens by baseline, top to bottom.
    tokens = sorted(tokens, key=lambda t: -t.y)
    groups: list[list[_Token]] = []
    for token in tokens:
        if groups and abs(groups[-1][0].y - token.y) <= 1.0:
            groups[-1].append(token)
        else:
            groups.append([token])
    groups = [g for g in groups if any(t.text.strip() for t in g)]

    # A group of small runs just above a line of larger text holds that line's superscripts.
    merged: list[list[_Token]] = []
    i = 0
    while i < len(groups):
        group = groups[i]
        if i + 1 < len(groups):
            below = groups[i + 1]
            size_above = max(t.size for t in group if t.text.strip())
            size_below = _dominant_size(below)
            rise = group[0].y - below[0].y
            if size_above < _SUP_MAX_RATIO * size_below and 0 < rise < 0.75 * size_below:
                for t in group:
                    t.sup = True
                merged.append(below + group)
                i += 2
                continue
        merged.append(group)
        i += 1

    return [line for group in merged if (line := _make_line(group, page)) is not None]


def _dominant_size(group: list[_Token]) -> float:
    sizes: Counter[float] = Counter()
    for t in group:
        if not t.sup:
            sizes[round(t.size, 1)] += len(t.text.strip())
    return sizes.most_common(1)[0][0] if sizes else group[0].size


def _make_line(group: list[_Token], page: int) -> _Line | None:
    group = sorted(group, key=lambda t: t.x)
    parts: list[str] = []
    sup_run: list[str] = []
    marks: list[int] = []
    label_marks: list[int] = []
    raised_start = False

    def flush_sup() -> None:
        nonlocal raised_start
        sup = "".join(sup_run).strip()
        sup_run.clear()
        if not "".join(parts).strip():
            # A raised label opening a line is a footnote's own number (quoted in an amendment).
            parts.append(sup + " ")
            raised_start = True
        elif _FOOTNOTE_MARK.match(sup):
            # Footnote marks ("1)", "2), 3)") leave the text; the line keeps their numbers.
            numbers = [int(n) for n in re.findall(r"\d+", sup)]
            marks.extend(numbers)
            before = normalize_spaces("".join(parts)).strip()
            if label_end(before + " ") >= len(before):  # "Art. 96.¹⁾ 1. …": the article's, not ust. 1's
                label_marks.extend(numbers)
        else:
            # Some texts print the superscript in brackets ("479[88a]").
            parts.append("^" + sup.replace(" ", "").removeprefix("[").removesuffix("]"))

    previous: _Token | None = None
    for t in group:
        if previous is not None and _hard_space(previous, t):
            parts.append(" ")
        previous = t
        if t.sup and t.text.strip():
            sup_run.append(t.text)
            continue
        if sup_run:
            flush_sup()
        parts.append(t.text)
    if sup_run:
        flush_sup()
    text = normalize_spaces("".join(parts))
    if not text:
        return None
    main = [t for t in group if not t.sup and t.text.strip()] or group
    return _Line(
        text=text,
        x=main[0].x,
        y=main[0].y,
        size=_dominant_size(group),
        bold=main[0].bold,
        page=page,
        marks=marks,
        raised_start=raised_start,
        label_marks=label_marks,
    )


# Advance widths (Times, 1/1000 em) of Polish one-letter words. The typesetter binds them to
# the next word with positioning instead of a space glyph ("i" … "w art."), so the text layer
# reads "iw"; a gap wider than the letter itself shows the space.
_ONE_LETTER_WIDTH = {"a": 0.444, "i": 0.278, "o": 0.5, "u": 0.5, "w": 0.722, "z": 0.444,
                     "A": 0.722, "I": 0.333, "O": 0.722, "U": 0.722, "W": 0.944, "Z": 0.611}


def _hard_space(previous: _Token, token: _Token) -> bool:
    width = _ONE_LETTER_WIDTH.get(previous.text)
    if width is None or previous.sup or token.sup or not token.text[:1].strip():
        return False
    return token.x - previous.x > (width + 0.08) * previous.size


def _body_size(pages: list[list[_Line]]) -> float:
    sizes: Counter[float] = Counter()
    for page in pages:
        for line in page:
            sizes[line.size] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0


def _drop_furniture(lines: list[_Line], body: float) -> tuple[list[_Line], list[_Line]]:
    """The page's text without its running header and masthead, and its small print (the footnotes)."""
    kept = []
    for line in lines:
        if _HEADER.match(line.text):
            continue
        if line.page == 0 and (
            line.size > 1.15 * body
            or re.match(r"^(Poz\.\s*\d+|Warszawa, dnia .*|DZIENNIK USTAW|RZECZYPOSPOLITEJ POLSKIEJ)$", line.text)
        ):
            continue
        kept.append(line)
    # Footnotes: the block of small-print lines below the last body-size line.
    last_body = max((i for i, ln in enumerate(kept) if ln.size >= _FOOTNOTE_RATIO * body), default=-1)
    small_print = [ln for i, ln in enumerate(kept) if i > last_body and ln.size < _FOOTNOTE_RATIO * body]
    kept = [ln for i, ln in enumerate(kept) if i <= last_body or ln.size >= _FOOTNOTE_RATIO * body]
    for previous, line in itertools.pairwise(kept):
        line.gap = previous.y - line.y
    return kept, small_print


# --- articles from lines --------------------------------------------------------


def _build_act(lines: list[_Line], pages: int, body: float, notes: dict[int, str] | None = None) -> ParsedAct:
    notes = notes if notes is not None else {}
    warnings: list[str] = []
    start = next((i for i, ln in enumerate(lines) if _ANNEX_OF_NOTICE.match(ln.text)), None)
    if start is not None:
        # A consolidated text: the act is the annex; its small-print label may run over lines.
        start += 1
        while start < len(lines) and lines[start].size < _FOOTNOTE_RATIO * body:
            start += 1
        lines = lines[start:]
    title = _title(lines)

    blocks: list[_Block] = []
    headings: list[tuple[int, str]] = []  # (level, text), outermost first
    title_open = False  # the last heading's title lines may still follow
    depth = 0  # open „quotes”: articles inside quotes belong to an amendment
    paragraph_gap = _paragraph_gap(lines)

    heading_marks: dict[str, list[int]] = {}  # the footnotes marked in a heading (its label or title lines)

    def add(number: str, first_line: str, line: _Line | None = None) -> None:
        blocks.append(_Block(number, [first_line], [h for _, h in headings], [list(line.marks if line else [])],
                             [(h, n) for _, h in headings for n in heading_marks.get(h, [])],
                             list(line.label_marks if line else [])))

    for line in lines:
        text = line.text
        if depth == 0 and blocks and line.x > 200 and (_SIGNATURE.match(text) or _ANNEX.match(text)):
            # the signature or an annex, set off to the right, ends the act's articles
            break
        top = depth == 0
        depth = max(0, depth + text.count("„") - text.count("”"))
        if not top:
            if blocks:
                _append(blocks[-1], line, paragraph_gap)
            continue

        heading = _HEADING.match(text) if line.x > 120 else None  # heading labels are centred
        if heading:
            level = _LEVELS[heading.group(1)]
            headings = [(lv, t) for lv, t in headings if lv < level]
            headings.append((level, text))
            heading_marks[text] = list(line.marks)
            title_open = True
            for n in _repealed_unit_articles(text):
                add(n, f"Art. {n}. (uchylony)")
            continue
        if title_open and not _ART.match(text) and not _ART_RANGE.match(text):
            gone = _repealed_unit_articles(text)
            if text.startswith("(oznaczenie"):
                continue  # "(oznaczenie oraz tytuł rozdziału I – uchylone)": nothing to keep
            if line.bold or _UNIT_REPEALED.search(text):
                # Title line(s) or a "(zawierający art. … – uchylony)" note under the heading label.
                heading_marks[f"{headings[-1][1]} {text}"] = heading_marks.pop(headings[-1][1], []) + line.marks
                headings[-1] = (headings[-1][0], f"{headings[-1][1]} {text}")
                for n in gone:
                    add(n, f"Art. {n}. (uchylony)")
                continue
        title_open = False

        rng = _ART_RANGE.match(text)
        art = _ART.match(text)
        if art and not art.group(1) and not line.bold:
            art = None  # "Art 5." without the dot is a label only when printed bold
        if rng:
            first, last = rng.group(1), rng.group(2)
            rest = text[rng.end():]
            numbers = expand_range(first, last)
            if numbers:
                for n in numbers:
                    add(n, f"Art. {n}. {rest}".strip(), line)
            else:
                warnings.append(f"article range {first}–{last} kept as one article")
                add(first, f"Art. {first}–{last}. {rest}".strip(), line)
        elif art:
            number = art.group(2)
            add(number, f"Art. {number}. {text[art.end():]}".strip(), line)
        elif blocks:
            _append(blocks[-1], line, paragraph_gap)

    if not blocks:
        raise ParseError("no articles found in PDF")
    result: list[Article] = []
    for block in blocks:
        text = join_hyphenated(block.lines)
        label = _ART.match(text) or _ART_RANGE.match(text)
        repealed = bool(label and is_repealed(text[label.end():]))
        result.append(Article(block.number, text, block.heading_path, repealed, _footnotes(block, text, notes)))
    # Consolidated texts print an article twice when an amendment is pending: keep both in one.
    result = split_wordings(result, warnings)
    return ParsedAct(result, title=title, source_format="pdf", pages=pages, warnings=warnings)


def _footnotes(block: _Block, text: str, notes: dict[int, str]) -> list[Footnote]:
    """The footnotes of an article: its chapters' (marked in their headings), then its own, each with the
    unit its mark stands in."""
    lines = text.split("\n")
    where = units.paths(lines, label_end(lines[0]) if lines else 0)
    found = [Footnote(n, notes.get(n, ""), "", heading) for heading, n in block.heading_marks]
    found += [Footnote(n, notes.get(n, ""), "" if i == 0 and n in block.label_marks else
                       where[i] if i < len(where) else "", line=i)
              for i, numbers in enumerate(block.marks) for n in numbers]
    return found


def _repealed_unit_articles(text: str) -> list[str]:
    """Articles of a repealed chapter: "(zawierający art. 19–21 – uchylony)" -> 19, 20, 21."""
    m = _UNIT_REPEALED.search(text)
    if not m:
        return []
    numbers: list[str] = []
    for item in re.split(r"\s*(?:,|\bi\b)\s*", m.group(1)):
        item = re.sub(r"^art\.\s*", "", item.strip())
        if span := split_range(item):
            numbers.extend(span)
        elif is_canonical(item):
            numbers.append(item)
    return numbers


def _paragraph_gap(lines: list[_Line]) -> float:
    """Baseline distance above which a line starts a new paragraph (extra spacing)."""
    gaps: Counter[float] = Counter(round(ln.gap, 1) for ln in lines if ln.gap > 0)
    usual = gaps.most_common(1)[0][0] if gaps else 12.0
    return usual * 1.2


def _append(block: _Block, line: _Line, paragraph_gap: float) -> None:
    """Add a line to an article: a new paragraph or the continuation of the last one."""
    previous = block.lines[-1]
    new_paragraph = line.gap > paragraph_gap or (
        _MARKER.match(line.text) and previous.rstrip().endswith((".", ";", ":", "”", ",", "–", ")"))
    )
    if new_paragraph:
        block.lines.append(line.text)
        block.marks.append(list(line.marks))
    else:
        block.lines[-1] = previous + "\n" + line.text  # joined later by join_hyphenated
        block.marks[-1].extend(line.marks)


def _title(lines: list[_Line]) -> str | None:
    """The act's title: "USTAWA", "z dnia …" and the bold title lines before the first article."""
    parts: list[str] = []
    for line in lines[:12]:
        if _ART.match(line.text) or _HEADING.match(line.text):
            break
        if not (line.bold or line.text.startswith("z dnia")):
            break
        parts.append(line.text)
    return join_lines(parts) or None
