"""What the sparse arm (revision 0008) adds to a search: search_chunks with and without it, one run.

Every dev question's dense query vector (thesaurus-expanded, as search() embeds it) and sparse vector
are computed first, so the model is not timed; then search_chunks runs with the offline model's
profile (convex 0.6 / 0.4, 100 candidates per arm) with the sparse arm at its profile weight and without
it (query_sparse NULL), interleaved and alternating which goes first, 3 rounds, the first discarded
as warm-up. Timings are noisy on a shared machine: read the ratio.

    PIPELINE_HOME=../evaldb/home python -m bench.sparse_latency [--dev FILE]
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench import common
from pipeline.storage.db import sparsevec_literal, vector_literal
from pipeline.embedders.local import LocalEmbedder
from pipeline.retrieval.evaluate import load_questions
from pipeline.storage.schema import open_current
from pipeline.retrieval.search import embedded_query, profile

SQL = """SELECT count(*) FROM search_chunks(%s, %s::vector, %s, 10, NULL, NULL, false, 'hybrid', 60, %s, %s, %s,
                                             %s, %s::sparsevec, %s)"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dev", type=Path, default=common.eval_dir() / "dev_questions.pl.jsonl")
    args = ap.parse_args()
    model = LocalEmbedder()
    prof = profile(model.name)
    _, conn = open_current()
    queries = []
    for q in load_questions(args.dev):
        queries.append((q.question, vector_literal(model.embed_query(embedded_query(conn, q.question))),
                        sparsevec_literal(model.embed_sparse([q.question])[0], model.sparse_dimensions)))
    conn.commit()
    times: dict[str, list[float]] = {"without sparse": [], "with sparse": []}
    for rnd in range(3):
        for text, vector, sparse in queries:
            order = [("without sparse", None, 0.0), ("with sparse", sparse, prof.fusion.sparse_weight)]
            for name, sp, weight in order if rnd % 2 == 0 else order[::-1]:
                t0 = time.perf_counter()
                conn.execute(SQL, (text, vector, model.name, prof.fusion.vector_weight, prof.fusion.text_weight, prof.fusion.fetch_k,
                                   prof.fusion.method, sp, weight)).fetchone()
                conn.commit()
                if rnd:
                    times[name].append((time.perf_counter() - t0) * 1000)
    for name, xs in times.items():
        xs.sort()
        print(f"{name:<15} n={len(xs)}  p50 {statistics.median(xs):6.1f} ms  p95 {xs[int(0.95 * len(xs))]:6.1f} ms")
    print(f"p50 ratio with / without: {statistics.median(times['with sparse']) / statistics.median(times['without sparse']):.2f}")


if __name__ == "__main__":
    main()
