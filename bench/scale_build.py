"""Build (or resume) databases of 10k / 100k / 1M chunks made from the real ELI mirror.

    python -m bench.scale_build export [--allow-partial]     # once: real chunks + vectors -> cache
    python -m bench.scale_build build --sizes 10000           # build (or resume) scale_10000
    python -m bench.scale_build status                        # where each build stands

Source: a real database of the whole mirror (default --source-home: $PIPELINE_SOURCE_HOME, else ../evaldb/home beside the repository, read only),
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
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import multiprocessing as mp
import os
import queue as queue_mod
import re
import threading
import time
from pathlib import Path

# bench.scale_common first: it pins the BLAS threads before numpy loads.
from bench.scale_common import (admin, as_array, DIM, entry, get_state, hms, hnsw_indexes, log, mib, MODEL, parser,
    relation_sizes, set_state, size_db, source_url, start, STATE_DDL, stats_are_views, write_atomic)

import numpy as np  # noqa: E402


# Variation of the text (see the module docstring).
P_KEEP_ARTICLE = 0.9


P_SENTENCE = 0.15


P_WORD = 0.15


P_ACT_WORD = 0.7


P_NUMBER = 0.5


COS_SPREAD = 0.022


MONTHS = ("stycznia", "lutego", "marca", "kwietnia", "maja", "czerwca", "lipca", "sierpnia", "września",
          "października", "listopada", "grudnia")


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
        raise SystemExit(f"no source export in {out}: run `python -m bench.scale_build export` first")
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
                         hashlib.sha256(article_text.encode()).hexdigest(), 0))
        text_hash.update(article_text.encode())
        chunks.append(parts)
    version = (act.source_format, hashlib.sha256(f"{eli}|{seed}".encode()).hexdigest(), text_hash.hexdigest(),
               act.valid_from or "2025-01-01", len(articles), p.chunks)
    return ActRows(meta, version, articles, chunks, vectors)


def store_act(conn, p: PlannedAct, rows: ActRows, worker: int, gen_s: float) -> dict[str, float]:
    """One act in one transaction, written by store.store_version's own steps (COPY)."""
    from pipeline.storage import store

    t: dict[str, float] = {"gen_s": gen_s}
    eli = rows.meta["ELI"]
    with conn.transaction():
        t0 = time.perf_counter()
        store.upsert_act(conn, rows.meta)
        fmt, src_sha, text_sha, valid_from, n_art, n_chunks = rows.version
        version_id = store.insert_version(conn, eli, 1, eli, fmt, src_sha, text_sha, valid_from, n_art, n_chunks, {})
        ids = store.copy_articles(conn, version_id, rows.articles)
        t1 = time.perf_counter()
        store.copy_chunks(conn, version_id, (
            (ids[ordinal], number, part_no, part_count, repealed, text, embed_text, sha)
            for (ordinal, number, *_), parts in zip(rows.articles, rows.chunks)
            for part_no, part_count, repealed, text, embed_text, sha in parts))
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


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "scale_build", ("export", "build", "status"),
                ("source", "export", "build", "graph", "server"))
    args = start(ap, argv)
    if args.command == "export":
        export(args)
        return 0
    admin_url = admin(args, tune=args.command == "build")
    if args.command == "status":
        status(admin_url, args.sizes)
        return 0
    build_sizes(args, admin_url)
    return 0


def build_sizes(args, admin_url: str) -> None:
    """Export first if there is no source cache, then build (or resume) every --sizes database."""
    if not (args.work / "source" / "manifest.json").exists():
        export(args)
    src = load_source(args.work)
    for n in args.sizes:
        build(args, admin_url, src, n)


if __name__ == "__main__":
    entry(main)
