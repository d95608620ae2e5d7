"""`pipeline` command line: parses options, calls one method of pipeline.Service, prints what it returns.

``commands``: the click commands; ``params``: what they read (dates, ids, "-" from standard input) and
the one-line error wrapper; ``render``: how results are printed for a person.
"""
from __future__ import annotations

from pipeline.interfaces.cli.commands import main

__all__ = ["main"]
