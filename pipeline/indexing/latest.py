"""An act's newest consolidated text: find it through the ELI API, ingest it as the next version.

``ingest_latest`` is ``pipeline ingest --latest``; ``pipeline sync`` resolves with the same rule.
"""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.core.act_id import ActId, parse_act_id
from pipeline.core.errors import FetchError, one_line
from pipeline.indexing.ingest import Ingestion, IngestResult
from pipeline.sources.fetch import EliClient
from pipeline.sources.record import CONSOLIDATED_TEXTS, EliRecord, Relation, act_name

NOT_LOOKED_FOR = "newer consolidated texts not looked for: "  # the act's own text is still dealt with


@dataclass(frozen=True)
class Resolution:
    requested: str
    base: str  # the base act ("Tekst jednolity dla aktu"), or the act itself
    newest: str  # the newest consolidated text of the base act; the act itself when it has none
    via: str  # "references" (the base act's record) | "search" (/acts/search) | "none"


def _ids(relations: tuple[Relation, ...]) -> list[ActId]:
    found = []
    for r in relations:
        try:
            found.append(parse_act_id(r.eli))
        except FetchError:
            continue  # an id of another register (e.g. MP only via search) is not a text we can use
    return found


def resolve_newest(client: EliClient, act: str, *, record: EliRecord | None = None) -> Resolution:
    """The newest consolidated text of ``act``'s base act: from the base act's "Inf. o tekście
    jednolitym", else from /acts/search by its title (records whose "Tekst jednolity dla aktu" is it)."""
    aid = parse_act_id(act)
    record = record if record is not None else client.record(aid)
    base = record.base_eli
    base_record = record if base == str(aid) else client.record(base)
    candidates, via = _ids(base_record.related(CONSOLIDATED_TEXTS)), "references"
    if not candidates and (title := act_name(base_record.title)):
        found = client.search(title=title, type="Obwieszczenie", publisher=parse_act_id(base).publisher)
        records = [EliRecord.read(r) for r in found["items"] if isinstance(r, dict) and r.get("ELI")]
        candidates, via = [parse_act_id(r.eli) for r in records if r.base_eli == base], "search"
    if not candidates:
        return Resolution(str(aid), base, str(aid), "none")
    return Resolution(str(aid), base, str(newest_of(candidates)), via)


def newest_of(candidates: list[ActId]) -> ActId:
    """The newest of one act's consolidated texts (pipeline find uses it on those a search found)."""
    # Consolidated texts are numbered in the order of publication: the highest is the newest.
    return max(candidates)


def ingest_latest(ingestion: Ingestion, act: str) -> IngestResult:
    """Ingest the newest consolidated text of ``act`` (a base act or any of its consolidated texts)
    as the next version of the base act; ``resolved_from`` says what was asked for. When the act's
    own record is there but a newer text cannot be looked for (its base act's record or /acts/search
    missing), the act itself is ingested with a warning, as sync checks it."""
    client = ingestion.client
    assert client is not None, "--latest asks the ELI API"
    try:
        record = client.record(act)
    except FetchError as exc:  # a malformed id too (InvalidActId)
        return IngestResult(act=act, status="failed", error=one_line(exc))
    unresolved: FetchError | None = None
    try:
        found = resolve_newest(client, act, record=record)
    except FetchError as exc:
        eli = str(parse_act_id(act))
        found, unresolved = Resolution(eli, record.base_eli, eli, "none"), exc
    if ingestion.progress and found.newest != found.requested:
        ingestion.progress(f"{found.requested}: newest consolidated text is {found.newest} (via {found.via})")
    result = ingestion.act(found.newest)
    if found.newest != found.requested:
        result.resolved_from = found.requested
    if unresolved is not None and result.status != "failed":
        result.warnings.append(f"{NOT_LOOKED_FOR}{one_line(unresolved)}; {found.requested} ingested as named")
    return result
