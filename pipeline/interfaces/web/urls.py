"""The page's URLs, built in one place, as docs/web.md documents them."""
from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import quote, urlencode


def article_url(act: str, article: str, *, as_of: dt.date | None = None, version: int | None = None) -> str:
    query = {k: v for k, v in (("as_of", as_of), ("version", version)) if v}
    # An article number as the product writes it (151^1): '^' is not safe in a path, so it is encoded.
    return f"/acts/{act}/art/{quote(article, safe='')}" + (f"?{urlencode(query)}" if query else "")


def search_url(q: str, acts: list[str] | None = None, as_of: dt.date | None = None, path: str = "/search") -> str:
    query: list[tuple[str, Any]] = [("q", q)] + [("act", a) for a in acts or []]
    if as_of:
        query.append(("as_of", as_of.isoformat()))
    return f"{path}?{urlencode(query)}"
