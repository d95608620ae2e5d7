"""Parse an ELI ``text.html`` (api.sejm.gov.pl) into articles.

The markup is described in the mirror's API.md: ``section#part_N`` blocks holding
``div.unit.unit_{arti|pass|pint|lett|chpt|…}``; quoted amendments in ``div.cite-box``;
footnotes as ``a.gloss-link`` tooltips. Some files are malformed (a footnote with
``<div>`` inside the ``<h1>`` makes libxml2 nest the whole body in the title), so
nothing here relies on an article sitting inside its ``section`` element: parts are
assigned in document order, and footnote subtrees are skipped only while rendering.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import lxml.html
from lxml import etree

from pipeline.core import units
from pipeline.core.numbering import LETTER, NUMBER, Key, label_end, sort_key, split_range
from pipeline.sources.parse.articles import is_repealed, split_wordings
from pipeline.sources.parse.model import Article, Footnote, ParsedAct, ParseError, mark, take_marks

# Rendering skips these subtrees: footnote markers/tooltips (a footnote is kept as a mark where it
# stands, its text apart), the footnote list, scripts.
_SKIP_CLASSES = frozenset({"gloss-link", "gloss-section", "tooltip-text"})
_NOTE_NUMBER = re.compile(r"\d+")
_SKIP_TAGS = frozenset({"script", "style", "head", "title", "button"})
_BLOCK_TAGS = frozenset(
    {"div", "p", "ul", "ol", "li", "table", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "blockquote"}
)
_LABEL = re.compile(r"Art\.\s*(.+?)\s*\.?")
_SUP_LETTERS = re.compile(rf"\^(\d+)\^({LETTER}+)")  # 22<sup>1</sup><sup>a</sup> -> 22^1a
_CONSOLIDATED_TYPE = "obwieszczenie"
_BREAK = "\x1e"  # a line break made by the markup; source newlines are plain whitespace
_SPLIT = "\ue000"  # starts a line with an article label found in running text (private use: not whitespace)
_EMBEDDED_LABEL = re.compile(rf"Art\.\s*{NUMBER}\.")
_LETTERS = re.compile(r"[^\W\d_]+")
_SHORT_WORDS = frozenset({"po", "do", "na", "we", "ze", "od", "ku"})  # words, not number suffixes
# data-bookmark="_001_a536", "_002_z1_a95ł". One with "_" after the number is not read: it names a unit
# ("_a3a_1": ust. 1 of art. 3a) or, alike, art. 3a^1.
_BOOKMARK_NUMBER = re.compile(rf"_a(\d+{LETTER}*)$")


def _classes(el: etree._Element) -> set[str]:
    return set((el.get("class") or "").split())


class _Renderer:
    """Turns a subtree into lines: blocks start new lines, a unit's label stays on its first line."""

    def __init__(self, find_articles: bool = False, notes: dict[int, str] | None = None) -> None:
        self.notes = notes  # footnotes by number, kept as marks in the text (None: dropped)
        self.parts: list[str] = []
        self.glue = False  # the next block continues the current line (after a label such as "1.")
        self.stick = False  # the next text follows with no space (after an opening quote)
        # inside a top-level article's own text (not quoted, not a nested article): a bold
        # "Art. N." there is an article the source failed to mark up as a unit
        self.find_articles = find_articles

    def text(self, s: str | None) -> None:
        if s and self.stick:
            s = s.lstrip()
            self.stick = not s
        if s:
            self.parts.append(s)
            if not s.isspace():
                self.glue = False

    def block(self) -> None:
        if not self.glue:  # glue holds until real text arrives: labels are followed by nested blocks
            self.parts.append(_BREAK)

    def attach(self, s: str) -> None:
        """Append to the previous text with no space (closing quote, trailing punctuation)."""
        while self.parts and self.parts[-1].isspace():
            self.parts.pop()
        if self.parts:
            self.parts[-1] = self.parts[-1].rstrip()
        self.text(s)

    def lines(self) -> list[str]:
        raw = _SUP_LETTERS.sub(r"^\1\2", "".join(self.parts))
        return [line for line in (" ".join(chunk.split()) for chunk in raw.split(_BREAK)) if line]

    # -- tree walk ---------------------------------------------------------------
    def node(self, el: etree._Element) -> None:
        tag = el.tag
        if not isinstance(tag, str):  # comment / processing instruction
            return
        tag = tag.lower()
        cls = _classes(el)
        if "gloss-link" in cls and self.notes is not None:
            self.footnote(el)
            return
        if tag in _SKIP_TAGS or cls & _SKIP_CLASSES:
            return
        if tag == "sup":
            self.text("^" + "".join(inline_text(el).split()))
        elif tag == "br":
            self.parts.append(_BREAK)
        elif tag == "b" and self.find_articles and _EMBEDDED_LABEL.fullmatch(label := inline_text(el)):
            self.parts.append(_BREAK + _SPLIT + label + " ")
        elif "unit" in cls and tag == "div":
            self.unit(el, cls)
        elif "cite-box" in cls:
            self.cite_box(el)
        elif tag == "li":
            self.list_item(el)
        elif tag in _BLOCK_TAGS:
            self.block()
            self.children(el)
        else:
            self.children(el)

    def footnote(self, el: etree._Element) -> None:
        """A footnote's mark (``<a class="gloss-link"><sup>3)</sup><span class="tooltip-text">…``):
        its number as a mark where it stands, its text kept by number."""
        sup = el.find(".//sup")
        number = _NOTE_NUMBER.search(inline_text(sup)) if sup is not None else None
        if number is None:
            return
        tip = next((c for c in el.iter() if isinstance(c.tag, str) and "tooltip-text" in _classes(c)), None)
        text = " ".join(" ".join(_Renderer().lines_of(tip)).split()) if tip is not None else ""
        self.notes.setdefault(int(number.group(0)), text)  # type: ignore[union-attr]  # called only where notes are kept
        glue, stick = self.glue, self.stick
        self.attach(mark(number.group(0)))
        self.glue, self.stick = glue, stick  # a mark is no text: a label's line goes on after it

    def lines_of(self, el: etree._Element) -> list[str]:
        """``el``'s own text (a footnote's tooltip) as lines."""
        self.children(el)
        return self.lines()

    def children(self, el: etree._Element) -> None:
        self.text(el.text)
        for child in el:
            self.node(child)
            tail = child.tail
            if tail and child.tag == "sup" and _space_after_sup(tail):
                tail = " " + tail
            self.text(tail)

    def unit(self, el: etree._Element, cls: set[str]) -> None:
        if "unit_arti" in cls:
            saved, self.find_articles = self.find_articles, False
            self.unit(el, cls - {"unit_arti"})
            self.find_articles = saved
            return
        head, inner = _split_unit(el)
        self.block()
        label = inline_text_of(head, self.notes)
        if label:
            if "with-title" in cls:  # "Rozdział 2 Tytuł" is a line of its own
                self.text(label)
            else:  # "1." / "§ 2." / "a)" / "Art. 5." start the unit's first line
                self.text(label + " ")
                self.glue = True
        for part in inner:
            self.children(part)
        self.glue = False

    def cite_box(self, el: etree._Element) -> None:
        saved, self.find_articles = self.find_articles, False
        self._cite_box(el)
        self.find_articles = saved

    def _cite_box(self, el: etree._Element) -> None:
        self.block()
        for child in el:
            if not isinstance(child.tag, str):
                continue
            cls = _classes(child)
            if "qmark-opn" in cls:
                self.text(inline_text(child).strip())
                self.glue = self.stick = True
            elif "qmark-cls" in cls or "trailer" in cls:
                self.attach(inline_text(child).strip())
            else:
                self.children(child)
        self.glue = False

    def list_item(self, el: etree._Element) -> None:
        self.block()
        kids = [c for c in el if isinstance(c.tag, str)]
        # ``<li><div>-</div><div>text</div></li>``: the dash marker leads the line
        if len(kids) > 1 and len(inline_text(kids[0]).strip()) <= 3 and not el.text_content().isspace():
            self.text(inline_text(kids[0]).strip() + " ")
            self.glue = True
            for kid in kids[1:]:
                self.node(kid)
        else:
            self.children(el)
        self.glue = False


