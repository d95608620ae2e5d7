"""Read an act's text: tell PDF from HTML, and parse it (or take the parse cache's earlier result)."""
from __future__ import annotations

import hashlib
from collections.abc import Callable

from pipeline.sources.parse import cache as parse_cache
from pipeline.sources.parse.model import ParsedAct, ParseError, looks_like_pdf


def parse_text(data: bytes, fmt: str, *, progress: Callable[[str], None] | None = None,
               label: str = "") -> ParsedAct:
    """Parse a PDF or HTML text, or take an earlier parse of the same bytes by the same parser."""
    sha = hashlib.sha256(data).hexdigest()
    say = progress or (lambda line: None)
    kind = fmt.upper()
    # Another process parsing these bytes: wait for it, then take its result from the cache.
    with parse_cache.parsing(sha, fmt, on_wait=lambda: say(f"{label}: {kind} being parsed by another process, waiting")):
        if (parsed := parse_cache.load(sha, fmt)) is not None:
            say(f"{label}: {kind} already parsed (cache)")
            return parsed
        say(f"{label}: parsing {kind}")
        parsed = _parse(data, fmt)
        parse_cache.save(sha, fmt, parsed)
    return parsed


def _parse(data: bytes, fmt: str) -> ParsedAct:
    # The parsers load on first use: pypdf and lxml cost every `pipeline` command ~0.1 s of start-up,
    # and most commands (search, show, ask …) parse nothing.
    if fmt == "pdf":
        from pipeline.sources.parse.pdf import parse_pdf

        return parse_pdf(data)
    if fmt == "html":
        from pipeline.sources.parse.html import parse_html

        return parse_html(data)
    raise ParseError(f"unknown text format {fmt!r} (expected pdf or html)")


def sniff_format(data: bytes, name: str = "") -> str:
    if not data.strip():  # before the name: an empty "x.html" is empty, not a broken HTML
        raise ParseError(f"{name or 'input'} is empty")
    if looks_like_pdf(data):
        return "pdf"
    if data[:1024].lstrip()[:1] == b"<" or name.lower().endswith((".html", ".htm")):
        return "html"
    raise ParseError(f"{name or 'input'} is neither a PDF nor an HTML document")
