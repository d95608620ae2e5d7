"""The answer stage: turn retrieved fragments into a cited answer (`pipeline ask`, the MCP ``answer`` tool,
both through pipeline.Service.ask).

With a model (pipeline.answering.chat): an OpenAI-compatible chat-completions server answers from the
fragments only (pipeline.answering.prompts) and cites them as ``[DU/2025/277, art. 154]``
(pipeline.answering.citations). Without a model, the offline summary of
:mod:`pipeline.answering.extractive` picks the most relevant sentences of the fragments.

The names of those modules that callers use stay importable from here.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from pipeline.answering.chat import (
    DEFAULT_MODEL,
    MAX_ANSWER_TOKENS,
    OPENROUTER_URL,
    ChatConfig,
    generate,
    probe,
    rewrite_query,
)
from pipeline.answering.citations import (StreamMarker, answer_warnings, cite, cited_segments, foreign_citations,
                                          mark_rebuilt, parse_citations, rebuilt_citations)
from pipeline.answering.extractive import EXTRACTIVE_NOTE, extractive_answer, split_units, stem
from pipeline.answering.fragments import Answer, Fragment
from pipeline.answering.prompts import NOT_FOUND, REWRITE_PROMPT, SYSTEM_PROMPT, build_messages, refusal
from pipeline.core.errors import AnswerError, UsageError
from pipeline.core.limits import CONTEXT_CHARS, MAX_K, check_question
from pipeline.embedders import Embedder
from pipeline.retrieval.context import context_for
from pipeline.retrieval.refusal import Refusal, decide
from pipeline.retrieval.search import (Hit, QueryVectors, Scope, SearchSettings, check_search, checked_search,
                                       query_vectors, search_gaps, still_embedding, to_embed, with_units)
from pipeline.storage import currency

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "DEFAULT_MODEL", "EXTRACTIVE_NOTE", "MAX_ANSWER_TOKENS", "MAX_FRAGMENTS", "NOT_FOUND", "NO_MODEL_NOTE",
    "OFFLINE_NOTE", "OPENROUTER_URL", "REWRITE_PROMPT", "SYSTEM_PROMPT", "Answer", "AnswerError", "Asked",
    "ChatConfig", "Fragment", "Retrieved", "answer_question", "answer_retrieved", "answer_warnings", "build_messages",
    "check_ask", "cite", "retrieve", "searched_question",
    "extractive_answer", "foreign_citations", "generate", "parse_citations", "probe", "refusal",
    "rewrite_query", "split_units", "stem",
]

MAX_FRAGMENTS = MAX_K  # the most fragments an answer sends the model (as `ask -k` allows): each costs tokens

NO_MODEL_NOTE = "no model configured (set OPENROUTER_API_KEY or ANSWER_BASE_URL); extractive answer"
OFFLINE_NOTE = "offline: no model asked; extractive answer"


@dataclass
class Asked:
    """What `pipeline ask` found and answered, and how (``note``)."""

    question: str
    searched: str  # the question as searched (rewritten with --rewrite)
    answer: Answer
    refusal: Refusal  # the shared rule's verdict (pipeline.retrieval.refusal)
    note: str
    streamed: bool = False  # the text already went to on_token as it was written
    currency: dict = field(default_factory=dict)  # cited act -> its currency (pipeline.storage.currency.Currency)
    currency_warning: str | None = None  # one Polish line when a cited act was amended since, or is not in force
    warnings: list[str] = field(default_factory=list)  # what made the search incomplete (search.vector_gap)

    @property
    def answer_warnings(self) -> list[str]:
        """What is wrong with the answer's citations (:func:`answer_warnings`)."""
        return answer_warnings(self.answer)

    def segments(self) -> list[tuple[str, tuple[str, str] | None]]:
        """The answer's text in pieces: plain text (None), and each citation with the (act, article) it
        names (pipeline.answering.citations.cited_segments): what a page links."""
        return cited_segments(self.answer.text)

    def to_dict(self) -> dict:
        result = self.answer
        return {
            "question": self.question, "searched": self.searched, "answer": result.text, "refused": result.refused,
            "model": result.model,
            # official: false where the article cited was read in a wording rebuilt from later changes
            "citations": [{"citation": cite(a, n), "act": a, "article": n,
                           "official": (a, n) not in rebuilt_citations(result)} for a, n in result.citations],
            "fragments": [{"citation": cite(f.act, f.article), "act": f.act, "article": f.article, "part": f.part,
                           "role": f.role, "used_by": f.used_by,
                           "score": f.score, "similarity": f.similarity} for f in result.fragments],
            "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
            "cost_usd": result.cost_usd, "top_similarity": self.refusal.similarity,
            "threshold": self.refusal.min_similarity, "note": self.note, "refusal": self.refusal.to_dict(),
            "currency": {eli: c.to_dict() for eli, c in self.currency.items()},
            "foreign_citations": [{"citation": cite(a, n), "act": a, "article": n}
                                  for a, n in foreign_citations(result)],
            "currency_warning": self.currency_warning, "warnings": self.warnings + self.answer_warnings,
        }


