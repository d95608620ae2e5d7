"""The answer stage: turn retrieved fragments into a cited answer.

With a model: an OpenAI-compatible chat-completions server (OpenRouter by default,
or any local ``/v1`` server such as Ollama or llama.cpp) answers from the fragments
only and cites them as ``[DU/2025/277, art. 154]``. Without a model, the offline summary of
:mod:`pipeline.answering.extractive` picks the most relevant sentences of the fragments.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from pipeline.storage import currency
from pipeline.core.config import env_number
from pipeline.core.act_id import parse_act_id
from pipeline.core.errors import AnswerError, InvalidActId, UsageError
from pipeline.core.numbering import SUPERSCRIPT_DIGITS, SUPERSCRIPTS
from pipeline.core.redact import scrub

if TYPE_CHECKING:
    import psycopg

    from pipeline.indexing.embedders import Embedder
    from pipeline.retrieval.refusal import Refusal

NOT_FOUND = "Nie znalazłem odpowiedzi w dostępnych dokumentach."

SYSTEM_PROMPT = f"""Jesteś asystentem prawnym. Odpowiadasz na pytania o polskie prawo \
wyłącznie na podstawie fragmentów przepisów podanych w wiadomości użytkownika.

Zasady:
1. Korzystaj tylko z podanych fragmentów. Nie używaj wiedzy spoza nich i niczego nie dopowiadaj.
2. Każde twierdzenie opatrz przypisem w nawiasie kwadratowym, w dokładnie takiej postaci, \
jak w nagłówku fragmentu: [DU/2025/277, art. 154]. Cytuj tylko akty i artykuły z podanych fragmentów.
3. Jeżeli fragmenty nie zawierają odpowiedzi, odpowiedz dokładnie tym jednym zdaniem i niczym więcej: {NOT_FOUND}
4. Odpowiadaj po polsku, zwięźle i konkretnie: najpierw odpowiedź, potem ewentualne warunki lub wyjątki."""

REWRITE_PROMPT = """Przeformułuj potoczne pytanie na zapytanie wyszukiwawcze w języku \
polskich ustaw: użyj terminów ustawowych (np. "wymiar urlopu wypoczynkowego", \
"okres wypowiedzenia umowy o pracę", "pracownik", "pracodawca"). \
Odpowiedz jedną linią: samym zapytaniem, bez komentarza i bez cudzysłowów."""

OPENROUTER_URL = "https://openrouter.ai/api/v1"
DEFAULT_MODEL = "openai/gpt-4o-mini"
MAX_ANSWER_TOKENS = 1024


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


# --- prompt -----------------------------------------------------------------


def cite(act: str, article: str) -> str:
    return f"[{act}, art. {article}]"


def build_messages(question: str, fragments: list[Fragment], as_of: dt.date | None = None) -> list[dict]:
    """System prompt + one user message holding the numbered fragments and the question (and the
    date whose law it asks about, with --as-of)."""
    blocks = []
    for i, f in enumerate(fragments, 1):
        header = f"Fragment {i}: {cite(f.act, f.article)}"
        if f.act_title:
            header += f" {f.act_title}"
        if f.part > 1:
            header += f" (część {f.part})"
        blocks.append(f"{header}\n{f.text.strip()}")
    user = "Fragmenty przepisów:\n\n" + "\n\n".join(blocks)
    notes = list(dict.fromkeys(f.currency for f in fragments if f.currency))
    if notes:
        # The model must not present a text as current law when the metadata says it was amended since.
        user += ("\n\nAktualność aktów (metadane ELI):\n" + "\n".join(f"- {n}" for n in notes)
                 + "\nJeżeli cytowany akt zmieniono później lub nie obowiązuje, zaznacz to w odpowiedzi.")
    if as_of is not None:
        user += (f"\n\nPytanie dotyczy stanu prawnego na dzień {as_of.isoformat()}: fragmenty pochodzą z tekstów "
                 "obowiązujących w tym dniu.")
    user += f"\n\nPytanie: {question.strip()}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


# --- citations ----------------------------------------------------------------

# An article number: 151, 151^1, 151¹, 183a.
_ARTICLE = rf"(\d+)(?:\s*\^\s*(\d+)|([{SUPERSCRIPTS}]+))?([a-z]{{0,3}})\b"
_ARTICLE_RE = re.compile(_ARTICLE)
# "[DU/2025/277, art. 154]" as the prompt asks, and what models write instead: no comma, "Art.", the
# journal form "Dz.U. 2025 poz. 277", several articles ("art. 154, 155", "art. 154 i art. 155", a range
# "art. 154-155": both ends). A § / ust. / pkt after the number ends the list.
_CITATION = re.compile(
    rf"(?i)\b(?:((?:DU|MP)/\d{{4}}/\d+)|((?:dz\.?\s*u\.?|m\.?\s*p\.?)\s*(?:z\s+)?\d{{4}}\s*(?:r\.)?\s*"
    rf"(?:nr\s*\d+\s*,?\s*)?poz\.?\s*\d{{1,6}}))\s*,?\s*art\.\s*"
    rf"({_ARTICLE}(?:\s*(?:,|\bi\b|\boraz\b|-|–)\s*(?:art\.\s*)?{_ARTICLE}"
    rf"(?=\s*(?:[\]),;.]|\bi\b|\boraz\b|-|–|§|ust\.|pkt|$)))*)"
)


def parse_citations(text: str) -> list[tuple[str, str]]:
    """``(act, canonical article)`` pairs in order of first appearance; ``151¹`` becomes ``151^1``,
    ``Dz.U. 2025 poz. 277`` becomes ``DU/2025/277``."""
    found: list[tuple[str, str]] = []
    for m in _CITATION.finditer(text):
        eli, journal, articles = m.group(1), m.group(2), m.group(3)
        try:
            act = str(parse_act_id(eli or " ".join(journal.split())))
        except InvalidActId:
            continue
        for a in _ARTICLE_RE.finditer(articles):
            base, caret, sup, letters = a.groups()
            sup = caret or (sup.translate(SUPERSCRIPT_DIGITS) if sup else None)
            article = base + (f"^{sup}" if sup else "") + letters.lower()
            if (act, article) not in found:
                found.append((act, article))
    return found


def foreign_citations(answer: Answer) -> list[tuple[str, str]]:
    """Citations in the answer that point at no given fragment (the model made them up)."""
    given = {(f.act, f.article) for f in answer.fragments}
    return [c for c in answer.citations if c not in given]


def answer_warnings(answer: Answer) -> list[str]:
    """What the reader of an answer must be told (Polish, one line each): it cites provisions that no
    given fragment holds (the model made them up), or a model's answer cites nothing at all."""
    warnings = []
    if foreign := foreign_citations(answer):
        warnings.append("Uwaga: odpowiedź cytuje przepisy spoza podanych fragmentów: "
                        + ", ".join(cite(a, n) for a, n in foreign))
    if answer.model is not None and not answer.refused and not answer.citations:
        warnings.append("Uwaga: odpowiedź nie cytuje żadnego przepisu z podanych fragmentów: sprawdź ją w nich.")
    return warnings


