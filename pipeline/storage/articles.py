"""Look up stored acts and their articles: one article (current, as of a date, or a given version),
an act's table of contents, the list of stored acts."""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields

import psycopg
from psycopg.rows import dict_row

from pipeline.core import clock
from pipeline.core.act_id import parse_act_id
from pipeline.storage.db import one_row, read_only
from pipeline.core.errors import ArticleNotFound, UsageError
# canonical_article: imported for its callers here (get_article, show) and elsewhere; the grammar is core.numbering's.
from pipeline.core.numbering import canonical_article
from pipeline.sources import provision_time
from pipeline.storage import amendments, currency, delegations, legal_time


class ActNotFound(ArticleNotFound):
    """The act is not in the database (the message says how to ingest it)."""


def require_acts(conn: psycopg.Connection, acts: list[str]) -> list[str]:
    """Canonical ELI ids of ``acts``, each one stored (as an act or as the base act of a stored text)."""
    elis = [str(parse_act_id(a)) for a in acts]
    known = {r[0] for r in conn.execute(
        "SELECT eli FROM acts WHERE eli = ANY(%(e)s) UNION SELECT base_eli FROM acts WHERE base_eli = ANY(%(e)s)",
        {"e": elis})}
    for eli in elis:
        if eli not in known:
            raise ActNotFound(f"{eli} is not in the database; run: pipeline ingest --act {eli}")
    return elis


def require_date(as_of: object) -> None:
    """A library caller's ``as_of`` is a date or None (a string such as "2025-13-01" would reach SQL)."""
    # A datetime is a date subclass, but SQL would see a timestamp (and the law has no time of day).
    if as_of is not None and (not isinstance(as_of, dt.date) or isinstance(as_of, dt.datetime)):
        raise UsageError("as_of must be a date (datetime.date, not a datetime), e.g. 2025-10-01")


# SQL: the base act of the ELI id given as %(e)s (a consolidated text's base act; else the id itself,
# a base act whose own text may not be stored). Versions are grouped by it.
BASE_OF = "coalesce((SELECT base_eli FROM acts WHERE eli = %(e)s), %(e)s)"


def text_on(conn: psycopg.Connection, base: str, day: dt.date | None) -> dict | None:
    """The stored text of the base act ``base`` that answers for ``day`` (None: today's): the one in force
    (versions_as_of); before every stored text's own date, the earliest of them, whose articles' dates then
    say what it answers (:func:`article_on`): a published act not yet in force (its wording, from when),
    a consolidated text before its date (as far as its footnotes and final provisions speak).
    {version_id, eli, version_no, valid_from}; None: no text of the act is stored."""
    cur = conn.cursor(row_factory=dict_row)
    found = cur.execute("SELECT v.version_id, v.eli, v.version_no, v.valid_from FROM versions_as_of(%s) v "
                        "WHERE v.base_eli = %s", (day, base)).fetchone()
    if found is None and day is not None:
        found = cur.execute("SELECT version_id, eli, version_no, valid_from FROM act_versions WHERE base_eli = %s "
                            "ORDER BY valid_from NULLS LAST, version_id DESC LIMIT 1", (base,)).fetchone()
    return found


def _version_as_of(conn: psycopg.Connection, eli: str, as_of: dt.date | None) -> int:
    """The version of ``eli``'s base act that answers for ``as_of`` (None: the current one): :func:`text_on`."""
    base = one_row(conn.execute(f"SELECT {BASE_OF}", {"e": eli}))[0]
    version = text_on(conn, base, as_of)
    if not version:
        require_acts(conn, [eli])
        raise ArticleNotFound(f"no stored text of {eli} is in force on {as_of}" if as_of
                              else f"no current stored text of {eli}")
    return version["version_id"]


def _versions_stored(conn: psycopg.Connection, eli: str) -> str:
    """"; stored: DU/2023/1465 version 1, DU/2025/277 versions 1-2 (…)" for ``eli``'s base act (a base
    act's id names no text of its own when only its consolidated texts are stored)."""
    require_acts(conn, [eli])
    texts = conn.execute(
        f"SELECT eli, min(version_no), max(version_no) FROM act_versions WHERE base_eli = {BASE_OF} "
        "GROUP BY eli ORDER BY min(valid_from) NULLS FIRST, eli", {"e": eli}).fetchall()
    listed = ", ".join(f"{e} version {lo}" if lo == hi else f"{e} versions {lo}-{hi}" for e, lo, hi in texts)
    return f"; stored: {listed} (each ELI id numbers its own versions)" if listed else ""


