"""How much search and answer work a service runs at once: one more is refused at once (Busy), not queued.

A search costs CPU (embedding the question, the SQL); an answer holds a model call for seconds. Past a
few per core, more at once only make each slower, and a queue hides that until every visitor waits: the
one over the limit is told to try again, with how soon. A search is weighed by its cost, not counted
alone (issue 49): 16 clients sending 5 000-character questions starved every short search.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pipeline.core.config import env_number
from pipeline.core.errors import Busy
from pipeline.core.limits import SEARCH_BASE_COST, SEARCH_BUDGET, SEARCH_EMBEDDED_CHARS

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


def search_budget() -> int:
    """PIPELINE_SEARCH_BUDGET, else SEARCH_BUDGET: what the searches running at once in this process may weigh
    together (:func:`search_cost`; pipeline.core.limits says why per process)."""
    return int(env_number(os.environ, "PIPELINE_SEARCH_BUDGET", int) or SEARCH_BUDGET)


def search_cost(question: str, *, embedded: bool) -> int:
    """What a search of ``question`` weighs: the characters its model reads (cut as the question is, before it
    is embedded), where it is ``embedded``, and the base cost of any search."""
    return SEARCH_BASE_COST + (min(len(question), SEARCH_EMBEDDED_CHARS) if embedded else 0)


def answer_limit() -> int:
    """PIPELINE_MAX_ANSWERS, else 4 per core (at least 8): an answer mostly waits for its model."""
    return limit_from_env("PIPELINE_MAX_ANSWERS", per_cpu=4, at_least=8)


class Gate:
    """At most ``limit`` calls inside at once and, with a ``budget``, calls whose costs add up to at most it
    (a weighted semaphore that never waits); ``what`` and ``retry_after`` (seconds) word the refusal. A call
    that costs more than the whole budget is taken as costing all of it: it runs alone, never refused forever."""

    def __init__(self, what: str, limit: int, retry_after: int, budget: int | None = None) -> None:
        if limit < 1 or (budget is not None and budget < 1):
            raise ValueError(f"{what}: the limit and the budget must be at least 1")
        self.what, self.limit, self.retry_after, self.budget = what, limit, retry_after, budget
        self._lock = threading.Lock()
        self.running = self.spent = 0

    @contextmanager
    def slot(self, cost: int = 0) -> Iterator[None]:
        cost = min(max(cost, 0), self.budget) if self.budget is not None else 0
        with self._lock:
            if self.running >= self.limit:
                raise Busy(f"{self.limit} {self.what} are running now, as many as this server allows at once: "
                           f"try again in {self.retry_after} s", self.retry_after)
            if self.budget is not None and self.spent + cost > self.budget:
                raise Busy(f"the {self.what} running now weigh {self.spent} of this server's {self.budget} (this one "
                           f"{cost}: a long question weighs more): try again in {self.retry_after} s", self.retry_after)
            self.running += 1
            self.spent += cost
        try:
            yield
        finally:
            with self._lock:
                self.running -= 1
                self.spent -= cost
