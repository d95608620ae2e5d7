"""service: the one object behind every face (the CLI, the MCP server, the web page, the Python API),
and what it gives them: the records of results and the requests a face builds.

A face imports from here and from pipeline.core only (tests/test_layers.py checks it).
"""
from __future__ import annotations

from pipeline.indexing.find import ActQuery
from pipeline.indexing.request import IngestEvents, IngestRequest
from pipeline.service.results import Checked, Found, FoundActs
from pipeline.service.service import Service

__all__ = ["ActQuery", "Checked", "Found", "FoundActs", "IngestEvents", "IngestRequest", "Service"]
