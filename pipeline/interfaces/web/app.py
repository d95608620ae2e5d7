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
import logging
import os
import secrets
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Match, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Scope

from pipeline.core import __version__
from pipeline.core.errors import (AnswerError, ArticleNotFound, Busy, Cancelled, ConfigError, DatabaseError,
                                  EmbedderError, NoVectors, UsageError, is_for_the_user, one_line)
from pipeline.core.limits import MAX_CHECK_CHARS, MAX_CHECK_CITATIONS, MAX_QUESTION_CHARS, MAX_RANGE
from pipeline.core.numbering import printed
from pipeline.core.redact import redact_url
from pipeline.interfaces.listening import (Guard, Policy, Refusal, SecurityHeaders, check_port, exposure_warning,
                                           policy_for, server_config, visible)
from pipeline.interfaces.web import checks, stream
from pipeline.interfaces.web.checks import PageError
from pipeline.interfaces.web.render import (CHECK_STATUSES, amending_units, answer_html, badge, date_pl, highlight,
                                            marked_text, timeline_kind, units)
from pipeline.interfaces.web.urls import article_url, search_url
from pipeline.service import Service
from pipeline.service.results import ActRecord

log = logging.getLogger("pipeline.web")

ACTS_TTL = 30.0  # seconds the act list (the search form's filter) is reused: ingest is a CLI's job, rare
HIT_K = 5
EMPTY_FORM: dict[str, Any] = {"q": "", "acts": [], "as_of": None, "choices": [], "open": False, "focus": False}
# What a visitor refused by the listening guard (pipeline.interfaces.listening) reads.
REFUSALS = {
    "host": "Ten serwer nie odpowiada pod tym adresem.",
    "origin": "Żądanie wysłane z innej strony zostało odrzucone.",
    "token": "Ta strona wymaga logowania: otwórz adres z tokenem (…/?token=…) od administratora; przeglądarka go "
             "zapamięta. Jeśli już to zrobiłeś(-aś) w tej przeglądarce, przejdź do wyszukiwania.",
    "guesses": "Z tego adresu podano zbyt wiele błędnych tokenów. Spróbuj ponownie za minutę.",
}


