"""The embedding models the product knows: their vector size and the query/passage prefixes they were
trained with (retrieval models such as e5 lose quality without them). A model not listed still works:
its size is learned from one probe, and no prefix is added."""
from __future__ import annotations

from dataclasses import dataclass


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


def model_spec(model: str) -> ModelSpec | None:
    """The table entry for a model name as any backend spells it.

    "intfloat/multilingual-e5-small" (Hugging Face), "bge-m3:latest" (Ollama tag) and
    "BAAI/bge-m3" all resolve to the same entry; unknown models give None.
    """
    key = model.strip().lower().rsplit("/", 1)[-1].split(":", 1)[0]
    return MODELS.get(key)
