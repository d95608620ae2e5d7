"""The amending instructions of an act, read by rule into changes: which act and unit each changes, how, with
what wording, and which unit of the amending act says so. Stored by pipeline.storage.amendments; a wording
is rebuilt from them by pipeline.sources.rewording.

Polish amending provisions follow one legislative technique (Zasady techniki prawodawczej, §§ 83–95):
"W ustawie z dnia … (Dz. U. …) wprowadza się następujące zmiany: 1) po art. 5 dodaje się art. 5a w brzmieniu:
„…”; 2) w art. 44: a) w ust. 1 zdanie drugie otrzymuje brzmienie: „…”, b) uchyla się ust. 1b; 3) w art. 43 w
ust. 2 wyrazy „…” zastępuje się wyrazami „…”", "dotychczasową treść oznacza się jako ust. 1 i dodaje się
ust. 2 …", "Traci moc ustawa z dnia … (Dz. U. …)". Text inside „…” is a wording: it is set aside before the
instruction is read, so nothing inside it is ever taken for an instruction or a reference of the amending act.
A leaf this grammar does not read is kept as ``other`` with its words, never dropped.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from pipeline.core import units
from pipeline.core.numbering import label_end
from pipeline.sources.parse.model import Article
from pipeline.sources.references import act_name_of, cited_act, cited_in

SET_WORDING, ADD, REPEAL, RENUMBER, REPLACE_WORDS, DELETE_WORDS, INSERT_WORDS, ADD_SENTENCE, OTHER = (
    "set_wording", "add", "repeal", "renumber", "replace_words", "delete_words", "insert_words", "add_sentence",
    "other")
OPERATIONS = (SET_WORDING, ADD, REPEAL, RENUMBER, REPLACE_WORDS, DELETE_WORDS, INSERT_WORDS, ADD_SENTENCE, OTHER)
EXTRACTOR = "amendments-1"  # changes when what is read from the same text changes
# Each operation as a Polish reader is told it.
OPERATIONS_PL = {SET_WORDING: "nowe brzmienie", ADD: "dodanie", REPEAL: "uchylenie", RENUMBER: "zmiana oznaczenia",
                 REPLACE_WORDS: "zamiana wyrazów", DELETE_WORDS: "skreślenie", INSERT_WORDS: "dodanie wyrazów",
                 ADD_SENTENCE: "dodanie zdania", OTHER: "zmiana"}


def change_note(act: str, unit: str, operation: str, target_unit: str, whole_act: bool, new_label: str | None,
                status: str, in_force_from: dt.date | None) -> str:
    """One Polish line for a change after a text: "DU/2026/187 art. 160: uchylenie (cała ustawa), wejdzie w
    życie 2028-05-19"."""
    what = "cała ustawa" if whole_act else target_unit or "cały artykuł"
    if new_label:
        what += f" → {new_label}"
    when = (f"w mocy od {in_force_from}" if status == "in_force" else
            f"wejdzie w życie {in_force_from}" if status == "pending" else "data wejścia w życie nieustalona")
    return f"{act} {unit}: {OPERATIONS_PL[operation]} ({what}), {when}"


@dataclass(frozen=True)
class Change:
    """One change an amending act makes to one unit of another act: a row of table amendments, each field named
    as its column (the records of `show`'s changes, storage.amendments, name after_unit and wording ``after``
    and ``text``, as docs/results.md documents them)."""

    source_article: str  # the amending article ("2")
    amending_unit: str  # where in it ("pkt 3 lit. a"; "" the article itself)
    target_as_written: str  # "ustawie z dnia 12 maja 2011 r. o Krajowej Radzie Sądownictwa (Dz. U. z 2019 r. poz. 84)"
    target_act: str | None  # the ELI id the words give (the first Dz. U. position; a code's base act)
    target_article: str | None  # None: the whole act ("Traci moc ustawa …")
    target_unit: str  # "ust. 2 pkt 3", "ust. 1 zdanie drugie"; "" the whole article
    operation: str  # one of OPERATIONS
    after_unit: str | None = None  # add: the unit it follows ("art. 5", "ust. 2"); None: at the end
    wording: str | None = None  # the wording set or added (set_wording, add, add_sentence)
    old_words: str | None = None  # replace_words, delete_words, insert_words (the words it follows)
    new_words: str | None = None  # replace_words, insert_words
    new_label: str | None = None  # renumber: the unit's new designation ("ust. 1")
    instruction: str = ""  # the instruction's own words, each wording elided as „…"
    target_name: str | None = None  # the act's title as printed: "o ochronie danych osobowych", "Kodeks pracy"
    target_date: dt.date | None = None  # the act's date as printed
    kept: str | None = None  # a repeal's exceptions, its units that stay in force: "art. 1, art. 2, art. 4-7"


