"""The articles a question names: "art. 52 kp", "artykuł 154 Kodeksu pracy", "art. 151¹ k.p.".

Lawyers and HR staff cite provisions by number and by the code's abbreviation. Such a question asks
for that article, which no ranking by meaning or by words finds reliably (a number is one term among
many, "kp" none). Search puts a named article that is stored first (pipeline.retrieval.search), and ask does
not refuse it (pipeline.retrieval.refusal).
"""
from __future__ import annotations

import re

from pipeline.core.codes import code_named
from pipeline.core.numbering import TYPED, canonical
from pipeline.core.units import TYPED_WORD

# "art. 52", "art 52", "artykuł 52", "artykułu 151^1", "art. 151¹", "art. 22(1)", "art. 3a^1": the number
# (as typed: core.numbering), then optionally its units ("§ 1 pkt 2") and the act.
_ARTICLE = re.compile(
    rf"\bart(?:ykuł\w*|\.)?\s*({TYPED})"
    rf"((?:\s*{TYPED_WORD}\s*\S+)*)(?=\s*(.{{0,60}}))",  # the act: looked at, not consumed
    re.IGNORECASE,
)


def named_articles(question: str) -> list[tuple[str | None, str]]:
    """(base act, article) for each article the question names, in order; the act is None when the
    question names none of the codes by its abbreviation or name (the caller may know it otherwise)."""
    found: list[tuple[str | None, str]] = []
    for m in _ARTICLE.finditer(question):
        article = canonical(m.group(1))
        act = code_named(m.group(3))
        if (act, article) not in found:
            found.append((act, article))
    return found
