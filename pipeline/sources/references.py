"""The provisions an article refers to, read from its text: "art. 30 § 1 pkt 2", "art. 135–138, 143 i
144", "o którym mowa w § 2", "art. 83 ustawy z dnia 14 czerwca 1960 r. – Kodeks postępowania
administracyjnego", "(Dz. U. z 2023 r. poz. 991)".

Each reference names one target: an article (with the unit cited in it, "§ 1 pkt 2"), or a whole act.
Ranges and lists are expanded, so "art. 135–138" is four references. The kinds:
- internal: an article of the same act;
- relative: a unit of the same article ("§ 2", "ust. 3");
- external: another act, named by a code's name ("Kodeksu pracy"), by its date and title (then by the
  "Dz. U. … poz. …" the text cites with it, here or where the act first named it), or by "Dz. U." alone.
The target of an external reference is ``target_act``: the base act when the text says it (a code),
else the ELI id of the text it cites (a consolidated text, whose base act the database knows when that
text is stored: the SQL view resolves it); None when it cannot be told (an EU regulation, an act named
by title with no journal reference anywhere in the article's act).
"""
from __future__ import annotations

import bisect
import datetime as dt
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from pipeline.core.act_id import parse_act_id
from pipeline.core.errors import InvalidActId
from pipeline.core.codes import code_name_at, code_named
from pipeline.core.dates import parse_date
from pipeline.core.limits import MAX_UNIT_RANGE
from pipeline.core.numbering import SUPERSCRIPT_DIGITS, SUPERSCRIPTS, expand_range, is_canonical, range_size
from pipeline.core.units import CITED, CITED_WORD, LETTERS, PARAGRAPH, SECTION
from pipeline.sources.parse.model import Article

EXTRACTOR = "references 3"  # bump when the rules change: stored texts are read again (pipeline db upgrade)


@dataclass(frozen=True)
class Reference:
    article: str  # where the reference is (canonical number)
    kind: str  # internal | relative | external
    target_act: str | None  # internal/relative: the act's base act; external: see the module's docstring
    target_article: str | None  # None: the whole act is cited
    target_unit: str  # "§ 1 pkt 2", "ust. 3", "" (the whole article)
    text: str  # the words as printed
    target_title: str | None = None  # external by title: "ustawy z dnia 15 kwietnia 2011 r. o działalności leczniczej"
    target_name: str | None = None  # its name without the date: "o działalności leczniczej", "Kodeks pracy"
    target_year: int | None = None  # the year of its date: with the name, finds a stored text of it


_SUP = f"[{SUPERSCRIPTS}]"
# A number as a statute prints it: "151", "151^1" (the parsers' caret; PDFs may glue the next word to
# it: "155^1i"), "151¹", "19a", "3a^1", "22^1c".
_NUM = rf"\d+[a-z]{{0,3}}(?:\s?\^\s?\d+|{_SUP}+)?[a-z]{{0,3}}"
_UNIT_WORD = CITED_WORD  # "§", "ust.", "pkt", "lit." (pipeline.core.units)
_LETTER = rf"{LETTERS}(?![\w])"  # a letter cited: "lit. a"
_TOP_WORD = "(?:" + "|".join(re.escape(CITED[kind]) for kind in (PARAGRAPH, SECTION)) + ")"  # "§", "ust."
# One element of a list: a number, optionally followed by units ("§ 1 pkt 2 lit. a").
_ITEM = rf"(?:{_UNIT_WORD}\s*)?{_NUM}(?:\s*{_UNIT_WORD}\s*(?:{_NUM}|{_LETTER}))*"
# A range is written without spaces ("135–138"); " – " with spaces is a dash in the sentence.
_SEP = r"(?:\s*,\s*|[–-](?=\d)|\s+(?:i|oraz|lub|albo|a\s+także)\s+)"
# "art. 30 § 1 pkt 2 i 3, art. 31", "art. 135–138, 143 i 144"
_ARTICLES = re.compile(
    rf"\b(?:art\.|artykuł\w*)\s*(?P<list>{_NUM}(?:\s*{_UNIT_WORD}\s*(?:{_NUM}|{_LETTER}))*"
    rf"(?:{_SEP}(?:art\.\s*)?{_ITEM})*)",
    re.IGNORECASE,
)
# A unit of the same article cited alone: "w § 2", "o którym mowa w ust. 1 pkt 3", "§ 1 i 2".
_RELATIVE = re.compile(
    rf"(?P<list>{_TOP_WORD}\s*{_NUM}(?:\s*{_UNIT_WORD}\s*(?:{_NUM}|{_LETTER}))*"
    rf"(?:{_SEP}(?:{_TOP_WORD}\s*)?{_NUM}(?![\w)]))*)"
)
_MONTH = r"(?:stycznia|lutego|marca|kwietnia|maja|czerwca|lipca|sierpnia|września|października|listopada|grudnia)"
# An act's title after its date: "– Kodeks pracy", "o prawach pacjenta …", up to a journal reference, a bracket (the
# act cited inside one: "(art. 4 ustawy z dnia … o prawach pacjenta)"), a clause's or a sentence's end, a dash.
_TITLE = (r"(?P<title>\s*(?:[–—-]\s*[^()\n;,]{3,160}?|o\s+[^()\n;]{3,200}?))"
          r"(?=\s*\(\s*(?:Dz|M\.\s*P)|\s*[();,:]|\.\s|\.$|\n|$|\s[–—-]\s)")
