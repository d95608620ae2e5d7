"""Ingest: fetch (or read) an act, parse it, store it as a version, optionally embed what is new.

This is the library API behind ``pipeline ingest`` (:func:`run`); the CLI only adds progress and output.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psycopg

from pipeline.sources import chunk as chunking
from pipeline.storage import store
from pipeline.core.errors import EmbedderError, IngestError, UsageError, one_line
from pipeline.core.act_id import ActId, act_id_from_path, acts_in, parse_act_id  # noqa: F401 (importable from here, as before)
from pipeline.core.config import settings
from pipeline.storage.db import require_no_transaction
from pipeline.indexing.embed import ProgressFactory, drain_queue, queued
from pipeline.indexing.embedders import configured_model, embedder_from_env
from pipeline.sources.fetch import EliClient, FetchError, fetch_act, has_text
from pipeline.sources.parse import ParsedAct, ParseError, looks_like_pdf
from pipeline.sources.parse import cache as parse_cache
from pipeline.indexing.ahead import ParseAhead, default_jobs
from pipeline.sources.parse.html import parse_html
from pipeline.sources.parse.pdf import parse_pdf


@dataclass
class IngestResult:
    act: str
    status: str  # new | unchanged | failed | skipped (--all: an act of the archive with no text)
    version: int | None = None
    articles: int = 0
    chunks: int = 0
    changes: dict[str, list[str]] = field(default_factory=dict)
    queued: int = 0
    embedded: int = 0
    source_format: str | None = None
    pages: int = 0
    seconds: float = 0.0
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    resolved_from: str | None = None  # --latest: the act asked for, when its newest text is another

    def to_dict(self) -> dict:
        return asdict(self)


def parse_text(data: bytes, fmt: str, *, progress: Callable[[str], None] | None = None,
               label: str = "") -> ParsedAct:
    """Parse a PDF or HTML text, or take an earlier parse of the same bytes by the same parser."""
    sha = hashlib.sha256(data).hexdigest()
    say = progress or (lambda line: None)
    kind = fmt.upper()
    # Another process parsing these bytes: wait for it, then take its result from the cache.
    with parse_cache.parsing(sha, fmt, on_wait=lambda: say(f"{label}: {kind} being parsed by another process, waiting")):
        if (parsed := parse_cache.load(sha, fmt)) is not None:
            say(f"{label}: {kind} already parsed (cache)")
            return parsed
        say(f"{label}: parsing {kind}")
        parsed = _parse(data, fmt)
        parse_cache.save(sha, fmt, parsed)
    return parsed


def _parse(data: bytes, fmt: str) -> ParsedAct:
    if fmt == "pdf":
        return parse_pdf(data)
    if fmt == "html":
        return parse_html(data)
    raise ParseError(f"unknown text format {fmt!r} (expected pdf or html)")


def sniff_format(data: bytes, name: str = "") -> str:
    if not data.strip():  # before the name: an empty "x.html" is empty, not a broken HTML
        raise ParseError(f"{name or 'input'} is empty")
    if looks_like_pdf(data):
        return "pdf"
    if data[:1024].lstrip()[:1] == b"<" or name.lower().endswith((".html", ".htm")):
        return "html"
    raise ParseError(f"{name or 'input'} is neither a PDF nor an HTML document")


def local_meta(path: Path, act_id: ActId, parsed: ParsedAct) -> dict:
    """meta.json beside the file when there is one (mirror layout), else a minimal record."""
    beside = path.parent / "meta.json"
    if beside.is_file():
        try:
            meta = json.loads(beside.read_text(encoding="utf-8"))
            if meta.get("ELI") == str(act_id):
                return meta
        except ValueError:
            pass
    return {"ELI": str(act_id), "publisher": act_id.publisher, "year": act_id.year, "pos": act_id.pos,
            "title": parsed.title, **store.local_record(path.name)}


def ingest_document(
    conn: psycopg.Connection,
    meta: dict,
    data: bytes,
    fmt: str,
    *,
    model: str | None,
    max_chars: int,
    overlap: int,
    parsed: ParsedAct | None = None,
) -> IngestResult:
    """Parse (unless given) and store one text; raises ParseError before anything is written."""
    t0 = time.perf_counter()
    parsed = parsed or parse_text(data, fmt)
    if not parsed.articles:
        raise ParseError(f"{meta.get('ELI')}: no articles found in the {fmt.upper()} text")
    stored = store.store_version(conn, meta, parsed, source_sha256=hashlib.sha256(data).hexdigest(),
                                 model=model, max_chars=max_chars, overlap=overlap)
    return IngestResult(
        act=stored.eli, status=stored.status, version=stored.version_no, articles=stored.articles,
        chunks=stored.chunks, changes=stored.changes, queued=stored.queued, source_format=fmt,
        pages=parsed.pages, seconds=time.perf_counter() - t0, warnings=parsed.warnings,
    )


def ingest_act(
    conn: psycopg.Connection,
    url: str,
    act: str,
    *,
    model: str | None,
    archive_dir: Path,
    source_dir: Path | None = None,
    offline: bool = False,
    client: EliClient | None = None,
    max_chars: int = chunking.DEFAULT_MAX_CHARS,
    overlap: int = chunking.DEFAULT_OVERLAP,
    progress: Callable[[str], None] | None = None,
) -> IngestResult:
    """Fetch an act by ELI id and ingest it. Failures are returned (status "failed"), logged in ingest_runs
    (through their own connections to ``url``, so that a failed act's run is recorded).

    ``conn`` must have no transaction open: the act is stored and committed in a transaction of its
    own. ``model`` names the embedding model whose queue gets the new texts (None: queued for none;
    `pipeline embed` queues what lacks a vector when it starts)."""
    try:
        act_id = parse_act_id(act)
    except FetchError as exc:
        return IngestResult(act=act, status="failed", error=str(exc))

    def work() -> IngestResult:
        fetched = fetch_act(act_id, client=client, archive_dir=archive_dir, offline=offline,
                            source_dir=source_dir, progress=progress)
        parsed = parse_text(fetched.text, fetched.format, progress=progress, label=str(act_id))
        return ingest_document(conn, fetched.meta, fetched.text, fetched.format,
                               model=model, max_chars=max_chars, overlap=overlap, parsed=parsed)

    source = str(source_dir) if source_dir else ("archive" if offline else (client.base_url if client else "eli"))
    return _logged_run(conn, url, str(act_id), source, work)


def ingest_file(
    conn: psycopg.Connection,
    url: str,
    path: Path,
    *,
    act: str | None,
    model: str | None,
    max_chars: int = chunking.DEFAULT_MAX_CHARS,
    overlap: int = chunking.DEFAULT_OVERLAP,
) -> IngestResult:
    label = act or path.name
    try:
        act_id = parse_act_id(act) if act else act_id_from_path(path)
        label = str(act_id)
    except (FetchError, IngestError) as exc:
        return IngestResult(act=label, status="failed", error=str(exc))

    def work() -> IngestResult:
        data = path.read_bytes()
        fmt = sniff_format(data, path.name)
        parsed = parse_text(data, fmt)
        meta = local_meta(path, act_id, parsed)
        return ingest_document(conn, meta, data, fmt, model=model, max_chars=max_chars, overlap=overlap,
                               parsed=parsed)

    return _logged_run(conn, url, label, str(path), work)


def _logged_run(conn: psycopg.Connection, url: str, eli: str, source: str,
                work: Callable[[], IngestResult]) -> IngestResult:
    """Run one act's ingest as a row of ingest_runs: expected failures become a "failed" result;
    anything else (a bug, Ctrl-C) marks the run failed and propagates."""
    # The act is committed in a transaction of its own; inside the caller's it would be a savepoint
    # that the caller could still roll back, while ingest_runs already said "new".
    require_no_transaction(conn, "ingest")
    t0 = time.perf_counter()
    run_id = store.start_run(url, eli, source)
    try:
        result = work()
    except (FetchError, ParseError, IngestError, OSError, ValueError) as exc:
        conn.rollback()
        result = IngestResult(act=eli, status="failed", error=one_line(exc))
    except BaseException as exc:
        _abandon(conn, url, run_id, exc)
        raise
    result.seconds = time.perf_counter() - t0
    store.finish_run(url, run_id, result.status, message=result.error, stats=result.to_dict(),
                     version_id=version_id(conn, result.act, result.version))
    return result


def version_id(conn: psycopg.Connection, eli: str, version_no: int | None) -> int | None:
    """The stored version ``version_no`` of ``eli`` (None: none such, or no version given)."""
    if version_no is None:
        return None
    row = conn.execute("SELECT version_id FROM act_versions WHERE eli = %s AND version_no = %s",
                       (eli, version_no)).fetchone()
    conn.rollback()
    return row[0] if row else None


def _abandon(conn: psycopg.Connection, url: str, run_id: int, exc: BaseException) -> None:
    """An unexpected error or an interrupt: the run is marked failed (not left "running"), then it propagates."""
    with contextlib.suppress(Exception):
        conn.rollback()
    with contextlib.suppress(Exception):
        store.finish_run(url, run_id, "failed", message=one_line(exc))


# --- a whole `pipeline ingest` call ------------------------------------------------------------

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


def run(
    *,
    acts: Sequence[str] = (),
    paths: Sequence[Path] = (),
    all_acts: bool = False,
    source: Path | None = None,
    offline: bool = False,
    archive_dir: Path | None = None,
    embed: bool = True,
    chunk_chars: int | None = None,
    latest: bool = False,
    jobs: int | None = None,
    on_start: Callable[[int, int, str], None] | None = None,
    on_result: Callable[[IngestResult], None] | None = None,
    progress: Callable[[str], None] | None = None,
    embed_progress: ProgressFactory | None = None,
) -> IngestReport:
    """Ingest acts by id (from the API, ``source`` or the archive) or local files, then embed what is new.

    ``latest``: each act id is resolved through the API to its newest consolidated text, which is
    ingested as a version of the same act (pipeline.indexing.sync.ingest_latest).
    ``jobs``: processes parsing the next acts ahead when their texts are on disk (``source`` or
    ``offline``; default: the CPUs, at most 4).
    ``on_start(i, n, what)`` and ``on_result(result)`` frame each act; ``progress`` gets fetch steps.
    An act that fails is a "failed" result, the others still run; bad arguments raise UsageError.
    """
    cfg = settings()
    acts = tuple(acts)
    if source is not None and not source.is_dir():
        raise UsageError(f"{source} is not a folder", param="--source")
    skipped: list[IngestResult] = []
    if all_acts:
        if source is None and not offline:
            raise UsageError("--all needs --source DIR (an archive in the ELI mirror layout) or --offline (dane/)")
        root = source if source is not None else archive_dir or cfg.archive_dir
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
    files = expand_paths(paths)

    from pipeline.storage.schema import open_current  # alembic loads only when a command needs the database

    url, conn = open_current()
    try:
        embedder = embedder_from_env() if embed else None
        # Without embedding now, the texts still join the configured model's queue: `pipeline embed`
        # drains it later, and status, doctor and search can see what has no vector yet.
        model = embedder.name if embedder else configured_model()
        sizes = {"max_chars": chunk_chars or cfg.chunk_chars, "overlap": cfg.chunk_overlap}
        results: list[IngestResult] = []
        by_id = [] if paths else list(acts)
        total = len(files) + len(by_id)
        client = EliClient() if by_id and source is None and not offline else None
        on_disk = None  # texts read from disk can be parsed ahead; downloads cannot
        if not latest and (source is not None or offline):
            on_disk = source if source is not None else archive_dir or cfg.archive_dir
        ahead = ParseAhead(on_disk, by_id if on_disk else (), default_jobs() if jobs is None else jobs,
                           require_sums=source is None)
        try:
            for i, act in enumerate(by_id, start=1):
                if on_start:
                    on_start(i, total, act)
                ahead.wait(act)
                if latest:
                    from pipeline.indexing.sync import ingest_latest

                    results.append(ingest_latest(conn, url, act, client=client, model=model,
                                                 archive_dir=archive_dir or cfg.archive_dir, progress=progress, **sizes))
                else:
                    results.append(ingest_act(conn, url, act, model=model, archive_dir=archive_dir or cfg.archive_dir,
                                              source_dir=source, offline=offline, client=client, progress=progress,
                                              **sizes))
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
    finally:
        conn.close()
    for r in skipped:
        if on_result:
            on_result(r)
    return IngestReport(results + skipped, waiting)
