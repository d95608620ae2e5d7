"""What an answer is made of: the retrieved fragments it may quote, and the answer itself.

Plain data, shared by the model's answer (pipeline.answering.chat), the offline one
(pipeline.answering.extractive) and `pipeline ask` (pipeline.answering.answer).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Fragment:
    """One retrieved chunk of an article."""

    act: str  # ELI id "DU/2025/277"
    article: str  # canonical "151^1"
    text: str
    act_title: str | None = None
    part: int = 1
    score: float = 0.0  # fused score
    similarity: float | None = None  # vector cosine similarity
    currency: str | None = None  # the act's currency note (pipeline.storage.currency), told to the model
    named: bool = False  # the question names this article (pipeline.retrieval.named_articles)
    # retrieved, or read beside them (pipeline.retrieval.context): a definition they use, a provision they cite
    role: str = "retrieved"
    used_by: str | None = None  # definition/reference: the retrieved article that uses or cites it
    term: str | None = None  # definition: the term
    unit: str = ""  # definition: where in the article ("ust. 1 pkt 4")
    in_question: bool = False  # definition: the question uses the term
    # Where the article, or a unit of it, is not the law on the day asked (pipeline.sources.provision_time
    # notes, Polish): told to the model beside the text; the offline answer leaves those units out.
    time_notes: list[str] = field(default_factory=list)
    units_out: list[str] = field(default_factory=list)  # the units not in force that day ("ust. 4")
    # False: the text is the article's wording on the day asked rebuilt from later changes (revision 0012),
    # not an official text; rebuilt_from: those changes ({act, unit, ...}). The answer says so at its citation.
    official: bool = True
    rebuilt_from: list[dict] | None = None


@dataclass
class Answer:
    text: str
    fragments: list[Fragment]
    model: str | None  # None = offline, no model asked
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    refused: bool = False  # "not in the documents"
    citations: list[tuple[str, str]] = field(default_factory=list)  # (act, article)
