"""The background embedding worker (pipeline.indexing.worker): `ingest` returns once the act is stored and
searchable, a worker started by it embeds the queue, one a database; search, ask and status say how far
it is while it runs, and a finished embedding is the one `--wait` gives.

The model is the Ollama stand-in (tests/ollama_stand_in.py) with a delay per request, so the worker is
seen at work; every test waits for the workers it started (none outlives it).
"""
from __future__ import annotations

import json
import os
import signal

import psycopg
import pytest

from ollama_stand_in import OllamaStandIn
from support.cli import run_cli
from support.paths import ELI_MIRROR, require_mirror
from pipeline.indexing import embed, worker
from pipeline.storage.queue import WORKER_LOCK

ACT, OTHER = "DU/2026/548", "DU/2024/1513"


@pytest.fixture()
def ollama():
    with OllamaStandIn({"bge-m3": 1024}) as server:
        yield server
        server.delay = 0.0
        worker.wait_for_workers()  # before the stand-in goes: a worker never outlives its test


def _env(url: str, ollama: OllamaStandIn, home) -> dict:
    return {"DATABASE_URL": url, "EMBED_BACKEND": "ollama", "OLLAMA_URL": ollama.url, "EMBED_MODEL": "bge-m3",
            "EMBED_BATCH_SIZE": "8", "PIPELINE_EMBED_WAIT": "0", "PIPELINE_HOME": str(home)}


