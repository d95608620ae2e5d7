"""The base of the loopback servers' request handlers (the ELI mirror and the service stand-ins)."""
from __future__ import annotations

from http.server import BaseHTTPRequestHandler


class StandInHandler(BaseHTTPRequestHandler):
    # TCP_NODELAY, as the real servers have it (Go's net/http, which Ollama uses, sets it on every
    # connection). Without it, a body written after the headers waits for the client's delayed ACK:
    # 40 ms a request on Linux, which made an embedding batch through a stand-in 40× slower than its work.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        pass
