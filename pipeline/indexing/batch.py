"""A whole `pipeline ingest` call: many acts (by id, from an archive, by title, or local files), then
the embedding of what they queued.

:func:`plan` turns a checked request (pipeline.indexing.request) into the work: the acts and files, and
what is skipped with the reason; :func:`ingest_many` does it on the ingestion it is given
(pipeline.service opens its connections).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.core.act_id import acts_in
from pipeline.core.errors import EmbedderError, UsageError, one_line
from pipeline.embedders import Embedder
from pipeline.indexing.ahead import ParseAhead, default_jobs
from pipeline.indexing.embed import drain_queue, queued
from pipeline.indexing.ingest import Ingestion, IngestResult, version_id
from pipeline.indexing.latest import ingest_latest
from pipeline.indexing.request import IngestEvents, IngestRequest
from pipeline.sources.fetch import has_text

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
    """What one ingest call will do: act ids (from the API, ``request.source`` or the archive), or files;
    and what is skipped (an archive's acts without a text, a title search's acts already stored …), each
    reported once, after the acts that ran."""

    request: IngestRequest
    acts: tuple[str, ...]
    files: list[Path]
    skipped: list[IngestResult] = field(default_factory=list)
    found_as: dict[str, str] = field(default_factory=dict)  # by title: the act ingested -> the act found

    @property
    def needs_api(self) -> bool:
        """Acts are fetched from the ELI API (not read from files, a mirror or the archive)."""
        return bool(self.acts) and not self.files and self.request.source is None and not self.request.offline


def plan(request: IngestRequest, *, picked: list | None = None) -> IngestPlan:
    """The work of a checked ``request``. ``picked``: by title, the picks of the search
    (pipeline.indexing.find.Pick): those with a ``skip`` are skipped, the others ingested by id."""
    acts = tuple(request.acts)
    skipped: list[IngestResult] = []
    found_as: dict[str, str] = {}
    if picked is not None:
        acts = tuple(p.target for p in picked if p.skip is None)
        skipped = [IngestResult(act=p.target, status="skipped", warnings=[p.skip]) for p in picked if p.skip]
        found_as = {p.target: p.act for p in picked if p.target != p.act}
    elif request.all_acts:
        root = request.source if request.source is not None else request.archive_dir
        assert root is not None, "a checked request has an archive"
        # "Every act that has a text": one named with --act and lacking a text still fails.
        for aid in acts_in(root):
            if has_text(root, aid):
                acts += (str(aid),)
            else:
                skipped.append(IngestResult(act=str(aid), status="skipped",
                                            warnings=[f"{aid} has no text in {root} (metadata only)"]))
        if not acts and not request.paths:
            raise UsageError("nothing to ingest: give --act ID, --all with --source, or file paths")
    return IngestPlan(request, acts, expand_paths(request.paths), skipped, found_as)


def ingest_many(ingestion: Ingestion, todo: IngestPlan, *, embedder: Embedder | None,
                events: IngestEvents = IngestEvents()) -> IngestReport:
    """Ingest the acts of ``todo``, then embed with ``embedder`` (None: leave them queued for the
    ingestion's model). An act that fails is a "failed" result, the others still run; every act,
    skipped ones included, is reported to ``events`` once.

    ``request.latest``: each act id is resolved through the API to its newest consolidated text, which is
    ingested as a version of the same act (pipeline.indexing.latest). ``request.jobs``: processes parsing
    the next acts ahead when their texts are on disk (``source`` or ``offline``). ``request.amending_acts``:
    then the acts that amended the acts asked for (by id) after their texts, not stored yet, from the same
    source; local files fetch none."""
    request = todo.request
    results: list[IngestResult] = []
    by_id = [] if todo.files else list(todo.acts)
    total = len(todo.files) + len(by_id)
    on_disk = None  # texts read from disk can be parsed ahead; downloads cannot
    if not request.latest and (request.source is not None or request.offline):
        on_disk = request.source if request.source is not None else request.archive_dir
    ahead = ParseAhead(on_disk, by_id if on_disk else (), default_jobs() if request.jobs is None else request.jobs,
                       require_sums=request.source is None)

    def done(result: IngestResult) -> None:
        if result.act in todo.found_as:  # as --latest says it: what was asked for, what came
            result.resolved_from = todo.found_as[result.act]
        results.append(result)
        events.finished(result)

    try:
        for i, act in enumerate(by_id, start=1):
            events.started(i, total, act)
            ahead.wait(act)
            if request.latest:
                done(ingest_latest(ingestion, act))
            else:
                done(ingestion.act(act, source_dir=request.source, offline=request.offline))
    finally:
        ahead.close()
    if request.amending_acts and by_id:
        _amending_acts(ingestion, request, results, events)
    for j, path in enumerate(todo.files, start=1):
        events.started(j, total, str(path))
        done(ingestion.file(path, act=todo.acts[0] if todo.acts else None))
    if embedder is not None and results:
        _embed(ingestion, results, embedder, events)
    conn = ingestion.conn
    # What `pipeline embed` has left to do: other acts' texts, or, with --no-embed, this run's too.
    waiting = queued(conn, ingestion.model) if ingestion.model is not None else 0
    conn.rollback()
    for r in todo.skipped:
        events.finished(r)
    return IngestReport(results + todo.skipped, waiting)


def _amending_acts(ingestion: Ingestion, request: IngestRequest, results: list[IngestResult],
                   events: IngestEvents) -> None:
    """After the acts asked for, the acts that amended their texts after them (pipeline.indexing.ingest:
    Ingestion.amending_acts), from the same source; each fetched act joins ``results`` and is told to
    ``events`` as the others are, and each act asked for says what became of its amending acts."""
    stored = [r for r in results if r.status in ("new", "unchanged")]
    fetched = ingestion.amending_acts([r.act for r in stored], source_dir=request.source, offline=request.offline,
                                      started=events.started, finished=events.finished, warn=events.warned)
    for r in stored:
        r.amending_acts = dict(fetched.listed.get(r.act, {}))
        r.warnings.extend(fetched.warnings.get(r.act, []))
    results.extend(fetched.results)


def _embed(ingestion: Ingestion, results: list[IngestResult], embedder: Embedder, events: IngestEvents) -> None:
    """Embed the texts of the versions this run stored or found stored (so a rerun finishes what an
    interrupted one left), not the whole queue: a backlog left by `--no-embed` on purpose is `pipeline
    embed`'s (31k texts of the mirror take hours on a CPU), not every later ingest's."""
    conn = ingestion.conn
    versions = {i: v for i, r in enumerate(results) if (v := version_id(conn, r.act, r.version)) is not None}
    pending = {i: queued(conn, embedder.name, [v]) for i, v in versions.items()}
    conn.rollback()  # reads only: drain_queue commits batches of its own
    try:
        embedded = drain_queue(conn, embedder, progress=events.embed_progress, versions=list(versions.values()))
    except EmbedderError as exc:  # the model is down: what was stored stays, and the fix is one command
        stored = sum(r.status in ("new", "unchanged") for r in results)
        raise EmbedderError(f"{one_line(exc)}; the {stored} act(s) are stored and their texts queued: "
                            "`pipeline embed` computes the vectors once the model answers") from None
    # Attribute the work to the acts whose texts waited, in order (versions can share texts).
    for i, r in enumerate(results):
        r.embedded = min(pending.get(i, 0), embedded)
        embedded -= r.embedded
