"""What the shape of polish.dict costs a connection that loads it, and that the shape changes no lexeme.

    .venv/bin/python -m bench.dictionary_file [--data DIR] [--runs 7]

Starts its own embedded PostgreSQL under --data and installs three ispell dictionaries beside the
shipped files, each from textsearch.convert_hunspell:
  flags_all      every entry, its flags written out, ordered by (flags, word) (converter version 3)
  flags_pruned   without the bare words that change no lexeme (drop_self_only_words), same format
  shipped        as shipped: those words left out, flag sets numbered (AF), entries in word order
Each goes behind the chain of sql/polish_fts.sql (stop words, ispell, simple). Prints the entry counts,
the words whose tsvector differs between flags_all and shipped (every dictionary word, every word of the
mirror's HTML texts and of the eval questions; expected: 0), the whole texts whose tsvector differs,
and each dictionary's first use in a fresh connection (median of --runs).
"""
from __future__ import annotations

import re
import statistics
import time
from contextlib import contextmanager
from pathlib import Path

import psycopg

from bench import common
from bench.textsearch import start_server
from pipeline.storage import textsearch

NAMES = ("bench_flags_all", "bench_flags_pruned", "bench_shipped")
CHAIN = "asciiword, word, asciihword, hword, hword_asciipart, hword_part"


@contextmanager
def replaced(name: str, stand_in):
    kept = getattr(textsearch, name)
    setattr(textsearch, name, stand_in)
    try:
        yield
    finally:
        setattr(textsearch, name, kept)


def flags_written_out(entries: list[str], affix_lines: list[str]) -> tuple[list[str], list[str]]:
    return sorted(entries, key=lambda e: (e.partition("/")[2].encode(), e.partition("/")[0].lower().encode())), affix_lines


def three_files() -> list[tuple[str, str]]:
    """(dict text, affix text) per name of NAMES."""
    dic, aff = textsearch.hunspell_source()
    source = dic.read_text("utf-8"), aff.read_text("utf-8")
    with replaced("_number_flag_sets", flags_written_out):
        with replaced("drop_self_only_words", lambda entries, affix_lines: entries):
            flags_all = textsearch.convert_hunspell(*source)
        flags_pruned = textsearch.convert_hunspell(*source)
    return [flags_all, flags_pruned, textsearch.convert_hunspell(*source)]


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
    files = three_files()
    for name, (dict_text, affix_text) in zip(NAMES, files):
        print(f"{name}: {dict_text.count(chr(10)):,} entries")
        (tsd / f"{name}.dict").write_text(dict_text, "utf-8")
        (tsd / f"{name}.affix").write_text(affix_text, "utf-8")
    words, texts = words_and_texts(files[0][0].splitlines())
    first, last = NAMES[0], NAMES[-1]
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
                f"SELECT w FROM unnest(%s::text[]) w WHERE to_tsvector('{first}', w) <> to_tsvector('{last}', w)",
                (words,)).fetchall()
            print(f"words whose tsvector differs ({first} / {last}): {len(differ)} of {len(words):,}"
                  + (f" (e.g. {', '.join(w for (w,) in differ[:10])})" if differ else ""))
            texts_differ = conn.execute(
                f"SELECT count(*) FROM unnest(%s::text[]) t WHERE to_tsvector('{first}', t) <> to_tsvector('{last}', t)",
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
