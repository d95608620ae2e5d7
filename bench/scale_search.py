"""Search figures at 10k / 100k / 1M chunks of real text: latency, recall, QPS, ingest, sizes.

    python -m bench.scale_search measure --sizes 10000 100000 1000000   # one table, sizes side by side
    python -m bench.scale_search run --sizes 10000                      # build (bench.scale_build) + measure
    python -m bench.scale_search report --sizes 10000 100000            # the last figures again

The databases are bench.scale_build's (its docstring: how the data is made).

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

import datetime as dt
import json
import os
import platform
import statistics
import threading
import time
from pathlib import Path

# bench.scale_common first: it pins the BLAS threads before numpy loads.
from bench.scale_common import (admin, entry, exact_text_topk, get_state, hms, hnsw_indexes, index_scans_off, K,
    lat_summary, log, mean_recall, mib, MODEL, parser, prewarm, query_texts, query_vectors, recall, SEARCH,
    size_db, start, stats_are_views, with_dbname, write_atomic)
from bench.scale_build import build_sizes

import numpy as np  # noqa: E402


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


def hnsw_options(results: list[dict]) -> str:
    """The graph options of the measured indexes, per size (older results did not record them)."""
    per_size = [f"{r['size']:,}: " + ", ".join(f"{'halfvec' if 'halfvec' in d else 'vector'} {o}"
                                                for d, o in r.get("hnsw", {}).items())
                for r in results if r.get("hnsw")]
    return "; ".join(per_size) if per_size else "m=16, ef_construction=64"


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


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "scale_search", ("measure", "run", "report"),
                ("source", "export", "build", "graph", "server", "queries", "exact-text", "prewarm", "measure"))
    args = start(ap, argv)
    if args.command == "report":
        res = latest_results(args.work, args.sizes)
        if not res:
            raise SystemExit(f"no results in {args.work / 'results'}")
        print(report(res, args.work))
        return 0
    admin_url = admin(args, tune=True)
    if args.command == "run":
        build_sizes(args, admin_url)
    results = [r for r in (measure(args, admin_url, n) for n in args.sizes) if r]
    if results:
        print()
        print(report(results, args.work))
    return 0


if __name__ == "__main__":
    entry(main)
