"""Many visitors on the page at once: searches, article pages, /acts and answers against a slow answer
model, for 1, 8 and 32 visitors, one and two serving processes, on the primary and on a standby.

    python -m bench.load [--seconds 15] [--model-delay 3] [--code DIR] [--label after] [--standby] [--keep]
                         [--long N] [--no-streams]

Each visitor loops for ``--seconds``: a search (40 %), an article page (30 %), /acts (15 %) or an answer
written whole (/answer, 15 %), each a whole GET over loopback HTTP; between them nothing (a worst case,
not a reader's pace) unless told to try again: then it waits the Retry-After it was given. The answer model is the chat stand-in of the tests (the real OpenAI protocol on
loopback) taking ``--model-delay`` seconds an answer. With two processes a visitor's requests alternate
between them, as a proxy would spread them. Then "8 answers streaming": 8 visitors keep
/answer/stream busy while 4 read article pages and /acts: the issue's target is their p95 ≤ 100 ms.

``--long N`` (issue 49): N more visitors each search with 5 000-character questions (the longest a face takes),
the row "long" beside the short searches' "search": do short searches still pass while long ones run?
``--no-streams`` leaves out the streaming run (a shorter run).

A 503 with Retry-After (the service's limit: try again) is counted apart; any other failure is an error.
``--code DIR`` serves (and ingests) with the pipeline checked out in DIR (a `git worktree` of the commit
before a change, and of the one after: never a tree being edited): each code gets a database of its own
(``--label``). ``--standby``: the serving
processes read from a streaming standby of the embedded server (`pipeline db replica`), the primary
taking nothing but the set-up.

The database holds DU/2019/914 (a few seconds to embed with the offline model), on an embedded server
in $PIPELINE_HOME (default pipeline-bench-load in the system's temporary folder).
"""
from __future__ import annotations

import concurrent.futures
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx

from bench import common
from bench.web_latency import free_port

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the chat stand-in lives with the tests

ACT = "DU/2019/914"
MIX = [("search", 40), ("article", 30), ("acts", 15), ("answer", 15)]
KINDS = [*(k for k, _ in MIX), "long"]


def bench_database(code: Path, label: str, keep: bool) -> str:
    """A database holding ACT, embedded, made by the code that will serve it (its own migrations: the code
    before a change may not know a later revision)."""
    import psycopg

    server = common.server_url(common.tmp_path("pipeline-bench-load"))
    name = f"pipeline_bench_load_{label}"
    url = common.with_dbname(server, name)
    with psycopg.connect(server, autocommit=True) as c:
        exists = c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists and keep:
            return url
        if exists:
            c.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        c.execute(f'CREATE DATABASE "{name}"')
    print(f"ingesting and embedding {ACT} with {code}…", flush=True)
    archive = Path(tempfile.mkdtemp(prefix="pl-bench-load-dane-"))
    r = subprocess.run([sys.executable, "-m", "pipeline", "ingest", "--source", str(common.eli_dir()), "--act", ACT,
                        "--archive", str(archive), "--no-amending-acts", "--json"], env=_env(code, url), cwd=code,
                       capture_output=True, text=True)
    if r.returncode != 0 and "no-amending-acts" in r.stderr:  # code from before the option: it fetches none
        r = subprocess.run([sys.executable, "-m", "pipeline", "ingest", "--source", str(common.eli_dir()), "--act",
                            ACT, "--archive", str(archive), "--json"], env=_env(code, url), cwd=code,
                           capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ingest failed: {r.stderr[-2000:]}")
    return url


def _env(code: Path, url: str, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(code), "DATABASE_URL": url, **extra}


def start_servers(code: Path, url: str, n: int, chat_url: str, read_url: str | None) -> list[tuple[subprocess.Popen, str]]:
    servers = []
    # Every answer asks the model (no refusal by similarity): the slow model is what is measured.
    extra = {"ANSWER_BASE_URL": chat_url, "ANSWER_MODEL": "stand-in", "ANSWER_API_KEY": "k",
             "ANSWER_MIN_SIMILARITY": "0"}
    if read_url:
        extra["DATABASE_READ_URL"] = read_url
    for _ in range(n):
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "pipeline", "serve", "--port", str(port)], cwd=code,
                                env=_env(code, url, **extra), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        servers.append((proc, f"http://127.0.0.1:{port}"))
    for proc, base in servers:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(base + "/acts", timeout=30).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                stop(servers)
                sys.exit("pipeline serve did not start")
            time.sleep(0.2)
    return servers


