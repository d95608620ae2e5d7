"""How much of the exact BM25 top 10 the text arm finds at 10k / 100k / 1M chunks, and why it misses.

    python -m bench.scale_text text-recall --sizes 1000000 [--postings-depths 1000 2500 5000]
    python -m bench.scale_text text-bounds --sizes 1000000

text-recall: the text arm's recall@10 against exact BM25 summed from the full postings lists (and
against text_search_exact() up to --exact-text-max-chunks), at the default depth and at
--postings-depths, with latency. text-bounds: what an exact text arm would read (a safe-threshold
plan replayed in Python on each query's full lists), and the recall@10 of the arm's two
approximations taken apart. Over the databases of bench.scale_build; results under WORK/results/.
"""
from __future__ import annotations

import datetime as dt
import json
import statistics
import time

# bench.scale_common first: it pins the BLAS threads before numpy loads.
from bench.scale_common import (admin, each_size, entry, exact_text_topk, _first_articles, K, lat_summary, log,
    mean_recall, open_size_db, parser, query_texts, recall, SEARCH, start, write_atomic)

import numpy as np  # noqa: E402


# Exact BM25 from the postings (revision 0005): Σ idf × impact over the FULL lists of the query's
# lexemes. An impact is bm25_tf() with the average length of when it was written, so this equals
# text_search_exact() up to that drift: exactly after refresh_search_stats() (tests/test_bench_scale.py),
# and in the bench databases, whose average hardly moves while they are built, it agreed on every
# query at 10k and 100k. It reads index entries instead of tsvectors: seconds, not minutes, at 1M.
POSTINGS_EXACT = """
WITH q AS (SELECT l.lexeme_id, bm25_idf(l.ndoc, g.chunks) AS idf
           FROM lexicon l CROSS JOIN corpus_stats g WHERE l.lexeme = ANY (search_terms(%(q)s))),
     s AS (SELECT p.chunk_id, sum(q.idf * p.impact) AS score FROM q JOIN postings p USING (lexeme_id)
           GROUP BY p.chunk_id)
SELECT s.chunk_id, s.score FROM s JOIN chunks c USING (chunk_id) LEFT JOIN article_times t USING (article_id)
WHERE NOT c.repealed AND c.version_id IN (SELECT version_id FROM selected_versions(NULL, NULL) version_id)
  AND in_force_on(t.in_force_from, t.in_force_until, current_date) IS DISTINCT FROM false  -- as search leaves out
ORDER BY s.score DESC, s.chunk_id LIMIT %(n)s
"""


def postings_exact_topk(conn, text: str) -> tuple[float, list[int]]:
    t0 = time.perf_counter()
    rows = conn.execute(POSTINGS_EXACT, {"q": text, "n": 10 * K}).fetchall()
    secs = time.perf_counter() - t0
    return secs, _first_articles(conn, rows)


def default_postings_depth(conn) -> int:
    """Postings a lexeme the text arm reads by default at k = 10 (fetch_k 40): search_text_arm()'s
    greatest(25 × fetch_k, 1 % of the chunks), sql/search.sql."""
    return conn.execute("SELECT greatest(25 * 40, ceil(chunks / 100)::integer) FROM corpus_stats").fetchone()[0]