def _is_refusal(text: str, citations: list[tuple[str, str]]) -> bool:
    # Models sometimes drop the final dot or add a few words; an uncited text
    # containing the fallback sentence is still a refusal.
    core = NOT_FOUND.rstrip(".").casefold()
    return core in text.casefold() and not citations


# --- configuration --------------------------------------------------------------


@dataclass
class ChatConfig:
    base_url: str = OPENROUTER_URL
    model: str = DEFAULT_MODEL
    api_key: str | None = field(default=None, repr=False)
    key_var: str = "OPENROUTER_API_KEY"  # env var the key came from (or should come from)
    price_in: float | None = None  # USD per 1M prompt tokens
    price_out: float | None = None  # USD per 1M completion tokens
    timeout: float = 60.0
    max_retries: int = 1

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ChatConfig:
        env = os.environ if environ is None else environ
        base_url = (env.get("ANSWER_BASE_URL") or OPENROUTER_URL).rstrip("/")
        if _is_openrouter(base_url):
            key_var = "OPENROUTER_API_KEY" if env.get("OPENROUTER_API_KEY") else "ANSWER_API_KEY"
            if not env.get(key_var):
                key_var = "OPENROUTER_API_KEY"
        else:
            # Never send the OpenRouter key to some other server.
            key_var = "ANSWER_API_KEY"
        return cls(
            base_url=base_url,
            model=env.get("ANSWER_MODEL") or DEFAULT_MODEL,
            api_key=env.get(key_var) or None,
            key_var=key_var,
            price_in=_price(env, "ANSWER_PRICE_IN"),
            price_out=_price(env, "ANSWER_PRICE_OUT"),
            timeout=_number(env, "ANSWER_TIMEOUT", 60.0),
        )

    @property
    def is_openrouter(self) -> bool:
        return _is_openrouter(self.base_url)

    @property
    def configured(self) -> bool:
        """A model can be asked: a key is set, or the server is a local one that needs none."""
        return bool(self.api_key) or not self.is_openrouter

    def describe(self) -> str:
        key = f"{self.key_var}=***" if self.api_key else f"no key ({self.key_var} not set)"
        prices = ""
        if self.price_in is not None or self.price_out is not None:
            prices = f", prices in/out {self.price_in}/{self.price_out} USD per 1M tokens"
        return f"model {self.model} at {self.base_url}, {key}{prices}"

    def server_name(self) -> str:
        return "OpenRouter" if self.is_openrouter else (urlparse(self.base_url).netloc or self.base_url)


