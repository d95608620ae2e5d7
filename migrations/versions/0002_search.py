"""Hybrid search: thesaurus, search_terms()/search_tsquery(), BM25 statistics, search_chunks().

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""
from alembic import op

from pipeline.core.resources import frozen_sql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# The SQL files as they shipped with this revision (migrations/frozen/0002), pinned by hash.
THESAURUS_SHA256 = "6dc0ddbcd01485907de815b9d8e187c2d5a749c72758142ba7cbd952f51e95ea"
SEARCH_SHA256 = "4e863dd07f9f1260fee6487e67fa9033630861b2eaa65329e7e843382941f335"


def upgrade() -> None:
    op.execute(frozen_sql("0002", "thesaurus.sql", THESAURUS_SHA256))
    op.execute(frozen_sql("0002", "search.sql", SEARCH_SHA256))
    from pipeline.storage.thesaurus import sync

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
