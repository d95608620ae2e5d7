"""The background embedding worker: `pipeline ingest` stores an act, starts this process and returns;
the process drains the embedding queue and exits.

Why a detached process rather than a thread or a daemon: the user's command must end (a thread dies
with it), and the queue already is the state: rows claimed with ``FOR UPDATE SKIP LOCKED``, committed
a batch at a time, so a worker killed at any point loses only its batch, and the next ingest or
`pipeline embed` resumes. One worker a database: it holds a session advisory lock
(pipeline.storage.queue.WORKER_LOCK) for its life, which also tells search and `pipeline db status`
that the texts without vectors are being embedded now. It runs at a lower priority (nice), so the
user's own commands (the first `ask`) keep the CPU; it writes its lines to PIPELINE_HOME/logs/embed.log.
It exits when the queue is empty, or with one line in its log when the database goes away (`pipeline
db stop`) or the model fails.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import psycopg

from pipeline.core.errors import PipelineError, one_line
from pipeline.storage import db
from pipeline.storage.queue import queued, release_worker_lock, try_worker_lock, worker

NICE = 10  # below the user's commands: an `ask` started beside the worker keeps most of the CPU
START_SECONDS = 30.0  # how long `ingest` waits for the worker to take its lock (an interpreter, an import)
LOG_NAME = "embed.log"


@dataclass
class Started:
    """What `ingest` tells of the background embedding: the worker's process (None: one was running
    already, ``pid`` is then its database backend's), the texts waiting and where it writes."""

    pid: int | None
    already_running: bool
    queued: int
    log: str

    def to_dict(self) -> dict:
        return asdict(self)


_children: list[subprocess.Popen] = []  # the workers this process started (tests wait for them)


def log_path(home: Path) -> Path:
    return home / "logs" / LOG_NAME


def start(url: str, home: Path, *, wait: float = START_SECONDS) -> Started:
    """Start a worker for the database at ``url`` unless one runs, and return once it holds the lock
    (so that a search right after sees the embedding under way). A worker that exits before it holds the
    lock, with texts still waiting, is a PipelineError with the last line of its log."""
    log = log_path(home)
    with db.connect(url, autocommit=True) as conn:
        waiting = queued(conn, _model())
        running = worker(conn)
        if running is not None:
            return Started(running.pid, True, waiting, str(log))
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            child = subprocess.Popen([sys.executable, "-m", "pipeline.indexing.worker"],
                                     env={**os.environ, "DATABASE_URL": url}, stdin=subprocess.DEVNULL,
                                     stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        _children.append(child)
        deadline = time.monotonic() + wait
        while worker(conn) is None:
            if child.poll() is not None:
                if child.returncode == 0:  # took the lock and finished, or lost the race to another worker
                    break
                raise PipelineError(f"the embedding worker failed: {_last_line(log)} (log: {log})")
            if time.monotonic() > deadline:
                break  # slow to start: it goes on; `pipeline db status` shows it once it holds the lock
            time.sleep(0.05)
    return Started(child.pid, False, waiting, str(log))


def _model() -> str:
    from pipeline.embedders import configured_model
    return configured_model() or ""


def _last_line(log: Path) -> str:
    lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return lines[-1] if lines else "no output"


def wait_for_workers(timeout: float = 120.0) -> None:
    """Wait for the workers this process started to exit (tests: none is left running)."""
    for child in _children:
        child.wait(timeout)
    _children.clear()


def say(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{os.getpid()}] {line}", flush=True)


def run(url: str) -> int:
    """The worker: hold the lock, embed what is queued (pipeline.indexing.embed.embed_all), release the
    lock, and look at the queue once more: an ingest that queued texts while this worker finished saw the
    lock held and started none, so the texts are this worker's. Exit status 0 when the queue is done or
    another worker holds the lock."""
    from pipeline.embedders import embedder_from_env
    from pipeline.indexing.embed import embed_all

    try:
        with db.connect(url, autocommit=True) as conn:
            embedder = None
            while True:
                if not try_worker_lock(conn):
                    say("another worker embeds this database")
                    return 0
                try:
                    if embedder is None:  # after the lock: a second worker exits without loading a model
                        embedder = embedder_from_env()
                        say(f"embedding with {embedder.name}: {queued(conn, embedder.name)} text(s) queued")
                    done = embed_all(conn, embedder, progress=_progress)
                finally:
                    release_worker_lock(conn)
                say(f"{done.embedded} text(s) embedded in {done.seconds:.1f} s, {done.remaining} left")
                if done.embedded == 0 or not queued(conn, embedder.name):
                    return 0
    except (PipelineError, psycopg.Error) as exc:  # the server stopped, the model failed: the queue keeps the rest
        say(f"stopped: {one_line(exc)}; the queue keeps the rest (pipeline embed, or the next ingest)")
        return 1
    except KeyboardInterrupt:  # SIGINT or SIGTERM (main): the batch under way is rolled back, the rest queued
        say("stopped: interrupted; the queue keeps the rest (pipeline embed, or the next ingest)")
        return 1


PROGRESS_SECONDS = 30.0  # a line in the log this often, and at the end


@contextlib.contextmanager
def _progress(total: int, model: str) -> Iterator[Callable[[int], None]]:
    """The worker's progress display (pipeline.indexing.embed.ProgressFactory): lines in its log."""
    state = {"done": 0, "said": time.monotonic()}

    def advance(n: int) -> None:
        state["done"] += n
        if time.monotonic() - state["said"] >= PROGRESS_SECONDS or state["done"] >= total:
            state["said"] = time.monotonic()
            say(f"{state['done']}/{total} text(s) ({model})")
    yield advance


def main() -> int:
    try:
        os.nice(NICE)
    except OSError:
        pass
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # kill PID: a line in the log, as Ctrl-C
    url = os.environ.get("DATABASE_URL")
    if not url:
        say("DATABASE_URL is not set: the worker is started by `pipeline ingest`")
        return 2
    return run(url)


if __name__ == "__main__":
    sys.exit(main())