def _is_openrouter(url: str) -> bool:
    host = urlparse(url).hostname or ""
    return host == "openrouter.ai" or host.endswith(".openrouter.ai")


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    value = env_number(env, name, float, error=AnswerError)
    return default if value is None else float(value)


def _price(env: Mapping[str, str], name: str) -> float | None:
    # A free model costs 0.
    value = env_number(env, name, float, allow_zero=True, error=AnswerError)
    return None if value is None else float(value)


# --- talking to the model ----------------------------------------------------------


def _client(config: ChatConfig):
    import openai

    if not config.configured:
        raise AnswerError(
            f"no API key for {config.server_name()}: set {config.key_var}, "
            "or ANSWER_BASE_URL to a local OpenAI-compatible server"
        )
    headers = {"X-Title": "pipeline"} if config.is_openrouter else None
    return openai.OpenAI(
        base_url=config.base_url,
        # Local servers need no key, but the client insists on one.
        api_key=config.api_key or "no-key",
        timeout=config.timeout,
        max_retries=config.max_retries,
        default_headers=headers,
    )


def probe(config: ChatConfig, timeout: float = 5.0) -> str | None:
    """Whether the answer server answers at all (None), or why not (one line): lists its models, which
    costs no tokens. A server that has no model list (a 404 or 405, say) still answered."""
    import openai

    try:
        _client(dataclasses.replace(config, timeout=timeout, max_retries=0)).models.list()
    except openai.APIStatusError as exc:
        if exc.status_code in (401, 402, 403):
            return str(_explain(exc, config))
    except Exception as exc:
        return str(_explain(exc, config))
    return None


def _create(config: ChatConfig, messages: list[dict], **kwargs):
    client = _client(config)
    extra_body = {}
    if config.is_openrouter:
        # Asks OpenRouter for usage.cost (newer OpenRouter always sends it; others reject the field).
        extra_body["usage"] = {"include": True}
    try:
        return client.chat.completions.create(
            model=config.model, messages=messages, extra_body=extra_body or None, **kwargs
        )
    except Exception as exc:
        raise _explain(exc, config) from None


