"""Canonical article numbers ("151^1", "22^1c", "19a") and their order."""
from __future__ import annotations

import re

# Letter suffixes are Polish letters ("95ł" exists), ordered as the Polish alphabet.
_ALPHABET = "aąbcćdeęfghijklłmnńoópqrsśtuvwxyzźż"
_LETTERS = f"[{_ALPHABET}]{{0,3}}"
_CANONICAL = re.compile(rf"^(\d+)({_LETTERS})(?:\^(\d+))?({_LETTERS})$")
# An article number as printed in a label: "151^1", "22^1c", "19a", "3a^1", "95ł".
NUMBER = rf"\d+{_LETTERS}(?:\^\d+)?{_LETTERS}"
# "12–14", "284-290^1": a label standing for several articles (repealed or omitted together).
_RANGE = re.compile(rf"^({NUMBER})\s*[–-]\s*({NUMBER})$")

# Article numbers typed or printed with superscript digits: "151¹" is art. 151^1.
SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
SUPERSCRIPT_DIGITS = str.maketrans(SUPERSCRIPTS, "0123456789")

Key = tuple[int, tuple[int, ...], int, tuple[int, ...]]


def parse_number(number: str) -> tuple[int, str, int, str]:
    """``"151^1"`` -> ``(151, "", 1, "")``; ``"22^1c"`` -> ``(22, "", 1, "c")``; ``"3a^1"`` -> ``(3, "a", 1, "")``."""
    m = _CANONICAL.match(number)
    if not m:
        raise ValueError(f"not a canonical article number: {number!r}")
    return int(m.group(1)), m.group(2), int(m.group(3) or 0), m.group(4)


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
    spell = lambda idx: "".join(_ALPHABET[i] for i in idx)
    return f"{base}{spell(letter)}" + (f"^{sup}" if sup else "") + spell(suffix)


def expand_range(first: str, last: str) -> list[str]:
    """Numbers from ``first`` to ``last`` where they can be known; [] where not.

    "12", "14" -> 12, 13, 14; "284", "290^1" -> 284 … 290, 290^1; "67^1", "67^4" -> 67^1 … 67^4.
    """
    a = re.match(r"^(\d+)(?:\^(\d+))?$", first)
    b = re.match(r"^(\d+)(?:\^(\d+))?$", last)
    if not a or not b:
        return []
    base_a, base_b = int(a.group(1)), int(b.group(1))
    if a.group(2) and b.group(2) and base_a == base_b and int(a.group(2)) < int(b.group(2)):
        return [f"{base_a}^{n}" for n in range(int(a.group(2)), int(b.group(2)) + 1)]
    if a.group(2) or base_a >= base_b:
        return []
    numbers = [str(n) for n in range(base_a, base_b + 1)]
    if b.group(2):
        numbers.append(last)
    return numbers


def split_range(label: str) -> list[str]:
    """The numbers a range label such as "20-22" stands for; [] when ``label`` is not a known range."""
    m = _RANGE.match(label.strip())
    return expand_range(m.group(1), m.group(2)) if m else []
