"""pipeline: Polish law in PostgreSQL/pgvector, searchable and answerable with citations.

The Python API (docs/python-api.md) is :class:`pipeline.Service`, the object behind the CLI, the MCP
server and the web page. The stage packages under it depend one way:
core -> sources -> storage -> indexing -> retrieval -> answering -> service -> interfaces.
"""
from __future__ import annotations

from typing import Any

from pipeline.core import __version__, json_default

__all__ = ["IngestRequest", "Service", "__version__", "json_default"]


def __getattr__(name: str) -> Any:
    # Imported on first use: `import pipeline` must stay cheap (the CLI's --help, a parse worker).
    if name in ("Service", "IngestRequest"):
        import pipeline.service

        return getattr(pipeline.service, name)
    raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
