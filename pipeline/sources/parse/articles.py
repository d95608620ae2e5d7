"""Rules both parsers (PDF and HTML) apply to the articles they find."""
from __future__ import annotations

import re

from pipeline.core import units
from pipeline.core.numbering import label_end
from pipeline.sources.parse.model import Article

# "(uchylony)", and "(utracił moc)" for a provision that lost force: neither has text in force.
_REPEALED = re.compile(r"\((?:uchylony|uchylone|uchylona|utracił moc|utraciły moc|utraciła moc)\)\.?")


def is_repealed(content: str) -> bool:
    """An article whose whole text after its label is a repeal marker such as "(uchylony)", or nothing:
    a consolidated text prints a bare label (its footnote, which the parsers drop, says why) for
    articles that no longer hold a provision, e.g. Kodeks pracy's "Art. 266–280." that, by a 1985 act,
    "dział dwunasty nie obejmuje". Either way the article has no text in force."""
    rest = content.strip()
    return not rest or bool(_REPEALED.fullmatch(rest))


# Between the two wordings of an article that a consolidated text prints in a row. The first is the
# one in force on the text's date, the second the one an amendment brings in later: the footnotes say
# so ("W tym brzmieniu obowiązuje do wejścia w życie zmiany, o której mowa w odnośniku N" on the first,
# "W brzmieniu ustalonym przez …" on the second), and were checked on the mirror's cases (Kodeks pracy
# art. 184 and 186^4, DU/2026/156 art. 96, DU/2024/1513 art. 10). The parsers drop footnotes, so
# without this line a reader (or a model) would take both wordings for one provision.
TWO_WORDINGS = ("[Tekst jednolity podaje dwa brzmienia tego artykułu: powyższe obowiązuje do wejścia w życie "
                "zmiany, poniższe – od jej wejścia w życie.]")


# The same within an article: a paragraph (§) printed twice in a row, e.g. Kodeks pracy art. 177 § 1,
# § 1^1 and § 4 (the second wording adds "uzupełniający urlop macierzyński", from an amendment in
# force later). Only "§" labels: a numbered ustęp ("1.") cannot be told from other numbered lines.
TWO_PARAGRAPH_WORDINGS = ("[Tekst jednolity podaje dwa brzmienia tego paragrafu: powyższe obowiązuje do wejścia "
                          "w życie zmiany, poniższe – od jej wejścia w życie.]")


def _mark_paragraph_wordings(art: Article, warnings: list[str]) -> None:
    lines = art.text.split("\n")
    out: list[str] = []
    previous = None
    for line in lines:
        found = units.label(line, label_end(line))
        if found is not None and found.kind == units.PARAGRAPH:
            if found.number == previous:
                out.append(TWO_PARAGRAPH_WORDINGS)
                warnings.append(f"art. {art.number} § {previous}: two wordings (now, and after an amendment) "
                                "kept, marked")
            previous = found.number
        out.append(line)
    art.text = "\n".join(out)


def merge_versions(articles: list[Article], warnings: list[str]) -> list[Article]:
    """Consolidated texts print two wordings of an article in a row (in force now / from a later
    date, told apart only by footnotes): keep one article holding both, marked (``TWO_WORDINGS``).
    Two wordings of a paragraph in a row are marked alike (``TWO_PARAGRAPH_WORDINGS``)."""
    for art in articles:
        _mark_paragraph_wordings(art, warnings)
    merged: list[Article] = []
    for art in articles:
        if merged and merged[-1].number == art.number:
            prev = merged[-1]
            prev.text = prev.text + "\n" + TWO_WORDINGS + "\n" + art.text
            prev.repealed = prev.repealed and art.repealed
            warnings.append(f"art. {art.number}: two wordings (now, and after an amendment) kept in one article, "
                            "marked")
        else:
            merged.append(art)
    seen: set[str] = set()
    for art in merged:
        if art.number in seen:
            warnings.append(f"art. {art.number} appears more than once")
        seen.add(art.number)
    return merged
