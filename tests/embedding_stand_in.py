"""A stand-in embedding model for tests that are not about the model: deterministic, instant, no weights.

It is NOT multilingual-e5 or any model. A text's vector is a hashed bag of its words and of their
character trigrams (``<urlop>`` -> ``<ur url rlo lop op>``), L2-normalised: texts sharing words or
word stems (Polish inflection keeps the stem) point the same way, so vector and hybrid search still
rank the article that shares the question's words near the top, and a test can compute the exact
vector of any text.

Two ways to use the same vectors:

- in process: ``StandInEmbedder()`` has the pipeline's embedder interface (pipeline.embedders.Embedder);
- from a ``pipeline`` subprocess: ``OpenAIEmbeddingsStandIn`` is a loopback HTTP server speaking the
  OpenAI ``/v1/embeddings`` protocol, used through the product's own ``openai`` backend
  (``EMBED_BACKEND=openai``, ``EMBED_BASE_URL``, ``EMBED_MODEL``; see ``env()``), so no test-only
  backend lives in the product.

A corpus embedded in process can thus be searched by the CLI: both give identical vectors.
"""
from __future__ import annotations

import base64
import functools
import json
import re
import zlib
from http.server import BaseHTTPRequestHandler
from typing import Any

import numpy as np
from support.servers import StandInHandler, StandInServer

MODEL = "stand-in-hashed-ngrams"  # no entry in the model table: no e5 prefixes, the default thresholds
DIMENSIONS = 256  # unlike any real model's, so a mix-up fails loudly
# The refusal threshold for the stand-in's similarities (lower than e5's): on the corpus the leave
# question's best hit scores 0.40, the off-topic speed-limit question's 0.26.
MIN_SIMILARITY = "0.3"
_WORD = re.compile(r"\w+")
_TRIGRAM_WEIGHT = 0.5  # a shared stem counts, a shared whole word counts more


@functools.lru_cache(maxsize=100_000)
def _features(word: str) -> tuple[np.ndarray, np.ndarray]:
    """(positions, signed weights) of one lower-cased word: the word itself and its boundary trigrams."""
    padded = f"<{word}>"
    grams = [word] + [padded[i:i + 3] for i in range(len(padded) - 2)]
    hashes = np.array([zlib.crc32(g.encode("utf-8")) for g in grams], dtype=np.uint64)
    positions = (hashes >> np.uint64(1)) % np.uint64(DIMENSIONS)
    signs = np.where(hashes & np.uint64(1), 1.0, -1.0)  # signed hashing: collisions cancel out on average
    weights = np.full(len(grams), _TRIGRAM_WEIGHT)
    weights[0] = 1.0
    return positions.astype(np.int64), signs * weights


def stand_in_vector(text: str) -> np.ndarray:
    """The stand-in's (DIMENSIONS,) float32 vector of a text, L2-normalised (all zeros for no words)."""
    words = _WORD.findall(text.lower())
    if not words:
        return np.zeros(DIMENSIONS, dtype=np.float32)
    parts = [_features(w) for w in words]
    vector = np.bincount(np.concatenate([p for p, _ in parts]), weights=np.concatenate([w for _, w in parts]),
                         minlength=DIMENSIONS)
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm else vector).astype(np.float32)


SPARSE_DIMENSIONS = 4096
SPARSE_TERMS = 64


def stand_in_sparse(text: str) -> tuple[np.ndarray, np.ndarray]:
    """The stand-in's sparse vector of a text: each distinct word hashed to a feature, weighted
    1 + ln(count), the SPARSE_TERMS heaviest kept (ties by feature); indices from 0."""
    counts: dict[int, float] = {}
    for w in _WORD.findall(text.lower()):
        f = zlib.crc32(w.encode("utf-8")) % SPARSE_DIMENSIONS
        counts[f] = counts.get(f, 0) + 1
    kept = sorted(counts.items(), key=lambda fc: (-fc[1], fc[0]))[:SPARSE_TERMS]
    return (np.array([f for f, _ in kept], dtype=np.int32),
            np.array([1 + np.log(c) for _, c in kept], dtype=np.float32))