def _ingest(env: dict, *args: str) -> dict:
    result = run_cli("ingest", "--source", str(ELI_MIRROR), "--json", *args, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _queued(url: str) -> int:
    with psycopg.connect(url) as c:
        return embed.queued(c, "bge-m3")


def test_ingest_returns_searchable_and_one_worker_embeds_in_the_background(scratch_url, ollama, tmp_path):
    require_mirror()
    env = _env(scratch_url, ollama, tmp_path)
    ollama.delay = 1.0  # a batch a second: the worker is at work while the test looks
    stored = _ingest(env, f"--act={ACT}", "--no-amending-acts")
    assert stored["embedded"] == 0 and stored["waiting"] > 0
    started = stored["background"]
    assert started["pid"] and not started["already_running"] and started["queued"] == stored["waiting"]

    # Searchable at once: the vectors that exist, the text arm for the rest, and one line that says so.
    found = run_cli("search", "przetwarzanie danych osobowych", "--json", env=env)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert hits and all(h["act"] == ACT for h in hits)
    line = [w for w in found.stderr.splitlines() if "vectors:" in w]
    assert len(line) == 1 and "results improve when the embedding ends" in line[0], found.stderr
    asked = run_cli("ask", "Kto jest administratorem danych?", "--offline", "--json", env=env)
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert not answer["refused"] and any(w.startswith("vectors:") for w in answer["warnings"])
    status = json.loads(run_cli("status", "--json", env=env).stdout)
    assert status["embedding_worker"] is not None and status["embedding_worker"]["queued"] > 0

    # A second ingest while it runs starts no second worker: the running one takes its texts too.
    again = _ingest(env, f"--act={OTHER}", "--no-amending-acts")
    assert again["background"]["already_running"], again

    ollama.delay = 0.0
    worker.wait_for_workers()
    assert _queued(scratch_url) == 0
    with psycopg.connect(scratch_url) as c:
        missing = c.execute("SELECT count(*) FROM (SELECT DISTINCT content_sha256 FROM embedding_texts) u WHERE NOT "
                            "EXISTS (SELECT 1 FROM embeddings e WHERE e.content_sha256 = u.content_sha256)").fetchone()[0]
    assert missing == 0
    done = run_cli("search", "przetwarzanie danych osobowych", "--json", env=env)
    assert done.returncode == 0 and "vectors:" not in done.stderr and "no bge-m3 vector" not in done.stderr, done.stderr
    assert json.loads(run_cli("status", "--json", env=env).stdout)["embedding_worker"] is None
    log = (tmp_path / "logs" / "embed.log").read_text()
    assert "Traceback" not in log and " left" in log


def _ranked(found) -> list[dict]:
    """The hits of `search --json` but their chunk ids and currency (a text stored again gets new rows and
    a new time of its currency check)."""
    assert found.returncode == 0, found.stderr
    return [{k: v for k, v in h.items() if k not in ("chunk_id", "currency")} for h in json.loads(found.stdout)]


def test_a_finished_background_embedding_ranks_as_wait_does(scratch_url, ollama, tmp_path):
    """The same act embedded by the worker and with --wait: the same hits and scores (no worker then)."""
    require_mirror()
    env = _env(scratch_url, ollama, tmp_path)
    question = ["search", "Kto jest administratorem danych?", "--json", "-k", "8"]
    _ingest(env, f"--act={ACT}", "--no-amending-acts")
    worker.wait_for_workers()
    background = _ranked(run_cli(*question, env=env))
    assert run_cli("remove", ACT, "--yes", env=env).returncode == 0
    with psycopg.connect(scratch_url) as c:  # the vectors are kept by text: drop them, so --wait computes them
        c.execute("DELETE FROM embeddings")
    waited = _ingest(env, f"--act={ACT}", "--no-amending-acts", "--wait")
    assert waited["embedded"] > 0 and waited["background"] is None
    assert _ranked(run_cli(*question, env=env)) == background


def test_the_worker_stops_with_one_line_when_its_connection_ends(scratch_url, ollama, tmp_path):
    """The server ending the worker's session (`pipeline db stop` does it to every session): the worker
    exits, says why in its log without a traceback, leaves the rest queued, and the lock is free."""
    require_mirror()
    env = _env(scratch_url, ollama, tmp_path)
    ollama.delay = 1.0
    started = _ingest(env, f"--act={ACT}", "--no-amending-acts")["background"]
    with psycopg.connect(scratch_url, autocommit=True) as c:
        backend = c.execute("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND objid = %s",
                            WORKER_LOCK).fetchone()[0]
        c.execute("SELECT pg_terminate_backend(%s)", (backend,))
    assert worker._children[-1].wait(60) == 1 and worker._children[-1].pid == started["pid"]
    log = (tmp_path / "logs" / "embed.log").read_text()
    assert "stopped: " in log.splitlines()[-1] and "Traceback" not in log, log
    assert _queued(scratch_url) > 0
    status = json.loads(run_cli("status", "--json", env=env).stdout)
    assert status["embedding_worker"] is None


def test_a_killed_worker_says_so_and_the_next_ingest_resumes(scratch_url, ollama, tmp_path):
    """kill PID (SIGTERM): one line in the log, the batch under way rolled back, the rest queued; the next
    ingest of the same act (unchanged) starts a worker that embeds what is left."""
    require_mirror()
    env = _env(scratch_url, ollama, tmp_path)
    ollama.delay = 1.0
    started = _ingest(env, f"--act={ACT}", "--no-amending-acts")["background"]
    os.kill(started["pid"], signal.SIGTERM)
    assert worker._children[-1].wait(60) == 1
    assert "stopped: interrupted" in (tmp_path / "logs" / "embed.log").read_text().splitlines()[-1]
    left = _queued(scratch_url)
    assert left > 0
    ollama.delay = 0.0
    again = _ingest(env, f"--act={ACT}", "--no-amending-acts")
    assert again["acts"][0]["status"] == "unchanged" and again["background"]["queued"] == left
    worker.wait_for_workers()
    assert _queued(scratch_url) == 0


def test_wait_and_no_embed_together_are_a_usage_error(scratch_url):
    result = run_cli("ingest", "--act", ACT, "--wait", "--no-embed", env={"DATABASE_URL": scratch_url})
    assert result.returncode == 2 and "--wait" in result.stderr and "Traceback" not in result.stderr
