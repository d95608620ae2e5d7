"""The headers every response of the page sends (pages, static files, redirects, errors), added by one
ASGI middleware around the whole application."""
from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

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
    Starlette answers on its own (a 404, a 405, a redirect, a 500, a static file) gets them too."""

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