def _explain(exc: Exception, config: ChatConfig) -> Exception:
    """One-line AnswerError saying what went wrong and what to change; never the key."""
    import openai

    server = config.server_name()
    if isinstance(exc, openai.APITimeoutError):
        tries = config.max_retries + 1
        msg = (f"no answer from {config.base_url} within {config.timeout:g} s"
               + (f" (each of {tries} tries)" if tries > 1 else "") + ": retry, or raise ANSWER_TIMEOUT")
    elif isinstance(exc, openai.APIConnectionError):
        msg = f"cannot connect to {config.base_url}: check ANSWER_BASE_URL, the network, and that the server is running"
    elif isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = _detail(exc, config)
        if status == 401:
            msg = f"{server} rejected the API key (401): check {config.key_var}"
        elif status == 402:
            msg = f"{server} reports insufficient credits (402): add credits or choose a free ANSWER_MODEL"
        elif status == 403:
            msg = f"{server} refused the request (403){detail}: check {config.key_var} and its access to {config.model}"
        elif status == 404:
            msg = (
                f"{server} has no model {config.model!r} (404){detail}: set ANSWER_MODEL to a model it offers"
                " (and check that ANSWER_BASE_URL ends in /v1)"
            )
        elif status == 429:
            msg = f"{server} rate-limited the request (429){detail}: wait and retry, or choose another ANSWER_MODEL"
        elif status >= 500:
            msg = f"{server} failed with {status}{detail}: a server-side error, retry later or choose another ANSWER_MODEL"
        else:
            msg = f"{server} rejected the request ({status}){detail}: check ANSWER_MODEL and ANSWER_BASE_URL"
    elif isinstance(exc, openai.APIError):
        # An error event inside an otherwise successful stream (OpenRouter sends these).
        msg = f"{server} reported an error while answering{_detail(exc, config)}: retry, or choose another ANSWER_MODEL"
    elif isinstance(exc, AnswerError):
        return exc
    else:
        msg = f"calling {server} failed: {type(exc).__name__}{_detail(exc, config)}"
    # Some servers echo (part of) the key in their error message.
    return AnswerError(scrub(msg, config.api_key))


def _detail(exc: Exception, config: ChatConfig) -> str:
    body = getattr(exc, "body", None)
    text = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        text = inner.get("message") if isinstance(inner, dict) else None
    text = text or getattr(exc, "message", None) or str(exc)
    text = " ".join(str(text).split())[:200]
    return f": {text}" if text else ""


def _cost(usage, config: ChatConfig) -> float | None:
    reported = getattr(usage, "cost", None)
    if isinstance(reported, (int, float)):
        return float(reported)
    if config.price_in is None or config.price_out is None:
        return None
    return (usage.prompt_tokens * config.price_in + usage.completion_tokens * config.price_out) / 1e6


MAX_FRAGMENTS = 100  # the most fragments an answer sends the model (as `ask -k` allows): each costs tokens


class _CallerFailed(Exception):
    """The caller's on_token raised: its exception (the cause) is passed on as it is."""


