"""`pipeline serve`: the product as a web page, for readers who use neither a terminal nor an MCP client.

Server-rendered HTML (Jinja2 templates in ``templates/``, autoescaped) over the same
:class:`pipeline.Service` as the CLI and the MCP server, giving the same records (docs/results.md).
Every page works without JavaScript; ``static/web.js`` only streams the answer in (server-sent events
from ``/answer/stream``). Read-only: only GET and HEAD are routed. The URLs are an interface
(docs/web.md): ``/search?q=…&act=…&as_of=…``, ``/acts``, ``/acts/DU/2025/277``,
``/acts/DU/2025/277/art/151%5E1?as_of=…``, ``…/art/154/diff?from=…&to=…``, ``/answer?q=…``.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from pipeline.answering.answer import NOT_FOUND, Asked, answer_warnings
from pipeline.answering.citations import parse_citations
from pipeline.answering.extractive import stem
from pipeline.core import __version__
from pipeline.core.act_id import parse_act_id
from pipeline.core.errors import (AnswerError, ArticleNotFound, ConfigError, DatabaseError, EmbedderError,
                                  InvalidActId, UsageError, is_for_the_user, one_line)
from pipeline.core.limits import MAX_QUESTION_CHARS, check_question
from pipeline.service import Service
from pipeline.interfaces.listening import check_port

log = logging.getLogger("pipeline.web")

ACTS_TTL = 30.0  # seconds the act list (the search form's filter) is reused: ingest is a CLI's job, rare
MAX_ANSWERS = 8  # answers written at once; more visitors are told to try again (each holds a model call)
HIT_K = 5

# Content-Security-Policy: our own script and style only, nothing inline, no frames: an act's text or a
# question that slipped past escaping still could not run code or load anything.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                               "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


class PageError(Exception):
    """What a visitor is told (Polish), with the HTTP status; ``detail`` is the library's own line."""

    def __init__(self, status: int, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.detail = status, message, detail


# --- input: each parameter checked here, with a Polish message, before the service sees it -----------

def _question(request: Request, required: bool = True) -> str:
    q = request.query_params.get("q", "")
    if not q.strip():
        if required:
            raise PageError(400, "Wpisz pytanie.")
        return ""
    try:
        check_question(q)  # the library's rule; the page words its refusal in Polish
    except UsageError as exc:
        if len(q) > MAX_QUESTION_CHARS:
            raise PageError(400, f"Pytanie jest za długie: {len(q)} znaków (najwyżej {MAX_QUESTION_CHARS}). "
                                 "Zapytaj o jedną rzecz, w kilku zdaniach.") from None
        raise PageError(400, "Tego pytania nie da się wyszukać.", str(exc)) from None
    return q


def _date(request: Request, name: str) -> dt.date | None:
    value = request.query_params.get(name, "").strip()
    if not value:
        return None
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError(value)
        return dt.date.fromisoformat(value)
    except ValueError:
        raise PageError(400, f"Niepoprawna data: „{value}”. Podaj ją jako RRRR-MM-DD, np. 2025-01-01.") from None


def _acts_filter(request: Request) -> list[str]:
    acts = []
    for value in request.query_params.getlist("act"):
        if value.strip():
            try:
                acts.append(str(parse_act_id(value.strip())))
            except InvalidActId:
                raise PageError(400, f"Niepoprawny identyfikator aktu: „{value}” (np. DU/2025/277).") from None
    return acts


def _act_from_path(request: Request) -> str:
    p = request.path_params
    try:
        return str(parse_act_id(f"{p['publisher']}/{p['year']}/{p['position']}"))
    except InvalidActId:
        raise PageError(404, "Nie ma takiego aktu: identyfikator ma postać DU/2025/277.") from None


def _version(request: Request) -> int | None:
    value = request.query_params.get("version", "").strip()
    if not value:
        return None
    if not value.isdigit() or not 1 <= int(value) <= 1_000_000:
        raise PageError(400, f"Niepoprawny numer wersji: „{value}”.")
    return int(value)


# --- URLs: built in one place, as docs/web.md documents them -----------------------------------------

def article_url(act: str, article: str, *, as_of: dt.date | None = None, version: int | None = None) -> str:
    query = {k: v for k, v in (("as_of", as_of), ("version", version)) if v}
    # An article number as the product writes it (151^1): '^' is not safe in a path, so it is encoded.
    return f"/acts/{act}/art/{quote(article, safe='')}" + (f"?{urlencode(query)}" if query else "")


def search_url(q: str, acts: list[str] | None = None, as_of: dt.date | None = None, path: str = "/search") -> str:
    query: list[tuple[str, Any]] = [("q", q)] + [("act", a) for a in acts or []]
    if as_of:
        query.append(("as_of", as_of.isoformat()))
    return f"{path}?{urlencode(query)}"


# --- rendering helpers ----------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")
_UNIT = re.compile(r"^(?:(?P<par>§\s*\d+\w*\.)|(?P<ust>\d+\w*\.)(?=\s)|(?P<pkt>\d+\w*\))|(?P<lit>[a-ząćęłńóśźż]{1,2}\))|(?P<tir>[–-]\s))")


def highlight(text: str, query: str) -> Markup:
    """``text`` escaped, the words that share a stem with the question's (the offline answer's crude
    Polish stem, answering.extractive.stem) in <mark>."""
    stems = {stem(w) for w in _WORD.findall(query) if len(w) >= 4}
    if not stems:
        return escape(text)
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(stems, key=len, reverse=True))) + r")\w*",
                         re.IGNORECASE)
    out, pos = [], 0
    for m in pattern.finditer(text):
        out.append(escape(text[pos:m.start()]))
        out.append(Markup("<mark>%s</mark>") % m.group(0))
        pos = m.end()
    out.append(escape(text[pos:]))
    return Markup("").join(out)


