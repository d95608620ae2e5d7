"""Canonical article numbers ("151^1", "22^1c", "19a") and their order."""
from __future__ import annotations

import re

_CANONICAL = re.compile(r"^(\d+)(?:\^(\d+))?([a-z]{0,3})$")


def parse_number(number: str) -> tuple[int, int, str]:
    """``"151^1"`` -> ``(151, 1, "")``; ``"22^1c"`` -> ``(22, 1, "c")``; ``"19a"`` -> ``(19, 0, "a")``."""
    m = _CANONICAL.match(number)
    if not m:
        raise ValueError(f"not a canonical article number: {number!r}")
    return int(m.group(1)), int(m.group(2) or 0), m.group(3)


def sort_key(number: str) -> tuple[int, int, str]:
    """Order of articles as they appear in an act (151 < 151^1 < 151^1a < 151^2 < 152)."""
    base, sup, letter = parse_number(number)
    return base, sup, letter


def check_sequence(numbers: list[str]) -> list[str]:
    """Problems with an act's article sequence: not canonical, not increasing, or a gap.

    A gap is a jump of more than one in the base number (5 -> 7). Inserted
    articles (151^1, 19a) are never gaps. Returns human-readable messages; empty = fine.
    """
    problems: list[str] = []
    previous: tuple[int, int, str] | None = None
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


def _fmt(key: tuple[int, int, str]) -> str:
    base, sup, letter = key
    return f"{base}" + (f"^{sup}" if sup else "") + letter
