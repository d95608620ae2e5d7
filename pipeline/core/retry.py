"""The one rule for retrying an HTTP request to a service we call (the ELI API, an embedding server):
which failures are worth another try, and how long to wait before it.

A timeout, a dropped connection, 429 (too many requests) and 5xx are transient: tried again after an
exponential backoff with jitter (parallel clients must not retry in lockstep), never shorter than the
server's Retry-After, never longer than ``max_delay``. Anything else (4xx) is the answer. The answer
model's client (the openai SDK) applies its own backoff, which follows the same rule.
"""
from __future__ import annotations

import random
import time
from email.utils import parsedate_to_datetime

MAX_DELAY = 60.0  # seconds: a server asking for longer is treated as down for this run


def is_transient(status: int) -> bool:
    """An HTTP status worth another try: rate limited (429) or a server-side error (5xx)."""
    return status == 429 or status >= 500


def delay(attempt: int, backoff: float, *, retry_after: float | None = None, max_delay: float = MAX_DELAY) -> float:
    """Seconds to wait before try number ``attempt + 1`` (``attempt`` ≥ 1 tries made so far)."""
    wait = min(max_delay, backoff * 2.0 ** (attempt - 1)) * random.uniform(0.5, 1.0)
    if retry_after is not None:
        wait = max(wait, min(retry_after, max_delay))
    return wait


def retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
