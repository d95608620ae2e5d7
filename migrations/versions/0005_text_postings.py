"""BM25 statistics kept by triggers on chunks, and impact-ordered postings for the text arm.

Until 0004 every ingest recomputed `lexeme_stats`/`corpus_stats` (materialized views over ts_stat of
ALL chunks), so an ingest cost grew with the database; and the text arm scored every chunk matching
any query lexeme, so a search did too. Here the statistics become tables that statement-level
triggers on `chunks` update with the rows a statement wrote or removed (transition tables: COPY,
INSERT, DELETE (cascades from act_versions included), UPDATE and TRUNCATE all keep them right), and
each chunk's lexemes go into `postings` ordered per lexeme by impact, so the text arm can read the
best postings of each query lexeme from an index instead of scanning (sql/search.sql).

Existing rows are back-filled here; `lexeme_stats` and `corpus_stats` keep their names and columns
as views over the new tables (sql/search.sql), and `refresh_search_stats()` becomes a from-scratch
rebuild used only for repair.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

UPGRADE = r"""
-- The materialized views (and their refresh) are replaced by tables; search_chunks() is replaced by
-- the interface step that follows the revisions (it only named them in its body).
DROP FUNCTION IF EXISTS refresh_search_stats();
DROP MATERIALIZED VIEW IF EXISTS corpus_stats, lexeme_stats;

-- Okapi BM25 with k1 = 1.2, b = 0.75, written once. It lives in the schema, not in sql/, because
-- postings store bm25_tf() as their impact: a change of formula is a revision that replaces these
-- functions and then calls refresh_search_stats() to rewrite the impacts.
-- bm25_tf: a lexeme's weight in one chunk before idf; doc_len is length(tsv) (distinct lexemes).
CREATE FUNCTION bm25_tf(tf integer, doc_len integer, avg_length double precision) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * doc_len / avg_length));

CREATE FUNCTION bm25_idf(ndoc integer, chunks double precision) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ln(1 + (chunks - ndoc + 0.5) / (ndoc + 0.5));

-- Every lexeme of the chunks' tsvectors and in how many chunks it occurs (BM25's document
-- frequency); a lexeme whose count falls to 0 is deleted, so this equals ts_stat() over chunks.
CREATE TABLE lexicon (
    lexeme_id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    lexeme    text NOT NULL UNIQUE,
    ndoc      integer NOT NULL CHECK (ndoc >= 0)  -- 0 only between a removal's two statements
);

