"""End-to-end `pipeline search` wall time from a cold process, with a breakdown by stage.

    python -m bench.cli_latency [--runs 5] [--question "..."]

Uses the database the CLI would use (DATABASE_URL or the embedded server in PIPELINE_HOME), which
must already hold embedded acts (e.g. after the README's first command). Each run is a new Python
process, as a user's shell command is.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from bench import common

STAGES = r"""
import json, sys, time
t = [time.perf_counter()]
marks = {}
def mark(name):
    t.append(time.perf_counter()); marks[name] = t[-1] - t[-2]
import pipeline.interfaces.cli, pipeline.retrieval.search, pipeline.embedders
mark("imports")
from pipeline.storage import db, schema
from pipeline.retrieval import search
url = db.database_url(); mark("alembic import, server attach")
schema.ensure_current(url); mark("migration check")
conn = db.connect(url); mark("connect")
conn.execute("SELECT to_tsvector('polish', 'urlop')"); conn.rollback(); mark("Polish dictionary load (per connection)")
emb = pipeline.embedders.embedder_from_env(); v = emb.embed_query("rozgrzewka"); mark("model load + first query")
hits = search.search(conn, sys.argv[1], emb, settings=search.SearchSettings(k=5)); mark("search (embed query + SQL)")
from pipeline.retrieval.refusal import decide
search.vector_gap(conn, emb.name); decide(hits, emb.name); mark("warnings (queue check, refusal verdict)")
print(json.dumps({"marks": marks, "hits": len(hits)}))
"""


def main() -> int:
    ap = common.parser(__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--question", default="Ile dni urlopu na żądanie mogę wziąć w ciągu roku?")
    args = ap.parse_args()
    print(common.machine_line())

    walls = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "pipeline", "search", args.question, "--json"],
                           capture_output=True, text=True)
        walls.append(time.perf_counter() - t0)
        if r.returncode != 0:
            print(f"pipeline search failed: {r.stderr.strip()}")
            return 1
    print(f"`pipeline search` cold process, {args.runs} runs: median {statistics.median(walls):.2f}s, "
          f"min {min(walls):.2f}s, max {max(walls):.2f}s")

    stage_runs = []
    for _ in range(args.runs):
        r = subprocess.run([sys.executable, "-c", STAGES, args.question], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr)
            return 1
        stage_runs.append(json.loads(r.stdout.strip().splitlines()[-1])["marks"])
    print("breakdown (median seconds over runs, in one process, same order as the CLI):")
    total = 0.0
    for name in stage_runs[0]:
        value = statistics.median(run[name] for run in stage_runs)
        total += value
        print(f"  {name:<45} {value:6.3f}")
    print(f"  {'sum':<45} {total:6.3f}  (the rest of the wall time is interpreter start-up and exit)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
