"""What a hostile text costs the citation check (issue 49): the time and result size of the security probe's
inputs through `Service.check`, each in a child process of its own, under a memory and a time limit.

    python -m bench.hostile_check [--code DIR] [--timeout 300] [--memory-mb 2048] [--keep]

The inputs: "art. 1–20000 k.p." and "art. 1–100000000 k.p." (a range of 17 and 21 bytes), "art. 1 " repeated
to 100 000 characters (the finder: no act named, so nothing to check), and 20 000 characters of a letter's
mixed citations (codes, titles, ranges, units, "tej ustawy", a unit after its act was named). For each: the
check's wall seconds, the CPU seconds of the process calling it and of the database server's backend that
served it, the citations checked, those counted as not checked, and the size of the record as the faces
write it (JSON). ``--code DIR``: the children import `pipeline` from DIR, another checkout (the code before
issue 49's fix: `git archive 1c7d1b4 | tar -x -C DIR`); the database is made and filled by this checkout.

The database is `pipeline_bench_hostile` (the Labour Code, DU/2025/277, ingested from the mirror without
embedding) on an embedded server in $PIPELINE_HOME (default pipeline-bench-hostile in the system's
temporary folder), or on DATABASE_URL's server; `--keep` reuses it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DB = "pipeline_bench_hostile"
ACT = "DU/2025/277"

_LETTER = (
    "Szanowni Państwo, zgodnie z art. 154 § 1 pkt 2 k.p. urlop wynosi 26 dni, a art. 350 k.p. i art. 177 § 7 k.p. "
    "nic tu nie zmieniają; pracodawca udziela go na zasadach art. 161 i art. 163 § 1 tego kodeksu. Art. 10 ustawy "
    "(Dz. U. z 2024 r. poz. 1513) zakazuje spamu. Zgodnie z art. 17 ustawy o zawodzie psychologa psycholog jest "
    "niezależny. Ustawa o prawach pacjenta w art. 9 ust. 2 stanowi inaczej. Zob. art. 22 DU/2025/277 i art. 8–10 "
    "k. p. oraz art. 5 ust. 2 ustawy z dnia 6 listopada 2008 r. o prawach pacjenta i Rzeczniku Praw Pacjenta "
    "(Dz. U. z 2024 r. poz. 581). Art. 5 reguluje coś innego. Art. 5 k.p.k. i art. 3 KC. Dane przetwarzamy na "
    "podstawie art. 6 ust. 1 lit. c RODO oraz art. 22^1 § 1 Kodeksu pracy.\n")
CASES = [
    ("art. 1–20000 k.p.", "art. 1–20000 k.p."),
    ("art. 1–100000000 k.p.", "art. 1–100000000 k.p."),
    ('"art. 1 " to 100 000 characters', ("art. 1 " * 15000)[:100_000]),
    ("20 000 characters of a letter's citations", (_LETTER * (20_000 // len(_LETTER) + 1))[:20_000]),
]


def _child(url: str, index: int) -> None:
    """One check, in this process: its figures as one JSON line (imports only `pipeline`, whichever checkout's)."""
    try:
        import psutil
    except ImportError:  # the server's CPU is then not measured
        psutil = None
    from pipeline import Service, json_default

    text = CASES[index][1]
    with Service(url, pool_size=1, warm=False) as law:
        backend = law.reads.run(lambda conn: conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        server = psutil.Process(backend) if psutil else None
        server_cpu = (lambda: sum(server.cpu_times()[:2])) if server else (lambda: float("nan"))
        s0, c0, w0 = server_cpu(), time.process_time(), time.perf_counter()
        out: dict = {}
        try:
            checked = law.check(text)
        except MemoryError:
            out["error"] = "MemoryError"
        out.update(wall=time.perf_counter() - w0, cpu=time.process_time() - c0, server_cpu=server_cpu() - s0)
        if "error" not in out:
            record = checked.to_dict()
            out.update(citations=len(checked.citations), not_checked=record.get("not_checked", 0),
                       bytes=len(json.dumps(record, default=json_default, ensure_ascii=False).encode("utf-8")))
    print(json.dumps(out))


def _limit_memory(mb: int):
    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (mb * 2**20, mb * 2**20))
    return limit


def bench_database(keep: bool) -> str:
    """A migrated database holding the Labour Code (no embedding: a check reads no vector)."""
    import psycopg

    from bench import common

    url = common.scratch_database(common.server_url(common.tmp_path("pipeline-bench-hostile")), BENCH_DB, reuse=keep)
    with psycopg.connect(url) as c:
        stored = c.execute("SELECT count(*) FROM acts WHERE eli = %s", (ACT,)).fetchone()[0]
    if not stored:
        print(f"ingesting {ACT}…", file=sys.stderr, flush=True)
        archive = Path(tempfile.mkdtemp(prefix="pl-bench-hostile-dane-"))
        r = subprocess.run([sys.executable, "-m", "pipeline", "ingest", "--source", str(common.eli_dir()), "--act", ACT,
                            "--archive", str(archive), "--no-embed", "--json"], env={**os.environ, "DATABASE_URL": url},
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"ingest failed: {r.stderr[-2000:]}")
    return url


def main(argv: list[str] | None = None) -> None:
    from bench import common

    ap = common.parser(__doc__, epilog=True)
    ap.add_argument("--code", type=Path, help="import pipeline from this checkout in the children (the code before)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds a check may take before it is stopped")
    ap.add_argument("--memory-mb", type=int, default=2048, help="the address space a check's process may take")
    ap.add_argument("--keep", action="store_true", help="reuse the database of a previous run")
    args = ap.parse_args(argv)
    url = bench_database(args.keep)
    env = dict(os.environ)
    if args.code:
        env["PYTHONPATH"] = str(args.code.resolve())
    print(common.machine_line(load=True))
    print(f"code: {args.code or 'this checkout'}; limits: {args.timeout:.0f} s, {args.memory_mb} MB")
    print(f"| input | characters | wall s | CPU s (caller) | CPU s (server) | citations checked | not checked | "
          f"record bytes |\n|---|---|---|---|---|---|---|---|")
    for index, (name, text) in enumerate(CASES):
        try:
            r = subprocess.run([sys.executable, __file__, "--child", url, str(index)], env=env, capture_output=True,
                               text=True, timeout=args.timeout, preexec_fn=_limit_memory(args.memory_mb))
            lines = r.stdout.strip().splitlines()
            got = json.loads(lines[-1]) if r.returncode == 0 and lines else {"error": r.stderr.strip()[-300:]}
        except subprocess.TimeoutExpired:
            got = {"error": f"stopped after {args.timeout:.0f} s"}
        if "error" in got and "wall" not in got:
            print(f"| {name} | {len(text):,} | {got['error']} | | | | | |")
        elif "error" in got:
            print(f"| {name} | {len(text):,} | {got['wall']:.2f} | {got['cpu']:.2f} | {got['server_cpu']:.2f} | "
                  f"{got['error']} | | |")
        else:
            print(f"| {name} | {len(text):,} | {got['wall']:.2f} | {got['cpu']:.2f} | {got['server_cpu']:.2f} | "
                  f"{got['citations']:,} | {got['not_checked']:,} | {got['bytes']:,} |", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        sys.path.remove(str(Path(__file__).resolve().parent))  # run as a script: bench's modules are no top-level ones
        _child(sys.argv[2], int(sys.argv[3]))
    else:
        main()
