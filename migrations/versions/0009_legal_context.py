"""The legal context of each article: the provisions it refers to and the act's definitions.

Read from the texts at ingest (pipeline.sources.references and .definitions), one row per reference
target (a range "art. 135–138" is four) and per definition, for every stored version. The public
face is the views `article_references` and `definitions` (sql/context.sql); what each target resolves
to (a stored text of the cited act) is worked out there, when read, so a text stored later resolves
the references that cite it without rewriting them.

`context_extractions` records which extractor read each version: a version read by an older one (or
stored before this revision) is read again by `pipeline db upgrade` and on the first command after
an upgrade (pipeline.storage.context.backfill).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03
"""
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE version_references (
    version_id     bigint NOT NULL REFERENCES act_versions (version_id) ON DELETE CASCADE,
    article        text NOT NULL,               -- where the reference is
    ordinal        integer NOT NULL,            -- its order in the text
    kind           text NOT NULL CHECK (kind IN ('internal', 'relative', 'external')),
    target_act     text,                        -- internal/relative: the base act; external: the base act or the text cited
    target_article text,                        -- NULL: the whole act is cited
    target_unit    text NOT NULL DEFAULT '',    -- '§ 1 pkt 2', 'ust. 3', '' (the whole article)
    words          text NOT NULL,               -- the reference as printed
    target_title   text,                        -- external by title: 'ustawy z dnia 15 kwietnia 2011 r. o działalności leczniczej'
    target_name    text,                        -- its name without the date: 'o działalności leczniczej'
    target_year    integer,
    PRIMARY KEY (version_id, ordinal)
);
CREATE INDEX version_references_target ON version_references (target_act, target_article);
CREATE INDEX version_references_article ON version_references (version_id, article);

CREATE TABLE version_definitions (
    version_id bigint NOT NULL REFERENCES act_versions (version_id) ON DELETE CASCADE,
    ordinal    integer NOT NULL,
    article    text NOT NULL,
    unit       text NOT NULL DEFAULT '',        -- 'ust. 1 pkt 4', '§ 2', ''
    term       text NOT NULL,                   -- as printed ('pacjent', 'lekarzu', 'pracownikiem')
    definition text NOT NULL,                   -- the point or sentence that defines it
    formula    text NOT NULL CHECK (formula IN ('list', 'whenever', 'sentence')),
    PRIMARY KEY (version_id, ordinal)
);

CREATE TABLE context_extractions (
    version_id   bigint PRIMARY KEY REFERENCES act_versions (version_id) ON DELETE CASCADE,
    extractor    text NOT NULL,                 -- pipeline.storage.context.EXTRACTOR when it was read
    extracted_at timestamptz NOT NULL DEFAULT now()
);
"""

DOWNGRADE = r"""
DROP VIEW IF EXISTS article_references, definitions;
DROP TABLE context_extractions, version_definitions, version_references;
-- The applied interface (its views read these tables) is this revision's: forget it, so that whichever
-- code runs next re-applies its own.
DELETE FROM sql_interface;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
