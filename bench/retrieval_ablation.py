"""Retrieval ablations on the development questions, split by the fixed rule (odd ids tune, even ids report).

Runs `search_chunks` with each fusion setting on every question of the dev file (and the seed
file, scored apart) against the database of PIPELINE_HOME / DATABASE_URL, and prints, per setting,
R@1/R@5/R@10/MRR of both halves and the seeds. Then calibrates the refusal rule on the tune half
(pipeline/retrieval/refusal.py signals: best similarity, arm agreement) and reports it on both halves.

    PIPELINE_HOME=../evaldb/home python -m bench.retrieval_ablation [--dev FILE] [--seed FILE] [--json OUT]

Only the tune half may choose a setting; the report half is printed to check that the choice
carries over (docs/retrieval.md).
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

from bench import common
from pipeline.storage import db
from pipeline.embedders import embedder_from_env, sparse_head
from pipeline.retrieval.evaluate import Question, load_questions, select_ids
from pipeline.retrieval.refusal import arms_agree
from pipeline.retrieval.search import ModelProfile, SearchSettings, profile, search


# Each setting on its own against the baseline (RRF 60, text weight 1.25). Options left out come from
# the model's profile (e5: fetch_k 100 since the convex profile; the previous one used 40).
SETTINGS: dict[str, dict] = {
    "rrf tw1.25 fetch_k 40 (previous profile)": dict(fusion="rrf", text_weight=1.25, vector_weight=1.0, fetch_k=40),
    "rrf tw1.25 (baseline)": dict(fusion="rrf", text_weight=1.25, vector_weight=1.0),
    "rrf tw1.0": dict(fusion="rrf", text_weight=1.0, vector_weight=1.0),
    "rrf tw0.5": dict(fusion="rrf", text_weight=0.5, vector_weight=1.0),
    "rrf tw0.25": dict(fusion="rrf", text_weight=0.25, vector_weight=1.0),
    "rrf k=10 tw1.0": dict(fusion="rrf", rrf_k=10, text_weight=1.0, vector_weight=1.0),
    "rrf tw1.0 fetch_k 100": dict(fusion="rrf", text_weight=1.0, vector_weight=1.0, fetch_k=100),
    "rrf tw1.25, no thesaurus in the query vector": dict(fusion="rrf", text_weight=1.25, vector_weight=1.0,
                                                         expand=False),
    "convex v0.8 t0.2": dict(fusion="convex", vector_weight=0.8, text_weight=0.2),
    "convex v0.7 t0.3": dict(fusion="convex", vector_weight=0.7, text_weight=0.3),
    "convex v0.6 t0.4": dict(fusion="convex", vector_weight=0.6, text_weight=0.4),
    "convex v0.5 t0.5": dict(fusion="convex", vector_weight=0.5, text_weight=0.5),
    "convex v0.7 t0.3 fetch_k 100": dict(fusion="convex", vector_weight=0.7, text_weight=0.3, fetch_k=100),
}
# The rows above were measured before the sparse arm (revision 0008): each keeps its meaning without it,
# except that the convex ones now normalise BM25 min-max, as search_chunks has since then.
for _opts in SETTINGS.values():
    _opts["sparse_weight"] = 0.0
# The sparse arm beside the convex 0.6 / 0.4 profile (where the embedder has a sparse head).
SETTINGS.update({f"convex v0.6 t0.4 + sparse {w}": dict(fusion="convex", vector_weight=0.6, text_weight=0.4,
                                                         sparse_weight=w) for w in (0.1, 0.2, 0.3, 0.4)})
K = 10


def _rank(hits, expect) -> int | None:
    gold = set(expect)
    return next((i for i, h in enumerate(hits, 1) if (h.act, h.article) in gold), None)


def _scores(ranks: list[int | None]) -> dict:
    n = len(ranks) or 1
    return {"n": len(ranks), "r1": sum(1 for r in ranks if r and r <= 1) / n,
            "r5": sum(1 for r in ranks if r and r <= 5) / n, "r10": sum(1 for r in ranks if r and r <= 10) / n,
            "mrr": sum(1 / r for r in ranks if r) / n}


class CachedEmbedder:
    """The question's vector once per question (settings only change the SQL)."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.name, self.backend, self.dimensions = inner.name, inner.backend, inner.dimensions

    @functools.lru_cache(maxsize=None)
    def embed_query(self, text: str):
        return self._inner.embed_query(text)

    @property
    def sparse_dimensions(self) -> int:
        return int(getattr(self._inner, "sparse_dimensions", 0) or 0)

    def embed_sparse(self, texts: list[str]) -> list:
        return [self._sparse(t) for t in texts]

    @functools.lru_cache(maxsize=None)
    def _sparse(self, text: str):
        return self._inner.embed_sparse([text])[0]


