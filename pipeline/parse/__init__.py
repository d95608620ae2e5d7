"""Parse an act's text (Dziennik Ustaw PDF or ELI HTML) into articles."""
from .model import Article, ParsedAct, ParseError

__all__ = ["Article", "ParseError", "ParsedAct"]