_OPEN, _CLOSE = "„", "”"
_HOLE = re.compile(r"\x00(\d+)\x00")


def _mask(text: str) -> tuple[str, list[str]] | None:
    """``text`` with each outermost „…” replaced by a numbered hole, and the wordings; None when the quotes
    do not pair (a text this reader cannot trust)."""
    out: list[str] = []
    quoted: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == _OPEN:
            if depth == 0:
                start = i
            depth += 1
        elif ch == _CLOSE and depth:
            depth -= 1
            if depth == 0:
                out.append(f"\x00{len(quoted)}\x00")
                quoted.append(text[start + 1:i])
        elif depth == 0:
            out.append(ch)
    return None if depth else ("".join(out), quoted)


# The words of one unit as an instruction names it: "art. 5a", "§ 2", "ust. 1b", "pkt 3", "lit. a",
# "tiret drugie", "zdanie drugie", and what stands for them in a location ("w zdaniu drugim").
_NUM = r"\d+[a-z]{0,3}(?:\s?\^\s?\d+[a-z]{0,3})?"
# A sentence or a tiret by its ordinal, in any case ("w zdaniu drugim", "zdanie drugie"): the first eight of
# units.ORDINALS are read, by their stems ("drugi"), and cited as units.ORDINALS writes them.
ORDINALS_READ = units.ORDINALS[:8]
_ORDINAL = rf"(?:{'|'.join(o[:-1] for o in ORDINALS_READ)})\w*"
_KIND_WORD = (r"(?P<kind>art\.|§|ust\.|pkt|lit\.|tiret|zdani\w*|część\s+wspóln\w*|części\s+wspólnej|"
              r"wprowadzeni\w*\s+do\s+wyliczenia|tytu\w*\s+rozdzia\w*|tytu\w*\s+dzia\w*|rozdzia\w*|oddzia\w*|"
              r"dzia\w*|odnośni\w*\s+nr)")
# A number, a letter, an ordinal ("drugie"), a Roman number of a part of the act ("IVd"); after a separator
# never a preposition that begins the next phrase ("…, w art. 5").
_ONE = rf"(?:{_NUM}|[a-z]{{1,3}}(?!\w)(?!\.\s*\S)|{_ORDINAL}|[IVXLC]+[a-z]{{0,3}}\b)"
_NEXT = rf"(?!(?:w|we|z|o|oraz|do|po)\b){_ONE}"
_LIST = rf"{_ONE}(?:\s*(?:[–—-]|,|\bi\b|\boraz\b)\s*{_NEXT})*"
_UNITS = re.compile(rf"{_KIND_WORD}\s*(?P<list>{_LIST})?", re.IGNORECASE)
# Where the instruction acts: "w art. 7", "w ust. 2", "w zdaniu drugim" (each may be chained, "w" repeated or not).
_WHERE = re.compile(rf"\bwe?\s+(?P<units>{_KIND_WORD.replace('?P<kind>', '?:')}\s*(?:{_LIST})?"
                    rf"(?:\s+(?:{_KIND_WORD.replace('?P<kind>', '?:')})\s*(?:{_LIST})?)*)", re.IGNORECASE)

_VERB_SET = re.compile(r"otrzymuj[eą]\s+brzmienie", re.IGNORECASE)
_VERB_REPEAL = re.compile(r"uchyla\s+się", re.IGNORECASE)
_VERB_ADD = re.compile(r"dodaje\s+się", re.IGNORECASE)
_VERB_RENUMBER = re.compile(r"oznacza\s+się\s+jako", re.IGNORECASE)
_WORDS = r"(?:wyraz\w*|wyrażeni\w*|znak\w*|liczb\w*|cyfr\w*|oznaczeni\w*|zdani\w*|przecin\w*|odnośnik\w*|symbol\w*)"
# "użyte w różnej liczbie i różnym przypadku": words that qualify the words replaced, between verb and noun.
_FILLER = r"(?:[^\x00;]{0,120}?\s)?"
_REPLACE = re.compile(rf"{_WORDS}\s+\x00(?P<old>\d+)\x00\s+zastępuje\s+się\s+{_FILLER}{_WORDS}\s+\x00(?P<new>\d+)\x00",
                      re.IGNORECASE)
