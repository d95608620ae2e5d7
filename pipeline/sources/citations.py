"""The citations of any Polish text (a letter, a brief, a model's answer): every article and unit it cites,
with the act as the text names it.

"art. 154 § 1 pkt 2 k.p.", "art. 30 Kodeksu pracy", "art. 5 ust. 2 ustawy z dnia 6 listopada 2008 r. o
prawach pacjenta i Rzeczniku Praw Pacjenta", "art. 1 ustawy (Dz. U. z 2024 r. poz. 581)", "art. 22
DU/2025/277", ranges and lists ("art. 8–10 k.p.": three), and a unit cited after its act was named
earlier in the same sentence ("Ustawa o prawach pacjenta … w art. 9 ust. 2 …"). Read with the reference
grammar of statutes (pipeline.sources.references); an "art. …" whose act the text does not name is not a
citation of this kind (a statute's own articles are).

A pasted letter is wrapped: it is read as its reader reads it (:class:`Reading`), a line break inside a
paragraph a space, a word hyphenated at a line end ("postępo-⏎wania") whole; a citation's ``start`` and
``end`` are its place in the text as pasted.
"""
from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

from pipeline.core import numbering, units
from pipeline.core.limits import MAX_RANGE
from pipeline.core.numbering import expand_range, is_canonical, range_size, sort_key
from pipeline.sources.references import Cited, acts_named_in, cited_in, counted

# Where a sentence ends: a full stop before a capital or a line break, or a blank line.
_SENTENCE_END = re.compile(r"(?<!\bart)(?<!\bust)(?<!\bpkt)(?<!\blit)(?<!\bpoz)(?<!\bnr)(?<!\bDz)(?<!\bU)(?<!\br)"
                           r"(?<!\bzm)(?<!\bm\.in)[.!?](?=\s+[A-ZĄĆĘŁŃÓŚŹŻ„\"(]|\s*\n)|\n\s*\n")


@dataclass(frozen=True)
class Citation:
    """One cited unit: ``quote`` is the text's own words (its span ``start``–``end``); ``act`` the ELI id the
    words give (a code's base act, a Dz. U. position, an ELI id), else None with ``name`` / ``year`` /
    ``title`` to find it by among stored acts."""

    quote: str
    start: int
    end: int
    article: str  # canonical: 154, 151^1
    unit: str  # "§ 1 pkt 2", "" the whole article
    act_words: str  # how the text names the act: "k.p.", "ustawy z dnia … o …", "(Dz. U. z 2024 r. poz. 581)"
    act: str | None = None
    name: str | None = None
    year: int | None = None
    title: str | None = None
    from_context: bool = False  # the act was named earlier in the sentence, not after the article
    foreign: str | None = None  # an act outside the Dziennik Ustaw ("RODO"): never stored here
    after: str | None = None  # a range's end ("art. 8–10": 10): the articles after this one up to ``article``


# A line break (with the blanks around it, and the hyphen or dash it follows, glued to a word or a number), or a soft
# hyphen (U+00AD, hyphenation a pasted web page keeps) with the line break it may stand before.
_BREAK = re.compile(r"(?P<glued>(?<=[^\W_])[-–])?[ \t]*(?:\r\n|\r|\n)(?P<blank>(?:[ \t]*(?:\r\n|\r|\n))*)[ \t]*"
                    r"|\u00ad(?:[ \t]*(?:\r\n|\r|\n)[ \t]*)?")
# A line that starts an item of a list, a unit or an article's own label: the line break before it is the text's.
# The units' own labels are the unit grammar's (pipeline.core.units); bullets and roman numbers are a letter's.
_ITEM_START = re.compile(rf"(?:{units.LABEL}|{numbering.ARTICLE_LABEL}\s|[•·▪*]\s|[IVXL]+\.\s)")


def _unwrapped(text: str, m: re.Match) -> str | None:
    """What a reader reads for the break ``m``: nothing (a word hyphenated at a line end, a soft hyphen), the dash
    alone (a word or a range wrapped after its dash: "Skłodowska-⏎Curie", "art. 8–⏎10"), a space (a line broken
    inside a paragraph); None: the break is the text's own (a blank line, a list's next item)."""
    if m.group(0).startswith("\u00ad"):
        return ""
    if m.group("blank") or _ITEM_START.match(text, m.end()):
        return None
    if dash := m.group("glued"):
        if dash == "-" and text[m.start() - 1].isalpha() and text[m.end():m.end() + 1].islower():
            return ""
        return dash
    return " "


