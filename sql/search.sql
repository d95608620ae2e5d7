-- Hybrid search over article chunks: full text (Polish) + vectors, fused by Reciprocal Rank Fusion
-- or by a convex combination of normalised scores (per model: pipeline/search.py MODEL_PROFILES).
-- Public interface (README: "Querying with SQL"). Applied by migrations; change only through a new
-- migration that re-applies this file.
--
--   SELECT eli, article, score FROM search_chunks('ile dni urlopu', '[...]'::vector, 'multilingual-e5-small');
--
-- Each arm over-fetches `fetch_k` candidates (default max(4k, 40)) among the chunks of the selected
-- versions (as_of / acts filters applied inside the arm, with pgvector's iterative index scans so a
-- selective filter still yields k rows); the fused list keeps the best part of each article.
-- Corpus statistics for BM25 ranking of the full-text arm (ts_rank has no inverse document
-- frequency: "pracownik" in a labour code would weigh as much as a rare, telling word).
-- Refreshed after each ingest by refresh_search_stats().
-- ts_stat() runs its query text later, under the restricted search_path that materialized views
-- are refreshed with (PostgreSQL 17+), so the table is named with its schema.
DO $$
BEGIN
    EXECUTE format('CREATE MATERIALIZED VIEW IF NOT EXISTS lexeme_stats AS '
                   'SELECT word AS lexeme, ndoc FROM ts_stat(%L)',
                   format('SELECT tsv FROM %I.chunks', current_schema()));
END
$$;
CREATE UNIQUE INDEX IF NOT EXISTS lexeme_stats_lexeme_idx ON lexeme_stats (lexeme);
CREATE MATERIALIZED VIEW IF NOT EXISTS corpus_stats AS
    SELECT 1 AS id, count(*)::float8 AS chunks, coalesce(avg(length(tsv)), 1)::float8 AS avg_length FROM chunks;
CREATE UNIQUE INDEX IF NOT EXISTS corpus_stats_id_idx ON corpus_stats (id);
COMMENT ON MATERIALIZED VIEW lexeme_stats IS 'In how many chunks each lexeme occurs (BM25 idf).';

CREATE OR REPLACE FUNCTION refresh_search_stats() RETURNS void
LANGUAGE sql AS $$
    REFRESH MATERIALIZED VIEW CONCURRENTLY lexeme_stats;
    REFRESH MATERIALIZED VIEW CONCURRENTLY corpus_stats;
$$;

-- The fusion parameter was added after 0002 shipped: drop that signature so the two do not overload.
DROP FUNCTION IF EXISTS search_chunks(text, vector, text, integer, text[], date, boolean, text, integer,
                                      double precision, double precision, integer);

CREATE OR REPLACE FUNCTION search_chunks(
    query_text       text,
    query_embedding  vector  DEFAULT NULL,
    model            text    DEFAULT NULL,
    k                integer DEFAULT 10,
    acts             text[]  DEFAULT NULL,   -- ELI ids; a base act id selects its consolidated texts too
    as_of            date    DEFAULT NULL,   -- NULL: current texts
    include_repealed boolean DEFAULT false,
    mode             text    DEFAULT 'hybrid', -- hybrid | vector | text
    rrf_k            integer DEFAULT 60,
    vector_weight    double precision DEFAULT 1.0,
    text_weight      double precision DEFAULT 1.0,
    fetch_k          integer DEFAULT NULL,
    fusion           text    DEFAULT 'rrf'  -- rrf: Σ weight / (rrf_k + rank) | convex: Σ weight × score
                                            -- normalised to [0, 1] within the arm's candidates
)
RETURNS TABLE (
    chunk_id    bigint,
    eli         text,
    act_title   text,
    article     text,
    part        integer,
    text        text,
    similarity  double precision,  -- cosine similarity of the query vector (vector arm)
    text_score  real,              -- BM25 score of the Polish full-text match (text arm)
    score       double precision,  -- fused score (RRF or convex, see fusion)
    vector_rank integer,           -- rank in the vector arm (NULL: not among its candidates)
    text_rank   integer,           -- rank in the text arm
    best_similarity double precision  -- the vector arm's best similarity, on every row: what a
                                      -- refusal threshold compares (the fused top k may hold none)
)
-- SECURITY DEFINER: a read-only role (pipeline db grant-reader) may call it without table access.
LANGUAGE plpgsql STABLE SECURITY DEFINER AS $fn$
DECLARE
    n_fetch  integer := coalesce(fetch_k, greatest(4 * k, 40));
    vec_cast text := 'vector';
    terms    text[];
    tsq      tsquery;
