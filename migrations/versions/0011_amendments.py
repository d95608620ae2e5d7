"""Amending instructions: the changes each stored act makes to other acts, instruction by instruction.

Read at ingest from the amending act's text (pipeline.sources.amendments): the target act as the words
give it (its Dz. U. position, a code's name, its date and title), the target unit, the operation (set the
wording, add, repeal, renumber, replace, delete or insert words, add a sentence; "other" for what the
grammar does not read, kept with its words), the wording inside „…” and the amending unit. Which stored
text each change comes after, and when it takes effect, are worked out when read (the view
amendment_changes in sql/amendments.sql), against what is stored then.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05
"""
from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE amendments (
    version_id        bigint NOT NULL REFERENCES act_versions (version_id) ON DELETE CASCADE,  -- the amending text
    ordinal           integer NOT NULL,
    source_article    text NOT NULL,             -- the amending article
    amending_unit     text NOT NULL DEFAULT '',  -- 'pkt 3 lit. a' in it; '' the article itself
    target_as_written text NOT NULL,             -- 'ustawie z dnia … (Dz. U. …)'
    target_act        text,                      -- the ELI id the words give (first Dz. U. position, a code's base act)
    target_name       text,                      -- its title as printed ('o ochronie danych osobowych')
    target_date       date,                      -- its date as printed ('z dnia 10 maja 2018 r.')
    target_article    text,                      -- NULL: the whole act ('Traci moc ustawa …')
    target_unit       text NOT NULL DEFAULT '',  -- 'ust. 2 pkt 3'; '' the whole article
    operation         text NOT NULL CHECK (operation IN ('set_wording', 'add', 'repeal', 'renumber', 'replace_words',
                                                         'delete_words', 'insert_words', 'add_sentence', 'other')),
    after_unit        text,                      -- add: the unit it follows
    wording           text,                      -- the wording set or added
    old_words         text,
    new_words         text,
    new_label         text,                      -- renumber: the new designation
    kept              text,                      -- a repeal's exceptions, as printed: 'art. 1, art. 2, art. 4-7'
    instruction       text NOT NULL,             -- the instruction's words, each wording elided
    PRIMARY KEY (version_id, ordinal)
);
CREATE INDEX amendments_target ON amendments (target_act);

-- Per text: which rules read its instructions (NULL or older: read again on the next command).
CREATE TABLE amendment_extractions (
    version_id   bigint PRIMARY KEY REFERENCES act_versions (version_id) ON DELETE CASCADE,
    extractor    text NOT NULL,
    extracted_at timestamptz NOT NULL DEFAULT now()
);
"""

DOWNGRADE = r"""
DROP VIEW IF EXISTS amendment_changes;
DROP TABLE amendment_extractions, amendments CASCADE;
-- The applied interface (its views read these tables) is this revision's: forget it, so that whichever
-- code runs next re-applies its own.
DELETE FROM sql_interface;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