# After the list: whose articles they are.
_BY_TITLE = re.compile(
    rf"^\s*(?:tej\s+|tejże\s+)?(?P<kind>ustawy|ustawą|ustawie|dekretu|rozporządzenia)\s+z\s+dnia\s+\d{{1,2}}\s+{_MONTH}\s+\d{{4}}\s*r\.?"
    + _TITLE,
    re.IGNORECASE,
)
_CODE_NAME = re.compile(r"^\s*(?P<code>(?:Kodeksu|kodeksu|Kodeks|kodeks)\s+(?:postępowania\s+)?\w+(?:\s+\w+)?)")
_THIS_ACT = re.compile(r"^\s*(?:niniejszej|tej|tejże)\s+ustawy\b", re.IGNORECASE)
_OTHER = re.compile(
    r"^\s*(?:rozporządzenia|dyrektywy|Traktatu|traktatu|Konstytucji|umowy|konwencji|Konwencji|decyzji|ustawy\s+o\s|"
    r"ustawy\s+[–—-]\s|ustawy\s+z\s+dnia|dekretu|Karty|karty|aktu)")
# "(Dz. U. z 2023 r. poz. 991, 1675 i 1972)", "(Dz. U. Nr 112, poz. 654)": the first position is the text cited.
_JOURNAL = re.compile(
    r"\(\s*(?P<journal>(?:Dz\.\s*U\.|M\.\s*P\.)\s*(?:z\s+)?(?P<year>\d{4})?\s*(?:r\.)?\s*(?:Nr\s*\d+\s*,?\s*)?poz\.\s*(?P<pos>\d+))",
)
_JOURNAL_ANYWHERE = re.compile(
    r"(?P<journal>(?:Dz\.\s*U\.|M\.\s*P\.)\s*(?:z\s+)?(?P<year>\d{4})\s*(?:r\.)?\s*(?:Nr\s*\d+\s*,?\s*)?poz\.\s*(?P<pos>\d+))")
# An act named by date and title without articles: "przepisy ustawy z dnia 26 czerwca 1974 r. – Kodeks pracy".
_ACT_BY_TITLE = re.compile(
    rf"\b(?P<kind>ustawy|ustawą|ustawie|ustawa)\s+z\s+dnia\s+(?P<date>\d{{1,2}}\s+{_MONTH}\s+\d{{4}})\s*r\.?"
    + _TITLE,
    re.IGNORECASE,
)


def _canonical(number: str) -> str:
    s = re.sub(r"\s+", "", number).lower()
    return re.sub(f"{_SUP}+", lambda m: "^" + m.group(0).translate(SUPERSCRIPT_DIGITS), s)


def _split_items(text: str) -> list[tuple[str, str]]:
    """The list after "art." as (separator before, item) pairs; the separator is "" for the first."""
    parts: list[tuple[str, str]] = []
    pos = 0
    sep = ""
    item_re = re.compile(rf"(?:art\.\s*)?(?P<item>{_ITEM})", re.IGNORECASE)
    sep_re = re.compile(_SEP, re.IGNORECASE)
    while pos < len(text):
        m = item_re.match(text, pos)
        if not m:
            break
        # "art." repeated before an item starts a new article: "art. 24 ust. 1, 2 i 4, art. 25–36"
        parts.append(((sep + " art.").strip() if m.group(0)[:4].lower() == "art." and parts else sep, m.group("item")))
        pos = m.end()
        s = sep_re.match(text, pos)
        if not s:
            break
        sep = s.group(0).strip()
        pos = s.end()
    return parts


