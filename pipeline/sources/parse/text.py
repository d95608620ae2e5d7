"""Text cleanup shared by the parsers."""
from __future__ import annotations

import re

_SPACES = re.compile(r"[ \t\u00a0\u2007\u202f\u2009\u200a]+")
# "praco-" at a line end followed by a lowercase letter: a word broken by the typesetter.
_BROKEN_WORD = re.compile(r"(?<=\w)-$")


def normalize_spaces(text: str) -> str:
    """Collapse runs of spaces (incl. non-breaking ones) to one space; strip the ends."""
    return _SPACES.sub(" ", text).strip()


def join_lines(lines: list[str]) -> str:
    """Join the printed lines of one paragraph into one line of text.

    A word hyphenated at a line end is rejoined ("praco-", "wnik" -> "pracownik").
    A real hyphen that falls at a line end is printed twice in Polish typesetting
    ("informacyjno-", "-komunikacyjnych"), so a line starting with "-" keeps one.
    """
    out = ""
    for line in lines:
        line = normalize_spaces(line)
        if not line:
            continue
        if not out:
            out = line
        elif out.endswith("-") and line.startswith("-") and not line.startswith("- "):
            out = out + line[1:]
        elif _BROKEN_WORD.search(out) and line[:1].islower():
            out = out[:-1] + line
        else:
            out = out + " " + line
    return out


def join_hyphenated(paragraphs: list[str]) -> str:
    """Paragraphs whose printed lines are separated by "\\n" -> one line per paragraph."""
    return "\n".join(join_lines(p.split("\n")) for p in paragraphs)