_DELETE = re.compile(rf"skreśla\s+się\s+{_FILLER}{_WORDS}\s+\x00(?P<old>\d+)\x00", re.IGNORECASE)
# "kropkę zastępuje się średnikiem": the punctuation closing a unit, before a unit is added after it.
_MARKS = {"kropk": ".", "średnik": ";", "przecin": ",", "dwukrop": ":"}
_PUNCTUATION = re.compile(r"(?P<old>kropk\w*|średnik\w*|przecin\w*|dwukrop\w*)\s+zastępuje\s+się\s+"
                          r"(?P<new>kropk\w*|średnik\w*|przecin\w*|dwukrop\w*)", re.IGNORECASE)
_DELETE_SENTENCE = re.compile(rf"skreśla\s+się\s+zdani\w*\s+(?P<which>{_ORDINAL}(?:\s+i\s+{_ORDINAL})?)", re.IGNORECASE)
_INSERT = re.compile(rf"po\s+{_WORDS}\s+\x00(?P<old>\d+)\x00\s+dodaje\s+się\s+{_WORDS}\s+\x00(?P<new>\d+)\x00",
                     re.IGNORECASE)
_INTRO = re.compile(r"^\s*W\s+(?:ustawie|kodeksie|dekrecie|rozporządzeniu|Kodeksie)\b")
_REPEAL_ACT = re.compile(r"^\s*(?P<unit>1\.\s+)?Traci\s+moc\s+(?:ustawa|dekret|rozporządzenie)\b", re.IGNORECASE)


# The parts of an act above its articles, as a change names them: "rozdział 5a", "tytuł rozdziału 3"; an act's
# footnotes stand at its title ("odnośnik nr 1 do tytułu").
_STRUCTURE = {"rozdzia": "rozdział", "oddzia": "oddział", "dzia": "dział", "odnośni": "odnośnik nr"}
_PARTS = ("rozdział", "dział", "oddział")  # those numbered across the act, cited by their own name
# A whole part of the act as a change's target ("uchyla się rozdziały 4 i 5", "po rozdziale 3 dodaje się rozdziały
# 3a i 3b"): stored with no article, the part as its unit ("rozdział 4"); as SQL's regex (issue 47).
PART_TARGET = r"^(rozdział|dział|oddział) [0-9a-z]+$"
_ARTICLE_OPENS = re.compile(r"^Art\.\s*(?P<number>\d+[a-z]{0,3}(?:\^\d+[a-z]{0,3})?)\.\s", re.MULTILINE)


def under(headings: Iterable[str], part: str) -> bool:
    """Whether an article whose headings are ``headings`` ("Rozdział 4 Obowiązki …") stands in ``part`` ("rozdział 4")."""
    part = part.lower()
    return any(h.lower() == part or h.lower().startswith(part + " ") for h in headings)


def articles_of(wording: str) -> list[tuple[str, str]]:
    """(number, text) of each article a part's added wording holds ("Rozdział 3a ⏎ Tytuł ⏎ Art. 8a. 1. …")."""
    opens = list(_ARTICLE_OPENS.finditer(wording))
    ends = [m.start() for m in opens[1:]] + [len(wording)]
    return [(m.group("number"), wording[m.start():end].strip()) for m, end in zip(opens, ends, strict=True)]


def _kind(word: str) -> str:
    w = " ".join(word.lower().split())
    if w.startswith("tytu"):
        return "tytuł rozdziału" if "rozdzia" in w else "tytuł działu"
    for stem, name in _STRUCTURE.items():
        if w.startswith(stem):
            return name
    if w.startswith("zdani"):
        return "zdanie"
    if w.startswith("częś"):
        return "część wspólna"
    if w.startswith("wprowadzeni"):
        return "wprowadzenie do wyliczenia"
    return word


def _ordinal(word: str) -> str:
    w = word.lower()
    return next((o for o in ORDINALS_READ if w.startswith(o[:-1])), w)


def _letter_span(first: str, last: str) -> list[str] | None:
    """"3a"–"3d" -> 3a, 3b, 3c, 3d; "a"–"c" -> a, b, c. Where acts differ on which letters follow (Polish
    numbering uses ł after l in some acts; q after p, v after u, x after w in others) a range across such a
    place is not spelled out: None."""
    a = re.fullmatch(r"(\d*(?:\^\d+)?)([a-z])", first)
    b = re.fullmatch(r"(\d*(?:\^\d+)?)([a-z])", last)
    if not a or not b or a.group(1) != b.group(1) or a.group(2) >= b.group(2):
        return None
    letters = [chr(c) for c in range(ord(a.group(2)), ord(b.group(2)) + 1)]
    if any(x in "lpuw" for x in letters[:-1]):
        return None
    return [a.group(1) + x for x in letters]


