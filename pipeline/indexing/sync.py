"""Keep stored acts current: re-check every stored act against the ELI API, ingest what changed.

``sync`` is ``pipeline sync``. It asks the ELI API through the same polite client as ingest (rate
limit, retries), resolves a consolidated text to its base act's newest one by pipeline.indexing.latest's
rule, and downloads a text only when the act's record changed or a newer consolidated text appeared.
Then, as ingest does, it fetches the acts the record lists as amending the current text after it that
are not stored yet (new ones listed since, or one missing before), except for an act stored only as an
amending act: the amending acts of amending acts are not fetched.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import socket
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pipeline.core.errors import ActNotInApi, IngestError, SyncBusy, one_line
from pipeline.indexing.embed import ProgressFactory, drain_queue
from pipeline.indexing.ingest import Ingestion, IngestResult, version_id
from pipeline.indexing.latest import NOT_LOOKED_FOR, resolve_newest
from pipeline.embedders import Embedder
from pipeline.sources.fetch import FetchError, fetch_act, parse_act_id
from pipeline.sources.parse import ParseError
from pipeline.sources.record import EliRecord
from pipeline.storage import currency, store
from pipeline.storage.db import one_row

__all__ = ["SyncBusy", "SyncReport", "SyncResult", "embed_new_versions", "sync"]


# --- sync ---------------------------------------------------------------------------------------

@dataclass
class SyncResult:
    act: str  # the act that held its base act's current text when the check began
    status: str  # unchanged | new version | amended since | not in force | failed | skipped
    base: str = ""
    current: str | None = None  # the act holding the current text afterwards (a newer t.j. or itself)
    version: int | None = None
    metadata_changed: bool = False
    new_amendments: list[str] = field(default_factory=list)  # amendments listed since the last check
    currency: dict[str, Any] | None = None  # of ``current``, after the check
    error: str | None = None
    warning: str | None = None  # what the check could not do, the rest being done (a missing base record)
    # The acts the record lists as amending the current text after it, and what became of each: the
    # status of the one fetched now (new | unchanged | failed), "stored" (before), "missing" (not in the API).
    amending_acts: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One line for a log: ``DU/2025/277  amended since  …``."""
        if self.status == "failed":
            return f"{self.act}  failed: {self.error}"
        if self.status == "skipped":
            return f"{self.act}  skipped: {self.error}"
        text = f"{self.act}  {self.status}"
        if self.current and self.current != self.act:
            text += f" -> {self.current} (version {self.version})"
        if self.new_amendments:
            text += f"; new since last check: {', '.join(self.new_amendments)}"
        if fetched := [eli for eli, status in self.amending_acts.items() if status == "new"]:
            text += f"; amending acts fetched: {', '.join(fetched)}"
        if self.currency:
            text += f"; {self.currency['note']}"
        if self.warning:
            text += f"; warning: {self.warning}"
        return text


