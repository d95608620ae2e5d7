"""How well are a statute's delegations read? Precision and recall of the delegating units
(pipeline.sources.delegations) against a gold set annotated blind (tests/data/delegations_gold.json,
docs/delegations-gold.md), per act, and the agreement of organ, form and obligatory on the units found.

    python -m bench.delegations_quality [--gold FILE] [--misses 10] [--normative-only]

A unit matches when the act and the unit are the gold's ("art. 12 ust. 5"); a delegation the gold marks
not normative (an announcement, a "komunikat") counts like the others unless --normative-only.
"""
from __future__ import annotations

import collections
import json
import re
from pathlib import Path

from bench.common import parsed_mirror_act, parser

GOLD = Path(__file__).resolve().parents[1] / "tests" / "data" / "delegations_gold.json"


def _unit(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u00a0", " ")).strip()


def main() -> None:
    from pipeline.sources.delegations import read_all

    p = parser(__doc__)
    p.add_argument("--gold", type=Path, default=GOLD)
    p.add_argument("--misses", type=int, default=10)
    p.add_argument("--normative-only", action="store_true")
    args = p.parse_args()
    gold = [g for g in json.loads(args.gold.read_text(encoding="utf-8"))
            if not args.normative_only or g.get("normative", True)]
    acts = sorted({g["act"] for g in gold})
    rows, misses, extras, fields = [], [], [], collections.Counter()
    for act in acts:
        _, parsed = parsed_mirror_act(act)
        found = {_unit(f"art. {d.article} {d.unit}"): d for d in read_all(parsed.articles)
                 if not args.normative_only or d.normative}
        want = {_unit(g["unit"]): g for g in gold if g["act"] == act}
        hit = set(found) & set(want)
        rows.append((act, len(found), len(want), len(hit)))
        misses += [f"  {act} {u}: {want[u]['text'][:90]}" for u in sorted(set(want) - hit)]
        extras += [f"  {act} {u}: {found[u].text[:90]}" for u in sorted(set(found) - hit)]
        for u in hit:
            d, g = found[u], want[u]
            fields["units"] += 1
            fields["form"] += d.form == g["form"]
            fields["obligatory"] += d.obligatory == g["obligatory"]
            fields["organ"] += _unit(d.organ).lower() == _unit(g["organ"]).lower()
            fields["in_agreement_with"] += (d.in_agreement_with or None) == (g.get("in_agreement_with") or None)
    print(f"| act | found | gold | matched | precision | recall |\n|---|---|---|---|---|---|")
    for act, nf, ng, nh in rows + [("all", *map(sum, zip(*[r[1:] for r in rows])))]:
        print(f"| {act} | {nf} | {ng} | {nh} | {nh / nf if nf else 0:.2f} | {nh / ng if ng else 0:.2f} |")
    n = fields.pop("units", 0)
    print("\nfields on the matched units: " + ", ".join(f"{k} {v}/{n}" for k, v in fields.items()))
    for title, listed in (("missed", misses), ("not in the gold", extras)):
        if listed:
            print(f"\n{title} ({len(listed)}):")
            print("\n".join(listed[:args.misses]))


if __name__ == "__main__":
    main()