def stop(servers: list[tuple[subprocess.Popen, str]]) -> None:
    for proc, _ in servers:
        proc.terminate()
    for proc, _ in servers:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def articles_of(url: str) -> list[str]:
    import psycopg

    with psycopg.connect(url) as c:
        return [r[0] for r in c.execute("SELECT DISTINCT article FROM articles a JOIN act_versions v USING (version_id) "
                                        "WHERE v.eli = %s ORDER BY 1", (ACT,))]


def request(client: httpx.Client, base: str, kind: str, question: str, article: str) -> tuple[float, str]:
    """(seconds, outcome): "ok", "busy" (503, try again: the visitor waits Retry-After, as a page would ask
    a person to) or "error"."""
    path, params = {"search": ("/search", {"q": question}), "long": ("/search", {"q": long_question(question)}), "article": (f"/acts/{ACT}/art/{article}", None),
                    "acts": ("/acts", None), "answer": ("/answer", {"q": question}),
                    "stream": ("/answer/stream", {"q": question})}[kind]
    t0 = time.perf_counter()
    try:
        r = client.get(base + path, params=params)
        body = r.text
    except httpx.HTTPError:
        return time.perf_counter() - t0, "error"
    elapsed = time.perf_counter() - t0
    if r.status_code == 503 and r.headers.get("Retry-After"):
        time.sleep(float(r.headers["Retry-After"]))
        return elapsed, "busy"
    if kind == "stream":
        return elapsed, "busy" if "Spróbuj za" in body and "event: done" not in body else (
            "ok" if "event: done" in body else "error")
    return elapsed, "ok" if r.status_code == 200 else "error"