-- One row: how many chunks, and the sum of their length(tsv) (BM25's average length). Every writer
-- of the statistics updates this row first, so writers queue here, in one order (see search_stats_add).
CREATE TABLE corpus_totals (
    id           integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    chunks       bigint NOT NULL,
    total_length bigint NOT NULL
);
INSERT INTO corpus_totals (chunks, total_length) VALUES (0, 0);

-- One row per lexeme of each chunk. impact = bm25_tf() with the average length when the row was
-- written: the order in which the text arm reads a lexeme's postings (scores are computed afresh
-- from the chunk's tsvector with the current statistics). No foreign keys: the triggers below keep
-- it in step with chunks, set-wise, where a key would cost an index probe per posting.
CREATE TABLE postings (
    chunk_id  bigint  NOT NULL,
    lexeme_id integer NOT NULL,
    impact    real    NOT NULL
);

-- Add the chunks `ids` (already in chunks) to the statistics and postings.
CREATE FUNCTION search_stats_add(ids bigint[]) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    avg_length double precision;
BEGIN
    IF coalesce(cardinality(ids), 0) = 0 THEN
        RETURN;
    END IF;
    -- First the totals row: it is the one lock every writer of the statistics takes first, so
    -- concurrent ingests queue here until the first commits (they would wait on the rows of common
    -- lexemes anyway) and can never deadlock on lexicon rows taken in different orders.
    UPDATE corpus_totals t SET chunks = t.chunks + d.n, total_length = t.total_length + d.len
    FROM (SELECT count(*) AS n, coalesce(sum(length(c.tsv)), 0) AS len
          FROM chunks c WHERE c.chunk_id = ANY (ids)) d
    RETURNING t.total_length::double precision / nullif(t.chunks, 0) INTO avg_length;

    WITH w AS MATERIALIZED (  -- one row per (chunk, lexeme): unnested once
        SELECT c.chunk_id, length(c.tsv) AS doc_len, t.lexeme, cardinality(t.positions) AS tf
        FROM chunks c CROSS JOIN LATERAL unnest(c.tsv) t
        WHERE c.chunk_id = ANY (ids)
    ),
    counts AS MATERIALIZED (SELECT lexeme, count(*)::integer AS n FROM w GROUP BY lexeme),
    known AS (
        UPDATE lexicon l SET ndoc = l.ndoc + counts.n FROM counts WHERE l.lexeme = counts.lexeme
        RETURNING l.lexeme, l.lexeme_id
    ),
    added AS (  -- the statement's snapshot: lexemes not in the lexicon before it
        INSERT INTO lexicon (lexeme, ndoc)
        SELECT counts.lexeme, counts.n FROM counts
        WHERE NOT EXISTS (SELECT 1 FROM lexicon l WHERE l.lexeme = counts.lexeme)
        ORDER BY counts.lexeme  -- ids in lexeme order: the same corpus gets the same ids
        RETURNING lexeme, lexeme_id
    )
    INSERT INTO postings (chunk_id, lexeme_id, impact)
    SELECT w.chunk_id, i.lexeme_id, bm25_tf(w.tf, w.doc_len, avg_length)
    FROM w JOIN (SELECT * FROM known UNION ALL SELECT * FROM added) i USING (lexeme);
END
$fn$;

-- Remove the chunks `ids` (gone from chunks, or about to change) from the statistics and postings.
-- Their postings say which lexemes they held, and how long they were (one posting per lexeme).
CREATE FUNCTION search_stats_remove(ids bigint[]) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    removed bigint;
    emptied integer[];
BEGIN
    IF coalesce(cardinality(ids), 0) = 0 THEN
        RETURN;
    END IF;
    PERFORM 1 FROM corpus_totals FOR UPDATE;  -- the writers' lock, first (see search_stats_add)
    WITH gone AS (
        DELETE FROM postings p WHERE p.chunk_id = ANY (ids) RETURNING p.lexeme_id
    ),
    counts AS (SELECT lexeme_id, count(*)::integer AS n FROM gone GROUP BY lexeme_id),
    lowered AS (
        UPDATE lexicon l SET ndoc = l.ndoc - counts.n FROM counts WHERE l.lexeme_id = counts.lexeme_id
        RETURNING l.lexeme_id, l.ndoc, counts.n
    )
    SELECT coalesce(sum(n), 0), array_agg(lexeme_id) FILTER (WHERE ndoc = 0) INTO removed, emptied
    FROM lowered;
    DELETE FROM lexicon WHERE lexeme_id = ANY (emptied);
    UPDATE corpus_totals SET chunks = chunks - cardinality(ids), total_length = total_length - removed;
END
$fn$;
"""

TRIGGERS = r"""
-- One trigger function for the four statement-level triggers: transition tables carry the rows a
-- statement (COPY included) wrote or removed; an UPDATE counts only where the tsvector changed.
CREATE FUNCTION chunks_search_stats() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM search_stats_add(ARRAY(SELECT chunk_id FROM new_chunks));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM search_stats_remove(ARRAY(SELECT chunk_id FROM old_chunks));
    ELSIF TG_OP = 'UPDATE' THEN
        DECLARE
            changed bigint[] := ARRAY(SELECT n.chunk_id FROM new_chunks n JOIN old_chunks o USING (chunk_id)
                                      WHERE n.tsv IS DISTINCT FROM o.tsv);
        BEGIN
            PERFORM search_stats_remove(changed);
            PERFORM search_stats_add(changed);
        END;
    ELSE  -- TRUNCATE
        TRUNCATE postings, lexicon;
        UPDATE corpus_totals SET chunks = 0, total_length = 0;
    END IF;
    RETURN NULL;
END
$fn$;

CREATE TRIGGER chunks_search_stats_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_chunks FOR EACH STATEMENT EXECUTE FUNCTION chunks_search_stats();
CREATE TRIGGER chunks_search_stats_delete AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS old_chunks FOR EACH STATEMENT EXECUTE FUNCTION chunks_search_stats();
CREATE TRIGGER chunks_search_stats_update AFTER UPDATE ON chunks
    REFERENCING OLD TABLE AS old_chunks NEW TABLE AS new_chunks FOR EACH STATEMENT
    EXECUTE FUNCTION chunks_search_stats();
CREATE TRIGGER chunks_search_stats_truncate AFTER TRUNCATE ON chunks
    FOR EACH STATEMENT EXECUTE FUNCTION chunks_search_stats();

-- The functions above run with the writer's search_path; pin it to this schema.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION search_stats_add(bigint[]) SET search_path = %I, pg_catalog, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION search_stats_remove(bigint[]) SET search_path = %I, pg_catalog, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION chunks_search_stats() SET search_path = %I, pg_catalog, pg_temp', current_schema());
END
$$;

