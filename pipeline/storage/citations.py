"""Check the citations of any text against the stored acts: does the cited article (and unit) exist in the
text of its act in force on the date, and is it in force then (revision 0010)?

One status per citation: ``ok``; ``not_found`` (no such article or unit in that text); ``not_in_force``
(repealed, or not yet / no longer in force on the date, with the dates); ``undetermined`` (the texts do not
determine when it is in force: the clause is quoted); ``act_not_stored`` (with the command that would add
it); ``ambiguous`` (the act is named so that several stored acts fit: the candidates). With each, what it
was checked against (the stored text, its version and date) and a SHA-256 of the cited unit's wording, so
that the check can be repeated later.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import re
import threading
from typing import Any
from dataclasses import replace

import psycopg
from psycopg.rows import dict_row

from pipeline.core import clock
from pipeline.core import units
from pipeline.core.codes import code_named
from pipeline.core.dates import parse_date
from pipeline.core.errors import Cancelled
from pipeline.core.limits import MAX_CHECK_CITATIONS, MAX_QUOTE_CHARS
from pipeline.core.numbering import label_end
from pipeline.sources import citations as finder
from pipeline.sources.citations import Citation
from pipeline.sources.record import short_title
from pipeline.storage.articles import article_on, require_date, similar_articles, text_on
from pipeline.storage.db import one_row, read_only

OK, NOT_FOUND, NOT_IN_FORCE, UNDETERMINED, ACT_NOT_STORED, AMBIGUOUS = (
    "ok", "not_found", "not_in_force", "undetermined", "act_not_stored", "ambiguous")
STATUSES = (OK, NOT_FOUND, NOT_IN_FORCE, UNDETERMINED, ACT_NOT_STORED, AMBIGUOUS)

_DASHES = re.compile(r"\s*[–—-]\s*")
# A title's own footnote mark runs on into some stored titles ("Prawo telekomunikacyjne 1) Niniejsza ustawa …").
_TITLE_NOTE = re.compile(r"\s+\d{1,2}\)\s.*$")


def _norm(name: str) -> str:
    return _DASHES.sub(" - ", " ".join(name.lower().split()))


def _name(text: str) -> str:
    """An act's name, comparable: "– Prawo bankowe" / "ustawy o ochronie danych" → "prawo bankowe" /
    "o ochronie danych" (the kind of act and a leading dash dropped)."""
    name = _norm(_TITLE_NOTE.sub("", text)).strip(" -")
    return re.sub(r"^(?:ustaw[aąyie]\w*|kodeks\w*(?= postępowania| karn| cywil| prac| spółek| rodz| wykr))\s+(?=o\s)", "",
                  name).strip(" -")


def _starts(words: list[str], prefix: list[str]) -> bool:
    return len(prefix) <= len(words) and words[:len(prefix)] == prefix


def _by_name(rows: list[dict], cited: str, year: int | None,
             date: dt.date | None = None) -> tuple[list[dict], str | None]:
    """The stored acts a name fits, the closest fit first: the same name; a stored name the cited words begin
    with (a name written without its date runs on into the sentence: "– Prawo przedsiębiorców stosuje się
    …"), the longest; the cited words beginning a stored name ("Prawo telekomunikacyjne" of a title that
    prints its footnote); else the first three or more cited words inside a stored title. A year (of the
    act's date, as cited) keeps the acts of that year where several fit; a whole date (a title cited with it)
    keeps the acts of that date, whose date is known."""
    words = _name(cited).split()
    if not words:
        return [], None
    named = [(r, _name(r["short"] or "").split()) for r in rows]
    found: list[dict] = [r for r, n in named if n == words]
    matched = " ".join(words)
    if not found:
        longest = max((len(n) for r, n in named if n and _starts(words, n)), default=0)
        found = [r for r, n in named if n and len(n) == longest and _starts(words, n)]
        matched = " ".join(words[:longest])
    if not found and len(words) >= 2:
        found = [r for r, n in named if _starts(n, words)]
        matched = " ".join(words)
    if not found:
        for n in range(len(words), min(len(words), 3) - 1, -1):
            matched = " ".join(words[:n])
            found = [r for r in rows if r["title"] and matched in _norm(r["title"])]
            if found:
                break
    if date is not None:
        # The act's date as cited tells acts of one name apart; a text whose own date is not known goes with the
        # stored texts of its name (texts of one act), so that one known date decides for all of them.
        dated = {n: {r["act_date"] for r in found if _name(r["short"] or "") == n and r["act_date"]}
                 for n in {_name(r["short"] or "") for r in found}}
        found = [r for r in found if not dated[_name(r["short"] or "")] or date in dated[_name(r["short"] or "")]]
    elif len(found) > 1 and year:
        kept = [r for r in found if (r["act_date"].year if r["act_date"] else int(r["base_eli"].split("/")[1])) == year]
        found = kept or found
    return found, (matched if found else None)


def _one_act(conn: psycopg.Connection, found: list[dict], as_of: dt.date | None) -> list[dict]:
    """Stored acts of one name and one date are texts of one act stored apart (the mirror's records do not link
    an act to its consolidated texts): of those, the text in force on the date, else the earliest."""
    if len(found) < 2 or len({_name(r["short"] or "") for r in found}) > 1 \
            or len({r["act_date"] for r in found if r["act_date"]}) > 1:
        return found
    bases = [r["base_eli"] for r in found]
    newest = conn.execute("SELECT base_eli FROM versions_as_of(%s) WHERE base_eli = ANY(%s) "
                          "ORDER BY valid_from DESC NULLS LAST LIMIT 1", (as_of, bases)).fetchone()
    if newest is None:
        newest = one_row(conn.execute("SELECT base_eli FROM act_versions WHERE base_eli = ANY(%s) "
                              "ORDER BY valid_from NULLS LAST LIMIT 1", (bases,)))
    return [r for r in found if r["base_eli"] == newest[0]]


def _candidates(conn: psycopg.Connection, c: Citation, as_of: dt.date | None) -> tuple[list[str], str | None, str | None]:
    """The stored base acts the citation's act may be: by its ELI id (a code's base act, a Dz. U. position:
    the act itself or a stored text of it), else by its name (and the year of its date) among the stored
    acts' names; the words of the name that found them; and a note where the act was found otherwise than
    the words say (an older consolidated text's Dz. U. position, texts of one act stored apart)."""
    note = None
    if c.act is not None:
        bases = [r[0] for r in conn.execute(
            "SELECT DISTINCT base_eli FROM acts WHERE (eli = %(a)s OR base_eli = %(a)s) "
            "AND EXISTS (SELECT 1 FROM act_versions v WHERE v.base_eli = acts.base_eli)", {"a": c.act})]
        # A code named (its base act) is that code: "Kodeks karny wykonawczy" is not "Kodeks karny" run on.
        if bases or not c.name or code_named(c.name, abbreviations=False) == c.act:
            return bases, None, None
        # A Dz. U. position of a text not stored (an older consolidated text), with the act's title and date:
        # the act is the one that title and date name.
        note = f"{c.act} (the position cited) is not stored"
    if not c.name:
        return [], None, None
    rows = conn.cursor(row_factory=dict_row).execute(
        "SELECT DISTINCT ON (base_eli) base_eli, title, act_date FROM act_currency a "
        "WHERE EXISTS (SELECT 1 FROM act_versions v WHERE v.base_eli = a.base_eli) ORDER BY base_eli, eli = base_eli DESC"
    ).fetchall()
    for r in rows:
        r["short"] = short_title(r["title"])
    found, matched = _by_name(rows, c.name, c.year, parse_date(c.title) if c.title else None)
    chosen = _one_act(conn, found, as_of)
    if len(chosen) == 1 and len(found) > 1:
        apart = ", ".join(r["base_eli"] for r in found)
        note = (note + "; " if note else "") + f"texts of one act stored apart ({apart}): the one in force checked"
    elif len(chosen) == 1 and note:
        note += f"; checked against {chosen[0]['base_eli']}, the stored text of the act its title names"
    return [r["base_eli"] for r in chosen], matched, (note if chosen else None)


def _unit_lines(text: str, unit: str) -> list[str] | None:
    """The lines of ``unit`` in an article's text ("§ 1 pkt 2"); None when the article has no such unit."""
    lines = text.split("\n")
    paths = units.paths(lines, label_end(lines[0]) if lines else 0)
    held = [line for line, path in zip(lines, paths, strict=True) if units.within(path, unit)]
    return held or None


def _top_units(text: str) -> list[str]:
    lines = text.split("\n")
    paths = units.paths(lines, label_end(lines[0]) if lines else 0)
    return list(dict.fromkeys(p.split(" ")[0] + " " + p.split(" ")[1] for p in paths if p.count(" ") >= 1))


def _check_one(conn: psycopg.Connection, text: str, c: Citation, day: dt.date, as_of: dt.date | None) -> dict:
    out: dict[str, Any] = {"quote": c.quote, "start": c.start, "end": c.end, "act_as_written": c.act_words, "act": c.act,
           "article": c.article, "unit": c.unit, "status": None, "why": None, "note": None, "text": None,
           "version_no": None, "valid_from": None, "checked_as_of": day, "in_force_from": None,
           "in_force_until": None, "sha256": None, "candidates": [], "ingest": None}
    bases, name, out["note"] = _candidates(conn, c, as_of)
    if name and not c.from_context and not c.title:
        out["quote"], out["end"] = finder.quote_to(text, c, name)
    if not bases:
        out["status"] = ACT_NOT_STORED
        if c.foreign:  # EU law: not an act of the Dziennik Ustaw, nothing to ingest
            out["why"] = f"{c.name} is {c.foreign}, not an act of the Dziennik Ustaw: not stored here"
        elif c.act:
            out["ingest"] = f"pipeline ingest --act {c.act} --latest"
            out["why"] = f"{c.act} is not stored"
        else:
            title = c.title or c.name or c.act_words
            out["ingest"] = f'pipeline ingest --title "{(c.name or title).removeprefix("o ").strip()}"'
            out["why"] = f"no stored act is named {title!r}"
        return out
    if len(bases) > 1:
        out.update(status=AMBIGUOUS, candidates=bases, why=f"{len(bases)} stored acts fit {c.act_words!r}")
        return out
    base = bases[0]
    version = text_on(conn, base, as_of)  # the text `show` reads for the day
    if version is None:
        earliest = conn.execute("SELECT eli, min(valid_from) FROM act_versions WHERE base_eli = %s GROUP BY eli "
                                "ORDER BY 2 NULLS LAST LIMIT 1", (base,)).fetchone()
        # No article of that number in any stored text: a wrong number whenever the act comes into force.
        if not conn.execute("SELECT 1 FROM articles ar JOIN act_versions v USING (version_id) "
                            "WHERE v.base_eli = %s AND ar.article = %s LIMIT 1", (base, c.article)).fetchone():
            last = conn.execute("SELECT ar.article FROM articles ar JOIN act_versions v USING (version_id) "
                                "WHERE v.base_eli = %s ORDER BY v.version_no DESC, ar.ordinal DESC LIMIT 1",
                                (base,)).fetchone()
            alike = similar_articles(conn, c.article, base=base)
            out.update(status=NOT_FOUND, act=base, text=earliest[0] if earliest else None,
                       why=f"no stored text of {base} has art. {c.article}"
                           + (f" (did you mean art. {' or art. '.join(alike)}?)" if alike else
                              f" (its last article is art. {last[0]})" if last else ""))
            return out
        out.update(status=NOT_IN_FORCE, act=base, text=earliest[0] if earliest else None,
                   why=f"no stored text of {base} is in force on {day}"
                       + (f" (the earliest from {earliest[1]})" if earliest and earliest[1] else ""))
        return out
    out.update(act=base, text=version["eli"], version_no=version["version_no"], valid_from=version["valid_from"])
    # The article on the day as `pipeline show` gives it: the wording in force, rebuilt from the stored changes in
    # force by then where they determine it (never an official text), or added by a later stored act.
    found = article_on(conn, version["version_id"], c.article, day)
    if found is None:
        last = conn.execute("SELECT article FROM articles WHERE version_id = %s ORDER BY ordinal DESC LIMIT 1",
                            (version["version_id"],)).fetchone()
        # A superscript pasted as a plain digit ("183a" for 18^3a): the article meant.
        alike = similar_articles(conn, c.article, version_id=version["version_id"])
        out.update(status=NOT_FOUND, why=f"{version['eli']} has no art. {c.article}"
                   + (f" (did you mean art. {' or art. '.join(alike)}?)" if alike else
                      f" (its last article is art. {last[0]})" if last else ""))
        return out
    out.update(in_force_from=found.in_force_from, in_force_until=found.in_force_until)
    wording = found.text
    if not found.official:
        by = sorted({f"{ch['act']} {ch['unit']}" for ch in found.changes if ch["applied"]})
        out["note"] = "; ".join(filter(None, (out["note"], "checked against the wording rebuilt from later changes "
                                                         f"({', '.join(by)}), not an official text")))
    if found.repealed:  # "Art. 96. (uchylony)": whichever unit is cited, the article is gone
        out["sha256"] = hashlib.sha256(wording.encode("utf-8")).hexdigest()
        if found.in_force is None:  # a day before its repeal that the stored texts do not word
            out.update(status=UNDETERMINED, why=f"the texts do not determine it: {found.in_force_undetermined}")
            return out
        out.update(status=NOT_IN_FORCE, why=f"art. {c.article} is repealed (uchylony) in {version['eli']}")
        return out
    if c.unit:
        held = _unit_lines(wording, c.unit)
        if held is None:
            top = _top_units(wording)
            out.update(status=NOT_FOUND, why=f"art. {c.article} of {version['eli']} has no {c.unit}"
                       + (f" (it has {', '.join(top)})" if top else " (it has no units)"))
            return out
        wording = "\n".join(held)
    out["sha256"] = hashlib.sha256(wording.encode("utf-8")).hexdigest()
    if c.unit and re.search(r"\((?:uchylon\w*|utracił\w* moc)\)\s*\.?\s*$", wording):
        out.update(status=NOT_IN_FORCE, why=f"art. {c.article} {c.unit} is repealed (uchylony) in {version['eli']}")
        return out
    if found.in_force is False:
        start, end = found.in_force_from, found.in_force_until
        why = (f"in force only until {end - dt.timedelta(days=1)}" if end is not None and day >= end
               else f"in force from {start}")
        out.update(status=NOT_IN_FORCE, why=f"art. {c.article} of {version['eli']} is not in force on {day}: {why}")
        return out
    if c.unit:
        hit = next((u for u in found.units_not_in_force if units.within(c.unit, u["unit"])), None)
        if hit is not None:
            out.update(status=NOT_IN_FORCE, why=hit["note"])
            return out
    if found.in_force is None:
        # A clause of the act is quoted; what is missing (this module's own words) is said plainly.
        undetermined = found.in_force_undetermined
        missing = undetermined and undetermined.startswith("the ")
        out.update(status=UNDETERMINED, why="the texts do not determine when it is in force"
                   + (f": {undetermined}" if missing else f": „{undetermined}”" if undetermined else ""))
        return out
    out["status"] = OK
    return out


def _articles_of(conn: psycopg.Connection, c: Citation, as_of: dt.date | None) -> list[str] | None:
    """The articles, in order, of the stored text a range's act has in force on the date (what the range
    spans); None where the citation's act is not one stored act with a text then."""
    bases, _, _ = _candidates(conn, c, as_of)
    if len(bases) != 1:
        return None
    version = conn.execute("SELECT version_id FROM versions_as_of(%s) WHERE base_eli = %s",
                           (as_of, bases[0])).fetchone()
    if version is None:
        return None
    return [r[0] for r in conn.execute("SELECT article FROM articles WHERE version_id = %s ORDER BY ordinal", version)]


@read_only
def check(conn: psycopg.Connection, text: str, cited: tuple[list[Citation], int], *, as_of: dt.date | None = None,
          limit: int = MAX_CHECK_CITATIONS, stop: threading.Event | None = None) -> tuple[list[dict], int]:
    """The citations ``text`` cites (``cited``: pipeline.sources.citations.found_in's, found by the caller with no
    connection held: that is CPU alone; the text for the quotes, as pasted), checked against the stored text of its act in force on ``as_of`` (None:
    today), in the text's order: the first ``limit`` of them, and how many more the text cites, not checked (a
    range past the limit counted by its numbers). A range spans the articles its act's stored text has between
    its ends (pipeline.sources.citations.between). ``stop`` set (the caller left): Cancelled, between citations."""
    require_date(as_of)
    day = as_of or clock.today()
    found, more = cited
    out: list[dict] = []
    for c in found:
        if len(out) >= limit:
            more += finder.weight(c)
            continue
        numbers, unlisted = finder.between(c, _articles_of(conn, c, as_of) if c.after is not None else None)
        more += unlisted
        for number in numbers:
            if len(out) >= limit:
                more += 1
                continue
            if stop is not None and stop.is_set():
                raise Cancelled("the caller left: the check was stopped")
            record = _check_one(conn, text, replace(c, article=number, after=None), day, as_of)
            if len(record["quote"]) > MAX_QUOTE_CHARS:
                half = MAX_QUOTE_CHARS // 2
                record["quote"] = f"{record['quote'][:half]} … {record['quote'][-half:]}"
            out.append(record)
    return out, more
