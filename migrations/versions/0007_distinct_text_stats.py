"""BM25 statistics count each distinct text once: a new version's unchanged articles do not count again.

Until now the statistics counted every chunk row. A new consolidated text of an act is a new version
whose chunks are mostly the old ones, word for word (the context header leaves out the announcement
date so that they keep their content hash); old versions stay stored for `--as-of`. So every stored
version of an act counted its vocabulary once more: the act's words looked more common (lower idf)
and the average length drifted, with no change in the law searched. On the evaluation mirror a
second version of three acts moved the report half's text-arm R@10 from 0.48 to 0.41
(docs/retrieval.md).

Now a lexeme's `ndoc` counts the distinct chunk texts (content hashes) that hold it, and
`corpus_totals` the distinct texts and their length: a chunk whose hash is already stored adds
postings (the text arm must find it in its own version) but no counts; a text leaves the counts when
its last chunk goes. The length of a lexeme's postings list, which the text arm needs to know how
much of it to read, is no longer `ndoc`: it gets its own column, `lexicon.npostings`. Statistics over distinct texts need no dates, so the triggers keep them exact;
"current versions only" would change with the calendar.

The triggers assume that chunks with one content hash have one tsvector (the same text, the same
`polish` configuration). A configuration change that rewrites tsvectors should rewrite all of them
(an UPDATE of every chunk, or `refresh_search_stats()`).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

UPGRADE = r"""
DROP FUNCTION search_stats_add(bigint[]);
DROP FUNCTION search_stats_remove(bigint[]);

-- Until now every chunk counted, so each list was ndoc long; RECOUNT below corrects both where a
-- text is stored twice.
ALTER TABLE lexicon ADD COLUMN npostings integer;
UPDATE lexicon SET npostings = ndoc;
ALTER TABLE lexicon ALTER COLUMN npostings SET NOT NULL,
    ADD CONSTRAINT lexicon_npostings_check CHECK (npostings >= ndoc);
COMMENT ON COLUMN lexicon.npostings IS 'How many chunks hold the lexeme: the length of its postings list.';
COMMENT ON COLUMN lexicon.ndoc IS 'How many distinct chunk texts hold the lexeme: BM25 document frequency.';

-- Add the chunks `ids` (already in chunks) to the postings, and the texts `counted` (one chunk each,
-- among `ids`) to the statistics. counted NULL: the texts new to the corpus, i.e. per content hash
-- of `ids` its first chunk, unless a chunk outside `ids` already holds the hash.
CREATE FUNCTION search_stats_add(ids bigint[], counted bigint[] DEFAULT NULL) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    avg_length double precision;
BEGIN
    IF coalesce(cardinality(ids), 0) = 0 THEN
        RETURN;
    END IF;
    -- First the totals row: it is the one lock every writer of the statistics takes first, so
    -- concurrent ingests queue here until the first commits (they would wait on the rows of common
    -- lexemes anyway) and can never deadlock on lexicon rows taken in different orders. The texts
    -- new to the corpus are looked for after it, in a snapshot that sees what the writer before
    -- committed (READ COMMITTED).
    PERFORM 1 FROM corpus_totals FOR UPDATE;
    IF counted IS NULL THEN
        counted := ARRAY(
            SELECT min(c.chunk_id) FROM chunks c WHERE c.chunk_id = ANY (ids)
            GROUP BY c.content_sha256
            HAVING count(*) = (SELECT count(*) FROM chunks o WHERE o.content_sha256 = c.content_sha256));
    END IF;
    UPDATE corpus_totals t SET chunks = t.chunks + d.n, total_length = t.total_length + d.len
    FROM (SELECT count(*) AS n, coalesce(sum(length(c.tsv)), 0) AS len
          FROM chunks c WHERE c.chunk_id = ANY (counted)) d
    RETURNING t.total_length::double precision / nullif(t.chunks, 0) INTO avg_length;

    WITH w AS MATERIALIZED (  -- one row per (chunk, lexeme): unnested once
        SELECT c.chunk_id, length(c.tsv) AS doc_len, t.lexeme, cardinality(t.positions) AS tf,
               k.id IS NOT NULL AS is_counted
        FROM chunks c LEFT JOIN unnest(counted) AS k(id) ON k.id = c.chunk_id
        CROSS JOIN LATERAL unnest(c.tsv) t
        WHERE c.chunk_id = ANY (ids)
    ),
    counts AS MATERIALIZED (
        SELECT lexeme, (count(*) FILTER (WHERE is_counted))::integer AS n, count(*)::integer AS n_all
        FROM w GROUP BY lexeme
    ),
    known AS (
        UPDATE lexicon l SET ndoc = l.ndoc + counts.n, npostings = l.npostings + counts.n_all
        FROM counts WHERE l.lexeme = counts.lexeme
        RETURNING l.lexeme, l.lexeme_id
    ),
    added AS (  -- the statement's snapshot: lexemes not in the lexicon before it
        INSERT INTO lexicon (lexeme, ndoc, npostings)
        SELECT counts.lexeme, counts.n, counts.n_all FROM counts
        WHERE NOT EXISTS (SELECT 1 FROM lexicon l WHERE l.lexeme = counts.lexeme)
        ORDER BY counts.lexeme  -- ids in lexeme order: the same corpus gets the same ids
        RETURNING lexeme, lexeme_id
    )
    INSERT INTO postings (chunk_id, lexeme_id, impact)
    SELECT w.chunk_id, i.lexeme_id, bm25_tf(w.tf, w.doc_len, coalesce(avg_length, 1))
    FROM w JOIN (SELECT * FROM known UNION ALL SELECT * FROM added) i USING (lexeme);
