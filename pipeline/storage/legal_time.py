"""Provision time of the stored texts (revision 0010): when each article row is in force, and its timeline.

What a text alone gives is stored with it (store.store_version): its footnotes and the publication date
it prints (:func:`write_sources`). What is derived — the final provisions' rules, each article's times
and timeline — is worked out by :func:`refresh`, from the stored articles, their footnotes, the acts'
records and the rules other stored texts state for the act (the act that introduces it). When it is worked
out again (a text it depends on stored or removed, or rules changed) is storage.derived's.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

import psycopg

from pipeline.sources import instructions, provision_time, provisions
from pipeline.sources.parse.model import Article, Footnote
from pipeline.sources.provision_time import ElsewhereRule, TextFacts
from pipeline.sources.provisions import Rule
from pipeline.sources.record import EliRecord, act_name
from pipeline.storage.db import one_row

EXTRACTOR = provision_time.EXTRACTOR


def write_sources(conn: psycopg.Connection, version_id: int, articles: Iterable[Article], notes: Iterable[Footnote],
                  printed_date: dt.date | None, record_from: dt.date | None, consolidated: bool,
                  act_date: dt.date | None = None) -> None:
    """Store what a new version's text says of time that its articles' text does not keep: the footnotes
    (where their marks stand) and the publication date it prints. Inside the caller's transaction."""
    with conn.cursor().copy("COPY version_footnotes (version_id, ordinal, number, article, wording, unit, heading, text) "
                            "FROM STDIN") as copy:
        ordinal = 0
        for f in notes:
            ordinal += 1
            copy.write_row((version_id, ordinal, f.number, None, 0, f.unit, f.heading, f.text))
        for a in articles:
            for f in a.footnotes:
                ordinal += 1
                copy.write_row((version_id, ordinal, f.number, a.number, a.wording, f.unit, f.heading, f.text))
    conn.execute("INSERT INTO version_times (version_id, printed_date, consolidated, act_date, footnotes, record_from) "
                 "VALUES (%s, %s, %s, %s, true, %s)", (version_id, printed_date, consolidated, act_date, record_from))


def versions_touched(conn: psycopg.Connection, eli: str) -> list[int]:
    """The versions whose time depends on what a text of ``eli`` brings: the texts of ``eli`` (its record),
    the consolidated texts of ``eli`` when it is a base act (its publication date), the texts of the acts its
    texts state rules for (the act it introduces), and of those it repeals (whole, or by article)."""
    return [r[0] for r in conn.execute(
        """
        SELECT v.version_id FROM act_versions v
        WHERE v.eli = %(e)s OR v.base_eli = %(e)s
           OR v.base_eli IN (SELECT coalesce((SELECT a.base_eli FROM acts a WHERE a.eli = r.for_act), r.for_act)
                             FROM provision_rules r JOIN act_versions s USING (version_id)
                             WHERE s.eli = %(e)s AND r.for_act IS NOT NULL)
           -- the acts it repeals, whole, by article or by chapter (revision 0011)
           OR v.base_eli IN (SELECT c.target_base_act FROM amendment_changes c
                             WHERE c.source_act = %(e)s AND c.operation = 'repeal'
                               AND (c.target_unit = '' OR (c.target_article IS NULL AND c.target_unit ~ %(part)s)))
        ORDER BY v.version_id
        """, {"e": eli, "part": instructions.PART_TARGET})]


def _articles(conn: psycopg.Connection, version_id: int) -> tuple[list[int], list[Article], list[Footnote]]:
    notes: dict[tuple[str, int], list[Footnote]] = {}
    outside: list[Footnote] = []
    for number, article, wording, unit, heading, text in conn.execute(
            "SELECT number, article, wording, unit, heading, text FROM version_footnotes WHERE version_id = %s "
            "ORDER BY ordinal", (version_id,)):
        note = Footnote(number, text, unit, heading)
        if article is None:
            outside.append(note)
        else:
            notes.setdefault((article, wording), []).append(note)
    ids, articles = [], []
    for article_id, number, text, headings, repealed, wording in conn.execute(
            "SELECT article_id, article, text, heading_path, repealed, wording FROM articles WHERE version_id = %s "
            "ORDER BY ordinal", (version_id,)):
        ids.append(article_id)
        articles.append(Article(number, text, list(headings or []), repealed, notes.get((number, wording), []),
                                wording))
    return ids, articles, outside


def _record(conn: psycopg.Connection, eli: str) -> EliRecord | None:
    row = conn.execute("SELECT meta FROM acts WHERE eli = %s", (eli,)).fetchone()
    return EliRecord.read(row[0], eli) if row else None


