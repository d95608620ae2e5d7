"""What the parsers hand to the chunker: an act's text as a list of articles."""
from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.core.errors import ParseError

__all__ = ["Article", "ParseError", "ParsedAct", "looks_like_pdf"]


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


@dataclass
class ParsedAct:
    """The result of parsing one text of an act (PDF or HTML)."""

    articles: list[Article]
    title: str | None = None
    source_format: str = ""  # "pdf" | "html"
    pages: int = 0  # PDF pages (0 for HTML)
    warnings: list[str] = field(default_factory=list)


def looks_like_pdf(data: bytes) -> bool:
    """A PDF file: its header within the first bytes (leading whitespace tolerated)."""
    return data[:1024].lstrip().startswith(b"%PDF-")