def time_notes(hit: Hit) -> list[str]:
    """What a reader of the hit's text on the day asked must be told: its date undetermined, units not in force."""
    head = ["data wejścia w życie artykułu nieokreślona w tekstach"] if hit.in_force is None else []
    return head + [u["note"] for u in hit.units_not_in_force or []]


@dataclass
class Retrieved:
    """What an answer reads, found with a database connection (:func:`retrieve`) and answered without one
    (:func:`answer_retrieved`): a server holds no connection while a model writes."""

    question: str
    searched: str
    fragments: list[Fragment]
    verdict: Refusal
    currencies: dict
    warnings: list[str]


def check_ask(question: object, k: object, config: ChatConfig, *, rewrite: bool = False,
              offline: bool = False) -> None:
    """The caller's input checked before anything runs (a rewrite, an embedding, a query)."""
    check_question(question)  # before a rewrite sends it anywhere
    if isinstance(k, int) and not isinstance(k, bool) and k > MAX_FRAGMENTS:  # other bad k: search says
        raise UsageError(f"k must be a whole number from 1 to {MAX_FRAGMENTS} for an answer: each fragment "
                         "is sent to the model")
    if rewrite and not (config.configured and not offline):
        raise UsageError("--rewrite needs a model (set OPENROUTER_API_KEY or ANSWER_BASE_URL)")


def searched_question(question: str, config: ChatConfig, *, rewrite: bool,
                      on_rewrite: Callable[[str], None] | None = None) -> str:
    """The question as it will be searched: rewritten by the model with ``rewrite``, else as asked."""
    if not rewrite:
        return question
    searched = rewrite_query(question, config)
    if on_rewrite:
        on_rewrite(searched)
    return searched


def retrieve(conn: psycopg.Connection, embedder: Embedder, question: str, *, as_of: dt.date | None = None,
             scope: Scope = Scope(), settings: SearchSettings = SearchSettings(), searched: str | None = None,
             context_chars: int = CONTEXT_CHARS, vectors: QueryVectors | None = None) -> Retrieved:
    """The fragments an answer reads: the hybrid search's top ``settings.k`` hits for ``searched`` (the question
    unless rewritten), each with its act's currency and the units not in force on ``as_of``; beside them (within
    ``context_chars``; 0: none) the definitions they use and the provisions they cite
    (pipeline.retrieval.context), marked as such; and the shared refusal rule's verdict. ``vectors``: the
    question already embedded."""
    searched = searched or question
    settings = replace(settings, mode="hybrid")  # an answer reads every arm: the refusal rule weighs them
    if vectors is None:  # embedded here, on the connection's time (pipeline.Service.ask embeds before it takes one)
        check_search(searched, embedder, as_of=as_of, scope=scope, settings=settings)
        vectors = query_vectors(embedder, searched, to_embed(conn, embedder, searched, settings))
    hits = checked_search(conn, searched, embedder, as_of=as_of, scope=scope, settings=settings, vectors=vectors)
    hits = with_units(conn, hits, as_of)
    currencies = currency.for_acts(conn, [h.act for h in hits], as_of)
    # Each read ends the transaction it began (db.reading): none stays open while a model writes.
    gaps = search_gaps(conn, embedder, "hybrid", scope.acts or (), as_of)
    if cut := vectors.warning(searched):
        gaps.append(cut)
    verdict = decide(hits, embedder.name, embedding=still_embedding(conn, embedder, scope.acts or (), as_of))
    fragments = [Fragment(act=h.act, article=h.article, text=h.text, act_title=h.act_title, part=h.part,
                          score=h.score, similarity=h.similarity, named=h.named,
                          currency=currencies[h.act].note() if h.act in currencies else None,
                          time_notes=time_notes(h), units_out=[u["unit"] for u in h.units_not_in_force or []],
                          official=h.official, rebuilt_from=h.rebuilt_from)
                 for h in hits]
    if not verdict.refused and context_chars:
        fragments += [Fragment(act=c.act, article=c.article, text=c.text, role=c.role, used_by=c.used_by, term=c.term,
                               unit=c.unit, in_question=c.in_question,
                               currency=currencies[c.act].note() if c.act in currencies else None)
                      for c in context_for(conn, hits, question, budget=context_chars)]
    return Retrieved(question, searched, fragments, verdict, currencies, gaps)


