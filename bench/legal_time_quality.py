"""How well provision time is read: the final provisions' "unit → date" rules and the footnotes of
consolidated texts, against the hand-annotated gold set (tests/data/legal_time_gold.json,
docs/legal-time-gold.md), per kind and format.

    python -m bench.legal_time_quality [--misses 10]

Rules: the acts' own final provisions (the gold set's rules quoted in an announcement's preamble, "nie
obejmuje … który stanowi", are counted apart: the product does not read the preamble). A rule is found
when (act, the act it dates, unit, kind of "when") match; its date is then compared with the gold date
where the gold set has one (counted from the publication date the product finds: the record, a PDF's
masthead, a consolidated text's footnote). Footnotes: in the acts annotated completely, each footnote by
its number: its kind (P/R per kind), and for those found, where its mark stands (article and unit), the
act and unit that made the change, and the date. The rules alone are measured, on the parsed texts,
without a database.
"""
from __future__ import annotations

import collections
import datetime as dt
import json

from bench.common import REPO, eli_dir, parsed_mirror_act, parser

GOLD = REPO / "tests" / "data" / "legal_time_gold.json"


def _record(act: str):
    from pipeline.sources.record import EliRecord

    return EliRecord.read(json.loads((eli_dir() / "acts" / act / "meta.json").read_text(encoding="utf-8")))


def _norm(unit: str) -> str:
    return " ".join(unit.lower().replace("–", "-").split())


def _footnote_texts(parsed) -> dict[int, str]:
    texts = {f.number: f.text for f in parsed.notes}
    for a in parsed.articles:
        texts.update((f.number, f.text) for f in a.footnotes)
    return texts


def extracted_rules(act: str) -> list[dict]:
    """The product's rules of an act's own text, with the dates it gives them."""
    from pipeline.sources import footnotes, provision_time, provisions
    from pipeline.sources.record import consolidated_subject

    fmt, parsed = parsed_mirror_act(act)
    record = _record(act)
    consolidated = record.is_consolidated_text or consolidated_subject(parsed.title) is not None
    own = None if consolidated else (record.dates.published or record.dates.announced
                                     or (dt.date.fromisoformat(parsed.published) if parsed.published else None))
    published = provision_time.published_of(footnotes.read(_footnote_texts(parsed)), own, consolidated)
    found = []
    for r in provisions.read([a for a in parsed.articles if a.wording in (0, 1)]):
        unit = r.target if r.article != "?" else "?"
        found.append({"act": act, "for_act": r.act or act, "unit": _norm(unit), "when": r.when.kind,
                      "date": r.when.on(published), "format": fmt, "scope": r.scope})
    return found


def extracted_footnotes(act: str) -> dict[str, dict]:
    from pipeline.sources import footnotes

    fmt, parsed = parsed_mirror_act(act)
    readings = footnotes.read(_footnote_texts(parsed))
    where: dict[int, list[tuple]] = collections.defaultdict(list)
    for f in parsed.notes:
        where[f.number].append((None, f.unit))
    for a in parsed.articles:
        for f in a.footnotes:
            where[f.number].append((a.number, f.unit if f.heading is None else ""))
    return {str(n): {"kind": r.kind, "source_act": r.source_act, "source_unit": r.source_unit, "date": r.date,
                     "where": where.get(n, []), "format": fmt} for n, r in readings.items()}


def _pr(tp: int, found: int, gold: int) -> str:
    p = tp / found if found else float("nan")
    r = tp / gold if gold else float("nan")
    return f"{tp:>4} {found:>5} {gold:>5}  P {p:5.2f}  R {r:5.2f}"


def score_rules(gold: dict, misses: int) -> None:
    acts = gold["complete_acts"]["rules"]
    own = [r for r in gold["rules"] if not r.get("quoted_in") and r["act"] in acts]
    quoted = [r for r in gold["rules"] if r.get("quoted_in")]
    got = [r for act in acts for r in extracted_rules(act)]
    key = lambda r: (r["act"], r["for_act"], _norm(r["unit"]), r["when"])  # noqa: E731
    gold_keys = collections.Counter(key(r) for r in own)
    got_keys = collections.Counter(key(r) for r in got)
    print(f"Rules (final provisions of {len(acts)} acts; {len(quoted)} more quoted in announcements, not read)")
    print("                       tp found  gold")
    for fmt in ("pdf", "html", None):
        g = collections.Counter(key(r) for r in own if fmt in (None, r["format"]))
        f = collections.Counter(key(r) for r in got if fmt in (None, r["format"]))
        print(f"  {fmt or 'all':<20} {_pr(sum((g & f).values()), sum(f.values()), sum(g.values()))}")
    for when in ("period", "next_day", "publication", "date", "other_act", "event"):
        g = collections.Counter(k for k in gold_keys.elements() if k[3] == when)
        f = collections.Counter(k for k in got_keys.elements() if k[3] == when)
        print(f"  when {when:<15} {_pr(sum((g & f).values()), sum(f.values()), sum(g.values()))}")
    dated = {key(r): r["date"] for r in got}
    with_date = [r for r in own if r["date"] and key(r) in dated]
    right = [r for r in with_date if str(dated[key(r)]) == r["date"]]
    undetermined = [r for r in with_date if dated[key(r)] is None]
    print(f"  dates of the rules found, where the gold set has one: {len(right)}/{len(with_date)} right, "
          f"{len(undetermined)} left undetermined, {len(with_date) - len(right) - len(undetermined)} wrong")
    wrong = [(r["act"], r["unit"], r["date"], dated[key(r)]) for r in with_date if r not in right and dated[key(r)]]
    for w in wrong[:misses]:
        print("    wrong date:", w)
    for k in list((gold_keys - got_keys).elements())[:misses]:
        print("    missed:", k)
    for k in list((got_keys - gold_keys).elements())[:misses]:
        print("    false:", k)