def _expand(kind: str, listed: str | None) -> list[str]:
    """"ust." + "1, 2 i 4" -> ["ust. 1", "ust. 2", "ust. 4"]; ranges of plain numbers and of single letters are
    spelled out; a kind without a number ("część wspólna") is itself."""
    kind = _kind(kind)
    if not listed:
        return [kind]
    items = [s.strip() for s in re.split(r"\s*,\s*|\s+(?:i|oraz)\s+", listed.strip()) if s.strip()]
    out: list[str] = []
    for item in items:
        m = re.fullmatch(r"(\S+?)\s*[–—-]\s*(\S+)", item)
        if m and m.group(1).isdigit() and m.group(2).isdigit() and int(m.group(1)) < int(m.group(2)) <= int(m.group(1)) + 200:
            out += [f"{kind} {n}" for n in range(int(m.group(1)), int(m.group(2)) + 1)]
        elif m and (span := _letter_span(m.group(1), m.group(2))):
            out += [f"{kind} {n}" for n in span]
        elif kind == "odnośnik nr":  # an act's footnotes stand at its title
            out.append(f"{kind} {item} do tytułu")
        elif kind in ("zdanie", "tiret"):
            out.append(f"{kind} {_ordinal(item)}")
        else:
            out.append(f"{kind} {''.join(item.split())}")
    return out


def _units(words: str) -> list[list[str]]:
    """The units named in ``words`` ("art. 7 ust. 2 i 3") as a path whose last step may be a list:
    [["art. 7"], ["ust. 2", "ust. 3"]]."""
    steps: list[list[str]] = []
    previous = None
    for m in _UNITS.finditer(words):
        units = _expand(m.group("kind"), m.group("list"))
        kind = units[0].split(" ")[0] if units else None
        between = words[previous.end():m.start()] if previous else ""
        if steps and kind and steps[-1] and steps[-1][0].split(" ")[0] == kind and re.fullmatch(r"\s*(?:,|i|oraz)\s*", between):
            steps[-1] += units  # "art. 9 i art. 10": one list
        else:
            steps.append(units)
        previous = m
    return steps


def _split(path: list[list[str]]) -> tuple[str | None, str, str, list[str]]:
    """A location path -> (its article, the units inside it: "ust. 2 pkt 3", those before the last step, the
    last step's units: "w art. 44 ust. 2 i 3" -> "44", "ust. 2", "", ["ust. 2", "ust. 3"])."""
    steps = [step for step in path if step]
    article = None
    if steps and steps[0][0].startswith("art. "):
        article = steps[0][0].removeprefix("art. ")
        steps = steps[1:]
    return article, " ".join(step[0] for step in steps), " ".join(step[0] for step in steps[:-1]), \
        (steps[-1] if steps else [])


def _join(*parts: str | None) -> str:
    return " ".join(p for p in parts if p).strip()


def _wording_of(unit: str, text: str, count: int) -> str:
    """The part of a wording that sets ``unit`` where one wording sets several ("2. … 3. …", "Art. 5a. … Art. 5b. …")."""
    if count == 1:
        return text
    kind, _, number = unit.partition(" ")
    label = (rf"Art\.\s*{re.escape(number)}\." if kind == "art." else
             rf"{kind.capitalize()}\s+{re.escape(number)}\b" if kind in _PARTS
             else units.label_of(unit))
    if label is None:
        return text
    starts = [m.start() for m in re.finditer(rf"(?:^|\n)\s*{label}(?=\s)", text)]
    if len(starts) != 1:
        return text
    # Up to the next label of the same kind (an added article's own points are its).
    same = (r"Art\.\s*\S+\." if kind == "art." else rf"{kind.capitalize()}\s+\S+" if kind in _PARTS
            else units.shape_of(kind))
    nxt = re.search(rf"\n\s*{same}\s", text[starts[0] + 1:]) if same else None
    return text[starts[0]:starts[0] + 1 + nxt.start() if nxt else len(text)].strip()


