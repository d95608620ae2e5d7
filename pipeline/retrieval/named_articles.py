"""The articles a question names: "art. 52 kp", "artykuł 154 Kodeksu pracy", "art. 151¹ k.p.".

Lawyers and HR staff cite provisions by number and by the code's abbreviation. Such a question asks
for that article, which no ranking by meaning or by words finds reliably (a number is one term among
many, "kp" none). Search puts a named article that is stored first (pipeline.retrieval.search), and ask does
not refuse it (pipeline.retrieval.refusal).
"""
from __future__ import annotations

import re

from pipeline.core.numbering import TYPED, canonical

# The codes by the abbreviations and names Polish legal writing uses, to their base acts (the ELI id
# of the act as first published; its consolidated texts are stored under that base act).
_CODES: tuple[tuple[str, str], ...] = (
    (r"kp|kodeks\w*\s+pracy", "DU/1974/141"),
    (r"kc|kodeks\w*\s+cywiln\w*", "DU/1964/93"),
    (r"kk|kodeks\w*\s+karn\w*", "DU/1997/553"),
    (r"kpa|kodeks\w*\s+postępowania\s+administracyjn\w*", "DU/1960/168"),
    (r"kpc|kodeks\w*\s+postępowania\s+cywiln\w*", "DU/1964/296"),
    (r"ksh|kodeks\w*\s+spółek\s+handlowych", "DU/2000/1037"),
)
# "art. 52", "art 52", "artykuł 52", "artykułu 151^1", "art. 151¹", "art. 22(1)", "art. 3a^1": the number
# (as typed: core.numbering), then optionally its units ("§ 1 pkt 2") and the act.
_ARTICLE = re.compile(
    rf"\bart(?:ykuł\w*|\.)?\s*({TYPED})"
    r"((?:\s*(?:§|ust\.?|pkt|lit\.?)\s*\S+)*)(?=\s*(.{0,60}))",  # the act: looked at, not consumed
    re.IGNORECASE,
)
_CODE = [(re.compile(rf"^(?:{pattern})\b", re.IGNORECASE), eli) for pattern, eli in _CODES]


def named_articles(question: str) -> list[tuple[str | None, str]]:
    """(base act, article) for each article the question names, in order; the act is None when the
    question names none of the codes by its abbreviation or name (the caller may know it otherwise)."""
    found: list[tuple[str | None, str]] = []
    for m in _ARTICLE.finditer(question):
        article = canonical(m.group(1))
        compact = re.sub(r"\s+", " ", m.group(3).replace(".", "")).strip()  # "k.p." -> "kp"
        act = next((eli for code, eli in _CODE if code.match(compact) or code.match(compact.replace(" ", ""))), None)
        if (act, article) not in found:
            found.append((act, article))
    return found
