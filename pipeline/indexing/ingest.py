"""Ingest one act: fetch (or read) its record and text, parse, prepare (chunks, legal context) and store
it as a version, each act logged as a row of ``ingest_runs``.

An :class:`Ingestion` holds what the acts of one ingest call share (pipeline.indexing.batch runs it for
``pipeline ingest``, pipeline.indexing.latest and .sync for ``--latest`` and ``pipeline sync``).
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

from pipeline.core.act_id import ActId, act_id_from_path, parse_act_id
from pipeline.core.errors import IngestError, one_line
from pipeline.sources.chunk import ChunkSizes, text_sha256
from pipeline.sources.fetch import EliClient, FetchError, fetch_act
from pipeline.sources.parse import ParsedAct, ParseError
from pipeline.sources.parse.read import parse_text, sniff_format
from pipeline.sources.prepare import prepare
from pipeline.sources.record import EliRecord
from pipeline.storage import legal_time, store
from pipeline.storage.db import require_no_transaction
from pipeline.storage.runs import RunLog


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


def local_record(path: Path, act_id: ActId, parsed: ParsedAct) -> EliRecord:
    """meta.json beside the file when there is one (mirror layout) and it is the act's, else a record
    made up for the file."""
    beside = path.parent / "meta.json"
    if beside.is_file():
        try:
            meta = json.loads(beside.read_text(encoding="utf-8"))
            if isinstance(meta, dict) and meta.get("ELI") == str(act_id):
                return EliRecord.read(meta, act_id)
        except ValueError:
            pass
    return EliRecord.for_local_file(act_id, parsed.title, path.name)


@dataclass
class Ingestion:
    """What the acts of one ingest call share: the connection their texts are stored on (no transaction
    open: each act commits its own), the run log, the embedding model whose queue gets the new texts
    (None: queued for none; `pipeline embed` queues what lacks a vector when it starts), where raw
    responses are archived, the chunk sizes, the ELI client (None: none needed, or one per fetch), and
    where fetch steps are told."""

    conn: psycopg.Connection
    runs: RunLog
    model: str | None
    archive_dir: Path
    sizes: ChunkSizes = field(default_factory=ChunkSizes)
    client: EliClient | None = None
    progress: Callable[[str], None] | None = None

    def document(self, record: EliRecord, data: bytes, fmt: str, parsed: ParsedAct | None = None) -> IngestResult:
        """Parse (unless given), prepare and store one text; raises ParseError before anything is written."""
        t0 = time.perf_counter()
        parsed = parsed or parse_text(data, fmt)
        if not parsed.articles:
            raise ParseError(f"{record.eli}: no articles found in the {fmt.upper()} text")
        stored = store.store_unchanged(self.conn, record, text_sha256(parsed.articles))
        if stored is None:  # a new text: prepared (chunks, legal context), then written
            text = prepare(record, parsed, source_sha256=hashlib.sha256(data).hexdigest(),
                           max_chars=self.sizes.max_chars, overlap=self.sizes.overlap,
                           stored_under=store.record_in_effect(self.conn, record))
            stored = store.store_version(self.conn, text, model=self.model)
        # The texts whose time this one changes: its act's other texts (the record), the act it introduces.
        legal_time.refresh_act(self.conn, stored.eli, skip=[stored.version_id] if stored.status == "new" else [])
        return IngestResult(
            act=stored.eli, status=stored.status, version=stored.version_no, articles=stored.articles,
            chunks=stored.chunks, changes=stored.changes, queued=stored.queued, source_format=fmt,
            pages=parsed.pages, seconds=time.perf_counter() - t0, warnings=parsed.warnings,
        )

    def act(self, act: str, *, source_dir: Path | None = None, offline: bool = False) -> IngestResult:
        """Fetch an act by ELI id (from the API, ``source_dir`` or, ``offline``, the archive) and ingest
        it. Failures are returned (status "failed") and logged, the act committed in a transaction of its own."""
        try:
            act_id = parse_act_id(act)
        except FetchError as exc:
            return IngestResult(act=act, status="failed", error=str(exc))

        def work() -> IngestResult:
            fetched = fetch_act(act_id, client=self.client, archive_dir=self.archive_dir, offline=offline,
                                source_dir=source_dir, progress=self.progress)
            parsed = parse_text(fetched.text, fetched.format, progress=self.progress, label=str(act_id))
            return self.document(fetched.record, fetched.text, fetched.format, parsed)

        client = self.client.base_url if self.client else "eli"
        source = str(source_dir) if source_dir else ("archive" if offline else client)
        return self._logged(str(act_id), source, work)

    def file(self, path: Path, *, act: str | None = None) -> IngestResult:
        """Ingest a local PDF or HTML file as a text of ``act`` (None: the act its name says)."""
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
            return self.document(local_record(path, act_id, parsed), data, fmt, parsed)

        return self._logged(label, str(path), work)

    def _logged(self, eli: str, source: str, work: Callable[[], IngestResult]) -> IngestResult:
        """Run one act's ingest as a row of ingest_runs: expected failures become a "failed" result;
        anything else (a bug, Ctrl-C) marks the run failed and propagates."""
        # The act is committed in a transaction of its own; inside the caller's it would be a savepoint
        # that the caller could still roll back, while ingest_runs already said "new".
        require_no_transaction(self.conn, "ingest")
        t0 = time.perf_counter()
        run_id = self.runs.start(eli, source)
        try:
            result = work()
        except (FetchError, ParseError, IngestError, OSError, ValueError) as exc:
            self.conn.rollback()
            result = IngestResult(act=eli, status="failed", error=one_line(exc))
        except BaseException as exc:
            self._abandon(run_id, exc)
            raise
        result.seconds = time.perf_counter() - t0
        self.runs.finish(run_id, result.status, message=result.error, stats=result.to_dict(),
                         version_id=version_id(self.conn, result.act, result.version))
        return result

    def _abandon(self, run_id: int, exc: BaseException) -> None:
        """An unexpected error or an interrupt: the run is marked failed (not left "running"), then it propagates."""
        with contextlib.suppress(Exception):
            self.conn.rollback()
        with contextlib.suppress(Exception):
            self.runs.finish(run_id, "failed", message=one_line(exc))


def version_id(conn: psycopg.Connection, eli: str, version_no: int | None) -> int | None:
    """The stored version ``version_no`` of ``eli`` (None: none such, or no version given)."""
    if version_no is None:
        return None
    row = conn.execute("SELECT version_id FROM act_versions WHERE eli = %s AND version_no = %s",
                       (eli, version_no)).fetchone()
    conn.rollback()
    return row[0] if row else None
