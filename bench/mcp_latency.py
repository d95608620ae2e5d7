"""`search_law` through `pipeline mcp` against `pipeline search`: p50/p95 per call, one run, one machine.

    python -m bench.mcp_latency [--calls 50] [--cli-runs 50] [--keep]

Three ways to run the same hybrid search (k=5) over the Labour Code, with the dev questions in turn:

- **cold CLI**: `pipeline search "…" --json`, a new process per question, as a shell user runs it
  (imports, server attach, connection, Polish dictionary load, model load, then the search);
- **MCP**: `search_law` called through the official SDK client over stdio on one `pipeline mcp`
  process that keeps its connection, dictionary and model warm (client round trip, JSON included;
  the first call, which may wait for the warm-up, is not counted);
- **in process**: `pipeline.retrieval.search.search()` on a warm connection and model, the floor.

The three are interleaved question by question, so they share the machine's load.

The database is `pipeline_bench_mcp` on an embedded server in $PIPELINE_HOME (default
pipeline-bench-mcp in the system's temporary folder), or on DATABASE_URL's server; the Labour Code is ingested from the ELI
mirror and embedded with the local model (a few CPU minutes) unless `--keep` kept it from a
previous run. The machine and its load are printed: compare ratios measured in one run.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import common

BENCH_DB = "pipeline_bench_mcp"
ACT = "DU/2025/277"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def line(name: str, seconds: list[float]) -> str:
    return (f"{name:<12} n={len(seconds):<3} p50 {statistics.median(seconds) * 1000:8.1f} ms   "
            f"p95 {percentile(seconds, 95) * 1000:8.1f} ms   min {min(seconds) * 1000:8.1f} ms")


def bench_database(keep: bool) -> str:
    """A migrated database holding the Labour Code, embedded; reused when --keep kept it."""
    import psycopg

    url = common.scratch_database(common.server_url(common.tmp_path("pipeline-bench-mcp")), BENCH_DB, reuse=keep)
    with psycopg.connect(url) as c:
        embedded = c.execute("SELECT count(*) FROM current_chunks ch JOIN embeddings e USING (content_sha256) "
                             "WHERE ch.eli = %s", (ACT,)).fetchone()[0]
    if not embedded:
        print(f"ingesting and embedding {ACT} (local model; a few CPU minutes)…", flush=True)
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "pipeline", "ingest", "--source", str(common.eli_dir()),
                            "--act", ACT, "--archive", str(Path(os.environ.get("PIPELINE_HOME", common.tmp_path())) / "dane"),
                            "--json"], env={**os.environ, "DATABASE_URL": url}, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"ingest failed: {r.stderr.strip()}")
        print(f"  done in {time.perf_counter() - t0:.0f} s", flush=True)
    return url


def questions() -> list[str]:
    found = common.question_texts(common.eval_dir(), ("dev_questions.pl.jsonl", "seed_questions.pl.jsonl"))
    return found or ["Ile dni urlopu na żądanie mogę wziąć w ciągu roku?"]


def cli_once(url: str, question: str) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pipeline", "search", question, "-k", "5", "--json"],
                       env={**os.environ, "DATABASE_URL": url}, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"pipeline search failed: {r.stderr.strip()}")
    return time.perf_counter() - t0


def measure(url: str, qs: list[str], calls: int, cli_runs: int) -> dict[str, list[float] | float]:
    """Interleaved, so the three see the same machine load: per question one MCP call, one in-process
    call and (for the first cli_runs questions) one cold CLI run."""
    import anyio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from pipeline.storage import db
    from pipeline.retrieval import search
    from pipeline.embedders import embedder_from_env

    env = {"DATABASE_URL": url, **{k: v for k, v in os.environ.items() if k.startswith(("EMBED_", "PIPELINE_"))}}
    params = StdioServerParameters(command=sys.executable, args=["-m", "pipeline", "mcp"], env=env, cwd=str(common.REPO))
    embedder = embedder_from_env()
    out: dict[str, list[float] | float] = {"MCP": [], "in process": [], "cold CLI": []}

    async def session() -> None:
        t_start = time.perf_counter()
        async with Client(params) as client:
            first = await client.call_tool("search_law", {"query": "rozgrzewka", "k": 5})
            if first.is_error:
                sys.exit(f"search_law failed: {first.content[0].text}")
            out["ready"] = time.perf_counter() - t_start
            with db.connect(url) as conn:
                search.search(conn, "rozgrzewka", embedder, settings=search.SearchSettings(k=5))  # connection, dictionary and model warm
                for i in range(max(calls, cli_runs)):
                    q = qs[i % len(qs)]
                    if i < calls:
                        t0 = time.perf_counter()
                        result = await client.call_tool("search_law", {"query": q, "k": 5})
                        out["MCP"].append(time.perf_counter() - t0)
                        if result.is_error or len(result.structured_content["hits"]) != 5:
                            sys.exit(f"search_law failed: {result.content}")
                        t0 = time.perf_counter()
                        search.search(conn, q, embedder, settings=search.SearchSettings(k=5))
                        out["in process"].append(time.perf_counter() - t0)
                    if i < cli_runs:
                        out["cold CLI"].append(cli_once(url, q))

    anyio.run(session)
    return out


def main() -> int:
    ap = common.parser(__doc__)
    ap.add_argument("--calls", type=int, default=50, help="MCP and in-process calls")
    ap.add_argument("--cli-runs", type=int, default=50, help="cold `pipeline search` processes (the slow part)")
    ap.add_argument("--keep", action="store_true", help="keep (and reuse) the benchmark database")
    args = ap.parse_args()
    print(common.machine_line(load=True))
    url = bench_database(args.keep)
    qs = questions()
    print(f"{len(qs)} questions in turn; hybrid search, k=5, {ACT}", flush=True)
    m = measure(url, qs, args.calls, args.cli_runs)
    mcp_times, proc, cli = m["MCP"], m["in process"], m["cold CLI"]
    print(f"load after: {os.getloadavg()[0]:.1f}")
    print(line("cold CLI", cli))
    print(line("MCP", mcp_times) + f"   (server start to first answer {m['ready']:.2f} s)")
    print(line("in process", proc))
    print(f"p50 ratios: MCP / cold CLI = {statistics.median(mcp_times) / statistics.median(cli):.3f}, "
          f"MCP / in process = {statistics.median(mcp_times) / statistics.median(proc):.2f}")
    if not args.keep:
        from pipeline.storage import db

        common.drop_database(db.database_url(), BENCH_DB)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
