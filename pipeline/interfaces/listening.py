"""What the faces that listen on a port (`pipeline mcp --http`, `pipeline serve`) check: before they listen
(the port, the token, whether to warn) and on every request (:class:`Guard`: the Host and Origin
headers against the allowed hosts, and the bearer token when one is set, its guesses, the page's login);
the headers every response of either sends (:class:`SecurityHeaders`); and the server both run on
(:func:`server_config`: a bound on the time a request's headers take). One rule for both faces."""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import logging
import math
import os
import re
import secrets
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import cookie_parser
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pipeline.core.errors import ConfigError, UsageError

log = logging.getLogger(__name__)

TOKEN_ENV = "PIPELINE_TOKEN"
ALLOWED_HOSTS_ENV = "PIPELINE_ALLOWED_HOSTS"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
WILDCARDS = ("0.0.0.0", "::", "[::]", "")  # every interface: no name of its own to allow
MIN_TOKEN_CHARS = 16
MIN_TOKEN_DISTINCT = 8  # secrets.token_urlsafe(32) has ~30, token_hex(16) ~14; "passwordpassword" 7
COOKIE = "pipeline_token"
LOGIN_HOURS = 12  # a login cookie is worth this long from the login, then the token is asked again
LOGOUT = "/logout"
# Wrong tokens one client address may send per window; past them, every request of its that carries a
# token is 429 until the window ends (a right token too: a guess must not tell right from wrong).
GUESSES = 10
GUESS_WINDOW = 60.0  # seconds
HEADER_TIMEOUT = 10.0  # seconds from a connection (or its previous response) to the end of a request's headers
_NAME = re.compile(r"[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?")
_TOKEN = re.compile(r"[\x21-\x7e]+")  # printable ASCII, no spaces: it travels in a header and a URL


def check_port(host: str, port: int) -> None:
    """A ConfigError now, rather than a listening line followed by uvicorn's bind error."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}: {exc.strerror or exc}") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (choose another --port)") from None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# --- host names ---------------------------------------------------------------------------------------

def canonical_name(name: str) -> str:
    """A host name as compared: lower case, no trailing dot, an IP address in its short form (IPv6 in
    brackets, as a Host header writes it). ValueError for what is not a host name."""
    name = name.strip().lower().rstrip(".")
    try:
        address = ipaddress.ip_address(name[1:-1] if name.startswith("[") and name.endswith("]") else name)
    except ValueError:
        if not _NAME.fullmatch(name):
            raise ValueError(f"not a host name: {name!r}") from None
        return name
    return f"[{address}]" if address.version == 6 else str(address)


def split_host(value: str) -> tuple[str, int | None]:
    """``law.firm.pl``, ``law.firm.pl:443``, ``[::1]:8000``, ``127.0.0.1`` -> (canonical name, port or None)."""
    value = value.strip()
    name, port = value, None
    if value.startswith("["):
        end = value.find("]")
        name, rest = value[:end + 1], value[end + 1:]
        if end < 0 or (rest and not rest.startswith(":")):
            raise ValueError(f"not a host name: {value!r}")
        port = rest[1:] if rest else None
    elif value.count(":") == 1:
        name, port = value.split(":")
    elif ":" in value:  # a bare IPv6 address (as --host takes it)
        name = f"[{value}]"
    if port is not None:
        if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
            raise ValueError(f"not a port: {value!r}")
        return canonical_name(name), int(port)
    return canonical_name(name), None


@dataclass(frozen=True)
class Policy:
    """Who may talk to a listening face: the host names (each with its port, or None: any port) a Host
    header and an Origin may name, and the bearer token every request must carry (None: none asked)."""

    hosts: frozenset[tuple[str, int | None]]
    token: str | None = field(default=None, repr=False)

    @classmethod
    def listening(cls, host: str, port: int | None, allowed_hosts: Iterable[str] = (),
                  token: str | None = None) -> Policy:
        """The loopback names on ``port`` (None: any), the ``--host`` listened on, and ``allowed_hosts``
        (``NAME`` any port, or ``NAME:PORT``; commas or spaces separate several in one)."""
        hosts = {(name, port) for name in LOOPBACK_NAMES}
        if host.strip() not in WILDCARDS:
            hosts.add((split_host(host)[0], port))
        for entry in allowed_hosts:
            for item in re.split(r"[,\s]+", entry.strip()):
                if not item:
                    continue
                try:
                    hosts.add(split_host(item))
                except ValueError as exc:
                    raise UsageError(f"{exc} (give a name such as law.firm.pl or law.firm.pl:443)",
                                     param="--allowed-host") from None
        return cls(frozenset(hosts), token)

    def allows(self, name: str, port: int) -> bool:
        return (name, port) in self.hosts or (name, None) in self.hosts

    def names(self) -> str:
        return ", ".join(sorted(n if p is None else f"{n}:{p}" for n, p in self.hosts))


def policy_for(host: str, port: int, *, allowed_hosts: Iterable[str] = (), token_file: Path | None = None,
               environ: Mapping[str, str] = os.environ) -> Policy:
    """A listening face's policy from its options and the environment (PIPELINE_ALLOWED_HOSTS, PIPELINE_TOKEN)."""
    extra = [*allowed_hosts, *([environ[ALLOWED_HOSTS_ENV]] if environ.get(ALLOWED_HOSTS_ENV) else [])]
    return Policy.listening(host, port, extra, read_token(token_file, environ))