class Reading:
    """A pasted text as the finder reads it (``text``): a line break inside a paragraph is a space and a word
    hyphenated at a line end is whole again, so that an act's name broken over two lines ("– Kodeks⏎postępowania
    administracyjnego", "postępo-⏎wania") is read whole; a blank line and a line starting a list's item stay. With
    where each place of it is in the text as pasted (:meth:`pasted`), each a look-up in what one pass found."""

    def __init__(self, pasted: str) -> None:
        parts: list[str] = []
        self._read, self._pasted = [0], [0]  # where each run of unchanged text starts, read and as pasted
        read = done = 0
        for m in _BREAK.finditer(pasted):
            if (new := _unwrapped(pasted, m)) is None:
                continue
            parts += [pasted[done:m.start()], new]
            read += m.start() - done + len(new)
            done = m.end()
            self._read.append(read)
            self._pasted.append(done)
        parts.append(pasted[done:])
        self.text = "".join(parts)

    def pasted(self, at: int, *, end: bool = False) -> int:
        """Where the place ``at`` of the text read is in the text as pasted; ``end``: ``at`` ends a span (it
        is after the character before it, not at a line's next word)."""
        if end and at > 0:
            return self.pasted(at - 1) + 1
        i = bisect.bisect_right(self._read, at) - 1
        return self._pasted[i] + at - self._read[i]


class _Sentences:
    """Where the sentence (and the clause) holding a place of ``text`` begins, each answer a look-up in what one
    pass over the text found: asking from the text's start for each citation made the finder quadratic."""

    def __init__(self, text: str) -> None:
        self.text = text
        found = [(m.start(), m.end()) for m in _SENTENCE_END.finditer(text)]
        self.starts, self.ends = [s for s, _ in found], [e for _, e in found]
        self.semicolons = [m.start() for m in re.finditer(";", text)]

    def start(self, at: int) -> int:
        """Where the sentence holding ``at`` begins: after the last sentence end before it that the text up to
        ``at`` shows (one whose next capital is the citation itself is not read as one)."""
        i = bisect.bisect_right(self.ends, at) - 1
        while i >= 0:
            if m := _SENTENCE_END.match(self.text, self.starts[i], at):
                return m.end()
            i -= 1
        return 0

    def clause_start(self, at: int) -> int:
        """Where the clause holding ``at`` begins: the sentence's start, or after a ";" in it."""
        i = bisect.bisect_left(self.semicolons, at) - 1
        return max(self.start(at), self.semicolons[i] + 1 if i >= 0 else 0)


# An article's own label in a statute's text quoted whole ("… 621). Art. 12a. Przepisów …"): not a citation.
_LABEL_AFTER = re.compile(r"\.\s+(?:[A-ZĄĆĘŁŃÓŚŹŻ§]|\d+\.\s)")
_LABEL_BEFORE = re.compile(r"(?:^|[.;:)]\s*|\n\s*)$")


def _is_label(text: str, c: Cited) -> bool:
    return (text.startswith("Art.", c.start) and bool(_LABEL_AFTER.match(text, c.end))
            and bool(_LABEL_BEFORE.search(text[max(0, c.start - 3):c.start])))


def find(text: str) -> list[Citation]:
    """Every citation of ``text``, in order, lists expanded, each unit once per place; an article range as its
    first article and its last (``after``: the first), the articles between being the act's own."""
    return found_in(text)[0]


