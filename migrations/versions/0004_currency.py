"""Currency of every act: later amendments, record timestamp, last check; sync runs; act_currency views.

Currency lives on `acts` (one row per ELI publication), not on `act_versions`: it is what the
publication's metadata says today (amendments published after a consolidated text, in force or
not), it changes while the text does not, and a version is an immutable text.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TABLES = r"""
-- Amendments the stored text does not include, oldest first: [{"eli", "date", "date_of"}].
-- For a consolidated text "Nowelizacje po tekście jednolitym" (date_of "act": the amending act's
-- date); for any other act "Akty zmieniające" (date_of "entry_into_force"). NULL: the metadata
-- carries no references at all, so nothing is known.
ALTER TABLE acts ADD COLUMN amended_after jsonb;
ALTER TABLE acts ADD COLUMN change_date timestamptz;   -- the record's changeDate (not a legal date)
ALTER TABLE acts ADD COLUMN checked_at timestamptz;    -- when this metadata was last read

-- One row per `pipeline sync`: a run that never finished is resumed by the next one.
CREATE TABLE sync_runs (
    sync_id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    resumes     bigint REFERENCES sync_runs (sync_id) ON DELETE SET NULL,
    summary     jsonb NOT NULL DEFAULT '{}'::jsonb,
    host        text,
    pid         integer
);
"""

# Snapshot of sql/currency.sql at this revision (that file is the maintained, idempotent copy).
VIEWS = r"""
CREATE OR REPLACE VIEW act_currency AS
    SELECT a.eli, a.base_eli, a.title, a.act_type, a.status, a.in_force,
           v.version_no, v.valid_from AS text_as_of,
           a.legal_status_date, a.expiration_date, a.change_date, a.checked_at,
           a.amended_after,
           jsonb_array_length(a.amended_after) AS amendments_after,
           EXISTS (SELECT 1 FROM versions_as_of(NULL) c WHERE c.eli = a.eli) AS is_current
    FROM acts a
    LEFT JOIN LATERAL (
        SELECT version_no, valid_from FROM act_versions
        WHERE eli = a.eli ORDER BY version_no DESC LIMIT 1
    ) v ON true;
COMMENT ON VIEW act_currency IS
    'Every stored act with its currency: text as of, amendments after it, in force, last checked.';

CREATE OR REPLACE VIEW current_acts AS
    SELECT * FROM act_currency WHERE is_current;
COMMENT ON VIEW current_acts IS 'Per base act, the act holding its current text, with its currency.';
"""


def upgrade() -> None:
    op.execute(TABLES)
    op.execute(VIEWS)
    # Existing rows: currency from the metadata already stored, by the same rule new ingests use.
    from pipeline.storage.currency import backfill

    backfill(op.get_bind().connection.driver_connection)


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS current_acts, act_currency")
    op.execute("DROP TABLE IF EXISTS sync_runs")
    op.execute("ALTER TABLE acts DROP COLUMN IF EXISTS amended_after, DROP COLUMN IF EXISTS change_date, "
               "DROP COLUMN IF EXISTS checked_at")