def long_question(question: str) -> str:
    """``question`` repeated to 5 000 characters (MAX_QUESTION_CHARS), cut at a word."""
    return (question + " ") * (5000 // (len(question) + 1)) if len(question) < 2500 else question[:5000]


def run(bases: list[str], visitors: int, seconds: float, questions: list[str], articles: list[str],
        kinds: list[tuple[str, int]] = MIX, seed: int = 0, long: int = 0) -> tuple[dict, float]:
    """Each visitor loops over ``kinds`` for ``seconds`` (``long`` more visitors over long searches alone):
    {kind: [(seconds, outcome)]}, wall time."""
    end = time.monotonic() + seconds

    def visitor(v: int) -> list[tuple[str, float, str]]:
        rng = random.Random(seed * 1000 + v)
        done = []
        with httpx.Client(timeout=120) as client:
            i = 0
            while time.monotonic() < end:
                kind = "long" if v >= visitors else rng.choices([k for k, _ in kinds], weights=[w for _, w in kinds])[0]
                base = bases[(v + i) % len(bases)]
                took, outcome = request(client, base, kind, rng.choice(questions), rng.choice(articles))
                done.append((kind, took, outcome))
                i += 1
        return done

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(visitors + long) as pool:
        results = [r for rs in pool.map(visitor, range(visitors + long)) for r in rs]
    wall = time.perf_counter() - t0
    by_kind: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for kind, took, outcome in results:
        by_kind[kind].append((took, outcome))
    return by_kind, wall


def row(label: str, by_kind: dict, wall: float) -> list[str]:
    lines = []
    for kind in [*KINDS, "stream"]:
        done = by_kind.get(kind)
        if not done:
            continue
        ok = [t * 1000 for t, o in done if o == "ok"]
        busy = sum(o == "busy" for _, o in done)
        errors = sum(o == "error" for _, o in done)
        p = (lambda q: f"{common.pct(ok, q):8.0f}" if ok else "       -")
        lines.append(f"| {label} | {kind} | {len(ok) / wall:6.2f} | {p(50)} | {p(95)} | {p(99)} | {busy} | {errors} |")
    return lines


def main() -> None:
    p = common.parser(__doc__, epilog=True)
    p.add_argument("--seconds", type=float, default=15.0, help="how long each configuration runs")
    p.add_argument("--model-delay", type=float, default=3.0, help="seconds the stand-in answer model takes")
    p.add_argument("--visitors", default="1,8,32", help="visitor counts, comma-separated")
    p.add_argument("--processes", default="1,2", help="serving process counts, comma-separated")
    p.add_argument("--code", type=Path, default=Path(__file__).resolve().parent.parent,
                   help="the pipeline checkout that serves (default: this one)")
    p.add_argument("--label", default="after", help="names this code's database and rows")
    p.add_argument("--standby", action="store_true", help="serve from a streaming standby (`pipeline db replica`)")
    p.add_argument("--keep", action="store_true", help="reuse the database of a previous run")
    p.add_argument("--long", type=int, default=0, help="more visitors, each searching with 5 000-character questions")
    p.add_argument("--no-streams", action="store_true", help="leave out the run of 8 streaming answers")
    args = p.parse_args()

    from chat_stand_in import ChatStandIn

    questions = common.question_texts(common.eval_dir()) or ["Odwołanie od uchwały Krajowej Rady Sądownictwa"]
    code = args.code.resolve()
    url = bench_database(code, args.label, args.keep)
    articles = articles_of(url)
    read_url, standby_home = None, None
    if args.standby:
        standby_home = Path(tempfile.mkdtemp(prefix="pl-bench-standby-"))
        code_env = {**os.environ, "PYTHONPATH": str(code)}
        r = subprocess.run([sys.executable, "-m", "pipeline", "db", "replica", "--home", str(standby_home)],
                           capture_output=True, text=True, env=code_env, cwd=code)  # of PIPELINE_HOME's server
        if r.returncode != 0:
            sys.exit(f"db replica failed: {r.stderr[-1000:]}")
        base_url = subprocess.run([sys.executable, "-m", "pipeline", "db", "url"], capture_output=True, text=True,
                                  env={**code_env, "PIPELINE_HOME": str(standby_home)}, cwd=code).stdout.strip()
        read_url = common.with_dbname(base_url, f"pipeline_bench_load_{args.label}")
    where = "standby" if args.standby else "primary"
    print(common.machine_line(load=True))
    print(f"code {code} ({args.label}); {where}; model delay {args.model_delay:g} s; {args.seconds:g} s each")
    print("| run | page | ok/s | p50 ms | p95 ms | p99 ms | try again | errors |")
    print("|---|---|---|---|---|---|---|---|")
    with ChatStandIn("Odpowiedź [DU/2019/914, art. 1].", delay=args.model_delay) as chat:
        chat_url = chat.base_url
        for n in [int(x) for x in args.processes.split(",")]:
            servers = start_servers(code, url, n, chat_url, read_url)
            bases = [b for _, b in servers]
            try:
                run(bases, 2, 3, questions, articles, [("search", 1), ("article", 1)])  # warm: model, dictionary, plans
                for visitors in [int(x) for x in args.visitors.split(",")]:
                    by_kind, wall = run(bases, visitors, args.seconds, questions, articles, seed=visitors,
                                        long=args.long)
                    long = f" + {args.long} long" if args.long else ""
                    print("\n".join(row(f"{args.label} {where} {n}p {visitors}v{long}", by_kind, wall)), flush=True)
                if args.no_streams:
                    continue
                # 8 visitors keep answers streaming while 4 read articles and /acts.
                with concurrent.futures.ThreadPoolExecutor(2) as both:
                    streams = both.submit(run, bases, 8, args.seconds, questions, articles, [("stream", 1)], 7)
                    time.sleep(0.5)
                    reads = both.submit(run, bases, 4, args.seconds - 1, questions, articles,
                                          [("article", 2), ("acts", 1)], 8)
                    s_kind, s_wall = streams.result()
                    r_kind, r_wall = reads.result()
                print("\n".join(row(f"{args.label} {where} {n}p 8 streams + 4 readers", {**r_kind, **s_kind},
                                    r_wall)), flush=True)
            finally:
                stop(servers)
    if standby_home:
        subprocess.run([sys.executable, "-m", "pipeline", "db", "stop"], cwd=code, capture_output=True,
                       env={**os.environ, "PYTHONPATH": str(code), "PIPELINE_HOME": str(standby_home)})


if __name__ == "__main__":
    main()