def units(text: str) -> list[dict]:
    """The article's lines as units (§, ust., pkt, lit., tiret) for indentation and anchors."""
    found = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        m = _UNIT.match(line.strip())
        kind = next((k for k, v in m.groupdict().items() if v), "") if m else ""
        anchor = None
        if kind in ("par", "ust"):
            number = re.sub(r"[^\w]", "", m.group(kind))
            anchor = f"{kind}-{number}"
        found.append({"kind": kind or "text", "text": line.strip(), "anchor": anchor})
    return found


def badge(currency: dict | None) -> dict:
    """The currency badge: a short Polish label and a kind for its colour; the full note goes in its title."""
    if not currency:
        return {"kind": "unknown", "label": "aktualność nieznana", "note": ""}
    note = currency.get("note") or ""
    if currency.get("in_force") == "NOT_IN_FORCE":
        return {"kind": "stale", "label": "nie obowiązuje", "note": note}
    amended = currency.get("amended_after")
    if amended:
        latest = max(amended, key=lambda a: str(a.get("date") or ""))["eli"]
        more = len(amended) - 1
        return {"kind": "stale", "label": f"zmieniony później: {latest}" + (f" (i {more} wcześniej)" if more else ""),
                "note": note}
    if amended is None:
        return {"kind": "unknown", "label": "aktualność nieznana", "note": note}
    return {"kind": "current", "label": "aktualny", "note": note}


def answer_html(text: str, as_of: dt.date | None) -> Markup:
    """The answer's text escaped, in paragraphs, each citation a link to its article."""
    paragraphs = []
    for block in re.split(r"\n\s*\n", text.strip()):
        out, pos = [], 0
        for m in re.finditer(r"\[[^\[\]\n]{4,200}\]", block):
            cited = parse_citations(m.group(0))
            if not cited:
                continue
            act, article = cited[0]
            out.append(escape(block[pos:m.start()]))
            out.append(Markup('<a class="cite" href="%s">%s</a>') % (article_url(act, article, as_of=as_of), m.group(0)))
            pos = m.end()
        out.append(escape(block[pos:]))
        paragraphs.append(Markup("<p>%s</p>") % Markup("<br>").join(Markup("").join(out).split("\n")))
    return Markup("").join(paragraphs)


def _date_pl(value: Any) -> str:
    if not value:
        return "(data nieznana)"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)


# --- the application ----------------------------------------------------------------------------------