def _published(record: EliRecord | None) -> dt.date | None:
    return (record.dates.published or record.dates.announced) if record else None


def _elsewhere(conn: psycopg.Connection, base: str, title: str | None) -> list[ElsewhereRule]:
    """The rules other stored texts state for the act ``base`` (by its ELI id, or by its name and year
    where they name it without a journal reference), from each such act's latest text."""
    name = act_name(title) if title else ""
    rows = conn.execute(
        """
        SELECT DISTINCT ON (v.eli, r.ordinal) v.eli, r.for_act_title, r.source_article, r.article, r.unit,
               r.chapter, r.scope, r.verb, r.when_text, r.clause, t.printed_date
        FROM provision_rules r
        JOIN act_versions v USING (version_id)
        LEFT JOIN version_times t USING (version_id)
        WHERE v.base_eli <> %(base)s
          AND (r.for_act = %(base)s
               OR (r.for_act IS NULL AND r.for_act_title IS NOT NULL AND %(name)s <> ''
                   AND strpos(lower(r.for_act_title), lower(%(name)s)) > 0
                   AND strpos(r.for_act_title, substring(%(base)s FROM '/(\\d{4})/')) > 0))
        ORDER BY v.eli, r.ordinal, v.version_no DESC
        """, {"base": base, "name": name}).fetchall()
    found = []
    for eli, act_title, source_article, article, unit, chapter, scope, verb, when_text, clause, printed in rows:
        rule = Rule(provisions.when(when_text), clause, source_article, article, unit, chapter, scope, base, act_title,
                    verb)
        found.append(ElsewhereRule(rule, eli, _published(_record(conn, eli)) or printed))
    return found


def refresh(conn: psycopg.Connection, version_id: int) -> provision_time.TextTime:
    """Work out one version's time and store it (inside the caller's transaction)."""
    eli, base, valid_from = one_row(conn.execute("SELECT eli, base_eli, valid_from FROM act_versions WHERE version_id = %s",
                                         (version_id,)))
    sources = conn.execute("SELECT printed_date, record_from, consolidated FROM version_times WHERE version_id = %s",
                           (version_id,)).fetchone()
    if sources is None:  # stored before revision 0010: only its articles' text is known
        conn.execute("INSERT INTO version_times (version_id, footnotes, record_from) VALUES (%s, false, %s)",
                     (version_id, valid_from))
        sources = (None, valid_from, None)
    printed, record_from, consolidated = sources
    record = _record(conn, eli)
    if consolidated is None:
        consolidated = record.is_consolidated_text if record else False
    ids, articles, outside = _articles(conn, version_id)
    if consolidated:
        published = _published(_record(conn, base)) if base != eli else None
    else:
        published = _published(record) or printed
    text_date = record_from or printed  # a consolidated text's: its record's, else the announcement's own date
    facts = TextFacts(articles, consolidated, text_date if consolidated else None, published,
                      None if consolidated or record is None else record.dates.entry_into_force, outside,
                      _elsewhere(conn, base, record.title if record else None), base)
    time = provision_time.read(facts)
    _later_repeals(conn, version_id, base, text_date if consolidated else time.states_from or record_from, articles,
                   time)
    _write(conn, version_id, ids, time)
    states_from = time.states_from
    conn.execute("UPDATE version_times SET published = %s, states_from = %s, extractor = %s, extracted_at = now() "
                 "WHERE version_id = %s", (time.published, states_from, EXTRACTOR, version_id))
    # A text states the law from the earliest day an article of it is in force (by its provisions), not
    # from its publication: as-of picks texts by valid_from (versions_as_of).
    # A consolidated text states it from its date (the record's, else the one it prints).
    valid = text_date if consolidated else states_from or record_from
    conn.execute("UPDATE act_versions SET valid_from = %s WHERE version_id = %s AND valid_from IS DISTINCT FROM %s",
                 (valid, version_id, valid))
    return time


