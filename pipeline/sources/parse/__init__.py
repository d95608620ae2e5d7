"""Parse an act's text (Dziennik Ustaw PDF or ELI HTML) into articles."""
from pipeline.sources.parse.model import Article, ParsedAct, ParseError, looks_like_pdf

__all__ = ["Article", "ParseError", "ParsedAct", "looks_like_pdf"]
