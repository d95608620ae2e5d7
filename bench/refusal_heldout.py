"""Refusal signals against held-out acts: many unanswerable questions without writing any.

The dev set has five unanswerable questions (two on the tune half), too few to calibrate a refusal
signal. But "not in the documents" means "no ingested act answers it", so each answerable question
becomes an unanswerable one when its gold acts are left out of the search (`acts` = every other
current act): same wording, same style, the neighbouring topics still there. For each question of a
half this runs the hybrid search twice (all acts; gold acts held out) and records, from the hits and
the question alone (no model call):

- similarity: the vector arm's best cosine (the shipped signal);
- agreement: the arms agree on an article in the fused top 5 (the shipped second signal);
- coverage: the best BM25 among the hits over the most any chunk could score for the query's terms
  (Σ idf × (k1 + 1)): how much of the question's vocabulary the best text match carries;
- known terms: the share of the question's own lexemes that occur in the searched acts' chunks;
- peak: the best similarity minus the mean of the top 10 (a question that hits one article stands out);
- over background: the best similarity minus the question's 1000th best chunk similarity in the
  searched acts (exact), taking out how close the question is to statutes in general;
- sparse cosine: where the model has a sparse head (revision 0008), the best cosine between the
  idf-weighted sparse query and the sparse arm's top 10 chunks: how much of the question's learned
  terms one chunk carries, independent of the question's length;
- act share / act share 5: the share of the top 10 (top 5) hits from the act most of them come from
  (an ingested topic concentrates in its act; not shipped: its scale depends on how many acts the
  corpus holds, docs/retrieval.md);
- similarity+act_share: the two as z-scores over the tune half's answerable questions, summed.

It prints, per half, each signal's AUC (answerable vs held-out + real unanswerable: 0.5 is chance),
the shipped rule's refusals, and for each signal the share of held-out questions refused at the
threshold that refuses ≤ 5 % of the answerable tune questions (chosen on tune, applied to both).

    PIPELINE_HOME=../evaldb/home python -m bench.refusal_heldout [--report] [--json OUT]

Held out this way, a question can still be answered by another act; the held-out refusal rate is
then a lower bound of what a perfect signal could reach.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
from collections import Counter
import sys
from pathlib import Path

import numpy as np

from bench import common
from pipeline.storage import db
from pipeline.storage.db import sparsevec_literal
from pipeline.embedders import embedder_from_env, sparse_head
from pipeline.retrieval.evaluate import Question, load_questions, select_ids
from pipeline.retrieval.refusal import decide
from pipeline.retrieval.search import Scope, SearchSettings, embedded_query, search

K1 = 1.2  # bm25_tf's k1 (sql/search.sql): a lexeme's BM25 is at most idf × (k1 + 1)
SIGNALS = ("similarity", "agreement", "coverage", "known_terms", "peak", "over_background", "sparse_cosine",
           "act_share", "act_share5")
COMBINED = (("similarity", "act_share"),)


class DocFreq:
    """Chunks (current, not repealed) that hold a lexeme, outside the held-out acts."""

    def __init__(self, conn) -> None:
        self.conn = conn
        self.n = conn.execute("SELECT count(*) FROM current_chunks WHERE NOT repealed").fetchone()[0]
        self.cache: dict[tuple[str, tuple[str, ...]], int] = {}

    def __call__(self, lexeme: str, held_out: tuple[str, ...]) -> int:
        key = (lexeme, held_out)
        if key not in self.cache:
            self.cache[key] = self.conn.execute(
                "SELECT count(*) FROM current_chunks cc JOIN chunks c USING (chunk_id) "
                "WHERE NOT c.repealed AND cc.eli <> ALL(%s) AND c.tsv @@ to_tsquery('simple', quote_literal(%s))",
                (list(held_out), lexeme)).fetchone()[0]
        return self.cache[key]

    def idf(self, d: int) -> float:
        return math.log(1 + (self.n - d + 0.5) / (d + 0.5))


class ChunkVectors:
    """Every current, non-repealed chunk's vector and act, for the exact background similarities."""

    def __init__(self, conn, emb) -> None:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        rows = conn.execute("SELECT cc.eli, e.embedding FROM current_chunks cc JOIN embeddings e "
                            "ON e.content_sha256 = cc.content_sha256 AND e.model = %s WHERE NOT cc.repealed",
                            (emb.name,)).fetchall()
        self.acts = np.array([r[0] for r in rows])
        self.vecs = np.array([r[1].to_numpy() for r in rows], dtype=np.float32)
        self.emb = emb
        self.queries: dict[str, np.ndarray] = {}  # a question is asked twice (all acts, held out)

    def nth_best(self, conn, question: str, held_out: tuple[str, ...], n: int = 1000) -> float:
        if question not in self.queries:
            self.queries[question] = np.asarray(self.emb.embed_query(embedded_query(conn, question)),
                                                dtype=np.float32)
        sims = self.vecs[~np.isin(self.acts, list(held_out))] @ self.queries[question]
        return float(np.sort(sims)[-n])


