"""An act's newest consolidated text: find it through the ELI API, ingest it as the next version.

``ingest_latest`` is ``pipeline ingest --latest``; ``pipeline sync`` resolves with the same rule.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from pipeline.core.act_id import ActId, parse_act_id
from pipeline.core.errors import FetchError, one_line
from pipeline.indexing.ingest import IngestResult, ingest_act
from pipeline.sources.fetch import EliClient
from pipeline.storage import currency, store

CONSOLIDATED_TEXTS = "Inf. o tekście jednolitym"  # on a base act: its consolidated texts
NOT_LOOKED_FOR = "newer consolidated texts not looked for: "  # the act's own text is still dealt with



@dataclass(frozen=True)
class Resolution:
    requested: str
    base: str  # the base act ("Tekst jednolity dla aktu"), or the act itself
    newest: str  # the newest consolidated text of the base act; the act itself when it has none
    via: str  # "references" (the base act's record) | "search" (/acts/search) | "none"


def _ids(refs: list[dict]) -> list[ActId]:
    found = []
    for ref in refs:
        try:
            found.append(parse_act_id(str(ref["id"])))
        except FetchError:
            continue  # an id of another register (e.g. MP only via search) is not a text we can use
    return found


def _short_title(title: str) -> str:
    """'Ustawa z dnia 26 czerwca 1974 r. Kodeks pracy.' -> 'Kodeks pracy' (what t.j. titles repeat)."""
    short = re.sub(r"^\s*\w+\s+z\s+dnia\s+\d{1,2}\s+\w+\s+\d{4}\s*r\.\s*", "", title or "")
    return short.strip().rstrip(".").strip()


def resolve_newest(client: EliClient, act: str, *, meta: dict | None = None) -> Resolution:
    """The newest consolidated text of ``act``'s base act: from the base act's "Inf. o tekście
    jednolitym", else from /acts/search by its title (records whose "Tekst jednolity dla aktu" is it)."""
    aid = parse_act_id(act)
    meta = meta if meta is not None else client.meta(aid)
    base = store.base_eli(meta)
    base_meta = meta if base == str(aid) else client.meta(base)
    candidates, via = _ids(currency._refs(base_meta, CONSOLIDATED_TEXTS)), "references"
    if not candidates and (title := _short_title(str(base_meta.get("title") or ""))):
        found = client.search(title=title, type="Obwieszczenie", publisher=parse_act_id(base).publisher)
        records = [r for r in found["items"] if isinstance(r, dict) and r.get("ELI")]
        candidates, via = [parse_act_id(str(r["ELI"])) for r in records if store.base_eli(r) == base], "search"
    if not candidates:
        return Resolution(str(aid), base, str(aid), "none")
    return Resolution(str(aid), base, str(newest_of(candidates)), via)


def newest_of(candidates: list[ActId]) -> ActId:
    """The newest of one act's consolidated texts (pipeline find uses it on those a search found)."""
    # Consolidated texts are numbered in the order of publication: the highest is the newest.
    return max(candidates)


def ingest_latest(
    conn: psycopg.Connection,
    url: str,
    act: str,
    *,
    client: EliClient,
    model: str | None,
    archive_dir: Path,
    max_chars: int = 1200,
    overlap: int = 200,
    progress: Callable[[str], None] | None = None,
) -> IngestResult:
    """Ingest the newest consolidated text of ``act`` (a base act or any of its consolidated texts)
    as the next version of the base act; ``resolved_from`` says what was asked for. When the act's
    own record is there but a newer text cannot be looked for (its base act's record or /acts/search
    missing), the act itself is ingested with a warning, as sync checks it."""
    try:
        meta = client.meta(act)
    except FetchError as exc:  # a malformed id too (InvalidActId)
        return IngestResult(act=act, status="failed", error=one_line(exc))
    unresolved: FetchError | None = None
    try:
        found = resolve_newest(client, act, meta=meta)
    except FetchError as exc:
        eli = str(parse_act_id(act))
        found, unresolved = Resolution(eli, store.base_eli(meta), eli, "none"), exc
    if progress and found.newest != found.requested:
        progress(f"{found.requested}: newest consolidated text is {found.newest} (via {found.via})")
    result = ingest_act(conn, url, found.newest, model=model, archive_dir=archive_dir, client=client,
                        max_chars=max_chars, overlap=overlap, progress=progress)
    if found.newest != found.requested:
        result.resolved_from = found.requested
    if unresolved is not None and result.status != "failed":
        result.warnings.append(f"{NOT_LOOKED_FOR}{one_line(unresolved)}; {found.requested} ingested as named")
    return result