def text_recall(args, admin_url: str, n: int) -> dict | None:
    """Text arm recall@10 and latency at each postings depth, against exact BM25 from the postings
    (and against text_search_exact() where it is cheap enough), interleaved per query."""
    conn = open_size_db(admin_url, n, "text-recall")
    if conn is None:
        return None
    texts = query_texts(args.eval, args.queries)
    # (postings a lexeme, fetch_k): None is the product's default depth (1 % of the chunks, at least
    # 25 n) and search_chunks' default fetch_k (40 for k 10); fetch_k 100 is the e5 profile's.
    depths = [(None, None), (None, 100)] + [(d, None) for d in args.postings_depths]
    with_exact = n <= args.exact_text_max_chunks
    lat: dict[str, list[float]] = {}
    got: dict[str, list[list[int]]] = {}
    truth: list[list[int]] = []
    exact: list[list[int]] = []

    def arm(depth: int | None, fetch_k: int | None, text: str) -> tuple[float, list[int]]:
        with conn.transaction(force_rollback=True):
            if depth:
                conn.execute(f"SET LOCAL pipeline.postings_per_lexeme = {int(depth)}")
            t0 = time.perf_counter()
            rows = conn.execute(SEARCH, {"q": text, "v": None, "m": None, "k": K, "mode": "text",
                                         "fk": fetch_k}).fetchall()
            return time.perf_counter() - t0, [r[0] for r in rows]

    for text in texts[:5]:  # warm-up
        arm(None, None, text)
    t_start = time.perf_counter()
    for i, text in enumerate(texts):
        for depth, fetch_k in depths[i % len(depths):] + depths[:i % len(depths)]:
            name = ("text arm, default depth" if depth is None else f"text arm, {depth} postings a lexeme") \
                + (f", fetch_k {fetch_k}" if fetch_k else "")
            secs, ids = arm(depth, fetch_k, text)
            lat.setdefault(name, []).append(secs)
            got.setdefault(name, []).append(ids)
        secs, ids = postings_exact_topk(conn, text)
        lat.setdefault("exact from postings", []).append(secs)
        truth.append(ids)
        if with_exact:
            secs, ids = exact_text_topk(conn, text)
            lat.setdefault("text_search_exact", []).append(secs)
            exact.append(ids)
        if (i + 1) % 20 == 0:
            log(f"[text-recall {n}] {i + 1}/{len(texts)} queries, {time.perf_counter() - t_start:.0f} s")
    n_postings = default_postings_depth(conn)
    res = {"size": n, "queries": len(texts), "default_postings_per_lexeme": n_postings,
           "latency_ms": {k: lat_summary(v) for k, v in lat.items()}, "recall_vs_postings_exact": {}}
    for name, lists in got.items():
        res["recall_vs_postings_exact"][name] = mean_recall(recall(a, t) for a, t in zip(lists, truth))
    if with_exact:
        res["postings_exact_vs_text_search_exact"] = mean_recall(recall(a, t) for a, t in zip(truth, exact))
        res["recall_vs_text_search_exact"] = {name: mean_recall(recall(a, t) for a, t in zip(lists, exact))
                                              for name, lists in got.items()}
        # the key older results (and docs/scaling.md's tables) were read from
        res["recall_default_vs_text_search_exact"] = res["recall_vs_text_search_exact"]["text arm, default depth"]
    conn.close()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    write_atomic(args.work / "results" / f"text-recall-{n}-{stamp}.json", json.dumps(res, indent=1).encode())
    return res


# What an EXACT text arm over the impact-ordered postings would have to read: a safe-threshold plan
# (max-score over impact-ordered lists), replayed in Python on each query's full postings lists. It
# answers "how far from 0.95 recall is the fixed depth, and what does exactness cost?" in postings
# read and chunks scored, which is what the SQL arm's latency follows (~0.6 µs per posting read and
# aggregated at 1M, measured). Plan, per query (scores are Σ idf × impact, the postings-exact reference):
#   1. seed: the top 200 postings of every list; the 40 best chunks by partial sum scored exactly;
#      θ = the 10th best score (a lower bound of the true 10th);
#   2. cuts: each list is read down to a contribution t_i with Σ t_i ≤ α·θ, the budget spent on the
#      longest lists first (a common word's tail is most of the postings and weighs least), so a
#      chunk below every cut scores < θ and cannot be in the top 10;
#   3. every chunk read gets an upper bound (its contributions read + the cuts of the lists it was
#      not read from); they are scored exactly in descending bound until the next bound is below the
#      10th best score found. The result is the exact top 10 (checked here on every query).
# α < 1 reads deeper and leaves a margin that makes the bounds prune more: fewer chunks scored.
BOUNDS_SEED, BOUNDS_SEEDED, BOUNDS_BATCH = 200, 40, 50


