"""Hybrid search: thesaurus, search_terms()/search_tsquery(), BM25 statistics, search_chunks().

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""
from pathlib import Path

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"


def upgrade() -> None:
    op.execute((SQL_DIR / "thesaurus.sql").read_text())
    op.execute((SQL_DIR / "search.sql").read_text())
    from pipeline.thesaurus import sync

    sync(op.get_bind().connection.driver_connection)


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS search_chunks(text, vector, text, integer, text[], date, boolean, text, "
               "integer, double precision, double precision, integer)")
    op.execute("DROP FUNCTION IF EXISTS refresh_search_stats()")
    op.execute("DROP MATERIALIZED VIEW IF EXISTS corpus_stats, lexeme_stats")
    op.execute("DROP FUNCTION IF EXISTS search_tsquery(text)")
    op.execute("DROP FUNCTION IF EXISTS search_terms(text)")
    op.execute("DROP FUNCTION IF EXISTS thesaurus_expansion(text)")
    op.execute("DROP TABLE IF EXISTS thesaurus")
