"""Retrieval: embed the question, call the SQL function search_chunks() where the data lives."""
from __future__ import annotations

import datetime as dt
import os
from dataclasses import asdict, dataclass

import psycopg

from .embedders import Embedder
from .fetch import parse_act_id

MODES = ("hybrid", "vector", "text")
FUSIONS = ("rrf", "convex")

# The SQL function's argument types, written once: the reader role's grant, tests and any
# downgrade name it through this constant.
SEARCH_CHUNKS_SIGNATURE = ("search_chunks(text, vector, text, integer, text[], date, boolean, text, integer, "
                           "double precision, double precision, integer, text)")


@dataclass(frozen=True)
class ModelProfile:
    """Per embedding model: how the arms are fused and when a question is refused. Each model's
    similarities live on their own scale, and its vector arm has its own strength on statutes,
    so none of these is hard-wired for all models. Calibration: docs/retrieval.md."""

    fusion: str = "rrf"  # rrf | convex (see sql/search.sql)
    vector_weight: float = 1.0
    text_weight: float = 1.0
    rrf_k: int = 60
    fetch_k: int | None = None  # candidates per arm (None: the SQL default max(4k, 40))
    # Refusal (pipeline/refusal.py): below min_similarity always; below confident_similarity when
    # no fused top-`agree_top` hit is within the top `agree_depth` of both arms.
    min_similarity: float = 0.5
    confident_similarity: float = 0.0  # 0: the agreement signal is off
    agree_top: int = 5
    agree_depth: int = 10


MODEL_PROFILES: dict[str, ModelProfile] = {
    # Offline model, tuned on the tune half of the dev questions (docs/retrieval.md): RRF with the
    # text arm at 1.25 stays (no other fusion held on the report half); min_similarity 0.85 is the
    # lowest answerable tune similarity; arm agreement did not separate, so it is off (0.0).
    "multilingual-e5-small": ModelProfile(text_weight=1.25, min_similarity=0.85),
    # Placeholder until measured: bge-m3's cosine scale is far lower than e5's.
    "bge-m3": ModelProfile(min_similarity=0.45),
}
DEFAULT_PROFILE = ModelProfile()


def profile(model: str | None) -> ModelProfile:
    return MODEL_PROFILES.get(model or "", DEFAULT_PROFILE)


@dataclass
class Hit:
    chunk_id: int
    act: str  # ELI id, e.g. DU/2025/277
    act_title: str | None
    article: str  # canonical, e.g. 151^1
    part: int
    text: str
    similarity: float | None
    text_score: float | None
    score: float
    vector_rank: int | None
    text_rank: int | None
    best_similarity: float | None  # the vector arm's best, whatever made the fused top k

    def to_dict(self) -> dict:
        return asdict(self)


def search(
    conn: psycopg.Connection,
    query: str,
    embedder: Embedder | None,
    *,
    k: int = 5,
    mode: str = "hybrid",
    acts: list[str] | None = None,
    as_of: dt.date | None = None,
    include_repealed: bool = False,
    rrf_k: int | None = None,
    vector_weight: float | None = None,
    text_weight: float | None = None,
    fusion: str | None = None,
    fetch_k: int | None = None,
    expand: bool = True,
) -> list[Hit]:
    """Top-k articles for ``query``. ``expand`` adds the thesaurus' statutory wording of the
    question's colloquial terms to the text that is embedded (the full-text arm always uses it):
    "mama" in a question then also looks for "osoba bliska" by meaning."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    if not query.strip():
        raise ValueError("the question is empty")
    eli_ids = [str(parse_act_id(a)) for a in acts] if acts else None
    vector = None
    model = None
    # Fusion settings left unset come from the embedding model's profile.
    prof = profile(embedder.name if embedder is not None else None)
    fusion = fusion or prof.fusion
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}")
    rrf_k = prof.rrf_k if rrf_k is None else rrf_k
    vector_weight = prof.vector_weight if vector_weight is None else vector_weight
    text_weight = prof.text_weight if text_weight is None else text_weight
    fetch_k = prof.fetch_k if fetch_k is None else fetch_k
    if mode != "text":
        if embedder is None:
            raise ValueError(f"{mode} search needs an embedder")
        text = query
        if expand:
            expansion = conn.execute("SELECT thesaurus_expansion(%s)", (query,)).fetchone()[0]
            text = f"{query} ({expansion})" if expansion else query
        vector = embedder.embed_query(text)
        model = embedder.name
    rows = conn.execute(
        """
        SELECT * FROM search_chunks(%(q)s, %(v)s, %(model)s, %(k)s, %(acts)s, %(as_of)s, %(rep)s, %(mode)s,
                                    %(rrf_k)s, %(vw)s, %(tw)s, %(fetch_k)s, %(fusion)s)
        """,
        {"q": query, "v": vector, "model": model, "k": k, "acts": eli_ids, "as_of": as_of,
         "rep": include_repealed, "mode": mode, "rrf_k": rrf_k, "vw": vector_weight, "tw": text_weight,
         "fetch_k": fetch_k, "fusion": fusion},
    ).fetchall()
    conn.rollback()  # read-only; end the transaction so hnsw settings made LOCAL reset
    return [Hit(*row) for row in rows]
