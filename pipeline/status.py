"""What `pipeline db status` and `pipeline doctor` report."""
from __future__ import annotations

from typing import Any

from . import db, schema


def database_status() -> dict[str, Any]:
    url = db.database_url()
    with db.connect(url, autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]
        vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        if not vector:
            available = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        current = schema.current_revision(conn)
        info: dict[str, Any] = {
            "server": db.server_kind(),
            "postgresql": version.split()[0],
            "pgvector": vector[0] if vector else (f"{available[0]} (available, not created)" if available else None),
            "migration": current,
            "migration_head": schema.head_revision(),
            "text_search": text_search_kind(conn),
            "rows": {},
            "embeddings": [],
        }
        if current:
            for table in ("acts", "act_versions", "articles", "chunks", "embeddings", "embedding_queue", "ingest_runs"):
                info["rows"][table] = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # fixed names
            cols = ("model", "dimensions", "backend", "texts", "embedded", "queued", "failing")
            info["embeddings"] = [dict(zip(cols, r)) for r in conn.execute(f"SELECT {', '.join(cols)} FROM embedding_status")]
    info["embedder"] = embedder_description()
    return info


def text_search_kind(conn) -> str:
    """Which dictionaries the `polish` configuration uses (ispell = lemmatising, simple = fallback)."""
    row = conn.execute(
        """
        SELECT string_agg(DISTINCT d.dictname, ', ')
        FROM pg_ts_config c
        JOIN pg_ts_config_map m ON m.mapcfg = c.oid
        JOIN pg_ts_dict d ON d.oid = m.mapdict
        WHERE c.cfgname = 'polish'
        """
    ).fetchone()
    return f"polish ({row[0]})" if row and row[0] else "missing"


def embedder_description() -> dict[str, Any]:
    from .embedders import EmbedderError, embedder_from_env

    try:
        return embedder_from_env().describe()
    except EmbedderError as exc:
        return {"error": str(exc)}
