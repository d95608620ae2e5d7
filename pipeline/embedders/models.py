"""The embedding models the product knows: their vector size, the query/passage prefixes they were
trained with (retrieval models such as e5 lose quality without them) and how many tokens they read. A
model not listed still works: its size is learned from one probe, no prefix is added, nothing is cut."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    dimensions: int
    query_prefix: str = ""
    passage_prefix: str = ""
    max_tokens: int | None = None  # what the model reads of a text (its position embeddings), specials included


_E5 = ("query: ", "passage: ")
MODELS: dict[str, ModelSpec] = {
    "multilingual-e5-small": ModelSpec(384, *_E5, max_tokens=512),
    "multilingual-e5-base": ModelSpec(768, *_E5, max_tokens=512),
    "multilingual-e5-large": ModelSpec(1024, *_E5, max_tokens=512),
    "nomic-embed-text": ModelSpec(768, "search_query: ", "search_document: ", max_tokens=8192),
    "bge-m3": ModelSpec(1024, max_tokens=8192),
}

LOCAL_MODEL = "multilingual-e5-small"


def model_spec(model: str) -> ModelSpec | None:
    """The table entry for a model name as any backend spells it.

    "intfloat/multilingual-e5-small" (Hugging Face), "bge-m3:latest" (Ollama tag) and
    "BAAI/bge-m3" all resolve to the same entry; unknown models give None.
    """
    key = model.strip().lower().rsplit("/", 1)[-1].split(":", 1)[0]
    return MODELS.get(key)
