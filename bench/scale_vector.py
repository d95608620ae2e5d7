"""HNSW recall@10 per ef_search at 10k / 100k / 1M chunks, on the chunk vectors and on the piece graph.

    python -m bench.scale_vector vector-recall --sizes 10000 100000 [--ef-searches 40 100 400]
    python -m bench.scale_vector piece-graph --sizes 1000000 [--drop]
    python -m bench.scale_vector source-recall            # the real source database itself (read only)

vector-recall: each HNSW index of a size on its own, the bare scan at every --ef-searches value:
recall@10 against exact search and latency. piece-graph: the graph the product would hold at that
size with its piece vectors (side table bench_units). source-recall: HNSW recall on the real
database the sizes are made from. Recall is reported strictly (the same ids) and counting a vector
within 1e-4 / 1e-3 of the exact 10th as a hit. Over the databases of bench.scale_build.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import statistics
import time

# bench.scale_common first: it pins the BLAS threads before numpy loads.
from bench.scale_common import (admin, as_array, build_side_hnsw, DIM, each_size, ef_line, ef_sweep, entry,
    exact_scan, hnsw_indexes, K, log, MODEL, open_side_table, open_size_db, parser, query_texts, query_vectors,
    set_state, source_url, start, write_atomic)
from bench.scale_build import load_source, vary_vector

import numpy as np  # noqa: E402


# The vector arm's HNSW scan alone (what ef_search and the graph decide), without search_chunks()'s
# joins and filters: the nearest 10 embeddings of the model through one index, against exact search.
HNSW_SCAN = ("SELECT content_sha256, embedding::{cast} <=> %(v)s::{cast} FROM embeddings WHERE model = %(m)s "
             "ORDER BY embedding::{cast} <=> %(v)s::{cast} LIMIT 10")


def vector_recall(args, admin_url: str, n: int) -> dict | None:
    """recall@10 and latency of each HNSW index of the model per hnsw.ef_search, against exact search.
    An index is measured with the other indexes of its cast dropped inside a rolled-back transaction
    (the planner would pick either); the exact top 10 are cached per query set."""
    from pgvector.psycopg import register_vector

    conn = open_size_db(admin_url, n, "vector-recall")
    if conn is None:
        return None
    register_vector(conn)
    texts = query_texts(args.eval, args.queries)
    vecs = query_vectors(args.work, conn, texts)
    indexes = hnsw_indexes(conn)
    key = hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:16]
    cache = args.work / "results" / f"exact-vector-distances-{n}-{key}.json"
    if cache.exists():
        exact = json.loads(cache.read_text())
    else:
        exact = exact_scan(conn, HNSW_SCAN.format(cast="vector(384)"), [{"m": MODEL, "v": v} for v in vecs])
        write_atomic(cache, json.dumps(exact).encode())
    res = {"size": n, "queries": len(texts), "vectors": conn.execute("SELECT count(*) FROM embeddings").fetchone()[0],
           "indexes": []}
    for name, indexdef, options, size in indexes:
        cast = "halfvec(384)" if "halfvec" in indexdef else "vector(384)"
        entry = {"index": name, "cast": cast, "options": options, "size": size}
        with conn.transaction(force_rollback=True):
            for other, otherdef, *_ in indexes:
                if other != name and ("halfvec" in otherdef) == ("halfvec" in indexdef):
                    conn.execute(f'DROP INDEX "{other}"')  # rolled back with the transaction
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            entry["ef_search"] = ef_sweep(conn, HNSW_SCAN.format(cast=cast), [{"m": MODEL, "v": v} for v in vecs],
                                          exact, args.ef_searches)
        res["indexes"].append(entry)
        log(f"[vector-recall {n}] {name} ({cast}, {options}): {ef_line(entry['ef_search'])}")
    conn.close()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    write_atomic(args.work / "results" / f"vector-recall-{n}-{stamp}.json", json.dumps(res, indent=1).encode())
    return res


# The built databases hold one vector per chunk, but the product stores the vectors of a chunk's
# pieces too (revision 0006: ~2.5 a chunk on the mirror), so at N chunks its HNSW graph holds ~3.5 N
# vectors. piece-graph measures that graph on its own: a side table (bench_units) with the size's
# chunk vectors plus variants of the mirror's real piece vectors in the mirror's ratio (made like the
# chunk vectors: vary_vector, the same cosine), one HNSW index with the product's m and
# ef_construction, and the bare scan's recall@10 per ef_search against exact search on the same
# table. The side table is dropped by `piece-graph --drop`; nothing else reads it.
UNITS = "bench_units"


UNITS_SCAN = f"SELECT id, embedding <=> %(v)s FROM {UNITS} ORDER BY embedding <=> %(v)s LIMIT 10"


def source_piece_vectors(args) -> tuple[np.ndarray, int]:
    """The real piece vectors of the source database's current chunks, and its current chunk count."""
    from pipeline.storage import db

    with db.connect(source_url(args), autocommit=True) as src:
        src.execute("SET default_transaction_read_only = on")
        chunks = src.execute("SELECT count(*) FROM current_chunks").fetchone()[0]
        rows = src.execute(
            "SELECT e.embedding FROM current_chunks c JOIN chunk_pieces p USING (chunk_id) "
            "JOIN embeddings e ON e.content_sha256 = p.content_sha256 AND e.model = %s "
            "ORDER BY p.chunk_id, p.piece", (MODEL,)).fetchall()
    if not rows:
        raise SystemExit("piece-graph: the source database has no piece vectors (revision 0006, pipeline embed)")
    return np.array([as_array(r[0]) for r in rows]), chunks