BEGIN
    IF mode NOT IN ('hybrid', 'vector', 'text') THEN
        RAISE EXCEPTION 'mode must be hybrid, vector or text, not %', mode USING ERRCODE = '22023';
    END IF;
    IF fusion NOT IN ('rrf', 'convex') THEN
        RAISE EXCEPTION 'fusion must be rrf or convex, not %', fusion USING ERRCODE = '22023';
    END IF;
    IF k < 1 OR k > 1000 THEN
        RAISE EXCEPTION 'k must be between 1 and 1000, not %', k USING ERRCODE = '22023';
    END IF;
    IF mode <> 'text' THEN
        IF query_embedding IS NULL OR model IS NULL THEN
            RAISE EXCEPTION '% search needs query_embedding and model', mode USING ERRCODE = '22023';
        END IF;
        SELECT format('%s(%s)', m.index_type, m.dimensions) INTO vec_cast
        FROM embedding_models m WHERE m.model = search_chunks.model;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'no embeddings for model % (run pipeline embed)', model USING ERRCODE = '22023';
        END IF;
        IF vector_dims(query_embedding) <> (SELECT m.dimensions FROM embedding_models m WHERE m.model = search_chunks.model) THEN
            RAISE EXCEPTION 'query vector has % dimensions, model % has %', vector_dims(query_embedding), model,
                (SELECT m.dimensions FROM embedding_models m WHERE m.model = search_chunks.model) USING ERRCODE = '22023';
        END IF;
    END IF;
    IF mode <> 'vector' THEN
        terms := search_terms(query_text);
        -- Candidates come from the informative terms only: a word in more than a tenth of all
        -- chunks ("dzień", "pracownik") would make nearly every chunk a candidate, while alone it
        -- could never lift one into the top fetch_k. It still counts in the score of the others.
        tsq := (SELECT string_agg(quote_literal(l.lexeme), ' | ')::tsquery
                FROM lexeme_stats l CROSS JOIN corpus_stats g
                WHERE l.lexeme = ANY (terms) AND l.ndoc <= 0.1 * g.chunks);
        IF tsq IS NULL THEN
            tsq := (SELECT string_agg(quote_literal(t), ' | ')::tsquery FROM unnest(terms) t);
        END IF;
    END IF;

    -- Filters are applied inside the index scan; iterative scans keep going until enough rows pass.
    PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true);
    PERFORM set_config('hnsw.ef_search', greatest(n_fetch, 40)::text, true);

    -- The cast and the model literal must appear verbatim for the planner to use the model's
    -- partial expression index, hence dynamic SQL (values are still parameters, names are quoted).
    RETURN QUERY EXECUTE format($q$
        WITH versions AS (
            SELECT v.version_id FROM versions_as_of($3) v
            WHERE $2 IS NULL OR v.eli = ANY ($2) OR v.base_eli = ANY ($2)
        ),
        vec AS (
            SELECT s.chunk_id, s.similarity, row_number() OVER (ORDER BY s.distance, s.chunk_id)::integer AS rnk
            FROM (
                SELECT c.chunk_id, e.embedding::%1$s <=> $1::%1$s AS distance,
                       1 - (e.embedding::%1$s <=> $1::%1$s) AS similarity
                FROM embeddings e
                JOIN chunks c ON c.content_sha256 = e.content_sha256
                WHERE e.model = %2$L AND $6 <> 'text'
                  AND c.version_id IN (SELECT version_id FROM versions)
                  AND ($4 OR NOT c.repealed)
                ORDER BY e.embedding::%1$s <=> $1::%1$s
                LIMIT $5
            ) s
        ),
        txt AS (
            SELECT s.chunk_id, s.text_score, row_number() OVER (ORDER BY s.text_score DESC, s.chunk_id)::integer AS rnk
            FROM (
                -- Okapi BM25 (k1 = 1.2, b = 0.75) over the query terms present in the chunk.
                SELECT c.chunk_id,
                       sum(w.idf * cardinality(t.positions) * 2.2
                           / (cardinality(t.positions) + 1.2 * (0.25 + 0.75 * length(c.tsv) / g.avg_length)))::real
                           AS text_score
                FROM chunks c
                CROSS JOIN corpus_stats g
                -- Only the query's own lexemes are unnested (ts_filter keeps weight A, given to them).
                CROSS JOIN LATERAL unnest(ts_filter(setweight(c.tsv, 'A', $12), '{a}')) t
                JOIN (SELECT l.lexeme, ln(1 + (g2.chunks - l.ndoc + 0.5) / (l.ndoc + 0.5)) AS idf
                      FROM lexeme_stats l CROSS JOIN corpus_stats g2
                      WHERE l.lexeme = ANY ($12)) w ON w.lexeme = t.lexeme
                WHERE $6 <> 'vector' AND c.tsv @@ $7
                  AND c.version_id IN (SELECT version_id FROM versions)
                  AND ($4 OR NOT c.repealed)
                GROUP BY c.chunk_id
                ORDER BY text_score DESC, c.chunk_id
                LIMIT $5
            ) s
        ),
        -- Normalisers of the convex combination: cosine min-max over the arm's candidates (its
        -- floor is far above 0 for e5), BM25 over its best (BM25's floor is 0 already).
        norm AS (
            SELECT (SELECT min(similarity) FROM vec) AS vmin, (SELECT max(similarity) FROM vec) AS vmax,
                   (SELECT max(text_score) FROM txt) AS tmax
        ),
        fused AS (
            SELECT coalesce(v.chunk_id, t.chunk_id) AS chunk_id, v.similarity, t.text_score,
                   v.rnk AS vector_rank, t.rnk AS text_rank,
                   CASE WHEN $13 = 'rrf'
                        THEN coalesce($9 / ($8 + v.rnk), 0) + coalesce($10 / ($8 + t.rnk), 0)
                        ELSE coalesce($9 * (v.similarity - n.vmin) / nullif(n.vmax - n.vmin, 0), 0)
                             + coalesce($10 * t.text_score / nullif(n.tmax, 0), 0)
                   END AS score
            FROM vec v FULL JOIN txt t ON t.chunk_id = v.chunk_id CROSS JOIN norm n
        ),
        best AS (  -- one hit per article: its best-scoring part
            SELECT DISTINCT ON (c.version_id, c.article)
                   f.*, c.version_id, c.article, c.part, c.text
            FROM fused f JOIN chunks c ON c.chunk_id = f.chunk_id
            ORDER BY c.version_id, c.article, f.score DESC, f.chunk_id
        )
        SELECT b.chunk_id, v.eli, a.title, b.article, b.part, b.text,
               b.similarity, b.text_score, b.score, b.vector_rank, b.text_rank,
               (SELECT max(vec.similarity) FROM vec)
        FROM best b
        JOIN act_versions v ON v.version_id = b.version_id
        JOIN acts a ON a.eli = v.eli
        ORDER BY b.score DESC, b.chunk_id
        LIMIT $11
    $q$, vec_cast, model)
    USING query_embedding, acts, as_of, include_repealed, n_fetch, mode, tsq,
          rrf_k::double precision, vector_weight, text_weight, k, terms, fusion;
END
$fn$;

-- By name alone: the argument list is written once, above (the old overload is dropped first).
COMMENT ON FUNCTION search_chunks IS
    'Hybrid (RRF or convex) search over current or as-of article chunks; see README "Querying with SQL".';

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION search_chunks SET search_path = %I, pg_catalog, pg_temp', current_schema());
END
$$;
