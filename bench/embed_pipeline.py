"""Embedding pipeline overhead: queue drain (claim, embed, COPY, delete) vs the raw model, same texts.

    python -m bench.embed_pipeline [--act DU/2024/581] [--rounds 2] [--batch-size 128]

Starts its own embedded PostgreSQL in a temporary PIPELINE_HOME, ingests one act from the ELI
mirror without embeddings, then alternates: the raw model on the chunk texts, and `embed.drain`
over the queue holding the same texts. Prints texts/s for both and the overhead (goal: < 10%).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from bench import common


def main() -> int:
    ap = common.parser(__doc__)
    ap.add_argument("--act", default="DU/2024/581")
    ap.add_argument("--source", default=str(common.eli_dir()), help="the ELI mirror [default: $PIPELINE_SHARED/eli]")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=128)
    args = ap.parse_args()

    home = Path(tempfile.mkdtemp(prefix="pl-bench-embed-"))
    os.chmod(home, 0o755)
    os.environ["PIPELINE_HOME"] = str(home)
    os.environ.pop("DATABASE_URL", None)
    from pipeline.storage import db, schema
    from pipeline.indexing import embed, ingest
    from pipeline.embedders.local import LocalEmbedder

    try:
        url = db.embedded_url()
        schema.upgrade(url)
        conn = db.connect(url)
        result = ingest.ingest_act(conn, url, args.act, model=None, archive_dir=home / "dane", source_dir=Path(args.source))
        if result.status != "new":
            print(f"ingest failed: {result.error}")
            return 1
        texts = [r[0] for r in conn.execute("SELECT DISTINCT ON (content_sha256) embed_text FROM chunks")]
        conn.rollback()
        model = LocalEmbedder(batch_size=args.batch_size)
        model.embed_passages(texts[:2])  # load weights outside the timings
        print(common.machine_line())
        print(f"texts: {len(texts)} chunk texts of {args.act}, mean {sum(map(len, texts)) / len(texts):.0f} chars, "
              f"batch {args.batch_size}")
        raw_times, pipe_times, raw_cpu, pipe_cpu = [], [], [], []
        for _ in range(args.rounds):
            t0, c0 = time.perf_counter(), time.process_time()
            for i in range(0, len(texts), args.batch_size):
                model.embed_passages(texts[i:i + args.batch_size])
            raw_times.append(time.perf_counter() - t0)
            raw_cpu.append(time.process_time() - c0)

            with conn.transaction():
                conn.execute("DELETE FROM embeddings")
            embed.ensure_space(conn, model.name, model.dimensions, model.backend)
            queued = embed.enqueue_missing(conn, model.name)
            t0, c0 = time.perf_counter(), time.process_time()
            done = embed.drain(conn, model, batch_size=args.batch_size)
            pipe_times.append(time.perf_counter() - t0)
            pipe_cpu.append(time.process_time() - c0)
            assert done == queued == len(texts), (done, queued, len(texts))
        raw, pipe = min(raw_times), min(pipe_times)
        print(f"raw model:        {len(texts) / raw:7.1f} texts/s  (best of {args.rounds}: {raw:.1f}s)")
        print(f"pipeline (queue): {len(texts) / pipe:7.1f} texts/s  (best of {args.rounds}: {pipe:.1f}s)")
        print(f"overhead, wall: {100 * (pipe - raw) / raw:+.1f}%  (claim with SKIP LOCKED, COPY vectors, delete queue rows)")
        # On a shared machine wall time follows the neighbours; CPU seconds of this process do not.
        rc, pc = min(raw_cpu), min(pipe_cpu)
        print(f"overhead, CPU seconds of this process: {100 * (pc - rc) / rc:+.1f}%  (raw {rc:.1f} s, pipeline {pc:.1f} s)")
        conn.close()
    finally:
        db.stop_embedded()
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