def _labels_in(kind: str, wording: str) -> list[str]:
    """The numbers of the units of ``kind`` ("art.", "ust.", "pkt", "lit.") a wording opens, in order."""
    if kind == "art.":
        return [" ".join(m.group(1).split()) for m in re.finditer(r"(?:^|\n)\s*Art\.\s*(\S+?)\.\s", wording)]
    found = []
    for line in wording.split("\n"):
        lab = units.label(line.strip())
        if lab is not None and units.cite(lab.kind, lab.number).split(" ")[0] == kind:
            found.append(lab.number)
    return found


def _spelled(unit: str, wording: str | None) -> list[str]:
    """"pkt 11a–11n", "art. 7a–7m", "lit. o–zg": a range the letters of Polish numbering leave open (ł, q, v,
    x, two-letter labels) is spelled out by the labels the wording itself opens; [unit] where it cannot be."""
    m = re.fullmatch(r"(\S+) (\S+?)\s*[–—-]\s*(\S+)", unit)
    if not m or wording is None:
        return [unit]
    numbers = _labels_in(m.group(1), wording)
    if m.group(2) in numbers and m.group(3) in numbers and numbers.index(m.group(2)) < numbers.index(m.group(3)):
        return [f"{m.group(1)} {n}" for n in numbers[numbers.index(m.group(2)):numbers.index(m.group(3)) + 1]]
    return [unit]


def _spell(found: list[tuple[str | None, str]], wording: str | None) -> list[tuple[str | None, str]]:
    """Targets with each range the rules left whole spelled out by the wording's labels (:func:`_spelled`)."""
    out: list[tuple[str | None, str]] = []
    for article, unit in found:
        if unit:
            kind_and_range = " ".join(unit.split(" ")[-2:])
            prefix = unit[:len(unit) - len(kind_and_range)].strip()
            out += [(article, _join(prefix, u)) for u in _spelled(kind_and_range, wording)]
        elif article and re.search(r"[–—-]", article):
            out += [(u.removeprefix("art. "), "") for u in _spelled(f"art. {article}", wording)]
        else:
            out.append((article, unit))
    return out


def _last(unit: str) -> str:
    """The last step of a unit's path: "ust. 2 pkt 3" -> "pkt 3"."""
    return " ".join(unit.split(" ")[-2:])


def _wording(text: str) -> str:
    """A wording as its units stand, a line each ("2. …\n1) …"), each line's spaces collapsed."""
    return "\n".join(" ".join(line.split()) for line in text.split("\n") if line.strip())


def _clean(text: str) -> str:
    return " ".join(text.split())


def _places(words: str) -> list[tuple[str | None, str]]:
    """"w art. 2 w pkt 2 i 4, w art. 8 w ust. 1 oraz art. 9" -> (2, pkt 2), (2, pkt 4), (8, ust. 1), (9, "")."""
    out: list[tuple[str | None, str]] = []
    article: str | None  # None: a part of the act (a title, a chapter …)
    for group in re.split(r"(?:,|\bi\b|\boraz\b)\s*(?=(?:we?\s+)?(?:art\.|tytu|rozdzia|dzia|oddzia))", words):
        path = [step for step in _units(group) if step]
        if not path:
            continue
        if path[0][0].startswith("art. "):
            article, path = path[0][0].removeprefix("art. "), path[1:]
        elif path[0][0].split(" ")[0] in ("tytuł", *_PARTS):  # a part of the act
            out.append((None, " ".join(step[0] for step in path)))
            continue
        elif out:
            article = out[-1][0]
        else:
            return []
        inner = " ".join(step[0] for step in path[:-1])
        out += [(article, _join(inner, u)) for u in (path[-1] if path else [""])]
    return out


