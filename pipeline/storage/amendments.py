"""The amending instructions of stored acts (revision 0011; read by pipeline.sources.instructions), and the
changes that come after a stored text of the act they amend.

Written with each new version (store.store_version) and, for versions read by older rules or stored before
the revision, again from the stored articles (storage.derived). Which stored act a
change is to, and when it takes effect, are worked out when read (the view amendment_changes), so storing
the amended act, or the act that dates the amending one, later needs no rewrite.

A change comes after a text when it takes effect after the text's date and the text does not already carry
it: a consolidated text's footnotes name the acts whose changes it includes (revision 0010's timeline). The
wording on a date is rebuilt from changes that set, add, repeal or renumber whole units (:func:`rebuilt`), and
from edits of words made to a wording known to be current: every act the text's record lists as amending it
up to the edit's date is stored, and the words are found once. Any other edit leaves its unit as the official
text has it, the change told beside it with why.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable

import psycopg
from psycopg.rows import dict_row, tuple_row

from pipeline.core.act_id import parse_act_id

from pipeline.sources import instructions, rewording
from pipeline.sources.instructions import Change
from pipeline.sources.record import EliRecord
from pipeline.storage.db import one_row

EXTRACTOR = instructions.EXTRACTOR


def write(conn: psycopg.Connection, version_id: int, changes: Iterable[Change]) -> int:
    """Store the changes a version's text makes (inside the caller's transaction); how many."""
    conn.execute("DELETE FROM amendments WHERE version_id = %s", (version_id,))
    n = 0
    with conn.cursor().copy(
            "COPY amendments (version_id, ordinal, source_article, amending_unit, target_as_written, target_act, "
            "target_name, target_date, target_article, target_unit, operation, after_unit, wording, old_words, "
            "new_words, new_label, kept, instruction) FROM STDIN") as copy:
        for n, c in enumerate(changes, start=1):
            copy.write_row((version_id, n, c.source_article, c.amending_unit, c.target_as_written, c.target_act,
                            c.target_name, c.target_date, c.target_article, c.target_unit, c.operation, c.after_unit,
                            c.wording, c.old_words, c.new_words, c.new_label, c.kept, c.instruction))
    conn.execute("INSERT INTO amendment_extractions (version_id, extractor) VALUES (%s, %s) ON CONFLICT (version_id) "
                 "DO UPDATE SET extractor = excluded.extractor, extracted_at = now()", (version_id, EXTRACTOR))
    return n


def changes_after(conn: psycopg.Connection, version_id: int, article: str, day: dt.date) -> list[dict]:
    """The stored changes to ``article`` of the act whose text ``version_id`` is (and to the whole act) that
    come after that text: in force by ``day`` or later, or not determined; in the amending acts' order. Each
    {act, unit, operation, target_unit, in_force_from, in_force_undetermined, status, applied, text, ...}:
    ``status`` "in_force" (takes effect by the day), "pending" (later), "undetermined"; ``applied`` false
    (:func:`rebuilt` sets it for the changes it applies); ``not_current`` why the wording the change edits may
    not be the current one on its date (None: every amending act the text's record lists up to then is stored)."""
    return changes_by_day(conn, version_id, article)(day)


def changes_by_day(conn: psycopg.Connection, version_id: int, article: str) -> Callable[[dt.date], list[dict]]:
    """:func:`changes_after` for any day, read once: the rows do not depend on the day, only their status
    does (a text's rebuilt wordings ask for every day a change takes effect: storage.rebuilt). Each call
    gives new dicts (:func:`rebuilt` marks them)."""
    return changes_by_article(conn, version_id, article).get(article, lambda day: [])


def changes_by_article(conn: psycopg.Connection, version_id: int,
                       article: str | None = None) -> dict[str, Callable[[dt.date], list[dict]]]:
    """:func:`changes_by_day` of every article of the text ``version_id`` that a stored change targets (or of
    ``article`` alone), read in one pass: the view is asked once per text, not once per article and day."""
    cursor = conn.cursor(row_factory=tuple_row)  # whatever the caller's connection makes of rows
    text = cursor.execute("SELECT v.base_eli, v.valid_from FROM act_versions v WHERE v.version_id = %s",
                          (version_id,)).fetchone()
    if text is None:
        return {}
    base, valid_from = text
    # The acts whose changes the text already carries: its footnotes name them (revision 0010).
    # (Not a repeal this module's changes put on the timeline: storage.legal_time ends the articles a later
    # act repeals whole, and that act is no footnote of the text.)
    carried = {r[0] for r in cursor.execute(
        "SELECT DISTINCT e.source_act FROM article_events e JOIN articles a USING (article_id) "
        "WHERE a.version_id = %s AND e.source_act IS NOT NULL AND NOT EXISTS ("
        "  SELECT 1 FROM amendment_changes c WHERE c.source_act = e.source_act AND e.kind = 'repealed' "
        "  AND e.source_unit = c.source_unit)",
        (version_id,))}
    rows = conn.cursor(row_factory=dict_row).execute(
        "SELECT source_act, ordinal, source_unit, target_article, target_unit, operation, after_unit, "
        "wording, old_words, new_words, new_label, in_force_from, in_force_undetermined, instruction "
        "FROM amendment_changes WHERE target_base_act = %(b)s "
        # an article's own changes, the repeal of the whole act ("Traci moc ustawa …"), a chapter repealed or added
        "AND ((%(a)s::text IS NULL AND target_article IS NOT NULL) OR target_article = %(a)s "
        "     OR (target_article IS NULL AND target_unit = '' AND operation = 'repeal') "
        "     OR (target_article IS NULL AND target_unit ~ %(part)s AND operation IN ('repeal', 'add'))) "
        "AND source_act <> %(b)s", {"b": base, "a": article, "part": instructions.PART_TARGET}).fetchall()
    rows = _parts_to_articles(conn, version_id, rows, article)
    # The amending acts in the order they were published (DU/2019/730 before DU/2019/1000: a text's order
    # would not), each instruction in its act's order: two acts changing a unit on one day apply in turn.
    rows.sort(key=lambda r: (parse_act_id(r["source_act"]), r["ordinal"]))
    current = _current_check(conn, version_id)
    # In force by the text's own date: the text states the law after it.
    after = [r for r in rows if r["source_act"] not in carried
             and not (r["in_force_from"] is not None and valid_from is not None and r["in_force_from"] <= valid_from)]
    targeted = dict.fromkeys(r["target_article"] for r in after if r["target_article"] is not None)
    if article is not None:
        targeted = {article: None}

    def on_day(own: list[dict]) -> Callable[[dt.date], list[dict]]:
        def on(day: dt.date) -> list[dict]:
            out = []
            for r in own:
                start = r["in_force_from"]
                status = "undetermined" if start is None else "in_force" if start <= day else "pending"
                unit = r["source_unit"]
                out.append({"act": r["source_act"], "unit": unit,
                            "operation": r["operation"], "target_unit": r["target_unit"],
                            "whole_act": r["target_article"] is None, "after": r["after_unit"],
                            "note": instructions.change_note(r["source_act"], unit, r["operation"],
                                                             r["target_unit"], r["target_article"] is None,
                                                             r["new_label"], status, start),
                            "in_force_from": start, "in_force_undetermined": r["in_force_undetermined"],
                            "status": status, "applied": False, "why": None, "text": r["wording"],
                            "old_words": r["old_words"], "new_words": r["new_words"], "new_label": r["new_label"],
                            "instruction": r["instruction"], "not_current": current(start or day)})
            return out
        return on

    # Each article's rows in the amending acts' order, the whole act's repeal among them where it falls.
    return {a: on_day([r for r in after if r["target_article"] in (a, None)]) for a in targeted}


def _parts_to_articles(conn: psycopg.Connection, version_id: int, rows: list[dict], article: str | None) -> list[dict]:
    """A change of a whole chapter (or section) as the changes of the articles it holds (issue 47): a chapter
    repealed ("uchyla się rozdziały 4 i 5"), each article the text has under its heading; a chapter added ("po
    rozdziale 3 dodaje się rozdziały 3a i 3b w brzmieniu: …"), each article its wording holds, added. Of
    ``article`` alone where given."""
    parts = [r for r in rows if r["target_article"] is None and r["target_unit"]]
    if not parts:
        return rows
    headings = conn.execute("SELECT article, heading_path FROM articles WHERE version_id = %s AND wording IN (0, 1) "
                            "ORDER BY ordinal", (version_id,)).fetchall()
    out = [r for r in rows if not (r["target_article"] is None and r["target_unit"])]
    for r in parts:
        held: list[tuple[str, str | None]]
        if r["operation"] == instructions.REPEAL:
            held = [(number, None) for number, path in headings if instructions.under(path or [], r["target_unit"])]
        else:
            held = list(instructions.articles_of(r["wording"] or ""))
        out += [{**r, "target_article": number, "target_unit": "", "wording": text if text is not None else r["wording"]}
                for number, text in held if article is None or number == article]
    return out


def _current_check(conn: psycopg.Connection, version_id: int):
    """For the text ``version_id``: a function of a change's date giving why the wording that change edits
    may not be the current one (None: it is). Current means every act the text's record lists as amending it
    after its date (a consolidated text's "Nowelizacje po tekście jednolitym", a base act's "Akty zmieniające":
    EliRecord.amendments_after) up to that date, or undated, is stored: its changes are then all known. A
    record without the list says nothing, and nothing is current."""
    eli, meta, valid_from = one_row(conn.execute(
        "SELECT v.eli, a.meta, v.valid_from FROM act_versions v JOIN acts a USING (eli) WHERE v.version_id = %s",
        (version_id,)))
    record = EliRecord.read(meta, eli)
    listed = record.amendments_after_text(valid_from)  # as ingest fetches them
    if listed is None:
        return lambda day: f"an edit of words: the record of {eli} lists no amending acts, so an act not stored " \
                           "may have changed the words since the text"
    stored = {r[0] for r in conn.execute("SELECT DISTINCT eli FROM act_versions WHERE eli = ANY(%s)",
                                         ([a.eli for a in listed],))}

    def why(day: dt.date) -> str | None:
        missing = [a.eli for a in listed if a.eli not in stored and (a.date is None or a.date <= day)]
        if not missing:
            return None
        shown = ", ".join(missing[:3]) + (f" (and {len(missing) - 3} more)" if len(missing) > 3 else "")
        return f"an edit of words: {shown}, listed as amending {eli} by then, not stored: the words may have changed"
    return why


def rebuilt(text: str, changes: list[dict]) -> str | None:
    """The wording on the date the changes were listed for: ``text`` with the changes in force by then that
    set, add, repeal or renumber whole units of it, or edit the words of a wording known to be current (their
    ``not_current`` None: :func:`changes_after`), by sources.rewording.rebuild, in the order they took
    effect; each change gets ``applied`` and, where in force but not applied, ``why`` (its unit stays as the
    official text has it). None when no change applies: the official text is the wording."""
    due = sorted((c for c in changes if c["status"] == "in_force" and not c["whole_act"]),
                 key=lambda c: c["in_force_from"])
    # A change whose date is not determined may come before an edit of the same unit: that edit's words are
    # then not known to be current.
    for c in due:
        if c.get("not_current") is None and rewording.edits_words(c):
            dateless = next((d for d in changes if d["status"] == "undetermined" and not d["whole_act"]
                             and rewording.overlap(d["target_unit"], c["target_unit"])), None)
            if dateless is not None:
                c["not_current"] = f"an edit of words: {dateless['act']} {dateless['unit']} changes " \
                                   f"{dateless['target_unit'] or 'the article'} on a date not determined"
    result = rewording.rebuild(text, due)
    for i, why in result.undetermined:
        due[i]["why"] = why
    for i in result.applied:
        due[i]["applied"] = True
    return result.text if result.applied else None