END
$fn$;

-- Remove the chunks `ids` (gone from chunks, or about to change) from the postings, and the texts
-- `counted` (one chunk each, among `ids`: those no chunk holds any more) from the statistics. Their
-- postings say which lexemes they held, and how long they were (one posting per lexeme).
CREATE FUNCTION search_stats_remove(ids bigint[], counted bigint[]) RETURNS void
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
        DELETE FROM postings p WHERE p.chunk_id = ANY (ids) RETURNING p.chunk_id, p.lexeme_id
    ),
    counts AS (
        SELECT g.lexeme_id, count(k.id)::integer AS n, count(*)::integer AS n_all
        FROM gone g LEFT JOIN unnest(counted) AS k(id) ON k.id = g.chunk_id GROUP BY g.lexeme_id
    ),
    lowered AS (
        UPDATE lexicon l SET ndoc = l.ndoc - counts.n, npostings = l.npostings - counts.n_all
        FROM counts WHERE l.lexeme_id = counts.lexeme_id
        RETURNING l.lexeme_id, l.npostings, counts.n
    )
    SELECT coalesce(sum(n), 0), array_agg(lexeme_id) FILTER (WHERE npostings = 0) INTO removed, emptied
    FROM lowered;
    DELETE FROM lexicon WHERE lexeme_id = ANY (emptied);  -- a lexeme leaves with its last posting
    UPDATE corpus_totals SET chunks = chunks - coalesce(cardinality(counted), 0), total_length = total_length - removed;
END
$fn$;

-- The trigger function: transition tables carry the rows a statement (COPY included) wrote or
-- removed. The writers' lock comes first, so that which texts are new or gone is decided in a
-- snapshot taken after the writer before this one committed.
CREATE OR REPLACE FUNCTION chunks_search_stats() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM 1 FROM corpus_totals FOR UPDATE;
    IF TG_OP = 'INSERT' THEN
        PERFORM search_stats_add(ARRAY(SELECT chunk_id FROM new_chunks));
    ELSIF TG_OP = 'DELETE' THEN
        -- A text leaves the statistics with its last chunk.
        PERFORM search_stats_remove(
            ARRAY(SELECT chunk_id FROM old_chunks),
            ARRAY(SELECT min(o.chunk_id) FROM old_chunks o GROUP BY o.content_sha256
                  HAVING NOT EXISTS (SELECT 1 FROM chunks c WHERE c.content_sha256 = o.content_sha256)));
    ELSIF TG_OP = 'UPDATE' THEN
        -- Where the tsvector changed: each text's old lexemes out of the counts, its new ones in, once.
        DECLARE
            changed bigint[] := ARRAY(SELECT n.chunk_id FROM new_chunks n JOIN old_chunks o USING (chunk_id)
                                      WHERE n.tsv IS DISTINCT FROM o.tsv);
            one_each bigint[] := ARRAY(SELECT min(n.chunk_id) FROM new_chunks n JOIN old_chunks o USING (chunk_id)
                                       WHERE n.tsv IS DISTINCT FROM o.tsv GROUP BY n.content_sha256);
        BEGIN
            PERFORM search_stats_remove(changed, one_each);
            PERFORM search_stats_add(changed, one_each);
        END;
    ELSE  -- TRUNCATE
        TRUNCATE postings, lexicon;
        UPDATE corpus_totals SET chunks = 0, total_length = 0;
    END IF;
    RETURN NULL;
END
$fn$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION search_stats_add(bigint[], bigint[]) SET search_path = %I, pg_catalog, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION search_stats_remove(bigint[], bigint[]) SET search_path = %I, pg_catalog, pg_temp', current_schema());
END
$$;

COMMENT ON TABLE lexicon IS
    'Every lexeme of the chunks and in how many distinct chunk texts it occurs; kept by triggers on chunks.';
COMMENT ON TABLE corpus_totals IS
    'Distinct chunk texts (content hashes) and their total tsvector length; kept by triggers on chunks.';
COMMENT ON FUNCTION bm25_idf(integer, double precision) IS
    'Okapi BM25: idf of a lexeme in ndoc of all distinct chunk texts.';
