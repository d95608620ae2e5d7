"""Schema for the whole product: acts, versions, article chunks, embeddings, queue, runs.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""
from alembic import op

from pipeline.core.resources import frozen_sql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# The SQL files as they shipped with this revision (migrations/frozen/0001), pinned by hash.
POLISH_FTS_SHA256 = "4e7f00e7f0be6835e54030a72dbdbdfe2c240f8841ba8031cf70818723e7cfd0"
VIEWS_SHA256 = "58ab7f4b43ef7fd375fb2c61346150f5c5c7b9266196088467bb2bd49e0e356c"

TABLES = r"""
CREATE EXTENSION IF NOT EXISTS vector;

-- One row per ELI publication (a base act, or a consolidated text of one).
CREATE TABLE acts (
    eli               text PRIMARY KEY CHECK (eli ~ '^(DU|MP)/[0-9]{4}/[0-9]+$'),
    publisher         text NOT NULL,
    year              integer NOT NULL,
    pos               integer NOT NULL,
    title             text,
    act_type          text,
    status            text,
    in_force          text,
    -- The act this text belongs to: for a consolidated text ("Tekst jednolity dla aktu") the
    -- base act's ELI, otherwise the act itself. Versions are grouped by it.
    base_eli          text NOT NULL,
    announcement_date date,
    promulgation_date date,
    legal_status_date date,
    entry_into_force  date,
    expiration_date   date,
    meta              jsonb NOT NULL,
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX acts_base_eli_idx ON acts (base_eli);

-- One row per distinct text of an act. A version is inserted together with all its chunks in one
-- transaction, so a version that exists is complete.
CREATE TABLE act_versions (
    version_id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    eli            text NOT NULL REFERENCES acts (eli) ON DELETE CASCADE,
    version_no     integer NOT NULL,
    base_eli       text NOT NULL,
    source_format  text NOT NULL CHECK (source_format IN ('pdf', 'html')),
    source_sha256  text NOT NULL,   -- raw bytes as downloaded
    text_sha256    text NOT NULL,   -- parsed articles: same text => same hash, whatever the bytes
    -- The date from which this text states the law (legal status date of a consolidated text,
    -- else entry into force / announcement). "as of D" picks the newest version with valid_from <= D.
    valid_from     date,
    article_count  integer NOT NULL,
    chunk_count    integer NOT NULL,
    changes        jsonb NOT NULL DEFAULT '{}'::jsonb,  -- {"added": [...], "changed": [...], "removed": [...]}
    ingested_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (eli, version_no)
);
CREATE INDEX act_versions_base_idx ON act_versions (base_eli, valid_from DESC, version_id DESC);

-- Articles of a version, whole, in the act's order.
CREATE TABLE articles (
    article_id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    version_id     bigint NOT NULL REFERENCES act_versions (version_id) ON DELETE CASCADE,
    ordinal        integer NOT NULL,            -- position in the act, from 1
    article        text NOT NULL,               -- canonical number: 151^1, 22^1c, 19a
    heading_path   text[] NOT NULL DEFAULT '{}',-- enclosing Dział / Rozdział titles, outermost first
    repealed       boolean NOT NULL DEFAULT false,
    text           text NOT NULL,
    text_sha256    text NOT NULL,
    UNIQUE (version_id, ordinal)
);
CREATE INDEX articles_number_idx ON articles (version_id, article);

-- What is searched and embedded: one article, or one overlapping part of a long article.
CREATE TABLE chunks (
    chunk_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    article_id     bigint NOT NULL REFERENCES articles (article_id) ON DELETE CASCADE,
    version_id     bigint NOT NULL REFERENCES act_versions (version_id) ON DELETE CASCADE,
    article        text NOT NULL,               -- same as articles.article, kept for direct SQL
    part           integer NOT NULL DEFAULT 1,  -- 1..part_count for split articles
    part_count     integer NOT NULL DEFAULT 1,
    repealed       boolean NOT NULL DEFAULT false,
    text           text NOT NULL,
    embed_text     text NOT NULL,               -- short context header + text: what gets embedded
    content_sha256 text NOT NULL,               -- sha256 of embed_text: the embedding key
    tsv            tsvector GENERATED ALWAYS AS (to_tsvector('polish'::regconfig, embed_text)) STORED,
    UNIQUE (article_id, part)
);
CREATE INDEX chunks_version_idx ON chunks (version_id, article);
CREATE INDEX chunks_content_idx ON chunks (content_sha256);
CREATE INDEX chunks_tsv_idx ON chunks USING gin (tsv);
-- Keep the tsvector in the row (not TOAST): the BM25 arm reads it for every candidate.
ALTER TABLE chunks ALTER COLUMN tsv SET STORAGE MAIN;

-- Embedding models in use; each gets its own partial HNSW index on embeddings (created by the app).
CREATE TABLE embedding_models (
    model       text PRIMARY KEY,
    dimensions  integer NOT NULL CHECK (dimensions > 0),
    backend     text NOT NULL,
    index_type  text NOT NULL DEFAULT 'vector' CHECK (index_type IN ('vector', 'halfvec')),
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Vectors keyed by (text hash, model): the same text is embedded once per model, ever.
CREATE TABLE embeddings (
    content_sha256 text NOT NULL,
    model          text NOT NULL REFERENCES embedding_models (model) ON DELETE CASCADE,
    embedding      vector NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (content_sha256, model)
);

-- Work queue drained by `pipeline embed` workers (FOR UPDATE SKIP LOCKED).
CREATE TABLE embedding_queue (
    content_sha256 text NOT NULL,
    model          text NOT NULL,
    enqueued_at    timestamptz NOT NULL DEFAULT now(),
    attempts       integer NOT NULL DEFAULT 0,
    last_error     text,
    PRIMARY KEY (content_sha256, model)
);

-- What ran, when, with what result.
CREATE TABLE ingest_runs (
    run_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    eli          text,
    source       text,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    status       text NOT NULL DEFAULT 'running'
                 CHECK (status IN ('running', 'new', 'unchanged', 'failed')),
    version_id   bigint REFERENCES act_versions (version_id) ON DELETE SET NULL,
    message      text,
    stats        jsonb NOT NULL DEFAULT '{}'::jsonb,
    host         text,
    pid          integer
);
CREATE INDEX ingest_runs_eli_idx ON ingest_runs (eli, started_at DESC);
"""

DROP = """
DROP VIEW IF EXISTS embedding_status, current_chunks, current_articles, current_versions CASCADE;
DROP FUNCTION IF EXISTS versions_as_of(date) CASCADE;
DROP TABLE IF EXISTS ingest_runs, embedding_queue, embeddings, embedding_models, chunks, articles, act_versions, acts CASCADE;
"""


def upgrade() -> None:
    op.execute(frozen_sql("0001", "polish_fts.sql", POLISH_FTS_SHA256))
    op.execute(TABLES)
    op.execute(frozen_sql("0001", "views.sql", VIEWS_SHA256))


def downgrade() -> None:
    op.execute(DROP)
    op.execute("DROP FUNCTION IF EXISTS polish_or_query(text)")
    op.execute("DROP TEXT SEARCH CONFIGURATION IF EXISTS polish")
    op.execute("DROP TEXT SEARCH DICTIONARY IF EXISTS polish_ispell")
    op.execute("DROP TEXT SEARCH DICTIONARY IF EXISTS polish_stop")
    # The `vector` extension stays: dropping it would take any user table with a vector column along.
