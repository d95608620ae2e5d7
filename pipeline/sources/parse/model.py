"""What the parsers hand to the chunker: an act's text as a list of articles, with the footnotes a
consolidated text prints (where each mark stands) and the dates the text itself prints."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.core.errors import ParseError

__all__ = ["Article", "Footnote", "ParseError", "ParsedAct", "looks_like_pdf"]

# While a parser works, a footnote's mark stands in the text as MARK + number + MARK_END (private-use
# characters: no text has them); the article's text handed on has none.
MARK, MARK_END = "\ue010", "\ue011"
MARKS = re.compile(f"{MARK}(\\d+){MARK_END}")


def mark(number: int | str) -> str:
    return f"{MARK}{number}{MARK_END}"


@dataclass
class Footnote:
    """A footnote of the text and where its mark stands: in a unit of an article (``unit``: "§ 1 pkt 2",
    "" the article itself), or in a chapter's heading (``heading``: the footnote is about the chapter)."""

    number: int
    text: str
    unit: str = ""
    heading: str | None = None
    line: int = 0  # the line of the article's text the mark stands on (0: the label's line)


@dataclass
class Article:
    """One article (``Art. N.``) of an act, in reading order.

    ``number`` is canonical: superscripts as ``^`` (``151^1``, ``22^1c``), letter
    suffixes as printed (``19a``), no "Art." and no trailing dot.
    ``text`` is the whole article, starting with its own "Art. N." label written
    canonically (``Art. 151^1.``), paragraphs separated by newlines, no page furniture.
    ``heading_path`` holds the enclosing structural headings, outermost first,
    e.g. ``["DZIAŁ SIÓDMY Czas pracy", "Rozdział I Przepisy ogólne"]``.
    """

    number: str
    text: str
    heading_path: list[str] = field(default_factory=list)
    repealed: bool = False
    footnotes: list[Footnote] = field(default_factory=list)
    # A consolidated text may print an article, or one of its paragraphs, twice: the wording in force
    # and the one an amendment brings. Each becomes an article of its own: 1 the first printed, 2 the
    # second (their footnotes date them); 0 an article printed once.
    wording: int = 0


@dataclass
class ParsedAct:
    """The result of parsing one text of an act (PDF or HTML)."""

    articles: list[Article]
    title: str | None = None
    source_format: str = ""  # "pdf" | "html"
    pages: int = 0  # PDF pages (0 for HTML)
    warnings: list[str] = field(default_factory=list)
    published: str | None = None  # the day of publication the text prints (a Dz. U. PDF's masthead), ISO
    notes: list[Footnote] = field(default_factory=list)  # footnotes marked outside the articles (the title …)

    @classmethod
    def from_dict(cls, raw: dict) -> ParsedAct:
        """The inverse of ``dataclasses.asdict`` (the parse cache's entries)."""
        def article(a: dict) -> Article:
            return Article(**{**a, "footnotes": [Footnote(**f) for f in a.get("footnotes", [])]})

        return cls(**{**raw, "articles": [article(a) for a in raw["articles"]],
                      "notes": [Footnote(**f) for f in raw.get("notes", [])]})


def take_marks(text: str) -> tuple[str, list[int]]:
    """``text`` without its footnote marks, and their numbers in order."""
    return MARKS.sub("", text), [int(n) for n in MARKS.findall(text)]


def looks_like_pdf(data: bytes) -> bool:
    """A PDF file: its header within the first bytes (leading whitespace tolerated)."""
    return data[:1024].lstrip().startswith(b"%PDF-")