def signals(conn, emb, df: DocFreq, background: ChunkVectors, q: Question, acts: list[str],
            held_out: tuple[str, ...]) -> dict:
    hits = search(conn, q.question, emb, scope=Scope(acts=[a for a in acts if a not in held_out]), settings=SearchSettings(k=10))
    verdict = decide(hits, emb.name)
    own = conn.execute("SELECT tsvector_to_array(to_tsvector('polish', %s))", (q.question,)).fetchone()[0]
    terms = conn.execute("SELECT search_terms(%s)", (q.question,)).fetchone()[0]
    most = sum(df.idf(d) * (K1 + 1) for d in (df(t, held_out) for t in terms) if d > 0)
    sims = [h.similarity for h in hits if h.similarity is not None]
    sparse_cosine = None
    if sparse_head(emb) is not None:
        spq = sparsevec_literal(emb.embed_sparse([q.question])[0], emb.sparse_dimensions)
        top = search(conn, q.question, emb, scope=Scope(acts=[a for a in acts if a not in held_out]), settings=SearchSettings(k=10, mode="sparse"))
        sparse_cosine = conn.execute(
            """SELECT max(-(s.embedding <#> w.q) / nullif(l2_norm(s.embedding) * l2_norm(w.q), 0))
               FROM (SELECT sparse_query(%s, %s::sparsevec) AS q) w
               JOIN chunks c ON c.chunk_id = ANY (%s)
               JOIN sparse_embeddings s ON s.content_sha256 = c.content_sha256 AND s.model = %s""",
            (emb.name, spq, [h.chunk_id for h in top], emb.name)).fetchone()[0] if top else 0.0
    return {
        "similarity": verdict.similarity,
        "agreement": None if verdict.agreement is None else float(verdict.agreement),
        "coverage": max((h.text_score or 0.0) for h in hits) / most if hits and most else 0.0,
        "known_terms": sum(1 for t in own if df(t, held_out) > 0) / len(own) if own else 1.0,
        "peak": max(sims) - statistics.mean(sims) if len(sims) > 1 else 0.0,
        "over_background": (verdict.similarity - background.nth_best(conn, q.question, held_out)
                            if verdict.similarity is not None else None),
        "sparse_cosine": sparse_cosine,
        "act_share": max(Counter(h.act for h in hits).values()) / len(hits) if hits else 0.0,
        "act_share5": max(Counter(h.act for h in hits[:5]).values()) / len(hits[:5]) if hits else 0.0,
        "refused": verdict.refused,
    }


def auc(pos: list[float], neg: list[float]) -> float | None:
    """P(an answerable question scores above an unanswerable one), ties half."""
    if not pos or not neg:
        return None
    return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg) / (len(pos) * len(neg))


