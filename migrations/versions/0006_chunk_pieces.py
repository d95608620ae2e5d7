"""Pieces: provision-sized parts of long chunks, embedded besides the chunks for the vector arm.

A chunk is an article or a ~1200-character part of a long one; the offline model averages it into
one vector, so a question about one provision of a long article matches it weakly. Each chunk
longer than pipeline.sources.chunk.PIECE_CHARS gets pieces (its § / ust. / pkt units packed up to that size,
each behind the chunk's context header). Their vectors live in `embeddings` by content hash like the
chunks' and go through the same queue; the vector arm of search_chunks() scores a chunk by the best
of its own vector and its pieces' (sql/search.sql). The text arm does not use pieces.

Ingest writes a version's pieces with its chunks. Chunks stored before this revision get theirs from
the next `pipeline embed` (the split is Python code, so it is data work, not a migration step).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE chunk_pieces (
    chunk_id       bigint NOT NULL REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    piece          integer NOT NULL,   -- 1..n within the chunk
    embed_text     text NOT NULL,      -- the chunk's context header + the piece: what gets embedded
    content_sha256 text NOT NULL,      -- sha256 of embed_text: the embedding key
    PRIMARY KEY (chunk_id, piece)
);
CREATE INDEX chunk_pieces_content_idx ON chunk_pieces (content_sha256);
COMMENT ON TABLE chunk_pieces IS
    'Provision-sized parts of chunks longer than 400 characters, embedded besides the chunks (vector arm only).';
"""

DOWNGRADE = r"""
-- CASCADE: embedding_status (sql/views.sql) counts its texts; the interface step recreates it.
DROP TABLE chunk_pieces CASCADE;
-- The applied interface (search_chunks() reads chunk_pieces) is this revision's: forget it, so that
-- whichever code runs next re-applies its own.
DELETE FROM sql_interface;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
