"""When to say "not in the documents" without asking any model: ONE rule, used by `ask` and `eval`.

The signals come from the hybrid hits (no extra query, no model call):
- similarity: the vector arm's best cosine similarity (on its own scale per model);
- agreement: whether the two arms agree on an article, i.e. one of the fused top hits is among
  the top `agree_depth` of both the vector and the full-text arm.
A question is refused when its best similarity is below the model's `min_similarity`, or when it
is below `confident_similarity` and the arms do not agree. No hits, or no similarity (nothing
embedded among the candidates), is a refusal. Thresholds live in pipeline/retrieval/search.py MODEL_PROFILES, calibrated
in docs/retrieval.md.
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from pipeline.core.errors import ConfigError
from pipeline.embedders import Embedder
from pipeline.retrieval.search import Hit, ModelProfile, profile


@dataclass(frozen=True)
class Refusal:
    refused: bool
    reason: str  # one line, English, for logs and --json
    similarity: float | None  # best cosine similarity of the vector arm (None: no vector arm)
    agreement: bool | None  # the arms agree on an article among the top hits (None: one arm only)
    min_similarity: float  # the threshold that applied

    def to_dict(self) -> dict:
        return asdict(self)


def min_similarity(model: str | None, env: Mapping[str, str] | None = None) -> float:
    """ANSWER_MIN_SIMILARITY when set, else the model's calibrated default."""
    # A ConfigError on every face (the CLI said "unexpected ValueError" where MCP gave a clean line).
    # A cosine floor may be negative: -1 never refuses.
    raw = (env if env is not None else os.environ).get("ANSWER_MIN_SIMILARITY", "").strip()
    try:
        value = float(raw) if raw else None
    except ValueError:
        value = math.nan
    if value is not None and not math.isfinite(value):
        raise ConfigError(f"ANSWER_MIN_SIMILARITY must be a number, got {raw!r}")
    return profile(model).min_similarity if value is None else float(value)


def arms_agree(hits: list[Hit], prof: ModelProfile) -> bool | None:
    """True when one of the first `agree_top` hits ranks within `agree_depth` in both arms."""
    if not hits or all(h.vector_rank is None for h in hits) or all(h.text_rank is None for h in hits):
        return None
    depth = prof.agree_depth
    return any(h.vector_rank is not None and h.text_rank is not None
               and h.vector_rank <= depth and h.text_rank <= depth for h in hits[: prof.agree_top])


def decide(hits: list[Hit], model: str | None, env: Mapping[str, str] | None = None, *,
           embedding: bool = False) -> Refusal:
    """Refuse or not, from hybrid (or single-arm) hits of ``model``'s embeddings. ``embedding``: the
    searched texts are being embedded now (search.still_embedding): a low or missing similarity may be an
    article not embedded yet, so only "no hits" refuses until the vectors are in (the warnings say so)."""
    prof = profile(model)
    floor = min_similarity(model, env)
    if not hits:
        return Refusal(True, "no matching fragments", None, None, floor)
    if hits[0].named:  # "art. 52 kp": the question says which article it asks about, and it is stored
        return Refusal(False, f"the question names art. {hits[0].article} of {hits[0].act}",
                       hits[0].best_similarity, None, floor)
    sim = hits[0].best_similarity
    agree = arms_agree(hits, prof)
    if embedding:
        return Refusal(False, "vectors are still being computed: the similarity cannot judge yet", sim, agree, floor)
    if sim is None:  # no embedded chunk among the candidates: nothing shows the question is covered
        return Refusal(True, "no vector similarity to judge by", None, agree, floor)
    if sim < floor:
        return Refusal(True, f"best similarity {sim:.3f} < {floor:.3f} ({model})", sim, agree, floor)
    if agree is False and sim < prof.confident_similarity:
        return Refusal(True, f"the vector and full-text arms agree on no article in the top {prof.agree_top} "
                             f"and best similarity {sim:.3f} < {prof.confident_similarity:.3f} ({model})",
                       sim, agree, floor)
    return Refusal(False, f"best similarity {sim:.3f} >= {floor:.3f}"
                          + ("; arms agree" if agree else ""), sim, agree, floor)


def search_warning(hits: list[Hit], embedder: Embedder | None, mode: str, *, embedding: bool = False) -> str | None:
    """The line a search (`pipeline search`, MCP search_law) shows when `ask`, which searches hybrid,
    would refuse these hits: an agent or a reader then knows that the ranking holds nothing like an
    answer. None for the other modes, whose hits `ask` never sees."""
    if mode != "hybrid" or embedder is None:
        return None
    verdict = decide(hits, embedder.name, embedding=embedding)
    if not verdict.refused:
        return None
    return (f"none of these articles looks like an answer ({verdict.reason}); asked, pipeline would say "
            "the documents do not hold one")