"""

# The counts, recomputed from the postings of one chunk per text; the postings themselves (and their
# impacts) stay. Only where a text is stored twice: otherwise nothing changes, and a large database
# is not rewritten for nothing.
RECOUNT = r"""
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM chunks GROUP BY content_sha256 HAVING count(*) > 1) THEN
        LOCK TABLE chunks IN SHARE MODE;
        CREATE TEMP TABLE counted_chunks ON COMMIT DROP AS
            SELECT min(chunk_id) AS chunk_id FROM chunks GROUP BY content_sha256;
        UPDATE lexicon l SET ndoc = x.ndoc, npostings = x.npostings
        FROM (SELECT p.lexeme_id, count(k.chunk_id)::integer AS ndoc, count(*)::integer AS npostings
              FROM postings p LEFT JOIN counted_chunks k USING (chunk_id) GROUP BY p.lexeme_id) x
        WHERE l.lexeme_id = x.lexeme_id AND (l.ndoc, l.npostings) <> (x.ndoc, x.npostings);
        UPDATE corpus_totals SET chunks = d.n, total_length = d.len
        FROM (SELECT count(*) AS n, coalesce(sum(length(c.tsv)), 0) AS len
              FROM chunks c JOIN counted_chunks k USING (chunk_id)) d;
        DROP TABLE counted_chunks;
    END IF;
END
$$;
"""

DOWNGRADE = r"""
DROP FUNCTION search_stats_add(bigint[], bigint[]);
DROP FUNCTION search_stats_remove(bigint[], bigint[]);

-- 0005's functions: every chunk counts.
CREATE FUNCTION search_stats_add(ids bigint[]) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    avg_length double precision;
BEGIN
    IF coalesce(cardinality(ids), 0) = 0 THEN
        RETURN;
    END IF;
    UPDATE corpus_totals t SET chunks = t.chunks + d.n, total_length = t.total_length + d.len
    FROM (SELECT count(*) AS n, coalesce(sum(length(c.tsv)), 0) AS len
          FROM chunks c WHERE c.chunk_id = ANY (ids)) d
    RETURNING t.total_length::double precision / nullif(t.chunks, 0) INTO avg_length;

    WITH w AS MATERIALIZED (
        SELECT c.chunk_id, length(c.tsv) AS doc_len, t.lexeme, cardinality(t.positions) AS tf
        FROM chunks c CROSS JOIN LATERAL unnest(c.tsv) t
        WHERE c.chunk_id = ANY (ids)
    ),
    counts AS MATERIALIZED (SELECT lexeme, count(*)::integer AS n FROM w GROUP BY lexeme),
    known AS (
        UPDATE lexicon l SET ndoc = l.ndoc + counts.n FROM counts WHERE l.lexeme = counts.lexeme
        RETURNING l.lexeme, l.lexeme_id
    ),
    added AS (
        INSERT INTO lexicon (lexeme, ndoc)
        SELECT counts.lexeme, counts.n FROM counts
        WHERE NOT EXISTS (SELECT 1 FROM lexicon l WHERE l.lexeme = counts.lexeme)
        ORDER BY counts.lexeme
        RETURNING lexeme, lexeme_id
    )
    INSERT INTO postings (chunk_id, lexeme_id, impact)
    SELECT w.chunk_id, i.lexeme_id, bm25_tf(w.tf, w.doc_len, avg_length)
    FROM w JOIN (SELECT * FROM known UNION ALL SELECT * FROM added) i USING (lexeme);
END
$fn$;

CREATE FUNCTION search_stats_remove(ids bigint[]) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    removed bigint;
    emptied integer[];
BEGIN
    IF coalesce(cardinality(ids), 0) = 0 THEN
        RETURN;
    END IF;
    PERFORM 1 FROM corpus_totals FOR UPDATE;
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

CREATE OR REPLACE FUNCTION chunks_search_stats() RETURNS trigger
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
    ELSE
        TRUNCATE postings, lexicon;
        UPDATE corpus_totals SET chunks = 0, total_length = 0;
    END IF;
    RETURN NULL;
END
$fn$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION search_stats_add(bigint[]) SET search_path = %I, pg_catalog, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION search_stats_remove(bigint[]) SET search_path = %I, pg_catalog, pg_temp', current_schema());
END
$$;
COMMENT ON TABLE lexicon IS 'Every lexeme of the chunks and in how many it occurs; kept by triggers on chunks.';
COMMENT ON TABLE corpus_totals IS 'Chunk count and total tsvector length; kept by triggers on chunks.';
COMMENT ON FUNCTION bm25_idf(integer, double precision) IS 'Okapi BM25: idf of a lexeme in ndoc of all chunks.';

-- Every chunk counted again: each list's length.
UPDATE lexicon SET ndoc = npostings WHERE ndoc <> npostings;
ALTER TABLE lexicon DROP COLUMN npostings;
UPDATE corpus_totals SET chunks = d.n, total_length = d.len
FROM (SELECT count(*) AS n, coalesce(sum(length(tsv)), 0) AS len FROM chunks) d;
-- The applied interface (refresh_search_stats() calls these functions) is this revision's: forget
-- it, so that whichever code runs next re-applies its own.
DELETE FROM sql_interface;
"""


def upgrade() -> None:
    op.execute(UPGRADE)
    op.execute(RECOUNT)


def downgrade() -> None:
    op.execute(DOWNGRADE)
