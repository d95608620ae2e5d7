"""Rules both parsers (PDF and HTML) apply to the articles they find."""
from __future__ import annotations

import re
from dataclasses import replace

from pipeline.core import units
from pipeline.core.numbering import label_end
from pipeline.sources.parse.model import Article, Footnote

# "(uchylony)", and "(utracił moc)" for a provision that lost force: neither has text in force.
_REPEALED = re.compile(r"\((?:uchylony|uchylone|uchylona|utracił moc|utraciły moc|utraciła moc)\)\.?")


def is_repealed(content: str) -> bool:
    """An article whose whole text after its label is a repeal marker such as "(uchylony)", or nothing:
    a consolidated text prints a bare label (its footnote, which the parsers drop, says why) for
    articles that no longer hold a provision, e.g. Kodeks pracy's "Art. 266–280." that, by a 1985 act,
    "dział dwunasty nie obejmuje". Either way the article has no text in force."""
    rest = content.strip()
    return not rest or bool(_REPEALED.fullmatch(rest))


# Between the two wordings of an article that a consolidated text printed in a row, once kept in one
# article (before the wordings were split): stored texts of then still hold it, and the searched text
# leaves it out (pipeline.sources.chunk.searched_text).
TWO_WORDINGS = ("[Tekst jednolity podaje dwa brzmienia tego artykułu: powyższe obowiązuje do wejścia w życie "
                "zmiany, poniższe – od jej wejścia w życie.]")
TWO_PARAGRAPH_WORDINGS = ("[Tekst jednolity podaje dwa brzmienia tego paragrafu: powyższe obowiązuje do wejścia "
                          "w życie zmiany, poniższe – od jej wejścia w życie.]")


# A footnote on a wording in force until an amendment ("W tym brzmieniu obowiązuje do wejścia w życie
# zmiany, o której mowa w odnośniku 7", "Obowiązuje do wejścia w życie zmiany …"): the unit printed next
# with the same label, marked with footnote 7, is its wording after the amendment.
_UNTIL_CHANGE = re.compile(r"obowiązuje\s+do\s+(?:dnia\s+)?wejścia\s+w\s+życie\s+zmian\w*,?\s+o\s+której\s+mowa\s+"
                           r"w\s+odnośniku\s+(\d+)", re.IGNORECASE)


def _blocks(art: Article) -> list[tuple[int, int, units.Label]]:
    """(first line, end line, label) of each unit of an article: a unit runs to the next line that
    opens a unit of its rank or a larger one."""
    lines = art.text.split("\n")
    # A line that opens with an article's label (a quoted article of an amendment) ends every unit.
    articles = {i for i, line in enumerate(lines) if i and label_end(line)}
    opened = [(i, found) for i, line in enumerate(lines)
              if (found := units.label(line, label_end(line))) is not None]
    blocks = []
    for k, (start, found) in enumerate(opened):
        rank = units.KINDS.index(found.kind)
        end = next((i for i, other in opened[k + 1:] if units.KINDS.index(other.kind) <= rank), len(lines))
        end = min([end] + [i for i in articles if start < i])
        blocks.append((start, end, found))
    return blocks


def _without(art: Article, spans: list[tuple[int, int]], wording: int) -> Article:
    """The article without the lines of ``spans`` (the other wordings of its units), its footnotes moved
    with the lines they stand on."""
    lines = art.text.split("\n")
    drop = {i for first, end in spans for i in range(first, end)}
    kept: list[str] = []
    new_line: dict[int, int] = {}
    for i, line in enumerate(lines):
        if i in drop:
            if i == 0:  # the first line held the article's label too
                kept.append(line[:label_end(line)].rstrip())
                new_line[i] = 0
            continue
        if i != 0 and 0 in drop and len(kept) == 1 and kept[0] == lines[0][:label_end(lines[0])].rstrip():
            kept[0] = f"{kept[0]} {line}"  # the label takes the next kept line, as printed
            new_line[i] = 0
            continue
        new_line[i] = len(kept)
        kept.append(line)
    notes = [replace(f, line=new_line[f.line]) for f in art.footnotes
             if f.line not in drop or (f.line == 0 and f.unit == "")]
    return replace(art, text="\n".join(kept), footnotes=notes, wording=wording)


def _unit_wordings(art: Article, warnings: list[str]) -> list[Article]:
    """An article one of whose units is printed twice in a row: the wording in force, and the one an
    amendment brings (Kodeks pracy art. 177 § 1; DU/2024/1513 art. 2 pkt 3). Two units are two wordings
    of one where the first's footnote says it holds until the change of the second's footnote, or (a
    text whose footnotes are not read) where a paragraph's "§" label is printed twice in a row (a
    numbered ustęp "1." cannot be told from other numbered lines). Two articles, each with one wording."""
    blocks = _blocks(art)
    notes_on: dict[int | None, list[Footnote]] = {}
    for f in art.footnotes:
        notes_on.setdefault(f.line, []).append(f)
    starting = {start: (start, end, found) for start, end, found in blocks}
    pairs: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for f_start, f_end, first in blocks:
        if f_end not in starting:
            continue
        s_start, s_end, second = starting[f_end]
        if (first.kind, first.number) != (second.kind, second.number):
            continue
        later = {int(m.group(1)) for f in notes_on.get(f_start, []) if (m := _UNTIL_CHANGE.search(f.text))}
        dated = bool(later & {f.number for f in notes_on.get(s_start, [])})
        if dated or (first.kind == units.PARAGRAPH and not later):
            pairs.append(((f_start, f_end), (s_start, s_end)))
    if not pairs:
        return [art]
    for (f_start, _), _ in pairs:
        warnings.append(f"art. {art.number} {blocks[[b[0] for b in blocks].index(f_start)][2].cited}: two wordings "
                        "(now, and after an amendment): kept as two wordings of the article")
    return [_without(art, [new for _, new in pairs], 1), _without(art, [old for old, _ in pairs], 2)]


def split_wordings(articles: list[Article], warnings: list[str]) -> list[Article]:
    """Consolidated texts print two wordings of an article, or of one of its paragraphs, in a row: the one
    in force and the one an amendment brings in later, told apart by their footnotes ("W tym brzmieniu
    obowiązuje do wejścia w życie zmiany, o której mowa w odnośniku N" / "W brzmieniu ustalonym przez …").
    Each wording becomes an article of its own, numbered alike: ``wording`` 1 the first printed, 2 the
    second (pipeline.sources.footnotes dates them)."""
    out: list[Article] = []
    for art in articles:
        if out and out[-1].number == art.number and out[-1].wording in (0, 1) and art.wording == 0:
            out[-1].wording = 1
            art.wording = 2
            warnings.append(f"art. {art.number}: two wordings (now, and after an amendment): kept as two wordings")
            out.append(art)
            continue
        out.extend(_unit_wordings(art, warnings) if art.wording == 0 else [art])
    seen: set[tuple[str, int]] = set()
    for art in out:
        if (art.number, art.wording) in seen:
            warnings.append(f"art. {art.number} appears more than once")
        seen.add((art.number, art.wording))
    return out
