"""A whole `pipeline ingest` call: many acts (by id, from an archive, or local files), then the
embedding of what they queued.

The request is checked before the database is touched (:func:`plan`); :func:`ingest_many` does the
work on a connection it is given (pipeline.service opens it).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from pipeline.core.act_id import acts_in
from pipeline.core.errors import EmbedderError, UsageError, one_line
from pipeline.indexing.ahead import ParseAhead, default_jobs
from pipeline.indexing.embed import ProgressFactory, drain_queue, queued
from pipeline.indexing.embedders import Embedder
from pipeline.indexing.ingest import IngestResult, ingest_act, ingest_file, version_id
from pipeline.indexing.latest import ingest_latest
from pipeline.sources.fetch import EliClient, has_text

TEXT_SUFFIXES = (".pdf", ".html", ".htm")


@dataclass
class IngestReport:
    """The results of one ingest call, act by act, with the embeddings computed after them."""

    acts: list[IngestResult]
    waiting: int = 0  # texts still queued for the model, for `pipeline embed` (when embedding: of other acts)

    @property
    def failed(self) -> int:
        return sum(r.status == "failed" for r in self.acts)

    @property
    def new(self) -> int:
        return sum(r.status == "new" for r in self.acts)

    @property
    def unchanged(self) -> int:
        return sum(r.status == "unchanged" for r in self.acts)

    @property
    def skipped(self) -> int:
        return sum(r.status == "skipped" for r in self.acts)

    @property
    def embedded(self) -> int:
        return sum(r.embedded for r in self.acts)

    def to_dict(self) -> dict:
        return {"acts": [r.to_dict() for r in self.acts], "failed": self.failed, "skipped": self.skipped,
                "embedded": self.embedded, "waiting": self.waiting}


def expand_paths(paths: Sequence[Path]) -> list[Path]:
    """Files to ingest: each file as given, and the non-empty PDF/HTML files below each folder."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(q for q in p.rglob("*") if q.suffix.lower() in TEXT_SUFFIXES and q.stat().st_size > 0))
        elif p.is_file():
            files.append(p)
        else:
            raise UsageError(f"{p} does not exist", param="PATHS")
    return files


@dataclass
class IngestPlan:
    """What one ingest call will do, checked: act ids (from the API, ``source`` or the archive), or
    files; the acts of an archive that have no text are reported as skipped."""

    acts: tuple[str, ...]
    files: list[Path]
    source: Path | None
    offline: bool
    archive_dir: Path
    latest: bool
    skipped: list[IngestResult] = field(default_factory=list)


def plan(*, acts: Sequence[str] = (), paths: Sequence[Path] = (), all_acts: bool = False, source: Path | None = None,
         offline: bool = False, archive_dir: Path, latest: bool = False) -> IngestPlan:
    """The ingest call's arguments checked (a UsageError names the one at fault), before any work."""
    acts = tuple(acts)
    if source is not None and not source.is_dir():
        raise UsageError(f"{source} is not a folder", param="--source")
    skipped: list[IngestResult] = []
    if all_acts:
        if source is None and not offline:
            raise UsageError("--all needs --source DIR (an archive in the ELI mirror layout) or --offline (dane/)")
        root = source if source is not None else archive_dir
        # "Every act that has a text": one named with --act and lacking a text still fails.
        for aid in acts_in(root):
            if has_text(root, aid):
                acts += (str(aid),)
            else:
                skipped.append(IngestResult(act=str(aid), status="skipped",
                                            warnings=[f"{aid} has no text in {root} (metadata only)"]))
    if not acts and not paths:
        raise UsageError("nothing to ingest: give --act ID, --all with --source, or file paths")
    if paths and len(acts) > 1:
        raise UsageError("with file paths, --act may be given once (it names the act of the file)")
    if latest and (source is not None or offline or paths or not acts):
        raise UsageError("--latest asks the ELI API about --act IDs; it cannot read --source, --offline or files")
    return IngestPlan(acts, expand_paths(paths), source, offline, archive_dir, latest, skipped)