def read_token(token_file: Path | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The bearer token: the first line of ``token_file``, or PIPELINE_TOKEN; None when neither is given."""
    if token_file is not None and TOKEN_ENV in environ:
        raise ConfigError(f"give the token one way: --token-file or {TOKEN_ENV}, not both")
    if token_file is not None:
        try:
            lines = token_file.read_text(encoding="utf-8").strip().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the token file {token_file}: {getattr(exc, 'strerror', None) or exc}") from None
        token, where = (lines[0].strip() if lines else ""), f"the token file {token_file}"
    elif TOKEN_ENV in environ:
        token, where = environ[TOKEN_ENV].strip(), TOKEN_ENV
    else:
        return None
    # An empty, short or patterned token would let a server that looks guarded be guessed open.
    make = "make one: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
    if len(token) < MIN_TOKEN_CHARS or not _TOKEN.fullmatch(token):
        raise ConfigError(f"{where}: the token must be at least {MIN_TOKEN_CHARS} printable ASCII characters without "
                          f"spaces ({make})")
    if weak_token(token):
        raise ConfigError(f"{where}: the token is too easy to guess: it needs at least {MIN_TOKEN_DISTINCT} different "
                          f"characters and must not repeat a shorter string ({make})")
    return token


def weak_token(token: str) -> bool:
    """Too few different characters ("aaaa…", "passwordpassword"), or one string over again ("abcdabcd…")."""
    if len(set(token)) < MIN_TOKEN_DISTINCT:
        return True
    return any(len(token) % n == 0 and token == token[:n] * (len(token) // n) for n in range(1, len(token) // 2 + 1))


def exposure_warning(face: str, host: str, token: str | None, what: str) -> str | None:
    """The one line a face prints when whoever reaches the machine can use it: beyond loopback, no token."""
    if token is not None or is_loopback(host):
        return None
    return (f"{face}: warning: listening on {host} without a token: anyone who can reach this machine can {what}; "
            f"require one (--token-file or {TOKEN_ENV}) or listen on 127.0.0.1")


# --- every request ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Refusal:
    """Why a request was refused: ``reason`` is "host", "origin" or "token"; ``message`` one English line."""

    status: int
    reason: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)
    quiet: bool = False  # logged at INFO: a visitor before logging in, not a suspect


def plain_refusal(refusal: Refusal, scope: Scope) -> Response:
    return PlainTextResponse(refusal.message + "\n", status_code=refusal.status, headers=refusal.headers)


def visible(text: str) -> str:
    """``text`` with every character that is not printable written as an escape (\\n, \\x1b, \\x00): what a
    client sent, echoed into a page, a message or a log line, never carries a NUL or a line of its own."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def shown(text: str, limit: int = 100) -> str:
    """What a client sent, quoted in a message or a log line: control characters escaped, cut short."""
    text = visible(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


class Guard:
    """ASGI middleware: a request whose Host is not allowed gets 421 (400 without one), an Origin that is not
    allowed 403, and with a token set a request without it 401 (``WWW-Authenticate: Bearer``), a client
    address past GUESSES wrong tokens in GUESS_WINDOW 429; every response then says ``Cache-Control: private``.

    ``login`` (the web page, which a browser opens without headers of its own): ``?token=…`` on any page
    is answered with a redirect to the same page without it and a cookie (HttpOnly, SameSite=Strict)
    that stands for the token for LOGIN_HOURS; LOGOUT ends it."""

    def __init__(self, app: ASGIApp, policy: Policy, *, login: bool = False,
                 refuse: Callable[[Refusal, Scope], Response] = plain_refusal) -> None:
        self.app, self.policy, self.login, self.refuse = app, policy, login, refuse
        # The cookie holds a value signed with the token, not the token: a browser's cookie jar does not
        # give away what an MCP client sends.
        self._key = hashlib.sha256(b"pipeline serve login " + policy.token.encode()).digest() if policy.token else b""
        self._guesses: dict[str, tuple[float, int]] = {}  # client address -> (its window's start, wrong tokens)
        self._revoked: dict[str, float] = {}  # cookies logged out -> when they would have expired

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        answer = self.check(scope, headers)
        if self.policy.token is not None and scope["type"] == "http":
            send = _private(send)
        if answer is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await answer(scope, receive, send)

    def check(self, scope: Scope, headers: Headers) -> Response | None:
        default_port = 443 if scope.get("scheme") in ("https", "wss") else 80
        host = headers.get("host", "")
        try:
            name, port = split_host(host)
        except ValueError:
            return self._refused(scope, Refusal(400, "host", f"bad or missing Host header: {shown(host)!r}"))
        if not self.policy.allows(name, port or default_port):
            return self._refused(scope, Refusal(
                421, "host", f"Host {shown(host)!r} is not one this server answers to; its operator can allow it "
                             f"with --allowed-host {shown(name)} (or {ALLOWED_HOSTS_ENV})"))
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin):
            return self._refused(scope, Refusal(403, "origin", f"Origin {shown(origin)!r} is not allowed here"))
        if self.policy.token is None:
            return None
        if self.login and scope.get("path") == LOGOUT:
            return self._logged_out(headers)
        return self._authenticated(scope, headers)

    def _origin_allowed(self, origin: str) -> bool:
        try:
            parts = urlsplit(origin.strip())
            if parts.scheme not in ("http", "https") or not parts.hostname:
                return False  # "null" (a sandboxed frame, a file), or no origin at all
            name = canonical_name(f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return False
        return self.policy.allows(name, port)

    def _authenticated(self, scope: Scope, headers: Headers) -> Response | None:
        token = self.policy.token
        assert token is not None
        # A login cookie first: it is signed with the token (no guess can forge one), so it still opens the
        # page while the address it comes from (a proxy's, shared) is past its guesses.
        cookie = cookie_parser(headers.get("cookie", "")).get(COOKIE) if self.login else None
        state = self._cookie_state(cookie) if cookie is not None else None
        if state == "valid":
            return None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        in_url = self.login and scope.get("method") in ("GET", "HEAD")
        given_in_url = [v for k, v in query if k == "token"] if in_url else []
        client, now = _client(scope), time.monotonic()
        if "authorization" in headers or given_in_url:
            wait = self._wait(client, now)
            if wait is not None:
                return self._refused(scope, Refusal(
                    429, "guesses", f"too many wrong tokens from {client}: try again in {wait} s",
                    {"Retry-After": str(wait)}))
        if scheme.lower() == "bearer" and _same(given.strip(), token):
            return None
        if given_in_url:
            if _same(given_in_url[0], token):
                return self._logged_in(scope, [(k, v) for k, v in query if k != "token"])
            self._wrong(client, now)
            return self._refused(scope, _token_refusal("the token in the address is wrong", wrong=True))
        if "authorization" in headers:
            self._wrong(client, now)
            return self._refused(scope, _token_refusal("the token is wrong", wrong=True))
        if state is not None:  # expired, logged out, or signed with another token: log in again
            return self._refused(scope, _token_refusal(f"the login cookie is {state}: open the page with ?token= again"))
        return self._refused(scope, _token_refusal("this server needs a token: send Authorization: Bearer <token>"))

    # -- guesses --

    def _wait(self, client: str, now: float) -> int | None:
        """Seconds until ``client`` may send a token again, or None: it may now."""
        start, wrong = self._guesses.get(client, (now, 0))
        if wrong < GUESSES or now - start >= GUESS_WINDOW:
            return None
        return max(1, math.ceil(start + GUESS_WINDOW - now))

    def _wrong(self, client: str, now: float) -> None:
        start, wrong = self._guesses.get(client, (now, 0))
        if now - start >= GUESS_WINDOW:
            start, wrong = now, 0
        self._guesses[client] = (start, wrong + 1)
        if len(self._guesses) > 10_000:  # many addresses (IPv6): forget the windows that are over
            self._guesses = {c: v for c, v in self._guesses.items() if now - v[0] < GUESS_WINDOW}

    # -- the login cookie --

    def _cookie_value(self) -> str:
        expires = int(time.time()) + LOGIN_HOURS * 3600
        signed = f"{expires}.{secrets.token_urlsafe(12)}"
        return f"{signed}.{hmac.new(self._key, signed.encode(), hashlib.sha256).hexdigest()}"

    def _cookie_state(self, value: str) -> str:
        """"valid", "expired", "revoked" (logged out) or "not signed" (with this token: an old one, a forgery)."""
        signed, _, mac = value.rpartition(".")
        expected = hmac.new(self._key, signed.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()
        if not _same(mac, expected):
            return "not signed"
        expires = signed.split(".", 1)[0]
        if not expires.isdigit() or int(expires) <= time.time():
            return "expired"
        return "revoked" if value in self._revoked else "valid"

    def _logged_in(self, scope: Scope, query: list[tuple[str, str]]) -> Response:
        """303 to the same page without ``token`` (out of the address bar and the history), with the cookie."""
        location = same_site((scope.get("raw_path") or scope["path"].encode()).decode("latin-1"))
        if query:
            location += "?" + urlencode(query)
        response = Response(status_code=303, headers={"Location": location, "Cache-Control": "no-store"})
        response.set_cookie(COOKIE, self._cookie_value(), max_age=LOGIN_HOURS * 3600, path="/", httponly=True,
                            samesite="strict", secure=scope.get("scheme") == "https")
        return response

    def _logged_out(self, headers: Headers) -> Response:
        """The cookie this browser sent stops opening the page (here too, not only in the browser), then 303 to /."""
        cookie = cookie_parser(headers.get("cookie", "")).get(COOKIE)
        now = time.time()
        if cookie is not None and self._cookie_state(cookie) == "valid":
            self._revoked = {c: t for c, t in self._revoked.items() if t > now}  # the expired need no list
            self._revoked[cookie] = int(cookie.split(".", 1)[0])
        response = Response(status_code=303, headers={"Location": "/", "Cache-Control": "no-store"})
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return response

    def _refused(self, scope: Scope, refusal: Refusal) -> Response:
        log.log(logging.INFO if refusal.quiet else logging.WARNING, "refused %s %s from %s -> %d: %s",
                scope.get("method", "WEBSOCKET"), shown(scope.get("path", "")), _client(scope), refusal.status,
                refusal.message)
        return self.refuse(refusal, scope)


def same_site(path: str) -> str:
    """A request's raw path as a redirect's Location that stays on this site: a browser reads "\\" as "/"
    ("/\\evil.com" is "//evil.com", another host), so it is escaped, and a path that is still another host's
    ("//…") or not a path is "/"."""
    path = path.replace("\\", "%5C")
    return path if path.startswith("/") and not path.startswith("//") else "/"


def _client(scope: Scope) -> str:
    """The client's address, as the refusals log and the guesses count it (behind a proxy: the proxy's)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def _private(send: Send) -> Send:
    """``send`` that marks each response ``Cache-Control: private``: a page behind the token is never kept
    by a shared cache for whoever asks next."""
    async def send_private(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(raw=list(message.get("headers", [])))
            given = headers.get("cache-control", "")
            if "private" not in given and "no-store" not in given:
                headers["Cache-Control"] = ", ".join(filter(None, ["private", given]))
            message = {**message, "headers": headers.raw}
        await send(message)
    return send_private


def _token_refusal(message: str, wrong: bool = False) -> Refusal:
    challenge = 'Bearer realm="pipeline"' + (', error="invalid_token"' if wrong else "")  # RFC 6750 § 3
    return Refusal(401, "token", message, {"WWW-Authenticate": challenge}, quiet=not wrong)


def _same(given: str, expected: str) -> bool:
    # Constant time: how much of a guess was right is not told by how long the answer took.
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode("utf-8"))


# --- the headers of every response ---------------------------------------------------------------------

# Content-Security-Policy: our own script and style only, nothing inline, no frames: an act's text or a
# question that slipped past escaping still could not run code or load anything.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                               "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


class SecurityHeaders:
    """Adds SECURITY_HEADERS to every HTTP response that does not set one itself. Outermost, so that what
    Starlette answers on its own (a 404, a 405, a redirect, a 500, a static file, the MCP transport's
    answers) gets them too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(raw=list(message.get("headers", [])))
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
                message = {**message, "headers": headers.raw}
            await send(message)

        await self.app(scope, receive, send_secured)


# --- the server ----------------------------------------------------------------------------------------

def server_config(app: ASGIApp, host: str, port: int, **options: Any) -> Any:
    """The uvicorn settings both faces listen with (``options``: uvicorn's others, such as log_level): HTTP/1.1
    by h11 with HEADER_TIMEOUT for a request's headers. uvicorn bounds the wait between requests
    (timeout_keep_alive) but not the headers themselves: a client sending a header line every 9 s held a
    connection open for good."""
    import uvicorn

    return uvicorn.Config(app, host=host, port=port, http=_header_deadline_protocol(), server_header=False,
                          **options)


def _header_deadline_protocol() -> type:
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadline(H11Protocol):
        """uvicorn's h11 protocol, closing a connection whose request's headers have not all come
        HEADER_TIMEOUT seconds after it opened or after its previous response."""

        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the headers are in: the request is the app's now
                self._disarm()

        def on_response_complete(self) -> None:
            self._arm()
            super().on_response_complete()
            if self.conn.their_state is not h11.IDLE or self.transport.is_closing():  # a pipelined request
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(HEADER_TIMEOUT, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

    return HeaderDeadline