def _units(item: str) -> tuple[str | None, list[tuple[str, str]]]:
    """"30 § 1 pkt 2" -> ("30", [("§", "1"), ("pkt", "2")]); "2" -> ("2", []); "§ 2" -> (None, [("§", "2")])."""
    m = re.match(rf"\s*(?P<num>{_NUM})?", item)
    number = m.group("num") if m and m.group("num") else None
    rest = item[m.end():] if m and number else item
    units = [(u.group(1), u.group(2)) for u in re.finditer(rf"({_UNIT_WORD})\s*({_NUM}|{LETTERS})", rest)]
    return (_canonical(number) if number else None), units


def _unit_text(units: list[tuple[str, str]]) -> str:
    return " ".join(f"{w} {_canonical(n) if n[0].isdigit() else n}" for w, n in units)


def _unit_range(first: str, last: str) -> list[str]:
    """The unit numbers after ``first`` up to ``last``: "1", "3" -> 2, 3; "3", "3^3" -> 3^1, 3^2, 3^3; past
    MAX_UNIT_RANGE (told before any is listed), ``last`` alone."""
    if first.isdigit() and last.isdigit() and int(first) < int(last) <= int(first) + MAX_UNIT_RANGE:
        return [str(n) for n in range(int(first) + 1, int(last) + 1)]
    if ((m := re.fullmatch(r"(\d+)([a-z])", last)) and first.isdigit()
            and int(first) <= int(m.group(1)) <= int(first) + MAX_UNIT_RANGE):
        # "pkt 2–5d": the points up to 5 and the ones inserted after it, 5a … 5d
        numbers = [str(n) for n in range(int(first) + 1, int(m.group(1)) + 1)]
        return numbers + [m.group(1) + chr(c) for c in range(ord("a"), ord(m.group(2)) + 1)]
    if m := re.fullmatch(r"(\d+)\^(\d+)", last):
        base, top = m.groups()
        start = 1 if first == base else int(f.group(1)) + 1 if (f := re.fullmatch(rf"{base}\^(\d+)", first)) else None
        if start is not None and start <= int(top) <= start + MAX_UNIT_RANGE:
            return [f"{base}^{n}" for n in range(start, int(top) + 1)]
    return [last]


def _article_range(first: str, last: str, known: list[str] | None) -> list[str]:
    """The articles from ``first`` to ``last``: those of the act in between when it is the act's own
    (inserted ones included: "art. 190–205" holds 191^1), else by number."""
    if not (is_canonical(first) and is_canonical(last)):
        return []
    if known and first in known and last in known and known.index(first) < known.index(last):
        return known[known.index(first):known.index(last) + 1]
    return expand_range(first, last)


def _expand(parts: list[tuple[str, str]], known: list[str] | None = None, *,
            relative: bool = False) -> list[tuple[str | None, str]]:
    """(article, unit) for each target of a list. A bare number after an item with units continues the
    deepest unit ("art. 154 § 1 i 2" cites § 1 and § 2 of art. 154); a range expands ("135–138",
    "§ 4 pkt 1–3"). ``relative``: the list is of units of the article itself ("§ 1 i 2")."""
    return [(article, _unit_text(units)) for article, units, _ in _targets(parts, known, relative=relative)]


def _targets(parts: list[tuple[str, str]], known: list[str] | None = None, *, relative: bool = False,
             whole_ranges: bool = False) -> Iterator[tuple[str | None, list[tuple[str, str]], str | None]]:
    """:func:`_expand`'s targets one at a time, their units not yet written (a target past a caller's limit
    is only counted), each with None; ``whole_ranges``: an article range is not expanded but given as its
    last article with its first ("art. 1–20000": 1, None; 20000, "1"), for a reader who knows the act's own
    articles (pipeline.storage.citations)."""
    article: str | None = None
    units: list[tuple[str, str]] = []
    for sep, item in parts:
        number, item_units = _units(item)
        is_range = sep in ("–", "-")
        if sep.endswith("art."):  # a new article, whatever units came before
            units = [] if not relative else units
        if number is not None and not item_units and (units or relative):
            # a bare number continues the deepest unit: "§ 1 i 2", "pkt 1–3"
            if not units:
                break
            kind, last = units[-1]
            for value in (_unit_range(last, number) if is_range else [number]):
                units = units[:-1] + [(kind, value)]
                yield article, units, None
            continue
        if number is not None:
            if is_range and article is not None and not units and not item_units:
                if whole_ranges:
                    yield number, [], article
                else:
                    yield from ((a, [], None) for a in (_article_range(article, number, known)[1:] or [number]))
                article = number
                continue
            article, units = number, item_units
            yield article, units, None
            continue
        if not item_units:
            break
        # units only: "§ 2" after an article continues it ("art. 36 § 1 i § 2")
        depth = next((i for i, (w, _) in enumerate(units) if w == item_units[0][0]), len(units))
        if is_range and depth < len(units) and len(item_units) == 1:
            kind, last = units[depth]
            for value in _unit_range(last, item_units[0][1]):
                units = units[:depth] + [(kind, value)]
                yield article, units, None
            continue
        units = units[:depth] + item_units
        yield article, units, None


