"""A self-check any user can run (`pipeline verify`): where an act has two stored official texts, does what the
earlier text and the stored changes give on the later text's date agree with the later text?

For each unit of the later text (each ustęp or paragraph; the article where it has none), on the later text's
date: the official wording against the earlier text's article as `show --as-of` reads it (articles.article_on:
rebuilt with the stored changes in force by then). A unit is *equal*; *different* where the tool claims the
rebuilt wording (a stored change applied to the unit) and it differs, the one failure that must not be; else
*undetermined* (it differs, but no stored change the tool applied covers it: an act not stored changed it, or
its change was not applied, why said). And each date the later text's timeline gives a change by a stored act
(from its footnotes) against the date the stored act's instruction takes effect (the view amendment_changes).
"""
from __future__ import annotations

import collections
import datetime as dt
import re
from collections.abc import Sequence

import psycopg

from pipeline.core import units
from pipeline.core.act_id import parse_act_id
from pipeline.core.numbering import label_end
from pipeline.sources.record import act_name, consolidated_subject
from pipeline.storage.articles import ArticleOnDay, article_on
from pipeline.storage.db import one_row, read_only

EQUAL, DIFFERENT, UNDETERMINED = "equal", "different", "undetermined"
# The timeline's kinds a consolidated text's footnotes give, with the act that made the change.
FROM_FOOTNOTES = ("added", "wording", "amended", "renumbered", "repealed")


def unit_texts(text: str) -> dict[str, str]:
    """An article's text by its units (each ustęp or paragraph with what it holds; "" the article's own words
    before them), normalised for comparing: spaces, dashes and the footnote marks at a unit's end aside."""
    lines = text.split("\n")
    found: dict[str, list[str]] = collections.defaultdict(list)
    for line, path in zip(lines, units.paths(lines, label_end(lines[0]) if lines else 0), strict=True):
        top = units.block_of(path)
        found[top].append(line)
    return {unit: normalised(" ".join(held)) for unit, held in found.items()}


def normalised(text: str) -> str:
    """A unit's text for comparing two wordings: an article's label, spaces, dashes and a footnote mark at its end aside."""
    text = re.sub(r"^Art\.\s*\S+\.\s*", "", text.strip())
    text = re.sub(r"\s*\d{1,3}\)\s*$", "", text)  # a footnote mark at the end of a unit
    return re.sub(r"\s+", " ", re.sub(r"\s*[–—-]\s*", " - ", text)).strip()


def _texts_of_acts(conn: psycopg.Connection) -> dict[str, list[tuple]]:
    """Every stored official text (the newest version of each id), grouped by the act it is a text of: its base
    act as its record says, or, for a consolidated text whose record links none, the one stored act its title
    announces ("… jednolitego tekstu ustawy o ochronie danych osobowych"), published before it; never a guess
    among two. (version_id, eli, valid_from) each, oldest first."""
    rows = conn.execute(
        "SELECT v.base_eli, v.version_id, v.eli, v.valid_from, a.title FROM act_versions v JOIN acts a USING (eli) "
        "WHERE v.version_no = (SELECT max(w.version_no) FROM act_versions w WHERE w.eli = v.eli) "
        "ORDER BY v.valid_from NULLS FIRST, v.version_id").fetchall()  # an undated original before its announcements
    names = {eli: act_name(title).lower() for _, _, eli, _, title in rows if not consolidated_subject(title)}
    texts: dict[str, list[tuple]] = collections.defaultdict(list)
    for base, version_id, eli, valid_from, title in rows:
        if base == eli and (subject := consolidated_subject(title)):
            name = re.sub(r"^\w+\s+", "", subject).lower() if subject.lower().startswith(("ustaw", "dekret")) \
                else subject.lower()
            announced = [e for e, n in names.items() if n == name or n.startswith(name + " ")]
            if len(announced) == 1:
                base = announced[0]
        texts[base].append((version_id, eli, valid_from))
    return texts


def _pairs(conn: psycopg.Connection, acts: Sequence[str]) -> list[tuple[tuple, tuple]]:
    """Consecutive stored official texts of each act with two or more, earlier first; of ``acts`` (any of its
    texts' ids names the act) or of every act."""
    wanted = {str(parse_act_id(a)) for a in acts}
    return [(a, b) for base, found in sorted(_texts_of_acts(conn).items())
            if not wanted or base in wanted or any(t[1] in wanted for t in found)
            for a, b in zip(found, found[1:], strict=False) if b[2] is not None]  # the later text's date is the day


