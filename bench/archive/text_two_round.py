"""A two-round text arm, tried in SQL on the scale bench's databases (issue 14; not in the product).

`python -m bench.scale_text text-bounds` shows that at 1M chunks the text arm's recall is lost in two places:
its fixed depth per list (a budget spent by contribution across the lists would find more) and its
1000 exactly scored chunks. This prototype does the first in SQL without knowing the lists' depths
beforehand: round 1 reads the fixed depth of each list (as the arm does), the threshold is the
contribution (idf × impact) at `--share` of the round's reads from the top, and round 2 reads on,
down to that threshold, only the lists whose cut lies above it. Both candidate steps are timed
side by side (per query, rotating order), without the exact scoring of the candidates that
follows them in search_text_arm(); recall@10 of chunks is against the exact Σ idf × impact of the
full lists (as text-bounds). The functions live in pg_temp: nothing is left in the database.

    python -m bench.archive.text_two_round [--work WORK] --size 1000000 [--queries 60] [--share 0.7]
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from bench import common, scale_common as scale

FUNCTIONS = r"""
CREATE FUNCTION pg_temp.query_lists(terms text[], OUT lexeme_ids integer[], OUT idfs double precision[],
                                    OUT n_postings integer)
LANGUAGE sql STABLE AS $$
    SELECT array_agg(l.lexeme_id), array_agg(bm25_idf(l.ndoc, g.chunks)),
           min(greatest(25 * 40, ceil(g.chunks / 100)::integer))
    FROM lexicon l CROSS JOIN corpus_stats g WHERE l.lexeme = ANY (terms)
$$;

-- search_text_arm()'s index path, up to the chunks it scores exactly.
CREATE FUNCTION pg_temp.one_round(terms text[], n_scored integer) RETURNS bigint[]
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_custom_plan AS $fn$
DECLARE
    q record;
BEGIN
    q := pg_temp.query_lists(terms);
    RETURN ARRAY(
        SELECT p.chunk_id
        FROM unnest(q.lexeme_ids, q.idfs) l(lexeme_id, idf)
        CROSS JOIN LATERAL (SELECT p.chunk_id, p.impact FROM postings p WHERE p.lexeme_id = l.lexeme_id
                            ORDER BY p.impact DESC, p.chunk_id LIMIT q.n_postings) p
        GROUP BY p.chunk_id ORDER BY sum(l.idf * p.impact) DESC, p.chunk_id LIMIT n_scored);
END
$fn$;

CREATE FUNCTION pg_temp.two_rounds(terms text[], share double precision, n_scored integer) RETURNS bigint[]
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_custom_plan AS $fn$
DECLARE
    q record;
BEGIN
    q := pg_temp.query_lists(terms);
    RETURN ARRAY(
        WITH r1 AS MATERIALIZED (
            SELECT l.lexeme_id, l.idf, p.chunk_id, p.impact
            FROM unnest(q.lexeme_ids, q.idfs) l(lexeme_id, idf)
            CROSS JOIN LATERAL (SELECT p.chunk_id, p.impact FROM postings p WHERE p.lexeme_id = l.lexeme_id
                                ORDER BY p.impact DESC, p.chunk_id LIMIT q.n_postings) p
        ),
        theta AS (SELECT percentile_disc(1 - share) WITHIN GROUP (ORDER BY r1.idf * r1.impact) AS t FROM r1),
        cut AS (  -- the lists read to the limit, and the last posting read of each
            SELECT DISTINCT ON (r1.lexeme_id) r1.lexeme_id, r1.idf, r1.impact AS last_impact, r1.chunk_id AS last_chunk
            FROM r1 WHERE r1.lexeme_id IN (SELECT r.lexeme_id FROM r1 r GROUP BY r.lexeme_id HAVING count(*) = q.n_postings)
            ORDER BY r1.lexeme_id, r1.impact, r1.chunk_id DESC
        ),
        r2 AS (  -- on from the cut (ties at its impact included once), down to the threshold
            SELECT c.lexeme_id, c.idf, p.chunk_id, p.impact
            FROM cut c CROSS JOIN theta
            CROSS JOIN LATERAL (SELECT p.chunk_id, p.impact FROM postings p
                                WHERE p.lexeme_id = c.lexeme_id AND p.impact <= c.last_impact
                                  AND p.impact >= theta.t / c.idf
                                  AND NOT (p.impact = c.last_impact AND p.chunk_id <= c.last_chunk)) p
            WHERE c.idf * c.last_impact > theta.t
        )
        SELECT a.chunk_id FROM (SELECT * FROM r1 UNION ALL SELECT * FROM r2) a
        GROUP BY a.chunk_id ORDER BY sum(a.idf * a.impact) DESC, a.chunk_id LIMIT n_scored);
