"""Ollama's native ``POST /api/embed`` (production: bge-m3 on a GPU)."""
from __future__ import annotations

from typing import Any

from pipeline.core.errors import EmbedderError
from pipeline.core.redact import redact_url
from pipeline.embedders import Backend, backend
from pipeline.embedders.base import HTTPEmbedder, error_text, httpx, np

DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_OLLAMA_MODEL = "bge-m3"


class OllamaEmbedder(HTTPEmbedder):
    """Ollama's native ``POST /api/embed`` (Ollama >= 0.3.4), several texts per request."""

    backend = "ollama"
    service = "Ollama"

    def __init__(
        self,
        base_url: str = DEFAULT_OLLAMA_URL,
        model: str = DEFAULT_OLLAMA_MODEL,
        keep_alive: str | None = "10m",
        truncate: bool = True,
        timeout: float = 120.0,
        batch_size: int = 32,
        retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        super().__init__(model, base_url, batch_size, timeout, retries, backoff)
        self.keep_alive = keep_alive
        self.truncate = truncate

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        body: dict[str, Any] = {"model": self.name, "input": texts, "truncate": self.truncate}
        if self.keep_alive is not None:
            body["keep_alive"] = self.keep_alive  # keeps the model loaded between ingest batches
        data = self._post("/api/embed", body)
        vectors = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(vectors, list):
            raise EmbedderError(f"Ollama at {redact_url(self.base_url)} answered /api/embed without 'embeddings'")
        return np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)

    def _unreachable(self, where: str) -> EmbedderError:
        return EmbedderError(f"cannot reach Ollama at {where} (is `ollama serve` running? set OLLAMA_URL)")

    def _rejected(self, where: str, resp: httpx.Response) -> EmbedderError:
        text = error_text(resp)
        if resp.status_code == 404 and "not found" in text and "model" in text:
            # Ollama: 404 {"error": "model \"bge-m3\" not found, try pulling it first"}
            return EmbedderError(
                f"model {self.name} is not available in Ollama at {where}; run: ollama pull {self.name}"
            )
        if resp.status_code == 404:
            return EmbedderError(
                f"Ollama at {where} has no /api/embed (HTTP 404: {text}); Ollama 0.3.4 or newer is needed"
            )
        return super()._rejected(where, resp)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "keep_alive": self.keep_alive, "truncate": self.truncate}


@backend("ollama")
def from_env(options: Backend) -> OllamaEmbedder:
    """EMBED_BACKEND=ollama: OLLAMA_URL (default http://localhost:11434), EMBED_MODEL (default bge-m3)."""
    url = options.env.get("OLLAMA_URL", "").strip() or DEFAULT_OLLAMA_URL
    return OllamaEmbedder(url, options.model or DEFAULT_OLLAMA_MODEL, **options.http_extra())