def _covers(change: dict, unit: str) -> bool:
    target = change.get("target_unit") or ""
    return change.get("whole_act") or not target or not unit or units.within(target, unit) or units.within(unit, target)


def _unit_verdict(mine: str | None, theirs: str, rebuilt: ArticleOnDay | None, unit: str) -> tuple[str, str]:
    if mine == theirs:
        return EQUAL, ""
    applied = [c for c in (rebuilt.changes if rebuilt else []) if c.get("applied") and _covers(c, unit)]
    if applied:
        return DIFFERENT, "rebuilt by " + ", ".join(sorted({f"{c['act']} {c['unit']}" for c in applied}))
    if rebuilt is None:
        return UNDETERMINED, "not in the earlier text, and no stored change adds it"
    told = [c for c in rebuilt.changes if c.get("status") == "in_force" and _covers(c, unit)]
    if told:
        return UNDETERMINED, "; ".join(sorted({c.get("why") or "not applied" for c in told}))
    return UNDETERMINED, "no stored change covers it: an act not stored changed it"


def _changes_dated(conn: psycopg.Connection, base: str, article: str) -> dict[str, set[dt.date | None]]:
    """Per stored amending act, the dates its instructions on ``article`` of the act ``base`` take effect."""
    found: dict[str, set[dt.date | None]] = collections.defaultdict(set)
    for source, start in conn.execute(
            "SELECT source_act, in_force_from FROM amendment_changes WHERE target_base_act = %s "
            "AND (target_article = %s OR target_article IS NULL)", (base, article)):
        found[source].add(start)
    return found


@read_only
def verify(conn: psycopg.Connection, acts: Sequence[str] = (), *, show: int = 20) -> list[dict]:
    """One record a pair of texts: {act, earlier, later, date, units: {equal, different, undetermined},
    dates: {…}, findings: [{kind, verdict, article, unit, why}] (up to ``show`` of each kind not equal)}."""
    stored = {r[0] for r in conn.execute("SELECT eli FROM act_versions")}
    out = []
    for (old_id, old_eli, _), (new_id, new_eli, day) in _pairs(conn, acts):
        base = one_row(conn.execute("SELECT base_eli FROM act_versions WHERE version_id = %s", (old_id,)))[0]
        counts: dict[str, collections.Counter[str]] = {"units": collections.Counter(), "dates": collections.Counter()}
        findings: list[dict] = []
        numbers = [r[0] for r in conn.execute(
            "SELECT article FROM articles WHERE version_id = %s AND NOT repealed AND wording IN (0, 1) "
            "ORDER BY ordinal", (new_id,))]
        for number in numbers:
            official = article_on(conn, new_id, number, day, rebuild=False)
            if official is None or official.in_force is False:
                continue
            rebuilt = article_on(conn, old_id, number, day)
            theirs, mine = unit_texts(official.text), unit_texts(rebuilt.text) if rebuilt else {}
            for unit, text in theirs.items():
                verdict, why = _unit_verdict(mine.get(unit), text, rebuilt, unit)
                counts["units"][verdict] += 1
                if verdict != EQUAL:
                    findings.append({"kind": "unit", "verdict": verdict, "article": number, "unit": unit, "why": why})
            dated = None
            for e in official.timeline:
                source = (e.get("source") or {}).get("act")
                if source is None or e["kind"] not in FROM_FOOTNOTES or source not in stored \
                        or source in (old_eli, new_eli) or e.get("from") is None:
                    continue
                dated = dated if dated is not None else _changes_dated(conn, base, number)
                starts = {d for d in dated.get(source, set()) if d is not None}
                verdict = UNDETERMINED if not starts else EQUAL if e["from"] in starts else DIFFERENT
                counts["dates"][verdict] += 1
                if verdict != EQUAL:
                    findings.append({"kind": "date", "verdict": verdict, "article": number, "unit": e.get("unit", ""),
                                     "why": f"the footnote's {source} from {e['from']}; its instruction: "
                                            + (", ".join(sorted(str(d) for d in starts)) or "none dated")})
        kept = [f for f in findings if f["verdict"] == DIFFERENT][:show] + \
            [f for f in findings if f["verdict"] == UNDETERMINED][:show]
        out.append({"act": base, "earlier": old_eli, "later": new_eli, "date": day,
                    "units": {k: counts["units"][k] for k in (EQUAL, DIFFERENT, UNDETERMINED)},
                    "dates": {k: counts["dates"][k] for k in (EQUAL, DIFFERENT, UNDETERMINED)},
                    "findings": kept})
    return out