@dataclass
class ArticleOnDay:
    """One article of a stored text on a day, as `show`, `check`, `diff`, the page and MCP read it: the wording
    that is the law that day (the text's own, or rebuilt from the stored changes in force by then: never
    presented as official), its dates and basis, its wordings and timeline, its units not in force, the
    changes after the text. Its keys (:meth:`to_dict`) are docs/results.md's article record's."""

    eli: str
    act_title: str | None
    article: str
    heading_path: list[str]
    repealed: bool
    text: str  # the wording on the day: official, or rebuilt (official false)
    version_no: int
    valid_from: dt.date | None
    valid_to: dt.date | None  # when a newer stored text of the act takes over (None: none stored yet)
    version_id: int
    base_eli: str
    article_id: int | None  # None: added by a later stored act, no row of the text's own
    wording: int  # 0 printed once; 1 / 2 the wording in force and the one an amendment brings
    in_force_from: dt.date | None
    in_force_until: dt.date | None
    in_force_undetermined: str | None
    in_force_basis: str | None
    in_force: bool | None
    wordings: list[dict] = field(default_factory=list)
    timeline: list[dict] = field(default_factory=list)
    units_not_in_force: list[dict] = field(default_factory=list)
    official: bool = True
    official_text: str | None = None  # the official wording, where ``text`` is rebuilt
    changes: list[dict] = field(default_factory=list)
    currency: dict | None = None
    delegations: list[dict] = field(default_factory=list)  # its units that authorise an act (storage.delegations)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# The article's rows in one stored text, with their times on a day (%(day)s): the columns ArticleOnDay takes.
_ROWS = """
    SELECT v.eli, a.title AS act_title, ar.article, ar.heading_path, ar.repealed, ar.text, v.version_no,
           v.valid_from,
           (SELECT min(n.valid_from) FROM act_versions n
            WHERE n.base_eli = v.base_eli AND n.valid_from > v.valid_from) AS valid_to,
           v.version_id, v.base_eli, ar.article_id, ar.wording, t.in_force_from, t.in_force_until,
           t.undetermined AS in_force_undetermined, t.basis AS in_force_basis,
           CASE WHEN ar.repealed THEN false ELSE in_force_on(t.in_force_from, t.in_force_until, %(day)s) END AS in_force
    FROM articles ar JOIN act_versions v USING (version_id) JOIN acts a ON a.eli = v.eli
    LEFT JOIN article_times t USING (article_id)
    WHERE ar.version_id = %(v)s AND ar.article = %(a)s
    ORDER BY ar.ordinal"""


def article_on(conn: psycopg.Connection, version_id: int, number: str, day: dt.date, *, rebuild: bool = True,
               pick: Callable[[list[dict], dt.date], dict] | None = None) -> ArticleOnDay | None:
    """Art. ``number`` of the stored text ``version_id`` on ``day``: of its wordings the one that is the law
    that day (:func:`in_force_wording`; ``pick`` another rule: `diff`'s newest printed one), rebuilt with the
    stored changes after the text in force by then where they determine it (``rebuild`` false: the official
    wording, the changes told beside it); an article the text lacks that a stored act added by then, rebuilt
    from that act. None: the text has no such article on that day."""
    rows = conn.cursor(row_factory=dict_row).execute(_ROWS, {"day": day, "v": version_id, "a": number}).fetchall()
    if not rows:
        return _added_later(conn, version_id, number, day) if rebuild else None
    timeline = legal_time.timeline(conn, version_id, number)
    earlier = _before_the_text(rows, timeline, day, _changes_printed_from(conn, version_id)
                               if any(r["valid_from"] and day < r["valid_from"] for r in rows) else None)
    row = (pick or in_force_wording)(rows, day)
    found = ArticleOnDay(**{**row, "heading_path": list(row["heading_path"] or [])})
    found.wordings = [{"wording": r["wording"], "in_force_from": r["in_force_from"],
                       "in_force_until": r["in_force_until"], "in_force": r["in_force"]} for r in rows]
    found.timeline = timeline
    if found.article_id is not None:  # a row of the text's own (always, here: an added article has none)
        found.units_not_in_force = legal_time.units_not_in_force(conn, [found.article_id], day).get(found.article_id, [])
    if earlier and found.in_force:
        found.units_not_in_force += earlier.get(found.wording, [])
    # The stored acts' changes after this text (revision 0011): the wording on the day rebuilt from those in force
    # by then that it determines; the official text one step away.
    found.changes = amendments.changes_after(conn, version_id, number, day)
    rebuilt = amendments.rebuilt(found.text, found.changes) if rebuild else None
    if rebuilt is not None:
        found.official, found.official_text, found.text = False, found.text, rebuilt
    return found


