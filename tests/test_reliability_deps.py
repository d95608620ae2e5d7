"""Reliability: dependencies that are down (database, Ollama, the LLM), doctor, and what an operator
meets (copied folders, stale pid files, restores, newer databases).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from chat_stand_in import ChatStandIn
from support.cli import run_cli
from support.database import create_database, EMBEDDED_UNITS
from support.paths import ELI_MIRROR, require_mirror
from ollama_stand_in import OllamaStandIn
from reliability_helpers import (
    HTML_ACT,
    HTML_ACT_2,
    broken_versions,
    chunks_without_vectors,
    closed_port,
    counts,
    error_lines,
    ingest_args,
    ingest_from_mirror,
    note,
    versions_per_act,
    write_notes,
)

from pipeline.storage import db
from pipeline.indexing import embed
from pipeline.embedders.ollama import OllamaEmbedder


@pytest.fixture(scope="module", autouse=True)
def _write_notes():
    yield
    write_notes()


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
    done = run_cli(*ingest_args((HTML_ACT,), True), env=env, timeout=120)
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
    assert chunks_without_vectors(scratch_url, "bge-m3") == 0


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