def run(conn, embedder, groups: dict[str, list[Question]], ingested: set[str], mode: str, opts: dict) -> dict:
    out, hits_by_id = {}, {}
    for name, qs in groups.items():
        ranks = []
        for q in qs:
            weights = {name: value for name, value in opts.items() if name != "expand"}
            fusion = profile(embedder.name).fusion.overridden(weights) if weights else None
            hits = search(conn, q.question, embedder if mode != "text" else None,
                          settings=SearchSettings(k=K, mode=mode, expand=opts.get("expand", True), fusion=fusion))
            hits_by_id[q.id] = hits
            if q.answerable and all(a in ingested for a, _ in q.expect):
                ranks.append(_rank(hits, q.expect))
        out[name] = _scores(ranks)
    return {"scores": out, "hits": hits_by_id}


def calibrate(groups: dict[str, list[Question]], hits: dict, ingested: set[str], prof: ModelProfile) -> dict:
    """Refusal thresholds from the tune half: the highest min_similarity that refuses no answerable
    tune question (≤ 5%), then the agreement rule's confident_similarity likewise."""
    def rows(qs):
        return [(q, hits[q.id][0].best_similarity if hits[q.id] else None, arms_agree(hits[q.id], prof))
                for q in qs if not q.answerable or all(a in ingested for a, _ in q.expect)]
    tune = rows(groups["tune"])
    answerable = sorted(s for q, s, _ in tune if q.answerable and s is not None)
    allowed = int(0.05 * len(answerable))  # false refusals allowed on the tune half
    floor = answerable[allowed] - 1e-4 if answerable else prof.min_similarity
    disagree = sorted(s for q, s, a in tune if q.answerable and s is not None and a is False)
    # Refusing disagreeing questions up to `confident` must keep the total within the allowance.
    left = allowed - sum(1 for s in answerable if s < floor)
    confident = disagree[left] - 1e-4 if len(disagree) > left else 1.0
    confident = max(confident, floor)
    result = {"min_similarity": round(floor, 4), "confident_similarity": round(confident, 4)}
    for name, qs in groups.items():
        rs = rows(qs)
        refused = {q.id: (s is None or s < floor or (a is False and s < confident)) for q, s, a in rs}
        un = [q for q, _, _ in rs if not q.answerable]
        an = [q for q, _, _ in rs if q.answerable]
        result[name] = {"unanswerable": len(un), "refused_unanswerable": sum(refused[q.id] for q in un),
                        "answerable": len(an), "refused_answerable": sum(refused[q.id] for q in an),
                        "similarity_only_refused_unanswerable": sum(1 for q, s, _ in rs
                                                                    if not q.answerable and (s is None or s < floor))}
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dev", type=Path, default=common.eval_dir() / "dev_questions.pl.jsonl")
    ap.add_argument("--seed", type=Path, default=common.eval_dir() / "seed_questions.pl.jsonl")
    ap.add_argument("--only", action="append", help="run only settings whose name contains this")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--signals", action="store_true", help="print the refusal signals of the tune questions")
    args = ap.parse_args()
    dev = load_questions(args.dev)
    groups = {"tune": select_ids(dev, "odd"), "report": select_ids(dev, "even"), "seed": load_questions(args.seed)}
    conn = db.connect(db.database_url())
    ingested = {r[0] for r in conn.execute("SELECT eli FROM current_versions")}
    conn.rollback()
    embedder = CachedEmbedder(embedder_from_env())
    results: dict = {"model": embedder.name, "settings": {}}
    print(f"model {embedder.name}; tune {len(groups['tune'])}, report {len(groups['report'])}, "
          f"seed {len(groups['seed'])} questions; k {K}")
    print(f"{'setting':<34} {'tune R@1 R@5 R@10  MRR':>26} | {'report R@1 R@5 R@10  MRR':>26} | seed R@5")
    runs = [("text arm", "text", {}), ("vector arm", "vector", {})]
    if sparse_head(embedder) is not None:
        runs.append(("sparse arm", "sparse", {}))
    runs += [(name, "hybrid", opts) for name, opts in SETTINGS.items()]
    for name, mode, opts in runs:
        if args.only and not any(o in name for o in args.only) and mode == "hybrid":
            continue
        t0 = time.time()
        r = run(conn, embedder, groups, ingested, mode, opts)
        s = r["scores"]
        results["settings"][name] = {"mode": mode, "options": opts, **s}
        if mode == "hybrid" and name.endswith("(baseline)"):
            results["baseline_hits"] = r["hits"]
        cells = [" ".join(f"{s[g][m]:.2f}" for m in ("r1", "r5", "r10")) + f" {s[g]['mrr']:.3f}" for g in ("tune", "report")]
        print(f"{name:<34} {cells[0]:>26} | {cells[1]:>26} | {s['seed']['r5']:.2f}  ({time.time() - t0:.0f}s)",
              flush=True)
        results["settings"][name]["_hits"] = r["hits"]
    # Refusal: calibrated on the tune half with the model's chosen fusion.
    prof = profile(embedder.name)
    chosen = {"fusion": prof.fusion.method, "text_weight": prof.fusion.text_weight, "vector_weight": prof.fusion.vector_weight,
              "sparse_weight": prof.fusion.sparse_weight, "rrf_k": prof.fusion.rrf_k, "fetch_k": prof.fusion.fetch_k}
    r = run(conn, embedder, groups, ingested, "hybrid", chosen)
    cal = calibrate(groups, r["hits"], ingested, prof)
    results["refusal"] = cal
    print(f"\nprofile {chosen}: tune MRR {r['scores']['tune']['mrr']:.3f}, report MRR {r['scores']['report']['mrr']:.3f}")
    print(f"refusal calibrated on tune: min_similarity {cal['min_similarity']}, "
          f"confident_similarity {cal['confident_similarity']} (agree_top {prof.agree_top}, depth {prof.agree_depth})")
    for g in ("tune", "report", "seed"):
        c = cal[g]
        print(f"  {g:<6} refused unanswerable {c['refused_unanswerable']}/{c['unanswerable']} "
              f"(similarity alone {c['similarity_only_refused_unanswerable']}), "
              f"refused answerable {c['refused_answerable']}/{c['answerable']}")
    if args.signals:  # the tune half only: per-question refusal signals, for diagnosis
        vec_hits = results["settings"]["vector arm"]["_hits"]
        for q in groups["tune"] + groups["seed"]:
            if q.answerable and not all(a in ingested for a, _ in q.expect):
                continue
            h, v = r["hits"][q.id], vec_hits[q.id]
            gap = (v[0].similarity - v[min(9, len(v) - 1)].similarity) if v else None
            print(f"  {q.id:<8} {'ans' if q.answerable else 'UNANS'} sim {h[0].best_similarity:.3f} "
                  f"agree {arms_agree(h, prof)} gap1-10 {gap:.3f} hybrid rank {_rank(h, q.expect) if q.expect else '-'}")
    if args.json:
        for v in results["settings"].values():
            v.pop("_hits", None)
        results.pop("baseline_hits", None)
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