_PART_HEADING = re.compile(r"(?:Rozdział|DZIAŁ|Dział|Oddział)\s", re.IGNORECASE)  # a chapter's footnote, on each article


def _changes_printed_from(conn: psycopg.Connection, version_id: int) -> dt.date | None:
    """The earliest day a change the text's footnotes name took effect ("Dodany przez …, która weszła w życie …"): a
    consolidated text prints the changes since the text before it, not older ones (None: it prints none)."""
    return one_row(conn.execute(
        "SELECT min(e.from_date) FROM article_events e JOIN articles a USING (article_id) "
        "JOIN act_versions v USING (version_id) WHERE a.version_id = %s AND e.source_act IS NOT NULL "
        "AND e.source_act <> v.eli AND e.kind IN ('added', 'wording', 'amended', 'repealed', 'renumbered') "
        "AND e.from_date < v.valid_from", (version_id,)))[0]


def _before_the_text(rows: list[dict], timeline: list[dict], day: dt.date,
                     printed_from: dt.date | None = None) -> dict[int, list[dict]]:
    """A day before the stored text's own date (a consolidated text states the law on its date; a published act
    is not yet in force): the text answers as far as its final provisions and footnotes date its articles. An
    article it dates only by its own date (basis consolidated_text) is undetermined then; a repealed one was in
    force until its repeal's date (its wording then is in no stored text: undetermined), repealed from it. Per
    wording, where the article's own wording is dated after ``day`` by a footnote ("W brzmieniu ustalonym przez
    …"): that the printed wording is not the one of ``day`` (an entry of units_not_in_force, unit "")."""
    later: dict[int, list[dict]] = {}
    for r in rows:
        if r["valid_from"] is None or day >= r["valid_from"]:
            continue
        own = [e for e in timeline if e["wording"] == r["wording"] and not e["unit"] and e["from"]]
        if r["repealed"]:
            repeal = min((e["from"] for e in own if e["kind"] in (provision_time.REPEALED, provision_time.LOSES_FORCE)),
                         default=None)
            r["in_force_until"] = repeal
            started = r["in_force_basis"] == provision_time.BY_CONSOLIDATED or (
                r["in_force_from"] is not None and r["in_force_from"] <= day)
            if started and (repeal is None or day < repeal):
                r["in_force"] = None
                r["in_force_undetermined"] = (f"the text prints the article repealed (from {repeal or 'a date it does not give'});"
                                              " its wording before is in no stored text")
        elif r["in_force_basis"] == provision_time.BY_CONSOLIDATED and r["in_force"] is False:
            r["in_force"] = None
            r["in_force_undetermined"] = (f"the consolidated text states the law on {r['valid_from']}; since when "
                                          "before it the article is in force it does not say")
        elif r["in_force"] and (printed_from is None or day < printed_from) and not any(
                e["kind"] in (provision_time.notes.ADDED, provision_time.WORDING) and e["from"] and e["from"] <= day
                and e["wording"] == r["wording"] and (not e["unit"] or _PART_HEADING.match(e["unit"]))
                for e in timeline):
            # Before the changes the text prints: one it does not print (an article added, a wording set) may
            # have come since; only a footnote that dates the article's present form answers.
            r["in_force"], r["in_force_basis"] = None, provision_time.UNDETERMINED
            r["in_force_undetermined"] = (
                f"the text of {r['valid_from']} prints the changes made since "
                f"{printed_from or 'its date'}, not older ones: whether the article stood on {day}, and in which "
                "wording, it does not say")
        later[r["wording"]] = [
            {"unit": "", "kind": e["kind"], "from": e["from"], "until": e["until"],
             "note": f"artykuł: to brzmienie obowiązuje od {e['from']}; wcześniejsze nie jest w przechowywanych tekstach"}
            for e in own if e["kind"] in (provision_time.WORDING, provision_time.notes.AMENDED) and e["from"] > day][:1]
    return later