def _leaf_changes(words: str, quoted: list[str], base: dict) -> list[Change]:
    """The changes one leaf instruction makes (a leaf may make several: "… oznacza się jako ust. 1 i dodaje
    się ust. 2 …", "wyrazy „a” zastępuje się wyrazami „b”, a wyrazy „c” …")."""
    def q(i: str | int) -> str:
        return _clean(quoted[int(i)])

    def held(hole: re.Match | None) -> str | None:  # the wording a hole stands for
        return quoted[int(hole.group(1))] if hole else None

    out: list[Change] = []
    shown = _HOLE.sub("„…”", words)
    where_end = 0
    location: list[list[str]] = []
    several = False  # "w tytule działu IVd, w art. 479^61 w § 1 oraz w art. 479^66a wyraz „…” …": several places
    for m in _WHERE.finditer(words):
        # Only the leading "w …" phrases (and those right after "po …" is not) locate the instruction.
        between = words[where_end:m.start()].strip(" ,:")
        if between and not (where_end and between in ("i", "oraz")):
            if where_end or not re.fullmatch(r"(?:we?\s+(?:części|księdze|tytule)\s+\S+\s*)+", between):
                break
        several = several or bool(where_end and words[where_end:m.start()].strip(" :"))
        location += _units(m.group("units"))
        where_end = m.end()
    article, loc_unit, loc_inner, loc_last = _split(location)
    rest = words[where_end:]

    def change(op: str, target_article: str | None, unit: str, **kw) -> Change:
        return Change(target_article=target_article, target_unit=unit, operation=op, instruction=shown, **base, **kw)

    def targets(subject: str) -> list[tuple[str | None, str]]:
        """The units a subject names ("art. 5a", "ust. 2 i 3", "pkt 1–3"), inside the location."""
        sub = [step for step in _units(subject) if step]
        if not sub:  # "w art. 44 ust. 2 i 3 otrzymują brzmienie": the location's last units
            return [(article, _join(loc_inner, u)) for u in loc_last] if len(loc_last) > 1 else [(article, loc_unit)]
        if sub[0][0].startswith("art. "):
            articles = [u.removeprefix("art. ") for u in sub[0]]
            if len(sub) == 1:
                return [(a, "") for a in articles]
            inner = " ".join(step[0] for step in sub[1:-1])
            return [(articles[0], _join(inner, u)) for u in sub[-1]]
        if sub[-1][0].split(" ")[0] in _PARTS:  # "w dziale I dodaje się rozdział 8"
            return [(None, u) for u in sub[-1]]
        inner = " ".join(step[0] for step in sub[:-1])
        # "w ust. 1 w pkt 3 … dodaje się pkt 4": a unit of the location's last kind is its sibling.
        within = loc_inner if loc_last and sub[0][0].split(" ")[0] == loc_last[0].split(" ")[0] else loc_unit
        return [(article, _join(within, inner, u)) for u in sub[-1]]

    found_any = False
    # "użyte w art. 2 w pkt 2 i 4, w art. 8 w ust. 1 … wyrazy „a” zastępuje się wyrazami „b”": the same words
    # in each place listed.
    places = targets("")
    if several:
        places = _places(words[:where_end]) or places
    elif used := re.match(rf"\s*użyt\w*\s+(?P<where>[^\x00]+?)\s+{_WORDS}\s+\x00", words, re.IGNORECASE):
        # "użyte w art. 2 w pkt 2 i 4, w różnym przypadku, wyrazy „a” zastępuje się …"
        places = _places(used.group("where")) or places
    for m in _REPLACE.finditer(rest):
        for a, u in places:
            out.append(change(REPLACE_WORDS, a, u, old_words=q(m.group("old")), new_words=q(m.group("new"))))
        found_any = True
    for m in _INSERT.finditer(rest):
        for a, u in places:
            out.append(change(INSERT_WORDS, a, u, old_words=q(m.group("old")), new_words=q(m.group("new"))))
        found_any = True
    for m in _DELETE.finditer(rest):
        for a, u in places:
            out.append(change(DELETE_WORDS, a, u, old_words=q(m.group("old"))))
        found_any = True
    for m in _DELETE_SENTENCE.finditer(rest):  # "skreśla się zdanie drugie"
        for sentence in _expand("zdanie", m.group("which")):
            out.append(change(DELETE_WORDS, article, _join(loc_unit, sentence)))
        found_any = True
    if found_any:
        return out
    for m in _PUNCTUATION.finditer(rest):
        old, new = (next(v for k, v in _MARKS.items() if m.group(g).lower().startswith(k)) for g in ("old", "new"))
        out.append(change(REPLACE_WORDS, article, loc_unit, old_words=old, new_words=new))
        rest = rest[:m.start()] + rest[m.end():]
    # The clauses of the leaf: "dotychczasową treść oznacza się jako ust. 1 i dodaje się ust. 2 w brzmieniu: „…”".
    for clause in re.split(r"(?:,\s*a\s+|\s+i\s+(?=(?:po\s+\S+\s+\S+\s+)?(?:dodaje|uchyla|skreśla)\s+się)|;\s*)", rest):
        if (v := _VERB_RENUMBER.search(clause)) is not None:
            steps = _units(clause[v.end():])
            label = " ".join(step[0] for step in steps if step) or _clean(clause[v.end():])
            out.append(change(RENUMBER, article, loc_unit, new_label=label))
        elif (v := _VERB_SET.search(clause)) is not None:
            wording = held(_HOLE.search(clause, v.end()))
            units = _spell(targets(clause[:v.start()]), wording)
            for a, u in units:
                part = _wording_of(_last(u) if u else f"art. {a}", wording, len(units)) if wording else None
                out.append(change(SET_WORDING, a, u, wording=_wording(part) if part else None))
        elif (v := _VERB_ADD.search(clause)) is not None:
            after_unit = None
            head = clause[:v.start()]
            if p := re.search(r"\bpo\s+(.+)$", head.strip(), re.IGNORECASE):
                after_unit = " ".join(" ".join(step) for step in _units(p.group(1))) or None
            hole = _HOLE.search(clause, v.end())
            wording = held(hole)
            subject = clause[v.end():hole.start() if hole else len(clause)]
            subject = re.sub(r"\bw\s+brzmieniu\b.*$", "", subject, flags=re.IGNORECASE | re.DOTALL)
            if re.match(r"\s*zdani", subject, re.IGNORECASE):
                unit = _join(loc_unit, _expand("zdanie", re.sub(r"(?i)^\s*zdani\w*", "", subject).strip() or None)[0])
                out.append(change(ADD_SENTENCE, article, unit, wording=_wording(wording) if wording else None))
                continue
            units = _spell(targets(subject), wording) if _units(subject) else []
            if not units:
                out.append(change(OTHER, article, loc_unit))
                continue
            for a, u in units:
                part = _wording_of(_last(u) if u else f"art. {a}", wording, len(units)) if wording else None
                out.append(change(ADD, a, u, after_unit=after_unit, wording=_wording(part) if part else None))
        elif (v := _VERB_REPEAL.search(clause)) is not None:
            subject = clause[v.end():] if _units(clause[v.end():]) else clause[:v.start()]
            for a, u in targets(subject):
                out.append(change(REPEAL, a, u))
        elif clause.strip(" ,.;:"):
            out.append(change(OTHER, article, loc_unit))
    # A change that names neither an article nor a part of the act (a chapter, a title's footnote) is kept,
    # as other.
    return [c if c.target_article is not None or c.target_unit else replace(c, operation=OTHER)
            for c in out] or [change(OTHER, article, loc_unit)]