class Web:
    """The pages over one service (one per process: its pool is shared by every visitor)."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.templates = Environment(loader=PackageLoader("pipeline.interfaces", "templates"), autoescape=True,
                                     trim_blocks=True, lstrip_blocks=True)
        self.templates.globals.update(article_url=article_url, search_url=search_url, badge=badge,
                                      highlight=highlight, date=_date_pl, version=__version__,
                                      max_question=MAX_QUESTION_CHARS)
        self._acts: tuple[float, list[dict]] | None = None
        self._acts_lock = threading.Lock()
        self._answers = threading.BoundedSemaphore(MAX_ANSWERS)

    # -- helpers --

    def render(self, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.templates.get_template(name).render(**context)
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def stored_acts(self) -> list[dict]:
        """Service.acts(), reused for ACTS_TTL seconds (the search form lists them on every page)."""
        with self._acts_lock:
            if self._acts and time.monotonic() - self._acts[0] < ACTS_TTL:
                return self._acts[1]
        acts = self.service.acts()
        with self._acts_lock:
            self._acts = (time.monotonic(), acts)
        return acts

    def _form(self, q: str = "", acts: list[str] | None = None, as_of: dt.date | None = None,
              focus: bool = False) -> dict:
        try:
            choices = [{"act": a["act"], "title": a["title"] or a["act"]} for a in self.stored_acts()]
        except Exception as exc:  # the form still shows; the page's own call reports the error
            log.warning("act list: %s", one_line(exc))
            choices = []
        # Open filters and the focused box belong to the search page; an article page keeps its text in view.
        return {"q": q, "acts": acts or [], "as_of": as_of, "choices": choices, "open": bool(q and (acts or as_of)),
                "focus": focus}

    # -- pages --

    def search(self, request: Request) -> Response:
        q = _question(request, required=False)
        acts, as_of = _acts_filter(request), _date(request, "as_of")
        context: dict[str, Any] = {"form": self._form(q, acts, as_of, focus=not q), "title": "Szukaj w przepisach"}
        if q:
            found = self.service.search(q, k=HIT_K, acts=acts or None, as_of=as_of)
            context.update(
                title=f"{q[:60]} – wyszukiwanie", hits=found.records(), refused=found.refused,
                refusal=NOT_FOUND, warnings=[w for w in found.warnings if w != found.refusal],
                answer_url=search_url(q, acts, as_of, "/answer"), stream_url=search_url(q, acts, as_of, "/answer/stream"),
                with_model=self.service.answer_config.configured)
        return self.render("search.html", **context)

    def answer(self, request: Request) -> Response:
        """The answer without JavaScript: written whole, then shown (the stream's fallback)."""
        q = _question(request)
        acts, as_of = _acts_filter(request), _date(request, "as_of")
        asked = self.service.ask(q, acts=acts or None, as_of=as_of, stream=False)
        return self.render("answer.html", title=f"{q[:60]} – odpowiedź", form=self._form(q, acts, as_of),
                           answer=self._answer_context(asked, as_of),
                           back=search_url(q, acts, as_of))

    def _answer_context(self, asked: Asked, as_of: dt.date | None) -> dict:
        result = asked.answer
        return {
            "html": answer_html(result.text, as_of), "refused": result.refused, "model": result.model,
            "citations": [{"label": f"{a}, art. {n}", "url": article_url(a, n, as_of=as_of)} for a, n in result.citations],
            "currency_warning": asked.currency_warning,
            "warnings": asked.warnings + answer_warnings(result),
            "offline": result.model is None and not result.refused,
        }

    async def answer_stream(self, request: Request) -> Response:
        """Server-sent events: ``token`` (a JSON string, the answer as the model writes it), then ``done``
        (``{"html": …}``, the whole answer rendered, citations as links) or ``failure`` (``{"message"}``)."""
        try:
            q = _question(request)
            acts, as_of = _acts_filter(request), _date(request, "as_of")
        except PageError as exc:
            return _events_response(_one_event("failure", {"message": exc.message}))
        if not self._answers.acquire(blocking=False):
            return _events_response(_one_event("failure", {"message": "Serwer pisze teraz wiele odpowiedzi naraz; "
                                                                      "spróbuj za chwilę."}))
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        gone = threading.Event()

        def put(kind: str, value: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))
            except RuntimeError:  # the server stopped while the answer was written
                pass

        def on_token(piece: str) -> None:
            if gone.is_set():
                raise _VisitorLeft  # stop paying for tokens nobody reads
            put("token", piece)

        def work() -> None:
            try:
                put("done", self.service.ask(q, acts=acts or None, as_of=as_of, on_token=on_token))
            except _VisitorLeft:
                pass
            except Exception as exc:
                put("error", exc)
            finally:
                self._answers.release()

        threading.Thread(target=work, name="answer", daemon=True).start()

        async def events() -> AsyncIterator[str]:
            try:
                while True:
                    kind, value = await queue.get()
                    if kind == "token":
                        yield _event("token", value)
                    elif kind == "done":
                        html = self.templates.get_template("_answer.html").render(
                            answer=self._answer_context(value, as_of))
                        yield _event("done", {"html": html})
                        return
                    else:
                        failure = _page_error(value, request)
                        yield _event("failure", {"message": failure.message})
                        return
            finally:
                gone.set()

        return _events_response(events())

    def acts(self, request: Request) -> Response:
        acts = self.service.acts()
        return self.render("acts.html", title="Akty w bazie", acts=acts, form=self._form())

    def act(self, request: Request) -> Response:
        act, as_of = _act_from_path(request), _date(request, "as_of")
        toc = self.service.toc(act, as_of=as_of)
        return self.render("act.html", title=f"{toc.get('act_title') or act}", toc=toc, act=act, as_of=as_of,
                           form=self._form(acts=[act], as_of=as_of))

    def article(self, request: Request) -> Response:
        act, as_of, version = _act_from_path(request), _date(request, "as_of"), _version(request)
        number = request.path_params["article"]
        if as_of and version:
            raise PageError(400, "Podaj datę albo wersję, nie obie naraz.")
        found = self.service.show(act, number, as_of=as_of, version_no=version)
        versions = self._versions(found)
        has_diff = len(versions) > 1
        return self.render("article.html", title=f"{found['act']} art. {found['article']}", a=found,
                           units=units(found["text"]), versions=versions, has_diff=has_diff, as_of=as_of,
                           form=self._form(acts=[found["act"]], as_of=as_of))

    def _versions(self, found: dict) -> list[dict]:
        """Every stored version of the article's act (its consolidated texts too), oldest first."""
        for record in self.stored_acts():
            versions = record.get("versions") or []
            if found["act"] in (record["act"], record["base_act"]) or any(v["act"] == found["act"] for v in versions):
                return versions
        return []

    def diff(self, request: Request) -> Response:
        act = _act_from_path(request)
        number = request.path_params["article"]
        result = self.service.diff(act, number, from_date=_date(request, "from"), to_date=_date(request, "to"))
        return self.render("diff.html", title=f"{act} art. {number}: zmiany", d=result, act=act, article=number,
                           form=self._form(acts=[act]))


