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
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psycopg

from pipeline.core.act_id import ActId, act_dir, act_id_from_path, parse_act_id
from pipeline.core.errors import ActNotInApi, IngestError, one_line
from pipeline.sources.chunk import ChunkSizes, text_sha256
from pipeline.sources.fetch import SUMS_FILE, EliClient, FetchError, fetch_act, has_text
from pipeline.sources.parse import ParsedAct, ParseError
from pipeline.sources.parse.read import parse_text, sniff_format
from pipeline.sources.prepare import prepare
from pipeline.sources.record import EliRecord
from pipeline.storage import store
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
    # Fetched because it amended these acts after their texts (their records list it); [] for an act asked for.
    amending_of: list[str] = field(default_factory=list)
    # On an act asked for: each act its record lists as amending its text after it, and what became of it
    # here: the fetched act's status (new | unchanged | failed), STORED or MISSING.
    amending_acts: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


STORED = "stored"  # an amending act stored before: not fetched again
MISSING = "missing"  # an amending act the API, the mirror or the archive does not have (a warning)


def amending_acts_after(record: EliRecord) -> list[str]:
    """The acts that amended the text of ``record`` after it, by the record's own lists, oldest first: a
    consolidated text's "Nowelizacje po tekście jednolitym"; any other text's "Akty zmieniające" whose
    change takes effect after the text's date (each of them when the text has no date: none can be ruled
    out). Empty when the record lists none (the mirror's rebuilt records list no relations)."""
    return [a.eli for a in record.amendments_after_text() or []]


