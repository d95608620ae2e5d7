"""Parse the next acts of a bulk ingest in worker processes while the current one is stored.

Parsing is CPU-bound Python (pypdf), one core per act; storing is mostly the database's work. For
``ingest --all`` and ``--offline`` runs, whose texts are on disk, workers parse ahead into the parse
cache (pipeline/sources/parse/cache.py) and the ingest loop, which waits for an act's worker before
ingesting it, then takes the result from the cache. Nothing here decides anything: a worker that
fails or dies only means the loop parses that act itself, and reports its error as always.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
from collections.abc import Sequence
from pathlib import Path

from pipeline.sources.fetch import read_archive
from pipeline.sources.parse import cache as parse_cache
from pipeline.sources.parse.read import parse_text


def default_jobs() -> int:
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def _exit_with_parent(parent: int) -> None:
    """Worker initializer: a worker whose ingest was killed (kill -9) must not live on."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _parse_into_cache(root: str, act: str, require_sums: bool) -> None:
    fetched = read_archive(Path(root), act, require_sums=require_sums)
    parse_text(fetched.text, fetched.format)


class ParseAhead:
    """Workers parsing ``acts`` read from the archive ``root``; ``wait(act)`` before ingesting it."""

    def __init__(self, root: Path | None, acts: Sequence[str], jobs: int, *, require_sums: bool = False) -> None:
        self._futures: dict[str, cf.Future] = {}
        self._pool: cf.ProcessPoolExecutor | None = None
        if jobs < 2 or len(acts) < 2 or parse_cache.cache_dir() is None:
            return  # one act, one job or no cache to hand results over: nothing to gain
        # spawn, not fork: the parent holds a database connection and threads.
        self._pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_exit_with_parent, initargs=(os.getpid(),))
        for act in acts:
            self._futures[act] = self._pool.submit(_parse_into_cache, str(root), act, require_sums)

    def wait(self, act: str) -> None:
        future = self._futures.pop(act, None)
        if future is not None:
            try:
                future.result()
            except Exception:  # the ingest loop parses it again and reports the error
                pass

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> ParseAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
