"""pipeline: Polish law in PostgreSQL/pgvector, searchable and answerable with citations."""

__version__ = "0.1.0"