def _journal_act(m: re.Match) -> str | None:
    year, pos = m.group("year"), m.group("pos")
    if not year:
        return None
    try:
        return str(parse_act_id(f"{'MP' if m.group('journal').startswith('M') else 'DU'}/{year}/{pos}"))
    except InvalidActId:
        return None


def _name_of(title_group: str) -> str:
    """"– Kodeks pracy" / "o działalności leczniczej" as the act's name."""
    return re.sub(r"\s+", " ", re.sub(r"^\s*[–—-]\s*", "", title_group)).strip()


def _act_key(year: int, name: str) -> str:
    return f"{year} {name.lower()}"


def extract(articles: Iterable[Article], base_act: str) -> list[Reference]:
    """The references of every article of one text of an act whose base act is ``base_act``."""
    articles = list(articles)
    known = [a.number for a in articles]  # in the act's order: a range spans what lies between
    # Acts the text names by date and title with a journal reference (usually at their first mention):
    # a later mention of the same act, without it, refers to the same text.
    cited_by_name: dict[str, str] = {}
    for a in articles:
        for m in _ACT_BY_TITLE.finditer(a.text):
            j = _JOURNAL.match(a.text, m.end()) or _JOURNAL.match(a.text, m.end() + 1)
            key = _act_key(int(m.group("date")[-4:]), _name_of(m.group("title")))
            if j and key not in cited_by_name and (cited := _journal_act(j)):
                cited_by_name[key] = cited
    found: list[Reference] = []
    for a in articles:
        found.extend(_article_references(a, base_act, known, cited_by_name))
    return found


def _cited(cited_by_name: dict[str, str], year: int, name: str) -> str | None:
    """The text an earlier mention of the act cited: the same year and a name that begins the same way
    (a later mention may run on: "o działalności leczniczej w zakresie …")."""
    key = _act_key(year, name)
    return next((act for known, act in cited_by_name.items() if key.startswith(known) or known.startswith(key)), None)


def _unglue(text: str, known: set[str]) -> str:
    """"art. 155^1i 155^2" -> "art. 155^1 i 155^2", "art. 22^1gstosuje" -> "art. 22^1g stosuje": a PDF's
    text layer glues the word after a superscript to it; split after the longest number the act has,
    where the act has no number with all the letters."""
    def split(m: re.Match) -> str:
        head, letters = m.group(1), m.group(2)
        for n in range(min(3, len(letters)), -1, -1):
            if head + letters[:n] in known:
                return m.group(0) if n == len(letters) else f"{head}{letters[:n]} {letters[n:]}"
        return m.group(0)
    return re.sub(r"(\d+[a-z]{0,3}\^\d+)([a-ząćęłńóśźż]+)(?=[\s,.;:)])", split, text)


def _whose(text: str, at: int, base_act: str, cited_by_name: dict[str, str]) -> tuple[dict, int]:
    """Whose articles a list ending at ``at`` cites, from the words after it: the fields of the
    references and where the act's name ends."""
    after = text[at:at + 400]
    if (c := _CODE_NAME.match(after)) and (code := code_named(c.group("code"), abbreviations=False)):
        return {"kind": "external", "target_act": code, "target_name": c.group("code")}, at + c.end()
    if t := _BY_TITLE.match(after):
        title = re.sub(r"\s+", " ", after[t.start("kind"):t.end()]).strip()
        name = _name_of(t.group("title"))
        dated = re.search(r"(\d{4})\s*r", title)
        assert dated is not None  # _BY_TITLE matched "z dnia … 2020 r."
        year = int(dated.group(1))
        j = _JOURNAL.match(after, t.end()) or _JOURNAL.match(after, t.end() + 1)
        target = code_named(name, abbreviations=False) or (_journal_act(j) if j else None) \
            or _cited(cited_by_name, year, name)
        return ({"kind": "external", "target_act": target, "target_title": title, "target_name": name,
                 "target_year": year}, at + t.end())
    if (j := _JOURNAL.match(after)) or (j := re.match(r"^\s*" + _JOURNAL_ANYWHERE.pattern, after)):
        return {"kind": "external", "target_act": _journal_act(j)}, at + j.end()
    if _OTHER.match(after) and not _THIS_ACT.match(after):
        return {"kind": "external", "target_act": None}, at
    return {"kind": "internal", "target_act": base_act}, at


