"""`pipeline mcp`: the product as a Model Context Protocol server (official SDK ``mcp`` 2.x).

Each tool calls one method of pipeline.Service and returns its record (pipeline.service.results);
this module only adapts them to MCP: typed parameters, published schemas, one-line tool errors. One
process keeps one service: its pool of connections (each call takes its own, reconnected when it
breaks), the embedder and each connection's Polish dictionary warm, so a call costs the query, not a
cold start."""
from __future__ import annotations

import datetime as dt
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field, ValidationError
from typing_extensions import TypedDict

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import ToolAnnotations
from mcp_types.jsonrpc import INVALID_PARAMS

from pipeline.core import __version__
from pipeline.core.errors import is_for_the_user, one_line
from pipeline.core.limits import FIND_LIMIT, MAX_CHECK_CHARS, MAX_CHECK_CITATIONS, MAX_FIND_LIMIT, MAX_K, MODES, \
    check_question
from pipeline.service import ActQuery, Service
from pipeline.service.results import OPEN, ActRecord, ArticleRecord, CitationRecord, FoundActRecord, HitRecord
from pipeline.interfaces.listening import (Guard, Policy, SecurityHeaders, check_port, exposure_warning, policy_for,
                                           server_config)

T = TypeVar("T")

log = logging.getLogger(__name__)

Mode = Literal[MODES]  # type: ignore[valid-type]  # the one list of modes, as a schema enum
PAGE_CHARS = 4000  # get_article's default page: a long article (art. 151^1 …) comes in pieces

# Results are the records every face gives (pipeline.service.results); extra keys pass through, so
# fields added there reach clients without a change here.


class SearchResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    query: str
    mode: str
    as_of: dt.date | None
    acts: list[str] | None
    hits: list[HitRecord]
    warnings: list[str]  # what made the search incomplete, e.g. texts without a vector yet


class ArticleResult(ArticleRecord):
    """An article record (pipeline.service.results) whose text is one page of the article."""

    offset: int
    total_chars: int
    next_offset: int | None  # call again with this offset for the rest; null: nothing left