def score_footnotes(gold: dict, misses: int) -> None:
    acts = gold["complete_acts"]["footnotes"]
    entries = [f for f in gold["footnotes"] if f["act"] in acts and not f.get("in_footnote")]
    got = {act: extracted_footnotes(act) for act in acts}
    print(f"\nFootnotes ({len(entries)} in {len(acts)} acts annotated completely)")
    print("                       tp found  gold")
    kinds = sorted({f["kind"] for f in entries})
    for fmt in ("pdf", "html", None):
        for kind in kinds + [None]:
            g = [f for f in entries if fmt in (None, f["format"]) and kind in (None, f["kind"])]
            fnd = [(act, n) for act in acts for n, r in got[act].items() if fmt in (None, r["format"])
                   and kind in (None, r["kind"])]
            tp = [f for f in g if got[f["act"]].get(f["number"], {}).get("kind") == f["kind"]]
            label = f"{fmt or 'all'} {kind or 'every kind'}"
            if kind is None or fmt is None:
                print(f"  {label:<20} {_pr(len(tp), len(fnd), len(g))}")
    found = [(f, got[f["act"]][f["number"]]) for f in entries if f["number"] in got[f["act"]]]
    placed = [(f, r) for f, r in found if (f["article"], f["unit"]) in r["where"]
              or (f["heading"] and any(a == f["article"] for a, _ in r["where"]))]
    changes = [(f, r) for f, r in found if f["kind"] not in ("note", "published", "enters", "until_change")
               and f["kind"] == r["kind"]]
    acts_right = [(f, r) for f, r in changes if f["source_act"] == r["source_act"]]
    units_right = [(f, r) for f, r in changes if (f["source_unit"] or None) == r["source_unit"]]
    dated = [(f, r) for f, r in found if f["date"] and f["kind"] == r["kind"]]
    dates_right = [(f, r) for f, r in dated if str(r["date"]) == f["date"]]
    print(f"  mark placed on the gold article and unit: {len(placed)}/{len(found)}")
    print(f"  changes (added, wording, amended, repealed, renumbered, loses_force): source act right "
          f"{len(acts_right)}/{len(changes)}, source unit right {len(units_right)}/{len(changes)}")
    print(f"  dates (where the gold set has one): {len(dates_right)}/{len(dated)} right")
    for f, r in [(f, r) for f, r in found if f["kind"] != r["kind"]][:misses]:
        print(f"    kind: {f['act']} fn {f['number']} gold {f['kind']}, read {r['kind']}: {f['text'][:90]}")
    for f in [f for f in entries if f["number"] not in got[f["act"]]][:misses]:
        print(f"    not captured: {f['act']} fn {f['number']} ({f['kind']}) art. {f['article']}")
    for f, r in [(f, r) for f, r in found if (f, r) not in placed][:misses]:
        print(f"    placed: {f['act']} fn {f['number']} gold art. {f['article']} {f['unit']!r}, read {r['where'][:3]}")
    for f, r in [(f, r) for f, r in dated if (f, r) not in dates_right][:misses]:
        print(f"    date: {f['act']} fn {f['number']} gold {f['date']}, read {r['date']}")
    for f, r in [(f, r) for f, r in changes if (f, r) not in acts_right][:misses]:
        print(f"    act: {f['act']} fn {f['number']} gold {f['source_act']}, read {r['source_act']}")


def main(argv: list[str] | None = None) -> None:
    ap = parser(__doc__, epilog=True)
    ap.add_argument("--misses", type=int, default=10, help="how many misses and false finds to list per kind")
    args = ap.parse_args(argv)
    gold = json.loads(GOLD.read_text(encoding="utf-8"))
    score_rules(gold, args.misses)
    score_footnotes(gold, args.misses)


if __name__ == "__main__":
    main()
