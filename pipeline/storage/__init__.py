"""storage: PostgreSQL: connections, migrations and the SQL interface, versioned acts, articles and chunks, currency, the embedding queue, Polish text search."""
