"""The embedding queue: workers share it, nothing is embedded twice, model switches, crash recovery.

The model server here is the Ollama stand-in (tests/ollama_stand_in.py, a loopback server that
speaks /api/embed with deterministic vectors), so the counts of texts it was sent are exact.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import psycopg
import pytest

from support.cli import run_cli
from support.database import EMBEDDED_UNITS
from support.paths import ELI_MIRROR, REPO, require_mirror
from ollama_stand_in import OllamaStandIn, stand_in_vector
from pipeline.storage import db, store
from pipeline.indexing import embed


def _env(url: str, ollama: OllamaStandIn, model: str = "bge-m3") -> dict:
    return {"DATABASE_URL": url, "EMBED_BACKEND": "ollama", "OLLAMA_URL": ollama.url, "EMBED_MODEL": model,
            "EMBED_BATCH_SIZE": "8"}


def _sent_texts(ollama: OllamaStandIn) -> list[str]:
    texts: list[str] = []
    for request in ollama.embed_requests():
        inputs = request["input"]
        texts.extend([inputs] if isinstance(inputs, str) else inputs)
    return texts


def _ingest(url: str, *acts: str, env: dict | None = None, embed: bool = False) -> dict:
    """`pipeline ingest` of ``acts``; configured for bge-m3 (what the tests embed with) unless ``env`` says
    otherwise, so that --no-embed queues the texts for it."""
    args = ["ingest", "--source", str(ELI_MIRROR), "--json"] + [f"--act={a}" for a in acts]
    if not embed:
        args.append("--no-embed")
    result = run_cli(*args, env={"DATABASE_URL": url, "EMBED_BACKEND": "ollama", "EMBED_MODEL": "bge-m3", **(env or {})})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _distinct_texts(url: str) -> int:
    with psycopg.connect(url) as c:
        return c.execute(f"SELECT count(DISTINCT content_sha256) FROM {EMBEDDED_UNITS} u").fetchone()[0]


def test_two_workers_drain_one_queue_and_embed_every_text_exactly_once(scratch_url):
    require_mirror()
    _ingest(scratch_url, "DU/2026/548", "DU/2024/581")
    total = _distinct_texts(scratch_url)
    with OllamaStandIn({"bge-m3": 1024}) as ollama:
        ollama.delay = 0.05  # both workers are still claiming batches while the other computes
        env = {**os.environ, **_env(scratch_url, ollama)}
        workers = [subprocess.Popen([sys.executable, "-m", "pipeline", "embed", "--json"], env=env, cwd=REPO,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outputs = [w.communicate(timeout=300) for w in workers]
        sent = _sent_texts(ollama)
    for w, (out, err) in zip(workers, outputs):
        assert w.returncode == 0, err
    embedded = [json.loads(out)["embedded"] for out, _ in outputs]
    assert sum(embedded) == total and all(n > 0 for n in embedded), embedded  # both worked, no overlap
    assert len(sent) == len(set(sent)) == total  # no text reached the model twice
    with psycopg.connect(scratch_url) as c:
        assert c.execute("SELECT count(*) FROM embeddings WHERE model = 'bge-m3'").fetchone()[0] == total
        assert c.execute("SELECT count(*) FROM embedding_queue").fetchone()[0] == 0
        # Every chunk of the current texts has its vector.
        assert c.execute("""SELECT count(*) FROM current_chunks c WHERE NOT EXISTS (
            SELECT 1 FROM embeddings e WHERE e.content_sha256 = c.content_sha256 AND e.model = 'bge-m3')""").fetchone()[0] == 0

        # A removed act's vectors stay (a re-ingest embeds nothing) but no longer count as embedded texts.
        store.remove_act(c, "DU/2026/548")
        left = c.execute("SELECT count(DISTINCT content_sha256) FROM embedding_texts").fetchone()[0]
        assert c.execute("SELECT texts, embedded, queued FROM embedding_status").fetchall() == [(left, left, 0)]
        assert 0 < left < total == c.execute("SELECT count(*) FROM embeddings").fetchone()[0]


def test_a_worker_starting_while_another_commits_does_not_embed_a_text_twice(scratch_url):
    """`pipeline embed` queues the texts without a vector, then drains. Its INSERT … SELECT reads
    `embeddings` as of the statement's start, so the batch another worker commits meanwhile is
    queued again (the race is real, asserted below); claiming those rows must drop them, not embed
    them again and stop on the primary key of `embeddings`."""
    require_mirror()
    from concurrent.futures import ThreadPoolExecutor

    from embedding_stand_in import StandInEmbedder
    from pipeline.indexing import embed

    _ingest(scratch_url, "DU/2026/548")
    total = _distinct_texts(scratch_url)
    model = StandInEmbedder()
    with db.connect(scratch_url) as a, db.connect(scratch_url) as late, db.connect(scratch_url) as c:
        embed.ensure_space(a, model.name, model.dimensions, model.backend)
        assert embed.enqueue_missing(a, model.name) == total
        # Worker A, mid-commit: a batch claimed, its vectors written, its queue rows deleted.
        batch = a.execute(f"""SELECT q.content_sha256, (SELECT embed_text FROM {EMBEDDED_UNITS} u
                                  WHERE u.content_sha256 = q.content_sha256 LIMIT 1)
                             FROM embedding_queue q ORDER BY q.enqueued_at, q.content_sha256
                             LIMIT 8 FOR UPDATE SKIP LOCKED""").fetchall()
        with a.cursor().copy("COPY embeddings (content_sha256, model, embedding) FROM STDIN WITH (FORMAT BINARY)") as cp:
            cp.set_types(["text", "text", "vector"])
            for (h, _), v in zip(batch, model.embed_passages([t for _, t in batch])):
                cp.write_row((h, model.name, v))
        a.execute("DELETE FROM embedding_queue WHERE content_sha256 = ANY(%s)", ([h for h, _ in batch],))
        # A worker starting now: its enqueue waits on the deleted rows, then inserts them again.
        pid = late.info.backend_pid
        with ThreadPoolExecutor(1) as pool:
            requeued = pool.submit(embed.enqueue_missing, late, model.name)
            deadline = time.monotonic() + 30
            while c.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                            (pid,)).fetchone()[0] != "Lock":
                c.rollback()
                assert time.monotonic() < deadline and not requeued.done()
                time.sleep(0.02)
            c.rollback()
            a.commit()
            assert requeued.result(timeout=30) == len(batch)
        assert embed.drain(c, model, batch_size=16) == total - len(batch)
        assert c.execute("SELECT count(*) FROM embeddings").fetchone()[0] == total
        assert embed.queued(c, model.name) == 0


def test_reingest_unchanged_embeds_nothing_and_a_changed_article_embeds_only_its_chunks(scratch_url, tmp_path):
    require_mirror()
    with OllamaStandIn({"bge-m3": 1024}) as ollama:
        first = _ingest(scratch_url, "DU/2024/581", env=_env(scratch_url, ollama), embed=True)
        assert first["embedded"] == _distinct_texts(scratch_url) > 0
        again = _ingest(scratch_url, "DU/2024/581", env=_env(scratch_url, ollama), embed=True)
        assert again["acts"][0]["status"] == "unchanged" and again["embedded"] == 0

        # A new text of the act where one article's wording differs.
        src = ELI_MIRROR / "acts/DU/2024/581"
        dst = tmp_path / "acts/DU/2024/581"
        dst.mkdir(parents=True)
        (dst / "meta.json").write_bytes((src / "meta.json").read_bytes())
        html = (src / "text.html").read_text(encoding="utf-8")
        old = "może być obecna osoba bliska"
        assert html.count(old) == 1
        (dst / "text.html").write_text(html.replace(old, "może być obecna osoba bliska lub opiekun"), encoding="utf-8")
        before = len(_sent_texts(ollama))
        result = run_cli("ingest", "--source", str(tmp_path), "--act", "DU/2024/581", "--json",
                         env=_env(scratch_url, ollama))
        assert result.returncode == 0, result.stderr
        summary = json.loads(result.stdout)
        new_texts = _sent_texts(ollama)[before:]
    act = summary["acts"][0]
    assert act["status"] == "new" and act["version"] == 2
    assert act["changes"] == {"added": [], "changed": ["21"], "removed": []}
    with psycopg.connect(scratch_url) as c:
        # The texts of article 21's chunks and pieces in version 2 that version 1 did not have (a piece
        # of the article whose wording stayed is not embedded again).
        parts = c.execute(f"""SELECT count(DISTINCT u.content_sha256) FROM {EMBEDDED_UNITS} u
                              JOIN act_versions v USING (version_id)
                              WHERE v.eli = 'DU/2024/581' AND v.version_no = 2 AND u.article = '21'
                                AND u.content_sha256 NOT IN (SELECT w.content_sha256 FROM {EMBEDDED_UNITS} w
                                                             JOIN act_versions x USING (version_id)
                                                             WHERE x.eli = 'DU/2024/581' AND x.version_no = 1)
                           """).fetchone()[0]
    assert summary["embedded"] == len(new_texts) == parts >= 1
    assert all("Art. 21" in t for t in new_texts)


def test_switching_the_model_embeds_into_a_new_space_and_leaves_the_old_one(scratch_url):
    require_mirror()
    _ingest(scratch_url, "DU/2026/548")
    total = _distinct_texts(scratch_url)
    with OllamaStandIn({"bge-m3": 1024, "nomic-embed-text": 768}) as ollama:
        assert run_cli("embed", env=_env(scratch_url, ollama, "bge-m3")).returncode == 0
        with psycopg.connect(scratch_url) as c:
            before = c.execute("SELECT content_sha256, embedding::text FROM embeddings WHERE model = 'bge-m3' "
                               "ORDER BY 1").fetchall()
        result = run_cli("embed", "--json", env=_env(scratch_url, ollama, "nomic-embed-text"))
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["embedded"] == total
        sent = [t for t in _sent_texts(ollama)]
    assert sum(1 for t in sent if t.startswith("search_document: ")) == total  # the model's passage prefix
    with psycopg.connect(scratch_url) as c:
        dims = dict(c.execute("SELECT model, dimensions FROM embedding_models").fetchall())
        assert dims == {"bge-m3": 1024, "nomic-embed-text": 768}
        after = c.execute("SELECT content_sha256, embedding::text FROM embeddings WHERE model = 'bge-m3' "
                          "ORDER BY 1").fetchall()
        assert after == before
        indexes = [r[0] for r in c.execute("SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'embeddings_hnsw_%'")]
    assert any("vector(1024)" in d for d in indexes) and any("vector(768)" in d for d in indexes)


def test_a_killed_worker_loses_nothing_and_a_rerun_finishes_the_queue(scratch_url):
    require_mirror()
    _ingest(scratch_url, "DU/2024/581")
    total = _distinct_texts(scratch_url)
    with OllamaStandIn({"bge-m3": 1024}) as ollama:
        ollama.delay = 0.3
        env = {**os.environ, **_env(scratch_url, ollama)}
        worker = subprocess.Popen([sys.executable, "-m", "pipeline", "embed"], env=env, cwd=REPO,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(ollama.embed_requests()) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(worker.pid, signal.SIGKILL)  # mid-batch: its claimed rows are locked, then released
        worker.wait()
        with psycopg.connect(scratch_url) as c:
            partial = c.execute("SELECT count(*) FROM embeddings").fetchone()[0]
            queued = c.execute("SELECT count(*) FROM embedding_queue").fetchone()[0]
        assert 0 < partial < total and partial + queued == total
        ollama.delay = 0
        result = run_cli("embed", "--json", env=_env(scratch_url, ollama))
        assert result.returncode == 0, result.stderr
    with db.connect(scratch_url) as c:
        assert c.execute("SELECT count(*) FROM embeddings").fetchone()[0] == total
        assert c.execute("SELECT count(*) FROM embedding_queue").fetchone()[0] == 0
        # The stored vector is the model's vector for that exact text (no mix-up of rows and texts).
        h, text, vec = c.execute("""SELECT e.content_sha256, c.embed_text, e.embedding FROM embeddings e
                                    JOIN chunks c USING (content_sha256) LIMIT 1""").fetchone()
    assert np.allclose(vec.to_numpy(), stand_in_vector(text, 1024), atol=1e-5)


def test_model_errors_leave_the_queue_intact_with_the_reason(scratch_url):
    require_mirror()
    _ingest(scratch_url, "DU/2026/548")
    with OllamaStandIn({"nomic-embed-text": 768}) as ollama:  # bge-m3 not pulled
        result = run_cli("embed", env=_env(scratch_url, ollama, "bge-m3"))
    assert result.returncode == 1
    assert "ollama pull bge-m3" in result.stderr and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0] == result.stderr.strip().splitlines()[-1]  # one line, last
    with psycopg.connect(scratch_url) as c:
        assert c.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 0
        failing = c.execute("SELECT count(*), max(last_error) FROM embedding_queue WHERE last_error IS NOT NULL").fetchone()
    assert failing[0] >= 1 and "bge-m3" in failing[1]


@pytest.mark.parametrize("flag", ["--batch-size=0", "--limit=-1"])
def test_bad_embed_options_are_rejected(flag):
    result = run_cli("embed", flag)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_status_shows_a_model_from_its_first_queued_text(scratch_url):
    """Before any worker has embedded with the configured model, `ingest --no-embed` has queued texts for
    it by name: embedding_status and `db status` list it (dimensions unknown yet) instead of nothing."""
    require_mirror()
    _ingest(scratch_url, "DU/2026/548")
    texts = _distinct_texts(scratch_url)
    with psycopg.connect(scratch_url) as c:
        assert c.execute("SELECT count(*) FROM embedding_models").fetchone()[0] == 0
        row = c.execute("SELECT model, dimensions, texts, embedded, queued FROM embedding_status").fetchall()
    assert row == [("bge-m3", None, texts, 0, texts)] and texts > 0
    shown = run_cli("db", "status", env={"DATABASE_URL": scratch_url})
    assert shown.returncode == 0, shown.stderr
    assert f"bge-m3 (not embedded with yet): 0 embedded of {texts} texts, {texts} queued" in shown.stdout
    # Hybrid search before any vector exists: a state of the data (exit 1, what to run), not a usage error.
    with OllamaStandIn({"bge-m3": 1024}) as ollama:
        found = run_cli("search", "przetwarzanie danych", env=_env(scratch_url, ollama))
    assert found.returncode == 1 and "Usage:" not in found.stderr, found.stderr
    assert "no stored text has a bge-m3 vector yet: run pipeline embed, or search with --mode text" in found.stderr


def test_texts_stored_without_embedding_are_queued_and_search_says_what_it_cannot_see(scratch_url):
    """`ingest --no-embed` queues the texts for the configured model: until `pipeline embed` has run,
    search and ask warn that the vector arm cannot find those articles, and doctor says how many."""
    require_mirror()
    with OllamaStandIn({"bge-m3": 1024}) as ollama:
        env = _env(scratch_url, ollama)
        _ingest(scratch_url, "DU/2024/1513", env=env, embed=True)
        no_embed = _ingest(scratch_url, "DU/2026/548", env=env)  # stored, not embedded
        with psycopg.connect(scratch_url) as c:
            waiting = embed.queued(c, "bge-m3")
            unembedded = c.execute(
                f"SELECT count(DISTINCT u.content_sha256) FROM {EMBEDDED_UNITS} u "
                "JOIN act_versions v USING (version_id) WHERE v.eli = 'DU/2026/548'").fetchone()[0]
        assert waiting == unembedded > 0
        assert no_embed["waiting"] == waiting  # the --no-embed summary says what `pipeline embed` has to do
        warning = f"Warning: {waiting} stored texts have no bge-m3 vector yet"

        found = run_cli("search", "przetwarzanie danych", "--json", env=env)
        assert found.returncode == 0 and json.loads(found.stdout), found.stderr
        assert warning in found.stderr
        # Only the searched acts count: the embedded act alone has nothing waiting.
        embedded_only = run_cli("search", "przetwarzanie danych", "--act", "DU/2024/1513", env=env)
        assert embedded_only.returncode == 0 and "have no bge-m3 vector" not in embedded_only.stderr
        scoped = run_cli("search", "przetwarzanie danych", "--act", "DU/2026/548", env=env)
        assert warning in scoped.stderr
        text_only = run_cli("search", "przetwarzanie danych", "--mode", "text", env=env)
        assert text_only.returncode == 0 and "Warning" not in text_only.stderr  # the text arm sees every text
        asked = run_cli("ask", "Kto przetwarza dane?", "--offline", "--json", env=env)
        assert asked.returncode == 0, asked.stderr
        assert [w.split(":")[0] for w in json.loads(asked.stdout)["warnings"]] == [warning.removeprefix("Warning: ").split(":")[0]]
        questions = ELI_MIRROR.parent / "eval" / "seed_questions.pl.jsonl"
        evaluated = run_cli("eval", str(questions), "--mode", "all", "--json", env=env)  # vector figures: incomplete
        assert evaluated.returncode == 0, evaluated.stderr
        assert [w.split(":")[0] for w in json.loads(evaluated.stdout)["warnings"]] == [
            warning.removeprefix("Warning: ").split(":")[0]]
        checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json", env=env).stdout)}
        assert checks["embedding queue"]["status"] == "warn" and checks["vectors"]["status"] == "warn"
        assert checks["vectors"]["detail"].startswith(f"{unembedded} of ") and checks["vectors"]["fix"] == "run: pipeline embed"

        # An ingest that embeds embeds the texts of the acts it was given, not the whole queue: a backlog
        # stored with --no-embed on purpose waits for `pipeline embed` (or for its own act's ingest).
        other = _ingest(scratch_url, "DU/2024/1513", env=env, embed=True)
        assert other["acts"][0]["status"] == "unchanged" and other["embedded"] == 0, other
        assert other["waiting"] == waiting
        rerun = _ingest(scratch_url, "DU/2026/548", env=env, embed=True)
        assert rerun["acts"][0]["status"] == "unchanged" and rerun["embedded"] == waiting and rerun["waiting"] == 0
        again = run_cli("search", "przetwarzanie danych", env=env)
        assert again.returncode == 0 and "have no bge-m3 vector" not in again.stderr
        checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json", env=env).stdout)}
        assert checks["vectors"]["status"] == "ok" and checks["embedding queue"]["status"] == "ok"
