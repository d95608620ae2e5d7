"""One ingest call as asked (:class:`IngestRequest`), checked once before anything runs, and what it
reports while it runs (:class:`IngestEvents`).

The CLI builds a request from its options, the Python API from its arguments; the service checks it
(:meth:`IngestRequest.checked`) and hands the checked request down to the batch, each act's ingest, the
newest-text resolution and sync. A bad request is a UsageError naming the option at fault.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.core.config import Settings
from pipeline.core.errors import UsageError
from pipeline.core.limits import MAX_CHARS, MAX_JOBS, MIN_CHARS
from pipeline.indexing.find import ActQuery
from pipeline.sources.chunk import ChunkSizes

if TYPE_CHECKING:
    from pipeline.indexing.embed import ProgressFactory
    from pipeline.indexing.ingest import IngestResult


@dataclass(frozen=True)
class IngestRequest:
    """What to ingest and how. Acts come one of four ways: ``acts`` by id (from the ELI API, ``source``,
    or with ``offline`` the archive), ``all_acts`` of an archive, local files (``paths``, with at most one
    of ``acts`` naming their act), or by title: ``title`` (with ``act_type``, ``in_force``, ``year``; or
    ``all_acts`` with ``year`` alone) names one act, or with ``all_acts`` every act the search matches.

    ``latest``: each act id is resolved to its newest consolidated text. ``original``: with a title, the
    act as enacted. ``dry_run``: with a title, what would be fetched (:meth:`pipeline.Service.ingest_plan`).
    ``embed``: compute the vectors of what is stored now (else they wait in the queue). ``chunk_chars``:
    None for CHUNK_CHARS. ``jobs``: processes parsing ahead (None: the CPUs, at most 4). ``amending_acts``:
    also fetch the acts that amended each act asked for by id after its text (its record's "Akty
    zmieniające" after the text's date, a consolidated text's "Nowelizacje po tekście jednolitym"), from
    the same source, those not stored yet; not their own amending acts.
    """

    acts: tuple[str, ...] = ()
    paths: tuple[Path, ...] = ()
    all_acts: bool = False
    source: Path | None = None
    offline: bool = False
    archive_dir: Path | None = None  # None: PIPELINE_ARCHIVE (dane/)
    embed: bool = True
    chunk_chars: int | None = None
    latest: bool = False
    jobs: int | None = None
    title: str | None = None
    act_type: str | None = None
    in_force: bool = False
    year: int | None = None
    original: bool = False
    dry_run: bool = False
    amending_acts: bool = True

    @property
    def by_title(self) -> bool:
        """Acts found by title (or, with ``all_acts``, by year) in the ELI API, not named by id."""
        return self.title is not None or (self.all_acts and self.year is not None)

    @property
    def query(self) -> ActQuery | None:
        """The title search, when acts are found by title."""
        return ActQuery(self.title or "", self.act_type, self.in_force, self.year) if self.by_title else None

    def checked(self, config: Settings) -> IngestRequest:
        """The request with every rule checked and the defaults of ``config`` filled in; a UsageError
        names the option at fault. Nothing is read or fetched but whether ``source`` is a folder."""
        acts, paths = tuple(self.acts), tuple(Path(p) for p in self.paths)
        if self.chunk_chars is not None and not (isinstance(self.chunk_chars, int)
                                                 and MIN_CHARS <= self.chunk_chars <= MAX_CHARS):
            raise UsageError(f"chunk size must be a whole number from {MIN_CHARS} to {MAX_CHARS}", param="--chunk-chars")
        if self.jobs is not None and not (isinstance(self.jobs, int) and 1 <= self.jobs <= MAX_JOBS):
            raise UsageError(f"jobs must be a whole number from 1 to {MAX_JOBS}", param="--jobs")
        if self.by_title:
            self.query.check()  # type: ignore[union-attr]  # the title's own rules (length, year …)
            if acts or paths or self.source is not None or self.offline or self.latest:
                raise UsageError("--title/--year find acts in the ELI API: no --act, files, --source, --offline "
                                 "or --latest with them")
            if not self.all_acts and not (self.title or "").strip():
                raise UsageError("--title names the act to ingest (--year alone needs --all)", param="--title")
        else:
            if self.act_type or self.in_force or self.year is not None or self.original or self.dry_run:
                raise UsageError("--type, --in-force, --year, --original and --dry-run go with --title "
                                 "(or --all --year)")
            if self.source is not None and not self.source.is_dir():
                raise UsageError(f"{self.source} is not a folder", param="--source")
            if self.all_acts and self.source is None and not self.offline:
                raise UsageError("--all needs --source DIR (an archive in the ELI mirror layout) or --offline (dane/)")
            if not acts and not paths and not self.all_acts:
                raise UsageError("nothing to ingest: give --act ID, --all with --source, or file paths")
            if paths and len(acts) > 1:
                raise UsageError("with file paths, --act may be given once (it names the act of the file)")
            if self.latest and (self.source is not None or self.offline or paths or not acts):
                raise UsageError("--latest asks the ELI API about --act IDs; it cannot read --source, --offline "
                                 "or files")
        return replace(self, acts=acts, paths=paths, archive_dir=Path(self.archive_dir or config.archive_dir),
                       chunk_chars=self.chunk_chars or config.chunk_chars)

    def sizes(self, config: Settings) -> ChunkSizes:
        return ChunkSizes(self.chunk_chars or config.chunk_chars, config.chunk_overlap)


def _quiet(*_: object) -> None:
    pass


@dataclass(frozen=True)
class IngestEvents:
    """What an ingest tells while it runs (each optional): ``on_start(i, n, what)`` before an act or
    file, ``on_result(result)`` after it (once for every act, skipped ones and the amending acts fetched
    after the acts asked for included), ``progress(line)`` for fetch and search steps, ``on_warning(line)``
    for what is left undone without failing (an amending act the source lacks: the line is also in the
    warnings of the act it amends), ``embed_progress`` for the embedding that follows."""

    on_start: Callable[[int, int, str], None] | None = None
    on_result: Callable[[IngestResult], None] | None = None
    progress: Callable[[str], None] | None = None
    embed_progress: ProgressFactory | None = field(default=None)
    on_warning: Callable[[str], None] | None = None

    def started(self, i: int, n: int, what: str) -> None:
        (self.on_start or _quiet)(i, n, what)

    def finished(self, result: IngestResult) -> None:
        (self.on_result or _quiet)(result)

    def step(self, line: str) -> None:
        (self.progress or _quiet)(line)

    def warned(self, line: str) -> None:
        (self.on_warning or _quiet)(line)
