"""A stand-in for an Ollama server, for tests: loopback HTTP that speaks Ollama's embed protocol.

It is not Ollama and runs no model. It answers ``POST /api/embed`` and ``GET /api/tags`` with
the shapes and error bodies of Ollama's server/routes.go, computing deterministic vectors
(a hashed bag of words, L2-normalised) so tests can check exactly which text was embedded.
Failures (HTTP errors, slow answers) can be injected, and every request is recorded.

    with OllamaStandIn({"bge-m3": 1024}) as ollama:
        OllamaEmbedder(ollama.url, "bge-m3").embed_query("...")
        ollama.requests[-1]["body"]["keep_alive"]
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.servers import StandInHandler, StandInServer

_WORD = re.compile(r"\w+", re.UNICODE)


def stand_in_vector(text: str, dimensions: int) -> list[float]:
    """Hashed bag of words: each lower-cased word adds +-1 at a position picked by its hash."""
    vec = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        h = int.from_bytes(digest, "little")
        vec[h % dimensions] += 1.0 if (h >> 63) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0  # no words: a zero vector, as given
    return [v / norm for v in vec]


def _tagged(model: str) -> str:
    """Ollama treats "bge-m3" and "bge-m3:latest" as one model."""
    return model if ":" in model.rsplit("/", 1)[-1] else model + ":latest"


class OllamaStandIn(StandInServer):
    """Loopback stand-in for Ollama on 127.0.0.1 and a free port, served from a background thread."""

    def __init__(self, models: dict[str, int] | None = None) -> None:
        # The "pulled" models and the size of their vectors.
        self.models = {_tagged(m): d for m, d in (models or {"bge-m3": 1024}).items()}
        self.requests: list[dict[str, Any]] = []
        self.delay = 0.0  # seconds to wait before answering /api/embed
        self._failures: list[tuple[int, str]] = []
        self._lock = threading.Lock()
        super().__init__(self._handler_class(), slow_handlers=True)  # a delayed answer must not hold up stop()

    @property
    def url(self) -> str:
        return self.address

    def fail_next(
        self, count: int, status: int = 500, error: str = "llama runner process has terminated: exit status 2"
    ) -> None:
        """Answer the next `count` /api/embed requests with HTTP `status` and Ollama's {"error": ...}."""
        with self._lock:
            self._failures.extend([(status, error)] * count)

    def embed_requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"] == "/api/embed"]

    # -- protocol ------------------------------------------------------------------------
    def _embed(self, body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict):
            return 400, {"error": "invalid request body"}
        inp = body.get("input")
        if isinstance(inp, str):
            texts = [inp] if inp else []
        elif isinstance(inp, list) and all(isinstance(t, str) for t in inp):
            texts = inp
        elif inp is None:
            texts = []
        else:
            return 400, {"error": "invalid input type"}
        model = body.get("model") or ""
        with self._lock:
            failure = self._failures.pop(0) if self._failures else None
        if failure:
            return failure[0], {"error": failure[1]}
        dims = self.models.get(_tagged(model)) if model else None
        if dims is None:
            # Ollama's handleScheduleError for a model that is not pulled (os.ErrNotExist).
            return 404, {"error": f"model {json.dumps(model)} not found, try pulling it first"}
        started = time.perf_counter_ns()
        embeddings = [stand_in_vector(t, dims) for t in texts]
        want = body.get("dimensions") or 0
        if 0 < want < dims:  # Ollama truncates, then normalises again
            embeddings = [_renormalised(e[:want]) for e in embeddings]
        return 200, {
            "model": model,
            "embeddings": embeddings,
            "total_duration": time.perf_counter_ns() - started,
            "load_duration": 0,
            "prompt_eval_count": sum(len(_WORD.findall(t)) for t in texts),
        }

    def _tags(self) -> dict[str, Any]:
        return {
            "models": [
                {
                    "name": name,
                    "model": name,
                    "modified_at": "2025-01-01T00:00:00Z",
                    "size": 0,
                    "digest": hashlib.sha256(name.encode()).hexdigest(),
                    "details": {"format": "gguf", "family": "stand-in", "families": ["stand-in"],
                                "parameter_size": "0", "quantization_level": "F32"},
                }
                for name in self.models
            ]
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(StandInHandler):
            protocol_version = "HTTP/1.1"

            def _send(self, status: int, payload: Any, content_type: str = "application/json; charset=utf-8") -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                stand_in.requests.append({"method": "GET", "path": self.path, "body": None})
                if self.path == "/api/tags":
                    self._send(200, stand_in._tags())
                elif self.path == "/":
                    self._send(200, b"Ollama is running", "text/plain; charset=utf-8")
                else:
                    self._send(404, b"404 page not found", "text/plain")

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = None
                stand_in.requests.append({"method": "POST", "path": self.path, "body": body})
                if self.path != "/api/embed":
                    self._send(404, b"404 page not found", "text/plain")  # gin's answer for unknown routes
                    return
                if stand_in.delay:
                    time.sleep(stand_in.delay)
                status, payload = stand_in._embed(body)
                try:
                    self._send(status, payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        return Handler


def _renormalised(vec: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]
