"""How well are amending instructions read? Against the hand-annotated gold set (tests/data/amendments_gold.json,
docs/amendments-gold.md): instructions of the mirror's amending acts, each leaf per target unit.

    python -m bench.amendment_quality [--misses 10] [--gold tests/data/amendments_heldout.json]

The reader (pipeline.sources.instructions) runs on the parsed texts of the gold set's acts, over the articles and
top-level points the gold set covers. A change is found when (source, amending unit, target article, target
unit, operation) match a gold one; for those, the target act, the wording (whitespace and dashes normalised),
the words replaced, the unit it follows and the new label are compared. Prints precision and recall per
operation, the field agreement and the misses.

Operations the gold set has no name for are compared as it files them: an insertion of words and a change of
punctuation ("kropkę zastępuje się średnikiem") are its ``other``, and so is the repeal of a whole act.
"""
from __future__ import annotations

import collections
import json
import re

from bench.common import REPO, parsed_mirror_act, parser

GOLD = REPO / "tests" / "data" / "amendments_gold.json"
_MARKS = {".", ";", ",", ":"}


def _norm(text: str | None) -> str | None:
    if text is None:
        return None
    # The text layer glues a superscript to the word after it ("art. 22^1§ 1"): spaces there are not compared.
    text = re.sub(r"(\^\d+)\s*", r"\1 ", text)
    return re.sub(r"\s+", " ", re.sub(r"\s*[–—-]\s*", " - ", text)).strip().rstrip(".;,”")


def _op(c) -> str:
    if c.operation == "insert_words" or (c.operation == "replace_words" and c.old_words in _MARKS) \
            or (c.target_article is None and not c.target_unit):
        return "other"
    return c.operation


def _unit(u: str | None) -> str:
    return " ".join((u or "").replace("^", "^").split())


def main(argv: list[str] | None = None) -> None:
    from pipeline.sources.instructions import read_all

    ap = parser(__doc__, epilog=True)
    ap.add_argument("--misses", type=int, default=10, help="how many misses and false finds to list")
    ap.add_argument("--gold", default=str(GOLD), help="the gold set (default: %(default)s; the held-out one: "
                                                       "tests/data/amendments_heldout.json)")
    args = ap.parse_args(argv)
    gold = json.loads(open(args.gold, encoding="utf-8").read())["instructions"]
    # What the gold set covers: per source, the article and its top-level point ("art. 1 pkt 19").
    def top(unit: str) -> str:  # a point's letters: a cut inside a point (DU/2026/252 art. 1 pkt 19) stays out
        m = re.match(r"(art\. \S+(?: pkt \S+)?(?: lit\. \S+)?)", unit)
        return m.group(1) if m else unit
    covered = {(g["source"], top(g["amending_unit"])) for g in gold}
    want: dict[tuple, list[dict]] = collections.defaultdict(list)
    for g in gold:
        want[(g["source"], _unit(g["amending_unit"]), g["target_article"], _unit(g["target_unit"]),
              g["operation"])].append(g)
    got: dict[tuple, list] = collections.defaultdict(list)
    for source in sorted({g["source"] for g in gold}):
        _, parsed = parsed_mirror_act(source)
        for c in read_all([a for a in parsed.articles if a.wording in (0, 1)]):
            unit = _unit(f"art. {c.source_article}" + (f" {c.amending_unit}" if c.amending_unit else ""))
            if (source, top(unit)) not in covered:
                continue
            target_unit = c.target_unit
            got[(source, unit, c.target_article, _unit(target_unit), _op(c))].append(c)
    ops = sorted({k[4] for k in want} | {k[4] for k in got})
    print(f"{sum(map(len, want.values()))} gold changes in {len(covered)} articles / points of "
          f"{len({g['source'] for g in gold})} acts")
    print(f"  {'operation':<14} {'tp':>5} {'found':>6} {'gold':>5}      P      R")
    matched = []
    for op in ops + [None]:
        tp = found = total = 0
        for key in set(want) | set(got):
            if op is not None and key[4] != op:
                continue
            n = min(len(want.get(key, [])), len(got.get(key, [])))
            tp, found, total = tp + n, found + len(got.get(key, [])), total + len(want.get(key, []))
            if op is None:
                matched.extend(zip(want.get(key, []), got.get(key, [])))
        print(f"  {op or 'all':<14} {tp:>5} {found:>6} {total:>5}  {tp / found if found else 0:5.2f}  "
              f"{tp / total if total else 0:5.2f}")
    fields = {"target act": lambda g, c: g["target_journal"] == c.target_act,
              "wording": lambda g, c: _norm(g["text"]) == _norm(c.wording),
              "old words": lambda g, c: g["operation"] == "other" or _norm(g["old_words"]) == _norm(c.old_words),
              "new words": lambda g, c: g["operation"] == "other" or _norm(g["new_words"]) == _norm(c.new_words),
              "after": lambda g, c: _unit(g["after"]) == _unit(c.after_unit),
              "new label": lambda g, c: _unit(g["new_label"]) == _unit(c.new_label)}
    print("of the changes found, the fields that agree:")
    disagree = []
    for name, same in fields.items():
        ok = sum(1 for g, c in matched if same(g, c))
        print(f"  {name:<12} {ok:>4} / {len(matched)}")
        disagree += [(name, g, c) for g, c in matched if not same(g, c)]
    missed = [k for k in want for _ in range(len(want[k]) - len(got.get(k, [])))]
    false = [k for k in got for _ in range(len(got[k]) - len(want.get(k, [])))]
    for k in missed[:args.misses]:
        print(f"  missed: {k}")
    for k in false[:args.misses]:
        print(f"  false: {k}  {got[k][0].instruction[:120]!r}")
    for name, g, c in disagree[:args.misses]:
        print(f"  {name}: {g['source']} {g['amending_unit']}: gold {str(g.get({'target act': 'target_journal', 'wording': 'text', 'old words': 'old_words', 'new words': 'new_words', 'after': 'after', 'new label': 'new_label'}[name]))[:80]!r} "
              f"found {str({'target act': c.target_act, 'wording': c.wording, 'old words': c.old_words, 'new words': c.new_words, 'after': c.after_unit, 'new label': c.new_label}[name])[:80]!r}")


if __name__ == "__main__":
    main()
