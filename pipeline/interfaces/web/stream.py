"""An answer streamed to the page as server-sent events: the model's words as it writes them (``token``),
then the whole answer rendered (``done``) or what failed (``failure``).

The answer is written in a thread of its own (the service's calls block); its words reach the event loop
through a queue. A visitor who leaves stops the model call at its next word.
"""
from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.responses import StreamingResponse

from pipeline.core.errors import Cancelled


class VisitorLeft(Exception):
    """The browser closed the answer's stream: the model call is abandoned."""


def event(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def one_event(name: str, data: Any) -> AsyncIterator[str]:
    yield event(name, data)


def events_response(body: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(body, media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def answer_events(write: Callable[[Callable[[str], None], threading.Event], Any], *, done: Callable[[Any], dict],
                  failure: Callable[[BaseException], str]) -> AsyncIterator[str]:
    """Start ``write(on_token, gone)`` in a thread now (``gone``: set when the visitor leaves, so that the service
    stops before asking the model); the events it makes: a ``token`` per word, then ``done``
    with ``done(result)`` or ``failure`` with ``{"message": failure(error)}`` (the service's Busy too: how
    many answers run at once is its rule)."""
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
            raise VisitorLeft  # stop paying for tokens nobody reads
        put("token", piece)

    def work() -> None:
        try:
            put("done", write(on_token, gone))
        except (VisitorLeft, Cancelled):
            pass
        except Exception as exc:
            put("error", exc)

    threading.Thread(target=work, name="answer", daemon=True).start()

    async def events() -> AsyncIterator[str]:
        try:
            while True:
                kind, value = await queue.get()
                if kind == "token":
                    yield event("token", value)
                elif kind == "done":
                    yield event("done", done(value))
                    return
                else:
                    yield event("failure", {"message": failure(value)})
                    return
        finally:
            gone.set()

    return events()