def _added_later(conn: psycopg.Connection, version_id: int, number: str, day: dt.date) -> ArticleOnDay | None:
    """An article the text lacks that a stored act added after it, in force by ``day`` ("po art. 5 dodaje się
    art. 5a …"): its wording rebuilt from that act (and the later changes to it), never an official text."""
    changes = amendments.changes_after(conn, version_id, number, day)
    add = next((c for c in changes if c["operation"] == "add" and not c["target_unit"] and c["status"] == "in_force"
                and c["text"]), None)
    if add is None:
        return None
    add["applied"] = True
    text = amendments.rebuilt(add["text"], [c for c in changes if c is not add]) or add["text"]
    row = one_row(conn.cursor(row_factory=dict_row).execute(
        "SELECT v.eli, a.title AS act_title, v.version_no, v.valid_from, v.version_id, v.base_eli, "
        "(SELECT min(n.valid_from) FROM act_versions n WHERE n.base_eli = v.base_eli AND n.valid_from > v.valid_from) "
        "AS valid_to FROM act_versions v JOIN acts a ON a.eli = v.eli WHERE v.version_id = %s", (version_id,)))
    return ArticleOnDay(
        **row, article=number, heading_path=[], repealed=False, text=text, article_id=None, wording=0,
        in_force_from=add["in_force_from"], in_force_until=None, in_force_undetermined=None,
        in_force_basis="other_act", in_force=True,
        timeline=[{"from": add["in_force_from"], "until": None, "kind": "added", "unit": "",
                   "source": {"act": add["act"], "unit": add["unit"]}, "text": add["instruction"],
                   "determined": True, "wording": 0}],
        official=False, changes=changes)


def similar_articles(conn: psycopg.Connection, number: str, *, version_id: int | None = None,
                     base: str | None = None) -> list[str]:
    """The articles meant by a number whose superscript was pasted as plain digits ("1511" for 151^1,
    "183a" for 18^3a): in the text ``version_id``, or in any stored text of the act ``base``."""
    return [r[0] for r in conn.execute(
        "SELECT ar.article FROM articles ar JOIN act_versions v USING (version_id) "
        "WHERE (ar.version_id = %(v)s OR v.base_eli = %(b)s) AND replace(ar.article, '^', '') = %(n)s "
        "AND ar.article LIKE '%%^%%' GROUP BY ar.article ORDER BY min(ar.ordinal), ar.article",
        {"v": version_id, "b": base, "n": number})]


def why_missing(conn: psycopg.Connection, version_id: int, number: str, day: dt.date, *, later: bool = True) -> str:
    """Why the text has no art. ``number`` on ``day``, as a hint after the error: the article meant (a pasted
    superscript), or (``later``) the later stored act that adds it; "" when neither."""
    if alike := similar_articles(conn, number, version_id=version_id):
        return f" (did you mean art. {' or art. '.join(alike)}?)"
    if not later:
        return ""
    adding = next((c for c in amendments.changes_after(conn, version_id, number, day)
                   if c["operation"] == "add" and not c["target_unit"]), None)
    return (f" (added by {adding['act']} {adding['unit']}, in force from {adding['in_force_from'] or '?'})"
            if adding else "")


def find_article(conn: psycopg.Connection, act: str, article: str, *, as_of: dt.date | None = None,
                 version_no: int | None = None, official: bool = False) -> ArticleOnDay:
    """The article of ``act`` on ``as_of`` (None: today) from the stored text in force then, or from the
    version ``version_no`` (its official wording); ``official``: the official wording, the changes beside it.
    With the act's currency on ``as_of``. Raises ArticleNotFound (the act, or the article, with a hint)."""
    eli = str(parse_act_id(act))
    number = canonical_article(article)
    require_date(as_of)
    if version_no is not None and as_of is not None:
        raise UsageError("a version and a date each pick the text; give one of them (--version or --as-of)")
    if version_no is not None:
        version = conn.execute("SELECT version_id FROM act_versions WHERE eli = %s AND version_no = %s",
                               (eli, version_no)).fetchone()
        if not version:
            raise ArticleNotFound(f"{eli} has no stored version {version_no}" + _versions_stored(conn, eli))
        version_id = version[0]
    else:
        # The act's text in force on the date: among all versions of its base act.
        version_id = _version_as_of(conn, eli, as_of)
    day = as_of or clock.today()
    found = article_on(conn, version_id, number, day, rebuild=version_no is None and not official)
    if found is None:
        raise ArticleNotFound(f"{eli} has no art. {number} in the selected text"
                              + why_missing(conn, version_id, number, day, later=version_no is None))
    cur = currency.for_acts(conn, [found.eli], as_of).get(found.eli)
    found.currency = cur.to_dict() if cur else None
    # What the article delegates: shown with it, read for show alone (check and diff read many articles).
    found.delegations = delegations.of_article(conn, found.version_id, found.article)
    return found