def _space_after_sup(tail: str) -> bool:
    """The source often prints "art. 22<sup>1</sup>dodaje się": with ``^`` that needs a space,
    except before a letter suffix of the number itself ("22<sup>1</sup>c" = art. 22^1c)."""
    if tail[0] == "§":
        return True
    m = _LETTERS.match(tail)
    return m is not None and (len(m.group(0)) > 2 or m.group(0).lower() in _SHORT_WORDS)


def inline_text(el: etree._Element, notes: dict[int, str] | None = None) -> str:
    """Text of a subtree on one line, superscripts as ``^``; footnotes dropped, or with ``notes`` kept as
    marks (their texts in ``notes``)."""
    r = _Renderer(notes=notes)
    r.children(el)
    return " ".join(" ".join(r.lines()).split())


def inline_text_of(elements: list[etree._Element], notes: dict[int, str] | None = None) -> str:
    return " ".join(t for t in (inline_text(e, notes) for e in elements) if t)


def _split_unit(el: etree._Element) -> tuple[list[etree._Element], list[etree._Element]]:
    """A unit's heading elements (h3, p…) and its ``div.unit-inner`` body."""
    head: list[etree._Element] = []
    inner: list[etree._Element] = []
    for child in el:
        if not isinstance(child.tag, str):
            continue
        if "unit-inner" in _classes(child):
            inner.append(child)
        elif not inner:
            head.append(child)
        else:  # stray content after the body (misnested markup): keep it as body
            inner.append(child)
    return head, inner