@dataclass
class AmendingFetch:
    """What fetching the amending acts of some stored texts did (:meth:`Ingestion.amending_acts`)."""

    results: list[IngestResult] = field(default_factory=list)  # the acts fetched, each with ``amending_of``
    listed: dict[str, dict[str, str]] = field(default_factory=dict)  # act -> {amending act: what became of it}
    warnings: dict[str, list[str]] = field(default_factory=dict)  # act -> the amending acts not to be had


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
        return IngestResult(
            act=stored.eli, status=stored.status, version=stored.version_no, articles=stored.articles,
            chunks=stored.chunks, changes=stored.changes, queued=stored.queued, source_format=fmt,
            pages=parsed.pages, seconds=time.perf_counter() - t0, warnings=parsed.warnings,
        )

    def act(self, act: str, *, source_dir: Path | None = None, offline: bool = False, raw_meta: bytes | None = None,
            amending_of: Sequence[str] = ()) -> IngestResult:
        """Fetch an act by ELI id (from the API, ``source_dir`` or, ``offline``, the archive) and ingest
        it. Failures are returned (status "failed") and logged, the act committed in a transaction of its own.
        ``raw_meta``: its record, already downloaded; ``amending_of``: the acts it is fetched as amending
        (logged with the run: sync tells by it an act stored only as an amending act)."""
        try:
            act_id = parse_act_id(act)
        except FetchError as exc:
            return IngestResult(act=act, status="failed", error=str(exc), amending_of=list(amending_of))

        def work() -> IngestResult:
            fetched = fetch_act(act_id, client=self.client, archive_dir=self.archive_dir, offline=offline,
                                source_dir=source_dir, progress=self.progress, raw_meta=raw_meta)
            parsed = parse_text(fetched.text, fetched.format, progress=self.progress, label=str(act_id))
            stored = self.document(fetched.record, fetched.text, fetched.format, parsed)
            stored.amending_of = list(amending_of)
            return stored

        client = self.client.base_url if self.client else "eli"
        source = str(source_dir) if source_dir else ("archive" if offline else client)
        result = self._logged(str(act_id), source, work)
        result.amending_of = list(amending_of)
        return result

    # --- the acts that amended a stored text after it ----------------------------------------------

    def amending_acts(self, acts: Sequence[str], *, source_dir: Path | None = None, offline: bool = False,
                      started: Callable[[int, int, str], None] | None = None,
                      finished: Callable[[IngestResult], None] | None = None,
                      warn: Callable[[str], None] | None = None) -> AmendingFetch:
        """Fetch and store the acts that amended the stored texts ``acts`` after them, as their stored
        records list them (:func:`amending_acts_after`), from where the texts came (the API, ``source_dir``
        or, ``offline``, the archive). Only these: the amending acts of an amending act are not fetched.
        An act stored already is not fetched again (the changes it holds are resolved when read, so a stored
        amending act already updates every stored target); one the source lacks is a ``warn`` line, not a
        failure. ``started``/``finished`` hear of each act fetched, as an ingest's acts are told."""
        done = AmendingFetch()
        lists: dict[str, list[str]] = {}  # act -> the amending acts its stored record lists after its text
        for act in dict.fromkeys(acts):
            record = self._stored_record(act)
            lists[act] = []
            for eli in amending_acts_after(record) if record is not None else ():
                with contextlib.suppress(FetchError):  # an id that is no act id: _available says so
                    eli = str(parse_act_id(eli))
                if eli != act:
                    lists[act].append(eli)
        stored = store.stored_texts(self.conn, sorted({e for listed in lists.values() for e in listed}))
        self.conn.rollback()
        wanted: dict[str, list[str]] = {}  # amending act -> the acts it amends, in the order listed
        for act, listed in lists.items():
            told = done.listed.setdefault(act, {})
            for eli in listed:
                if eli in stored:
                    told[eli] = STORED
                else:
                    wanted.setdefault(eli, []).append(act)
        for i, (eli, of) in enumerate(wanted.items(), start=1):
            missing, raw_meta, failed = self._available(eli, source_dir, offline)
            if missing is not None:
                line = f"amending act {eli} of {', '.join(of)} not fetched: {missing}"
                for act in of:
                    done.listed[act][eli] = MISSING
                    done.warnings.setdefault(act, []).append(line)
                (warn or _quiet)(line)
                continue
            (started or _quiet)(i, len(wanted), f"{eli} (amending {', '.join(of)})")
            result = failed or self.act(eli, source_dir=source_dir, offline=offline, raw_meta=raw_meta,
                                        amending_of=of)
            result.amending_of = list(of)
            for act in of:
                done.listed[act][eli] = result.status
            done.results.append(result)
            (finished or _quiet)(result)
        return done

    def _stored_record(self, eli: str) -> EliRecord | None:
        """The record stored with the text ``eli`` (None: not stored)."""
        row = self.conn.execute("SELECT meta FROM acts WHERE eli = %s", (eli,)).fetchone()
        self.conn.rollback()
        return EliRecord.read(row[0], eli) if row and isinstance(row[0], dict) else None

    def _available(self, eli: str, source_dir: Path | None,
                   offline: bool) -> tuple[str | None, bytes | None, IngestResult | None]:
        """Whether the source has a text of ``eli``: (why not, None, None) when it lacks it; else (None, the
        record as downloaded from the API (None from a folder), None); or (None, None, the failure) when the
        API could not be asked. Asked before a run is logged: a listed act that is not there is no failed run."""
        try:
            aid = parse_act_id(eli)
        except FetchError as exc:  # a relation to an id of another register
            return one_line(exc), None, None
        if source_dir is not None or offline:
            root = Path(source_dir) if source_dir is not None else self.archive_dir
            if not (act_dir(root, aid) / "meta.json").is_file():
                return f"not in {root}", None, None
            if not has_text(root, aid):
                return f"no text in {root} (metadata only)", None, None
            if offline and not (act_dir(root, aid) / SUMS_FILE).is_file():
                return f"not in the archive {root} (incomplete); run without --offline to download it", None, None
            return None, None, None
        client = self.client or EliClient()
        try:
            raw = client.meta_bytes(aid)
            record = EliRecord.read(json.loads(raw), aid)
        except ActNotInApi:
            return "not in the ELI API", None, None
        except (FetchError, ValueError) as exc:
            return None, None, IngestResult(act=str(aid), status="failed", error=one_line(exc))
        finally:
            if client is not self.client:
                client.close()
        if not record.has_text:
            return "no text in the ELI API (metadata only)", None, None
        return None, raw, None

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


def _quiet(*_: object) -> None:
    pass


def version_id(conn: psycopg.Connection, eli: str, version_no: int | None) -> int | None:
    """The stored version ``version_no`` of ``eli`` (None: none such, or no version given)."""
    if version_no is None:
        return None
    row = conn.execute("SELECT version_id FROM act_versions WHERE eli = %s AND version_no = %s",
                       (eli, version_no)).fetchone()
    conn.rollback()
    return row[0] if row else None
