"""Find acts by title: ask /acts/search (or the stored acts), list one entry per act with its newest
consolidated text, resolve a title to the one act to ingest, and plan a bulk ingest.

A consolidated text (an Obwieszczenie "Tekst jednolity dla aktu" X) is listed under its base act X:
the user asks for "Kodeks pracy", not for the Marshal's announcement of 2025. Which text is the newest
is pipeline.indexing.latest's rule (resolve_newest, newest_of), not a second one.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import psycopg

from pipeline.core.act_id import parse_act_id
from pipeline.core.errors import ActNotInApi, AmbiguousTitle, FetchError, NoActFound, UsageError
from pipeline.core.limits import FIND_PUBLISHERS, MAX_BULK_RECORDS, SEARCH_PAGE
from pipeline.indexing.latest import newest_of, resolve_newest
from pipeline.sources.fetch import EliClient
from pipeline.sources.record import CONSOLIDATED_TEXTS, EliRecord, act_name, consolidated_subject
from pipeline.storage.store import stored_texts

HAS_CONSOLIDATED = "akt posiada tekst jednolity"  # a base act's status once a consolidated text exists


@dataclass(frozen=True)
class ActQuery:
    """What to look for: words of the title, and the API's filters."""

    title: str = ""
    act_type: str | None = None  # "Ustawa", "Rozporządzenie", "Obwieszczenie" … (other/types.json)
    in_force: bool = False
    year: int | None = None
    publisher: str = "DU"

    def check(self) -> ActQuery:
        title = " ".join(self.title.split())
        if not title and self.year is None:
            raise UsageError("say what to look for: words of the title, or --year", param="TITLE")
        if "\x00" in title or len(title) > 300:
            raise UsageError("a title is at most 300 characters, without NUL", param="TITLE")
        if self.publisher not in FIND_PUBLISHERS:
            raise UsageError(f"publisher must be one of {', '.join(FIND_PUBLISHERS)}", param="--publisher")
        if self.year is not None and not 1918 <= self.year <= 2100:
            raise UsageError("year must be from 1918 to 2100", param="--year")
        return ActQuery(title, (self.act_type or "").strip() or None, self.in_force, self.year, self.publisher)

    def params(self) -> dict[str, str | int]:
        """/acts/search's parameters (API.md)."""
        found: dict[str, str | int] = {"publisher": self.publisher}
        if self.title:
            found["title"] = self.title
        if self.act_type:
            found["type"] = self.act_type
        if self.in_force:
            found["inForce"] = 1
        if self.year is not None:
            found["year"] = self.year
        return found

    def describe(self) -> str:
        said = [f'"{self.title}" in the title'] if self.title else []
        said += [f"type {self.act_type}"] if self.act_type else []
        said += ["in force"] if self.in_force else []
        said += [f"of {self.year}"] if self.year is not None else []
        return ", ".join(said)


@dataclass
class ActFound:
    """One act as found: the base act, with the consolidated texts of it that the search matched."""

    act: str  # the base act (or the act itself)
    title: str | None
    act_type: str | None
    status: str | None
    in_force: str | None
    announcement_date: str | None
    display_address: str | None
    has_text: bool | None  # its record lists a text (null: its record is not in the API)
    newest: str | None = None  # its newest consolidated text (null: it has none)
    matched: list[str] = field(default_factory=list)  # the records of the answer listed under it
    stored: bool = False
    stored_act: str | None = None  # the stored text that search and show use now
    record: EliRecord | None = field(default=None, repr=False)  # the act's own record, when known
    texts: dict[str, EliRecord] = field(default_factory=dict, repr=False)  # the matched records by id

    def to_dict(self) -> dict:
        found = asdict(self)
        del found["record"], found["texts"]
        return found


@dataclass
class Catalogue:
    """pipeline find's answer: the acts in the API's order (an exact title first)."""

    query: ActQuery
    source: str  # "api" | "stored"
    total: int  # records that match (the API's totalCount), before they are grouped into acts
    acts: list[ActFound]
    warnings: list[str] = field(default_factory=list)


@dataclass
class Pick:
    """One act of an ingest by title or search: what would be fetched, or why not."""

    act: str  # the act found
    title: str | None
    target: str  # what is ingested: the newest consolidated text, or the act itself
    skip: str | None = None  # why it is not fetched (already stored, metadata only …)

    def to_dict(self) -> dict:
        return asdict(self)


# --- the API ----------------------------------------------------------------------------------------

