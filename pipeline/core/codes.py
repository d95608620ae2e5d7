"""The codes (kodeksy) by the abbreviations and names Polish legal writing uses, to their base acts.

A base act is the ELI id of the act as first published; its consolidated texts are stored under it.
A question naming "art. 52 kp" (pipeline.retrieval.named_articles) and a provision citing "art. 83
Kodeksu postępowania administracyjnego" (pipeline.sources.references) read the same table.
"""
from __future__ import annotations

import re

# (abbreviation or name as a pattern, base act), the longer name first where one begins another. The name in
# any case ending: "Kodeksu pracy".
CODES: tuple[tuple[str, str], ...] = (
    (r"kp|kodeks\w*\s+pracy", "DU/1974/141"),
    (r"kc|kodeks\w*\s+cywiln\w*", "DU/1964/93"),
    (r"kkw|kodeks\w*\s+karn\w*\s+wykonawcz\w*", "DU/1997/557"),
    (r"kks|kodeks\w*\s+karn\w*\s+skarbow\w*", "DU/1999/930"),
    (r"kk|kodeks\w*\s+karn\w*", "DU/1997/553"),
    (r"kpa|kodeks\w*\s+postępowania\s+administracyjn\w*", "DU/1960/168"),
    (r"kpc|kodeks\w*\s+postępowania\s+cywiln\w*", "DU/1964/296"),
    (r"ksh|kodeks\w*\s+spółek\s+handlowych", "DU/2000/1037"),
    (r"kpk|kodeks\w*\s+postępowania\s+karn\w*", "DU/1997/555"),
    (r"kro|kodeks\w*\s+rodzinn\w*\s+i\s+opiekuńcz\w*", "DU/1964/59"),
    (r"kw|kodeks\w*\s+wykroczeń", "DU/1971/114"),
)
# How Polish legal writing abbreviates each code (a citation's short form).
ABBREVIATIONS = {"DU/1974/141": "k.p.", "DU/1964/93": "k.c.", "DU/1997/553": "k.k.", "DU/1960/168": "k.p.a.",
                 "DU/1964/296": "k.p.c.", "DU/2000/1037": "k.s.h.", "DU/1997/555": "k.p.k.", "DU/1997/557": "k.k.w.",
                 "DU/1964/59": "k.r.o.", "DU/1971/114": "k.w.", "DU/1999/930": "k.k.s."}
_CODE = [(re.compile(rf"^(?:{pattern})\b", re.IGNORECASE), eli) for pattern, eli in CODES]
# The codes by name only (no abbreviation): what a statute's text writes.
_NAMED = [(re.compile(rf"^(?:{pattern.split('|', 1)[1]})", re.IGNORECASE), eli) for pattern, eli in CODES]


def code_named(text: str, *, abbreviations: bool = True) -> str | None:
    """The base act of the code ``text`` begins with ("Kodeksu pracy …", "k.p." → "DU/1974/141"), or None.
    ``abbreviations``: also "kp", "k.p.", "kc" … (a question's way; a statute writes the name)."""
    if abbreviations:
        compact = re.sub(r"\s+", " ", text.replace(".", "")).strip()  # "k.p." -> "kp"
        return next((eli for code, eli in _CODE if code.match(compact) or code.match(compact.replace(" ", ""))), None)
    return next((eli for code, eli in _NAMED if code.match(text.strip())), None)


def code_name_at(text: str) -> tuple[str, int] | None:
    """The code whose name ``text`` begins with ("Kodeksu pracy stanowi …") and where the name ends."""
    for code, eli in _NAMED:
        if m := code.match(text):
            return eli, m.end()
    return None
