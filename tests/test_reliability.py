"""Reliability: faults while ingesting, bad input, kill -9, concurrent runs, dependencies that are down.

Everything runs against the real mirror (served over loopback HTTP by tests/eli_server.py where the
HTTP path matters) and the session's embedded PostgreSQL. Model servers are the loopback stand-ins.
Each test notes what it observed; with PIPELINE_RELIABILITY_REPORT=path.json set, the notes are
written there at the end (docs/reliability.md is made from them).
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from chat_stand_in import ChatStandIn
from conftest import (
    DATA_TABLES,
    ELI_MIRROR,
    EMBEDDED_UNITS,
    REPO,
    create_database,
    require_mirror,
    run_cli,
)
from eli_server import Fault, MirrorServer, start_mirror_server
from ollama_stand_in import OllamaStandIn

from pipeline.storage import db
from pipeline.indexing import embed, ingest
from pipeline.indexing.embedders import OllamaEmbedder
from pipeline.sources.fetch import SUMS_FILE, EliClient, act_dir
from pipeline.storage.store import lock_key as store_lock_key

PDF_ACT = "DU/2026/548"  # 7-page PDF, 39 articles: the smallest PDF of the mirror
HTML_ACT = "DU/2019/914"  # tiny HTML act (4 articles)
HTML_ACT_2 = "DU/2024/1513"  # HTML, 35 articles
HTML_ACT_3 = "DU/2019/1026"  # HTML, 64 articles
TABLES = ("acts", "act_versions", "articles", "chunks", "chunk_pieces")

NOTES: dict[str, list[dict]] = {}


def note(section: str, **row) -> None:
    NOTES.setdefault(section, []).append(row)


@pytest.fixture(scope="module", autouse=True)
def _write_notes():
    yield
    target = os.environ.get("PIPELINE_RELIABILITY_REPORT")
    if target:
        Path(target).write_text(json.dumps(NOTES, ensure_ascii=False, indent=1, default=str))


# --- helpers ---------------------------------------------------------------------------------------

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
    with db.connect(url) as c:
        for act in acts:
            r = ingest.ingest_act(c, url, act, model=model, archive_dir=Path("/nonexistent"), source_dir=ELI_MIRROR)
            assert r.status == "new", r.error


# --- 1. faults at the ingest level -------------------------------------------------------------------

RETRIES = 2  # 3 attempts per request; backoff 10 ms, request timeout 0.5 s (the CLI uses 4 retries, 1 s backoff)
SLOW = 1.2  # seconds: longer than the client's timeout

FAULTS = [
    # (case, act, path under /acts/ACT, faults, outcome, error text)
    ("meta 429 twice, then OK", HTML_ACT, "", [Fault.status(429, retry_after=0)] * 2, "new", None),
    ("pdf 503 twice, then OK", PDF_ACT, "/text.pdf", [Fault.status(503)] * 2, "new", None),
    ("meta slow once, then OK", HTML_ACT, "", [Fault.slow(SLOW)], "new", None),
    ("pdf truncated once, then OK", PDF_ACT, "/text.pdf", [Fault.truncated()], "new", None),
    ("meta 429 always", HTML_ACT, "", [Fault.status(429)] * (RETRIES + 1), "failed",
     "failed after 3 attempts: HTTP 429"),
    ("pdf 503 always", PDF_ACT, "/text.pdf", [Fault.status(503)] * (RETRIES + 1), "failed",
     "failed after 3 attempts: HTTP 503"),
    ("html slow always", HTML_ACT, "/text.html", [Fault.slow(SLOW)] * (RETRIES + 1), "failed",
     "failed after 3 attempts: timed out"),
    ("pdf truncated always", PDF_ACT, "/text.pdf", [Fault.truncated()] * (RETRIES + 1), "failed",
     "failed after 3 attempts: RemoteProtocolError: peer closed connection without sending complete message body"),
    ("meta 404", PDF_ACT, "", [Fault.not_found()], "failed", f"act {PDF_ACT} not found in the ELI API"),
    ("pdf 404", PDF_ACT, "/text.pdf", [Fault.not_found()], "failed", f"{PDF_ACT} has no text in the ELI API"),
    ("meta invalid JSON", HTML_ACT, "", [Fault.invalid_json()], "failed", "is not valid JSON"),
    ("html empty (textHTML true, no PDF)", HTML_ACT, "/text.html", [Fault.empty()], "failed",
     f"{HTML_ACT} has no text in the ELI API (metadata only) (its record lists text.html, which the API did not return)"),
    ("html is an error page", HTML_ACT, "/text.html", [Fault.invalid_json()], "failed",
     "no articles found in the HTML document"),
    ("pdf empty body", PDF_ACT, "/text.pdf", [Fault.empty()], "failed", "did not return a PDF"),
]


@pytest.mark.parametrize(("case", "act", "path", "faults", "outcome", "error"), FAULTS, ids=[f[0] for f in FAULTS])
def test_ingest_retries_transient_faults_and_fails_cleanly_on_lasting_ones(
        case, act, path, faults, outcome, error, server: MirrorServer, scratch_url: str, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    if outcome == "failed":
        # Something stored before: a failed fetch must leave it exactly as it was.
        ingest_from_mirror(scratch_url, HTML_ACT)
    before = counts(scratch_url)
    runs_before = len(runs(scratch_url))
    server.inject(f"/acts/{act}{path}", faults)
    client = EliClient(server.url, min_interval=0, backoff=0.01, max_retries=RETRIES, timeout=0.5)
    t0 = time.perf_counter()
    with db.connect(scratch_url) as c:
        result = ingest.ingest_act(c, scratch_url, act, model=None, archive_dir=archive, client=client)
    seconds = time.perf_counter() - t0
    client.close()
    requests = server.count(f"/acts/{act}{path}")
    note("faults", case=case, act=act, requests=requests, status=result.status, error=result.error,
         seconds=round(seconds, 1))

    assert result.status == outcome, result.error
    assert requests == len(faults) + (1 if outcome == "new" else 0)
    assert archive_problems(archive) == []
    last_run = runs(scratch_url, act)[-1]
    assert len(runs(scratch_url)) == runs_before + 1
    if outcome == "new":
        assert (result.version, result.articles) == (1, {PDF_ACT: 39, HTML_ACT: 4}[act])
        assert last_run == (act, "new", None, True)
        assert (act_dir(archive, ingest.parse_act_id(act)) / SUMS_FILE).is_file()
    else:
        assert error in result.error and "\n" not in result.error
        assert counts(scratch_url) == before  # nothing half-written
        assert broken_versions(scratch_url) == []
        assert last_run == (act, "failed", result.error, True)
        if "no articles" not in error:  # a fetch that failed archives nothing (a text that parses badly is kept)
            assert not act_dir(archive, ingest.parse_act_id(act)).exists()


def test_empty_html_of_an_act_that_also_has_a_pdf_falls_back_to_the_pdf(scratch_url: str, tmp_path: Path,
                                                                         mirror: Path) -> None:
    # A mirror in which the PDF act's metadata also announces an HTML text.
    root = tmp_path / "mirror"
    d = root / "acts" / PDF_ACT
    d.mkdir(parents=True)
    meta = json.loads((mirror / "acts" / PDF_ACT / "meta.json").read_bytes())
    (d / "meta.json").write_text(json.dumps({**meta, "textHTML": True}), encoding="utf-8")
    shutil.copy(mirror / "acts" / PDF_ACT / "text.pdf", d / "text.pdf")
    with start_mirror_server(root) as srv, db.connect(scratch_url) as c:
        srv.inject(f"/acts/{PDF_ACT}/text.html", [Fault.empty()])
        client = EliClient(srv.url, min_interval=0, backoff=0.01)
        result = ingest.ingest_act(c, scratch_url, PDF_ACT, model=None, archive_dir=tmp_path / "archive",
                                   client=client)
        client.close()
        html_requests, pdf_requests = srv.count(f"/acts/{PDF_ACT}/text.html"), srv.count(f"/acts/{PDF_ACT}/text.pdf")
    note("faults", case="html empty (textHTML true, PDF available)", act=PDF_ACT,
         requests=html_requests + pdf_requests, status=result.status, error=result.error,
         seconds=round(result.seconds, 1))
    assert (result.status, result.source_format, result.articles) == ("new", "pdf", 39)
    assert (html_requests, pdf_requests) == (1, 1)
    saved = sorted(p.name for p in act_dir(tmp_path / "archive", ingest.parse_act_id(PDF_ACT)).iterdir())
    assert saved == [SUMS_FILE, "meta.json", "text.pdf"]


# The CLI with its default retry policy (1 s backoff): only short faults.
CLI_FAULTS = [
    ("meta 503 once", "", [Fault.status(503)], 0, None),
    ("meta 404", "", [Fault.not_found()], 1, f"failed: act {HTML_ACT} not found in the ELI API"),
    ("meta invalid JSON", "", [Fault.invalid_json()], 1, "is not valid JSON"),
    ("text.html 404", "/text.html", [Fault.not_found()], 1, f"failed: {HTML_ACT} has no text in the ELI API"),
]


@pytest.mark.parametrize(("case", "path", "faults", "code", "error"), CLI_FAULTS, ids=[f[0] for f in CLI_FAULTS])
def test_cli_ingest_over_http_reports_faults_in_one_line(case, path, faults, code, error, server: MirrorServer,
                                                         scratch_url: str, tmp_path: Path) -> None:
    server.inject(f"/acts/{HTML_ACT}{path}", faults)
    done = run_cli("ingest", "--act", HTML_ACT, "--no-embed", "--archive", str(tmp_path / "archive"),
                   env={"DATABASE_URL": scratch_url, "ELI_API_URL": server.url}, timeout=120)
    errors = error_lines(done.stderr)
    note("cli faults", case=case, exit=done.returncode, message=errors[0] if errors else done.stderr.strip().splitlines()[-1])
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    if code == 0:
        assert errors == [] and counts(scratch_url)["act_versions"] == 1
        assert server.count(f"/acts/{HTML_ACT}") == 2
    else:
        assert len(errors) == 1 and error in errors[0], done.stderr
        assert counts(scratch_url) == dict.fromkeys(TABLES, 0)
        assert runs(scratch_url)[-1][:2] == (HTML_ACT, "failed")
    assert archive_problems(tmp_path / "archive") == []


# --- 2. bad input through the CLI -----------------------------------------------------------------------

@pytest.mark.parametrize("act", ["DU/abc", "XX/2025/1", "../../etc", "DU/2025/277/../../../etc/passwd", "DU/1800/1"])
def test_malformed_act_ids_are_refused_before_any_io(act: str, scratch_url: str, tmp_path: Path) -> None:
    done = run_cli("ingest", "--act", act, "--no-embed", "--archive", str(tmp_path / "archive"),
                   env={"DATABASE_URL": scratch_url, "ELI_API_URL": f"http://127.0.0.1:{closed_port()}"}, timeout=120)
    errors = error_lines(done.stderr)
    note("bad input", input=f"--act {act}", exit=done.returncode, message=errors[0] if errors else "",
         stored=counts(scratch_url)["act_versions"])
    # A usage error (exit 2), as a malformed id is for search, ask and show: nothing was attempted.
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith(f"Error: Invalid value for '--act': invalid act id {act.strip()!r}"), done.stderr
    assert counts(scratch_url) == dict.fromkeys(TABLES, 0) and runs(scratch_url) == []
    assert not (tmp_path / "archive").exists()


def _encrypted(pdf: bytes, user_password: str) -> bytes:
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(pdf)).pages[:2]:
        writer.add_page(page)
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _damaged(pdf: bytes, at: float, size: int = 20000) -> bytes:
    rng = random.Random(1)
    data = bytearray(pdf)
    start = int(len(data) * at)
    data[start:start + size] = bytes(rng.randrange(256) for _ in range(size))
    return bytes(data)


BIG = 50 * 1024 * 1024
ENGLISH = ("<html><head><title>Data Act</title></head><body><h1>DATA ACT 2024</h1>"
           "<p>Article 1. This Act lays down rules on data.</p><p>Article 2. Definitions.</p>"
           "<p>Section 3. The Minister may issue regulations.</p></body></html>")
BAD_FILES = [
    # (case, file name, builder(real pdf bytes) -> bytes, exit code, expected message or article count)
    ("PDF cut at 60%", "D20260548.pdf", lambda pdf: pdf[: int(len(pdf) * 0.6)], 1, "failed: corrupt PDF: "),
    ("PDF with 20 kB overwritten at 20%", "D20260548.pdf", lambda pdf: _damaged(pdf, 0.2), 1,
     "failed: cannot read PDF text: "),
    ("PDF with 20 kB overwritten at 5%", "D20260548.pdf", lambda pdf: _damaged(pdf, 0.05), 1,
     "failed: no articles found in PDF"),
    ("PDF with 20 kB overwritten at 50% (a font/image stream)", "D20260548.pdf", lambda pdf: _damaged(pdf, 0.5), 0, 39),
    ("encrypted PDF (user password)", "D20260548.pdf", lambda pdf: _encrypted(pdf, "tajne"), 1,
     "failed: PDF is encrypted"),
    ("encrypted PDF (empty user password)", "D20260548.pdf", lambda pdf: _encrypted(pdf, ""), 1,
     "failed: PDF is encrypted"),
    ("HTML without articles", "D20260548.html", lambda pdf: b"<html><body><h1>Komunikat</h1><p>Brak tekstu.</p></body></html>",
     1, "failed: no articles found in the HTML document"),
    ("English HTML with 'Article 1.'", "D20260548.html", lambda pdf: ENGLISH.encode(), 1,
     "failed: no articles found in the HTML document"),
    ("empty file", "D20260548.pdf", lambda pdf: b"", 1, "failed: D20260548.pdf is empty"),
    ("whitespace only", "D20260548.html", lambda pdf: b" \n\t\n" * 100, 1, "failed: D20260548.html is empty"),
    ("50 MB of random bytes after %PDF-", "D20260548.pdf", lambda pdf: b"%PDF-1.7\n" + random.Random(2).randbytes(BIG), 1,
     "failed: corrupt PDF: "),
    ("50 MB of random bytes, no header", "D20260548.pdf", lambda pdf: random.Random(3).randbytes(BIG), 1,
     "failed: D20260548.pdf is neither a PDF nor an HTML document"),
    ("real PDF + 50 MB of padding", "D20260548.pdf", lambda pdf: pdf + b"\n%" + b"x" * BIG + b"\n", 0, 39),
    ("50 MB HTML of whitespace", "D20260548.html", lambda pdf: b"<html><body>" + b" " * BIG + b"</body></html>", 1,
     "failed: no articles found in the HTML document"),
]


@pytest.mark.parametrize(("case", "name", "build", "code", "expect"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_files_give_one_line_errors_or_a_sensible_result(case, name, build, code, expect, scratch_url: str,
                                                              tmp_path: Path, mirror: Path) -> None:
    path = tmp_path / name
    path.write_bytes(build((mirror / "acts" / PDF_ACT / "text.pdf").read_bytes()))
    t0 = time.perf_counter()
    done = run_cli("ingest", str(path), "--no-embed", "--json", env={"DATABASE_URL": scratch_url}, timeout=300)
    seconds = time.perf_counter() - t0
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    (result,) = report.get("acts", [{}])
    note("bad input", input=f"{case} ({path.stat().st_size:,} bytes)", exit=done.returncode,
         message=(f"failed: {result['error']}" if result.get("error") else
                  f"{result.get('status')}: {result.get('articles')} articles") if result else done.stderr.strip(),
         seconds=round(seconds, 1), stored=counts(scratch_url)["act_versions"])
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    assert seconds < 120  # no hang
    if code == 0:
        assert (result["status"], result["articles"]) == ("new", expect)
        assert broken_versions(scratch_url) == [] and counts(scratch_url)["act_versions"] == 1
        # Not a partial or garbled text: exactly the articles of the undamaged PDF.
        from pipeline.sources.chunk import text_sha256
        from pipeline.sources.parse.pdf import parse_pdf

        intact = text_sha256(parse_pdf((mirror / "acts" / PDF_ACT / "text.pdf").read_bytes()).articles)
        with psycopg.connect(scratch_url) as c:
            assert c.execute("SELECT text_sha256 FROM act_versions").fetchone()[0] == intact
    else:
        assert result["status"] == "failed" and f"failed: {result['error']}".startswith(expect), result
        assert "\n" not in result["error"]
        assert counts(scratch_url) == dict.fromkeys(TABLES, 0)
        assert runs(scratch_url) == [(PDF_ACT, "failed", result["error"], True)]
        if len(path.read_bytes()) > 1_000_000:
            return
        # Without --json the same failure is one line.
        plain = run_cli("ingest", str(path), "--no-embed", env={"DATABASE_URL": scratch_url}, timeout=300)
        assert plain.returncode == 1 and [line for line in error_lines(plain.stderr)] == [f"failed: {result['error']}"]


# --- 3. kill -9 at many points, then a rerun --------------------------------------------------------------

KILL_ACTS = (PDF_ACT, HTML_ACT_2, HTML_ACT_3)
EMBED_KILL_ACTS = (HTML_ACT_2, HTML_ACT_3)
# Kill points: ("after", seconds) from the start; ("line", text, seconds) after the run printed a progress
# line containing text; ("sql", text[, line]) while one of its statements starting with text runs in the
# server (after it printed line, when given).
# Times get a seeded jitter, so points land at different spots of each phase.
# (One point per phase: two more, 0.4 s after the start and 0.5 s into the PDF's parse, landed in the
# same phases as their neighbours, before anything is written, and were dropped to keep the suite
# within its five minutes.)
KILL_POINTS = [
    ("after", 0.05), ("line", "[1/3]", 0.0), ("line", "DU/2026/548: parsing PDF", 0.1),
    ("sql", "COPY chunks"), ("sql", "COPY chunks", "[2/3]"),
    ("line", "[2/3]", 0.0), ("line", "DU/2024/1513: parsing HTML", 0.05), ("sql", "COPY articles", "[2/3]"),
    ("line", "[3/3]", 0.05), ("line", "DU/2019/1026: parsing HTML", 0.2),
    ("sql", "COPY chunks", "[3/3]"), ("line", " act(s): ", 0.0),
]
EMBED_KILL_POINTS = [
    ("after", 0.3), ("line", "DU/2024/1513: parsing HTML", 0.1), ("sql", "COPY chunks"),
    ("line", "[2/2]", 0.1), ("sql", "COPY chunks", "[2/2]"), ("line", "embedding (bge-m3)", 0.0),
    ("sql", "COPY embeddings"),
    ("line", "embedding (bge-m3)", 0.4), ("line", "embedding (bge-m3)", 0.9),
]


def _ingest_args(acts: tuple[str, ...], embed_now: bool) -> list[str]:
    return ["ingest", "--source", str(ELI_MIRROR), *[f"--act={a}" for a in acts]] + ([] if embed_now else ["--no-embed"])


def _chunks_without_vectors(url: str, model: str) -> int:
    """Texts of chunks or their pieces that have no vector."""
    with psycopg.connect(url) as c:
        return c.execute(f"SELECT count(*) FROM {EMBEDDED_UNITS} u WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
                         "WHERE e.content_sha256 = u.content_sha256 AND e.model = %s)", (model,)).fetchone()[0]


def _run_and_kill(args: list[str], env: dict, point: tuple, jitter: float, url: str) -> tuple[bool, list[str]]:
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
                pass
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    reader.join(timeout=10)
    return killed, lines


def _kill_run(url: str, acts: tuple[str, ...], env: dict, points: list[tuple], label: str,
              embed_model: str | None, slow_down: Callable[[bool], None] = lambda on: None) -> None:
    """`slow_down(True)` before each killed run and `slow_down(False)` after it: a service made slow so
    that kill points land inside its calls needs to be slow only for the runs that get killed."""
    args = _ingest_args(acts, embed_model is not None)
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
            killed, lines = _run_and_kill(args, kill_env, point, jitter, url)
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
            row["chunks_without_vector"] = _chunks_without_vectors(url, embed_model)
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


@pytest.mark.slow  # 12 ingest runs killed and rerun
def test_kill_9_during_ingest_then_rerun_completes_without_duplicates(scratch_url: str) -> None:
    require_mirror()
    _kill_run(scratch_url, KILL_ACTS, {"DATABASE_URL": scratch_url}, KILL_POINTS, "no embedding", None)


@pytest.mark.slow  # 10 ingest runs killed, rerun and drained
def test_kill_9_during_ingest_with_embedding_then_rerun_and_embed_complete(scratch_url: str) -> None:
    require_mirror()
    with OllamaStandIn({"bge-m3": 1024}) as ollama:
        env = {"DATABASE_URL": scratch_url, "EMBED_BACKEND": "ollama", "OLLAMA_URL": ollama.url,
               "EMBED_MODEL": "bge-m3", "EMBED_BATCH_SIZE": "8"}

        def slow_down(on: bool) -> None:
            # A batch of the killed run takes a moment, so kills also land inside the drain; the
            # reference run and the reruns are checked for what they store, and need no delay.
            ollama.delay = 0.05 if on else 0.0

        _kill_run(scratch_url, EMBED_KILL_ACTS, env, EMBED_KILL_POINTS, "embedding via Ollama stand-in", "bge-m3",
                  slow_down)


def test_text_search_sees_an_act_whose_ingest_died_right_after_its_commit(scratch_url: str) -> None:
    """A kill -9 right after store_version() committed: the BM25 statistics must already count the version.

    (They once were refreshed in a transaction of their own, after the commit: a kill in between left
    them stale, and the rerun, finding the text unchanged, never refreshed them.)"""
    from pipeline.storage import store
    from pipeline.sources.parse.html import parse_html

    d = require_mirror() / "acts" / HTML_ACT_3
    truncate(scratch_url)  # statistics of an empty corpus
    data, meta = (d / "text.html").read_bytes(), json.loads((d / "meta.json").read_bytes())
    with db.connect(scratch_url) as c:
        store.store_version(c, meta, parse_html(data), source_sha256=hashlib.sha256(data).hexdigest(), model=None)
    # ...the process dies here. The user runs the same ingest again:
    rerun = run_cli("ingest", "--source", str(ELI_MIRROR), "--act", HTML_ACT_3, "--no-embed", "--json",
                    env={"DATABASE_URL": scratch_url})
    assert rerun.returncode == 0 and json.loads(rerun.stdout)["acts"][0]["status"] == "unchanged"
    found = run_cli("search", "psycholog", "--mode", "text", "--json", env={"DATABASE_URL": scratch_url})
    hits = json.loads(found.stdout)
    note("kill -9 (targeted)", case="right after the version's transaction committed",
         stats_fresh_after_rerun=stats_fresh(scratch_url), text_hits_for_psycholog=len(hits))
    assert stats_fresh(scratch_url)
    assert len(hits) == 5 and {h["act"] for h in hits} == {HTML_ACT_3}


# --- 4. concurrency --------------------------------------------------------------------------------------

def test_two_ingests_of_one_act_at_once_store_one_version(scratch_url: str) -> None:
    require_mirror()
    args = [sys.executable, "-m", "pipeline", *_ingest_args((HTML_ACT_3,), False), "--json"]
    env = {**os.environ, "DATABASE_URL": scratch_url}
    # The act's store lock is held here until both runs are under way, so they meet at it however the
    # machine schedules their start (a cached parse takes milliseconds; a loaded machine, seconds).
    with psycopg.connect(scratch_url, autocommit=True) as gate:
        gate.execute("SELECT pg_advisory_lock(%s)", (store_lock_key(HTML_ACT_3),))
        procs = [subprocess.Popen(args, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        deadline = time.monotonic() + 120
        while gate.execute("SELECT count(*) FROM ingest_runs WHERE status = 'running'").fetchone()[0] < 2:
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a run did not start"
            time.sleep(0.02)
        gate.execute("SELECT pg_advisory_unlock(%s)", (store_lock_key(HTML_ACT_3),))
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    statuses = sorted(json.loads(out)["acts"][0]["status"] for out, _ in outs)
    with psycopg.connect(scratch_url) as c:
        # Both runs were under way at the same time (each run's interval contains the other's start).
        (overlap,) = c.execute("""SELECT bool_and(a.started_at < b.finished_at) FROM ingest_runs a, ingest_runs b
                                  WHERE a.run_id <> b.run_id""").fetchone()
    note("concurrency", case="two `ingest` of one act at once", statuses=statuses, overlapped=overlap,
         versions=versions_per_act(scratch_url))
    assert statuses == ["new", "unchanged"]
    assert versions_per_act(scratch_url) == {HTML_ACT_3: 1}
    assert broken_versions(scratch_url) == []
    assert overlap


def test_search_during_an_ingest_of_a_new_version_sees_one_version_per_answer(scratch_url: str,
                                                                             tmp_path: Path) -> None:
    from pipeline.retrieval.search import search

    mirror = require_mirror()
    act = "DU/2024/581"  # patient rights: "pacjent" is in most articles
    ingest_from_mirror(scratch_url, act)
    src, dst = mirror / "acts" / act, tmp_path / "acts" / act
    dst.mkdir(parents=True)
    shutil.copy(src / "meta.json", dst / "meta.json")
    html = (src / "text.html").read_text(encoding="utf-8")
    (dst / "text.html").write_text(html.replace("może być obecna osoba bliska", "może być obecna osoba bliska lub opiekun"),
                                   encoding="utf-8")

    answers: list[list[int]] = []
    stop = threading.Event()

    def searching() -> None:
        with db.connect(scratch_url) as c:
            while not stop.is_set():
                answers.append([h.chunk_id for h in search(c, "prawa pacjenta do informacji", None, k=10, mode="text")])

    worker = threading.Thread(target=searching)
    worker.start()
    try:
        time.sleep(0.5)
        done = run_cli("ingest", "--source", str(tmp_path), "--act", act, "--no-embed", env={"DATABASE_URL": scratch_url})
        time.sleep(0.5)
    finally:
        stop.set()
        worker.join(timeout=60)
    assert done.returncode == 0, done.stderr
    with psycopg.connect(scratch_url) as c:
        version_of = dict(c.execute("SELECT chunk_id, version_id FROM chunks").fetchall())
    per_answer = [{version_of[i] for i in ids} for ids in answers]
    seen = sorted({v for vs in per_answer for v in vs})
    note("concurrency", case="text search in a loop while `ingest` stores version 2",
         searches=len(answers), versions_seen=seen, mixed_answers=sum(len(v) > 1 for v in per_answer),
         empty_answers=sum(not ids for ids in answers))
    assert all(len(ids) == 10 for ids in answers)  # never an empty or short answer mid-ingest
    assert all(len(v) == 1 for v in per_answer)  # every answer from one version
    assert seen == [1, 2]  # the searches did span the switch
    # ...and in order: once version 2 answers, version 1 never does again.
    firsts = [v.pop() for v in per_answer]
    assert firsts == sorted(firsts)


# --- 5. dependencies that are down ----------------------------------------------------------------------

DOWN_DB = "postgresql://pipeline:pw-secret-4711@127.0.0.1:{port}/law"


@pytest.mark.parametrize("args", [
    ["ingest", "--source", str(ELI_MIRROR), "--act", HTML_ACT, "--no-embed"],
    ["search", "urlop", "--mode", "text"],
    ["show", "DU/2024/581", "1"],
    ["ask", "Ile dni urlopu?", "--offline"],
    ["embed"],
    ["db", "upgrade"],
], ids=lambda a: a[0] if a[0] != "db" else "db upgrade")
def test_unreachable_database_is_one_line_with_the_fix_and_no_password(args: list[str]) -> None:
    done = run_cli(*args, env={"DATABASE_URL": DOWN_DB.format(port=closed_port())}, timeout=120)
    errors = error_lines(done.stderr)
    note("dependencies down", case=f"database down: {' '.join(args[:2]) if args[0] == 'db' else args[0]}",
         exit=done.returncode, message=errors[0] if errors else done.stderr.strip())
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert errors[0].startswith("Error: cannot connect to the database") and "check DATABASE_URL" in errors[0], errors
    assert "pw-secret-4711" not in done.stdout + done.stderr


@pytest.fixture(scope="module")
def ollama():
    with OllamaStandIn({"bge-m3": 1024}) as server:
        yield server


@pytest.fixture(scope="module")
def answer_url(server_url, ollama) -> str:
    """A database with one act, embedded through the Ollama stand-in."""
    require_mirror()
    url = create_database(server_url, "reliability_answer")
    embedder = OllamaEmbedder(ollama.url, "bge-m3")
    ingest_from_mirror(url, HTML_ACT_2, model=embedder.name)
    with db.connect(url) as c:
        embed.drain(c, embedder, batch_size=64)
    return url


def _ollama_env(url: str, ollama_url: str) -> dict:
    return {"DATABASE_URL": url, "EMBED_BACKEND": "ollama", "OLLAMA_URL": ollama_url, "EMBED_MODEL": "bge-m3"}


QUESTION = "Czy usługodawca musi podać swój adres elektroniczny?"


def test_ollama_down_search_and_ask_say_so_in_one_line(answer_url: str) -> None:
    env = _ollama_env(answer_url, f"http://127.0.0.1:{closed_port()}")
    for args in (["search", QUESTION], ["ask", QUESTION, "--offline"]):
        done = run_cli(*args, env=env, timeout=120)
        note("dependencies down", case=f"Ollama unreachable: {args[0]}", exit=done.returncode,
             message=done.stderr.strip())
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert done.stderr.strip().splitlines() == [
            f"Error: cannot reach Ollama at {env['OLLAMA_URL']} (is `ollama serve` running? set OLLAMA_URL)"]


def test_ollama_model_missing_names_the_pull_command(answer_url: str) -> None:
    with OllamaStandIn({"nomic-embed-text": 768}) as other:
        done = run_cli("search", QUESTION, env=_ollama_env(answer_url, other.url), timeout=120)
    note("dependencies down", case="Ollama without the model: search", exit=done.returncode, message=done.stderr.strip())
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"Error: model bge-m3 is not available in Ollama at {other.url}; run: ollama pull bge-m3"]


def test_ingest_with_ollama_down_keeps_the_text_and_the_queue_for_later(scratch_url: str, ollama) -> None:
    require_mirror()
    env = _ollama_env(scratch_url, f"http://127.0.0.1:{closed_port()}")
    done = run_cli(*_ingest_args((HTML_ACT,), True), env=env, timeout=120)
    with psycopg.connect(scratch_url) as c:
        queued, failing = c.execute("SELECT count(*), count(last_error) FROM embedding_queue").fetchone()
        texts = c.execute(f"SELECT count(DISTINCT content_sha256) FROM {EMBEDDED_UNITS} u").fetchone()[0]
    note("dependencies down", case="Ollama unreachable: ingest (embedding)", exit=done.returncode,
         message=error_lines(done.stderr)[-1], versions=counts(scratch_url)["act_versions"], queued=queued)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert error_lines(done.stderr) == [
        f"Error: cannot reach Ollama at {env['OLLAMA_URL']} (is `ollama serve` running? set OLLAMA_URL); the 1 act(s) "
        "are stored and their texts queued: `pipeline embed` computes the vectors once the model answers"]
    # The text is stored (one transaction, committed before embedding); its vectors wait in the queue.
    assert versions_per_act(scratch_url) == {HTML_ACT: 1} and broken_versions(scratch_url) == []
    assert queued == texts >= 4 and failing == 1  # every text of its chunks and their pieces
    later = run_cli("embed", env=_ollama_env(scratch_url, ollama.url), timeout=120)
    assert later.returncode == 0, later.stderr
    assert _chunks_without_vectors(scratch_url, "bge-m3") == 0


def test_ask_without_a_key_answers_offline_with_the_note(answer_url: str, ollama) -> None:
    env = {**_ollama_env(answer_url, ollama.url), "ANSWER_MIN_SIMILARITY": "0"}
    done = run_cli("ask", QUESTION, env=env, timeout=120)
    note("dependencies down", case="no LLM key: ask", exit=done.returncode, message=done.stderr.strip().splitlines()[-1])
    assert done.returncode == 0, done.stderr
    assert "Bez modelu językowego" in done.stdout and f"[{HTML_ACT_2}, art." in done.stdout
    assert done.stderr.strip().splitlines()[-1] == (
        "(no model configured (set OPENROUTER_API_KEY or ANSWER_BASE_URL); extractive answer)")


def test_ask_with_a_rejected_key_is_one_line_without_the_key(answer_url: str, ollama) -> None:
    key = "sk-wrong-secret-9876543210"
    with ChatStandIn("Odpowiedź.", api_key="sk-the-right-one-000000") as chat:
        env = {**_ollama_env(answer_url, ollama.url), "ANSWER_MIN_SIMILARITY": "0",
               "ANSWER_BASE_URL": chat.base_url, "ANSWER_API_KEY": key}
        for args in (["ask", QUESTION], ["ask", QUESTION, "--json"], ["ask", QUESTION, "--rewrite"]):
            done = run_cli(*args, env=env, timeout=120)
            errors = error_lines(done.stderr)
            note("dependencies down", case=f"LLM rejects the key (401): {' '.join(a for a in args if a != QUESTION)}",
                 exit=done.returncode, message=errors[-1] if errors else done.stderr.strip())
            assert done.returncode == 1 and "Traceback" not in done.stderr
            assert key not in done.stdout + done.stderr
            server = chat.base_url.split("//")[1].split("/")[0]
            assert errors == [f"Error: {server} rejected the API key (401): check ANSWER_API_KEY"], done.stderr
    assert chat.requests and all(r.headers["authorization"] == f"Bearer {key}" for r in chat.requests)


# --- 7. doctor ------------------------------------------------------------------------------------------

@pytest.fixture()
def fresh_home():
    home = Path(tempfile.mkdtemp(prefix="pl-rel-", dir="/tmp"))
    os.chmod(home, 0o755)  # as root the server runs as the embedded_postgres user
    yield home
    subprocess.run([sys.executable, "-m", "pipeline", "db", "stop"], env={**os.environ, "PIPELINE_HOME": str(home)},
                   capture_output=True, timeout=120, check=False)
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.slow  # a new embedded server and the real local model
def test_doctor_on_a_healthy_embedded_setup_has_no_failures(fresh_home: Path) -> None:
    # No DATABASE_URL: the embedded server in a new PIPELINE_HOME, as a first-time user has it; the local model.
    env = {"PIPELINE_HOME": str(fresh_home)}
    assert run_cli("db", "upgrade", env=env, timeout=300).returncode == 0
    done = run_cli("doctor", "--json", env=env, timeout=300)
    text = run_cli("doctor", env=env, timeout=300)
    checks = json.loads(done.stdout)
    note("doctor", case="healthy embedded setup (new PIPELINE_HOME, after db upgrade)", exit=done.returncode,
         checks={c["name"]: c["status"] for c in checks})
    assert done.returncode == text.returncode == 0, done.stderr + text.stderr
    by_name = {c["name"]: c for c in checks}
    assert list(by_name) == ["database", "pgvector", "migrations", "text search", "embedding queue", "vectors",
                             "data", "search statistics", "embedder", "answer model"]
    assert by_name["data"]["status"] == "warn" and by_name["search statistics"]["status"] == "ok"
    assert by_name["vectors"] == {"name": "vectors", "status": "ok", "detail": "no texts stored yet", "fix": ""}
    assert all(c["status"] in ("ok", "warn") for c in checks), checks
    assert all(c["fix"] for c in checks if c["status"] == "warn")
    assert by_name["database"]["detail"].startswith("embedded PostgreSQL 18")
    assert by_name["migrations"]["status"] == "ok" and by_name["embedding queue"]["detail"] == "0 queued"
    assert by_name["embedder"] == {"name": "embedder", "status": "ok",
                                   "detail": "local multilingual-e5-small, 384 dimensions", "fix": ""}
    assert by_name["answer model"]["status"] == "warn" and "OPENROUTER_API_KEY" in by_name["answer model"]["fix"]
    assert text.stdout.splitlines()[0].startswith("[ok  ] database: embedded PostgreSQL 18")


def test_doctor_with_ollama_down_fails_the_embedder_with_the_fix(scratch_url: str) -> None:
    env = {"DATABASE_URL": scratch_url, "EMBED_BACKEND": "ollama", "OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"}
    as_json = run_cli("doctor", "--json", env=env, timeout=120)
    text = run_cli("doctor", env=env, timeout=120)
    checks = {c["name"]: c for c in json.loads(as_json.stdout)}
    note("doctor", case="EMBED_BACKEND=ollama, nothing listening", exit=as_json.returncode,
         checks={n: c["status"] for n, c in checks.items()})
    assert as_json.returncode == text.returncode == 1
    assert "Traceback" not in as_json.stderr + text.stderr
    assert checks["embedder"]["status"] == "fail"
    assert checks["embedder"]["detail"].startswith(f"cannot reach Ollama at {env['OLLAMA_URL']}")
    assert "OLLAMA_URL" in checks["embedder"]["fix"]
    assert checks["database"]["status"] == "ok" and [n for n, c in checks.items() if c["status"] == "fail"] == ["embedder"]
    assert "[FAIL] embedder: cannot reach Ollama" in text.stdout and "       fix: check EMBED_BACKEND" in text.stdout


# --- what an operator meets: copied folders, stale pid files, restores, newer databases ------------


def test_a_copied_home_does_not_reach_or_stop_the_original_server(pipeline_home: Path, server_url: str,
                                                                  tmp_path: Path) -> None:
    """A PIPELINE_HOME copied while its server ran carries that server's postmaster.pid: attaching
    through it would act on the original database, and `db stop` would stop it."""
    original = pipeline_home / "pgdata"
    copy = tmp_path / "home"
    (copy / "pgdata").mkdir(parents=True)
    for name in ("PG_VERSION", "postmaster.pid"):
        shutil.copy(original / name, copy / "pgdata" / name)
    env = {"PIPELINE_HOME": str(copy), "DATABASE_URL": ""}
    for args in (["db", "url"], ["db", "stop"]):
        done = run_cli(*args, env=env, timeout=120)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert "was copied while that server ran" in done.stderr and str(original) in done.stderr
    with psycopg.connect(server_url) as conn:  # the original still runs
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_pid_file_naming_a_live_process_that_is_no_postgres_is_stale(tmp_path: Path) -> None:
    """After a crash the pid may belong to another program: PostgreSQL would refuse to start over the
    file, and attaching would dial a socket nobody listens on."""
    from pipeline.storage import db

    pgdata = tmp_path / "pgdata"
    pgdata.mkdir()
    pid_file = pgdata / "postmaster.pid"
    pid_file.write_text(f"{os.getpid()}\n{pgdata}\n1700000000\n5432\n{pgdata}\nlocalhost\n  0 0\nready\n")
    db._check_pid_file(pgdata)
    assert not pid_file.exists()  # this test's own python process is no postgres
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid_file.write_text(f"{int(dead.stdout)}\n{pgdata}\n")
    db._check_pid_file(pgdata)
    assert pid_file.exists()  # a dead pid's file: the server itself starts over it


def test_a_database_newer_than_the_code_says_to_install_the_newer_pipeline(server_url: str) -> None:
    """A backup from a newer install restored here: no "run db upgrade", no "no revision 'head'"."""
    url = create_database(server_url, "newer_than_code")
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0099'")
    env = {"DATABASE_URL": url}
    for args in (["search", "urlop", "--mode", "text"], ["db", "upgrade"], ["db", "downgrade", "0006", "--yes"]):
        done = run_cli(*args, env=env, timeout=120)
        assert done.returncode == 1 and "Traceback" not in done.stderr, (args, done.stderr)
        assert "newer than this pipeline" in done.stderr and "no revision" not in done.stderr, done.stderr
    checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json", env=env, timeout=120).stdout)}
    assert checks["migrations"]["status"] == "fail" and "newer than this pipeline" in checks["migrations"]["detail"]
    status = run_cli("db", "status", env=env, timeout=120)
    assert status.returncode == 0 and "newer than this pipeline" in status.stdout and "run: pipeline db upgrade" not in status.stdout


def test_doctor_fails_statistics_out_of_step_with_the_chunks(scratch_url: str) -> None:
    """A data-only restore with --disable-triggers leaves the BM25 statistics empty while every text
    query still returns rows (ranked by nonsense idf): doctor must say so, and the repair clears it."""
    require_mirror()
    env = {"DATABASE_URL": scratch_url}
    assert run_cli("ingest", "--source", str(ELI_MIRROR), "--act", "DU/2024/1513", "--no-embed", env=env,
                   timeout=300).returncode == 0
    checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json", env=env, timeout=120).stdout)}
    assert checks["search statistics"]["status"] == "ok" and checks["data"]["status"] == "ok"
    with psycopg.connect(scratch_url) as conn:
        conn.execute("UPDATE corpus_totals SET chunks = 0, total_length = 0")
    done = run_cli("doctor", "--json", env=env, timeout=120)
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert done.returncode == 1 and checks["search statistics"]["status"] == "fail"
    assert "refresh_search_stats()" in checks["search statistics"]["fix"]
    with psycopg.connect(scratch_url) as conn:
        conn.execute("SELECT refresh_search_stats()")
    checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json", env=env, timeout=120).stdout)}
    assert checks["search statistics"]["status"] == "ok"