class Web:
    """The pages over one service (one per process: its pool is shared by every visitor)."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.templates = Environment(loader=PackageLoader("pipeline.interfaces", "templates"), autoescape=True,
                                     trim_blocks=True, lstrip_blocks=True)
        self.templates.filters["printed"] = printed  # numbers as a Polish reader writes them: art. 151¹
        self.templates.globals.update(article_url=article_url, search_url=search_url, badge=badge,
                                      amending_units=amending_units,
                                      timeline_kind=timeline_kind,
                                      highlight=highlight, date=date_pl, version=__version__,
                                      max_question=MAX_QUESTION_CHARS)
        self._acts: tuple[float, list[ActRecord]] | None = None
        self._acts_lock = threading.Lock()

    # -- helpers --

    def render(self, name: str, status: int = 200, headers: dict[str, str] | None = None, **context: Any) -> HTMLResponse:
        html = self.templates.get_template(name).render(**context)
        return HTMLResponse(html, status_code=status, headers=headers)

    def stored_acts(self) -> list[ActRecord]:
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
        q = checks.question(request, required=False)
        acts, as_of = checks.acts_filter(request), checks.date(request, "as_of")
        context: dict[str, Any] = {"form": self._form(q, acts, as_of, focus=not q), "title": "Szukaj w przepisach"}
        if q:
            found = self.service.search(q, k=HIT_K, acts=acts or None, as_of=as_of, text_if_no_vectors=True,
                                        stop=_left(request))
            context.update(
                title=f"{q[:60]} – wyszukiwanie", hits=found.records(), stems=found.stems, refused=found.refused,
                refusal=found.not_found, warnings=[w for w in found.warnings if w != found.refusal],
                answer_url=search_url(q, acts, as_of, "/answer"), stream_url=search_url(q, acts, as_of, "/answer/stream"),
                with_model=self.service.answer_config.configured)
        return self.render("search.html", **context)

    def answer(self, request: Request) -> Response:
        """The answer without JavaScript: written whole, then shown (the stream's fallback)."""
        q = checks.question(request)
        acts, as_of = checks.acts_filter(request), checks.date(request, "as_of")
        asked = self.service.ask(q, acts=acts or None, as_of=as_of, stream=False, stop=_left(request))
        return self.render("answer.html", title=f"{q[:60]} – odpowiedź", form=self._form(q, acts, as_of),
                           answer=self._answer_context(asked, as_of),
                           back=search_url(q, acts, as_of))

    def _answer_context(self, asked: Any, as_of: dt.date | None) -> dict:
        result = asked.answer
        return {
            "html": answer_html(asked.segments(), as_of), "refused": result.refused, "model": result.model,
            "citations": [{"label": f"{a}, art. {n}", "url": article_url(a, n, as_of=as_of)} for a, n in result.citations],
            "currency_warning": asked.currency_warning,
            "warnings": asked.warnings + asked.answer_warnings,
            "offline": result.model is None and not result.refused,
        }

    async def answer_stream(self, request: Request) -> Response:
        """Server-sent events: ``token`` (a JSON string, the answer as the model writes it), then ``done``
        (``{"html": …}``, the whole answer rendered, citations as links) or ``failure`` (``{"message"}``)."""
        try:
            q = checks.question(request)
            acts, as_of = checks.acts_filter(request), checks.date(request, "as_of")
        except PageError as exc:
            return stream.events_response(stream.one_event("failure", {"message": exc.message}))
        return stream.events_response(stream.answer_events(
            lambda on_token, gone: self.service.ask(q, acts=acts or None, as_of=as_of, on_token=on_token, stop=gone),
            done=lambda asked: {"html": self.templates.get_template("_answer.html").render(
                answer=self._answer_context(asked, as_of))},
            failure=lambda exc: _page_error(exc, request).line))

    def acts(self, request: Request) -> Response:
        acts = self.service.acts()
        return self.render("acts.html", title="Akty w bazie", acts=acts, form=self._form())

    def act(self, request: Request) -> Response:
        act, as_of = checks.act_from_path(request), checks.date(request, "as_of")
        toc = self.service.toc(act, as_of=as_of)
        return self.render("act.html", title=f"{toc.get('act_title') or act}", toc=toc, act=act, as_of=as_of,
                           form=self._form(acts=[act], as_of=as_of))

    def article(self, request: Request) -> Response:
        act, as_of, version = checks.act_from_path(request), checks.date(request, "as_of"), checks.version(request)
        number = request.path_params["article"]
        if as_of and version:
            raise PageError(400, "Podaj datę albo wersję, nie obie naraz.")
        official = request.query_params.get("official") == "1"  # the official text, not the rebuilt wording
        found = self.service.show(act, number, as_of=as_of, version_no=version, official=official)
        versions = found["versions"]
        return self.render("article.html", title=f"{found['act']} art. {found['article']}", a=found,
                           units=units(found["text"]), versions=versions, has_diff=len(versions) > 1, as_of=as_of,
                           official_asked=official, form=self._form(acts=[found["act"]], as_of=as_of))

    def check(self, request: Request, text: str = "", as_of: dt.date | None = None) -> Response:
        """"Sprawdź cytowania": a text pasted in (POST, so that a letter stays out of URLs and logs), each
        of its citations checked and marked in it."""
        context: dict[str, Any] = {"title": "Sprawdź cytowania", "text": text, "as_of": as_of, "form": self._form(),
                                   "max_chars": MAX_CHECK_CHARS, "max_citations": MAX_CHECK_CITATIONS,
                                   "max_range": MAX_RANGE}
        if text.strip():
            checked = self.service.check(text, as_of=as_of, stop=_left(request))
            context.update(checked=checked.to_dict(), marked=marked_text(text, checked.citations),
                           statuses=CHECK_STATUSES)
        return self.render("check.html", **context)

    def diff(self, request: Request) -> Response:
        act = checks.act_from_path(request)
        number = request.path_params["article"]
        result = self.service.diff(act, number, from_date=checks.date(request, "from"), to_date=checks.date(request, "to"))
        return self.render("diff.html", title=f"{act} art. {number}: zmiany", d=result, act=act, article=number,
                           form=self._form(acts=[act]))


def _left(request: Request) -> threading.Event | None:
    """Set when the visitor has gone (:func:`build_app`'s pages watch for it): the service stops computing for nobody."""
    return getattr(request.state, "left", None)


async def _watch_for_leaving(request: Request, left: threading.Event) -> None:
    """Set ``left`` when the server says the visitor disconnected (the request's body is read by then: a GET has
    none, a POST's form was read before the page ran)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    left.set()


def _page_error(exc: BaseException, request: Request) -> PageError:
    """A PageError for any failure: the visitor reads Polish, the log gets one line (PIPELINE_DEBUG: the traceback).
    A server's failure (5xx) shows the visitor an id, never its words: they name the database's host, user,
    socket; the log's line carries the same id."""
    if isinstance(exc, PageError):
        return exc
    detail = one_line(exc) if is_for_the_user(exc) else None
    if isinstance(exc, Cancelled):  # the visitor left: nobody reads this page (499: nginx's "client closed request")
        error = PageError(499, "Strona została zamknięta przed odpowiedzią.", detail)
    elif isinstance(exc, NoVectors):  # the search page searches the text alone; an answer needs the vectors
        error = PageError(503, "Odpowiedź nie jest jeszcze możliwa: w bazie nie ma jeszcze wektorów tekstów "
                               "(administrator uruchamia pipeline embed). Wyszukiwanie w tekście przepisów działa.")
        error.link = search_url(checks.question(request, required=False), checks.acts_filter(request),
                                checks.date(request, "as_of"))
    elif isinstance(exc, Busy):  # as many searches or answers as the service runs at once: no queue
        error = PageError(503, f"Serwer obsługuje teraz wielu czytelników naraz. Spróbuj za {exc.retry_after} s.",
                          detail, retry_after=exc.retry_after)
    elif isinstance(exc, ArticleNotFound):  # ActNotFound too
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
    expected = error.status < 500 or error.retry_after is not None or isinstance(exc, NoVectors)
    if error.status >= 500 and not isinstance(exc, NoVectors):
        error.detail, error.error_id = None, secrets.token_hex(4)
    # A URL's path and an error's words come from the visitor: control characters are escaped, so that no
    # request writes a line of its own into the log; a password in a URL or conninfo never reaches it.
    log.log(logging.WARNING if expected else logging.ERROR, "%s %s -> %d%s: %s: %s", request.method,
            visible(request.url.path), error.status, f" [error {error.error_id}]" if error.error_id else "",
            type(exc).__name__, visible(redact_url(one_line(exc))) if str(exc).strip() else "",
            exc_info=bool(os.environ.get("PIPELINE_DEBUG")))
    return error


def build_app(service: Service, *, warm: bool = True, policy: Policy | None = None) -> ASGIApp:
    """The web application over ``service`` (closed when the application stops), behind the listening
    guard of ``policy`` (default: loopback names on any port, no token) and the security headers."""
    web = Web(service)

    def page(handler: Callable[[Request], Response]) -> Callable[[Request], Any]:
        # Sync pages run in Starlette's thread pool: each call takes its own pooled connection.
        from starlette.concurrency import run_in_threadpool

        async def endpoint(request: Request) -> Response:
            if request.method == "HEAD" and handler in model_pages:  # never make the answer model run for a HEAD
                return Response(status_code=200, media_type="text/html; charset=utf-8")
            # A visitor who leaves sets request.state.left: a search, an answer or a check stops at its next step.
            request.state.left = threading.Event()
            watcher = asyncio.ensure_future(_watch_for_leaving(request, request.state.left))
            try:
                return await run_in_threadpool(handler, request)
            except Exception as exc:
                error = _page_error(exc, request)
                return web.render("error.html", status=error.status, headers=error.headers, title="Błąd",
                                  error=error, form=web._form())
            finally:
                watcher.cancel()

        return endpoint

    async def checked_page(request: Request) -> Response:
        try:
            text, as_of = await checks.check_form(request)
        except PageError as error:
            return web.render("error.html", status=error.status, title="Błąd", error=error, form=web._form())
        return await page(lambda r: web.check(r, text, as_of))(request)

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        if status == 404 and (twin := _slash_twin(request.scope, app.router.routes)):
            return RedirectResponse(twin, 307)
        message = "Nie ma takiej strony." if status == 404 else "Ta strona służy tylko do czytania."
        # A 405 says which methods the page takes (Allow, RFC 9110 § 15.5.6), as Starlette's own does.
        return web.render("error.html", status=status, headers=getattr(exc, "headers", None), title="Błąd",
                          error=PageError(status, message), form=EMPTY_FORM)

    async def server_error(request: Request, exc: Exception) -> Response:
        error = _page_error(exc, request)
        return web.render("error.html", status=error.status, headers=error.headers, title="Błąd", error=error,
                          form=EMPTY_FORM)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        if warm:  # the first visitor pays the query, not the model load and the dictionary
            threading.Thread(target=service.warm, name="warm-up", daemon=True).start()
        try:
            yield
        finally:
            service.close()

    read = ["GET", "HEAD"]
    model_pages = {web.answer}  # pages that call the answer model

    async def answer_stream(request: Request) -> Response:
        if request.method == "HEAD":  # the stream's headers, without asking the model
            return Response(status_code=200, media_type="text/event-stream")
        return await web.answer_stream(request)

    art = "/acts/{publisher}/{year:int}/{position:int}"
    routes = [
        Route("/", page(web.search), methods=read),
        Route("/search", page(web.search), methods=read),
        Route("/answer", page(web.answer), methods=read),
        Route("/answer/stream", answer_stream, methods=read),
        Route("/acts", page(web.acts), methods=read),
        Route(art, page(web.act), methods=read),
        Route(art + "/art/{article}", page(web.article), methods=read),
        Route(art + "/art/{article}/diff", page(web.diff), methods=read),
        Route("/check", page(web.check), methods=read),
        Route("/check", checked_page, methods=["POST"]),
        Route("/favicon.ico", lambda request: RedirectResponse("/static/favicon.svg", 301), methods=read),
        Mount("/static", StaticFiles(packages=[("pipeline.interfaces", "static")]), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={404: not_found, 405: not_found, 500: server_error})
    # Starlette's own trailing-slash redirect writes an absolute URL from the request's Host; not_found
    # redirects with a relative one instead.
    app.router.redirect_slashes = False

    def refused(refusal: Refusal, scope: Scope) -> Response:
        return web.render("error.html", status=refusal.status, headers=refusal.headers, title="Błąd",
                          error=PageError(refusal.status, REFUSALS[refusal.reason], refusal.message), form=EMPTY_FORM)

    policy = policy or Policy.listening("127.0.0.1", None)
    web.templates.globals["logout"] = policy.token is not None  # the footer's button (pipeline.interfaces.listening.LOGOUT)
    guarded = Guard(app, policy, login=True, refuse=refused)
    return SecurityHeaders(guarded)


def _slash_twin(scope: Scope, routes: list) -> str | None:
    """The same path with its trailing slash toggled, as a relative URL, when only that one is a page."""
    path = scope["path"]
    other = path[:-1] if path.endswith("/") else path + "/"
    if path == "/" or other.startswith("//") or any(r.matches(scope)[0] != Match.NONE for r in routes):
        return None
    if not any(r.matches({**scope, "path": other})[0] != Match.NONE for r in routes):
        return None
    raw = (scope.get("raw_path") or path.encode()).decode("latin-1")
    location = raw[:-1] if raw.endswith("/") else raw + "/"
    if not location.startswith("/") or location.startswith("//"):
        return None
    query = scope.get("query_string", b"").decode("latin-1")
    return location + (f"?{query}" if query else "")


# --- the command --------------------------------------------------------------------------------------

def serve(*, host: str = "127.0.0.1", port: int = 8000, pool_size: int = 4, allowed_hosts: tuple[str, ...] = (),
          token_file: Path | None = None) -> None:
    """Run the web page until the process is stopped (Ctrl+C)."""
    import uvicorn

    from pipeline.core.config import settings

    # One line per failed page on stderr (the visitor reads a Polish message, never a traceback).
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        stream=sys.stderr)
    policy = policy_for(host, port, allowed_hosts=allowed_hosts, token_file=token_file)
    warning = exposure_warning("pipeline serve", host, policy.token,
                               "read the page and make it ask the answer model")
    if warning:
        print(warning, file=sys.stderr, flush=True)
    check_port(host, port)
    cfg = settings()
    where = (f"DATABASE_URL {redact_url(cfg.database_url)}" if cfg.database_url
             else f"the embedded PostgreSQL in {cfg.pgdata}")
    print(f"pipeline serve: database: {where}", file=sys.stderr, flush=True)
    shown = f"[{host}]" if ":" in host else host
    print(f"pipeline serve: http://{shown}:{port}/ (Ctrl+C stops)", file=sys.stderr, flush=True)
    print(f"pipeline serve: answers to the hosts {policy.names()}"
          + ("; every request needs the token (a browser: open the page once with ?token=…)" if policy.token else ""),
          file=sys.stderr, flush=True)
    app = build_app(Service(pool_size=pool_size), policy=policy)
    uvicorn.Server(server_config(app, host, port, log_level="warning", access_log=False)).run()