@dataclass
class SyncReport:
    sync_id: int
    resumed: int | None  # the interrupted sync this one continued
    results: list[SyncResult]

    @property
    def failed(self) -> int:
        return sum(r.status == "failed" for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for r in self.results:
            counts[r.status] = counts.get(r.status, 0) + 1
        return {"sync_id": self.sync_id, "resumed": self.resumed, "counts": counts,
                "acts": [r.to_dict() for r in self.results]}


def sync(ingestion: Ingestion, *, restart: bool = False, on_result: Callable[[SyncResult], None] | None = None,
         amending_acts: bool = True) -> SyncReport:
    """Re-check the current text of every stored act against the API; ingest what changed; with
    ``amending_acts``, fetch the acts listed as amending a current text after it that are not stored.

    One sync at a time (a session advisory lock on the run log's connection; a second one raises
    SyncBusy). A sync that died midway is resumed: acts it already checked are skipped (unless ``restart``).
    """
    runs, conn = ingestion.runs, ingestion.conn
    if not runs.try_sync_lock():
        raise SyncBusy("another pipeline sync is running; try again when it has finished")
    try:
        sync_id, resumed, since = _start(runs.conn, restart)
        acts = conn.execute(
            "SELECT c.eli, c.base_eli, a.meta, c.checked_at FROM current_acts c JOIN acts a USING (eli) "
            "ORDER BY a.publisher, a.year, a.pos"
        ).fetchall()
        conn.rollback()
        results: list[SyncResult] = []
        try:
            for eli, base, meta, checked in acts:
                if since is not None and checked is not None and checked >= since:
                    result = SyncResult(eli, "skipped", base, error=f"checked at {checked:%Y-%m-%d %H:%M} "
                                                                     f"by interrupted sync {resumed}")
                else:
                    result = _sync_act(ingestion, eli, base, EliRecord.read(meta, eli), amending_acts)
                results.append(result)
                if on_result:
                    on_result(result)
        finally:
            report = SyncReport(sync_id, resumed, results)
            summary = report.to_dict()
            summary.pop("acts")
            # Interrupted (Ctrl-C, a bug): the row stays unfinished, so the next sync resumes it.
            if len(results) == len(acts):
                runs.conn.execute("UPDATE sync_runs SET finished_at = now(), summary = %s WHERE sync_id = %s",
                                  (Jsonb(summary), sync_id))
    finally:
        runs.release_sync_lock()
    return report


def _start(conn: psycopg.Connection, restart: bool) -> tuple[int, int | None, dt.datetime | None]:
    """A new sync_runs row. An unfinished previous run (we hold the lock, so it died) is closed and,
    unless ``restart``, resumed: acts checked since it began (or since the run it resumed) are skipped."""
    previous = conn.execute(
        "SELECT sync_id, started_at, summary->>'since' FROM sync_runs WHERE finished_at IS NULL "
        "ORDER BY sync_id DESC LIMIT 1"
    ).fetchone()
    resumed, since = None, None
    if previous is not None:
        conn.execute("UPDATE sync_runs SET finished_at = now(), summary = summary || %s WHERE sync_id = %s",
                     (Jsonb({"interrupted": True}), previous[0]))
        if not restart:
            resumed = previous[0]
            since = dt.datetime.fromisoformat(previous[2]) if previous[2] else previous[1]
    sync_id = one_row(conn.execute(
        "INSERT INTO sync_runs (resumes, summary, host, pid) VALUES (%s, %s, %s, %s) RETURNING sync_id",
        (resumed, Jsonb({"since": since.isoformat()} if since else {}), socket.gethostname(), os.getpid()),
    ))[0]
    return sync_id, resumed, since


def _sync_act(ingestion: Ingestion, eli: str, base: str, stored: EliRecord, amending_acts: bool) -> SyncResult:
    conn, client, progress = ingestion.conn, ingestion.client, ingestion.progress
    assert client is not None, "sync asks the ELI API"
    result = SyncResult(eli, "unchanged", base, current=eli)
    before = currency.for_acts(conn, [eli]).get(eli)
    # Stored only as an amending act of others: its texts stay so when sync stores them again, and its own
    # amending acts are not fetched (sync after sync would go one level deeper).
    amending_of = _stored_as_amending(conn, eli)
    try:
        try:
            raw = client.meta_bytes(eli)
        except ActNotInApi:
            if not stored.is_local:
                raise
            # Ingested from a local file under an id the API does not publish: nothing to check it
            # against, which is no failure (it would fail every sync, and cron would report it each night).
            result.status, result.error = "skipped", "ingested from a local file; the ELI API does not publish it"
            return result
        record = EliRecord.read(json.loads(raw), eli)
        result.metadata_changed = record.raw != stored.raw
        newest = None
        if base != eli:
            try:
                newest = resolve_newest(client, eli, record=record)
            except FetchError as exc:
                # The act's own record was read, so its currency is checked all the same; only a newer
                # consolidated text cannot be looked for (the mirror lacks DU/1974/141's full record).
                result.warning = NOT_LOOKED_FOR + one_line(exc)
        if newest is not None and parse_act_id(newest.newest) > parse_act_id(eli):
            if progress:
                progress(f"{eli}: newer consolidated text {newest.newest}")
            ingested = ingestion.act(newest.newest, amending_of=amending_of)
            if ingested.status == "failed":
                raise IngestError(f"newer consolidated text {newest.newest}: {ingested.error}")
            store.refresh_act(conn, record)  # the old text's own record now says it expired
            result.current, result.version = newest.newest, ingested.version
            result.status = "new version" if ingested.status == "new" else "unchanged"
        elif result.metadata_changed:
            result.status, result.version = _refresh(ingestion, eli, raw, record, amending_of)
        else:
            conn.execute("UPDATE acts SET checked_at = now() WHERE eli = %s", (eli,))
            conn.commit()
    except (FetchError, ParseError, IngestError, OSError, ValueError) as exc:
        conn.rollback()
        result.status, result.error = "failed", (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return result
    if amending_acts and not amending_of:
        _fetch_amending(ingestion, result)
    now = currency.for_acts(conn, [result.current or eli]).get(result.current or eli)
    conn.rollback()
    if now is not None:
        result.currency = now.to_dict()
        known = {a.eli for a in (before.amended_after or ())} if before else set()
        result.new_amendments = [a.eli for a in (now.amended_after or ()) if a.eli not in known]
        if result.status == "unchanged":
            result.status = "not in force" if now.not_in_force else ("amended since" if now.amended else "unchanged")
    return result


def _stored_as_amending(conn: psycopg.Connection, eli: str) -> list[str]:
    """The acts ``eli`` was fetched as amending, when every run that stored it was such a fetch (else none:
    someone asked for it)."""
    row = conn.execute(
        "SELECT bool_and(jsonb_array_length(COALESCE(stats->'amending_of', '[]')) > 0), "
        "       array_agg(DISTINCT a) FILTER (WHERE a IS NOT NULL) "
        "FROM ingest_runs LEFT JOIN LATERAL jsonb_array_elements_text(COALESCE(stats->'amending_of', '[]')) a ON true "
        "WHERE eli = %s AND status IN ('new', 'unchanged')", (eli,)).fetchone()
    conn.rollback()
    return sorted(row[1] or []) if row and row[0] else []


def _fetch_amending(ingestion: Ingestion, result: SyncResult) -> None:
    """The acts listed as amending the current text after it, fetched from the API when not stored
    (Ingestion.amending_acts); told on the progress lines. One that the API lacks or that fails is a
    warning of this act, not its failure: the next sync tries it again."""
    say = ingestion.progress or (lambda _line: None)

    def finished(fetched: IngestResult) -> None:
        said = f"version {fetched.version}" if fetched.status != "failed" else fetched.error
        say(f"{fetched.act}: {fetched.status} ({said})")

    act = result.current or result.act
    done = ingestion.amending_acts([act], started=lambda _i, _n, what: say(f"amending act {what}"),
                                   finished=finished)
    result.amending_acts = done.listed.get(act, {})
    problems = list(done.warnings.get(act, []))
    problems += [f"amending act {r.act} failed: {r.error}" for r in done.results if r.status == "failed"]
    if problems:
        result.warning = "; ".join(([result.warning] if result.warning else []) + problems)


def _refresh(ingestion: Ingestion, eli: str, raw: bytes, record: EliRecord,
             amending_of: list[str]) -> tuple[str, int | None]:
    """Changed metadata: download the text again; same bytes -> only the record is refreshed (no parse)."""
    conn = ingestion.conn
    fetched = fetch_act(eli, client=ingestion.client, archive_dir=ingestion.archive_dir, progress=ingestion.progress,
                        raw_meta=raw)
    latest = conn.execute("SELECT version_no, source_sha256 FROM act_versions WHERE eli = %s "
                          "ORDER BY version_no DESC LIMIT 1", (eli,)).fetchone()
    conn.rollback()
    if latest and latest[1] == fetched.sha256:
        store.refresh_act(conn, record)
        return "unchanged", latest[0]
    # Another text under the same id (rare: a corrected publication): a full, logged ingest run.
    stored = ingestion.act(eli, amending_of=amending_of)
    if stored.status == "failed":
        raise IngestError(stored.error or f"{eli}: ingest failed")
    return ("new version" if stored.status == "new" else "unchanged"), stored.version


def embed_new_versions(conn: psycopg.Connection, report: SyncReport, embedder: Embedder,
                       progress: ProgressFactory | None = None) -> int:
    """Embed the texts of the versions a sync stored (the amending acts it fetched included), as ingest
    embeds (not a --no-embed backlog)."""
    versions = [v for r in report.results
                if r.status == "new version" and (v := version_id(conn, r.current or r.act, r.version))]
    fetched = sorted({eli for r in report.results for eli, status in r.amending_acts.items() if status == "new"})
    if fetched:
        versions += [row[0] for row in conn.execute(
            "SELECT DISTINCT ON (eli) version_id FROM act_versions WHERE eli = ANY(%s) "
            "ORDER BY eli, version_no DESC", (fetched,)).fetchall()]
    conn.rollback()  # reads only: drain_queue commits batches of its own
    return drain_queue(conn, embedder, progress=progress, versions=versions)