def piece_graph(args, admin_url: str, n: int) -> dict | None:
    from pgvector.psycopg import register_vector

    opened = open_side_table(args, admin_url, n, "piece-graph", UNITS, "piece_graph")
    if opened is None:
        return None
    conn, built, m, efc = opened
    register_vector(conn)
    if built is None:
        pieces, real_chunks = source_piece_vectors(args)
        target = round(len(pieces) * n / real_chunks)
        log(f"[piece-graph {n}] {UNITS}: the {n:,} chunk vectors + {target:,} piece vectors "
            f"(the source's {len(pieces):,} pieces for {real_chunks:,} chunks, varied) ...")
        t0 = time.perf_counter()
        conn.execute(f"DROP TABLE IF EXISTS {UNITS}")
        conn.execute(f"CREATE TABLE {UNITS} (id bigint GENERATED ALWAYS AS IDENTITY, piece boolean NOT NULL, "
                     f"embedding vector({DIM}) NOT NULL)")
        conn.execute(f"INSERT INTO {UNITS} (piece, embedding) SELECT false, embedding::vector({DIM}) "
                     "FROM embeddings WHERE model = %s", (MODEL,))
        noise_basis = load_source(args.work).noise_basis
        rng = np.random.default_rng(args.seed)
        with conn.cursor().copy(f"COPY {UNITS} (piece, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["bool", "vector"])
            for i in range(target):
                copy.write_row((True, vary_vector(pieces[i % len(pieces)], noise_basis, rng, args.vector_cos)[0]))
        conn.execute(f"ANALYZE {UNITS}")
        units, n_pieces = conn.execute(f"SELECT count(*), count(*) FILTER (WHERE piece) FROM {UNITS}").fetchone()
        built = {"units": units, "pieces": n_pieces, "load_s": time.perf_counter() - t0}
        set_state(conn, "piece_graph", built)
        log(f"[piece-graph {n}] loaded in {built['load_s']:.0f} s")
    build_side_hnsw(conn, args, n, "piece-graph", UNITS, "embedding vector_cosine_ops", "piece_graph", built, m, efc)
    texts = query_texts(args.eval, args.queries)
    vecs = query_vectors(args.work, conn, texts)
    key = hashlib.sha256((json.dumps(texts) + json.dumps(built["units"])).encode()).hexdigest()[:16]
    cache = args.work / "results" / f"exact-units-distances-{n}-{key}.json"
    if cache.exists():
        exact = json.loads(cache.read_text())
    else:
        log(f"[piece-graph {n}] exact top 10 of {len(vecs)} queries (sequential scans) ...")
        exact = exact_scan(conn, UNITS_SCAN, [{"v": v} for v in vecs])
        write_atomic(cache, json.dumps(exact).encode())
    res = {"size": n, "queries": len(texts), **built}
    with conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL enable_seqscan = off")  # the graph's recall, also where a scan would be cheaper
        res["ef_search"] = ef_sweep(conn, UNITS_SCAN, [{"v": v} for v in vecs], exact, args.ef_searches)
    log(f"[piece-graph {n}] {built['units']:,} units: {ef_line(res['ef_search'])}")
    conn.close()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    write_atomic(args.work / "results" / f"piece-graph-{n}-{stamp}.json", json.dumps(res, indent=1).encode())
    return res


def source_recall(args) -> dict:
    """HNSW recall@10 of the bare index scan on the REAL database (read only), against exact numpy
    search over its vectors, for the same queries: what the synthetic sizes are compared with."""
    from pipeline.storage import db

    url = source_url(args)
    texts = query_texts(args.eval, args.queries)
    conn = db.connect(url, autocommit=True)
    conn.execute("SET default_transaction_read_only = on")
    if not conn.execute("SELECT 1 FROM pg_indexes WHERE tablename = 'embeddings' AND indexdef LIKE '%%hnsw%%'").fetchone():
        raise SystemExit("source-recall: the source database has no HNSW index on embeddings")
    vecs = query_vectors(args.work, conn, texts)
    rows = conn.execute("SELECT content_sha256, embedding FROM embeddings WHERE model = %s", (MODEL,)).fetchall()
    sha = np.asarray([r[0] for r in rows])
    x = np.stack([r[1].to_numpy() for r in rows]).astype(np.float32)
    sims = vecs @ x.T
    truth = [set(sha[np.argsort(-row)[:K]]) for row in sims]
    top = -np.sort(-sims, axis=1)
    out = {"url": url, "vectors": len(sha), "queries": len(texts),
           "similarity": {"#1": float(top[:, 0].mean()), "#10": float(top[:, K - 1].mean()),
                          "#100": float(top[:, 99].mean()), "all": float(sims.mean())}, "recall": {}}
    for ef in (40, 100, 200, 400):
        conn.execute(f"SET hnsw.ef_search = {ef}")
        r = []
        for q, t in zip(vecs, truth):
            got = conn.execute(f"SELECT content_sha256 FROM embeddings WHERE model = %s "
                               f"ORDER BY embedding::vector({DIM}) <=> %s::vector({DIM}) LIMIT {K}", (MODEL, q)).fetchall()
            r.append(len({g[0] for g in got} & t) / K)
        out["recall"][ef] = statistics.mean(r)
    conn.close()
    write_atomic(args.work / "results" / "source-recall.json", json.dumps(out, indent=1).encode())
    log(f"source-recall: real mirror, {len(sha)} vectors, {len(texts)} queries; mean similarity of the "
        f"#1 / #10 / #100 neighbour {out['similarity']['#1']:.3f} / {out['similarity']['#10']:.3f} / "
        f"{out['similarity']['#100']:.3f}, of all {out['similarity']['all']:.3f}; bare HNSW scan recall@10 at "
        "ef_search " + ", ".join(f"{ef}: {r:.3f}" for ef, r in out["recall"].items()))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "scale_vector", ("vector-recall", "piece-graph", "source-recall"),
                ("source", "queries", "hnsw", "graph"))
    args = start(ap, argv)
    if args.command == "source-recall":
        source_recall(args)
        return 0
    each_size(args, admin(args), {"vector-recall": vector_recall, "piece-graph": piece_graph}[args.command])
    return 0


if __name__ == "__main__":
    entry(main)
