-- Hybrid search over article chunks: full text (Polish) + vectors (+ a model's sparse term vectors,
-- revision 0008), fused by Reciprocal Rank Fusion or by a convex combination of normalised scores
-- (per model: pipeline/retrieval/search.py MODEL_PROFILES).
-- Public interface (docs/sql.md). Written to be run again: after the migrations, pipeline.storage.schema
-- re-applies sql/*.sql whenever their content differs from what table sql_interface records (shipped
-- revisions keep the snapshot they ran, in migrations/frozen/).
--
--   SELECT eli, article, score FROM search_chunks('ile dni urlopu', '[...]'::vector, 'multilingual-e5-small');
--
-- Each arm over-fetches `fetch_k` candidates (default max(4k, 40)) among the chunks of the selected
-- versions (as_of / acts filters applied inside the arm, with pgvector's iterative index scans so a
-- selective filter still yields k rows); the fused list keeps the best part of each article. The
-- text arm reads impact-ordered postings (search_text_arm()); the vector arm scores a chunk by the
-- best of its own vector and its pieces' (chunk_pieces, revision 0006); the sparse arm by the inner
-- product of its chunk text's sparse vector with the idf-weighted question (sparse_query()).

-- Corpus statistics for BM25 ranking of the full-text arm (ts_rank has no inverse document
-- frequency: "pracownik" in a labour code would weigh as much as a rare, telling word). Kept up to
-- date by triggers on chunks, in the writing transaction (revision 0005); these views are their
-- public face, with the columns the materialized views of 0002-0004 had. Since revision 0007 they
-- count each distinct chunk text (content hash) once: the unchanged articles of a new version do not
-- count again, so storing versions does not shift the statistics.
CREATE OR REPLACE VIEW lexeme_stats AS
    SELECT lexeme, ndoc FROM lexicon;
COMMENT ON VIEW lexeme_stats IS
    'In how many distinct chunk texts each lexeme occurs (BM25 idf); kept by triggers on chunks.';
CREATE OR REPLACE VIEW corpus_stats AS
    SELECT id, chunks::float8 AS chunks, coalesce(total_length::float8 / nullif(chunks, 0), 1) AS avg_length
    FROM corpus_totals;
COMMENT ON VIEW corpus_stats IS
    'Distinct chunk texts and their average tsvector length (BM25); one row, kept by triggers on chunks.';

-- A repair tool, not part of ingest: rebuilds the statistics and postings from the chunks, e.g. after
-- rows were written with triggers disabled (session_replication_role = replica, pg_restore
-- --disable-triggers), or to rewrite impacts after the average length drifted.
CREATE OR REPLACE FUNCTION refresh_search_stats() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    -- Chunk writers wait until this commits (their triggers would count against a half-built state).
    LOCK TABLE chunks IN SHARE MODE;
    TRUNCATE postings, lexicon RESTART IDENTITY;
    UPDATE corpus_totals SET chunks = 0, total_length = 0;
    PERFORM search_stats_add(ARRAY(SELECT chunk_id FROM chunks));
END
$$;
COMMENT ON FUNCTION refresh_search_stats() IS
    'Repair: recompute lexeme_stats, corpus_stats and the postings from all chunks (ingest keeps them by triggers).';

-- Which versions a search looks at: per base act the one in force on as_of (NULL: current), of the
-- given acts only (an ELI id, or a base act id for all its consolidated texts).
CREATE OR REPLACE FUNCTION selected_versions(acts text[], as_of date) RETURNS SETOF bigint
LANGUAGE sql STABLE AS $$
    SELECT v.version_id FROM versions_as_of(as_of) v
    WHERE acts IS NULL OR v.eli = ANY (acts) OR v.base_eli = ANY (acts)
$$;

-- Revision 0012: an article whose wording on a day is rebuilt from later changes (rebuilt_articles,
-- pipeline.storage.rebuilt) is searched in that wording, never in both. The chunks of the given versions
-- that are not the wording of their article on ``day``: the official ones of an article rebuilt that day,
-- and the rebuilt ones of another period. What every arm of search_chunks() leaves out.
CREATE OR REPLACE FUNCTION wordings_not_on(versions bigint[], day date) RETURNS bigint[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(c.chunk_id), '{}')
    FROM rebuilt_articles r
    JOIN chunks c ON c.article_id = r.article_id
    WHERE r.version_id = ANY (versions)
      AND CASE WHEN c.rebuilt_id IS NULL THEN in_force_on(r.in_force_from, r.in_force_until, day)
               ELSE c.rebuilt_id = r.rebuilt_id AND NOT in_force_on(r.in_force_from, r.in_force_until, day) END
$$;
COMMENT ON FUNCTION wordings_not_on(bigint[], date) IS
    'Internal: the chunks of the versions that are not their article''s wording on the day (official or rebuilt).';

-- BM25 of the chunks `ids` for a query given as its lexemes with their idf (same order): the sum,
-- over the query lexemes a chunk holds, of idf × bm25_tf() (revision 0005: the formula). Only the
-- query's lexemes are unnested (setweight marks them A, ts_filter keeps them, both in C). Inlined
-- into its callers by the planner, so the chunks are scored in one join, not a call per chunk.
CREATE OR REPLACE FUNCTION bm25_scores(ids bigint[], lexemes text[], idfs double precision[],
                                       avg_length double precision)
RETURNS TABLE (chunk_id bigint, text_score real)
LANGUAGE sql STABLE AS $$
    SELECT c.chunk_id, sum(w.idf * bm25_tf(cardinality(t.positions), length(c.tsv), avg_length))::real
    FROM chunks c
    CROSS JOIN LATERAL unnest(ts_filter(setweight(c.tsv, 'A', lexemes), '{a}')) t
    JOIN unnest(lexemes, idfs) w(lexeme, idf) ON w.lexeme = t.lexeme
    WHERE c.chunk_id = ANY (ids)
    GROUP BY c.chunk_id
$$;

-- The impact of a posting (bm25_tf(): k1 1.2, b 0.75) every 5 % of all postings, from the lowest to
-- the highest, measured on the whole ELI mirror (29 acts, ~10k chunks). A property of the formula
-- and of statutory text, not of the corpus size: the 100k and 1M chunk scale corpora have the same
-- quantiles within 0.05 (docs/scaling.md), and a test checks them on its own corpus.
CREATE OR REPLACE FUNCTION impact_quantiles() RETURNS double precision[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN '{0.617,0.750,0.789,0.819,0.844,0.868,0.888,0.910,0.930,0.955,0.981,1.011,1.050,1.099,1.162,1.228,1.296,1.377,1.483,1.622,2.095}'::double precision[];

-- The share of a postings list with impact >= x, by linear interpolation between the quantiles.
CREATE OR REPLACE FUNCTION impact_share(x double precision) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
    WHEN x <= (impact_quantiles())[1] THEN 1.0
    WHEN x >= (impact_quantiles())[21] THEN 0.0
    ELSE 1.0 - 0.05 * (width_bucket(x, impact_quantiles()) - 1
                       + (x - (impact_quantiles())[width_bucket(x, impact_quantiles())])
                         / ((impact_quantiles())[width_bucket(x, impact_quantiles()) + 1]
                            - (impact_quantiles())[width_bucket(x, impact_quantiles())]))
END;

-- How many postings of each query lexeme the text arm's index path reads, `budget` in all. Shared the
-- way the best contributions (idf × impact) of all the lists together would be: every list read down
-- to the same contribution τ, i.e. to impact τ / idf, with τ chosen so that the expected reads (list
-- length × impact_share) add up to the budget. A rare lexeme's list is read whole, a common one's
-- only where its impacts are high. A fixed depth per list read the common lexemes' lists as deep as
-- the rare ones' and lost recall as the lists grew: at 1M chunks, for the same number of postings,
-- recall@10 against exact BM25 goes from 0.902 to 0.932 (1000 chunks scored) and from 0.938 to 0.970
-- (2500), nearly what reading by the exact contributions reaches (0.943 / 0.973; docs/scaling.md).
-- `ndocs` are the lists' lengths (lexicon.npostings: since revision 0007 a list can be longer than
-- its lexeme's document frequency, by the chunks of other versions holding the same text).
CREATE OR REPLACE FUNCTION postings_depths(ndocs integer[], idfs double precision[], budget bigint)
RETURNS integer[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
DECLARE
    lo double precision := 0;  -- reads more than the budget
    -- above every contribution: an impact is at most k1 + 1 = 2.2 (bm25_tf)
    hi double precision := 2.2 * (SELECT max(i) FROM unnest(idfs) i);
    mid double precision;
BEGIN
    IF (SELECT sum(n) FROM unnest(ndocs) n) <= budget THEN
        RETURN ndocs;
    END IF;
    FOR step IN 1..30 LOOP
        mid := (lo + hi) / 2;
        IF (SELECT sum(least(n, n * impact_share(mid / i))) FROM unnest(ndocs, idfs) u(n, i)) > budget THEN
            lo := mid;
        ELSE
            hi := mid;
        END IF;
    END LOOP;
    RETURN ARRAY(SELECT least(n, round(n * impact_share(hi / i)))::integer
                 FROM unnest(ndocs, idfs) WITH ORDINALITY u(n, i, o) ORDER BY o);
END
$fn$;
COMMENT ON FUNCTION postings_depths(integer[], double precision[], bigint) IS
    'Internal: postings read per query lexeme by the text arm (one contribution threshold for all lists).';

-- The full-text arm of search_chunks(): the n best chunks by BM25 among the chunks of the selected
-- versions.
-- Index path, in two steps. 1. Read the highest-impact postings of each query lexeme
-- (postings_impact_idx, index-only), as many in all as n_postings a lexeme would read, shared among
-- the lists by postings_depths() (a rare lexeme's list whole, a common one's top), and rank their
-- chunks by Σ idf × impact, about a lower bound of BM25 (it lacks the lexemes a chunk holds below
-- the lists' cut; impacts carry the average length of when they were written), keeping the best
-- n_scored. 2. Score those that pass the filters exactly, from their tsvectors and the current
-- statistics. Cost: index entries and n_scored chunk rows, where a scan reads every matching chunk.
-- A chunk is missed when every list of its lexemes cuts it off, or its bound ranks it below the
-- n_scored best. n_postings is 1 % of the chunks (at least 25 n): recall depends on the share of a
-- list that is read, so a fixed number would lose recall as the corpus grows (docs/benchmarks-search.md);
-- a session may override it for measurements with SET pipeline.postings_per_lexeme = N. n_scored
-- is 25 n, or 0.25 % of the chunks where that is more (past 400 × 25 n chunks): the longer the lists
-- beyond what is read, the less a partial sum says, so more candidates need their exact score
-- (at 1M chunks, 1000 scored found 0.93 of the exact top 10, 2500 found 0.97: docs/scaling.md).
-- Scan path: every chunk of the selected versions that holds an informative query lexeme (any query
-- lexeme, when fewer than n do). Taken for an acts filter (its chunks are few, found through
-- chunks_version_idx, while most candidates of the whole corpus would fail it), and when fewer than
-- n candidates pass the filters (e.g. as_of an old text) while some lexeme had more postings than
-- were read.
CREATE OR REPLACE FUNCTION search_text_arm(terms text[], acts text[], as_of date, include_repealed boolean,
                                           n integer)
RETURNS TABLE (chunk_id bigint, text_score real)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_custom_plan  -- plans fit the arrays they get (one version or thousands)
AS $fn$
DECLARE
    n_postings integer := nullif(current_setting('pipeline.postings_per_lexeme', true), '')::integer;
    n_scored   integer;
    lexemes    text[];
    lexeme_ids integer[];
    lengths    integer[];  -- of the lexemes' postings lists
    idfs       double precision[];
    depths     integer[];  -- postings read per lexeme (postings_depths)
    avg_length double precision;
    cut        boolean;  -- some lexeme has more postings than the index path reads
    tsq        tsquery;  -- the informative lexemes
    tsq_all    tsquery;
    versions   bigint[];
    excluded   bigint[];  -- article rows not in force on the day (revision 0010)
    hidden     bigint[];  -- chunks not in the article's wording of the day (revision 0012)
    ranked     bigint[];
    ids        bigint[];
BEGIN
    SELECT CASE WHEN n_postings IS NULL THEN greatest(25 * n, ceil(g.chunks / 100)::integer)
                ELSE greatest(n_postings, 1) END,
           greatest(25 * n, ceil(g.chunks / 400)::integer)
    INTO n_postings, n_scored FROM corpus_stats g;
    SELECT array_agg(l.lexeme), array_agg(l.lexeme_id), array_agg(l.npostings), array_agg(bm25_idf(l.ndoc, g.chunks)),
           min(g.avg_length),
           -- The scan's candidates come from the informative lexemes only: one in more than a tenth
           -- of all chunks ("dzień", "pracownik") would make nearly every chunk a candidate, while
           -- alone it could never lift one into the top n. It still counts in the score of the others.
           string_agg(quote_literal(l.lexeme), ' | ') FILTER (WHERE l.ndoc <= 0.1 * g.chunks)::tsquery,
           string_agg(quote_literal(l.lexeme), ' | ')::tsquery
    INTO lexemes, lexeme_ids, lengths, idfs, avg_length, tsq, tsq_all
    FROM lexicon l CROSS JOIN corpus_stats g
    WHERE l.lexeme = ANY (terms);
    IF lexemes IS NULL THEN
        RETURN;  -- no query lexeme occurs in any chunk
    END IF;
    depths := postings_depths(lengths, idfs, (SELECT sum(least(d, n_postings)) FROM unnest(lengths) d)::bigint);
    cut := EXISTS (SELECT FROM unnest(lengths, depths) u(d, r) WHERE r < d);
    versions := ARRAY(SELECT version_id FROM selected_versions(acts, as_of) version_id);
    excluded := CASE WHEN include_repealed THEN '{}'::bigint[]
                     ELSE articles_out_of_force(versions, coalesce(as_of, legal_today())) END;
    hidden := wordings_not_on(versions, coalesce(as_of, legal_today()));

    IF acts IS NULL THEN
        LOOP
            -- Only the n_scored best are kept (a bounded heap, not a sort of every chunk read: at 1M
            -- chunks ~100k are read for ~2500 kept).
            ranked := ARRAY(
                SELECT p.chunk_id
                FROM unnest(lexeme_ids, idfs, depths) q(lexeme_id, idf, depth)
                CROSS JOIN LATERAL (SELECT p.chunk_id, p.impact FROM postings p
                                    WHERE p.lexeme_id = q.lexeme_id
                                    ORDER BY p.impact DESC, p.chunk_id
                                    LIMIT q.depth) p
                GROUP BY p.chunk_id
                ORDER BY sum(q.idf * p.impact) DESC, p.chunk_id
                LIMIT n_scored);
            ids := ARRAY(SELECT c.chunk_id FROM chunks c
                         WHERE c.chunk_id = ANY (ranked)
                           AND c.version_id = ANY (versions) AND (include_repealed OR NOT c.repealed)
                           AND NOT (c.article_id = ANY (excluded)) AND NOT (c.chunk_id = ANY (hidden)));
            -- Filters that drop most of the best (as_of, repealed articles): read again, keep more.
            EXIT WHEN cardinality(ids) >= n OR cardinality(ranked) < n_scored;
            n_scored := 4 * n_scored;
        END LOOP;
    END IF;
    IF ids IS NULL OR (cut AND cardinality(ids) < n) THEN
        ids := ARRAY(
            SELECT c.chunk_id FROM chunks c
            WHERE c.tsv @@ coalesce(tsq, tsq_all) AND c.version_id = ANY (versions)
              AND (include_repealed OR NOT c.repealed) AND NOT (c.article_id = ANY (excluded))
              AND NOT (c.chunk_id = ANY (hidden)));
        IF cardinality(ids) < n AND tsq <> tsq_all THEN  -- too few hold an informative lexeme: all count
            ids := ARRAY(
                SELECT c.chunk_id FROM chunks c
                WHERE c.tsv @@ tsq_all AND c.version_id = ANY (versions) AND (include_repealed OR NOT c.repealed)
                           AND NOT (c.article_id = ANY (excluded)) AND NOT (c.chunk_id = ANY (hidden)));
        END IF;
        RAISE DEBUG 'search_text_arm: scan, % chunks scored', cardinality(ids);
    ELSE
        RAISE DEBUG 'search_text_arm: index, % chunks scored, the best of % postings read (a lexeme: %)',
            cardinality(ids), (SELECT sum(d) FROM unnest(depths) d), depths;
    END IF;
    RETURN QUERY
        SELECT s.chunk_id, s.text_score FROM bm25_scores(ids, lexemes, idfs, avg_length) s
        ORDER BY s.text_score DESC, s.chunk_id
        LIMIT n;
END
$fn$;
COMMENT ON FUNCTION search_text_arm(text[], text[], date, boolean, integer) IS
    'Internal: the BM25 arm of search_chunks() (postings index, or a scan for an acts filter).';

-- Exact BM25 by exhaustion: every chunk of the current texts (repealed articles, and those not in force
-- today, left out, as search_chunks() leaves them) that holds
-- any query lexeme is scored; one row per article (its best part), best first, as search_chunks()
-- returns them. The reference that the text arm's recall is measured against (bench/, tests).
CREATE OR REPLACE FUNCTION text_search_exact(query_text text, k integer DEFAULT 10)
RETURNS TABLE (chunk_id bigint, text_score real)
-- SECURITY DEFINER: like search_chunks(), callable by a read-only role.
LANGUAGE plpgsql STABLE SECURITY DEFINER AS $fn$
#variable_conflict use_column
DECLARE
    -- Worked out once, here: as a subquery's columns the planner pulled them into the chunk scan's filter and
    -- ran them once per candidate chunk (~1 s a question, BM25 itself 0.03 s).
    versions bigint[];
    out_of_force bigint[];
    hidden bigint[];
BEGIN
    IF k IS NULL OR k < 1 OR k > 1000 THEN  -- as search_chunks() checks it
        RAISE EXCEPTION 'k must be between 1 and 1000, not %', coalesce(k::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    PERFORM checked_query_text(query_text);  -- as search_chunks() checks it
    IF query_text IS NULL OR query_text !~ '\S' THEN
        RAISE EXCEPTION 'text search needs a query_text with a word in it, not %',
            CASE WHEN query_text IS NULL THEN 'NULL' ELSE 'a blank text' END USING ERRCODE = '22023';
    END IF;
    versions := ARRAY(SELECT selected_versions(NULL, NULL));
    out_of_force := articles_out_of_force(versions, legal_today());
    hidden := wordings_not_on(versions, legal_today());
    RETURN QUERY
    WITH q AS (
        SELECT array_agg(l.lexeme) AS lexemes, array_agg(bm25_idf(l.ndoc, g.chunks)) AS idfs,
               min(g.avg_length) AS avg_length, string_agg(quote_literal(l.lexeme), ' | ')::tsquery AS tsq
        -- The terms as a row source: computed once, whatever plan the lexicon gets (`lexeme = ANY
        -- (search_terms(…))` is evaluated per row under a sequential scan: seconds a query).
        FROM unnest(search_terms(query_text)) t(lexeme)
        JOIN lexeme_stats l ON l.lexeme = t.lexeme
        CROSS JOIN corpus_stats g
    ),
    matching AS (
        SELECT ARRAY(SELECT c.chunk_id FROM chunks c
                     WHERE c.tsv @@ q.tsq AND NOT c.repealed
                       AND c.version_id = ANY (versions) AND NOT (c.article_id = ANY (out_of_force))
                       AND NOT (c.chunk_id = ANY (hidden))) AS ids
        FROM q
    ),
    best AS (
        SELECT DISTINCT ON (c.version_id, c.article) s.chunk_id, s.text_score
        FROM q CROSS JOIN matching m
        CROSS JOIN LATERAL bm25_scores(m.ids, q.lexemes, q.idfs, q.avg_length) s
        JOIN chunks c ON c.chunk_id = s.chunk_id
        ORDER BY c.version_id, c.article, s.text_score DESC, s.chunk_id
    )
    SELECT b.chunk_id, b.text_score FROM best b ORDER BY b.text_score DESC, b.chunk_id LIMIT k;
END
$fn$;
COMMENT ON FUNCTION text_search_exact(text, integer) IS
    'Exact BM25 over the current texts by exhaustion, one row per article: the reference for the text arm.';

-- The fusion parameter was added after 0002 shipped, the sparse arm's after 0007: drop those
-- signatures so that they do not overload this one.
DROP FUNCTION IF EXISTS search_chunks(text, vector, text, integer, text[], date, boolean, text, integer,
                                      double precision, double precision, integer);
DROP FUNCTION IF EXISTS search_chunks(text, vector, text, integer, text[], date, boolean, text, integer,
                                      double precision, double precision, integer, text);

-- The sparse arm's query (revision 0008): each feature of the model's sparse vector of the question
-- times the feature's idf over the model's stored vectors (bm25_idf, as for a lexeme): a latent term
-- active in most chunks says little, as a common word does. Features no stored vector has are left
-- out (they match nothing). An error when the model has no sparse vectors or another dimension.
CREATE OR REPLACE FUNCTION sparse_query(model text, query sparsevec) RETURNS sparsevec
-- SECURITY DEFINER: like search_chunks(), callable by a read-only role.
LANGUAGE plpgsql STABLE SECURITY DEFINER AS $fn$
#variable_conflict use_column
DECLARE
    dims integer := (SELECT m.dimensions FROM sparse_models m WHERE m.model = sparse_query.model);
BEGIN
    -- The errors search_chunks() gives for the same arguments, not a NULL that reads as "no match".
    IF dims IS NULL THEN
        RAISE EXCEPTION 'no sparse vectors for model % (run pipeline embed with its sparse head)',
            coalesce(sparse_query.model, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF query IS NULL OR split_part(query::text, '/', 2)::integer <> dims THEN
        RAISE EXCEPTION 'query has % dimensions, model % has %', coalesce(split_part(query::text, '/', 2), 'NULL'),
            sparse_query.model, dims USING ERRCODE = '22023';
    END IF;
    RETURN (
    SELECT format('{%s}/%s',
                  coalesce(string_agg(q.feature || ':' || (q.value * bm25_idf(f.ndoc, m.vectors))::real, ','
                                      ORDER BY q.feature), ''),
                  m.dimensions)::sparsevec
    FROM sparse_models m
    LEFT JOIN sparsevec_entries(query) q ON true
    LEFT JOIN sparse_features f ON f.model = m.model AND f.feature = q.feature
    WHERE m.model = sparse_query.model AND (q.feature IS NULL OR f.ndoc IS NOT NULL)
    GROUP BY m.dimensions, m.vectors);
END
$fn$;
COMMENT ON FUNCTION sparse_query(text, sparsevec) IS
    'The sparse arm''s query: a sparse vector of the question, each feature weighted by its idf over the model''s vectors.';

-- The rows gained base_eli, version_no and valid_from (2026-12-02: an as-of search says which text
-- each hit comes from, and a reader, who may not read act_versions, can cite it), then in_force,
-- in_force_from and in_force_until (revision 0010), then official and rebuilt_from (revision 0012). A function's row
-- type cannot be replaced, so an older search_chunks is dropped here and the roles that could call it
-- are granted the new one below (grant-reader's grants would otherwise be lost).
CREATE TEMP TABLE IF NOT EXISTS search_chunks_grantees (role name) ON COMMIT DROP;
DO $$
DECLARE
    fn oid := (SELECT p.oid FROM pg_proc p
               WHERE p.proname = 'search_chunks' AND p.pronamespace = current_schema()::regnamespace);
BEGIN
    IF fn IS NOT NULL AND pg_get_function_result(fn) NOT LIKE '%rebuilt_from%' THEN
        INSERT INTO search_chunks_grantees
            SELECT r.rolname FROM pg_proc p CROSS JOIN LATERAL aclexplode(p.proacl) x
            JOIN pg_roles r ON r.oid = x.grantee  -- PUBLIC (0) has no row: it is not given the new one
            WHERE p.oid = fn AND x.privilege_type = 'EXECUTE' AND x.grantee <> p.proowner;
        EXECUTE 'DROP FUNCTION ' || fn::regprocedure;
    END IF;
END
$$;

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
    fusion           text    DEFAULT 'rrf', -- rrf: Σ weight / (rrf_k + rank) | convex: Σ weight × score
                                            -- normalised to [0, 1] within the arm's candidates
    query_sparse     sparsevec DEFAULT NULL, -- the model's sparse vector of the question (revision 0008);
                                             -- NULL, or a model without sparse vectors: no sparse arm
    sparse_weight    double precision DEFAULT 1.0
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
    best_similarity double precision, -- the vector arm's best similarity, on every row: what a
                                      -- refusal threshold compares (the fused top k may hold none)
    sparse_score double precision,    -- inner product with the idf-weighted sparse query (sparse arm)
    sparse_rank  integer,             -- rank in the sparse arm
    base_eli     text,                -- the act this text is of (a consolidated text's base act, else eli)
    version_no   integer,             -- the stored version of eli the hit is from (as_of picks older ones)
    valid_from   date,                -- the date from which that version's text states the law
    -- Revision 0010: the article (this wording of it) on the day searched (as_of, else today): true, or
    -- NULL where the texts do not determine when it is in force (false only with include_repealed).
    in_force       boolean,
    in_force_from  date,              -- the first day it is in force (NULL: undetermined)
    in_force_until date,              -- the first day it no longer is (NULL: no end the texts give)
    -- Revision 0012: false where the text is the article's wording on the day rebuilt from later changes
    -- (rebuilt_articles), not an official text; rebuilt_from: those changes, as a JSON list.
    official       boolean,
    rebuilt_from   jsonb
)
-- SECURITY DEFINER: a read-only role (pipeline db grant-reader) may call it without table access.
LANGUAGE plpgsql STABLE SECURITY DEFINER AS $fn$
DECLARE
    n_fetch  integer;  -- candidates per arm: set once k and fetch_k are checked (4 * k could overflow first)
    vec_cast text := 'vector';
    sp_cast  text := 'sparsevec';
    sp_query sparsevec;  -- query_sparse weighted by idf (sparse_query()); NULL: no sparse arm
    terms    text[];
    excluded bigint[] := '{}';  -- article rows not in force on the day (revision 0010)
    hidden   bigint[];          -- chunks not in their article's wording of the day (revision 0012)
BEGIN
    -- Every argument is checked here, NULL included (a NULL compares to nothing and would slip through
    -- as "no rows" or as a silent default), so that a caller's mistake is an error, not an empty answer.
    IF mode IS NULL OR mode NOT IN ('hybrid', 'vector', 'text', 'sparse') THEN
        RAISE EXCEPTION 'mode must be hybrid, vector, text or sparse, not %', coalesce(mode, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    -- The text arm reads query_text (the vector and sparse arms are given the question's vectors instead):
    -- a NULL or blank one would be "no match". A longer text than checked_query_text() reads is refused
    -- in every mode.
    PERFORM checked_query_text(query_text);
    IF mode IN ('hybrid', 'text') AND (query_text IS NULL OR query_text !~ '\S') THEN
        RAISE EXCEPTION '% search needs a query_text with a word in it, not %', mode,
            CASE WHEN query_text IS NULL THEN 'NULL' ELSE 'a blank text' END USING ERRCODE = '22023';
    END IF;
    IF fusion IS NULL OR fusion NOT IN ('rrf', 'convex') THEN
        RAISE EXCEPTION 'fusion must be rrf or convex, not %', coalesce(fusion, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF k IS NULL OR k < 1 OR k > 1000 THEN
        RAISE EXCEPTION 'k must be between 1 and 1000, not %', coalesce(k::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF fetch_k < 1 OR fetch_k > 10000 THEN  -- NULL: the default, 4 k (at least 40)
        RAISE EXCEPTION 'fetch_k must be between 1 and 10000 (or NULL for the default), not %', fetch_k
            USING ERRCODE = '22023';
    END IF;
    -- Candidates per arm: fetch_k, at least k (fewer could not fill the k rows asked for).
    n_fetch := greatest(coalesce(fetch_k, greatest(4 * k, 40)), k);
    IF rrf_k IS NULL OR rrf_k < 0 OR rrf_k > 100000 THEN
        RAISE EXCEPTION 'rrf_k must be between 0 and 100000, not %', coalesce(rrf_k::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF vector_weight IS NULL OR text_weight IS NULL OR sparse_weight IS NULL
       OR vector_weight < 0 OR text_weight < 0 OR sparse_weight < 0
       -- NaN is not < 0, and NaN or Infinity would make every score NaN
       OR 'NaN' IN (vector_weight, text_weight, sparse_weight)
       OR 'Infinity' IN (vector_weight, text_weight, sparse_weight) THEN
        RAISE EXCEPTION 'vector_weight, text_weight and sparse_weight must be finite numbers, 0 or more, not %, %, %',
            coalesce(vector_weight::text, 'NULL'), coalesce(text_weight::text, 'NULL'),
            coalesce(sparse_weight::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF acts IS NOT NULL THEN
        -- A misspelt id would select nothing and look like "no matching law".
        IF cardinality(acts) = 0 THEN
            RAISE EXCEPTION 'acts is empty: give ELI ids such as DU/2025/277, or NULL for every act'
                USING ERRCODE = '22023';
        END IF;
        DECLARE
            unknown text := (SELECT coalesce(a, 'NULL') FROM unnest(acts) a
                             WHERE a IS NULL OR NOT EXISTS (SELECT 1 FROM acts s WHERE s.eli = a OR s.base_eli = a)
                             LIMIT 1);
        BEGIN
            IF unknown IS NOT NULL THEN
                RAISE EXCEPTION 'act % is not in the database (ELI ids are written as DU/2025/277; current_acts lists them)',
                    unknown USING ERRCODE = '22023';
            END IF;
        END;
    END IF;
    IF mode <> 'hybrid' THEN  -- one arm: its own ranking, whatever weights were given for fusion
        vector_weight := 1.0;
        text_weight := 1.0;
        sparse_weight := 1.0;
    END IF;
    IF mode = 'sparse' AND (query_sparse IS NULL OR model IS NULL) THEN
        RAISE EXCEPTION 'sparse search needs query_sparse and model' USING ERRCODE = '22023';
    END IF;
    IF mode IN ('hybrid', 'sparse') AND query_sparse IS NOT NULL THEN
        SELECT format('sparsevec(%s)', m.dimensions) INTO sp_cast FROM sparse_models m WHERE m.model = search_chunks.model;
        IF FOUND THEN
            IF (SELECT split_part(query_sparse::text, '/', 2)::integer) <> (SELECT m.dimensions FROM sparse_models m
                                                                            WHERE m.model = search_chunks.model) THEN
                RAISE EXCEPTION 'query_sparse has % dimensions, model % has %', split_part(query_sparse::text, '/', 2),
                    model, (SELECT m.dimensions FROM sparse_models m WHERE m.model = search_chunks.model)
                    USING ERRCODE = '22023';
            END IF;
            sp_query := sparse_query(model, query_sparse);
            IF sp_query::text LIKE '{}/%' THEN  -- no feature any stored vector has: nothing can match
                sp_query := NULL;
            END IF;
        ELSIF mode = 'sparse' THEN
            RAISE EXCEPTION 'no sparse vectors for model % (run pipeline embed with its sparse head)', model
                USING ERRCODE = '22023';
        ELSE
            sp_cast := 'sparsevec';  -- SELECT INTO found no row and left it NULL; the arm stays empty
        END IF;
    END IF;
    IF mode IN ('hybrid', 'vector') THEN
        IF query_embedding IS NULL OR model IS NULL THEN
            RAISE EXCEPTION '% search needs query_embedding and model; % NULL', mode,
                CASE WHEN model IS NOT NULL THEN 'query_embedding is' WHEN query_embedding IS NOT NULL THEN 'model is'
                     ELSE 'both are' END USING ERRCODE = '22023';
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
        IF vector_norm(query_embedding) = 0 THEN  -- its cosine similarity to anything is NaN
            RAISE EXCEPTION 'query_embedding is a zero vector' USING ERRCODE = '22023';
        END IF;
    END IF;
    IF mode IN ('hybrid', 'text') THEN
        terms := search_terms(query_text);
    END IF;
    IF NOT include_repealed THEN  -- what is not the law on the day is left out, as a repealed article is
        excluded := articles_out_of_force(ARRAY(SELECT selected_versions(acts, as_of)), coalesce(as_of, legal_today()));
    END IF;
    -- One wording of an article a day: the rebuilt one where later changes make it, else the official one.
    hidden := wordings_not_on(ARRAY(SELECT selected_versions(acts, as_of)), coalesce(as_of, legal_today()));

    IF mode <> 'text' THEN
        -- Filters are applied inside the index scan; iterative scans keep going until enough rows pass.
        PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true);
        -- How far the HNSW scan looks: twice the units the arm keeps (pieces share chunks), at least 40,
        -- and at least √(vectors stored). A fixed ef_search loses recall as the graph grows: on the scale
        -- bench's real-text corpora (m 16, docs/scaling.md) recall@10 ≥ 0.95 took ef_search ~100 at 10k
        -- vectors, 200-400 at 100k and over 1000 at 1M, about √N, and the scan itself stays at
        -- milliseconds. The planner's row estimate of embeddings (-1: never analyzed) is close enough.
        -- pgvector's maximum is 1000.
        PERFORM set_config('hnsw.ef_search', least(1000, greatest(40, 2 * n_fetch,
            (SELECT ceil(sqrt(greatest(c.reltuples, 0)))::integer FROM pg_class c WHERE c.oid = 'embeddings'::regclass)
            ))::text, true);
        RAISE DEBUG 'search_chunks: hnsw.ef_search %', current_setting('hnsw.ef_search');
    END IF;

    -- The cast and the model literal must appear verbatim for the planner to use the model's
    -- partial expression index, hence dynamic SQL (values are still parameters, names are quoted).
    RETURN QUERY EXECUTE format($q$
        WITH versions AS (
            SELECT version_id FROM selected_versions($2, $3) version_id
        ),
        -- A chunk's vector similarity is the best of its own vector and its pieces' (revision 0006):
        -- the nearest 2 × fetch_k units (chunks and pieces), then one row per chunk.
        vec AS (
            SELECT s.chunk_id, 1 - s.distance AS similarity,
                   row_number() OVER (ORDER BY s.distance, s.chunk_id)::integer AS rnk
            FROM (
                SELECT DISTINCT ON (n.chunk_id) n.chunk_id, n.distance
                FROM (
                    SELECT c.chunk_id, e.embedding::%1$s <=> $1::%1$s AS distance
                    FROM embeddings e
                    JOIN embedding_texts u ON u.content_sha256 = e.content_sha256
                    JOIN chunks c ON c.chunk_id = u.chunk_id
                    WHERE e.model = %2$L AND $6 IN ('hybrid', 'vector')
                      AND c.version_id IN (SELECT version_id FROM versions)
                      AND ($4 OR NOT c.repealed) AND NOT (c.article_id = ANY ($15)) AND NOT (c.chunk_id = ANY ($16))
                    ORDER BY e.embedding::%1$s <=> $1::%1$s
                    LIMIT 2 * $5
                ) n
                ORDER BY n.chunk_id, n.distance
            ) s
            ORDER BY s.distance, s.chunk_id
            LIMIT $5
        ),
        txt AS (
            SELECT s.chunk_id, s.text_score, row_number() OVER (ORDER BY s.text_score DESC, s.chunk_id)::integer AS rnk
            FROM search_text_arm($11, $2, $3, $4, $5) s
            WHERE $6 IN ('hybrid', 'text')
        ),
        -- The sparse arm (revision 0008): the chunks whose stored sparse vector has the largest inner
        -- product with the idf-weighted query, from the model's partial HNSW index.
        spa AS (
            SELECT s.chunk_id, s.sparse_score,
                   row_number() OVER (ORDER BY s.sparse_score DESC, s.chunk_id)::integer AS rnk
            FROM (
                SELECT c.chunk_id, -(e.embedding::%3$s <#> $13::%3$s) AS sparse_score
                FROM sparse_embeddings e
                JOIN chunks c ON c.content_sha256 = e.content_sha256
                WHERE e.model = %2$L AND $13 IS NOT NULL
                  AND c.version_id IN (SELECT version_id FROM versions)
                  AND ($4 OR NOT c.repealed) AND NOT (c.article_id = ANY ($15)) AND NOT (c.chunk_id = ANY ($16))
                ORDER BY e.embedding::%3$s <#> $13::%3$s
                LIMIT $5
            ) s
            WHERE s.sparse_score > 0  -- sharing no feature with the question is no match
        ),
        -- Normalisers of the convex combination: each arm's scores min-max over its own candidates,
        -- so that each arm spans [0, weight] from its last candidate to its best. (Until the sparse arm
        -- came, BM25 was divided by its best only: its last candidates kept a third of its weight or
        -- more, which mixed the arms differently from what the weights say; docs/retrieval.md.)
        norm AS (
            SELECT (SELECT min(similarity) FROM vec) AS vmin, (SELECT max(similarity) FROM vec) AS vmax,
                   (SELECT max(text_score) FROM txt) AS tmax, (SELECT min(text_score) FROM txt) AS tmin,
                   (SELECT min(sparse_score) FROM spa) AS smin, (SELECT max(sparse_score) FROM spa) AS smax
        ),
        fused AS (
            SELECT coalesce(v.chunk_id, t.chunk_id, s.chunk_id) AS chunk_id, v.similarity, t.text_score,
                   v.rnk AS vector_rank, t.rnk AS text_rank, s.sparse_score, s.rnk AS sparse_rank,
                   CASE WHEN $12 = 'rrf'
                        THEN coalesce($8 / ($7 + v.rnk), 0) + coalesce($9 / ($7 + t.rnk), 0)
                             + coalesce($14 / ($7 + s.rnk), 0)
                        -- an arm whose candidates all score alike (one candidate, say) gives each its weight
                        ELSE CASE WHEN v.chunk_id IS NULL THEN 0
                                  ELSE $8 * coalesce((v.similarity - n.vmin) / nullif(n.vmax - n.vmin, 0), 1) END
                             + CASE WHEN t.chunk_id IS NULL THEN 0
                                    ELSE $9 * coalesce((t.text_score - n.tmin) / nullif(n.tmax - n.tmin, 0), 1) END
                             + CASE WHEN s.chunk_id IS NULL THEN 0
                                    ELSE $14 * coalesce((s.sparse_score - n.smin) / nullif(n.smax - n.smin, 0), 1) END
                   END AS score
            FROM vec v
            FULL JOIN txt t ON t.chunk_id = v.chunk_id
            FULL JOIN spa s ON s.chunk_id = coalesce(v.chunk_id, t.chunk_id)
            CROSS JOIN norm n
        ),
        best AS (  -- one hit per article: its best-scoring part
            SELECT DISTINCT ON (c.version_id, c.article)
                   f.*, c.version_id, c.article, c.part, c.text, c.article_id, c.repealed, c.rebuilt_id
            FROM fused f JOIN chunks c ON c.chunk_id = f.chunk_id
            ORDER BY c.version_id, c.article, f.score DESC, f.chunk_id
        )
        SELECT b.chunk_id, v.eli, a.title, b.article, b.part, b.text,
               b.similarity, b.text_score, b.score, b.vector_rank, b.text_rank,
               (SELECT max(vec.similarity) FROM vec), b.sparse_score, b.sparse_rank,
               v.base_eli, v.version_no, v.valid_from,
               CASE WHEN b.repealed THEN false
                    ELSE in_force_on(t.in_force_from, t.in_force_until, coalesce($3, legal_today())) END,
               t.in_force_from, t.in_force_until, r.rebuilt_id IS NULL, r.rebuilt_from
        FROM best b
        JOIN act_versions v ON v.version_id = b.version_id
        JOIN acts a ON a.eli = v.eli
        LEFT JOIN article_times t ON t.article_id = b.article_id
        LEFT JOIN rebuilt_articles r ON r.rebuilt_id = b.rebuilt_id
        ORDER BY b.score DESC, b.chunk_id
        LIMIT $10
    $q$, vec_cast, model, sp_cast)
    USING query_embedding, acts, as_of, include_repealed, n_fetch, mode,
          rrf_k::double precision, vector_weight, text_weight, k, terms, fusion, sp_query, sparse_weight, excluded,
          hidden;
END
$fn$;

-- By name alone: the argument list is written once, above (the old overload is dropped first).
COMMENT ON FUNCTION search_chunks IS
    'Hybrid (RRF or convex) search over current or as-of article chunks; see docs/sql.md.';

-- Definer-rights functions read the tables for their caller: only the owner and the roles given them
-- (pipeline db grant-reader) may call them, not every role that can connect, which is PostgreSQL's
-- default for a new function.
REVOKE EXECUTE ON FUNCTION search_chunks, text_search_exact(text, integer), sparse_query(text, sparsevec) FROM PUBLIC;
DO $$
DECLARE
    r name;
BEGIN
    FOR r IN SELECT role FROM search_chunks_grantees LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION search_chunks TO %I', r);
    END LOOP;
END
$$;