def generate(
    question: str,
    fragments: list[Fragment],
    config: ChatConfig,
    *,
    stream: bool = True,
    on_token: Callable[[str], None] | None = None,
    as_of: dt.date | None = None,
) -> Answer:
    """Ask the model to answer from the fragments; ``on_token`` gets the text as it streams."""
    messages = build_messages(question, fragments, as_of)
    kwargs: dict = {"temperature": 0, "max_tokens": MAX_ANSWER_TOKENS}
    if stream:
        kwargs.update(stream=True, stream_options={"include_usage": True})
    response = _create(config, messages, **kwargs)

    model, usage, finish = None, None, None
    parts: list[str] = []

    def emit(piece: str) -> None:
        if on_token:
            try:
                on_token(piece)
            except Exception as exc:  # the caller's own (its client left, say): not the model server's
                raise _CallerFailed() from exc

    try:
        if stream:
            for chunk in response:
                model = chunk.model or model
                usage = chunk.usage or usage
                for choice in chunk.choices:
                    finish = choice.finish_reason or finish
                    piece = choice.delta.content if choice.delta else None
                    if piece:
                        parts.append(piece)
                        emit(piece)
            if parts and finish is None:
                # The stream ended without its last chunk (every OpenAI-compatible server ends with a
                # finish_reason): a connection closed mid-answer, not a whole answer.
                raise AnswerError("the stream ended without a finish_reason")
        else:
            model, usage = response.model, response.usage
            if response.choices:
                finish = response.choices[0].finish_reason
                parts.append(response.choices[0].message.content or "")
                if parts[0]:
                    emit(parts[0])
    except _CallerFailed as failed:
        raise failed.__cause__  # type: ignore[misc]
    except Exception as exc:
        error = _explain(exc, config)  # an AnswerError passes through as it is
        if parts:  # the stream broke off: what arrived (and was printed) is not the whole answer
            raise AnswerError(f"the answer was cut off after {len(''.join(parts))} characters: {error}") from None
        raise error from None

    text = "".join(parts).strip()
    if not text:
        raise AnswerError(
            f"{config.server_name()} returned an empty answer (finish_reason={finish}; or a reply that is not "
            "OpenAI-compatible JSON): retry, or choose another ANSWER_MODEL"
        )
    citations = parse_citations(text)
    return Answer(
        text=text,
        fragments=fragments,
        model=model or config.model,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        cost_usd=_cost(usage, config) if usage else None,
        refused=_is_refusal(text, citations),
        citations=citations,
    )


def rewrite_query(question: str, config: ChatConfig) -> str:
    """The question in statutory Polish terms, one line (for better retrieval)."""
    messages = [{"role": "system", "content": REWRITE_PROMPT}, {"role": "user", "content": question.strip()}]
    response = _create(config, messages, temperature=0, max_tokens=100)
    content = (response.choices[0].message.content or "") if response.choices else ""
    for line in content.splitlines():
        line = line.strip().strip('"„”«»\'').strip()
        if line:
            return line
    return question.strip()


def refusal(fragments: list[Fragment]) -> Answer:
    """The answer when retrieval found nothing similar enough; no model is asked."""
    return Answer(text=NOT_FOUND, fragments=fragments, model=None, refused=True)



# --- a whole `pipeline ask` --------------------------------------------------------------------

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

    def to_dict(self) -> dict:
        result = self.answer
        return {
            "question": self.question, "searched": self.searched, "answer": result.text, "refused": result.refused,
            "model": result.model,
            "citations": [{"citation": cite(a, n), "act": a, "article": n} for a, n in result.citations],
            "fragments": [{"citation": cite(f.act, f.article), "act": f.act, "article": f.article, "part": f.part,
                           "score": f.score, "similarity": f.similarity} for f in result.fragments],
            "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
            "cost_usd": result.cost_usd, "top_similarity": self.refusal.similarity,
            "threshold": self.refusal.min_similarity, "note": self.note, "refusal": self.refusal.to_dict(),
            "currency": {eli: c.to_dict() for eli, c in self.currency.items()},
            "foreign_citations": [{"citation": cite(a, n), "act": a, "article": n}
                                  for a, n in foreign_citations(result)],
            "currency_warning": self.currency_warning, "warnings": self.warnings + self.answer_warnings,
        }


def ask(
    question: str,
    *,
    k: int = 5,
    acts: Sequence[str] = (),
    as_of: dt.date | None = None,
    include_repealed: bool = False,
    rewrite: bool = False,
    offline: bool = False,
    stream: bool = True,
    on_rewrite: Callable[[str], None] | None = None,
    on_fragments: Callable[[list[Fragment]], None] | None = None,
    on_token: Callable[[str], None] | None = None,
) -> Asked:
    """`pipeline ask`: :func:`answer_question` over the current database with the configured embedder
    and answer model."""
    from pipeline.indexing.embedders import embedder_from_env
    from pipeline.storage.schema import open_current

    _, conn = open_current()
    with closing(conn):
        return answer_question(conn, embedder_from_env(), question, ChatConfig.from_env(), k=k, acts=acts,
                               as_of=as_of, include_repealed=include_repealed, rewrite=rewrite, offline=offline,
                               stream=stream, on_rewrite=on_rewrite, on_fragments=on_fragments, on_token=on_token)