def floor_for(answerable: list[float], share: float = 0.05) -> float:
    """The highest threshold that refuses (value < threshold) at most ``share`` of ``answerable``."""
    xs = sorted(answerable)
    allowed = int(share * len(xs))
    return xs[allowed] if xs else float("-inf")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dev", type=Path, default=common.eval_dir() / "dev_questions.pl.jsonl")
    ap.add_argument("--report", action="store_true", help="also run the report half (aggregates only)")
    ap.add_argument("--json", type=Path, help="write every question's signals here")
    args = ap.parse_args()
    dev = load_questions(args.dev)
    halves = {"tune": select_ids(dev, "odd")} | ({"report": select_ids(dev, "even")} if args.report else {})
    conn = db.connect(db.database_url(), autocommit=True)
    emb = embedder_from_env()
    acts = [r[0] for r in conn.execute("SELECT eli FROM current_versions ORDER BY eli")]
    df = DocFreq(conn)
    background = ChunkVectors(conn, emb)
    rows: list[dict] = []

    def record(q: Question, half: str, kind: str, held_out: tuple[str, ...] = ()) -> None:
        rows.append({"id": q.id, "half": half, "kind": kind,
                     **signals(conn, emb, df, background, q, acts, held_out)})

    for half, qs in halves.items():
        for i, q in enumerate(qs, 1):
            if q.answerable and all(a in acts for a, _ in q.expect):
                record(q, half, "answerable")
                record(q, half, "held-out", tuple(sorted({a for a, _ in q.expect})))
            elif not q.answerable:
                record(q, half, "unanswerable")
            print(f"\r{half} {i}/{len(qs)}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))

    def of(half: str, kinds: tuple[str, ...]) -> list[dict]:
        return [r for r in rows if r["half"] == half and r["kind"] in kinds]

    tune_answerable = of("tune", ("answerable",))
    # Two signals combined: each as a z-score over the tune half's answerable questions, summed.
    for a_sig, b_sig in COMBINED:
        stats = [(statistics.mean(xs), statistics.pstdev(xs) or 1.0)
                 for xs in ([r[x] for r in tune_answerable if r[x] is not None] for x in (a_sig, b_sig))]
        for r in rows:
            r[f"{a_sig}+{b_sig}"] = (None if r[a_sig] is None or r[b_sig] is None else
                                     sum((r[x] - m) / sd for x, (m, sd) in zip((a_sig, b_sig), stats)))
    signals_shown = SIGNALS + tuple(f"{a}+{b}" for a, b in COMBINED)
    floors = {s: floor_for([r[s] for r in tune_answerable if r[s] is not None]) for s in signals_shown}
    print(f"model {emb.name}; {len(acts)} acts; a threshold refuses below it, chosen on tune "
          f"(<= 5 % of its answerable questions refused)")
    for half in halves:
        pos, held, unans = of(half, ("answerable",)), of(half, ("held-out",)), of(half, ("unanswerable",))
        print(f"\n{half}: {len(pos)} answerable, the same {len(held)} with their acts held out, "
              f"{len(unans)} unanswerable")
        refused = lambda rs: f"{sum(r['refused'] for r in rs)}/{len(rs)}"  # noqa: E731
        print(f"  shipped rule refuses: answerable {refused(pos)}, held-out {refused(held)}, "
              f"unanswerable {refused(unans)}")
        for s in signals_shown:
            a = auc([r[s] for r in pos if r[s] is not None], [r[s] for r in held + unans if r[s] is not None])
            below = lambda rs: sum(1 for r in rs if r[s] is not None and r[s] < floors[s])  # noqa: E731
            print(f"  {s:<15} AUC {a:.3f}   at {floors[s]:.3f}: refuses answerable {below(pos)}/{len(pos)}, "
                  f"held-out {below(held)}/{len(held)}, unanswerable {below(unans)}/{len(unans)}")


if __name__ == "__main__":
    main()