def _article_references(a: Article, base_act: str, known_order: list[str],
                        cited_by_name: dict[str, str]) -> list[Reference]:
    known = set(known_order)
    text = _unglue(a.text, known)
    out: list[Reference] = []
    taken: list[tuple[int, int]] = []
    # The label "Art. 5." is the article's own, not a reference.
    if label := re.match(rf"\s*Art\.\s*{_NUM}\.?", text):
        taken.append((0, label.end()))
    for m in _ARTICLES.finditer(text):
        if any(s <= m.start() < e for s, e in taken):
            continue
        fields, end = _whose(text, m.end(), base_act, cited_by_name)
        words = re.sub(r"\s+", " ", text[m.start():end]).strip()
        order = known_order if fields["kind"] == "internal" else None
        for article, unit in _expand(_split_items(m.group("list")), order):
            if article is not None:
                out.append(Reference(a.number, target_article=article, target_unit=unit, text=words, **fields))
        taken.append((m.start(), end))
    # Acts named by title without articles ("przepisy ustawy z dnia …").
    for m in _ACT_BY_TITLE.finditer(text):
        if any(s <= m.start() < e for s, e in taken):
            continue
        title = re.sub(r"\s+", " ", m.group(0)).strip()
        name, year = _name_of(m.group("title")), int(m.group("date")[-4:])
        j = _JOURNAL.match(text, m.end()) or _JOURNAL.match(text, m.end() + 1)
        target = code_named(name, abbreviations=False) or (_journal_act(j) if j else None) \
            or _cited(cited_by_name, year, name)
        out.append(Reference(a.number, "external", target, None, "", title, title, name, year))
        taken.append((m.start(), j.end() if j else m.end()))
    # A code named without articles: "przepisy Kodeksu pracy".
    for m in re.finditer(r"\b(?:przepis\w*|w rozumieniu|zgodnie z)\s+(?P<code>Kodeks\w*\s+(?:postępowania\s+)?\w+(?:\s+\w+)?)", text):
        if any(s <= m.start("code") < e for s, e in taken):
            continue
        if code := code_named(m.group("code"), abbreviations=False):
            out.append(Reference(a.number, "external", code, None, "", m.group("code"), None, m.group("code")))
            taken.append((m.start("code"), m.end("code")))
    # A journal reference alone: "(Dz. U. z 2024 r. poz. 572)" after a name the patterns above missed.
    for m in _JOURNAL_ANYWHERE.finditer(text):
        if any(s <= m.start() <= e + 3 for s, e in taken):
            continue
        if (cited := _journal_act(m)) is not None:
            out.append(Reference(a.number, "external", cited, None, "", re.sub(r"\s+", " ", m.group(0))))
        taken.append((m.start(), m.end()))
    # Units of the same article: "w § 2", "o którym mowa w ust. 1 pkt 3".
    for m in _RELATIVE.finditer(text):
        if any(s <= m.start() < e for s, e in taken):
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        before = text[line_start:m.start()]
        if not before.strip() or re.fullmatch(rf"\s*Art\.\s*{_NUM}\.\s*", before):
            continue  # a unit's own label ("§ 2. …" at a line's start)
        for _, unit in _expand(_split_items(m.group("list")), None, relative=True):
            out.append(Reference(a.number, "relative", base_act, a.number, unit,
                                 re.sub(r"\s+", " ", m.group(0)).strip()))
    # The act naming itself ("przepisy Kodeksu pracy" in the Labour Code): its articles are internal,
    # the act itself is no reference.
    out = [r if r.kind != "external" or r.target_act != base_act else
           Reference(r.article, "internal", base_act, r.target_article, r.target_unit, r.text)
           for r in out if not (r.kind == "external" and r.target_act == base_act and r.target_article is None)]
    return _dedupe(out)


def _dedupe(refs: list[Reference]) -> list[Reference]:
    seen: set[tuple] = set()
    out = []
    for r in refs:
        key = (r.kind, r.target_act, r.target_article, r.target_unit)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


# --- for other readers of a statute's references (pipeline.sources.provisions, .footnotes) ------------

def cited_units(text: str, known: list[str] | None = None) -> list[tuple[str | None, str]]:
    """(article, unit) for every article and unit the "art. …" lists of ``text`` name, in order: "art. 8–18
    oraz art. 125 ust. 4" -> (8, "") … (18, ""), (125, "ust. 4"). ``known``: the act's articles in order, for
    ranges over inserted ones."""
    found: list[tuple[str | None, str]] = []
    for m in _ARTICLES.finditer(text):
        for target in _expand(_split_items(m.group("list")), known):
            if target[0] is not None and target not in found:
                found.append(target)
    return found


