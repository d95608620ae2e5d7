"""What the reliability modules share: the acts they use, what they count, their notes, the kill -9 loop.

The reliability tests are four modules (test_reliability*.py) so that pytest-xdist can spread them over
its workers (a module stays on one worker; as one module they were the last ~4 minutes of the suite).
Each test notes what it observed; with PIPELINE_RELIABILITY_REPORT=path.json set, each module merges its
sections into that file when it ends (docs/reliability.md is made from them).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
from support.cli import run_cli
from support.corpus import ingestion
from support.database import DATA_TABLES, EMBEDDED_UNITS
from support.paths import ELI_MIRROR, REPO

from pipeline.storage import db
from pipeline.sources.fetch import SUMS_FILE

PDF_ACT = "DU/2026/548"  # 7-page PDF, 39 articles: the smallest PDF of the mirror
HTML_ACT = "DU/2019/914"  # tiny HTML act (4 articles)
HTML_ACT_2 = "DU/2024/1513"  # HTML, 35 articles
HTML_ACT_3 = "DU/2019/1026"  # HTML, 64 articles
TABLES = ("acts", "act_versions", "articles", "chunks", "chunk_pieces")

NOTES: dict[str, list[dict]] = {}


def note(section: str, **row) -> None:
    NOTES.setdefault(section, []).append(row)


def write_notes() -> None:
    """Merge this process's sections into the report (workers and modules each own whole sections;
    the file is locked while it is rewritten, since two workers may end a module at once)."""
    target = os.environ.get("PIPELINE_RELIABILITY_REPORT")
    if not target:
        return
    with open(target, "a+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        try:
            report = json.loads(f.read() or "{}")
        except ValueError:
            report = {}
        f.seek(0)
        f.truncate()
        f.write(json.dumps({**report, **NOTES}, ensure_ascii=False, indent=1, default=str))


def counts(url: str, tables: tuple[str, ...] = TABLES) -> dict[str, int]:
    with psycopg.connect(url) as c:
        return {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}  # fixed names


def broken_versions(url: str) -> list[tuple]:
    """Versions whose stored articles/chunks do not match the counts they declare (half-written)."""
    with psycopg.connect(url) as c:
        return c.execute("""
            SELECT v.eli, v.version_no, v.article_count, v.chunk_count,
                   (SELECT count(*) FROM articles a WHERE a.version_id = v.version_id),
                   (SELECT count(*) FROM chunks c WHERE c.version_id = v.version_id)
            FROM act_versions v
            WHERE v.article_count <> (SELECT count(*) FROM articles a WHERE a.version_id = v.version_id)
               OR v.chunk_count <> (SELECT count(*) FROM chunks c WHERE c.version_id = v.version_id)
               OR v.article_count = 0""").fetchall()


def versions_per_act(url: str) -> dict[str, int]:
    with psycopg.connect(url) as c:
        return dict(c.execute("SELECT eli, count(*) FROM act_versions GROUP BY eli").fetchall())


def stats_fresh(url: str) -> bool:
    """The BM25 statistics count every stored chunk text (else text search cannot see the missing ones)."""
    with psycopg.connect(url) as c:
        return c.execute("SELECT (SELECT chunks FROM corpus_stats) = "
                         "(SELECT count(DISTINCT content_sha256) FROM chunks)").fetchone()[0]


def runs(url: str, eli: str | None = None) -> list[tuple]:
    with psycopg.connect(url) as c:
        return c.execute("SELECT eli, status, message, finished_at IS NOT NULL FROM ingest_runs "
                         "WHERE %(e)s::text IS NULL OR eli = %(e)s ORDER BY run_id", {"e": eli}).fetchall()


def archive_problems(archive: Path) -> list[str]:
    """Act folders that are not complete (SHA256SUMS missing or not matching), and stray temp files."""
    problems = [str(p) for p in archive.rglob("*.tmp")]
    for d in {p.parent for p in archive.rglob("*") if p.is_file()}:
        sums = d / SUMS_FILE
        if not sums.is_file():
            problems.append(f"{d}: files without {SUMS_FILE}")
            continue
        for line in sums.read_text().splitlines():
            digest, _, name = line.partition("  ")
            if hashlib.sha256((d / name).read_bytes()).hexdigest() != digest:
                problems.append(f"{d / name}: sha256 mismatch")
    return problems


def error_lines(stderr: str) -> list[str]:
    return [line.strip() for line in stderr.splitlines() if line.startswith("Error:") or "failed:" in line]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def truncate(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f"TRUNCATE {DATA_TABLES} RESTART IDENTITY CASCADE")
        for (index,) in c.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'embeddings_hnsw_%'").fetchall():
            c.execute(f'DROP INDEX "{index}"')
        c.execute("SELECT refresh_search_stats()")


def ingest_from_mirror(url: str, *acts: str, model: str | None = None) -> None:
    with db.connect(url) as c, ingestion(c, url, model=model, archive_dir=Path("/nonexistent")) as run:
        for act in acts:
            r = run.act(act, source_dir=ELI_MIRROR)
            assert r.status == "new", r.error


# --- kill -9 at many points, then a rerun -------------------------------------------------------------

def ingest_args(acts: tuple[str, ...], embed_now: bool) -> list[str]:
    return ["ingest", "--source", str(ELI_MIRROR), *[f"--act={a}" for a in acts]] + ([] if embed_now else ["--no-embed"])


def chunks_without_vectors(url: str, model: str) -> int:
    """Texts of chunks or their pieces that have no vector."""
    with psycopg.connect(url) as c:
        return c.execute(f"SELECT count(*) FROM {EMBEDDED_UNITS} u WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
                         "WHERE e.content_sha256 = u.content_sha256 AND e.model = %s)", (model,)).fetchone()[0]


def run_and_kill(args: list[str], env: dict, point: tuple, jitter: float, url: str) -> tuple[bool, list[str]]:
    """Start `pipeline ARGS`, SIGKILL it at the point; (killed?, its stderr lines)."""
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", *args], env={**os.environ, **env}, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, bufsize=1)
    lines: list[str] = []
    seen = threading.Event()
    trigger = point[1] if point[0] == "line" else point[2] if point[0] == "sql" and len(point) > 2 else None

    def read() -> None:
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if trigger is not None and trigger in line:
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if point[0] == "after":
        time.sleep(point[1] + jitter)
    elif point[0] == "line":
        while not seen.wait(0.005) and proc.poll() is None:
            pass
        time.sleep(point[2] + jitter if seen.is_set() else 0)
    else:  # wait until the server runs that statement of this run, then kill at once
        while trigger is not None and not seen.wait(0.005) and proc.poll() is None:
            pass
        with psycopg.connect(url, autocommit=True) as watch:
            while proc.poll() is None and not watch.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' "
                    "AND pid <> pg_backend_pid() AND starts_with(query, %s)", (point[1],)).fetchone()[0]:
                time.sleep(0.001)  # not a spin: it took a core from the run it watches (a COPY lasts ms)
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    reader.join(timeout=10)
    return killed, lines


def kill_run(url: str, acts: tuple[str, ...], env: dict, points: list[tuple], label: str,
             embed_model: str | None, slow_down: Callable[[bool], None] = lambda on: None) -> None:
    """`slow_down(True)` before each killed run and `slow_down(False)` after it: a service made slow so
    that kill points land inside its calls needs to be slow only for the runs that get killed."""
    args = ingest_args(acts, embed_model is not None)
    # Every killed run parses for real, so the kill points land inside the parses (a cached parse is
    # instant). The reference run and the reruns, which are checked for what they store and not
    # killed, read the session's parse cache.
    kill_env = {**env, "PIPELINE_PARSE_CACHE": "off"}
    # A clean reference run: its counts are what every interrupted-then-rerun database must hold.
    truncate(url)
    t0 = time.monotonic()
    ref = run_cli(*args, env=env)
    assert ref.returncode == 0, ref.stderr
    reference = counts(url)
    assert versions_per_act(url) == dict.fromkeys(acts, 1)
    note(f"kill -9 ({label})", reference=reference, reference_seconds=round(time.monotonic() - t0, 1))

    rng = random.Random(20261129)
    for i, point in enumerate(points, start=1):
        truncate(url)
        jitter = rng.uniform(0, 0.1) if point[0] != "sql" else 0.0
        slow_down(True)
        try:
            killed, lines = run_and_kill(args, kill_env, point, jitter, url)
        finally:
            slow_down(False)
        after_kill = counts(url, TABLES + ("embedding_queue", "embeddings"))
        half_written = broken_versions(url)
        stuck = sum(1 for r in runs(url) if r[1] == "running")
        fresh_after_kill = stats_fresh(url)
        rerun = run_cli(*args, env=env)
        drained = run_cli("embed", env=env) if embed_model else None
        final = counts(url)
        if point[0] == "after":
            where = f"{point[1] + jitter:.2f} s after start"
        elif point[0] == "line":
            where = f"{point[2] + jitter:.2f} s after '{point[1].strip()}'"
        else:
            where = f"while the server runs '{point[1]}'" + (f" after '{point[2]}'" if len(point) > 2 else "")
        row = {"point": i, "kill": where, "killed": killed, "last_output": lines[-1].strip() if lines else "",
               "versions_after_kill": after_kill["act_versions"], "chunks_after_kill": after_kill["chunks"],
               "embeddings_after_kill": after_kill["embeddings"], "queued_after_kill": after_kill["embedding_queue"],
               "half_written": len(half_written), "runs_left_running": stuck,
               "stats_fresh_after_kill": fresh_after_kill, "rerun_exit": rerun.returncode,
               "rerun_summary": rerun.stderr.strip().splitlines()[-1] if rerun.stderr.strip() else "",
               "final_equals_reference": final == reference, "stats_fresh": stats_fresh(url)}
        if embed_model:
            row["embed_exit"] = drained.returncode
            row["chunks_without_vector"] = chunks_without_vectors(url, embed_model)
        note(f"kill -9 ({label})", **row)

        assert half_written == [], row
        assert rerun.returncode == 0, rerun.stderr
        assert versions_per_act(url) == dict.fromkeys(acts, 1), row
        assert final == reference, row
        assert broken_versions(url) == []
        if embed_model:
            assert drained.returncode == 0, drained.stderr
            assert row["chunks_without_vector"] == 0, row
            assert counts(url, ("embedding_queue",))["embedding_queue"] == 0
        assert row["stats_fresh_after_kill"] and row["stats_fresh"], row  # text search counts every stored text
    assert sum(row["killed"] for row in NOTES[f"kill -9 ({label})"][1:]) >= len(points) - 2  # the points did land
