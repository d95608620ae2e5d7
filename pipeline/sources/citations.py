"""The citations of any Polish text (a letter, a brief, a model's answer): every article and unit it cites,
with the act as the text names it.

"art. 154 § 1 pkt 2 k.p.", "art. 30 Kodeksu pracy", "art. 5 ust. 2 ustawy z dnia 6 listopada 2008 r. o
prawach pacjenta i Rzeczniku Praw Pacjenta", "art. 1 ustawy (Dz. U. z 2024 r. poz. 581)", "art. 22
DU/2025/277", ranges and lists ("art. 8–10 k.p.": three), and a unit cited after its act was named
earlier in the same sentence ("Ustawa o prawach pacjenta … w art. 9 ust. 2 …"). Read with the reference
grammar of statutes (pipeline.sources.references); an "art. …" whose act the text does not name is not a
citation of this kind (a statute's own articles are).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.sources.references import Cited, acts_named_in, cited_in

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


def _sentence_start(text: str, at: int) -> int:
    starts = [m.end() for m in _SENTENCE_END.finditer(text, 0, at)]
    return starts[-1] if starts else 0


def find(text: str) -> list[Citation]:
    """Every citation of ``text``, in order, ranges and lists expanded, each unit once per place."""
    named = acts_named_in(text)
    found: list[Citation] = []
    for c in cited_in(text):
        context = None
        if not c.named:
            # The act named last before it, in the same sentence.
            begin = _sentence_start(text, c.start)
            context = next((a for at, a in reversed(named) if begin <= at < c.start), None)
            if context is None:
                continue
        act = context or c
        quote = " ".join(text[c.start:c.end].split())
        words = " ".join(text[act.start:act.end].split()) if context else " ".join(text[c.start:c.end].split())
        for article, unit in c.targets:
            found.append(Citation(quote, c.start, c.end, article, unit, _act_words(words, quote, context), act.act,
                                  act.name, act.year, act.title, from_context=context is not None))
    return found


def _act_words(words: str, quote: str, context: Cited | None) -> str:
    """The words naming the act: after the article list, or (from the sentence) the mention itself."""
    if context is not None:
        return words
    m = re.match(r"(?i)(?:art\.|artykuł\w*)\s*\S.*?(?=\s(?:k\.|kodeks|ustaw|\(|DU/|MP/|Dz)|$)", quote)
    return quote[m.end():].strip() if m else quote