def answer_question(
    conn: psycopg.Connection,
    embedder: Embedder,
    question: str,
    config: ChatConfig,
    *,
    k: int = 5,
    acts: Sequence[str] = (),
    as_of: dt.date | None = None,
    include_repealed: bool = False,
    rewrite: bool = False,
    offline: bool = False,
    stream: bool = True,
    on_rewrite: Callable[[str], None] | None = None,
    on_fragments: Callable[[list[Fragment]], None] | None = None,
    on_token: Callable[[str], None] | None = None,
) -> Asked:
    """Retrieve, then answer: refused below the similarity threshold, else by the model, else extractive.

    Takes a connection and an embedder so a long-lived caller (the MCP server) keeps them warm.
    ``on_rewrite`` gets the rewritten question, ``on_fragments`` the fragments just before a model
    is asked, ``on_token`` the answer as it streams.
    """
    from pipeline.answering.extractive import extractive_answer
    from pipeline.retrieval.refusal import decide
    from pipeline.retrieval.search import check_question, checked_search, search_gaps

    check_question(question)  # before a rewrite sends it anywhere
    if isinstance(k, int) and not isinstance(k, bool) and k > MAX_FRAGMENTS:  # other bad k: search says
        raise UsageError(f"k must be a whole number from 1 to {MAX_FRAGMENTS} for an answer: each fragment "
                         "is sent to the model")
    use_model = config.configured and not offline
    searched = question
    if rewrite:
        if not use_model:
            raise UsageError("--rewrite needs a model (set OPENROUTER_API_KEY or ANSWER_BASE_URL)")
        searched = rewrite_query(question, config)
        if on_rewrite:
            on_rewrite(searched)
    hits = checked_search(conn, searched, embedder, k=k, mode="hybrid", acts=acts, as_of=as_of,
                          include_repealed=include_repealed)
    currencies = currency.for_acts(conn, [h.act for h in hits], as_of)
    # Each read ends the transaction it began (db.reading): none stays open while a model writes.
    gaps = search_gaps(conn, embedder, "hybrid", acts, as_of)
    verdict = decide(hits, embedder.name)
    fragments = [Fragment(act=h.act, article=h.article, text=h.text, act_title=h.act_title, part=h.part,
                          score=h.score, similarity=h.similarity, named=h.named,
                          currency=currencies[h.act].note() if h.act in currencies else None) for h in hits]
    streamed = False
    if verdict.refused:
        result = refusal(fragments)
        note = f"{verdict.reason}; no model was asked"
    elif use_model:
        if on_fragments:
            on_fragments(fragments)
        streamed = stream and on_token is not None
        result = generate(question, fragments, config, stream=stream, on_token=on_token, as_of=as_of)
        note = f"model {result.model or config.model}"
    else:
        result = extractive_answer(question, fragments)
        note = OFFLINE_NOTE if config.configured else NO_MODEL_NOTE
    cited = {a: currencies[a] for a in dict.fromkeys(a for a, _ in result.citations) if a in currencies}
    return Asked(question, searched, result, verdict, note, streamed, cited, currency.warning(cited.values()), gaps)


_MOVED_TO_EXTRACTIVE = ("EXTRACTIVE_NOTE", "extractive_answer", "split_units", "stem")


def __getattr__(name: str) -> object:
    # The offline summary moved to pipeline.answering.extractive (which imports this module); its names
    # stay importable from here.
    if name in _MOVED_TO_EXTRACTIVE:
        from pipeline.answering import extractive

        return getattr(extractive, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
