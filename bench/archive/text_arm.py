"""The text arm before/after impact-ordered postings (issue 14), on real acts: latency, recall, ingest cost.

Needs two copies of one database holding the whole ELI mirror, one at revision 0004 (the scanning
text arm, statistics recomputed by every ingest) and one upgraded to head:

    PIPELINE_HOME=ST_HOME PIPELINE_ARCHIVE=ST_DANE pipeline ingest --source ../shared/eli --all --no-embed
    (with the code of revision 0004), then in psql: CREATE DATABASE before TEMPLATE postgres;
    CREATE DATABASE after TEMPLATE postgres; and `DATABASE_URL=…/after pipeline db upgrade`.

    python -m bench.archive.text_arm latency --before URL --after URL [--repeats 3] [--postings 10000]
    python -m bench.archive.text_arm recall --after URL [--postings 50,100,250,500,1000]
    python -m bench.archive.text_arm ingest --url URL --act DU/2024/581 [--repeats 5]

`latency`: search_chunks(q, mode => 'text', k => 10) for every eval question, the two databases
timed interleaved query by query (p50/p95 ms); --postings sets how many postings a lexeme the
new arm reads (10000 = what it reads of 1M chunks). `recall`: recall@10 of search_chunks' text mode
against text_search_exact(q, 10), per postings-per-lexeme setting (SET pipeline.postings_per_lexeme),
and how many candidates the index path read. `ingest`: store_version() of one act (delete its
versions, store again), repeated; run it with each code version against its own database (with
PYTHONPATH pointing at a checkout of revision 0004 for "before": its ingest runs refresh_search_stats()).
"""
from __future__ import annotations

import argparse
import hashlib
import statistics
import time

import psycopg

from bench import common

TEXT = "SELECT chunk_id FROM search_chunks(%s, NULL, NULL, 10, mode => 'text')"


def questions() -> list[str]:
    return common.question_texts(common.eval_dir())


def latency(args: argparse.Namespace) -> None:
    qs = questions()
    conns = {name: psycopg.connect(url, autocommit=True) for name, url in (("before", args.before), ("after", args.after))}
    for c in conns.values():
        c.execute("SELECT search_terms('rozgrzewka')")  # the Polish dictionary loads once per connection
    if args.postings:  # e.g. 10000: the lists a 1M-chunk corpus would read (1 %), read here
        conns["after"].execute("SELECT set_config('pipeline.postings_per_lexeme', %s, false)", (str(args.postings),))
    times: dict[str, list[float]] = {name: [] for name in conns}
    for _ in range(args.repeats):
        for q in qs:
            for name, c in conns.items():
                t0 = time.perf_counter()
                c.execute(TEXT, (q,)).fetchall()
                times[name].append((time.perf_counter() - t0) * 1000)
    for name, ts in times.items():
        print(f"{name:7s} text arm: p50 {common.pct(ts, 50):6.1f} ms  p95 {common.pct(ts, 95):6.1f} ms  ({len(ts)} queries)")


def recall(args: argparse.Namespace) -> None:
    qs = questions()
    with psycopg.connect(args.after, autocommit=True) as c:
        chunks = c.execute("SELECT chunks FROM corpus_stats").fetchone()[0]
        exact = {q: [r[0] for r in c.execute("SELECT chunk_id FROM text_search_exact(%s, 10)", (q,))] for q in qs}
        for n in [int(x) for x in args.postings.split(",")]:
            c.execute("SELECT set_config('pipeline.postings_per_lexeme', %s, false)", (str(n),))
            recalls, full = [], 0
            for q in qs:
                got = [r[0] for r in c.execute(TEXT, (q,))]
                want = exact[q]
                recalls.append(len(set(got) & set(want)) / len(want) if want else 1.0)
                full += got == want
            print(f"postings/lexeme {n:5d} ({n / chunks:6.2%} of {chunks:.0f} chunks): recall@10 "
                  f"{statistics.mean(recalls):.3f}  min {min(recalls):.2f}  identical top 10: {full}/{len(qs)}")


def ingest(args: argparse.Namespace) -> None:
    from pipeline.storage import store
    from pipeline.sources.fetch import read_archive
    from pipeline.indexing.ingest import parse_text

    fetched = read_archive(common.eli_dir(), args.act)
    parsed = parse_text(fetched.text, fetched.format)
    sha = hashlib.sha256(fetched.text).hexdigest()
    times = []
    with psycopg.connect(args.url) as c:
        for _ in range(args.repeats):
            with c.transaction():
                c.execute("DELETE FROM act_versions WHERE eli = %s", (args.act,))
            t0 = time.perf_counter()
            stored = store.store_version(c, fetched.meta, parsed, source_sha256=sha, model=None)
            times.append(time.perf_counter() - t0)
        chunks = c.execute("SELECT count(*) FROM chunks").fetchone()[0]
    print(f"store_version {args.act} ({stored.chunks} chunks, database {chunks} chunks): "
          f"median {statistics.median(times) * 1000:.0f} ms, min {min(times) * 1000:.0f} ms over {len(times)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("latency")
    p.add_argument("--before", required=True)
    p.add_argument("--after", required=True)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--postings", type=int, help="postings a lexeme for the after database (default: its rule)")
    p = sub.add_parser("recall")
    p.add_argument("--after", required=True)
    p.add_argument("--postings", default="25,50,100,250,500,1000")
    p = sub.add_parser("ingest")
    p.add_argument("--url", required=True)
    p.add_argument("--act", default="DU/2024/581")
    p.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    {"latency": latency, "recall": recall, "ingest": ingest}[args.what](args)


if __name__ == "__main__":
    main()