def act_name_of(title: str) -> tuple[str | None, dt.date | None]:
    """"ustawie z dnia 10 maja 2018 r. o ochronie danych osobowych" -> ("o ochronie danych osobowych",
    2018-05-10): an act's name and date as a citation prints them (None where it prints none)."""
    m = _ACT_BY_TITLE.search(title)
    if not m:
        return None, None
    return _name_of(m.group("title")), parse_date(m.group("date"))


def cited_act(text: str) -> tuple[str | None, str | None]:
    """The act ``text`` names first by its date and title ("ustawy z dnia 12 lipca 2024 r. - Przepisy
    wprowadzające … (Dz. U. poz. 1222)") or by a journal reference alone: its ELI id where the journal
    reference (or a code's name) tells it, and its title as printed."""
    m = _ACT_BY_TITLE.search(text)
    if m:
        # The title may run on past where the pattern stops (" - Prawo komunikacji elektronicznej"): the
        # journal reference is the first one before the sentence ends.
        stop = re.search(r"[;\n]|\bustaw\w*\s+z\s+dnia", text[m.end():m.end() + 300])
        end = m.end() + (stop.start() if stop else min(300, len(text) - m.end()))
        j = _JOURNAL.search(text, m.end(), end)
        title = re.sub(r"\s+", " ", text[m.start():j.start() if j else m.end()]).strip()
        year = m.group("date")[-4:]
        if j and not j.group("year"):  # "(Dz. U. poz. 1222)": the journal of the act's own year
            act: str | None = str(parse_act_id(f"{'MP' if j.group('journal').startswith('M') else 'DU'}/{year}/{j.group('pos')}"))
        else:
            act = _journal_act(j) if j else None
        return act or code_named(_name_of(m.group("title")), abbreviations=False), title
    if j := _JOURNAL_ANYWHERE.search(text):
        return _journal_act(j), None
    return None, None


@dataclass(frozen=True)
class Cited:
    """One "art. …" list of a text and the act the words after it name (pipeline.sources.citations)."""

    start: int
    end: int  # where the act's name ends (the list's end when no act is named)
    targets: list[tuple[str, str]]  # (article, unit), ranges and lists expanded
    named: bool  # the words after the list name an act (a code, a title, a journal position, an ELI id)
    act: str | None = None  # its ELI id where the words tell it (a code's base act, a Dz. U. position)
    title: str | None = None  # by title: "ustawy z dnia 6 listopada 2008 r. o prawach pacjenta …"
    name: str | None = None  # its name: "o prawach pacjenta …", "Kodeks pracy"
    year: int | None = None  # the year of its date
    foreign: str | None = None  # an act outside the Dziennik Ustaw, as Polish writing names it ("RODO")
    anaphoric: bool = False  # "tej ustawy", "powołanej ustawy": the act named last before it
    list_end: int = -1  # where the "art. …" list ends and the act's words begin (-1: no list)
    # cited_in(whole_ranges=True): the targets that end an article range, by index, with the range's first article
    ranges: dict[int, str] = field(default_factory=dict)
    more: int = 0  # targets past cited_in's limit: counted (a range by its numbers, counted()), not listed


# After a list, in a text other than a statute (a letter, an answer): a code's abbreviation ("k.p.", "kp"),
# an act named without its date ("ustawy o prawach pacjenta"), an ELI id.
_ABBREVIATION = re.compile(r"^\s*(?P<abbr>k\.(?:\s?[a-ząćęłńóśźż]\.){1,3}|k[a-ząćęłńóśźż]{1,3}(?!\w))",
                           re.IGNORECASE)  # "k.p.", "k. p. c.", "kpc", "KP"
# An act's name written without its date ends where the sentence goes on to cite it or says something else.
_NAME_END = r"(?=\s+(?:w\s+|z\s+|na\s+)?(?:art\.|artykuł|§|stanowi|przewiduje|określa|mówi)|[,;:.()]|\n|$)"
_BY_NAME = re.compile(r"^\s*(?:tej\s+)?(?:ustawy|ustawą|ustawie|ustawa)\s+(?P<name>o\s+[^()\n;,.:]{3,160}?)"
                      r"(?=\s+(?:w\s+|z\s+|na\s+)?(?:art\.|artykuł|§|stanowi|przewiduje|określa|mówi)|[,;:.()]|\n|$)",
                      re.IGNORECASE)