@dataclass
class _Node:
    kind: str  # units.POINT, LETTER, TIRET
    label: str
    words: str
    children: list[_Node]


_DOUBLE_TIRET = "double tiret"  # "– –", below a tiret (podwójne tiret)
_DEPTH = {units.POINT: 0, units.LETTER: 1, units.TIRET: 2, _DOUBLE_TIRET: 3}


def _leaves(body: str) -> list[tuple[str, str]]:
    """The leaves of an instruction list, each as (its path of labels, "pkt 2 lit. a", and its words after
    every ancestor's: "w art. 44: w ust. 1 …")."""
    roots: list[_Node] = []
    stack: list[_Node] = []
    for line in (ln.strip() for ln in body.split("\n")):
        if not line:
            continue
        found = units.label(line)
        if found is None or found.kind not in _DEPTH:  # a line that goes on with the unit before it
            if stack:
                stack[-1].words += " " + line
            continue
        kind, words = found.kind, line[found.end:]
        if kind == units.TIRET and (double := re.match(r"[–—-]\s*", words)):  # "– –": a double tiret
            kind, words = _DOUBLE_TIRET, words[double.end():]
        node = _Node(kind, found.number, words, [])
        while stack and _DEPTH[stack[-1].kind] >= _DEPTH[kind]:
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    out: list[tuple[str, str]] = []

    def walk(node: _Node, path: list[str], words: list[str], nth: int) -> None:
        ordinal = units.ORDINALS[nth] if nth < len(units.ORDINALS) else str(nth + 1)
        path = path + [f"tiret {ordinal}" if node.kind == units.TIRET else f"podwójne tiret {ordinal}"
                       if node.kind == _DOUBLE_TIRET else units.cite(node.kind, node.label)]
        words = words + [node.words.rstrip(" :")]
        if not node.children:
            out.append((" ".join(path), " ".join(words)))
        for i, child in enumerate(node.children):
            walk(child, path, words, i)

    for i, root in enumerate(roots):
        walk(root, [], [], i)
    return out