class TextSide(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    act: str
    version_no: int
    valid_from: dt.date | None


class DiffOp(TypedDict):
    op: Literal["equal", "delete", "insert"]
    text: str


# "from" is a keyword: the functional form.
ArticleDiff = TypedDict("ArticleDiff", {"act": str, "article": str, "from": TextSide, "to": TextSide,
                                        "unchanged": bool, "note": "str | None", "ops": list[DiffOp]})
ArticleDiff.__pydantic_config__ = OPEN  # type: ignore[attr-defined]  # pydantic's setting (a functional TypedDict)


class CheckResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    as_of: dt.date | None
    ok: bool  # every citation is ok (false too when the text cites nothing)
    counts: dict[str, int]  # citations per status
    not_checked: int  # citations past the cap (MAX_CHECK_CITATIONS): counted, not checked
    warnings: list[str]  # what the check left out, one line each
    citations: list[CitationRecord]


class ActsResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    acts: list[ActRecord]


class FindActsResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    query: dict
    source: str  # "api": the ELI API; "stored": the database
    total: int
    acts: list[FoundActRecord]
    warnings: list[str]


class CitedArticle(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    citation: str
    act: str
    article: str


class AnswerFragment(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
    citation: str
    act: str
    article: str
    part: int
    score: float
    similarity: float | None


class AnswerResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]  # pydantic's setting, not a key
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


# --- errors ------------------------------------------------------------------------------------------

@contextmanager
def _reported_as(error: type[Exception]) -> Iterator[None]:
    """A failure written for the user (core.errors.is_for_the_user) as a one-line ``error`` (ToolError,
    ResourceError); anything else stays a fault, which the SDK reports and logs."""
    try:
        yield
    except Exception as exc:
        if not is_for_the_user(exc):
            raise
        raise error(one_line(exc)) from exc


async def _until_cancelled(call: Callable[[threading.Event], T]) -> T:
    """``call(stop)`` in a worker thread, as the SDK runs a tool that is not async; where the client cancels the
    request (``notifications/cancelled``) or goes, ``stop`` is set: a search, a check or an answer stops at its
    next step (the service raises Cancelled, which nobody reads) instead of computing for nobody."""
    import anyio.to_thread

    stop = threading.Event()
    try:
        return await anyio.to_thread.run_sync(lambda: call(stop), abandon_on_cancel=True)
    finally:
        stop.set()


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
model only). A hit whose `official` is false holds the article's wording on that date rebuilt from
later changes (`rebuilt_from`), not an official text: say so when you quote it."""

CHECK_DESCRIPTION = f"""\
Sprawdź cytowania przepisów w tekście. Check every citation of a Polish text against the stored acts:
"art. 154 § 1 pkt 2 k.p.", "art. 5 ust. 2 ustawy z dnia … o …", "art. 1 ustawy (Dz. U. z 2024 r. poz.
581)", ranges and lists, a unit cited after its act was named earlier in the sentence. Each citation
gets one `status`: ok, not_found (no such article or unit in the text in force on `as_of`),
not_in_force (repealed, or not yet / no longer in force then, `why` says from when), undetermined
(the texts do not determine when it is in force), act_not_stored (`ingest`: the command that adds it),
ambiguous (`candidates`). Use it on your own answer before giving it: cite only what is ok. At most
{MAX_CHECK_CITATIONS} citations are checked at once: `not_checked` counts the ones past them (`warnings` says so); check
the rest of the text in a further call."""

GET_ARTICLE_DESCRIPTION = """\
Pobierz pełny tekst jednego artykułu ustawy. Get the full text of one article of a stored act:
its chapter headings, whether it is repealed (uchylony), the version and validity dates of the text.
Use it to quote or check an article found by search_law or named by the user ("art. 154 Kodeksu
pracy" -> act DU/2025/277, article "154"; superscripts as 151^1 or 151¹). `as_of` (YYYY-MM-DD):
the text in force on that date; `version`: a stored version of `act`. Long articles come in pages:
when `next_offset` is not null, call again with offset=next_offset. With the text come its legal
context: `references` (the provisions it cites: act, article, unit), `referenced_by` (the stored
articles citing it) and `definitions` (the act's definitions of terms it uses): read them too. And
when it is the law: `in_force` on `as_of` (today without it; null: the texts leave the date
undetermined, `in_force_undetermined` quotes why), `in_force_from`, `in_force_until`, the wording in
force that day (of two a consolidated text prints: `wordings`), `units_not_in_force` (units not yet in
force or ended: never state them as law on that day) and `timeline` ({from, until, kind, unit,
source: {act, unit}, text}: when it and its units entered, were worded, changed, repealed). Later
stored acts' changes come in `changes` ({act, unit, operation, status, applied, note, text, ...}); where
they set, add or repeal whole units, `text` is the wording on the date rebuilt from them and
`official` is false: say so when you quote it (it is not an official text; `official_text`, or
official=true, gives the official one)."""

COMPARE_DESCRIPTION = """Porównaj brzmienie artykułu w dwóch dniach. How one article's wording changed between two
dates: each side's text id, version and date, `official` (false: a wording rebuilt from a later
amending act's changes, listed in `changes`, never an official text), `unchanged`, and the word diff
as `ops` ([{op: equal|delete|insert, text}]). `to_date`: the wording in force on that date (default:
the newest); `from_date`: the older one (default: the wording before the newest change)."""

LIST_ACTS_DESCRIPTION = """\
Lista aktów prawnych w bazie. List the acts that are stored: ELI id, title, type, status, the
current text's version and date, article count and every stored version. Use it to learn which
acts can be searched or cited, and their ids for search_law(acts=...) and get_article."""

FIND_ACTS_DESCRIPTION = """\
Znajdź akty po tytule w API ELI Sejmu. Find Polish acts by words of their title in the Sejm ELI API
(stored=true: only the acts stored here): ELI id, title, type, status, in force, date, the newest
consolidated text (tekst jednolity) of the act, and whether it is stored (`stored`, `stored_act`).
Use it to learn an act's id ("Kodeks pracy" -> DU/1974/141, newest text DU/2025/277) or whether it
can be searched. It only reads: adding an act is the operator's `pipeline ingest --title`."""

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


def build_server(service: Service) -> MCPServer:
    """The MCP server over ``service``; the answer tool only when its answer config names a model (whether
    it answers is found on the first call, as for `pipeline ask`: `pipeline doctor` checks it beforehand)."""

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
    async def search_law(
        query: Annotated[str, Field(description="Pytanie lub temat po polsku / the question or topic, in Polish")],
        k: Annotated[int, Field(ge=1, le=MAX_K, strict=True, description="how many articles")] = 5,
        acts: Annotated[list[str] | None, Field(description="only these ELI ids, e.g. ['DU/2025/277']")] = None,
        as_of: Annotated[dt.date | None, Field(description="texts in force on this date (YYYY-MM-DD)")] = None,
        mode: Annotated[Mode, Field(description="hybrid (best), text (statute words), vector (meaning), "
                                                "sparse (learned word features; the local model only)")] = "hybrid",
    ) -> SearchResult:
        with _reported_as(ToolError):
            found = await _until_cancelled(lambda stop: service.search(query, k=k, mode=mode, acts=acts, as_of=as_of,
                                                                       stop=stop))
        return found.to_dict()  # type: ignore[return-value]  # the record, a plain dict

    @server.tool(name="get_article", title="Tekst artykułu / article text", description=GET_ARTICLE_DESCRIPTION,
                 annotations=READS_STORED_LAW)
    def get_article_text(
        act: Annotated[str, Field(description="ELI id, e.g. DU/2025/277 (or 'Dz.U. 2025 poz. 277')")],
        article: Annotated[str, Field(description="article number: 154, 151^1, 151¹, 22^1c, 'art. 19a'")],
        as_of: Annotated[dt.date | None, Field(description="the text in force on this date (YYYY-MM-DD)")] = None,
        version: Annotated[int | None, Field(ge=1, strict=True, description="a stored version of act (version_no)")] = None,
        offset: Annotated[int, Field(ge=0, strict=True, description="first character of the page")] = 0,
        max_chars: Annotated[int, Field(ge=200, le=50_000, strict=True, description="page size in characters")] = PAGE_CHARS,
        official: Annotated[bool, Field(description="the official text as stored, not the wording rebuilt from later "
                                                    "changes (official: false in the result marks a rebuilt one)")] = False,
    ) -> ArticleResult:
        with _reported_as(ToolError):
            found = service.show(act, article, as_of=as_of, version_no=version, official=official)
        text = found["text"]
        if offset and offset >= len(text):
            raise ToolError(f"offset {offset} is past the end of the article ({len(text)} characters)")
        end = min(len(text), offset + max_chars)
        return {**found, "text": text[offset:end], "offset": offset, "total_chars": len(text),
                "next_offset": end if end < len(text) else None}

    @server.tool(name="check_citations", title="Sprawdź cytowania / check citations", description=CHECK_DESCRIPTION,
                 annotations=READS_STORED_LAW)
    async def check_citations(
        text: Annotated[str, Field(min_length=1, max_length=MAX_CHECK_CHARS,
                                   description="a Polish text citing provisions: a letter, a brief, your own answer")],
        as_of: Annotated[dt.date | None, Field(description="check against the law in force on this date (YYYY-MM-DD)")] = None,
    ) -> CheckResult:
        with _reported_as(ToolError):
            checked = await _until_cancelled(lambda stop: service.check(text, as_of=as_of, stop=stop))
            return checked.to_dict()  # type: ignore[return-value]  # the record, a plain dict

    @server.tool(name="compare_versions", title="Zmiany artykułu / how an article changed",
                 description=COMPARE_DESCRIPTION, annotations=READS_STORED_LAW)
    def compare_versions(
        act: Annotated[str, Field(description="ELI id, e.g. DU/2025/277")],
        article: Annotated[str, Field(description="article number: 154, 151^1")],
        from_date: Annotated[dt.date | None, Field(description="the older text: in force on this date")] = None,
        to_date: Annotated[dt.date | None, Field(description="the newer text: in force on this date")] = None,
    ) -> ArticleDiff:
        with _reported_as(ToolError):
            return service.diff(act, article, from_date=from_date,  # type: ignore[return-value]  # the record, a plain dict
                                to_date=to_date)

    @server.tool(name="list_acts", title="Akty w bazie / stored acts", description=LIST_ACTS_DESCRIPTION,
                 annotations=READS_STORED_LAW)
    def list_stored_acts() -> ActsResult:
        with _reported_as(ToolError):
            return {"acts": service.acts()}  # type: ignore[typeddict-item]  # mypy takes __pydantic_config__ for a key

    # Read-only, but open-world: it asks the ELI API (ingesting stays an operator's command).
    @server.tool(name="find_acts", title="Znajdź akt / find acts by title", description=FIND_ACTS_DESCRIPTION,
                 annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                             open_world_hint=True))
    def find_acts(
        title: Annotated[str, Field(max_length=300, description="words of the title, e.g. 'kodeks pracy'")] = "",
        act_type: Annotated[str | None, Field(max_length=60, description="Ustawa, Rozporządzenie, Obwieszczenie …")] = None,
        in_force: Annotated[bool, Field(description="only acts in force")] = False,
        year: Annotated[int | None, Field(ge=1918, le=2100, strict=True, description="only acts of this year")] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_FIND_LIMIT, strict=True, description="the most acts")] = FIND_LIMIT,
        stored: Annotated[bool, Field(description="search the stored acts instead of the API")] = False,
    ) -> FindActsResult:
        with _reported_as(ToolError):
            found = service.find(ActQuery(title, act_type, in_force, year), limit=limit, offline=stored)
        return found.to_dict()  # type: ignore[return-value]  # the record, a plain dict

    if service.answer_config.configured:
        # Not idempotent (a model's answer varies) and open-world: it sends the question to the answer model.
        @server.tool(name="answer", title="Odpowiedź z cytatami / cited answer", description=ANSWER_DESCRIPTION,
                     annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False,
                                                 open_world_hint=True))
        async def answer(
            question: Annotated[str, Field(description="Pytanie po polsku / the question, in Polish")],
            k: Annotated[int, Field(ge=1, le=MAX_K, strict=True, description="how many fragments the model gets")] = 5,
            acts: Annotated[list[str] | None, Field(description="only these ELI ids")] = None,
            as_of: Annotated[dt.date | None, Field(description="texts in force on this date (YYYY-MM-DD)")] = None,
        ) -> AnswerResult:
            with _reported_as(ToolError):
                asked = await _until_cancelled(lambda stop: service.ask(question, k=k, acts=acts, as_of=as_of,
                                                                        stream=False, stop=stop))
            return asked.to_dict()  # type: ignore[return-value]  # the record, a plain dict

    @server.resource("law://acts", name="acts", mime_type="application/json",
                     description="Akty w bazie / the stored acts (as list_acts returns them)")
    def acts_resource() -> ActsResult:
        with _reported_as(ResourceError):
            return {"acts": service.acts()}  # type: ignore[typeddict-item]  # mypy takes __pydantic_config__ for a key

    @server.resource("law://acts/{publisher}/{year}/{position}/toc", name="table-of-contents",
                     mime_type="text/plain",
                     description="Spis treści aktu / an act's table of contents: its chapters and articles, "
                                 "e.g. law://acts/DU/2025/277/toc")
    def toc_resource(publisher: str, year: str, position: str) -> str:
        with _reported_as(ResourceError):
            toc = service.toc(f"{publisher}/{year}/{position}")
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


