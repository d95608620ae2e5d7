"""How many searches and answers a service runs at once: one more is refused at once (Busy), not queued.

A search costs CPU (embedding the question, the SQL); an answer holds a model call for seconds. Past a
few per core, more at once only make each slower, and a queue hides that until every visitor waits: the
one over the limit is told to try again, with how soon.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.core.config import env_number
from pipeline.core.errors import Busy

SEARCH_RETRY_AFTER = 1  # seconds: a search takes a fraction of one
ANSWER_RETRY_AFTER = 10  # seconds: a model writes an answer in several


def limit_from_env(name: str, *, per_cpu: int, at_least: int) -> int:
    """The limit the environment sets (a positive whole number), else ``per_cpu`` per core, at least
    ``at_least``."""
    return int(env_number(os.environ, name, int) or max(at_least, per_cpu * (os.cpu_count() or 1)))


def search_limit() -> int:
    """PIPELINE_MAX_SEARCHES, else 4 per core (at least 8). A search is CPU (the question's embedding,
    ~0.3 s on one core of the offline model, and the SQL): past a few per core more at once only wait, and
    32 visitors on 2 cores with 16 admitted waited 6.8 s a search (bench/load.py)."""
    return limit_from_env("PIPELINE_MAX_SEARCHES", per_cpu=4, at_least=8)


def answer_limit() -> int:
    """PIPELINE_MAX_ANSWERS, else 4 per core (at least 8): an answer mostly waits for its model."""
    return limit_from_env("PIPELINE_MAX_ANSWERS", per_cpu=4, at_least=8)


class Gate:
    """At most ``limit`` calls inside at once; ``what`` and ``retry_after`` (seconds) word the refusal."""

    def __init__(self, what: str, limit: int, retry_after: int) -> None:
        if limit < 1:
            raise ValueError(f"{what}: the limit must be at least 1")
        self.what, self.limit, self.retry_after = what, limit, retry_after
        self._slots = threading.BoundedSemaphore(limit)

    @contextmanager
    def slot(self) -> Iterator[None]:
        if not self._slots.acquire(blocking=False):
            raise Busy(f"{self.limit} {self.what} are running now, as many as this server allows at once: "
                       f"try again in {self.retry_after} s", self.retry_after)
        try:
            yield
        finally:
            self._slots.release()