@dataclass
class _Part:
    title: str
    articles: list[etree._Element] = field(default_factory=list)


def _collect(root: etree._Element) -> list[_Part]:
    """Top-level article units, grouped by the part (section) that precedes them in document order.

    Units inside ``div.cite-box`` or inside another article are quoted text, part of the
    enclosing article, never articles of their own.
    """
    parts: list[_Part] = [_Part(title="")]
    stack: list[etree._Element] = [root]
    while stack:
        el = stack.pop()
        if not isinstance(el.tag, str):
            continue
        tag = el.tag.lower()
        if tag in _SKIP_TAGS:
            continue
        cls = _classes(el)
        if "cite-box" in cls:
            continue
        if tag == "section":
            heading = el.find(".//h2")
            parts.append(_Part(title=inline_text(heading) if heading is not None else el.get("id", "")))
        if tag == "div" and "unit_arti" in cls:
            parts[-1].articles.append(el)
            continue
        stack.extend(reversed(el))
    return [p for p in parts if p.articles]


def _choose(parts: list[_Part], doc_type: str, warnings: list[str]) -> list[etree._Element]:
    """The articles of the act itself.

    An "Obwieszczenie … w sprawie ogłoszenia jednolitego tekstu" carries the act in its
    annex (Załącznik); its own points are not the act's articles.
    """
    if not parts:
        return []
    chosen = parts[0]
    if doc_type.lower().startswith(_CONSOLIDATED_TYPE):
        annexes = [p for p in parts if p.title.lower().startswith("załącznik")]
        if annexes:
            chosen = annexes[0]
        elif len(parts) > 1:
            chosen = parts[1]
    for p in parts:
        if p is not chosen:
            warnings.append(f"ignored {len(p.articles)} articles in part {p.title!r}")
    return chosen.articles