def http_app(server: MCPServer, policy: Policy) -> Any:
    """The streamable HTTP application (``/mcp``) behind the listening guard of ``policy``."""
    # The guard checks Host and Origin on every address; the SDK's own check runs only on loopback and
    # allows any port there but no other name (it would refuse a reverse proxy's public name).
    # Stateless: each POST is answered on its own, nothing is kept between requests. With sessions, one
    # client's initialize calls filled the SDK's 10 000 (each kept 30 minutes) in 36 s and every other
    # client got 503; no tool here needs a session (none asks the client anything or streams progress).
    return SecurityHeaders(Guard(server.streamable_http_app(
        stateless_http=True, transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)),
        policy))


def serve(*, http: bool = False, host: str = "127.0.0.1", port: int = 8000, allowed_hosts: tuple[str, ...] = (),
          token_file: Path | None = None) -> None:
    """Run until the client disconnects (stdio) or the process is stopped (HTTP)."""
    from pipeline.core.config import settings
    from pipeline.core.redact import redact_url

    policy = policy_for(host, port, allowed_hosts=allowed_hosts, token_file=token_file) if http else None
    server = build_server(Service())
    # Said first, on stderr (the client's log): a server started with another environment than the
    # shell's (Claude Desktop passes almost none) may be looking at another, empty database.
    cfg = settings()
    where = (f"DATABASE_URL {redact_url(cfg.database_url)}" if cfg.database_url
             else f"the embedded PostgreSQL in {cfg.pgdata}")
    print(f"pipeline mcp: database: {where}", file=sys.stderr, flush=True)
    if http:
        import uvicorn

        assert policy is not None
        warning = exposure_warning("pipeline mcp", host, policy.token, "call its tools (and the answer model)")
        if warning:
            print(warning, file=sys.stderr, flush=True)
        check_port(host, port)
        shown = f"[{host}]" if ":" in host else host
        print(f"pipeline mcp: streamable HTTP on http://{shown}:{port}/mcp", file=sys.stderr, flush=True)
        print(f"pipeline mcp: answers to the hosts {policy.names()}"
              + ("; every request needs the token (Authorization: Bearer …)" if policy.token else ""),
              file=sys.stderr, flush=True)
        uvicorn.Server(server_config(http_app(server, policy), host, port,
                                     log_level="debug" if os.environ.get("PIPELINE_DEBUG") else "warning")).run()
    else:
        server.run("stdio")