def search_records(client: EliClient, query: ActQuery, *, most: int,
                   progress: Callable[[str], None] | None = None) -> tuple[list[EliRecord], int]:
    """The records /acts/search answers, page by page up to ``most``; and how many match in all."""
    records: list[EliRecord] = []
    total = 0
    while len(records) < most:
        page = client.search(**query.params(), limit=min(SEARCH_PAGE, most - len(records)), offset=len(records))
        items = [EliRecord.read(r) for r in page["items"] if isinstance(r, dict) and r.get("ELI")]
        total = int(page.get("totalCount") or len(items))
        records += items
        if progress and total > SEARCH_PAGE:
            progress(f"search: {len(records)} of {total} records")
        if not page["items"] or len(records) >= total:
            break
    return records, total


def group(records: list[EliRecord]) -> list[ActFound]:
    """One entry per base act, in the order of the records; no request."""
    by_base: dict[str, ActFound] = {}
    for r in records:
        try:
            eli, base = str(parse_act_id(r.eli)), str(parse_act_id(r.base_eli))
        except FetchError:
            continue
        found = by_base.get(base)
        if found is None:
            found = by_base[base] = ActFound(base, None, None, None, None, None, None, None)
        found.matched.append(eli)
        found.texts[eli] = r
        if eli == base:
            _describe(found, r)
        elif found.title is None:
            found.title = consolidated_subject(r.title)
    return list(by_base.values())


def _describe(found: ActFound, record: EliRecord) -> None:
    found.record = record
    found.title = record.title or found.title
    found.act_type, found.status, found.in_force = record.act_type, record.status, record.in_force
    announced = record.dates.announced
    found.announcement_date = announced.isoformat() if announced else None
    found.display_address = record.display_address
    found.has_text = record.has_text


def resolve(client: EliClient, found: ActFound) -> None:
    """Name the act's newest consolidated text (``found.newest``), when it has any: resolve_newest on its
    record; when the API has no record of it, the newest of the consolidated texts the search matched."""
    texts = [parse_act_id(e) for e in found.matched if e != found.act]
    record = found.record
    has_some = texts or (record is not None and (record.status == HAS_CONSOLIDATED
                                                 or record.related(CONSOLIDATED_TEXTS)))
    if not has_some:
        return  # an amending act, a regulation …: no consolidated text to look for
    if record is None:
        try:
            _describe(found, client.record(found.act))
        except ActNotInApi:
            pass  # e.g. an old base act whose record the API lacks: its texts found are all we know
    if found.record is not None:
        newest = resolve_newest(client, found.act, record=found.record)
        if newest.via != "none":
            found.newest = newest.newest
            return
    found.newest = str(newest_of(texts)) if texts else None


def name_key(title: str | None) -> str:
    """A title as compared with what the user typed: no 'Ustawa z dnia …', case, dashes or spaces."""
    return " ".join(act_name(title).strip(" -–.").casefold().split())


def exact_first(acts: list[ActFound], title: str) -> list[ActFound]:
    key = name_key(title)
    return sorted(acts, key=lambda a: name_key(a.title) != key) if key else acts


# --- the database -----------------------------------------------------------------------------------

def mark_stored(conn: psycopg.Connection, acts: list[ActFound]) -> None:
    """``stored``/``stored_act`` of each act: which of its texts search and show use now."""
    if not acts:
        return
    rows = conn.execute("SELECT base_eli, eli FROM current_versions WHERE base_eli = ANY(%s)",
                        ([a.act for a in acts],)).fetchall()
    current: dict[str, str] = dict(rows)
    for a in acts:
        a.stored, a.stored_act = a.act in current, current.get(a.act)


def find_stored(conn: psycopg.Connection, query: ActQuery, *, limit: int) -> Catalogue:
    """--offline: the stored acts (their current texts) whose title has every word, with the filters."""
    rows = conn.execute(
        """SELECT c.base_eli, c.eli, c.title, c.act_type, c.status, a.in_force, a.announcement_date,
                  a.meta ->> 'displayAddress', a.year, a.publisher
           FROM current_versions c JOIN acts a USING (eli) ORDER BY a.year, a.pos""").fetchall()
    words = query.title.casefold().split()
    acts = []
    for base, eli, title, kind, status, in_force, announced, address, year, publisher in rows:
        if (all(w in (title or "").casefold() for w in words) and publisher == query.publisher
                and (not query.act_type or (kind or "").casefold() == query.act_type.casefold())
                and (not query.in_force or in_force == "IN_FORCE") and query.year in (None, year)):
            if eli != base:  # a consolidated text stored: listed as its act, whose own record is not stored
                title, kind, status, announced, address = consolidated_subject(title or "") or title, None, None, None, None
            acts.append(ActFound(base, title, kind, status, in_force, announced and announced.isoformat(), address,
                                 True, matched=[eli], stored=True, stored_act=eli))
    return Catalogue(query, "stored", len(acts), exact_first(acts, query.title)[:limit])


