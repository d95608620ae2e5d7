"""Rebuilt wordings against the official text published after the changes: end to end.

    python -m bench.amendment_end_to_end [--show 10]

For each pair (an act's earlier stored text, a later official text of it that the mirror holds), every unit
the later text's footnotes attribute to a stored amending act ("W brzmieniu ustalonym przez art. 161 pkt 4
ustawy … (Dz. U. poz. 730)", "Dodany przez …", "Uchylony przez …") is compared: the wording `pipeline show`
rebuilds from the earlier text on the later text's date, against the later official text. Each unit is
equal, different (listed, to be explained), or undetermined (the change is in force but not rebuilt; or no
change was read for it). Needs a database holding the mirror (`pipeline ingest --source ../shared/eli --all
--no-embed`).

An edit of words is applied only where the earlier text's record lists its amending acts and every one up to
the edit is stored; the mirror's rebuilt records list none. ``--listed EARLIER=ACT,ACT`` refreshes EARLIER's
stored record with that "Akty zmieniające" list (what the real API gives), in the database itself, as a sync
would: e.g. ``--listed DU/2002/1204=DU/2024/1222`` claims that no act not stored changed DU/2002/1204 before.
"""
from __future__ import annotations

import collections

from bench.common import parser
from pipeline.core.units import within
from pipeline.storage.verify import FROM_FOOTNOTES, normalised

# (earlier text, later official text): the mirror's records do not link them; their titles and dates do.
PAIRS = (("DU/2018/1000", "DU/2019/1781"), ("DU/2002/1204", "DU/2024/1513"))


def _units(text: str) -> dict[str, str]:
    from pipeline.core import units
    from pipeline.core.numbering import label_end

    lines = text.split("\n")
    found: dict[str, list[str]] = collections.defaultdict(list)
    for line, path in zip(lines, units.paths(lines, label_end(lines[0]))):
        found[path].append(line)
    return {path: normalised(" ".join(ls)) for path, ls in found.items()}


def _block(units: dict[str, str], unit: str) -> str:
    return " ".join(v for k, v in units.items() if within(k, unit)) if unit else \
        " ".join(units.values())


def _list_amending_acts(act: str, amending: list[str]) -> None:
    """``act``'s stored record refreshed with "Akty zmieniające" = ``amending`` (undated: each must be stored
    for any edit of words after the text to be applied), as ingest or sync would store it."""
    from pipeline.sources.record import AMENDING_ACTS, EliRecord
    from pipeline.storage import db, store

    with db.connect() as conn:
        row = conn.execute("SELECT meta FROM acts WHERE eli = %s", (act,)).fetchone()
        if row is None:
            raise SystemExit(f"error: {act} is not stored")
        meta = {**row[0], "references": {**(row[0].get("references") or {}),
                                         AMENDING_ACTS: [{"id": a} for a in amending]}}
        store.upsert_act(conn, EliRecord.read(meta, act))
        conn.commit()
    print(f"{act}: record lists as amending acts: {', '.join(amending) or 'none'}")


def main(argv: list[str] | None = None) -> None:
    from pipeline import Service

    ap = parser(__doc__, epilog=True)
    ap.add_argument("--show", type=int, default=10, help="how many different / undetermined units to list")
    ap.add_argument("--listed", action="append", default=[], metavar="EARLIER=ACT,ACT",
                    help="give EARLIER's stored record this list of amending acts (repeatable)")
    args = ap.parse_args(argv)
    for listed in args.listed:
        earlier, _, acts = listed.partition("=")
        _list_amending_acts(earlier, [a for a in acts.split(",") if a])
    with Service(pool_size=1, warm=False) as law:
        stored = {a["act"] for a in law.acts(current_only=False)}
        print(f"{'earlier':<14} {'later':<14} {'units':>5} {'equal':>6} {'different':>9} {'undetermined':>12}")
        listed: list[str] = []
        for earlier, later in PAIRS:
            if earlier not in stored or later not in stored:
                print(f"{earlier:<14} {later:<14}  (not stored)")
                continue
            toc = law.toc(later)
            day = toc["valid_from"]
            counts = collections.Counter()
            numbers = list(dict.fromkeys(e["article"] if isinstance(e, dict) else e for e in toc["articles"]))
            for number in numbers:
                timeline = law.show(later, number, official=True)["timeline"]
                # Each unit the later text attributes to a stored act, on the day that act's change holds
                # (a consolidated text may print a wording that comes after its own date).
                attributed = {(e["unit"], e["source"]["act"], max(day, e["from"]) if e["from"] else day)
                              for e in timeline if e["kind"] in FROM_FOOTNOTES and e["source"]["act"] in stored
                              and e["source"]["act"] not in (earlier, later)}
                for unit, source, on in sorted(attributed):
                    official = law.show(later, number, as_of=on, official=True)
                    try:
                        rebuilt = law.show(earlier, number, as_of=on)
                    except Exception:  # not in the earlier text and not added by a stored act
                        rebuilt = None
                    if rebuilt is None:
                        counts["undetermined"] += 1
                        listed.append(f"  undetermined: {later} art. {number} {unit or ''} ({source}): "
                                      f"the article is not in {earlier}, and no stored change adds it")
                        continue
                    mine, theirs = _block(_units(rebuilt["text"]), unit), _block(_units(official["text"]), unit)
                    touched = [c for c in rebuilt["changes"] if c["act"] == source and c["status"] == "in_force"
                               and (not unit or not c["target_unit"] or within(c["target_unit"], unit)
                                    or within(unit, c["target_unit"]))]
                    if mine == theirs:
                        counts["equal"] += 1
                    elif not any(c["applied"] for c in touched):
                        counts["undetermined"] += 1
                        why = "; ".join(sorted({c.get("why") or "not applied" for c in touched})) or "no change read"
                        listed.append(f"  undetermined: {later} art. {number} {unit} ({source}): {why}")
                    else:
                        counts["different"] += 1
                        listed.append(f"  DIFFERENT: {later} art. {number} {unit} ({source}):\n"
                                      f"    rebuilt:  {mine[:200]}\n    official: {theirs[:200]}")
            total = sum(counts.values())
            print(f"{earlier:<14} {later:<14} {total:>5} {counts['equal']:>6} {counts['different']:>9} "
                  f"{counts['undetermined']:>12}")
        for line in listed[:args.show]:
            print(line)


if __name__ == "__main__":
    main()