def found_in(text: str, limit: int | None = None) -> tuple[list[Citation], int]:
    """:func:`find`'s citations, at most ``limit`` of them listed, and how many more there are (counted, a range
    by its numbers: pipeline.sources.references.counted). Linear in the text: each look-up of what comes
    before a citation is a binary search in what one pass found. Read as :class:`Reading` reads the text; the
    quote is what is read, ``start`` and ``end`` are in the text as pasted."""
    reading = Reading(text)
    text = reading.text
    cited = cited_in(text, whole_ranges=True, limit=limit)
    # What a later "art. 9 ust. 2" with no act after it cites: an act the sentence named on its own (not as
    # the act of an "art. …" list: that one is the list's), in the same clause; "tej ustawy": the act the text
    # named last, on its own or after a list.
    spans = [(c.start, c.end) for c in cited if c.named]
    span_starts = [s for s, _ in spans]
    reach = list(itertools.accumulate((e for _, e in spans), max))  # the furthest end of the spans so far

    def in_span(at: int) -> bool:
        i = bisect.bisect_right(span_starts, at) - 1
        return i >= 0 and at < reach[i]

    topics = [(at, a) for at, a in acts_named_in(text) if not in_span(at)]
    mentions = sorted(topics + [(c.start, c) for c in cited if c.named], key=lambda x: x[0])
    topic_at, mention_at = [at for at, _ in topics], [at for at, _ in mentions]
    sentences = _Sentences(text)
    found: list[Citation] = []
    more = 0
    for c in cited:
        context = None
        if not c.named:
            if c.anaphoric:
                i = bisect.bisect_left(mention_at, c.start) - 1
                context = mentions[i][1] if i >= 0 else None
            elif not _is_label(text, c):
                begin = sentences.clause_start(c.start)
                i = bisect.bisect_left(topic_at, c.start) - 1
                context = topics[i][1] if i >= 0 and topic_at[i] >= begin else None
            if context is None:
                continue
        act = context or c
        more += c.more
        quote = " ".join(text[c.start:c.end].split())
        words = _words(text, act)
        if c.anaphoric:  # "tej ustawy (ustawy o prawach pacjenta)"
            words = f"{_words(text, c)} ({words})"
        start, end = reading.pasted(c.start), reading.pasted(c.end, end=True)
        for i, (article, unit) in enumerate(c.targets):
            found.append(Citation(quote, start, end, article, unit, words, act.act,
                                  act.name, act.year, act.title, from_context=context is not None,
                                  foreign=act.foreign, after=c.ranges.get(i)))
    return found, more


def quote_to(text: str, c: Citation, name: str) -> tuple[str, int]:
    """``c``'s quote up to the end of ``name`` (the act's name as it matched a stored one: a name written without
    its date may run on into the sentence, "art. 17 ustawy o zawodzie psychologa psycholog jest …"), and where
    that ends in ``text``, the text as pasted; the whole quote where the name is not in it."""
    reading = Reading(text[c.start:c.end])  # the citation alone, read as the whole text was
    m = re.search(r"\s+".join(re.escape(w) for w in name.split()), reading.text, re.IGNORECASE)
    if m is None:
        return c.quote, c.end
    return " ".join(reading.text[:m.end()].split()), c.start + reading.pasted(m.end(), end=True)


def weight(c: Citation) -> int:
    """How many articles ``c`` stands for, counted by number: one, or a range's numbers after its first."""
    return counted(c.article, c.after)


def between(c: Citation, known: list[str] | None) -> tuple[list[str], int]:
    """The articles a range's citation ``c`` stands for after its first, to check one by one: with ``known``
    (its act's articles in order) those of them in between, and ``c.article`` where the act lacks it ("art.
    1–20000 k.p.": the Code's articles, and 20000, not found); else by number, at most MAX_RANGE of them
    (past it ``c.article`` alone). With how many numbers between were not listed (past MAX_RANGE)."""
    first, last = c.after, c.article
    if first is None:
        return [last], 0
    if known is not None and is_canonical(first) and is_canonical(last):
        low, high = sort_key(first), sort_key(last)
        numbers = [n for n in dict.fromkeys(known) if is_canonical(n) and low < sort_key(n) <= high]
        return numbers + ([last] if last not in numbers else []), 0
    numbers = expand_range(first, last)[1:]
    if numbers:
        return numbers, 0
    size = range_size(first, last)
    return [last], (size - 2 if size is not None and size > MAX_RANGE else 0)


def _words(text: str, c: Cited) -> str:
    """The words naming the act: after the article list, or the mention itself."""
    return " ".join(text[max(c.start, c.list_end):c.end].split())
