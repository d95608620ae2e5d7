"""`pipeline serve`: the product as a web page (pipeline.interfaces.web.app).

``app``: the pages and the server; ``checks``: what a request may carry; ``urls``: the page's URLs;
``render``: hits, units, badges and answers as HTML; ``stream``: an answer as server-sent events;
``security``: the headers every page sends.
"""
from __future__ import annotations

from pipeline.interfaces.web.app import Web, build_app, serve

__all__ = ["Web", "build_app", "serve"]