# --- find, and what to ingest -----------------------------------------------------------------------

def find_in_api(conn: psycopg.Connection, client: EliClient, query: ActQuery, *, limit: int) -> Catalogue:
    """pipeline find: the first ``limit`` acts matching, each with its newest consolidated text."""
    records, total = search_records(client, query, most=SEARCH_PAGE)
    acts = exact_first(group(records), query.title)[:limit]
    for a in acts:
        resolve(client, a)
    mark_stored(conn, acts)
    warnings = []
    if total > len(records):
        warnings.append(f"the API has {total} records that match; the first {len(records)} were looked at: "
                        "narrow the search (--type, --in-force, --year, more words)")
    return Catalogue(query, "api", total, acts, warnings)


def one_act(client: EliClient, query: ActQuery) -> ActFound:
    """The one act a title names: the only act found, or the one whose title is exactly it.
    NoActFound, or AmbiguousTitle naming the candidates."""
    records, _ = search_records(client, query, most=SEARCH_PAGE)
    acts = group(records)
    if not acts:
        raise NoActFound(f"no act in the ELI API has {query.describe()}; try fewer words, or `pipeline find`")
    exact = [a for a in acts if name_key(a.title) == name_key(query.title)]
    if len(exact) == 1 or len(acts) == 1:
        return (exact or acts)[0]
    some = exact or acts
    named = "; ".join(f"{a.act} {_cut(name_key(a.title) or '?')}" for a in some[:5])
    more = f" and {len(some) - 5} more" if len(some) > 5 else ""
    raise AmbiguousTitle(f'"{query.title}" matches {len(some)} acts: {named}{more}; give the whole title, '
                         "--type/--year, or --act ID (pipeline find lists them)")


def _cut(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def pick(found: ActFound, *, original: bool) -> Pick:
    """The text to ingest for ``found``: its newest consolidated text, or (``original``) the act as
    enacted; ``skip`` says why nothing is to be fetched when the records already tell."""
    target = found.act if original or not found.newest else found.newest
    chosen = Pick(found.act, found.title, target)
    record = found.texts.get(target) or (found.record if target == found.act else None)
    if record is not None and target == found.act and record.is_announcement \
            and not record.announces_consolidated_text:
        chosen.skip = (f"{target} is an Obwieszczenie that is not a consolidated text: it carries no articles of "
                       f"an act; ingest it with --act {target} if it is wanted")
    elif record is not None and not record.has_text:
        chosen.skip = f"{target} has metadata only in the ELI API: no text to ingest"
    return chosen


def check_text(client: EliClient, chosen: Pick) -> Pick:
    """ingest --title: ``skip`` says, before any download, when the target has no text to ingest."""
    hint = "" if chosen.target == chosen.act else f" (newest consolidated text of {chosen.act}; --original takes the act)"
    if chosen.skip is None:
        try:
            record = client.record(chosen.target)
        except ActNotInApi as exc:
            chosen.skip = str(exc)
        else:
            if not record.has_text:
                chosen.skip = f"{chosen.target} has metadata only in the ELI API: no text to ingest"
    if chosen.skip and hint not in chosen.skip:
        chosen.skip += hint
    return chosen


def plan_all(conn: psycopg.Connection, client: EliClient, query: ActQuery, *, original: bool,
             most: int = MAX_BULK_RECORDS, progress: Callable[[str], None] | None = None) -> list[Pick]:
    """Every act the search matches, each with its target; skipped without a request: a target already
    stored as a version, and what the records say has no text."""
    records, total = search_records(client, query, most=most, progress=progress)
    if total > len(records):
        raise UsageError(f"the search matches {total} records, more than {most} at once: narrow it "
                         "(--type, --in-force, --year, more words)")
    acts = group(records)
    for i, a in enumerate(acts, start=1):
        if progress and a.newest is None and not original:
            progress(f"[{i}/{len(acts)}] {a.act}: its newest consolidated text")
        if not original:
            resolve(client, a)
    picks: dict[str, Pick] = {}
    for a in acts:
        chosen = pick(a, original=original)
        picks.setdefault(chosen.target, chosen)
    stored = stored_texts(conn, list(picks))
    for chosen in picks.values():
        if chosen.skip is None and chosen.target in stored:
            chosen.skip = f"{chosen.target} is already stored"
    return list(picks.values())
