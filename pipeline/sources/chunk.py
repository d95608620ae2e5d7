"""Split articles into search units: one article per chunk, long articles into overlapping parts.

Parts break at § / ust. / pkt boundaries where possible (a part then reads like a provision), else
at sentence ends, else at spaces. Each part after the first repeats the tail of the previous one
(``overlap`` characters, from a word boundary) so a provision cut in two is still found whole.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from pipeline.core import units
from pipeline.sources.parse.articles import TWO_WORDINGS
from pipeline.sources.parse.model import Article

from pipeline.core.limits import DEFAULT_MAX_CHARS, DEFAULT_OVERLAP, MIN_CHARS
# Pieces: provision-sized parts of a chunk (§ / ust. / pkt, packed up to this size) that get vectors of
# their own besides the chunk's. A small embedding model averages a 1200-character chunk into one
# vector, and a question about one provision matches that provision better than the whole.
PIECE_CHARS = 400

# The units a part may begin with: "§ 2.", "2.", "2a.", "3)", "a)" (the article label itself is line 1);
# a tiret stays with the line before it.
_PART_UNITS = (units.PARAGRAPH, units.SECTION, units.POINT, units.LETTER)
_SENTENCE_END = re.compile(r"(?<=[.;:])\s+")


@dataclass(frozen=True)
class ChunkSizes:
    """How articles are cut into chunks: the most characters of a part, and the overlap between parts."""

    max_chars: int = DEFAULT_MAX_CHARS
    overlap: int = DEFAULT_OVERLAP


@dataclass(frozen=True)
class Chunk:
    article: str
    part: int
    part_count: int
    text: str
    embed_text: str  # context header + text
    content_sha256: str


@dataclass(frozen=True)
class Piece:
    piece: int  # 1..n within its chunk
    embed_text: str  # the chunk's context header + the piece
    content_sha256: str


def chunk_pieces(embed_text: str, text: str, size: int = PIECE_CHARS) -> list[Piece]:
    """The pieces of a chunk (given its embed_text and text) longer than ``size``; none for a shorter
    chunk (its own vector is the piece's). Each piece carries the chunk's header line, so it is
    embedded with the act, headings and article it belongs to."""
    text = searched_text(text)
    if len(text) <= size:
        return []
    header = embed_text.split("\n", 1)[0]
    pieces = []
    for i, part in enumerate(_split(text, size), start=1):
        piece_text = f"{header}\n{part}"
        pieces.append(Piece(i, piece_text, hashlib.sha256(piece_text.encode("utf-8")).hexdigest()))
    return pieces


def searched_text(text: str) -> str:
    """A chunk's text as it is embedded and full-text indexed: without the line the parser puts between
    two wordings of an article (TWO_WORDINGS). That line is ours, not the statute's: shown to readers and
    the answer model, but its words ("obowiązuje", "zmiany", "wejścia w życie") are no evidence that the
    article answers a question. Left out, the searched text is what it was before the line existed, so
    adding it changed no content hash and re-embedded nothing."""
    return text.replace("\n" + TWO_WORDINGS + "\n", "\n")


def short_title(title: str | None) -> str:
    """'Obwieszczenie … w sprawie ogłoszenia jednolitego tekstu ustawy - Kodeks pracy' -> 'Ustawa - Kodeks pracy'.

    The announcement's date is dropped on purpose: the next consolidated text of the same act then
    yields the same header, so unchanged articles keep their content hash and are not re-embedded.
    """
    if not title:
        return ""
    m = re.search(r"jednolitego tekstu\s+(.*)$", title, flags=re.DOTALL)
    text = m.group(1) if m else title
    text = " ".join(text.split())
    # The announcement names the act in the genitive ("tekstu ustawy"); the header uses the nominative.
    first, _, rest = text.partition(" ")
    first = _NOMINATIVE.get(first.lower(), first)
    text = f"{first} {rest}" if rest else first
    return text[:1].upper() + text[1:]


_NOMINATIVE = {"ustawy": "ustawa", "rozporządzenia": "rozporządzenie", "dekretu": "dekret", "uchwały": "uchwała"}


def context_header(act_title: str, article: Article, part: int, part_count: int) -> str:
    bits = [b for b in (short_title(act_title), " / ".join(article.heading_path)) if b]
    label = f"Art. {article.number}" + (f" (część {part}/{part_count})" if part_count > 1 else "")
    return " | ".join(bits + [label])


def chunk_article(article: Article, act_title: str = "", *, max_chars: int = DEFAULT_MAX_CHARS,
                  overlap: int = DEFAULT_OVERLAP) -> list[Chunk]:
    if max_chars < MIN_CHARS:
        raise ValueError(f"chunk size must be at least {MIN_CHARS} characters")
    overlap = max(0, min(overlap, max_chars // 3))
    pieces = _split(article.text, max_chars - overlap) if len(article.text) > max_chars else [article.text]
    texts = []
    for i, piece in enumerate(pieces):
        if i and overlap:
            piece = _tail(pieces[i - 1], overlap) + " " + piece
        texts.append(piece.strip())
    chunks = []
    for i, text in enumerate(texts, start=1):
        embed_text = context_header(act_title, article, i, len(texts)) + "\n" + searched_text(text)
        digest = hashlib.sha256(embed_text.encode("utf-8")).hexdigest()
        chunks.append(Chunk(article.number, i, len(texts), text, embed_text, digest))
    return chunks


def _split(text: str, limit: int) -> list[str]:
    """Units (then sentences, then words) packed into pieces of at most ``limit`` chars."""
    return _pack((segment for unit in _units(text) for segment in _fit(unit, limit)), limit, "\n")


def _units(text: str) -> list[str]:
    found: list[str] = []
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        if found and not units.opens_unit(line, kinds=_PART_UNITS) and len(found[-1]) < 80:
            found[-1] += " " + line  # a short label line ("Art. 5.") stays with what follows
        else:
            found.append(line)
    return found


def _fit(unit: str, limit: int) -> list[str]:
    """A unit longer than the limit, cut at sentence ends (and within a long sentence, at spaces)."""
    if len(unit) <= limit:
        return [unit]
    sentences = _SENTENCE_END.split(unit)
    return _pack((word for s in sentences for word in (_pack(s.split(" "), limit, " ") if len(s) > limit else [s])),
                 limit, " ")


def _pack(pieces: Iterable[str], limit: int, sep: str) -> list[str]:
    """Greedy: join consecutive pieces with ``sep`` while the result stays within ``limit``."""
    out: list[str] = []
    current = ""
    for piece in pieces:
        if current and len(current) + len(sep) + len(piece) > limit:
            out.append(current)
            current = piece
        else:
            current = f"{current}{sep}{piece}" if current else piece
    if current:
        out.append(current)
    return out


def _tail(text: str, size: int) -> str:
    """The last ``size`` characters of ``text``, starting at a word boundary."""
    if len(text) <= size:
        return text
    tail = text[-size:]
    space = tail.find(" ")
    return tail[space + 1:] if 0 <= space < size // 2 else tail


def text_sha256(articles: list[Article]) -> str:
    """Hash of an act's parsed text: same articles and wording => same hash, whatever the file bytes."""
    h = hashlib.sha256()
    for a in articles:
        h.update(f"{a.number}\x1f{int(a.repealed)}\x1f{' / '.join(a.heading_path)}\x1f{a.text}\x1e".encode())
    return h.hexdigest()