# "ustawy – Prawo przedsiębiorców": an act named by the title after its kind's dash, without its date.
_BY_DASH_NAME = re.compile(rf"^\s*(?:tej\s+)?(?:ustawy|ustawą|ustawie|ustawa)\s+[–—-]\s*(?P<name>[A-ZĄĆĘŁŃÓŚŹŻ][^()\n;,.:]{{2,160}}?)"
                           rf"{_NAME_END}")
# A title named by its head noun in the genitive, as after "art. 5": "Prawa bankowego", "Prawa komunikacji
# elektronicznej", "Ordynacji podatkowej", "Kodeksu rodzinnego" (a code the table does not know).
_HEADS = {"Prawa": "Prawo", "Ordynacji": "Ordynacja", "Kodeksu": "Kodeks", "Przepisów": "Przepisy"}
_BY_HEAD = re.compile(rf"^\s*(?P<head>{'|'.join(_HEADS)})\s+(?P<rest>[a-ząćęłńóśźż][^()\n;,.:]{{2,120}}?){_NAME_END}")
# The Constitution (Dz. U. 1997 nr 78 poz. 483), and acts of the European Union by the names Polish writing
# gives them: not acts of the Dziennik Ustaw, so never stored here.
_CONSTITUTION = re.compile(r"^\s*Konstytucji(?:\s+(?:RP|Rzeczypospolitej\s+Polskiej))?\b")
CONSTITUTION = "DU/1997/483"
_FOREIGN = {"RODO": "Regulation (EU) 2016/679 (GDPR)", "TFUE": "the Treaty on the Functioning of the European Union",
            "TUE": "the Treaty on European Union", "KPP": "the Charter of Fundamental Rights of the European Union"}
_FOREIGN_NAME = re.compile(rf"^\s*(?P<abbr>{'|'.join(_FOREIGN)})\b")
# "tej ustawy", "powołanej ustawy", "tego kodeksu": the act the text named last.
_ANAPHORA = re.compile(r"^\s*(?:tej|tejże|niniejszej|powołanej|przywołanej|wymienionej|wskazanej|tego|tegoż|"
                       r"powołanego|wymienionego)\s+(?:ustawy|kodeksu|aktu|rozporządzenia)\b", re.IGNORECASE)
_ELI_ID = re.compile(r"^\s*\(?\s*(?P<eli>(?:DU|MP)/\d{4}/\d+)\b")
_WORD_JOURNAL = re.compile(r"^\s*(?:ustaw\w*|rozporządzeni\w*|akt\w*)\s*(?=\()", re.IGNORECASE)


def counted(article: str, first: str | None) -> int:
    """How many articles a target stands for, counted by number without listing them: one, or where it ends
    a whole range (``first``: the range's first article, listed apart) the numbers after ``first``."""
    return 1 if first is None else max(1, (range_size(first, article) or 2) - 1)