def _safe_plan(lists: list[tuple[np.ndarray, np.ndarray]], exact: dict[int, float], alpha: float) -> tuple[int, int]:
    """(postings read, chunks scored exactly) of the safe plan for one query; asserts it is exact."""
    part: dict[int, float] = {}
    reads = 0
    for ids, contrib in lists:
        d = min(BOUNDS_SEED, len(ids))
        reads += d
        for c, x in zip(ids[:d].tolist(), contrib[:d].tolist()):
            part[c] = part.get(c, 0.0) + x
    scored = {c: exact[c] for c, _ in sorted(part.items(), key=lambda x: -x[1])[:BOUNDS_SEEDED]}
    theta = sorted(scored.values(), reverse=True)[K - 1] if len(scored) >= K else 0.0
    maxc = np.array([contrib[0] for _, contrib in lists])
    cuts, left = np.zeros(len(lists)), alpha * theta
    for i in np.argsort([-len(ids) for ids, _ in lists], kind="stable"):
        cuts[i] = min(maxc[i], left)
        left -= cuts[i]
    seen: dict[int, list[float]] = {}
    for (ids, contrib), cut in zip(lists, cuts):
        d = int(np.sum(contrib > cut))
        reads += max(0, d - min(BOUNDS_SEED, len(ids)))  # the seed's postings were read already
        for c, x in zip(ids[:d].tolist(), contrib[:d].tolist()):
            e = seen.setdefault(c, [0.0, 0.0])
            e[0] += x
            e[1] += cut
    total_cut = float(cuts.sum())
    bounds = sorted(((x + total_cut - own, c) for c, (x, own) in seen.items()), reverse=True)
    j = 0
    while j < len(bounds):
        tenth = sorted(scored.values(), reverse=True)[K - 1] if len(scored) >= K else 0.0
        if bounds[j][0] < tenth:
            break
        for _, c in bounds[j:j + BOUNDS_BATCH]:
            scored[c] = exact[c]
        j += BOUNDS_BATCH
    got = sorted(scored.items(), key=lambda x: (-x[1], x[0]))[:K]
    want = sorted(exact.items(), key=lambda x: (-x[1], x[0]))[:K]
    assert [c for c, _ in got] == [c for c, _ in want], "the safe plan missed a top-10 chunk"
    return reads, len(scored)


# The arm is approximate in two places: which postings it reads and how many of the chunks read it
# scores exactly (25 n, best partial sum first). Which one costs the recall? Replayed on the full
# lists: the same number of postings per query, read as a fixed depth per list (the arm until
# postings_depths()), as the best contributions of all lists together (score-at-a-time: a rare
# word's list read deeper, a common word's less; needs the lists), or as postings_depths() shares
# them (from list lengths, idf and impact quantiles alone: the arm now), and then the best
# `rescored` chunks by partial sum scored exactly. Recall@10 of chunks against the postings-exact top 10.
ALLOCATION_RESCORED = (1000, 2500, 4000)  # 25 × fetch_k: the default 40, the e5 profile's 100; more


def _candidate_recall(lists: list[tuple[np.ndarray, np.ndarray]], truth: set[int], depths: list[int],
                      rescored: int, exact: dict[int, float]) -> float:
    ids = np.concatenate([i[:d] for (i, _), d in zip(lists, depths)])
    part = np.concatenate([c[:d] for (_, c), d in zip(lists, depths)])
    uniq, inv = np.unique(ids, return_inverse=True)
    sums = np.bincount(inv, weights=part)
    cand = uniq[np.lexsort((uniq, -sums))[:rescored]].tolist()
    got = sorted(cand, key=lambda c: (-exact[c], c))[:K]
    return len(truth & set(got)) / len(truth)


def _allocations(lists: list[tuple[np.ndarray, np.ndarray]], exact: dict[int, float], depth: int,
                 shared: list[int] | None = None) -> dict[str, float]:
    """``shared``: the depths postings_depths() gives the lists for the same budget (the arm since
    it shares the budget by impact quantiles), when known."""
    truth = {c for c, _ in sorted(exact.items(), key=lambda x: (-x[1], x[0]))[:K]}
    fixed = [min(depth, len(i)) for i, _ in lists]
    budget = sum(fixed)
    everything = np.sort(np.concatenate([c for _, c in lists]))[::-1]
    theta = everything[min(budget, len(everything)) - 1]
    by_contribution = [int(np.sum(c >= theta)) for _, c in lists]
    out = {}
    for r in ALLOCATION_RESCORED:
        out[f"fixed depth, {r} rescored"] = _candidate_recall(lists, truth, fixed, r, exact)
        out[f"same budget by contribution, {r} rescored"] = _candidate_recall(lists, truth, by_contribution, r, exact)
        if shared is not None:
            out[f"same budget by postings_depths(), {r} rescored"] = _candidate_recall(lists, truth, shared, r, exact)
    return out


