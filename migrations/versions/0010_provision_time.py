"""Provision time: when each article of a stored text, and each of its units, is the law.

Read at ingest from the text (pipeline.sources.provision_time): the final provisions' rules ("unit →
when"), including those an act states for another (the act introducing it), and the footnotes of
consolidated texts (each unit's history, the dates of two wordings). What is stored:

- `articles.wording`: a consolidated text may print an article (or a unit of it) twice, the wording in
  force and the one an amendment brings; each is an article row of its own, 1 and 2 (0: printed once).
- `version_footnotes`, `provision_rules`: what was read from the text, where it stands.
- `article_times`, `article_events`: per article row, when it is in force and its timeline; derived,
  worked out again (pipeline.storage.legal_time.refresh) when a text they depend on is stored, its
  record changes, or the rules change (`version_times.extractor`).

The public face is in sql/legal_time.sql (docs/sql.md).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05
"""
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE articles ADD COLUMN wording smallint NOT NULL DEFAULT 0 CHECK (wording IN (0, 1, 2));

-- The footnotes a text prints, where their marks stand.
CREATE TABLE version_footnotes (
    version_id bigint NOT NULL REFERENCES act_versions (version_id) ON DELETE CASCADE,
    ordinal    integer NOT NULL,
    number     integer NOT NULL,              -- as printed
    article    text,                          -- NULL: marked outside the articles (the title)
    wording    smallint NOT NULL DEFAULT 0,   -- of the article row it marks
    unit       text NOT NULL DEFAULT '',      -- 'ust. 2 pkt 5', '' the article itself
    heading    text,                          -- the chapter heading it marks (its articles share it)
    text       text NOT NULL,
    PRIMARY KEY (version_id, ordinal)
);

-- The rules of the text's final provisions: "unit -> when".
CREATE TABLE provision_rules (
    version_id     bigint NOT NULL REFERENCES act_versions (version_id) ON DELETE CASCADE,
    ordinal        integer NOT NULL,
    for_act        text,                      -- NULL: the text's own act; else the act the rule dates (ELI id)
    for_act_title  text,                      -- as printed, for a rule about another act
    source_article text NOT NULL,             -- the article that states it
    article        text,                      -- NULL: the act as a whole, or a chapter
    unit           text NOT NULL DEFAULT '',  -- 'ust. 4'; '' the whole article
    chapter        text,                      -- 'Rozdział 3'
    scope          text,                      -- 'w zakresie art. 16a ust. 4 pkt 2c i 2d'
    verb           text NOT NULL CHECK (verb IN ('enters', 'applies')),
    when_kind      text NOT NULL CHECK (when_kind IN ('period', 'next_day', 'publication', 'date', 'other_act',
                                                      'event', 'unknown', 'next_month', 'next_year')),
    when_text      text NOT NULL,             -- 'po upływie 14 dni od dnia ogłoszenia'
    when_date      date,                      -- when_kind 'date'
    clause         text NOT NULL,             -- the provision as printed
    PRIMARY KEY (version_id, ordinal)
);
CREATE INDEX provision_rules_for_act ON provision_rules (for_act) WHERE for_act IS NOT NULL;

-- Per text: what its time was read from and when.
CREATE TABLE version_times (
    version_id    bigint PRIMARY KEY REFERENCES act_versions (version_id) ON DELETE CASCADE,
    printed_date  date,                       -- the date the text prints (a Dz. U. PDF's masthead; an announcement's date)
    consolidated  boolean,                    -- the text is a consolidated text (by its record or its own title)
    act_date      date,                       -- the act's own date as its text names it ("USTAWA z dnia 26 czerwca 1974 r.")
    footnotes     boolean NOT NULL,           -- false: stored before revision 0010, its footnotes not read
    published     date,                       -- the act's publication the rules were counted from
    states_from   date,                       -- the earliest day an article is in force (NULL: not determined)
    record_from   date,                       -- the version's valid_from as its record gave it
    extractor     text,                       -- NULL: not worked out yet
    extracted_at  timestamptz
);

-- When each article row is in force: [in_force_from, in_force_until).
CREATE TABLE article_times (
    article_id     bigint PRIMARY KEY REFERENCES articles (article_id) ON DELETE CASCADE,
    version_id     bigint NOT NULL REFERENCES act_versions (version_id) ON DELETE CASCADE,
    in_force_from  date,                      -- NULL: undetermined (undetermined says why)
    in_force_until date,                      -- the first day it no longer holds; NULL: none the texts give
    undetermined   text,                      -- the clause quoted, or what is missing
    basis          text NOT NULL              -- provisions | other_act | consolidated_text | footnote | record | undetermined
);
CREATE INDEX article_times_version ON article_times (version_id);

-- Each article row's timeline.
CREATE TABLE article_events (
    article_id  bigint NOT NULL REFERENCES articles (article_id) ON DELETE CASCADE,
    ordinal     integer NOT NULL,
    kind        text NOT NULL,                -- enters | added | wording | amended | renumbered | repealed | loses_force
    unit        text NOT NULL DEFAULT '',
    from_date   date,
    until_date  date,
    determined  boolean NOT NULL,             -- false: the texts do not determine from_date (text quotes why)
    partial     boolean NOT NULL DEFAULT false,  -- a loss of force "w zakresie …" only
    source_act  text,
    source_unit text,
    text        text NOT NULL,
    PRIMARY KEY (article_id, ordinal)
);
"""

DOWNGRADE = r"""
DROP VIEW IF EXISTS article_timelines, entry_rules, current_articles, version_articles;
DROP FUNCTION IF EXISTS articles_as_of(date), articles_out_of_force(bigint[], date);
-- CASCADE: act_currency and current_acts (sql/currency.sql) read version_times; the interface step recreates them.
DROP TABLE article_events, article_times, version_times, provision_rules, version_footnotes CASCADE;
ALTER TABLE articles DROP COLUMN wording;
-- The applied interface (its views read these tables) is this revision's: forget it, so that whichever
-- code runs next re-applies its own.
DELETE FROM sql_interface;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
