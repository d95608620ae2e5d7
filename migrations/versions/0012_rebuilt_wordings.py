"""Rebuilt wordings as searchable rows: the wording an article has on a period after its stored text, rebuilt
from the stored changes (pipeline.storage.rebuilt), with its chunks among the others.

A rebuilt wording's chunks are rows of ``chunks`` (``rebuilt_id`` set): the search's triggers index them, and
their texts reach the embedding queue and the vectors by content hash like any chunk's. Which wording a search
reads on a day (the official one or a rebuilt one, never both) is the interface's (sql/search.sql).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05
"""
from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE rebuilt_articles (
    rebuilt_id     bigserial PRIMARY KEY,
    article_id     bigint NOT NULL REFERENCES articles (article_id) ON DELETE CASCADE,   -- the official row
    version_id     bigint NOT NULL REFERENCES act_versions (version_id) ON DELETE CASCADE,
    article        text NOT NULL,
    in_force_from  date NOT NULL,  -- the day the changes that make it take effect
    in_force_until date,           -- the next change's day (NULL: none stored)
    text           text NOT NULL,
    rebuilt_from   jsonb NOT NULL, -- the changes applied: [{act, unit, operation, target_unit, in_force_from}]
    UNIQUE (article_id, in_force_from)
);
CREATE INDEX rebuilt_articles_version_idx ON rebuilt_articles (version_id);

-- Per text: which rules rebuilt its wordings (NULL or older: rebuilt again on the next command).
CREATE TABLE rebuilt_extractions (
    version_id bigint PRIMARY KEY REFERENCES act_versions (version_id) ON DELETE CASCADE,
    rebuilder  text NOT NULL,
    rebuilt_at timestamptz NOT NULL DEFAULT now()
);

-- A rebuilt wording's chunks sit beside its article's official ones: (article_id, part) is unique per wording.
ALTER TABLE chunks ADD COLUMN rebuilt_id bigint REFERENCES rebuilt_articles (rebuilt_id) ON DELETE CASCADE;
ALTER TABLE chunks DROP CONSTRAINT chunks_article_id_part_key;
CREATE UNIQUE INDEX chunks_article_id_part_key ON chunks (article_id, part) WHERE rebuilt_id IS NULL;
CREATE UNIQUE INDEX chunks_rebuilt_part_key ON chunks (rebuilt_id, part) WHERE rebuilt_id IS NOT NULL;
"""

DOWNGRADE = r"""
-- The interface reads the column (views, search_chunks): dropped here, re-applied by whichever code runs next.
DROP VIEW IF EXISTS current_chunks CASCADE;
DROP FUNCTION IF EXISTS search_chunks CASCADE;
DELETE FROM chunks WHERE rebuilt_id IS NOT NULL;
DROP INDEX chunks_rebuilt_part_key, chunks_article_id_part_key;
ALTER TABLE chunks ADD CONSTRAINT chunks_article_id_part_key UNIQUE (article_id, part);
ALTER TABLE chunks DROP COLUMN rebuilt_id;
DROP TABLE rebuilt_extractions, rebuilt_articles;
DELETE FROM sql_interface;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