class StandInEmbedder:
    """The stand-in with the pipeline's embedder interface, for fixtures that embed in process.
    ``StandInEmbedder(sparse=True)`` also has a sparse head (:func:`stand_in_sparse`)."""

    name = MODEL
    backend = "stand-in"
    dimensions = DIMENSIONS
    batch_size = 256

    def __init__(self, sparse: bool = False) -> None:
        self.sparse_dimensions = SPARSE_DIMENSIONS if sparse else 0
        self.sparse_calls: list[int] = []  # texts per embed_sparse call

    def embed_sparse(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        assert self.sparse_dimensions, "this stand-in has no sparse head"
        self.sparse_calls.append(len(texts))
        return [stand_in_sparse(t) for t in texts]

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        return np.stack([stand_in_vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return stand_in_vector(text)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.name, "dimensions": DIMENSIONS, "batch_size": self.batch_size,
                "prefixes": None}


class OpenAIEmbeddingsStandIn(StandInServer):
    """Loopback ``/v1/embeddings`` + ``/v1/models`` server computing stand-in vectors; records requests.

        with OpenAIEmbeddingsStandIn() as server:
            run_cli("search", "urlop", env={"DATABASE_URL": url, **server.env()})
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        super().__init__(self._handler_class())

    @property
    def base_url(self) -> str:
        return self.address + "/v1"

    def env(self) -> dict[str, str]:
        """The configuration that makes `pipeline` embed with the stand-in (through its openai backend)."""
        return {"EMBED_BACKEND": "openai", "EMBED_BASE_URL": self.base_url, "EMBED_MODEL": MODEL,
                "ANSWER_MIN_SIMILARITY": MIN_SIMILARITY}

    # -- protocol (OpenAI's shapes and error bodies) ------------------------------------------------
    @staticmethod
    def _error(status: int, message: str, code: str | None = None, param: str | None = None) -> tuple[int, dict]:
        return status, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}

    def _embeddings(self, body: Any) -> tuple[int, dict]:
        if not isinstance(body, dict):
            return self._error(400, "We could not parse the JSON body of your request.")
        if body.get("model") != MODEL:
            return self._error(404, f"The model `{body.get('model')}` does not exist or you do not have access to it.",
                               "model_not_found", "model")
        inp = body.get("input")
        texts = [inp] if isinstance(inp, str) else inp
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            return self._error(400, "'input' must be a non-empty string or a list of non-empty strings", None, "input")
        fmt = body.get("encoding_format", "float")
        data = []
        for i, text in enumerate(texts):
            vector = stand_in_vector(text)
            embedding: Any = (base64.b64encode(vector.astype("<f4").tobytes()).decode() if fmt == "base64"
                              else vector.tolist())
            data.append({"object": "embedding", "index": i, "embedding": embedding})
        tokens = sum(len(_WORD.findall(t)) for t in texts)
        return 200, {"object": "list", "data": data, "model": MODEL,
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(StandInHandler):
            protocol_version = "HTTP/1.1"

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                stand_in.requests.append({"method": "GET", "path": self.path, "body": None})
                if self.path == "/v1/models":
                    self._send(200, {"object": "list", "data": [
                        {"id": MODEL, "object": "model", "created": 0, "owned_by": "pipeline-tests"}]})
                else:
                    self._send(*stand_in._error(404, f"Invalid URL (GET {self.path})"))

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = None
                stand_in.requests.append({"method": "POST", "path": self.path, "body": body})
                if self.path == "/v1/embeddings":
                    self._send(*stand_in._embeddings(body))
                else:
                    self._send(*stand_in._error(404, f"Invalid URL (POST {self.path})"))

        return Handler
