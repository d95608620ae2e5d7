"""Article numbers: the one grammar of them, as printed, as typed, and in canonical form, and their order.

The canonical form is what the parsers store and every lookup takes: digits, up to three Polish
letters, an optional superscript written ``^N``, up to three letters again ("151^1", "22^1c", "19a",
"3a^1", "95ł"). Parsers, lookups (``pipeline show``, MCP ``get_article``), named articles in a
question and citations in an answer all read numbers with the patterns below, so a number the
parser stores is one a reader can ask for.
"""
from __future__ import annotations

import re

from pipeline.core.errors import UsageError
from pipeline.core.limits import MAX_RANGE
from pipeline.core.units import CITED_WORD

# Letter suffixes are Polish letters ("95ł" exists), ordered as the Polish alphabet.
_ALPHABET = "aąbcćdeęfghijklłmnńoópqrsśtuvwxyzźż"
LETTER = f"[{_ALPHABET}]"
_LETTERS = f"{LETTER}{{0,3}}"
# Superscript digits, as printed ("151¹") and as typed: "151¹" is art. 151^1.
SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
SUPERSCRIPT_DIGITS = str.maketrans(SUPERSCRIPTS, "0123456789")

# An article number in canonical form, as the parsers store it and write it in a label ("Art. 3a^1.").
# Letters before the superscript only with one ("3a^1"); "19abcd" is no number.
NUMBER = rf"\d+(?:{_LETTERS}\^\d+)?{_LETTERS}"
_CANONICAL = re.compile(rf"^(\d+)(?:({_LETTERS})\^(\d+)({_LETTERS})|({_LETTERS}))$")
# An article number as a person or a model types it, or a text prints it: the superscript as "^1"
# (spaces allowed around the caret), as superscript digits "¹", or as "(1)" where superscripts cannot be
# typed ("22(1)"). Match it case-insensitively (``re.IGNORECASE``): "19A" is art. 19a. It ends where
# the number ends: no letter or digit may follow ("art. 1234567" is not art. 123).
TYPED = (rf"\d+(?:{_LETTERS}(?:\s*\^\s*\d+|\(\d+\)|[{SUPERSCRIPTS}]+))?{_LETTERS}"
         rf"(?![\w{SUPERSCRIPTS}])")
_TYPED = re.compile(TYPED, re.IGNORECASE)
# "12–14", "284-290^1": a label standing for several articles (repealed or omitted together).
_RANGE = re.compile(rf"^({NUMBER})\s*[–-]\s*({NUMBER})$")
# What may come before and after a typed number: "art.", "Art", "artykuł(u)"; a unit of the article
# ("154 § 1 pkt 2", "23 ust. 1": a reader cites the unit, the whole article is what is stored).
_PREFIX = re.compile(r"^(?:artykuł\w*|art\.?)\s*", re.IGNORECASE)  # the longer first
_UNIT = re.compile(rf"\s*{CITED_WORD}\s*\S.*$", re.IGNORECASE)
# A stored article's own label, in canonical form: "Art. 3a^1." (pipeline.sources.parse.model); its
# first line goes on with its first unit or its text ("Art. 5. § 1. …").
ARTICLE_LABEL = rf"Art\.\s*{NUMBER}\."
_ARTICLE_LABEL = re.compile(ARTICLE_LABEL + r"\s*")


def label_end(line: str) -> int:
    """Where the text after an article's own label ("Art. 5. ") begins in ``line``; 0 without one."""
    m = _ARTICLE_LABEL.match(line)
    return m.end() if m else 0


_TO_SUPERSCRIPT = str.maketrans("0123456789", SUPERSCRIPTS)
_CARET = re.compile(r"(?<=[\w])\^(\d+)")


def printed(text: str) -> str:
    """An article or unit number, or a text holding them, as a Polish reader writes it: "167^2" -> "167²",
    "22^1c" -> "22¹c", "§ 1^1" -> "§ 1¹" (ids, URLs and JSON keep the "^" form)."""
    return _CARET.sub(lambda m: m.group(1).translate(_TO_SUPERSCRIPT), text)


def canonical(typed: str) -> str:
    """The canonical form of a number matched by :data:`TYPED`: "151¹" / "151 ^ 1" / "151(1)" -> "151^1"."""
    s = re.sub(r"\s+", "", typed).lower()
    s = re.sub(r"\((\d+)\)", r"^\1", s)
    return re.sub(f"[{SUPERSCRIPTS}]+", lambda m: "^" + m.group(0).translate(SUPERSCRIPT_DIGITS), s)