def text_bounds(args, admin_url: str, n: int) -> dict | None:
    conn = open_size_db(admin_url, n, "text-bounds")
    if conn is None:
        return None
    texts = query_texts(args.eval, args.queries)
    default_depth = default_postings_depth(conn)
    has_depths = conn.execute("SELECT to_regprocedure('postings_depths(integer[], double precision[], bigint)') "
                              "IS NOT NULL").fetchone()[0]
    alphas = (1.0, 0.7, 0.5)
    reads: dict[str, list[int]] = {}
    scored: dict[str, list[int]] = {}
    allocation: dict[str, list[float]] = {}
    t0 = time.perf_counter()
    for text in texts:
        lists, ndocs, idfs = [], [], []
        for lexeme_id, idf, ndoc in conn.execute(
                "SELECT l.lexeme_id, bm25_idf(l.ndoc, g.chunks), l.npostings FROM lexicon l CROSS JOIN corpus_stats g "
                "WHERE l.lexeme = ANY (search_terms(%s))", (text,)).fetchall():
            rows = np.array(conn.execute("SELECT chunk_id, impact FROM postings WHERE lexeme_id = %s "
                                         "ORDER BY impact DESC, chunk_id", (lexeme_id,)).fetchall(), dtype=np.float64)
            lists.append((rows[:, 0].astype(np.int64), rows[:, 1] * idf))
            ndocs.append(ndoc)
            idfs.append(idf)
        if not lists:
            continue
        shared = None
        if has_depths:
            shared = conn.execute("SELECT postings_depths(%s::integer[], %s::float8[], %s)",
                                  (ndocs, idfs, sum(min(default_depth, d) for d in ndocs))).fetchone()[0]
        exact: dict[int, float] = {}
        for ids, contrib in lists:
            for c, x in zip(ids.tolist(), contrib.tolist()):
                exact[c] = exact.get(c, 0.0) + x
        reads.setdefault("fixed depth (the arm today)", []).append(sum(min(default_depth, len(i)) for i, _ in lists))
        for name, r in _allocations(lists, exact, default_depth, shared).items():
            allocation.setdefault(name, []).append(r)
        reads.setdefault("whole lists (exhaustive)", []).append(sum(len(i) for i, _ in lists))
        for a in alphas:
            r, sc = _safe_plan(lists, exact, a)
            reads.setdefault(f"safe plan, alpha {a}", []).append(r)
            scored.setdefault(f"safe plan, alpha {a}", []).append(sc)
    log(f"[text-bounds {n}] {len(reads['whole lists (exhaustive)'])} queries in {time.perf_counter() - t0:.0f} s")

    def summary(xs: list[int]) -> dict:
        return {"p50": float(np.percentile(xs, 50)), "p90": float(np.percentile(xs, 90)), "max": int(max(xs))}

    res = {"size": n, "queries": len(reads["whole lists (exhaustive)"]), "default_postings_per_lexeme": default_depth,
           "postings_read": {k: summary(v) for k, v in reads.items()},
           "chunks_scored": {k: summary(v) for k, v in scored.items()},
           "recall_at_equal_budget": {k: statistics.mean(v) for k, v in allocation.items()}}
    conn.close()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    write_atomic(args.work / "results" / f"text-bounds-{n}-{stamp}.json", json.dumps(res, indent=1).encode())
    return res


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "scale_text", ("text-recall", "text-bounds"), ("queries", "exact-text", "postings"))
    args = start(ap, argv)
    each_size(args, admin(args), {"text-recall": text_recall, "text-bounds": text_bounds}[args.command])
    return 0


if __name__ == "__main__":
    entry(main)
