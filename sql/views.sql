-- Public, documented read interface (docs/sql.md).
-- Idempotent: applied after the migrations whenever its content changes (pipeline/storage/schema.py); what it
-- defines may grow, but a documented column or function never changes meaning.

-- The text of each act in force on a date: per base act, the newest version whose text states the
-- law from on or before that date (NULL = the newest of all). Re-ingests of one text with a
-- different wording break ties by ingest order. A text whose metadata gives no date at all (10 of
-- the mirror's acts) counts from the start of the year it was published in (its ELI id's year): an
-- act of Dz. U. 1997 states no law in force in 1990, but when in 1997 or later it took effect is unknown.
CREATE OR REPLACE FUNCTION versions_as_of(as_of date DEFAULT NULL)
RETURNS SETOF act_versions
-- SECURITY DEFINER: readers granted only the views (pipeline db grant-reader) can still use it.
LANGUAGE sql STABLE PARALLEL SAFE SECURITY DEFINER AS $$
    SELECT DISTINCT ON (v.base_eli) v.*
    FROM act_versions v
    WHERE as_of IS NULL OR v.valid_from <= as_of
       OR (v.valid_from IS NULL
           AND coalesce(make_date(substring(v.eli FROM '/(\d{4})/')::integer, 1, 1) <= as_of, true))
    ORDER BY v.base_eli, v.valid_from DESC NULLS LAST, v.version_id DESC
$$;
COMMENT ON FUNCTION versions_as_of(date) IS
    'Per base act, the version in force on the given date (NULL: the current one); a text whose metadata gives no date counts from the start of its publication year.';
REVOKE EXECUTE ON FUNCTION versions_as_of(date) FROM PUBLIC;  -- definer's rights: readers are granted it

CREATE OR REPLACE VIEW current_versions AS
    SELECT v.*, a.title, a.act_type, a.status
    FROM versions_as_of(NULL) v
    JOIN acts a USING (eli);
COMMENT ON VIEW current_versions IS 'The current text (version) of every act.';

CREATE OR REPLACE VIEW current_articles AS
    SELECT v.eli, v.title AS act_title, ar.article, ar.ordinal, ar.heading_path, ar.repealed, ar.text,
           v.version_id, v.version_no, v.valid_from, v.base_eli,  -- base_eli: added last (a view keeps its columns)
           -- Revision 0010: which wording (two wordings of one article are two rows) and when it is in force.
           ar.wording, t.in_force_from, t.in_force_until, t.undetermined AS in_force_undetermined
    FROM current_versions v
    JOIN articles ar USING (version_id)
    LEFT JOIN article_times t USING (article_id);
COMMENT ON VIEW current_articles IS 'Every article of the current text of every act (ORDER BY eli, ordinal for the act''s order).';
COMMENT ON COLUMN current_articles.ordinal IS 'Position of the article in its act, from 1.';
COMMENT ON COLUMN current_articles.repealed IS 'No text in force: "(uchylony)", "(utracił moc)", or a bare label.';
COMMENT ON COLUMN current_articles.wording IS
    '0: printed once; 1 and 2: the two wordings a consolidated text prints (in force, and after an amendment), each a row.';
COMMENT ON COLUMN current_articles.in_force_from IS
    'The first day the article (this wording) is in force, by the final provisions and footnotes (NULL: undetermined).';
COMMENT ON COLUMN current_articles.in_force_until IS 'The first day it no longer is (NULL: no end the texts give).';
COMMENT ON COLUMN current_articles.in_force_undetermined IS 'Why in_force_from is not determined: the clause, quoted.';

-- Older texts too: joined to versions_as_of(date), the articles in force on a date.
CREATE OR REPLACE VIEW version_articles AS
    SELECT v.version_id, v.eli, v.base_eli, v.version_no, v.valid_from, ar.article, ar.ordinal, ar.heading_path,
           ar.repealed, ar.text,
           ar.wording, t.in_force_from, t.in_force_until, t.undetermined AS in_force_undetermined
    FROM act_versions v
    JOIN articles ar USING (version_id)
    LEFT JOIN article_times t USING (article_id);
COMMENT ON VIEW version_articles IS 'Every article of every stored version, current and older texts (ORDER BY version_id, ordinal for the act''s order).';
COMMENT ON COLUMN version_articles.valid_from IS 'The date from which the version''s text states the law (NULL: its metadata gives none).';

CREATE OR REPLACE VIEW current_chunks AS
    SELECT c.chunk_id, v.eli, v.title AS act_title, c.article, c.part, c.part_count, c.repealed,
           c.text, c.content_sha256, c.version_id, v.version_no, v.valid_from, v.base_eli
    FROM current_versions v
    JOIN chunks c USING (version_id)
    WHERE c.rebuilt_id IS NULL;  -- the official texts' (a wording rebuilt from later changes: search_chunks)
COMMENT ON VIEW current_chunks IS 'Search units (articles or parts of long articles) of the current texts.';

-- What gets embedded: every chunk's text and every piece's (revision 0006), with the chunk it belongs
-- to. The queue, the vector arm of search_chunks() and embedding_status all read it.
CREATE OR REPLACE VIEW embedding_texts AS
    SELECT chunk_id, content_sha256, embed_text FROM chunks
    UNION ALL
    SELECT chunk_id, content_sha256, embed_text FROM chunk_pieces;
COMMENT ON VIEW embedding_texts IS 'Every text that is embedded: chunks and their pieces, with their chunk_id.';

-- Per embedding model: how many distinct texts (of chunks and their pieces) exist, are embedded,
-- are waiting (for either vector: a chunk text also waits for its sparse vector). A model is listed
-- from the moment texts are queued for it (`ingest --no-embed` queues by name); its dimensions and
-- backend are known once a worker has embedded with it (NULL before).
CREATE OR REPLACE VIEW embedding_status AS
    SELECT m.model, r.dimensions, r.backend,
           (SELECT count(DISTINCT content_sha256) FROM embedding_texts) AS texts,
           -- Texts that have the model's vector: a removed act's vectors are kept (a re-ingest embeds
           -- nothing again) but are no stored text's, so `embedded` never exceeds `texts`.
           (SELECT count(*) FROM (SELECT DISTINCT t.content_sha256 FROM embedding_texts t) u
            WHERE EXISTS (SELECT 1 FROM embeddings e WHERE e.content_sha256 = u.content_sha256
                                                     AND e.model = m.model)) AS embedded,
           (SELECT count(*) FROM embedding_queue q WHERE q.model = m.model) AS queued,
           (SELECT count(*) FROM embedding_queue q WHERE q.model = m.model AND q.last_error IS NOT NULL) AS failing,
           -- The model's sparse term vectors, one per chunk text (revision 0008); NULL: none registered
           -- (no sparse head, or no worker with the head has run since the upgrade).
           (SELECT s.vectors FROM sparse_models s WHERE s.model = m.model) AS sparse_embedded
    FROM (SELECT model FROM embedding_models UNION SELECT model FROM embedding_queue) m
    LEFT JOIN embedding_models r USING (model);
COMMENT ON VIEW embedding_status IS
    'Embedding progress per model (texts, embedded, queued, failing; sparse_embedded: its sparse vectors).';