def _later_repeals(conn: psycopg.Connection, version_id: int, base: str, text_from: dt.date | None,
                   articles: list[Article], time: provision_time.TextTime) -> None:
    """End the articles a later stored act repeals, whole ("Traci moc ustawa …", "uchyla się art. 5"), from the
    day its repeal takes effect (revision 0011; storage.amendments): a repeal of a whole unit is determined,
    unlike an edit of words. Not one the text already carries (its footnotes name the act), nor one whose
    date the texts leave open (it is told beside the text, never guessed)."""
    carried = {e.source_act for t in time.articles for e in t.events if e.source_act}
    for r in conn.execute(
            "SELECT source_act, source_unit, target_article, target_unit, in_force_from, instruction, kept "
            "FROM amendment_changes WHERE target_base_act = %s AND source_act <> %s AND operation = 'repeal' "
            "AND (target_unit = '' OR (target_article IS NULL AND target_unit ~ %s)) "  # a chapter: its articles
            "AND in_force_from IS NOT NULL ORDER BY in_force_from", (base, base, instructions.PART_TARGET)).fetchall():
        source_act, unit, target, part, start, instruction, kept = r
        if source_act in carried or (text_from is not None and start <= text_from):
            continue
        for a, t in zip(articles, time.articles, strict=True):  # what the repeal's exceptions keep stays (sources.instructions.ends)
            if (a.number == target if target is not None else not part or instructions.under(a.heading_path, part)) \
                    and instructions.ends(a.number, kept) \
                    and (t.in_force_until is None or start < t.in_force_until):
                t.in_force_until = start
                t.events.append(provision_time.Event(provision_time.REPEALED, "", start, None, instruction,
                                                     source_act, unit))


def _write(conn: psycopg.Connection, version_id: int, ids: list[int], time: provision_time.TextTime) -> None:
    conn.execute("DELETE FROM provision_rules WHERE version_id = %s", (version_id,))
    conn.execute("DELETE FROM article_times WHERE version_id = %s", (version_id,))
    conn.execute("DELETE FROM article_events WHERE article_id = ANY(%s)", (ids,))
    with conn.cursor().copy(
        "COPY provision_rules (version_id, ordinal, for_act, for_act_title, source_article, article, unit, chapter, "
        "scope, verb, when_kind, when_text, when_date, clause) FROM STDIN"
    ) as copy:
        for i, r in enumerate(time.rules, start=1):
            copy.write_row((version_id, i, r.act, r.act_title, r.source_article, r.article if r.article != "?" else None,
                            r.unit, r.chapter, r.scope, r.verb, r.when.kind, r.when.text, r.when.date, r.clause))
    with conn.cursor().copy("COPY article_times (article_id, version_id, in_force_from, in_force_until, undetermined, "
                            "basis) FROM STDIN") as copy:
        for article_id, t in zip(ids, time.articles, strict=True):
            copy.write_row((article_id, version_id, t.in_force_from, t.in_force_until, t.undetermined, t.basis))
    with conn.cursor().copy("COPY article_events (article_id, ordinal, kind, unit, from_date, until_date, determined, "
                            "partial, source_act, source_unit, text) FROM STDIN") as copy:
        for article_id, t in zip(ids, time.articles, strict=True):
            for i, e in enumerate(t.events, start=1):
                copy.write_row((article_id, i, e.kind, e.unit, e.start, e.end, e.determined, e.partial, e.source_act,
                                e.source_unit, e.text))


_SPACES = re.compile(r"\s+")


def events(conn: psycopg.Connection, article_ids: list[int]) -> dict[int, list[provision_time.Event]]:
    """The stored timeline of each article row, in order."""
    found: dict[int, list[provision_time.Event]] = {}
    for article_id, kind, unit, start, end, determined, partial, source_act, source_unit, text in conn.execute(
            "SELECT article_id, kind, unit, from_date, until_date, determined, partial, source_act, source_unit, text "
            "FROM article_events WHERE article_id = ANY(%s) ORDER BY article_id, ordinal", (article_ids,)):
        found.setdefault(article_id, []).append(provision_time.Event(
            kind, unit, start, end, _SPACES.sub(" ", text), source_act, source_unit, determined, partial))
    return found


def timeline(conn: psycopg.Connection, version_id: int, article: str) -> list[dict]:
    """The timeline of every wording of ``article`` in the version, in order: {from, until, kind, unit,
    source: {act, unit}, text, determined, wording} (docs/results.md)."""
    rows = conn.execute("SELECT article_id, wording FROM articles WHERE version_id = %s AND article = %s "
                        "ORDER BY ordinal", (version_id, article)).fetchall()
    found = events(conn, [r[0] for r in rows])
    return [{**e.to_dict(), "wording": wording} for article_id, wording in rows for e in found.get(article_id, [])]


def units_not_in_force(conn: psycopg.Connection, article_ids: list[int], day: dt.date) -> dict[int, list[dict]]:
    """Per article row: its units that are not the law on ``day`` (not yet in force, in a later wording,
    ended), each {unit, kind, from, until, note} (note: the Polish line a reader is shown)."""
    return {article_id: [{"unit": e.unit, "kind": e.kind, "from": e.start, "until": e.end,
                          "note": provision_time.unit_note(e, day)}
                         for e in provision_time.not_in_force(found, day)]
            for article_id, found in events(conn, article_ids).items()}