END
$fn$;
"""


def main() -> int:
    ap = common.parser(__doc__, epilog=True)
    ap.add_argument("--work", type=Path, default=scale.DEFAULT_WORK, help="the scale bench's work dir")
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--share", type=float, default=0.7)
    ap.add_argument("--eval", type=Path, default=common.eval_dir())
    args = ap.parse_args()
    conn = scale.open_size_db(scale.bench_server(args.work), args.size, "text-two-round")
    if conn is None:
        return 1
    conn.execute(FUNCTIONS)
    variants = {
        "one round, 1000 scored (the arm today)": ("SELECT pg_temp.one_round(%s, 1000)", ()),
        "one round, 2000 scored": ("SELECT pg_temp.one_round(%s, 2000)", ()),
        f"two rounds (share {args.share}), 1000 scored": ("SELECT pg_temp.two_rounds(%s, %s, 1000)", (args.share,)),
        f"two rounds (share {args.share}), 2000 scored": ("SELECT pg_temp.two_rounds(%s, %s, 2000)", (args.share,)),
    }
    names = list(variants)
    lat: dict[str, list[float]] = {n: [] for n in names}
    rec: dict[str, list[float]] = {n: [] for n in names}
    for i, text in enumerate(scale.query_texts(args.eval, args.queries)):
        terms = conn.execute("SELECT search_terms(%s)", (text,)).fetchone()[0]
        exact: dict[int, float] = {}
        for lexeme_id, idf in conn.execute(
                "SELECT l.lexeme_id, bm25_idf(l.ndoc, g.chunks) FROM lexicon l CROSS JOIN corpus_stats g "
                "WHERE l.lexeme = ANY (%s)", (terms,)).fetchall():
            for chunk_id, impact in conn.execute("SELECT chunk_id, impact FROM postings WHERE lexeme_id = %s",
                                                 (lexeme_id,)):
                exact[chunk_id] = exact.get(chunk_id, 0.0) + idf * impact
        if not exact:
            continue
        truth = {c for c, _ in sorted(exact.items(), key=lambda x: (-x[1], x[0]))[:scale.K]}
        for name in names[i % len(names):] + names[:i % len(names)]:
            sql, extra = variants[name]
            t0 = time.perf_counter()
            cand = conn.execute(sql, (terms, *extra), prepare=False).fetchone()[0]
            lat[name].append(time.perf_counter() - t0)
            got = sorted(cand, key=lambda c: (-exact.get(c, 0.0), c))[:scale.K]
            rec[name].append(len(truth & set(got)) / len(truth))
    res = {"size": args.size, "queries": len(rec[names[0]]), "share": args.share,
           "variants": {n: {"recall": statistics.mean(rec[n]), **scale.lat_summary(lat[n])} for n in names}}
    print(json.dumps(res, indent=1))
    for n in names:
        v = res["variants"][n]
        print(f"{n:42s} recall@10 {v['recall']:.3f}  p50 {v['p50']:.1f}  p95 {v['p95']:.1f}  p99 {v['p99']:.1f} ms",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
