"""Rules both parsers (PDF and HTML) apply to the articles they find."""
from __future__ import annotations

import re

from .model import Article

# "(uchylony)", and "(utracił moc)" for a provision that lost force: neither has text in force.
_REPEALED = re.compile(r"\((?:uchylony|uchylone|uchylona|utracił moc|utraciły moc|utraciła moc)\)\.?")


def is_repealed(content: str) -> bool:
    """An article whose whole text after its label is a repeal marker such as "(uchylony)"."""
    return bool(_REPEALED.fullmatch(content.strip()))


def merge_versions(articles: list[Article], warnings: list[str]) -> list[Article]:
    """Consolidated texts print two wordings of an article in a row (in force now / from a later
    date, told apart only by footnotes): keep one article holding both."""
    merged: list[Article] = []
    for art in articles:
        if merged and merged[-1].number == art.number:
            prev = merged[-1]
            prev.text = prev.text + "\n" + art.text
            prev.repealed = prev.repealed and art.repealed
            warnings.append(f"art. {art.number}: two consecutive versions merged")
        else:
            merged.append(art)
    seen: set[str] = set()
    for art in merged:
        if art.number in seen:
            warnings.append(f"art. {art.number} appears more than once")
        seen.add(art.number)
    return merged