def _articles_only(words: str) -> bool:
    """Whether a repeal's exceptions are a plain list of articles and units ("art. 1, art. 3 ust. 1, art. 4-7"):
    chapters kept, conditions ("które zachowują moc w zakresie …") or later dates ("które tracą moc z dniem
    …") leave what stays not determined by articles."""
    found = cited_in(words)
    rest = words
    for c in reversed(found):
        rest = rest[:c.start] + rest[c.end:]
    return bool(found) and not re.sub(r"(?:,|\bi\b|\boraz\b|\s)+", "", rest)


def read(article: Article) -> list[Change]:
    """The changes one article of an amending act makes; [] for an article that amends nothing."""
    text = article.text
    body = text[label_end(text):] if text.lstrip().startswith("Art") else text
    if (repeal := _REPEAL_ACT.match(body)) is not None:
        clause = body[repeal.start():].split("\n", 1)[0]
        act, title = cited_act(clause)
        name, date = act_name_of(title or "")
        unit = "ust. 1" if repeal.group("unit") else ""
        exception = re.search(r"\bz\s+wyjątkiem\s+(?P<kept>.+?)\.?\s*$", clause)
        # "…, z wyjątkiem art. 1, art. 2, art. 4-7": those stay in force. "…, z wyjątkiem ust. 2 i 3": the
        # article's own units say what else stays, and until when: not read, kept as other.
        operation = OTHER if exception and not _articles_only(exception.group("kept")) else REPEAL
        return [Change(article.number, unit, _clean(title or clause.strip().rstrip(".")), act, None, "", operation,
                       instruction=_clean(clause), target_name=name, target_date=date,
                       kept=exception.group("kept") if exception and operation == REPEAL else None)]
    if not _INTRO.match(body):
        return []
    masked = _mask(body)
    if masked is None:
        return [Change(article.number, "", _clean(body[:200]), None, None, "", OTHER, instruction=_clean(body[:300]))]
    body, quoted = masked
    # The act it amends: "W ustawie z dnia … (Dz. U. …)" up to the journal reference's closing bracket.
    intro = re.match(r"\s*W\s+", body)
    assert intro is not None  # _INTRO matched the body's start
    paren = re.search(r"\((?:Dz\.|M\.\s*P\.)[^)]*\)", body)
    cut = re.search(r"\s(?:wprowadza\s+się|w\s+art\.|po\s+art\.|uchyla\s+się|art\.\s*\S+\s+otrzymuje)", body)
    end = paren.end() if paren and (cut is None or paren.start() < cut.start()) else (cut.start() if cut else len(body))
    target_words = _clean(body[intro.end():end])
    act, title = cited_act(body[intro.end():end + 1])
    name, date = act_name_of(title or target_words)
    base = {"source_article": article.number, "target_as_written": _HOLE.sub("„…”", target_words), "target_act": act,
            "target_name": name, "target_date": date}
    rest = body[end:].strip()
    listed = re.match(r"(?:,\s*)?wprowadza\s+się\s+następując\w+\s+zmian\w+\s*:?", rest, re.IGNORECASE)
    changes: list[Change] = []
    first, _, more = rest.partition("\n")
    if listed:
        leaves = _leaves(rest[listed.end():])
    elif first.rstrip().endswith(":") and (listed_after := _leaves(more)):
        # "… (Dz. U. …) w art. 9c:\n1) ust. 1 otrzymuje brzmienie: …"
        leaves = [(path, f"{first.rstrip(' :')} {words}") for path, words in listed_after]
    else:
        leaves = [("", rest)]
    for path, words in leaves:
        changes += _leaf_changes(words, quoted, {**base, "amending_unit": path})
    return changes


def read_all(articles: Iterable[Article]) -> list[Change]:
    """The changes of every article of an act, in order."""
    return [c for a in articles for c in read(a)]


def ends(article: str, kept: str | None) -> bool:
    """Whether a repeal whose exceptions are ``kept`` ("art. 1, art. 3 ust. 1, art. 4-7") ends ``article``: not
    one it keeps, whole or in part (its other units' end is not a date the texts show), nor one inside a kept
    range ("art. 4-7" keeps 4a, whichever letters the act uses)."""
    if not kept:
        return True
    if article in {number for c in cited_in(kept) for number, _ in c.targets}:
        return False
    lead = re.match(r"\d+", article)
    return lead is None or not any(int(lo) <= int(lead.group()) <= int(hi)
                                   for lo, hi in re.findall(r"(\d+)\S*\s*[–—-]\s*(\d+)", kept))