def _headings(el: etree._Element, cache: dict[etree._Element, tuple[str, list[int]]],
              notes: dict[int, str]) -> tuple[list[str], list[tuple[str, int]]]:
    """The headings above an article, outermost first, and the footnotes marked in them (heading, number)."""
    path: list[str] = []
    marked: list[tuple[str, int]] = []
    for anc in el.iterancestors():
        if anc.tag != "div":
            continue
        cls = _classes(anc)
        if "unit" not in cls or "with-title" not in cls or "unit_arti" in cls:
            continue
        if anc not in cache:
            cache[anc] = take_marks(inline_text_of(_split_unit(anc)[0], notes))
        heading, numbers = cache[anc]
        if heading:
            path.append(heading)
            marked.extend((heading, n) for n in numbers)
    return path[::-1], marked


def _articles(el: etree._Element, heading_path: list[str], warnings: list[str],
              notes: dict[int, str]) -> list[Article]:
    head, inner = _split_unit(el)
    label, on_label = take_marks(inline_text_of(head, notes))
    r = _Renderer(find_articles=True, notes=notes)
    r.glue = True  # the body's first block continues the "Art. N." line
    for part in inner:
        r.children(part)
    # (label, content lines) per article; more than one only where the source buried a label in the text
    pieces: list[tuple[str, list[str]]] = [(label, [])]
    for line in r.lines():
        if line.startswith(_SPLIT):
            m = _EMBEDDED_LABEL.match(line, 1)
            if m is None:  # cannot happen: the renderer marks only text that matched
                pieces[-1][1].append(line[1:])
                continue
            rest = line[m.end():].strip()
            pieces.append((m.group(0), [rest] if rest else []))
            warnings.append(f"{m.group(0)} was found inside the text of {label} and split off")
        else:
            pieces[-1][1].append(line)
    result: list[Article] = []
    for piece_label, lines in pieces:
        m = _LABEL.fullmatch(piece_label)
        if not m:
            warnings.append(f"skipped an article unit with heading {piece_label!r} (id {el.get('id')!r})")
            continue
        number = "".join(m.group(1).split())
        text, footnotes = _with_footnotes(f"Art. {number}." + (f" {chr(10).join(lines)}" if lines else ""), notes)
        footnotes = [Footnote(n, notes.get(n, "")) for n in on_label] + footnotes
        content = text[len(f"Art. {number}."):].strip()
        repealed = is_repealed(content)
        # "Art. 20-22. (uchylone)" stands for each of those articles
        numbers = split_range(number) or [number]
        result.extend(
            Article(number=n, text=f"Art. {n}." + (f" {content}" if content else ""), heading_path=list(heading_path),
                    repealed=repealed, footnotes=list(footnotes))
            for n in numbers
        )
    return result


def _with_footnotes(text: str, notes: dict[int, str]) -> tuple[str, list[Footnote]]:
    """An article's text without its footnotes' marks, and the footnotes with the unit each mark stands in."""
    raw = text.split("\n")
    lines = [take_marks(line) for line in raw]
    plain = [line for line, _ in lines]
    where = units.paths(plain, label_end(plain[0]) if plain else 0)
    found = [Footnote(n, notes.get(n, ""), unit, line=i)
             for i, ((_, numbers), unit) in enumerate(zip(lines, where, strict=True)) for n in numbers]
    return "\n".join(plain), found


def _fix_mislabeled(articles: list[Article], bookmarks: dict[int, str], warnings: list[str]) -> None:
    """A heading misprinted in the source (Civil Code 1964: "Art. 538." over art. 536, whose
    bookmark says ``_a536``): trust the bookmark only where the printed number breaks the
    order between its neighbours and the bookmark's number fits there."""

    def key(number: str) -> Key | None:
        try:
            return sort_key(number)
        except ValueError:
            return None

    for i, art in enumerate(articles):
        mark = bookmarks.get(id(art))
        if mark is None or mark == art.number or i == 0 or i == len(articles) - 1:
            continue
        prev, cur, nxt, alt = (key(n) for n in (articles[i - 1].number, art.number, articles[i + 1].number, mark))
        if None in (prev, cur, nxt, alt) or prev < cur < nxt or not prev < alt < nxt:  # type: ignore[operator]  # None: out
            continue
        warnings.append(f"art. {art.number} printed over art. {mark} (by its bookmark): numbered {mark}")
        art.text = f"Art. {mark}." + art.text[len(f"Art. {art.number}.") :]
        art.number = mark


