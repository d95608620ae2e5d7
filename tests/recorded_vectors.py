"""The real model's vectors of the test corpus, recorded once, so a clean clone does not spend three
CPU-minutes re-embedding a thousand texts that did not change.

Vectors are keyed like the product's embeddings: by the sha256 of the text that was embedded. A text
that is not recorded (the chunking changed, a new act joined the corpus) is embedded live, so a stale
recording only costs time, never a wrong vector. The recording is trusted only after a sample of it is
embedded live again and matches: a changed model, package or prefix fails loudly instead of testing
yesterday's vectors.

Stored small (the file is committed, so it stays well under 2 MB): keys as their 32 raw bytes (a uint8 row each), vectors
as float16, whose cosine to the float32 vector is ≥ 0.9999999 (well inside the live check's 0.9999).

Re-record (after changing the corpus or the chunking): ``PIPELINE_RECORD_VECTORS=1 pytest -m slow``.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import psycopg

DATA = Path(__file__).resolve().parent / "data"
SAMPLE = 4           # recorded vectors checked against the live model on every use
MIN_COSINE = 0.9999  # the same model on the same text gives the same vector (float rounding aside)


def path_for(model: str) -> Path:
    return DATA / f"vectors-{model}.npz"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class RecordedEmbedder:
    """``live`` with its recorded passage vectors; queries and unrecorded texts go to ``live``."""

    def __init__(self, live, path: Path | None = None) -> None:
        self.live = live
        self.path = path or path_for(live.name)
        self.name, self.backend = live.name, live.backend
        self.recorded: dict[str, np.ndarray] = {}
        if self.path.is_file():
            with np.load(self.path) as data:
                self.recorded = dict(zip((row.tobytes().hex() for row in data["sha256"]),
                                        data["vectors"].astype(np.float32)))
        self.checked = False
        self.hits = self.misses = 0

    @property
    def dimensions(self) -> int:
        return self.live.dimensions

    def embed_query(self, text: str) -> np.ndarray:
        return self.live.embed_query(text)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        keys = [_sha(t) for t in texts]
        hits = [i for i, k in enumerate(keys) if k in self.recorded]
        if hits and not self.checked:
            self._check([texts[i] for i in hits[:SAMPLE]])
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        for i in hits:
            out[i] = self.recorded[keys[i]]
        missing = [i for i, k in enumerate(keys) if k not in self.recorded]
        if missing:
            out[missing] = self.live.embed_passages([texts[i] for i in missing])
        self.hits += len(hits)
        self.misses += len(missing)
        return out

    def _check(self, texts: list[str]) -> None:
        live = np.asarray(self.live.embed_passages(texts), dtype=np.float32)
        for text, vector in zip(texts, live):
            recorded = self.recorded[_sha(text)]
            cosine = float(vector @ recorded / (np.linalg.norm(vector) * np.linalg.norm(recorded)))
            if cosine < MIN_COSINE:
                raise AssertionError(
                    f"{self.path.name} no longer matches the live {self.name} (cosine {cosine:.6f} on "
                    f"{text[:60]!r}): re-record with PIPELINE_RECORD_VECTORS=1 pytest -m slow")
        self.checked = True


def record(url: str, model: str, path: Path | None = None) -> Path:
    """Write every vector of ``model`` stored in the database at ``url`` (only when asked to)."""
    path = path or path_for(model)
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT content_sha256, embedding::real[] FROM embeddings WHERE model = %s "
                            "ORDER BY content_sha256", (model,)).fetchall()
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = np.frombuffer(b"".join(bytes.fromhex(h) for h, _ in rows), dtype=np.uint8).reshape(-1, 32)
    np.savez_compressed(path, sha256=keys,
                        vectors=np.array([v for _, v in rows], dtype=np.float16))
    return path


def recording() -> bool:
    return os.environ.get("PIPELINE_RECORD_VECTORS") == "1"