def canonical_article(text: str) -> str:
    """'art. 151¹' / 'Art. 151^1.' / '151^1' -> '151^1'; '22¹c' -> '22^1c'; '3a^1', '95ł' as they are;
    '154 § 1 pkt 2' -> '154'. Raises UsageError for anything that is not an article number."""
    if not isinstance(text, str):  # 154 as a number: the caller's mistake, not a missing article
        raise UsageError(f"an article number is a string such as '154' or '151^1', not {type(text).__name__}")
    s = _UNIT.sub("", _PREFIX.sub("", text.strip())).rstrip(".").strip()
    if not _TYPED.fullmatch(s):
        # Malformed, like a malformed act id: the call is wrong (HTTP 400), not the article missing (404).
        raise UsageError(f"{text!r} is not an article number (examples: 154, 151^1, 22^1c, 19a)")
    return canonical(s)


def find_typed(text: str) -> list[str]:
    """The canonical numbers typed in ``text``, in order ("154, 155 i 151¹" -> 154, 155, 151^1)."""
    return [canonical(m.group(0)) for m in _TYPED.finditer(text)]


def is_canonical(number: str) -> bool:
    return _CANONICAL.match(number) is not None


Key = tuple[int, tuple[int, ...], int, tuple[int, ...]]


def parse_number(number: str) -> tuple[int, str, int, str]:
    """``"151^1"`` -> ``(151, "", 1, "")``; ``"22^1c"`` -> ``(22, "", 1, "c")``; ``"3a^1"`` -> ``(3, "a", 1, "")``."""
    m = _CANONICAL.match(number)
    if not m:
        raise ValueError(f"not a canonical article number: {number!r}")
    if m.group(3) is None:  # "19a": the letters come before where a superscript would be (3a < 3a^1 < 3b)
        return int(m.group(1)), m.group(5), 0, ""
    return int(m.group(1)), m.group(2), int(m.group(3)), m.group(4)


def sort_key(number: str) -> Key:
    """Order of articles as they appear in an act (151 < 151^1 < 151^1a < 151^2 < 152; 3 < 3a < 3a^1 < 3b)."""
    base, letter, sup, suffix = parse_number(number)
    return base, _letters(letter), sup, _letters(suffix)


def _letters(text: str) -> tuple[int, ...]:
    return tuple(_ALPHABET.index(c) for c in text)


def check_sequence(numbers: list[str]) -> list[str]:
    """Problems with an act's article sequence: not canonical, not increasing, or a gap.

    A gap is a jump of more than one in the base number (5 -> 7). Inserted
    articles (151^1, 19a) are never gaps. Returns human-readable messages; empty = fine.
    """
    problems: list[str] = []
    previous: Key | None = None
    for number in numbers:
        try:
            key = sort_key(number)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        if previous is not None:
            if key <= previous:
                problems.append(f"art. {number} does not follow art. {_fmt(previous)}")
            elif key[0] > previous[0] + 1:
                problems.append(f"gap: art. {_fmt(previous)} is followed by art. {number}")
        previous = key
    return problems


def _fmt(key: Key) -> str:
    base, letter, sup, suffix = key

    def spell(idx: tuple[int, ...]) -> str:
        return "".join(_ALPHABET[i] for i in idx)

    return f"{base}{spell(letter)}" + (f"^{sup}" if sup else "") + spell(suffix)


def range_size(first: str, last: str) -> int | None:
    """How many numbers the range from ``first`` to ``last`` holds, counted without listing them; None where
    they cannot be known ("19a-19c": which letters lie between is not known; a range running backwards)."""
    try:
        a, b = parse_number(first), parse_number(last)
    except ValueError:
        return None
    if a[1] or a[3] or b[1] or b[3]:
        return None
    (base_a, _, sup_a, _), (base_b, _, sup_b, _) = a, b
    if sup_a and sup_b and base_a == base_b and sup_a < sup_b:
        return sup_b - sup_a + 1
    if sup_a or base_a >= base_b:
        return None
    return base_b - base_a + 1 + (1 if sup_b else 0)


def expand_range(first: str, last: str) -> list[str]:
    """Numbers from ``first`` to ``last`` where they can be known; [] where not, or where they are more than
    MAX_RANGE (told before any is listed: "1-100000000" is no range of an act).

    "12", "14" -> 12, 13, 14; "284", "290^1" -> 284 … 290, 290^1; "67^1", "67^4" -> 67^1 … 67^4.
    """
    size = range_size(first, last)
    if size is None or size > MAX_RANGE:
        return []
    (base_a, _, sup_a, _), (base_b, _, sup_b, _) = parse_number(first), parse_number(last)
    if sup_a:
        return [f"{base_a}^{n}" for n in range(sup_a, sup_b + 1)]
    numbers = [str(n) for n in range(base_a, base_b + 1)]
    if sup_b:
        numbers.append(last)
    return numbers


def split_range(label: str) -> list[str]:
    """The numbers a range label such as "20-22" stands for; [] when ``label`` is not a known range."""
    m = _RANGE.match(label.strip())
    return expand_range(m.group(1), m.group(2)) if m else []
