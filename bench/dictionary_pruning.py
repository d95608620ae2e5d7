"""Does leaving the self-only bare words out of polish.dict change any lexeme, and what does it save?

    .venv/bin/python -m bench.dictionary_pruning [--data DIR] [--runs 7]

Starts its own embedded PostgreSQL under --data and installs two ispell dictionaries beside the shipped
files: the conversion as shipped (textsearch.convert_hunspell, which drops them) and the same conversion
with every entry kept. Each goes behind the chain of sql/polish_fts.sql (stop words, ispell, simple).
Prints the entry counts, the words whose tsvector differs (every dictionary word, every word of the
mirror's HTML texts and of the eval questions; expected: 0), the texts whose tsvector differs, and the
first use of each dictionary in a fresh connection (median of --runs).
"""
from __future__ import annotations

import re
import statistics
import time
from pathlib import Path

import psycopg

from bench import common
from bench.textsearch import start_server
from pipeline.storage import textsearch

NAMES = ("bench_all_entries", "bench_shipped")
CHAIN = "asciiword, word, asciihword, hword, hword_asciipart, hword_part"


def both_conversions() -> tuple[list[str], list[str], str]:
    dic, aff = textsearch.hunspell_source()
    dic_text, aff_text = dic.read_text("utf-8"), aff.read_text("utf-8")
    shipped, affix = textsearch.convert_hunspell(dic_text, aff_text)
    keep_all = textsearch.drop_self_only_words
    textsearch.drop_self_only_words = lambda entries, affix_lines: entries
    try:
        every, _ = textsearch.convert_hunspell(dic_text, aff_text)
    finally:
        textsearch.drop_self_only_words = keep_all
    return every.splitlines(), shipped.splitlines(), affix


def words_and_texts(entries: list[str]) -> tuple[list[str], list[str]]:
    words = {e.partition("/")[0] for e in entries}
    texts = [re.sub(r"<[^>]+>", " ", p.read_text("utf-8", "replace"))
             for p in sorted((common.eli_dir() / "acts").glob("*/*/*/text.html"))]
    for text in texts:
        words.update(re.findall(r"\w+", text))
    for path in sorted(common.eval_dir().glob("*.jsonl")):
        words.update(re.findall(r"\w+", path.read_text("utf-8")))
    return sorted(words), texts


def first_use(uri: str, name: str, runs: int) -> float:
    took = []
    for _ in range(runs):
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("SELECT 1")
            t0 = time.perf_counter()
            conn.execute(f"SELECT ts_lexize('{name}', 'pracownika')")
            took.append(time.perf_counter() - t0)
    return statistics.median(took)


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--data", type=Path, default=common.tmp_path("fts-pg", "bench"))
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(common.machine_line(load=True))
    uri = start_server(args.data)
    tsd = textsearch.embedded_share_dir() / "tsearch_data"
    every, shipped, affix = both_conversions()
    print(f"entries: {len(every):,} -> {len(shipped):,} ({len(every) - len(shipped):,} bare words left out)")
    for name, entries in zip(NAMES, (every, shipped)):
        (tsd / f"{name}.dict").write_text("\n".join(entries) + "\n", "utf-8")
        (tsd / f"{name}.affix").write_text(affix, "utf-8")
    words, texts = words_and_texts(every)
    try:
        with psycopg.connect(uri, autocommit=True) as conn:
            for name in NAMES:  # what an interrupted run left
                conn.execute(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {name}")
                conn.execute(f"DROP TEXT SEARCH DICTIONARY IF EXISTS {name}")
            conn.execute("DROP TEXT SEARCH DICTIONARY IF EXISTS bench_stop")
            conn.execute("CREATE TEXT SEARCH DICTIONARY bench_stop (TEMPLATE = simple, StopWords = polish, Accept = false)")
            for name in NAMES:
                conn.execute(f"CREATE TEXT SEARCH DICTIONARY {name} (TEMPLATE = ispell, DictFile = {name}, AffFile = {name})")
                conn.execute(f"CREATE TEXT SEARCH CONFIGURATION {name} (COPY = pg_catalog.simple)")
                conn.execute(f"ALTER TEXT SEARCH CONFIGURATION {name} ALTER MAPPING FOR {CHAIN} "
                             f"WITH bench_stop, {name}, pg_catalog.simple")
            differ = conn.execute(
                f"SELECT w FROM unnest(%s::text[]) w WHERE to_tsvector('{NAMES[0]}', w) <> to_tsvector('{NAMES[1]}', w)",
                (words,)).fetchall()
            print(f"words whose tsvector differs: {len(differ)} of {len(words):,}"
                  + (f" (e.g. {', '.join(w for (w,) in differ[:10])})" if differ else ""))
            texts_differ = conn.execute(
                f"SELECT count(*) FROM unnest(%s::text[]) t WHERE to_tsvector('{NAMES[0]}', t) <> to_tsvector('{NAMES[1]}', t)",
                (texts,)).fetchone()[0]
            print(f"texts whose tsvector differs: {texts_differ} of {len(texts)} (the mirror's HTML texts, whole)")
        for name in NAMES:
            print(f"first use in a fresh connection, {name}: {first_use(uri, name, args.runs) * 1000:.0f} ms "
                  f"(median of {args.runs})")
        with psycopg.connect(uri, autocommit=True) as conn:
            for name in NAMES:
                conn.execute(f"DROP TEXT SEARCH CONFIGURATION {name}")
                conn.execute(f"DROP TEXT SEARCH DICTIONARY {name}")
            conn.execute("DROP TEXT SEARCH DICTIONARY bench_stop")
    finally:
        for name in NAMES:
            for ext in ("dict", "affix"):
                (tsd / f"{name}.{ext}").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
