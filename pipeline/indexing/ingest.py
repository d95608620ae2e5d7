"""Ingest: fetch (or read) an act, parse it, store it as a version, optionally embed what is new.

This is the library API behind ``pipeline ingest`` (:func:`run`); the CLI only adds progress and output.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psycopg

from pipeline.sources import chunk as chunking
from pipeline.storage import store
from pipeline.core.errors import IngestError, one_line
from pipeline.core.act_id import ActId, act_id_from_path, parse_act_id
from pipeline.storage.db import require_no_transaction
from pipeline.sources.fetch import EliClient, FetchError, fetch_act
from pipeline.sources.parse import ParsedAct, ParseError
from pipeline.sources.parse.read import parse_text, sniff_format


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
