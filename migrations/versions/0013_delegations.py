"""Delegations: every unit of a stored text that authorises an organ to issue an act ("Minister … określi, w
drodze rozporządzenia, …"), read from the text by pipeline.sources.delegations: the organ, the form of the act,
whether it must or may be issued, its matter and guidelines, the organs that take part.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-08
"""
from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE version_delegations (
    version_id        bigint NOT NULL REFERENCES act_versions (version_id) ON DELETE CASCADE,
    ordinal           integer NOT NULL,
    article           text NOT NULL,
    unit              text NOT NULL DEFAULT '',  -- 'ust. 5'; '' the article itself
    organ             text NOT NULL,             -- who issues the act, as the text names it
    form              text NOT NULL,             -- rozporządzenie | zarządzenie | uchwała | obwieszczenie | komunikat
    obligatory        boolean NOT NULL,          -- 'określi' true; 'może określić' false
    normative         boolean NOT NULL,          -- an act of law (not an announcement)
    matter            text NOT NULL,             -- what the act is to determine
    guidance          text,                      -- the guidelines for its content ('uwzględniając …')
    in_agreement_with text,                      -- 'w porozumieniu z …'
    after_consulting  text,                      -- 'po zasięgnięciu opinii …'
    in_amended_act    text,                      -- set inside an amending instruction's wording: the act it amends, as named
    text              text NOT NULL,             -- the delegating sentence as printed
    PRIMARY KEY (version_id, ordinal)
);

-- Per text: which rules read its delegations (NULL or older: read again on the next command).
CREATE TABLE delegation_extractions (
    version_id   bigint PRIMARY KEY REFERENCES act_versions (version_id) ON DELETE CASCADE,
    reader       text NOT NULL,
    extracted_at timestamptz NOT NULL DEFAULT now()
);
"""

DOWNGRADE = r"""
DROP VIEW IF EXISTS delegations;
DROP TABLE delegation_extractions, version_delegations CASCADE;
-- The applied interface (its views read these tables) is this revision's: forget it, so that whichever
-- code runs next re-applies its own.
DELETE FROM sql_interface;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
