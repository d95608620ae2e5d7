"""Reliability: faults while ingesting and bad input.

Everything runs against the real mirror (served over loopback HTTP by tests/eli_server.py where the
HTTP path matters) and the session's embedded PostgreSQL. The other reliability modules: kill -9
(test_reliability_kill*.py) and dependencies that are down (test_reliability_deps.py); their shared
helpers and the report of what each test observed are in tests/reliability_helpers.py.
"""
from __future__ import annotations

import json
import random
import shutil
import time
from pathlib import Path

import psycopg
import pytest
from support.cli import run_cli
from support.corpus import ingestion
from eli_server import Fault, MirrorServer, start_mirror_server
from reliability_helpers import (
    HTML_ACT,
    PDF_ACT,
    TABLES,
    archive_problems,
    broken_versions,
    closed_port,
    counts,
    error_lines,
    ingest_from_mirror,
    note,
    runs,
    write_notes,
)

from pipeline.storage import db
from pipeline.core.act_id import parse_act_id
from pipeline.sources.fetch import SUMS_FILE, EliClient, act_dir


@pytest.fixture(scope="module", autouse=True)
def _write_notes():
    yield
    write_notes()


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
    with db.connect(scratch_url) as c, ingestion(c, scratch_url, archive_dir=archive, client=client) as run:
        result = run.act(act)
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
        assert (act_dir(archive, parse_act_id(act)) / SUMS_FILE).is_file()
    else:
        assert error in result.error and "\n" not in result.error
        assert counts(scratch_url) == before  # nothing half-written
        assert broken_versions(scratch_url) == []
        assert last_run == (act, "failed", result.error, True)
        if "no articles" not in error:  # a fetch that failed archives nothing (a text that parses badly is kept)
            assert not act_dir(archive, parse_act_id(act)).exists()


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
        with ingestion(c, scratch_url, archive_dir=tmp_path / "archive", client=client) as run:
            result = run.act(PDF_ACT)
        client.close()
        html_requests, pdf_requests = srv.count(f"/acts/{PDF_ACT}/text.html"), srv.count(f"/acts/{PDF_ACT}/text.pdf")
    note("faults", case="html empty (textHTML true, PDF available)", act=PDF_ACT,
         requests=html_requests + pdf_requests, status=result.status, error=result.error,
         seconds=round(result.seconds, 1))
    assert (result.status, result.source_format, result.articles) == ("new", "pdf", 39)
    assert (html_requests, pdf_requests) == (1, 1)
    saved = sorted(p.name for p in act_dir(tmp_path / "archive", parse_act_id(PDF_ACT)).iterdir())
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
