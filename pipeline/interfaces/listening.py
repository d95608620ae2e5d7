"""What the faces that listen on a port (`pipeline mcp --http`, `pipeline serve`) check: before they listen
(the port, the token, whether to warn) and on every request (:class:`Guard`: the Host and Origin
headers against the allowed hosts, and the bearer token when one is set); and the headers every response of
either sends (:class:`SecurityHeaders`). One rule for both faces."""
from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
import re
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
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
COOKIE = "pipeline_token"
COOKIE_DAYS = 30
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
    # An empty or short token would let a server that looks guarded be guessed open.
    if len(token) < MIN_TOKEN_CHARS or not _TOKEN.fullmatch(token):
        raise ConfigError(f"{where}: the token must be at least {MIN_TOKEN_CHARS} printable ASCII characters without "
                          "spaces (make one: python3 -c 'import secrets; print(secrets.token_urlsafe(32))')")
    return token


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


def _shown(text: str, limit: int = 100) -> str:
    """What a client sent, quoted in a message or a log line: control characters escaped, cut short."""
    text = visible(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


class Guard:
    """ASGI middleware: a request whose Host is not allowed gets 421 (400 without one), an Origin that is not
    allowed 403, and with a token set a request without it 401 (``WWW-Authenticate: Bearer``).

    ``login`` (the web page, which a browser opens without headers of its own): ``?token=…`` on any page
    is answered with a redirect to the same page without it and a cookie (HttpOnly, SameSite=Strict)
    that stands for the token from then on."""

    def __init__(self, app: ASGIApp, policy: Policy, *, login: bool = False,
                 refuse: Callable[[Refusal, Scope], Response] = plain_refusal) -> None:
        self.app, self.policy, self.login, self.refuse = app, policy, login, refuse
        # The cookie holds a value derived from the token, not the token: a browser's cookie jar does not
        # give away what an MCP client sends.
        self.cookie = (hmac.new(policy.token.encode(), b"pipeline serve login", hashlib.sha256).hexdigest()
                       if policy.token else None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        answer = self.check(scope, headers)
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
            return self._refused(scope, Refusal(400, "host", f"bad or missing Host header: {_shown(host)!r}"))
        if not self.policy.allows(name, port or default_port):
            return self._refused(scope, Refusal(
                421, "host", f"Host {_shown(host)!r} is not one this server answers to; its operator can allow it "
                             f"with --allowed-host {_shown(name)} (or {ALLOWED_HOSTS_ENV})"))
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin):
            return self._refused(scope, Refusal(403, "origin", f"Origin {_shown(origin)!r} is not allowed here"))
        if self.policy.token is None:
            return None
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
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and _same(given.strip(), token):
            return None
        if self.login:
            if self.cookie and _same(cookie_parser(headers.get("cookie", "")).get(COOKIE, ""), self.cookie):
                return None
            query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
            given_in_url = [v for k, v in query if k == "token"]
            if given_in_url and scope.get("method") in ("GET", "HEAD"):
                if _same(given_in_url[0], token):
                    return self._logged_in(scope, [(k, v) for k, v in query if k != "token"])
                return self._refused(scope, _token_refusal("the token in the address is wrong", wrong=True))
        if scheme.lower() == "bearer" or "authorization" in headers:
            return self._refused(scope, _token_refusal("the token is wrong", wrong=True))
        return self._refused(scope, _token_refusal("this server needs a token: send Authorization: Bearer <token>"))

    def _logged_in(self, scope: Scope, query: list[tuple[str, str]]) -> Response:
        """303 to the same page without ``token`` (out of the address bar and the history), with the cookie."""
        path = scope.get("raw_path") or scope["path"].encode()
        location = path.decode("latin-1")
        if not location.startswith("/") or location.startswith("//"):  # never a redirect to another host
            location = "/"
        if query:
            location += "?" + urlencode(query)
        response = Response(status_code=303, headers={"Location": location, "Cache-Control": "no-store"})
        response.set_cookie(COOKIE, self.cookie or "", max_age=COOKIE_DAYS * 86400, path="/", httponly=True,
                            samesite="strict", secure=scope.get("scheme") == "https")
        return response

    def _refused(self, scope: Scope, refusal: Refusal) -> Response:
        log.log(logging.INFO if refusal.quiet else logging.WARNING, "refused %s %s -> %d: %s",
                scope.get("method", "WEBSOCKET"), _shown(scope.get("path", "")), refusal.status, refusal.message)
        return self.refuse(refusal, scope)


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