class _VisitorLeft(Exception):
    """The browser closed the answer's stream: the model call is abandoned."""


def _event(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _one_event(name: str, data: Any) -> AsyncIterator[str]:
    yield _event(name, data)


def _events_response(body: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(body, media_type="text/event-stream",
                             headers={**SECURITY_HEADERS, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _page_error(exc: BaseException, request: Request) -> PageError:
    """A PageError for any failure: the visitor reads Polish, the log gets one line (PIPELINE_DEBUG: the traceback)."""
    if isinstance(exc, PageError):
        return exc
    detail = one_line(exc) if is_for_the_user(exc) else None
    if isinstance(exc, ArticleNotFound):  # ActNotFound too
        error = PageError(404, "Nie ma takiego artykułu ani aktu w bazie (albo nie obowiązywał w tym dniu).", detail)
    elif isinstance(exc, UsageError):
        error = PageError(400, "Tego zapytania nie da się wykonać.", detail)
    elif isinstance(exc, DatabaseError):
        error = PageError(503, "Baza danych jest chwilowo niedostępna. Spróbuj za chwilę.", detail)
    elif isinstance(exc, EmbedderError):
        error = PageError(502, "Model wyszukiwania nie odpowiada. Spróbuj za chwilę.", detail)
    elif isinstance(exc, AnswerError):
        error = PageError(502, "Model odpowiedzi nie odpowiada. Wyniki wyszukiwania są nadal dostępne.", detail)
    elif isinstance(exc, ConfigError):
        error = PageError(500, "Serwer jest źle skonfigurowany.", detail)
    else:
        error = PageError(500, "Coś poszło nie tak po stronie serwera. Spróbuj ponownie.", None)
    level = logging.WARNING if error.status < 500 else logging.ERROR
    log.log(level, "%s %s -> %d: %s: %s", request.method, request.url.path, error.status, type(exc).__name__,
            one_line(exc) if str(exc).strip() else "", exc_info=bool(os.environ.get("PIPELINE_DEBUG")))
    return error


def build_app(service: Service, *, warm: bool = True) -> Starlette:
    """The web application over ``service`` (closed when the application stops)."""
    web = Web(service)

    def page(handler: Callable[[Request], Response]) -> Callable[[Request], Any]:
        # Sync pages run in Starlette's thread pool: each call takes its own pooled connection.
        from starlette.concurrency import run_in_threadpool

        async def endpoint(request: Request) -> Response:
            try:
                return await run_in_threadpool(handler, request)
            except Exception as exc:
                error = _page_error(exc, request)
                return web.render("error.html", status=error.status, title="Błąd", error=error, form=web._form())

        return endpoint

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        message = "Nie ma takiej strony." if status == 404 else "Ta strona służy tylko do czytania."
        return web.render("error.html", status=status, title="Błąd", error=PageError(status, message),
                          form={"q": "", "acts": [], "as_of": None, "choices": [], "open": False, "focus": False})

    async def server_error(request: Request, exc: Exception) -> Response:
        error = _page_error(exc, request)
        return web.render("error.html", status=error.status, title="Błąd", error=error,
                          form={"q": "", "acts": [], "as_of": None, "choices": [], "open": False, "focus": False})

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        if warm:  # the first visitor pays the query, not the model load and the dictionary
            threading.Thread(target=service.warm, name="warm-up", daemon=True).start()
        try:
            yield
        finally:
            service.close()

    read = ["GET", "HEAD"]
    art = "/acts/{publisher}/{year:int}/{position:int}"
    routes = [
        Route("/", page(web.search), methods=read),
        Route("/search", page(web.search), methods=read),
        Route("/answer", page(web.answer), methods=read),
        Route("/answer/stream", web.answer_stream, methods=read),
        Route("/acts", page(web.acts), methods=read),
        Route(art, page(web.act), methods=read),
        Route(art + "/art/{article}", page(web.article), methods=read),
        Route(art + "/art/{article}/diff", page(web.diff), methods=read),
        Route("/favicon.ico", lambda request: RedirectResponse("/static/favicon.svg", 301), methods=read),
        Mount("/static", StaticFiles(packages=[("pipeline.interfaces", "static")]), name="static"),
    ]
    return Starlette(routes=routes, lifespan=lifespan,
                     exception_handlers={404: not_found, 405: not_found, 500: server_error})


# --- the command --------------------------------------------------------------------------------------

def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(*, host: str = "127.0.0.1", port: int = 8000, pool_size: int = 4) -> None:
    """Run the web page until the process is stopped (Ctrl+C)."""
    import uvicorn

    from pipeline.core.config import settings
    from pipeline.core.redact import redact_url

    # One line per failed page on stderr (the visitor reads a Polish message, never a traceback).
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        stream=sys.stderr)
    if not is_loopback(host):
        print(f"pipeline serve: warning: listening on {host}: anyone who can reach this machine can read the "
              "page and make it ask the answer model (there is no login); use 127.0.0.1 unless you mean it",
              file=sys.stderr, flush=True)
    check_port(host, port)
    cfg = settings()
    where = (f"DATABASE_URL {redact_url(cfg.database_url)}" if cfg.database_url
             else f"the embedded PostgreSQL in {cfg.pgdata}")
    print(f"pipeline serve: database: {where}", file=sys.stderr, flush=True)
    shown = f"[{host}]" if ":" in host else host
    print(f"pipeline serve: http://{shown}:{port}/ (Ctrl+C stops)", file=sys.stderr, flush=True)
    app = build_app(Service(pool_size=pool_size))
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, server_header=False)
