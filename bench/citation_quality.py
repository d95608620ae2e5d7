"""How well `pipeline check` finds and judges citations: against the hand-annotated gold set
(tests/data/citations_gold.json, docs/citations-gold.md): passages of the mirror's acts citing other acts,
and hand-written drafts with deliberate faults.

    python -m bench.citation_quality [--misses 10]

Needs a database holding the mirror's acts (DATABASE_URL, or the embedded one in PIPELINE_HOME):
`pipeline ingest --source ../shared/eli --all --no-embed`. A citation is found when (text, article, unit)
match a gold one; of those found, the status is compared (a confusion table), and the stored text it was
resolved to. Prints detection precision and recall per kind of text, status accuracy, and the misses.
"""
from __future__ import annotations

import collections
import datetime as dt
import json

from bench.common import REPO, parser

GOLD = REPO / "tests" / "data" / "citations_gold.json"


def _key(text_id: str, article: str, unit: str) -> tuple[str, str, str]:
    return text_id, article.replace(" ", ""), " ".join((unit or "").split())


def main(argv: list[str] | None = None) -> None:
    from pipeline import Service

    ap = parser(__doc__, epilog=True)
    ap.add_argument("--misses", type=int, default=10, help="how many misses, false finds and wrong statuses to list")
    args = ap.parse_args(argv)
    gold = json.loads(GOLD.read_text(encoding="utf-8"))
    texts = {t["id"]: t for t in gold["texts"]}
    kinds = {t["id"]: t["kind"] for t in gold["texts"]}
    want: dict[tuple, list[dict]] = collections.defaultdict(list)
    for c in gold["citations"]:
        want[_key(c["text_id"], c["article"], c["unit"])].append(c)
    got: dict[tuple, list[dict]] = collections.defaultdict(list)
    with Service(pool_size=1, warm=False) as law:
        if not law.acts():
            raise SystemExit("no act is stored: pipeline ingest --source ../shared/eli --all --no-embed")
        for text_id, t in texts.items():
            as_of = dt.date.fromisoformat(t["as_of"]) if t.get("as_of") else None
            for c in law.check(t["text"], as_of=as_of).citations:
                got[_key(text_id, c["article"], c["unit"])].append(c)
    print(f"{len(texts)} texts, {sum(map(len, want.values()))} gold citations")
    print("                     tp found  gold      P      R")
    matched: list[tuple[dict, dict]] = []
    for kind in ("mirror", "draft", None):
        tp = found = total = 0
        for key in set(want) | set(got):
            if kind is not None and kinds.get(key[0]) != kind:
                continue
            n = min(len(want.get(key, [])), len(got.get(key, [])))
            tp, found, total = tp + n, found + len(got.get(key, [])), total + len(want.get(key, []))
            if kind is None:
                matched.extend(zip(want.get(key, []), got.get(key, [])))
        print(f"  {kind or 'all':<16} {tp:>5} {found:>5} {total:>5}  {tp / found if found else 0:5.2f}  "
              f"{tp / total if total else 0:5.2f}")
    confusion = collections.Counter((g["status"], f["status"]) for g, f in matched)
    right = sum(n for (g, f), n in confusion.items() if g == f)
    print(f"\nstatus of the citations found: {right}/{len(matched)} right")
    statuses = sorted({s for pair in confusion for s in pair})
    print("  gold \\ found      " + " ".join(f"{s[:12]:>12}" for s in statuses))
    for g in statuses:
        print(f"  {g:<17} " + " ".join(f"{confusion.get((g, f), 0):>12}" for f in statuses))
    resolved = [(g, f) for g, f in matched if g.get("stored_text") and f.get("text")]
    print(f"resolved to the gold's stored text: {sum(g['stored_text'] == f['text'] for g, f in resolved)}/{len(resolved)}")
    for key in [k for k in want if len(got.get(k, [])) < len(want[k])][:args.misses]:
        print("  missed:", key, want[key][0]["quote"])
    for key in [k for k in got if len(want.get(k, [])) < len(got[k])][:args.misses]:
        print("  false:", key, got[key][0]["quote"])
    for g, f in [(g, f) for g, f in matched if g["status"] != f["status"]][:args.misses]:
        print(f"  status: {g['text_id']} {g['quote']!r}: gold {g['status']}, found {f['status']} ({f['why']})")


if __name__ == "__main__":
    main()