def ingest_many(
    conn: psycopg.Connection,
    url: str,
    todo: IngestPlan,
    *,
    embedder: Embedder | None,
    model: str | None,
    max_chars: int,
    overlap: int,
    jobs: int | None = None,
    on_start: Callable[[int, int, str], None] | None = None,
    on_result: Callable[[IngestResult], None] | None = None,
    progress: Callable[[str], None] | None = None,
    embed_progress: ProgressFactory | None = None,
) -> IngestReport:
    """Ingest the acts of ``todo``, then embed with ``embedder`` (None: leave them queued for ``model``).

    ``latest``: each act id is resolved through the API to its newest consolidated text, which is
    ingested as a version of the same act (pipeline.indexing.latest).
    ``jobs``: processes parsing the next acts ahead when their texts are on disk (``source`` or
    ``offline``; default: the CPUs, at most 4).
    ``on_start(i, n, what)`` and ``on_result(result)`` frame each act; ``progress`` gets fetch steps.
    An act that fails is a "failed" result, the others still run.
    """
    sizes = {"max_chars": max_chars, "overlap": overlap}
    acts, files, source, archive_dir = todo.acts, todo.files, todo.source, todo.archive_dir
    results: list[IngestResult] = []
    by_id = [] if files else list(acts)
    total = len(files) + len(by_id)
    client = EliClient() if by_id and source is None and not todo.offline else None
    on_disk = None  # texts read from disk can be parsed ahead; downloads cannot
    if not todo.latest and (source is not None or todo.offline):
        on_disk = source if source is not None else archive_dir
    ahead = ParseAhead(on_disk, by_id if on_disk else (), default_jobs() if jobs is None else jobs,
                       require_sums=source is None)
    try:
        for i, act in enumerate(by_id, start=1):
            if on_start:
                on_start(i, total, act)
            ahead.wait(act)
            if todo.latest:
                results.append(ingest_latest(conn, url, act, client=client, model=model, archive_dir=archive_dir,
                                             progress=progress, **sizes))
            else:
                results.append(ingest_act(conn, url, act, model=model, archive_dir=archive_dir, source_dir=source,
                                          offline=todo.offline, client=client, progress=progress, **sizes))
            if on_result:
                on_result(results[-1])
    finally:
        ahead.close()
        if client:
            client.close()
    for j, path in enumerate(files, start=1):
        if on_start:
            on_start(j, total, str(path))
        results.append(ingest_file(conn, url, path, act=acts[0] if acts else None, model=model, **sizes))
        if on_result:
            on_result(results[-1])
    if embedder is not None:
        # The texts of the versions this run stored or found stored (so a rerun finishes what an
        # interrupted one left), not the whole queue: a backlog left by `--no-embed` on purpose is
        # `pipeline embed`'s (31k texts of the mirror take hours on a CPU), not every later ingest's.
        versions = {i: v for i, r in enumerate(results) if (v := version_id(conn, r.act, r.version)) is not None}
        pending = {i: queued(conn, embedder.name, [v]) for i, v in versions.items()}
        conn.rollback()  # reads only: drain_queue commits batches of its own
        try:
            embedded = drain_queue(conn, embedder, progress=embed_progress, versions=list(versions.values()))
        except EmbedderError as exc:  # the model is down: what was stored stays, and the fix is one command
            stored = sum(r.status in ("new", "unchanged") for r in results)
            raise EmbedderError(f"{one_line(exc)}; the {stored} act(s) are stored and their texts queued: "
                                "`pipeline embed` computes the vectors once the model answers") from None
        # Attribute the work to the acts whose texts waited, in order (versions can share texts).
        for i, r in enumerate(results):
            r.embedded = min(pending.get(i, 0), embedded)
            embedded -= r.embedded
    # What `pipeline embed` has left to do: other acts' texts, or, with --no-embed, this run's too.
    waiting = queued(conn, model)
    conn.rollback()
    for r in todo.skipped:
        if on_result:
            on_result(r)
    return IngestReport(results + todo.skipped, waiting)
