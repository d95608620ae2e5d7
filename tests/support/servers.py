"""The one life cycle of the loopback stand-in servers (the ELI mirror, the embedding and chat models):
a threading HTTP server on 127.0.0.1 and a free port, served from a daemon thread, started and stopped
as a context manager; and the product's own ASGI apps (the page, MCP) served by uvicorn the same way
(:func:`serving`)."""
from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class StandInHandler(BaseHTTPRequestHandler):
    """The base of the stand-ins' request handlers."""

    # TCP_NODELAY, as the real servers have it (Go's net/http, which Ollama uses, sets it on every
    # connection). Without it, a body written after the headers waits for the client's delayed ACK:
    # 40 ms a request on Linux, which made an embedding batch through a stand-in 40× slower than its work.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return  # the client went away (a test's own timeout, a visitor who left): a real server says nothing
        super().handle_error(request, client_address)


class StandInServer:
    """A loopback server for ``handler`` (a class; its ``server`` attribute is the ThreadingHTTPServer,
    whose ``stand_in`` is this object). ``slow_handlers``: a handler that sleeps (a delayed answer)
    does not hold up :meth:`stop`."""

    poll_interval = 0.05  # how soon stop() is heard

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, slow_handlers: bool = False) -> None:
        self._server = _Server(("127.0.0.1", 0), handler)
        self._server.block_on_close = not slow_handlers
        self._server.stand_in = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(self.poll_interval,), daemon=True)

    @property
    def address(self) -> str:
        """http://127.0.0.1:PORT"""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self):  # -> Self
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self):  # -> Self
        return self if self._thread.is_alive() else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(app, port: int | None = None) -> Iterator[str]:
    """An ASGI ``app`` served by uvicorn on 127.0.0.1 (``port``, else a free one) until the block ends: its base URL."""
    import uvicorn

    from pipeline.interfaces.listening import server_config

    port = port or free_port()  # the faces' own settings (pipeline serve, pipeline mcp --http)
    server = uvicorn.Server(server_config(app, "127.0.0.1", port, log_level="warning", timeout_graceful_shutdown=5))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