def _load(data: bytes) -> tuple[etree._Element, list[str]]:
    warnings: list[str] = []
    head = data.lstrip().removeprefix(b"\xef\xbb\xbf").lstrip()
    if not head:
        raise ParseError("empty HTML document (the act may have no HTML text)")
    if not head.startswith(b"<") or b"\x00" in head[:4096]:
        raise ParseError("not an HTML document")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        data = data.decode("utf-8", errors="replace").encode("utf-8")
        warnings.append("invalid UTF-8 bytes replaced")
    parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, huge_tree=True)
    try:
        root = lxml.html.document_fromstring(data, parser=parser)
    except (etree.ParserError, ValueError) as exc:
        raise ParseError(f"not an HTML document: {exc}") from exc
    return root, warnings


def parse_html(data: bytes) -> ParsedAct:
    """Articles of an ELI ``text.html``; raises ParseError for empty, non-HTML or article-less input."""
    root, warnings = _load(data)
    h1 = root.find(".//h1")
    title: str | None = None
    doc_type = ""
    if h1 is not None:
        spans = {c: h1.find(f".//span[@class='{c}']") for c in ("head-type", "head-date", "head-title")}
        doc_type = inline_text(spans["head-type"]) if spans["head-type"] is not None else ""
        title = inline_text_of([s for s in spans.values() if s is not None]) or inline_text(h1) or None
    chosen = _choose(_collect(root), doc_type, warnings)
    cache: dict[etree._Element, tuple[str, list[int]]] = {}
    notes: dict[int, str] = {}
    articles: list[Article] = []
    bookmarks: dict[int, str] = {}
    for el in chosen:
        heading_path, heading_marks = _headings(el, cache, notes)
        found = _articles(el, heading_path, warnings, notes)
        for article in found:  # a footnote of a chapter's heading is about each of its articles
            article.footnotes[:0] = [Footnote(n, notes.get(n, ""), "", heading) for heading, n in heading_marks]
        m = _BOOKMARK_NUMBER.search(el.get("data-bookmark") or "")
        if m and len(found) == 1:
            bookmarks[id(found[0])] = m.group(1)
        articles.extend(found)
    _fix_mislabeled(articles, bookmarks, warnings)
    articles = split_wordings(articles, warnings)
    if not articles:
        raise ParseError("no articles found in the HTML document")
    return ParsedAct(articles=articles, title=title, source_format="html", warnings=warnings,
                     notes=_notes_outside(root, notes, articles))


def _notes_outside(root: etree._Element, notes: dict[int, str], articles: list[Article]) -> list[Footnote]:
    """The footnotes of the document that no article's text marks (the title's, the announcement's)."""
    inside = {f.number for a in articles for f in a.footnotes}
    found: dict[int, str] = {}
    for el in root.iter():
        if isinstance(el.tag, str) and "gloss-link" in _classes(el):
            sup = el.find(".//sup")
            number = _NOTE_NUMBER.search(inline_text(sup)) if sup is not None else None
            if number and int(number.group(0)) not in inside:
                tip = next((c for c in el.iter() if isinstance(c.tag, str) and "tooltip-text" in _classes(c)), None)
                found.setdefault(int(number.group(0)), " ".join(" ".join(_Renderer().lines_of(tip)).split())
                                 if tip is not None else "")
    return [Footnote(n, t) for n, t in sorted(found.items())]