COMMENT ON TABLE lexicon IS 'Every lexeme of the chunks and in how many it occurs; kept by triggers on chunks.';
COMMENT ON TABLE corpus_totals IS 'Chunk count and total tsvector length; kept by triggers on chunks.';
COMMENT ON TABLE postings IS 'Per lexeme, its chunks ordered by BM25 impact: what the text arm reads.';
COMMENT ON FUNCTION bm25_tf(integer, integer, double precision) IS
    'Okapi BM25 (k1 1.2, b 0.75): weight of a lexeme in a chunk before idf (tf, length(tsv), average length).';
COMMENT ON FUNCTION bm25_idf(integer, double precision) IS
    'Okapi BM25: idf of a lexeme in ndoc of all chunks.';
"""

# Built after the back-fill (one sort instead of a row at a time). The text arm reads a lexeme's
# best postings from the first, index-only; deletes find a chunk's postings with the second (its
# ~70 equal keys per chunk deduplicate).
INDEXES = r"""
CREATE INDEX postings_impact_idx ON postings (lexeme_id, impact DESC, chunk_id);
CREATE INDEX postings_chunk_idx ON postings (chunk_id);
ANALYZE lexicon;
ANALYZE postings;
"""

DOWNGRADE = r"""
DROP TRIGGER IF EXISTS chunks_search_stats_insert ON chunks;
DROP TRIGGER IF EXISTS chunks_search_stats_delete ON chunks;
DROP TRIGGER IF EXISTS chunks_search_stats_update ON chunks;
DROP TRIGGER IF EXISTS chunks_search_stats_truncate ON chunks;
DROP FUNCTION IF EXISTS chunks_search_stats(), search_stats_add(bigint[]), search_stats_remove(bigint[]);
-- The interface's objects over these tables (sql/search.sql at this revision).
DROP VIEW IF EXISTS lexeme_stats, corpus_stats;
DROP FUNCTION IF EXISTS refresh_search_stats(), text_search_exact(text, integer),
    search_text_arm(text[], text[], date, boolean, integer), selected_versions(text[], date);
DROP FUNCTION IF EXISTS bm25_scores(bigint[], text[], double precision[], double precision),
    bm25_tf(integer, integer, double precision), bm25_idf(integer, double precision);
DROP TABLE IF EXISTS postings, lexicon, corpus_totals;

-- 0004's statistics, as revision 0002 created them (migrations/frozen/0002/search.sql).
DO $$
BEGIN
    EXECUTE format('CREATE MATERIALIZED VIEW lexeme_stats AS SELECT word AS lexeme, ndoc FROM ts_stat(%L)',
                   format('SELECT tsv FROM %I.chunks', current_schema()));
END
$$;
CREATE UNIQUE INDEX lexeme_stats_lexeme_idx ON lexeme_stats (lexeme);
CREATE MATERIALIZED VIEW corpus_stats AS
    SELECT 1 AS id, count(*)::float8 AS chunks, coalesce(avg(length(tsv)), 1)::float8 AS avg_length FROM chunks;
CREATE UNIQUE INDEX corpus_stats_id_idx ON corpus_stats (id);
COMMENT ON MATERIALIZED VIEW lexeme_stats IS 'In how many chunks each lexeme occurs (BM25 idf).';
CREATE FUNCTION refresh_search_stats() RETURNS void
LANGUAGE sql AS $$
    REFRESH MATERIALIZED VIEW CONCURRENTLY lexeme_stats;
    REFRESH MATERIALIZED VIEW CONCURRENTLY corpus_stats;
$$;
-- The applied interface (search_chunks() included) is this revision's: forget it, so that whichever
-- code runs next re-applies its own.
DELETE FROM sql_interface;
"""


def upgrade() -> None:
    op.execute(UPGRADE)
    # Existing chunks, in one statement (the triggers do not exist yet).
    op.execute("SELECT search_stats_add(ARRAY(SELECT chunk_id FROM chunks))")
    op.execute(INDEXES)
    op.execute(TRIGGERS)


def downgrade() -> None:
    op.execute(DOWNGRADE)
