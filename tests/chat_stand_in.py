"""A stand-in for an OpenAI-compatible chat-completions server, on loopback.

It speaks the real wire protocol (``POST /v1/chat/completions``, JSON or SSE
``data: {...}`` chunks ending in ``data: [DONE]``) so the real ``openai`` client
talks to it unchanged. It is NOT a model: it replies with a scripted text.

    with ChatStandIn(reply="Tak [DU/2025/277, art. 154].") as server:
        config = ChatConfig(base_url=server.base_url, api_key="k")
        ...
        server.requests[0].body["messages"]
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Callable

from support.servers import StandInHandler, StandInServer


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]  # lower-case names
    body: dict


class ChatStandIn(StandInServer):
    """Loopback chat-completions stand-in.

    reply: the answer text, or a callable ``request body -> text``.
    cost: if set, ``usage.cost`` is reported (as OpenRouter does).
    fail: ``(status, message)`` makes every request fail with an OpenAI-style error body.
    delay: seconds to wait before answering (to provoke client timeouts).
    stall_after: stream this many pieces of the answer, then send nothing more for ``delay`` seconds
        (a stream that breaks off midway).
    api_key: if set, requests without ``Authorization: Bearer <api_key>`` get 401,
        whose message echoes the key sent (as careless servers do).
    """

    def __init__(
        self,
        reply: str | Callable[[dict], str] = "",
        *,
        model: str | None = None,
        cost: float | None = None,
        fail: tuple[int, str] | None = None,
        delay: float = 0.0,
        api_key: str | None = None,
        chunk_chars: int = 7,
        stall_after: int | None = None,
        close_after: int | None = None,
    ) -> None:
        self.reply = reply
        self.model = model
        self.cost = cost
        self.fail = fail
        self.delay = delay
        self.api_key = api_key
        self.chunk_chars = chunk_chars
        self.stall_after = stall_after
        self.close_after = close_after  # stream that many chunks, then close the connection (no finish_reason)
        self.requests: list[Recorded] = []
        self.usage: dict | None = None  # the usage of the last answer
        super().__init__(self._handler(), slow_handlers=True)  # a slow answer must not hold up stop()

    @property
    def base_url(self) -> str:
        return self.address + "/v1"

    def answer_for(self, body: dict) -> str:
        return self.reply(body) if callable(self.reply) else self.reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(StandInHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    return self._error(400, "request body is not JSON")
                stand_in.requests.append(
                    Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                if stand_in.delay and stand_in.stall_after is None:
                    time.sleep(stand_in.delay)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._error(404, f"no route {self.path}")
                if stand_in.api_key is not None:
                    sent = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    if sent != stand_in.api_key:
                        return self._error(401, f"Incorrect API key provided: {sent}")
                if stand_in.fail:
                    return self._error(*stand_in.fail)
                try:
                    if body.get("stream"):
                        self._stream(body)
                    else:
                        self._complete(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading (a timeout, a page that was left): a real server moves on

            def _error(self, status: int, message: str) -> None:
                payload = {"error": {"message": message, "type": "stand_in_error", "code": status}}
                self._json(status, payload)

            def _json(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _usage(self, body: dict, text: str) -> dict:
                # Crude token counts: words in, chunks out. Deterministic, which is what tests need.
                prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
                completion = max(1, len(text.split()))
                usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
                if stand_in.cost is not None:
                    usage["cost"] = stand_in.cost
                stand_in.usage = usage
                return usage

            def _base(self, body: dict, obj: str) -> dict:
                return {
                    "id": "chatcmpl-standin",
                    "object": obj,
                    "created": int(time.time()),
                    "model": stand_in.model or body.get("model", "stand-in"),
                }

            def _complete(self, body: dict) -> None:
                text = stand_in.answer_for(body)
                payload = self._base(body, "chat.completion") | {
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    ],
                    "usage": self._usage(body, text),
                }
                self._json(200, payload)

            def _stream(self, body: dict) -> None:
                text = stand_in.answer_for(body)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()  # HTTP/1.0: the body ends when the connection closes

                def send(payload: dict | str) -> None:
                    data = payload if isinstance(payload, str) else json.dumps(payload)
                    self.wfile.write(f"data: {data}\n\n".encode())
                    self.wfile.flush()

                def chunk(delta: dict, finish: str | None = None) -> dict:
                    return self._base(body, "chat.completion.chunk") | {
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
                    }

                send(chunk({"role": "assistant", "content": ""}))
                step = stand_in.chunk_chars
                for n, i in enumerate(range(0, len(text), step)):
                    if n == stand_in.stall_after:
                        time.sleep(stand_in.delay)
                        return
                    if n == stand_in.close_after:
                        return
                    send(chunk({"content": text[i : i + step]}))
                send(chunk({}, "stop"))
                if (body.get("stream_options") or {}).get("include_usage"):
                    send(self._base(body, "chat.completion.chunk") | {"choices": [], "usage": self._usage(body, text)})
                send("[DONE]")

        return Handler
