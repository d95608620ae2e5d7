"""How well the legal-context rules read references and definitions: precision and recall against the
hand-annotated gold set (tests/data/context_gold.json, docs/context-gold.md), per kind and format.

    python -m bench.context_quality [--misses 10]

Prints, for references (internal / relative / external, PDF / HTML) and definitions (list / whenever /
sentence), true positives, precision and recall at two strictnesses, then the misses and false
finds. Only the gold set's own articles are scored (every reference in them was annotated). A target
counts as found when (act, article, kind, cited act, cited article) match; "strict" adds the unit
("§ 1 pkt 2"). A definition counts when its article and term match (the term as printed, or the
annotator's lemma); "strict" adds the unit. The extraction rules alone are measured, on the parsed
texts, without a database: an external target is what the text names (the base act of a code, the
Dz. U. text cited), as stored before the view resolves it against stored acts.
"""
from __future__ import annotations

import collections
import json

from bench.common import REPO, eli_dir, parsed_mirror_act, parser

GOLD = REPO / "tests" / "data" / "context_gold.json"


def _text_of(act: str):
    fmt, parsed = parsed_mirror_act(act)
    return fmt, parsed.articles


def _base(act: str) -> str:
    meta = json.loads((eli_dir() / "acts" / act / "meta.json").read_text(encoding="utf-8"))
    found = (meta.get("references") or {}).get("Tekst jednolity dla aktu") or []
    return found[0]["id"] if found else act


def _score(gold: set, found: set) -> dict:
    tp = len(gold & found)
    return {"gold": len(gold), "found": len(found), "tp": tp,
            "precision": tp / len(found) if found else None, "recall": tp / len(gold) if gold else None}


def measure(gold_data: dict) -> dict:
    from pipeline.sources import definitions, references

    acts = sorted({a["act"] for a in gold_data["articles"]} | {a["act"] for a in gold_data["definition_articles"]})
    texts = {act: _text_of(act) for act in acts}
    scored_refs = {(a["act"], a["article"]) for a in gold_data["articles"]}
    scored_defs = {(a["act"], a["article"]) for a in gold_data["definition_articles"]}
    found_refs, found_defs = [], []
    for act, (fmt, articles) in texts.items():
        for r in references.extract(articles, _base(act)):
            if (act, r.article) in scored_refs:
                found_refs.append((fmt, act, r))
        for d in definitions.extract(articles):
            if (act, d.article) in scored_defs:
                found_defs.append((fmt, act, d))
    report: dict = {"references": {}, "definitions": {}, "misses": [], "false": []}

    def ref_key(act: str, article: str, kind: str, target_act, target_article, unit: str, strict: bool) -> tuple:
        return (act, article, kind, target_act, target_article) + ((unit,) if strict else ())

    for strict in (False, True):
        level = "strict" if strict else "loose"
        for kind in ("internal", "relative", "external", "all"):
            for fmt in ("pdf", "html", "all"):
                gold = {ref_key(g["act"], g["article"], g["kind"], g["target_act"], g["target_article"],
                                g["target_unit"], strict)
                        for g in gold_data["references"]
                        if kind in ("all", g["kind"]) and fmt in ("all", g["source_format"])}
                found = {ref_key(act, r.article, r.kind, r.target_act, r.target_article, r.target_unit, strict)
                         for f, act, r in found_refs if kind in ("all", r.kind) and fmt in ("all", f)}
                report["references"][f"{level} {kind} {fmt}"] = _score(gold, found)
                if strict and kind == "all" and fmt == "all":
                    report["misses"] += [("reference",) + k for k in sorted(gold - found, key=str)]
                    report["false"] += [("reference",) + k for k in sorted(found - gold, key=str)]

    def terms(g: dict) -> set[str]:
        return {t.lower() for t in (g["term"], g.get("lemma"), g.get("printed")) if t}

    for strict in (False, True):
        level = "strict" if strict else "loose"
        gold_items = gold_data["definitions"]
        found_items = [(act, d) for _, act, d in found_defs]
        pairs: dict[int, int] = {}  # gold -> found, each used once
        for i, g in enumerate(gold_items):
            for j, (act, d) in enumerate(found_items):
                if j in pairs.values() or (act, d.article) != (g["act"], g["article"]) or d.term.lower() not in terms(g):
                    continue
                if strict and d.unit != g["unit"]:
                    continue
                pairs[i] = j
                break
        matched_found = set(pairs.values())
        # Per formula: recall over the gold items of that formula (as the annotator named it), precision
        # over the found items of that formula (as the rules named it): the two may call one definition
        # differently ("Ilekroć … jest mowa o: 1) …" is a list here, "whenever" in the gold set).
        for formula in ("list", "whenever", "sentence", "all"):
            gold_of = [i for i, g in enumerate(gold_items) if formula in ("all", g["formula"])]
            found_of = [j for j, (_, d) in enumerate(found_items) if formula in ("all", d.formula)]
            tp_gold = sum(1 for i in gold_of if i in pairs)
            tp_found = sum(1 for j in found_of if j in matched_found)
            report["definitions"][f"{level} {formula}"] = {
                "gold": len(gold_of), "found": len(found_of), "tp": tp_gold,
                "precision": tp_found / len(found_of) if found_of else None,
                "recall": tp_gold / len(gold_of) if gold_of else None}
        if strict:
            report["misses"] += [("definition", g["act"], g["article"], g["unit"], g["term"])
                                 for i, g in enumerate(gold_items) if i not in pairs]
            report["false"] += [("definition", act, d.article, d.unit, d.term)
                                for j, (act, d) in enumerate(found_items) if j not in matched_found]
    return report


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, epilog=True)
    ap.add_argument("--misses", type=int, default=15, help="how many misses and false finds to list")
    ap.add_argument("--json", action="store_true", help="the whole report as JSON")
    args = ap.parse_args(argv)
    report = measure(json.loads(GOLD.read_text(encoding="utf-8")))
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1, default=str))
        return 0
    fmt = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
    print(f"{'references':<28} {'gold':>5} {'found':>6} {'tp':>5} {'P':>5} {'R':>5}")
    for name, s in report["references"].items():
        print(f"{name:<28} {s['gold']:>5} {s['found']:>6} {s['tp']:>5} {fmt(s['precision']):>5} {fmt(s['recall']):>5}")
    print(f"\n{'definitions':<28} {'gold':>5} {'found':>6} {'tp':>5} {'P':>5} {'R':>5}")
    for name, s in report["definitions"].items():
        print(f"{name:<28} {s['gold']:>5} {s['found']:>6} {s['tp']:>5} {fmt(s['precision']):>5} {fmt(s['recall']):>5}")
    for title, rows in (("misses", report["misses"]), ("false finds", report["false"])):
        print(f"\n{title} ({len(rows)}), first {args.misses}:")
        for row in rows[:args.misses]:
            print("  " + " | ".join("" if x is None else str(x) for x in row))
    counts = collections.Counter(r[0] for r in report["misses"])
    print(f"\nmisses by type: {dict(counts)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
