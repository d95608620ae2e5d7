"""core: what every stage shares and nothing else imports into (errors, settings, act ids, article
numbers, limits, the HTTP retry rule, JSON of results)."""
from __future__ import annotations

import datetime as _dt
from typing import Any

__version__ = "0.1.0"


def json_default(value: Any) -> Any:
    """``json.dumps(result, default=json_default)`` for what the library returns (``Hit.to_dict()``,
    ``get_article()``, ``Asked.to_dict()``): dates and times as ISO 8601 ("2026-08-18T12:42:13+00:00"),
    what scripts parse, as the CLI's --json writes them; anything else as its text."""
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    return str(value)
