"""The public SQL interface (sql/*.sql) becomes one idempotent step, re-applied after upgrades.

Shipped revisions run the SQL they shipped with (migrations/frozen/, pinned by hash). The views and
functions users query live in sql/*.sql, written to be safe to run again; `pipeline.storage.schema` applies
them after the revisions whenever their content differs from what this table records, so changing
a view is an edit of sql/ and never of a shipped revision.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
CREATE TABLE sql_interface (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    sha256     text NOT NULL,       -- of the sql/*.sql files, in the order they are applied
    applied_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE sql_interface IS 'Which content of the idempotent public SQL (sql/*.sql) was last applied.';
""")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS sql_interface")