@dataclass(frozen=True)
class AnswerEvents:
    """What a caller is told while an answer is made: the rewritten question (``on_rewrite``), the fragments
    just before a model is asked (``on_fragments``), the answer's words as it streams (``on_token``)."""

    on_rewrite: Callable[[str], None] | None = None
    on_fragments: Callable[[list[Fragment]], None] | None = None
    on_token: Callable[[str], None] | None = None


def answer_retrieved(found: Retrieved, config: ChatConfig, *, as_of: dt.date | None = None, offline: bool = False,
                     stream: bool = True, events: AnswerEvents = AnswerEvents()) -> Asked:
    """Answer from what :func:`retrieve` found, needing no database: refused below the similarity
    threshold, else by the model, else extractive (``events``: what the caller is told meanwhile)."""
    on_fragments, on_token = events.on_fragments, events.on_token
    streamed = False
    rebuilt = {(f.act, f.article) for f in found.fragments if not f.official}
    if found.verdict.refused:
        result = refusal(found.fragments)
        note = f"{found.verdict.reason}; no model was asked"
    elif config.configured and not offline:
        if on_fragments:
            on_fragments(found.fragments)
        streamed = stream and on_token is not None
        # What streams is marked as the whole answer is below (a citation of a rebuilt wording says so).
        marker = StreamMarker(on_token, rebuilt) if on_token is not None and rebuilt else None
        result = generate(found.question, found.fragments, config, stream=stream, on_token=marker or on_token,
                          as_of=as_of)
        if marker is not None:
            marker.flush()
        note = f"model {result.model or config.model}"
    else:
        result = extractive_answer(found.question, found.fragments)
        note = OFFLINE_NOTE if config.configured else NO_MODEL_NOTE
    # A citation of a rebuilt wording says so next to it, in the text every face shows (revision 0012).
    result.text = mark_rebuilt(result.text, rebuilt)
    cited = {a: found.currencies[a] for a in dict.fromkeys(a for a, _ in result.citations) if a in found.currencies}
    return Asked(found.question, found.searched, result, found.verdict, note, streamed, cited,
                 currency.warning(cited.values()), found.warnings)


def answer_question(conn: psycopg.Connection, embedder: Embedder, question: str, config: ChatConfig, *,
                    as_of: dt.date | None = None, scope: Scope = Scope(), settings: SearchSettings = SearchSettings(),
                    rewrite: bool = False, offline: bool = False, stream: bool = True,
                    events: AnswerEvents = AnswerEvents(), context_chars: int = CONTEXT_CHARS) -> Asked:
    """Retrieve, then answer: refused below the similarity threshold, else by the model, else extractive.

    The stages in one call on the caller's connection (:func:`retrieve`, then :func:`answer_retrieved`);
    pipeline.Service.ask runs them with a connection held for the SQL only. ``events``: the rewritten
    question, the fragments just before a model is asked, the answer as it streams.
    """
    check_ask(question, settings.k, config, rewrite=rewrite, offline=offline)
    searched = searched_question(question, config, rewrite=rewrite, on_rewrite=events.on_rewrite)
    found = retrieve(conn, embedder, question, searched=searched, as_of=as_of, scope=scope, settings=settings,
                     context_chars=context_chars)
    return answer_retrieved(found, config, as_of=as_of, offline=offline, stream=stream, events=events)