def cited_in(text: str, *, whole_ranges: bool = False, limit: int | None = None) -> list[Cited]:
    """Every "art. …" list of any Polish text (a letter, a brief, an answer) with the act the words after
    it name: a code by name or abbreviation ("k.p."), an act by date and title or by name alone, a Dz. U.
    position, an ELI id; ``named`` False where none follows (the caller may know the act otherwise).
    ``whole_ranges``: article ranges as :func:`_targets` gives them; ``limit``: at most this many targets
    listed in all, those past it counted (``Cited.more``), so that no text makes a list of millions."""
    found: list[Cited] = []
    previous_end = -1
    left = limit
    ranges: dict[int, str] = {}
    more = 0
    for m in _ARTICLES.finditer(text):
        if found and found[-1].list_end < 0:  # the list before: where its words end, its ranges, its count
            found[-1] = replace(found[-1], list_end=previous_end, ranges=ranges, more=more)
        previous_end = m.end()
        targets: list[tuple[str, str]] = []
        ranges, more = {}, 0
        for a, u, first in _targets(_split_items(m.group("list")), whole_ranges=whole_ranges):
            if a is None:
                continue
            if left is not None and left <= 0:
                more += counted(a, first)
                continue
            if first is not None:
                ranges[len(targets)] = first
            targets.append((a, _unit_text(u)))
            left = None if left is None else left - 1
        if not targets and not more:
            continue
        after = text[m.end():m.end() + 400]
        if (e := _ELI_ID.match(after)) is not None:
            found.append(Cited(m.start(), m.end() + e.end(), targets, True, str(parse_act_id(e.group("eli")))))
            continue
        if (abbr := _ABBREVIATION.match(after)) and (code := code_named(abbr.group("abbr"), abbreviations=True)):
            found.append(Cited(m.start(), m.end() + abbr.end(), targets, True, code, name=abbr.group("abbr").strip()))
            continue
        lead = len(after) - len(after.lstrip())
        if named_code := code_name_at(after[lead:]):  # "Kodeksu pracy", the name's own words only
            end = m.end() + lead + named_code[1]
            found.append(Cited(m.start(), end, targets, True, named_code[0], name=text[m.end() + lead:end]))
            continue
        if (w := _WORD_JOURNAL.match(after)) and (j := _JOURNAL.match(after, w.end())):  # "ustawy (Dz. U. …)"
            close = re.match(r"[^)\n]{0,40}\)", after[j.end():])  # "…, 1675 i 1972)": to the bracket's end
            found.append(Cited(m.start(), m.end() + j.end() + (close.end() if close else 0), targets, True,
                               _journal_act(j)))
            continue
        if n := _BY_NAME.match(after):  # "ustawy o prawach pacjenta": by name, no date
            name = " ".join(n.group("name").split())
            found.append(Cited(m.start(), m.end() + n.end(), targets, True, code_named(name, abbreviations=False),
                               name=name))
            continue
        if (n := _BY_DASH_NAME.match(after)) or (n := _BY_HEAD.match(after)):  # "ustawy – Prawo …", "Prawa …"
            name = " ".join((n.group("name") if "name" in n.groupdict() else
                             f"{_HEADS[n.group('head')]} {n.group('rest')}").split())
            found.append(Cited(m.start(), m.end() + n.end(), targets, True, code_named(name, abbreviations=False),
                               name=name))
            continue
        if c := _CONSTITUTION.match(after):
            found.append(Cited(m.start(), m.end() + c.end(), targets, True, CONSTITUTION, name="Konstytucja"))
            continue
        if f := _FOREIGN_NAME.match(after):
            found.append(Cited(m.start(), m.end() + f.end(), targets, True, None, name=f.group("abbr"),
                               foreign=_FOREIGN[f.group("abbr")]))
            continue
        if anaphora := _ANAPHORA.match(after):
            found.append(Cited(m.start(), m.end() + anaphora.end(), targets, False, anaphoric=True))
            continue
        fields, end = _whose(text, m.end(), "", {})
        if fields["kind"] == "external":
            found.append(Cited(m.start(), end, targets, True, fields.get("target_act"), fields.get("target_title"),
                               fields.get("target_name"), fields.get("target_year")))
            continue
        found.append(Cited(m.start(), m.end(), targets, False))
    if found and found[-1].list_end < 0:
        found[-1] = replace(found[-1], list_end=previous_end, ranges=ranges, more=more)
    return found


def acts_named_in(text: str) -> list[tuple[int, Cited]]:
    """The acts a text names without articles ("ustawą o prawach pacjenta", "Kodeksu pracy", "ustawy z dnia
    … o …", "k.p."), with where each mention starts: what a later "art. 9 ust. 2" in the sentence cites."""
    found: list[tuple[int, Cited]] = []
    for m in _ACT_BY_TITLE.finditer(text):
        # cited_act reads at most 300 characters past the title: a slice to there, not the rest of the text.
        act, title = cited_act(text[m.start():m.end() + 300])
        found.append((m.start(), Cited(m.start(), m.end(), [], True, act, title, _name_of(m.group("title")),
                                       int(m.group("date")[-4:]))))
    titles = [c for _, c in found]  # in order, none inside another: the one before a place is the one to ask
    starts = [c.start for c in titles]
    for m in re.finditer(rf"\b(?:ustaw[aąyie]\w*)\s+(?P<name>o\s+[^()\n;,.:]{{3,160}}?|[–—-]\s*[A-ZĄĆĘŁŃÓŚŹŻ]"
                         rf"[^()\n;,.:]{{2,160}}?){_NAME_END}", text, re.IGNORECASE):
        i = bisect.bisect_right(starts, m.start()) - 1
        if i < 0 or m.start() >= titles[i].end:
            name = _name_of(m.group("name"))
            found.append((m.start(), Cited(m.start(), m.end(), [], True, None, name=name)))
    for m in re.finditer(r"\bKonstytucj[aiąę](?:\s+(?:RP|Rzeczypospolitej\s+Polskiej))?\b", text):
        found.append((m.start(), Cited(m.start(), m.end(), [], True, CONSTITUTION, name="Konstytucja")))
    for m in re.finditer(r"\b(?P<code>Kodeks\w*\s+(?:postępowania\s+)?\w+(?:\s+\w+)?)", text):
        if code := code_named(m.group("code"), abbreviations=False):
            found.append((m.start(), Cited(m.start(), m.end(), [], True, code, name=m.group("code"))))
    return sorted(found, key=lambda x: x[0])