@read_only
def get_article(conn: psycopg.Connection, act: str, article: str, *, as_of: dt.date | None = None,
                version_no: int | None = None, official: bool = False) -> dict:
    """:func:`find_article` as a dict (the Python API's stage function; `show --json`'s keys)."""
    return find_article(conn, act, article, as_of=as_of, version_no=version_no, official=official).to_dict()


def in_force_wording(rows: list[dict], day: dt.date) -> dict:
    """Of an article's wordings (rows with in_force, in_force_from, in_force_until), the one that is the law
    on ``day``; else one whose date is undetermined; else the next to come into force; else the last."""
    return (next((r for r in rows if r["in_force"]), None)
            or next((r for r in rows if r["in_force"] is None), None)
            or min((r for r in rows if r["in_force_from"] and r["in_force_from"] > day),
                   key=lambda r: r["in_force_from"], default=None)
            or rows[-1])


@read_only
def table_of_contents(conn: psycopg.Connection, act: str, *, as_of: dt.date | None = None) -> dict:
    """The articles of the act's text in force on ``as_of`` (None: current), in order, with their headings."""
    eli = str(parse_act_id(act))
    require_date(as_of)
    version_id = _version_as_of(conn, eli, as_of)
    head = one_row(conn.execute(
        "SELECT v.eli, a.title, v.version_no, v.valid_from FROM act_versions v JOIN acts a USING (eli) "
        "WHERE v.version_id = %s", (version_id,)))
    rows = conn.execute(
        "SELECT article, heading_path, repealed, length(text) FROM articles WHERE version_id = %s ORDER BY ordinal",
        (version_id,)).fetchall()
    return {
        "eli": head[0], "act_title": head[1], "version_no": head[2], "valid_from": head[3],
        "articles": [{"article": a, "heading_path": list(h), "repealed": r, "chars": n} for a, h, r, n in rows],
    }


# SQL: every stored version of the base act {base} (its own texts and its consolidated texts), oldest
# first, as a JSON array of {eli, version_no, valid_from, ingested_at}.
_VERSIONS = """(SELECT json_agg(json_build_object('eli', v.eli, 'version_no', v.version_no,
                                                'valid_from', v.valid_from, 'ingested_at', v.ingested_at)
                              ORDER BY v.valid_from NULLS FIRST, v.version_id)
              FROM act_versions v WHERE v.base_eli = {base})"""


@read_only
def versions_of(conn: psycopg.Connection, base_act: str) -> list[dict]:
    """Every stored version of ``base_act`` (its consolidated texts' included), oldest first:
    {eli, version_no, valid_from, ingested_at}."""
    return one_row(conn.execute(f"SELECT {_VERSIONS.format(base='%s')}", (base_act,)))[0] or []


@read_only
def list_acts(conn: psycopg.Connection) -> list[dict]:
    """Every stored act (per base act: its current text), with all its stored versions, oldest first."""
    rows = conn.execute(
        f"""
        SELECT c.eli, c.base_eli, c.title, c.act_type, c.status, a.in_force, c.version_no, c.valid_from,
               c.article_count, c.chunk_count, c.ingested_at, {_VERSIONS.format(base="c.base_eli")}
        FROM current_versions c JOIN acts a USING (eli)
        ORDER BY c.eli
        """
    ).fetchall()
    keys = ("eli", "base_eli", "title", "act_type", "status", "in_force", "version_no", "valid_from",
            "article_count", "chunk_count", "ingested_at", "versions")
    return [dict(zip(keys, r, strict=True)) for r in rows]
